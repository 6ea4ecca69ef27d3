//! JAX with its CUDA plugin (`jax-cuda12-plugin` / `jax-cuda13-plugin` and their `-pjrt` wheels), modelled
//! as the plugin's own Python code and XLA's loader do it. Sources and observations: `docs/framework-jax-tensorflow.md`.
//!
//! - `import jax` imports the plugin's extension modules (`jax_cudaNN_plugin/_versions.so`, `_solver.so`, …);
//!   they carry no CUDA DT_NEEDED entry but `dlopen` the CUDA runtime through their DT_RPATH at once.
//! - The first backend use (`jax.devices()`, the first array) calls the plugin's `initialize()`: it preloads
//!   the NVIDIA libraries by path from the Python packages `nvidia.<x>` (0.6.2 and later; failures are
//!   ignored, there is no system fall-back), checks the runtime versions of cudart, cuDNN, cuFFT, CUPTI,
//!   cuBLAS and cuSPARSE against floors (`_check_cuda_versions`, raising on the first failure), counts the
//!   devices (`cuInit`), then registers `xla_cuda_plugin.so`, whose XLA `dlopen`s its libraries by versioned
//!   soname. `initialize()`'s exception is logged and swallowed: JAX then runs on the CPU.
//! - At the first convolution XLA checks the loaded cuDNN against the one it was compiled with (same major,
//!   minor not older): [`Framework::checks`].

use super::xla::{floor_of, loaded_release, pin, xla_cudnn_rule};
use super::{Ctx, Framework, LoadError, Outcome, Process, Range, Selected, Step, When};
use crate::findings::Finding;
use std::path::{Path, PathBuf};

/// The JAX model.
pub struct Jax;

/// The versions whose loading differs. Before 0.6.1 the plugin's `initialize()` did not run the version
/// check; 0.6.2 added the Python preload of `nvidia.*`; 0.7.0 added the CUDA 13 entries to it.
pub const MODELS: &[Range] = &[
    Range {
        from: "0.6.1",
        until: Some("0.6.2"),
        about: "no Python preload: the plugin's DT_RPATH alone finds the NVIDIA wheels; version check in initialize()",
    },
    Range {
        from: "0.6.2",
        until: Some("0.7.0"),
        about: "CUDA 12 libraries preloaded from the nvidia.* packages, then the version check",
    },
    Range {
        from: "0.7.0",
        until: None,
        about: "CUDA 12 and 13 libraries preloaded from the nvidia.* packages, then the version check",
    },
];

/// `_load_nvidia_libraries()` of jax 0.7 and later, in its order: (package under `nvidia`, sonames, CUDA major
/// of the entry, or 0 for both).
const PRELOAD: &[(&str, &[&str], u8)] = &[
    ("cuda_runtime", &["libcudart.so.12"], 12),
    ("cu13", &["libcudart.so.13"], 13),
    ("cuda_nvrtc", &["libnvrtc.so.12"], 12),
    ("cu13", &["libnvrtc.so.13"], 13),
    ("cublas", &["libcublas.so.12", "libcublasLt.so.12"], 12),
    ("cu13", &["libcublas.so.13", "libcublasLt.so.13"], 13),
    ("nccl", &["libnccl.so.2"], 0),
    ("cuda_cupti", &["libcupti.so.12"], 12),
    ("cu13", &["libcupti.so.13"], 13),
    ("cusparse", &["libcusparse.so.12"], 12),
    ("cu13", &["libcusparse.so.12"], 13),
    ("cusolver", &["libcusolver.so.11"], 12),
    ("cu13", &["libcusolver.so.12"], 13),
    ("cufft", &["libcufft.so.11"], 12),
    ("cu13", &["libcufft.so.12"], 13),
    ("nvshmem", &["libnvshmem_host.so.3"], 0),
    ("cudnn", &["libcudnn.so.9"], 0),
];

/// The extension modules `import jax` imports from the plugin package, in the order observed
/// (`LD_DEBUG=libs`); `_solver` is the first that `dlopen`s the CUDA runtime.
const EXTENSIONS: &[&str] = &[
    "_versions",
    "_solver",
    "_hybrid",
    "_sparse",
    "_prng",
    "_linalg",
    "_rnn",
    "_triton",
    "cuda_plugin_extension",
];

/// One CUDA plugin as installed: its major, the extension package directory and the PJRT library.
#[derive(Debug, Clone)]
pub struct Plugin {
    /// 12 or 13.
    pub major: u8,
    /// `site-packages/jax_cudaNN_plugin` (machine path).
    pub package: PathBuf,
    /// `site-packages/jax_plugins/xla_cudaNN/xla_cuda_plugin.so`, when its wheel is installed.
    pub pjrt: Option<PathBuf>,
    /// The plugin distribution's `Requires-Dist`.
    pub requires: Vec<String>,
}

/// The plugin `import jax` uses: `jax_cuda13_plugin` before `jax_cuda12_plugin`, as `jax._src.lib` tries them.
pub fn plugin(ctx: &Ctx) -> Option<Plugin> {
    for major in [13u8, 12] {
        let Some(dist) = ctx.python.dist(&format!("jax-cuda{major}-plugin")) else {
            continue;
        };
        let package = dist.site.join(format!("jax_cuda{major}_plugin"));
        let pjrt = ctx
            .python
            .dirs()
            .map(|d| d.join(format!("jax_plugins/xla_cuda{major}/xla_cuda_plugin.so")))
            .find(|p| ctx.root.exists(p));
        return Some(Plugin {
            major,
            package,
            pjrt,
            requires: dist.requires().to_vec(),
        });
    }
    None
}

/// `importlib.import_module("nvidia.<sub>").__path__[0]`, as CPython's path finder answers it: the first
/// `sys.path` entry whose `nvidia/` has an `__init__.py` is the package (namespace portions met before it are
/// dropped); without one, `nvidia` is a namespace package of every `nvidia/` directory in order. The
/// sub-package is looked up the same way inside that `__path__`.
pub fn nvidia_module(ctx: &Ctx, sub: &str) -> Option<PathBuf> {
    ctx.python.remembered(&format!("nvidia-module nvidia.{sub}"), || {
        let parent = package_path(ctx, ctx.python.dirs().map(Path::to_path_buf).collect(), "nvidia")?;
        package_path(ctx, parent, sub)?.into_iter().next()
    })
}

/// The `__path__` of package `name` found in `search`, or `None` when it is not importable.
fn package_path(ctx: &Ctx, search: Vec<PathBuf>, name: &str) -> Option<Vec<PathBuf>> {
    let mut portions = Vec::new();
    for dir in search {
        let candidate = dir.join(name);
        if ctx.root.exists(&candidate.join("__init__.py")) {
            return Some(vec![candidate]);
        }
        if ctx.root.is_dir(&candidate) {
            portions.push(candidate);
        }
    }
    (!portions.is_empty()).then_some(portions)
}

/// One CUDA component of `_check_cuda_versions`, in its order.
struct Check {
    /// The name in JAX's messages (`cuSPARSE`).
    name: &'static str,
    /// The soname `_versions.so` opens, for a CUDA `major` plugin.
    soname: fn(u8) -> String,
    /// The runtime version as the component's `GetVersion` returns it, from release numbers.
    runtime: fn(&[u64]) -> u64,
    /// The absolute floor, when JAX gives one (else `build // scale`, which only an absent copy fails).
    floor: Option<u64>,
    /// The wheel to install, for a CUDA `major` plugin.
    wheel: fn(u8) -> String,
}

fn at(r: &[u64], i: usize) -> u64 {
    r.get(i).copied().unwrap_or(0)
}

fn cu(major: u8, base: &str) -> String {
    if major >= 13 && base != "cudnn" {
        format!("nvidia-{base}")
    } else {
        format!("nvidia-{base}-cu{major}")
    }
}

/// The components, in the order `_check_cuda_versions` checks them (cuSOLVER's check is disabled).
const COMPONENTS: &[Check] = &[
    Check {
        name: "CUDA",
        soname: |m| format!("libcudart.so.{m}"),
        runtime: |r| at(r, 0) * 1000 + at(r, 1) * 10,
        floor: Some(12010),
        wheel: |m| cu(m, "cuda-runtime"),
    },
    Check {
        name: "cuDNN",
        soname: |_| "libcudnn.so.9".to_string(),
        runtime: |r| {
            let scale = if at(r, 0) >= 9 { 10_000 } else { 1000 };
            at(r, 0) * scale + at(r, 1) * 100 + at(r, 2)
        },
        floor: None,
        wheel: |m| cu(m, "cudnn"),
    },
    Check {
        name: "cuFFT",
        soname: |m| format!("libcufft.so.{}", if m >= 13 { 12 } else { 11 }),
        runtime: |r| at(r, 0) * 1000 + at(r, 1) * 100 + at(r, 2),
        floor: None,
        wheel: |m| cu(m, "cufft"),
    },
    Check {
        name: "cuPTI",
        soname: |m| format!("libcupti.so.{m}"),
        runtime: |_| u64::MAX,
        floor: None,
        wheel: |m| cu(m, "cuda-cupti"),
    },
    Check {
        name: "cuBLAS",
        soname: |m| format!("libcublas.so.{m}"),
        runtime: |r| at(r, 0) * 10_000 + at(r, 1) * 100 + at(r, 2),
        floor: Some(120100),
        wheel: |m| cu(m, "cublas"),
    },
    Check {
        name: "cuSPARSE",
        soname: |_| "libcusparse.so.12".to_string(),
        runtime: |r| at(r, 0) * 1000 + at(r, 1) * 100 + at(r, 2),
        floor: Some(12100),
        wheel: |m| cu(m, "cusparse"),
    },
];

/// The fix in JAX's terms for component `c` of a CUDA `major` plugin.
fn fix(plugin: &Plugin, wheel: &str) -> String {
    let pinned = pin(&plugin.requires, wheel).unwrap_or_else(|| wheel.to_string());
    format!(
        "Reinstall JAX with its CUDA wheels: `pip install -U \"jax[cuda{}]\"` (it pins `{pinned}`), in the \
         environment whose Python runs the program",
        plugin.major
    )
}

/// A copy of `soname` in an `nvidia/<x>/lib` of a `sys.path` entry that `import nvidia.<x>` does not reach:
/// another entry's `nvidia/` is a regular package (it has an `__init__.py`) and hides every other one.
fn hidden(ctx: &Ctx, soname: &str) -> Option<String> {
    let regular = ctx
        .python
        .dirs()
        .map(|d| d.join("nvidia"))
        .find(|n| ctx.root.exists(&n.join("__init__.py")))?;
    for dir in ctx.python.dirs() {
        let nvidia = dir.join("nvidia");
        if nvidia == regular {
            continue;
        }
        // A bounded look: the NVIDIA wheels make a few dozen directories here.
        for sub in ctx
            .root
            .read_dir(&nvidia)
            .unwrap_or_default()
            .into_iter()
            .take(256)
        {
            let file = sub.join("lib").join(soname);
            if ctx.root.exists(&file) {
                return Some(format!(
                    "{} is installed, but {} makes `nvidia` a regular package of that directory alone, so \
                     `import nvidia.{}` does not see {}: install the wheel in the same site-packages as the \
                     others, or remove the stray `nvidia/__init__.py`",
                    file.display(),
                    regular.join("__init__.py").display(),
                    sub.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
                    nvidia.display()
                ));
            }
        }
    }
    None
}

/// The result of `_check_cuda_versions(raise_on_first_error=True)`: the first failure's message and the
/// fix, or `None` when every check passes.
fn check_versions(
    ctx: &Ctx,
    plugin: &Plugin,
    versions: usize,
    p: &mut dyn Process,
) -> Option<(String, String)> {
    for c in COMPONENTS {
        let soname = (c.soname)(plugin.major);
        let wheel = (c.wheel)(plugin.major);
        let index = match p.dlopen("jax", versions, &soname, When::FirstUse) {
            Ok(i) => i,
            Err(e) => {
                let msg = format!("RuntimeError: Unable to load {}. Is it installed?", c.name);
                let fix = match hidden(ctx, &soname) {
                    Some(h) => h,
                    None => format!("{} ({})", fix(plugin, &wheel), e.message),
                };
                return Some((msg, fix));
            }
        };
        let Some((release, from)) = loaded_release(ctx, p, index) else {
            continue;
        };
        let runtime = (c.runtime)(&release);
        if c.name == "cuDNN" && runtime == 91000 {
            return Some((
                format!(
                    "RuntimeError: cuDNN 9.10.0 had a binary backward-compatibility issue due to reordered enum \
                     values affecting block-scale datatypes. Found runtime version {runtime} and build version \
                     (compiled into the plugin). Please upgrade to 9.10.1 or above. (the loaded copy is {from})"
                ),
                fix(plugin, &wheel),
            ));
        }
        let Some(floor) = c.floor else {
            continue;
        };
        if runtime < floor {
            let msg = format!(
                "RuntimeError: Outdated {name} installation found.\nVersion JAX was built against: (compiled \
                 into the plugin)\nMinimum supported: {floor}\nInstalled version: {runtime}\nThe local \
                 installation version must be no lower than {floor}. (the loaded copy is {from})",
                name = c.name
            );
            return Some((msg, fix(plugin, &wheel)));
        }
    }
    None
}

/// What JAX does when the plugin's `initialize()` raised `message`: the exception is logged, the CUDA
/// backend is not registered, and JAX runs on the CPU, unless `JAX_PLATFORMS` asks for CUDA.
fn fallback(ctx: &Ctx, plugin: &Plugin, message: String, because: String) -> Outcome {
    let logged = format!(
        "Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda{}.initialize()\n{message}",
        plugin.major
    );
    if platforms_ask_cuda(ctx) {
        // `xla_bridge.backends()` skips the `cuda` platform when no NVIDIA GPU is visible
        // (`hardware_utils.has_visible_nvidia_gpu`: one of these device nodes exists; or GPUs declared), and
        // then finds no backend at all: its
        // `assert _default_backend is not None` fails (jax 0.10.2, observed here without a GPU). With a GPU,
        // initialising the unregistered backend raises.
        let visible = !ctx.gpus.is_empty()
            || ["/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg"]
                .iter()
                .any(|d| ctx.root.exists(Path::new(d)));
        let raised = if !visible {
            "AssertionError".to_string()
        } else {
            "RuntimeError: Unable to initialize backend 'cuda': … (set JAX_PLATFORMS='' to automatically choose \
             an available backend)"
                .to_string()
        };
        return Outcome::Fails {
            message: format!("{logged}\n{raised}"),
            load: None,
        };
    }
    let tail = if ctx.gpus.is_empty() {
        String::new()
    } else {
        "\nAn NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling \
         back to cpu."
            .to_string()
    };
    Outcome::CpuFallback {
        message: Some(format!("{logged}{tail}")),
        because,
    }
}

/// `JAX_PLATFORMS` names CUDA (`cuda`, `gpu`): a missing backend then raises instead of falling back.
fn platforms_ask_cuda(ctx: &Ctx) -> bool {
    ctx.env
        .get("JAX_PLATFORMS")
        .is_some_and(|v| v.split(',').any(|p| matches!(p.trim(), "cuda" | "gpu")))
}

/// `JAX_PLATFORMS` is set and names no CUDA platform: the plugin skips its version check (0.9.2 and later).
fn platforms_skip_check(ctx: &Ctx) -> bool {
    ctx.env.get("JAX_PLATFORMS").is_some_and(|v| !v.trim().is_empty()) && !platforms_ask_cuda(ctx)
}

impl Framework for Jax {
    fn module(&self) -> &'static str {
        "jax"
    }

    fn distributions(&self) -> &'static [&'static str] {
        &[
            "jax",
            "jaxlib",
            "jax-cuda13-plugin",
            "jax-cuda12-plugin",
            "jax-cuda13-pjrt",
            "jax-cuda12-pjrt",
        ]
    }

    fn models(&self) -> &'static [Range] {
        MODELS
    }

    fn import(&self, ctx: &Ctx, _m: &Selected, p: &mut dyn Process) -> Step {
        let Some(plugin) = plugin(ctx) else {
            return Step {
                outcome: no_plugin(ctx),
                notes: vec![],
            };
        };
        let mut notes = Vec::new();
        let cudart = format!("libcudart.so.{}", plugin.major);
        let mut first = None;
        let mut solver = None;
        for name in EXTENSIONS {
            let path = plugin.package.join(format!("{name}.so"));
            if !ctx.root.exists(&path) {
                continue;
            }
            let module = format!("jax_cuda{}_plugin.{name}", plugin.major);
            match p.load_extension("jax", &module, &path) {
                Ok(i) => {
                    first.get_or_insert(i);
                    // `_solver` opens the CUDA runtime through its DT_RPATH as it initialises; a failure is
                    // not raised here, `_versions` reports it at the first use.
                    if *name == "_solver" {
                        solver = Some(i);
                        let _ = p.dlopen("jax", i, &cudart, When::Import);
                    }
                }
                Err(e) => notes.push(format!("`import {module}` fails: {}", e.message)),
            }
        }
        if let (None, Some(caller)) = (solver, first) {
            let _ = p.dlopen("jax", caller, &cudart, When::Import);
        }
        Step {
            outcome: Outcome::Gpu,
            notes,
        }
    }

    fn first_use(&self, ctx: &Ctx, m: &Selected, p: &mut dyn Process) -> Step {
        let Some(plugin) = plugin(ctx) else {
            return Step {
                outcome: no_plugin(ctx),
                notes: vec![],
            };
        };
        let mut notes = Vec::new();
        if m.index >= 1 {
            preload(ctx, m.index, p, &mut notes);
        }
        let versions = p.loaded().iter().position(|l| {
            l.path
                .ends_with(&format!("jax_cuda{}_plugin/_versions.so", plugin.major))
        });
        let Some(versions) = versions else {
            let because = format!("jax_cuda{}_plugin/_versions.so is not installed", plugin.major);
            return Step {
                outcome: fallback(ctx, &plugin, "ImportError: _versions".into(), because),
                notes,
            };
        };
        let skip = ctx
            .env
            .get("JAX_SKIP_CUDA_CONSTRAINTS_CHECK")
            .is_some_and(|v| !v.is_empty());
        if skip {
            notes.push(
                "JAX_SKIP_CUDA_CONSTRAINTS_CHECK is set: the plugin skips its CUDA version check".into(),
            );
        } else if platforms_skip_check(ctx) {
            notes.push("JAX_PLATFORMS names no CUDA platform: the plugin skips its version check".into());
        } else {
            if let Some((message, help)) = check_versions(ctx, &plugin, versions, p) {
                let because =
                    format!("the CUDA plugin's version check fails, so JAX will not use the GPU; {help}");
                return Step {
                    outcome: fallback(ctx, &plugin, message, because),
                    notes,
                };
            }
            // `cuda_device_count()`: cuInit through the driver library `_versions.so` opens.
            if let Err(e) = p.dlopen("jax", versions, "libcuda.so.1", When::FirstUse)
                && !ctx.provided("libcuda.so.1")
            {
                // As jaxlib 0.10.2 printed it on a machine without libcuda.so.1.
                let message =
                    "RuntimeError: operation cuInit(0) failed: Unknown CUDA error 303; cuGetErrorName \
                               failed. This probably means that JAX was unable to load the CUDA libraries."
                        .to_string();
                let because = format!(
                    "libcuda.so.1, the driver library, cannot be loaded ({}): JAX will not use the GPU",
                    e.message
                );
                return Step {
                    outcome: fallback(ctx, &plugin, message, because),
                    notes,
                };
            }
            if ctx.gpus.is_empty() {
                let because = "no GPU is visible to the process: cuInit finds no device, the CUDA plugin's \
                               initialize() raises and JAX runs on the CPU"
                    .to_string();
                return Step {
                    outcome: Outcome::CpuFallback {
                        message: None,
                        because,
                    },
                    notes,
                };
            }
        }
        let outcome = register(ctx, &plugin, p, &mut notes);
        Step { outcome, notes }
    }

    fn checks(&self, ctx: &Ctx, _m: &Selected, p: &dyn Process) -> Vec<Finding> {
        let Some(plugin) = plugin(ctx) else {
            return vec![];
        };
        let wheel = cu(plugin.major, "cudnn");
        let compiled = pin(&plugin.requires, &wheel).and_then(|s| floor_of(&s));
        xla_cudnn_rule(ctx, p, compiled, "JAX", &fix(&plugin, &wheel))
            .into_iter()
            .collect()
    }

    /// With `JAX_PLATFORMS` naming CUDA, the plugin's failure at initialisation raises (`Unable to initialize
    /// backend 'cuda'`, or an `AssertionError` where no GPU is visible) instead of falling back to the CPU: the
    /// fix is the cause's, said in JAX's terms.
    fn help(&self, ctx: &Ctx, _m: &Selected, outcome: &Outcome) -> Option<String> {
        let Outcome::Fails { message, load: None } = outcome else {
            return None;
        };
        if !platforms_ask_cuda(ctx) || !message.starts_with("Jax plugin configuration error") {
            return None;
        }
        let python = ctx.python.syspath.executable.display();
        if message.contains("cuInit(0) failed") {
            return Some(format!(
                "JAX cannot load the NVIDIA driver's libcuda.so.1, and JAX_PLATFORMS asks for CUDA, so it raises \
                 instead of running on the CPU: {}. (`{python}` runs on the CPU with JAX_PLATFORMS unset.)",
                super::INSTALL_DRIVER
            ));
        }
        let plugin = plugin(ctx)?;
        let pinned = ctx
            .python
            .dist("jax")
            .map_or_else(String::new, |d| format!("=={}", d.version()));
        Some(format!(
            "the CUDA plugin's initialisation fails (the first lines of JAX's message say why) and JAX_PLATFORMS \
             asks for CUDA, so it raises instead of running on the CPU: reinstall JAX with its CUDA wheels, \
             `{python} -m pip install --force-reinstall \"jax[cuda{}]{pinned}\"`",
            plugin.major
        ))
    }
}

/// Without a CUDA plugin JAX runs on the CPU, and says so when a GPU's device node exists.
fn no_plugin(ctx: &Ctx) -> Outcome {
    let message = (!ctx.gpus.is_empty()).then(|| {
        "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back \
         to cpu."
            .to_string()
    });
    Outcome::CpuFallback {
        message,
        because: "no CUDA plugin (jax-cuda12-plugin, jax-cuda13-plugin) is installed: `pip install -U \
                  \"jax[cuda12]\"` (or `jax[cuda13]`)"
            .into(),
    }
}

/// `_load_nvidia_libraries()`: each library by path from its `nvidia.<x>` package, failures ignored.
fn preload(ctx: &Ctx, model: usize, p: &mut dyn Process, notes: &mut Vec<String>) {
    // Every file first (finding them reads only directories), so that they can be read ahead while the loads
    // go one after the other in JAX's order.
    let mut files: Vec<(String, &str, PathBuf)> = Vec::new();
    for (sub, libs, major) in PRELOAD {
        if model < 2 && *major == 13 {
            continue;
        }
        let Some(dir) = nvidia_module(ctx, sub) else {
            continue;
        };
        for lib in *libs {
            let path = dir.join("lib").join(lib);
            if ctx.root.exists(&path) {
                let search = format!("import nvidia.{sub} → {}/lib/{lib}", dir.display());
                files.push((search, lib, path));
            }
        }
    }
    let paths: Vec<PathBuf> = files.iter().map(|(_, _, path)| path.clone()).collect();
    p.expect_paths(&paths);
    for (search, lib, path) in files {
        match p.load_path("jax", &path, &search, false) {
            // cuDNN opens its graph library as it loads (observed: `libcudnn_graph.so.9` right after
            // `libcudnn.so.9`, on this machine and on the H200).
            Ok(i) if lib == "libcudnn.so.9" => {
                let _ = p.dlopen("jax", i, "libcudnn_graph.so.9", When::FirstUse);
            }
            Ok(_) => {}
            Err(e) => notes.push(format!(
                "the CUDA plugin's preload of {} fails and is ignored: {}",
                path.display(),
                e.message
            )),
        }
    }
}

/// `register_plugin('cuda', library_path=xla_cuda_plugin.so)` and the libraries XLA opens by name from it.
fn register(ctx: &Ctx, plugin: &Plugin, p: &mut dyn Process, notes: &mut Vec<String>) -> Outcome {
    let Some(pjrt) = plugin.pjrt.clone() else {
        let because = format!(
            "jax-cuda{}-pjrt (xla_cuda_plugin.so) is not installed",
            plugin.major
        );
        return Outcome::CpuFallback {
            message: None,
            because,
        };
    };
    let search = format!("jax_plugins.xla_cuda{}: {}", plugin.major, pjrt.display());
    let caller = match p.load_path("jax", &pjrt, &search, false) {
        Ok(i) => i,
        Err(e) => return cuda_backend_failed(ctx, e),
    };
    if let Err(e) = p.dlopen("jax", caller, "libcuda.so.1", When::FirstUse)
        && !ctx.provided("libcuda.so.1")
    {
        return cuda_backend_failed(ctx, e);
    }
    for name in super::xla::sonames(plugin.major) {
        if let Err(e) = p.dlopen("jax", caller, &name, When::FirstUse) {
            notes.push(format!(
                "XLA cannot dlopen {name} ({}): the first operation that needs it fails",
                e.message
            ));
        }
    }
    // What the loaded objects open by their own data at the first GPU use (NVML for the plugin, as on the
    // H200 after xla_cuda_plugin.so).
    p.runtime_loads("jax");
    Outcome::Gpu
}

/// The backend factory failed after the plugin registered: JAX warns and runs on the CPU.
fn cuda_backend_failed(ctx: &Ctx, e: LoadError) -> Outcome {
    let message = format!(
        "CUDA backend failed to initialize: {}.(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
        e.message
    );
    if platforms_ask_cuda(ctx) {
        return Outcome::Fails {
            message: format!("RuntimeError: Unable to initialize backend 'cuda': {}", e.message),
            load: Some(e),
        };
    }
    Outcome::CpuFallback {
        message: Some(message),
        because: format!("XLA cannot load {}: JAX will not use the GPU", e.name),
    }
}

#[cfg(test)]
#[path = "jax_tests.rs"]
mod tests;
