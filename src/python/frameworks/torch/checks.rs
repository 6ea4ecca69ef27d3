//! torch at its first GPU use, and its run-time rules: the driver check of the CUDA runtime's initialisation
//! (`The NVIDIA driver on your system is too old (found version …)`) and cuDNN's version rule of
//! `torch/backends/cudnn/__init__.py` (`_init`), which raises only from the calls that run it.

use super::super::{Ctx, Loaded, Outcome, Process, Step, When};
use crate::facts::host::LibKind;
use crate::findings::{Code, Finding};
use crate::matrix::CudaVersion;

/// The message torch's CUDA initialisation raises (and `torch.cuda.is_available()` warns) when the driver's CUDA
/// is older than the runtime's (`c10/cuda`, `cudaErrorInsufficientDriver`); `found` is the driver's CUDA as
/// `cudaDriverGetVersion` gives it (12.2 → 12020).
fn driver_too_old(found: &CudaVersion) -> String {
    format!(
        "The NVIDIA driver on your system is too old (found version {}). Please update your GPU driver by \
         downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx \
         Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with \
         your version of the CUDA driver.",
        found.major * 1000 + found.minor * 10
    )
}

/// What torch raises at its first CUDA call when the process's `libcuda.so.1` is the toolkit's link stub:
/// `cudaGetDeviceCount` returns `cudaErrorStubLibrary` (34) and c10 (`c10/cuda/CUDAFunctions.cpp`) raises this
/// (measured on the H200 with the stub first on `LD_LIBRARY_PATH`).
const STUB_RAISES: &str = "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before \
     calling NumCudaDevices() that might have already set an error? Error 34: CUDA driver is a stub library";

/// Why the process's `libcuda.so.1` is the CUDA toolkit's link stub, if it is: it lies in a `stubs` directory
/// (by its path as loaded or its real path: [`LibKind::of`], as `doctor` tells one). A copy of the stub elsewhere
/// is not told apart here (by its content, as `doctor`'s `stub-libcuda` does, every tiny test library would be one).
fn stub_driver(p: &dyn Process) -> Option<(String, String)> {
    use std::path::Path;
    let l = &p.loaded()[p.find("libcuda.so.1")?];
    (LibKind::of(Path::new(&l.path), Path::new(&l.realpath)) == LibKind::Stub).then(|| {
        (
            l.path.clone(),
            format!(
                "{} ({}) lies in a `stubs` directory: the CUDA toolkit's link stub",
                l.path, l.realpath
            ),
        )
    })
}

/// The CUDA runtime torch maps (`libcudart.so.13`), its major.
fn cudart(p: &dyn Process) -> Option<(&Loaded, u32)> {
    p.loaded().iter().find_map(|l| {
        let major = l
            .soname
            .as_deref()?
            .strip_prefix("libcudart.so.")?
            .split('.')
            .next()?
            .parse()
            .ok()?;
        Some((l, major))
    })
}

/// The driver's CUDA when it is older than the runtime's major needs (minor-version compatibility: a CUDA
/// 13.x runtime runs on any driver of CUDA 13.0 or later).
fn driver_short(ctx: &Ctx, p: &dyn Process) -> Option<(CudaVersion, u32, String)> {
    let drv = ctx.driver?;
    let dc = ctx.matrix.driver_cuda(&drv.version)?;
    let (rt, major) = cudart(p)?;
    (dc.cuda.major < major).then(|| {
        let because = format!(
            "driver {} (from {}) supports CUDA {}; torch maps {} (CUDA {major}), which needs a CUDA {major}.0 driver",
            drv.version, drv.source, dc.cuda, rt.path
        );
        (dc.cuda, major, because)
    })
}

/// cuDNN's sub-libraries a first convolution loads, each from the library that opens it (glibc's
/// `LD_DEBUG=libs` of torch 2.11 with cuDNN 9.19 on an H200, a CUDA tensor and a `conv2d`: `libcudnn.so.9`
/// opens `libcudnn_graph`, which opens the precompiled engines, the heuristics and the run-time compiled
/// engines; `ops`, `cnn`, `adv` and the tensor-IR engines stay unloaded).
const CUDNN_CONV: &[(&str, &str)] = &[
    ("libcudnn.so.", "libcudnn_graph.so"),
    ("libcudnn_graph.so.", "libcudnn_engines_precompiled.so"),
    ("libcudnn_graph.so.", "libcudnn_heuristic.so"),
    ("libcudnn_graph.so.", "libcudnn_engines_runtime_compiled.so"),
];

/// The loaded object whose soname starts with `prefix`.
fn by_prefix(p: &dyn Process, prefix: &str) -> Option<usize> {
    p.loaded()
        .iter()
        .position(|l| l.soname.as_deref().is_some_and(|s| s.starts_with(prefix)))
}

/// cuDNN's `dlopen` of a sub-library: its own version completes the stem, longest first (`.9.19.0`, `.9.19`,
/// `.9`), as the `LD_DEBUG` trace shows it asking; the first name that loads.
fn cudnn_open(
    ctx: &Ctx,
    p: &mut dyn Process,
    caller: usize,
    stem: &str,
) -> Result<usize, super::super::LoadError> {
    let cudnn = by_prefix(p, "libcudnn.so.").map(|i| p.loaded()[i].clone());
    let version = cudnn
        .as_ref()
        .and_then(|l| runtime_cudnn(ctx, l))
        .map(|(v, _)| v)
        .or_else(|| {
            let major = cudnn
                .as_ref()?
                .soname
                .as_deref()?
                .rsplit('.')
                .next()?
                .parse()
                .ok()?;
            Some([major, 0, 0])
        })
        .unwrap_or([9, 0, 0]);
    let names = [
        format!("{stem}.{}.{}.{}", version[0], version[1], version[2]),
        format!("{stem}.{}.{}", version[0], version[1]),
        format!("{stem}.{}", version[0]),
    ];
    let mut last = None;
    for n in &names {
        match p.dlopen("torch", caller, n, When::FirstUse) {
            Ok(i) => return Ok(i),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| super::super::LoadError {
        name: stem.to_string(),
        requester: "torch".into(),
        message: format!("{stem}: cannot open shared object file: No such file or directory"),
        library: None,
    }))
}

/// The first GPU use, a CUDA tensor and a convolution: the CUDA runtime opens the driver (already loaded by
/// cuBLASLt), the driver its PTX JIT compiler, c10 NVML, cuDNN its sub-libraries; then what `torch.cuda` makes
/// of them.
pub fn first_use(ctx: &Ctx, p: &mut dyn Process) -> Step {
    let mut notes = Vec::new();
    if p.find("libtorch_cuda.so").is_none() {
        return fallback(
            None,
            "torch is a build without CUDA (no libtorch_cuda.so is loaded): torch.cuda.is_available() returns \
             False and CUDA calls raise AssertionError: Torch not compiled with CUDA enabled",
        );
    }
    let rt = by_prefix(p, "libcudart.so.").unwrap_or(0);
    let driver = p.dlopen("torch", rt, "libcuda.so.1", When::FirstUse);
    if driver.is_err() && !ctx.provided("libcuda.so.1") {
        return fallback(
            Some(
                "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a \
                 driver from http://www.nvidia.com/Download/index.aspx",
            ),
            "libcuda.so.1 is found nowhere: torch.cuda.is_available() returns False, and the first CUDA tensor \
             raises",
        );
    }
    if driver.is_ok()
        && let Some((_, why)) = stub_driver(p)
    {
        return Step {
            outcome: Outcome::Fails {
                message: format!("RuntimeError: {STUB_RAISES}"),
                load: None,
            },
            notes: vec![why],
        };
    }
    if let Some((found, _, because)) = driver_short(ctx, p) {
        return Step {
            outcome: Outcome::Fails {
                message: format!("RuntimeError: {}", driver_too_old(&found)),
                load: None,
            },
            notes: vec![because],
        };
    }
    if ctx.gpus.is_empty() {
        return fallback(
            None,
            "no GPU is visible: torch.cuda.is_available() returns False (code that asks for 'cuda' raises \
             RuntimeError: No CUDA GPUs are available)",
        );
    }
    // The driver opens its PTX JIT compiler with the first context (mapped after a CUDA tensor on the H200
    // with driver 580); a driver without it is the driver's matter, not torch's.
    if let Some(cu) = p.find("libcuda.so.1") {
        let _ = p.dlopen("torch", cu, "libnvidia-ptxjitcompiler.so.1", When::FirstUse);
    }
    if driver.is_err() {
        notes.push(
            "libcuda.so.1, libnvidia-ml.so.1 and the driver's other libraries are the declared machine's, \
             installed with its driver (none is read here)"
                .to_string(),
        );
    }
    if let Some(c10) = p.find("libc10_cuda.so")
        && let Err(e) = p.dlopen("torch", c10, "libnvidia-ml.so.1", When::FirstUse)
        && !ctx.provided("libnvidia-ml.so.1")
    {
        notes.push(format!(
            "NVML is not loaded ({}): torch goes on without it",
            e.message
        ));
    }
    for (from, stem) in CUDNN_CONV {
        let Some(caller) = by_prefix(p, from) else {
            continue;
        };
        if let Err(e) = cudnn_open(ctx, p, caller, stem) {
            return Step {
                outcome: Outcome::Fails {
                    message: format!(
                        "the first cuDNN operation fails: cuDNN cannot load its sub-library: {}",
                        e.message
                    ),
                    load: Some(e),
                },
                notes,
            };
        }
    }
    Step {
        outcome: Outcome::Gpu,
        notes,
    }
}

fn fallback(message: Option<&str>, because: &str) -> Step {
    Step {
        outcome: Outcome::CpuFallback {
            message: message.map(str::to_string),
            because: because.to_string(),
        },
        notes: Vec::new(),
    }
}

/// torch's rules on the process after its first GPU use.
pub fn checks(ctx: &Ctx, p: &dyn Process) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some((found, major, because)) = driver_short(ctx, p) {
        out.push(
            Finding::new(
                Code::DriverInsufficient,
                format!(
                    "torch's first CUDA call will raise: its CUDA {major} runtime needs a newer driver than this \
                     one (CUDA {found})"
                ),
                format!(
                    "install a driver of CUDA {major}.0 or later, or a torch built for CUDA {} (its index at \
                     https://download.pytorch.org/whl/)",
                    found.major
                ),
            )
            .because(because)
            .because(format!("torch raises RuntimeError: {}", driver_too_old(&found))),
        );
    }
    if let Some((path, why)) = stub_driver(p) {
        let dir = std::path::Path::new(&path)
            .parent()
            .map_or_else(|| "/".to_string(), |d| d.display().to_string());
        out.push(
            Finding::new(
                Code::StubLibcuda,
                format!(
                    "torch's first CUDA call will raise: the process loads the CUDA toolkit's stub {path} instead \
                     of the driver's libcuda (error 34, CUDA driver is a stub library)"
                ),
                format!(
                    "take {dir} off LD_LIBRARY_PATH (and ld.so.conf), or delete that copy, so that the driver's \
                     libcuda.so.1 is found; the stub is for linking only (`-L…/lib64/stubs`), never for running"
                ),
            )
            .because(why)
            .because(format!("torch raises RuntimeError: {STUB_RAISES}")),
        );
    }
    out.extend(cudnn_rule(ctx, p));
    out
}

/// The cuDNN torch was compiled against, as its `Requires-Dist` pins it (`nvidia-cudnn-cu13==9.19.0.56` →
/// (9, 19, 0)), with the line.
fn compiled_cudnn(ctx: &Ctx) -> Option<([u64; 3], String)> {
    let torch = ctx.python.dist("torch")?;
    torch.requires().iter().find_map(|r| {
        let f = crate::facts::loader::Floor::of(r)?;
        if !f.name.starts_with("nvidia-cudnn-cu") || f.op != crate::facts::loader::FloorOp::Pinned {
            return None;
        }
        let at = |i: usize| f.release.get(i).copied().unwrap_or(0);
        Some(([at(0), at(1), at(2)], r.clone()))
    })
}

/// The version of the loaded cuDNN: from its file name (`libcudnn.so.9.14.0`), else from the distribution
/// whose `RECORD` lists it (`nvidia-cudnn-cu13 9.19.0.56`).
fn runtime_cudnn(ctx: &Ctx, l: &Loaded) -> Option<([u64; 3], String)> {
    let from = |v: &str| {
        let r = crate::facts::loader::release(v)?;
        (r.len() >= 2).then(|| [r[0], r[1], r.get(2).copied().unwrap_or(0)])
    };
    if let Some(v) = l.version.as_deref().and_then(from) {
        return Some((v, format!("{} (version from its file name)", l.realpath)));
    }
    // By the name it was opened by first: through a symbolic-link copy of site-packages (`cp -as`, a Spack
    // view) the real path lies outside every `sys.path` entry, while the name is the RECORD's.
    let d = ctx
        .python
        .owner(&[std::path::Path::new(&l.path), std::path::Path::new(&l.realpath)])?;
    let v = from(
        d.release()
            .as_ref()
            .map(|r| r.iter().map(u64::to_string).collect::<Vec<_>>().join("."))?
            .as_str(),
    )?;
    Some((
        v,
        format!("{} (installed by {} {})", l.path, d.name(), d.version()),
    ))
}

/// torch's cuDNN rule (`torch/backends/cudnn/__init__.py`, `_init`): another major, or (cuDNN 7 on) an older
/// minor than compiled, raises `cuDNN version incompatibility`, but only from `torch.backends.cudnn.version()`
/// and `is_acceptable()` (`nn.RNN`/`LSTM`/`GRU` on CUDA through `flatten_parameters`): `import torch`, a
/// convolution on CUDA run. `PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK=1` turns it off.
///
/// The version torch compares is `cudnnGetVersion()`'s, which cuDNN 9's `libcudnn.so.9` (a dispatcher) answers
/// from `libcudnn_graph.so.9`, a sub-library it `dlopen`s by name. With `LD_LIBRARY_PATH` naming an older cuDNN,
/// torch preloads the wheel's `libcudnn.so.9` by path, yet the dispatcher's `dlopen` finds the older sub-libraries
/// first (its DT_RUNPATH comes after `LD_LIBRARY_PATH`) and torch raises with their version (measured on the
/// H200: 9.19 preloaded, `found runtime version (9, 14, 0)`). So the graph library's version counts when it is
/// loaded and its version known (its file name, or a `RECORD` that lists it), the dispatcher's otherwise (cuDNN 8,
/// before the first use).
fn cudnn_rule(ctx: &Ctx, p: &dyn Process) -> Option<Finding> {
    let named = |prefix: &str| {
        p.loaded()
            .iter()
            .find(|l| l.soname.as_deref().is_some_and(|s| s.starts_with(prefix)))
    };
    let (compiled, pin) = compiled_cudnn(ctx)?;
    let (l, (runtime, source)) = [named("libcudnn_graph.so."), named("libcudnn.so.")]
        .into_iter()
        .flatten()
        .find_map(|l| Some((l, runtime_cudnn(ctx, l)?)))?;
    let ok = if runtime[0] != compiled[0] {
        false
    } else if runtime[0] < 7 {
        runtime[1] == compiled[1]
    } else {
        runtime[1] >= compiled[1]
    };
    if ok || ctx.env.get("PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK") == Some("1") {
        return None;
    }
    let tuple = |v: [u64; 3]| format!("({}, {}, {})", v[0], v[1], v[2]);
    let mut message = format!(
        "cuDNN version incompatibility: PyTorch was compiled  against {} but found runtime version {}. PyTorch \
         already comes bundled with cuDNN. One option to resolving this error is to ensure PyTorch can find the \
         bundled cuDNN. ",
        tuple(compiled),
        tuple(runtime)
    );
    if let Some(llp) = ctx.env.get("LD_LIBRARY_PATH") {
        if llp.contains("cuda") || llp.contains("cudnn") {
            message.push_str(&format!(
                "Looks like your LD_LIBRARY_PATH contains incompatible version of cudnn. Please either remove it \
                 from the path or install cudnn {}",
                tuple(compiled)
            ));
        } else {
            message.push_str("one possibility is that there is a conflicting cuDNN in LD_LIBRARY_PATH.");
        }
    }
    Some(
        Finding::new(
            Code::FrameworkVersionCheck,
            format!(
                "torch's cuDNN check will raise from torch.backends.cudnn.version() and is_acceptable() (nn.RNN, \
                 LSTM and GRU on CUDA): it loads cuDNN {}.{} and was built for {}.{}",
                runtime[0], runtime[1], compiled[0], compiled[1]
            ),
            format!(
                "let torch load the cuDNN it pins ({pin}): remove the directory of {} from LD_LIBRARY_PATH or \
                 install that cuDNN; convolutions run meanwhile, PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK=1 silences \
                 the check",
                l.path
            ),
        )
        .because(format!("the loaded cuDNN: {source}"))
        .because(format!("torch's Requires-Dist pins {pin}"))
        .because(format!("RuntimeError: {message}")),
    )
}
