//! ONNX Runtime's loading (`onnxruntime-gpu`), versioned: `import onnxruntime` maps its pybind module and the
//! provider bridge and no CUDA library; creating a session with `CUDAExecutionProvider` loads
//! `capi/libonnxruntime_providers_cuda.so` by path, and that library has **no RPATH and no RUNPATH**: its CUDA
//! libraries come from a copy already in the process, `LD_LIBRARY_PATH` or `ld.so.cache`, never from the
//! NVIDIA wheels that `onnxruntime-gpu[cuda,cudnn]` installed beside it. When one is missing the session falls
//! back to the CPU without raising. `onnxruntime.preload_dlls()` (1.21 and later) loads the wheels of its own
//! site-packages by path first, which is the fix. Read at onnxruntime-gpu 1.31.1 (`onnxruntime/__init__.py`,
//! the wheel's ELF headers) and observed: `docs/framework-cupy-onnxruntime.md`.

use super::{Ctx, Dist, Framework, LoadError, Outcome, Process, Range, Selected, Step, When};
use crate::findings::Finding;
use crate::system::read::CONFIG_TEXT;
use std::path::{Path, PathBuf};

/// The model: `preload` says whether the program calls `onnxruntime.preload_dlls()` before its session
/// (`cudadiag import onnxruntime.preload_dlls`).
pub struct OnnxRuntime {
    /// `onnxruntime.preload_dlls()` runs before the session is created.
    pub preload: bool,
}

/// Before 1.21, then from 1.21 (`preload_dlls()`, microsoft/onnxruntime PR #23674).
const MODELS: &[Range] = &[
    Range {
        from: "1.19",
        until: Some("1.21"),
        about: "no preload_dlls(): the CUDA provider's libraries come from an earlier import, LD_LIBRARY_PATH \
                or ld.so.cache",
    },
    Range {
        from: "1.21",
        until: None,
        about: "preload_dlls() loads the NVIDIA wheels of onnxruntime's own site-packages, when called",
    },
];

const WITH_PRELOAD: usize = 1;

/// The CUDA build, then the CPU build (which has no CUDA provider).
const DISTRIBUTIONS: &[&str] = &["onnxruntime-gpu", "onnxruntime"];

const PROVIDER: &str = "onnxruntime/capi/libonnxruntime_providers_cuda.so";
const SHARED: &str = "onnxruntime/capi/libonnxruntime_providers_shared.so";
const BUILD_INFO: &str = "onnxruntime/capi/build_and_package_info.py";

/// The installed ONNX Runtime.
struct Install<'a> {
    dist: &'a Dist,
    /// `cuda_version` of `capi/build_and_package_info.py`, its major (`'13.0'` → 13); `None` for a CPU build.
    cuda: Option<u32>,
}

impl Install<'_> {
    fn file(&self, rel: &str) -> PathBuf {
        self.dist.site.join(rel)
    }
}

/// `cuda_version = '13.0'` of the build information, its major.
fn cuda_major(text: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let v = l
            .trim()
            .strip_prefix("cuda_version")?
            .trim_start()
            .strip_prefix('=')?
            .trim();
        let v = v.trim_matches(|c| c == '\'' || c == '"');
        v.split('.').next()?.parse().ok()
    })
}

fn install<'a>(ctx: &'a Ctx) -> Option<Install<'a>> {
    let dist = DISTRIBUTIONS.iter().find_map(|n| ctx.python.dist(n))?;
    let text = ctx
        .root
        .read_to_string(&dist.site.join(BUILD_INFO), CONFIG_TEXT)
        .ok();
    let cuda = text.as_deref().and_then(cuda_major);
    Some(Install { dist, cuda })
}

/// `_get_nvidia_dll_paths(is_windows=False)` of 1.31.1: the files `preload_dlls()` loads, relative to the
/// site-packages that holds onnxruntime, in its order; the CUDA 13 wheels' one `nvidia/cu13/lib`, CUDA 12's
/// split directories, cuDNN's own. With whether a failure is tolerated (cuFFT, NVRTC, cuDNN).
pub fn preload_files(major: u32) -> Vec<(String, bool)> {
    let cufft = if major >= 13 { 12 } else { 11 };
    let names = [
        ("cublas", format!("libcublasLt.so.{major}"), false),
        ("cublas", format!("libcublas.so.{major}"), false),
        ("cuda_nvrtc", format!("libnvrtc.so.{major}"), true),
        ("curand", "libcurand.so.10".to_string(), false),
        ("cufft", format!("libcufft.so.{cufft}"), true),
        ("cuda_runtime", format!("libcudart.so.{major}"), false),
    ];
    let mut out: Vec<(String, bool)> = names
        .into_iter()
        .map(|(dir, file, optional)| {
            let dir = if major >= 13 {
                format!("cu{major}")
            } else {
                dir.to_string()
            };
            (format!("nvidia/{dir}/lib/{file}"), optional)
        })
        .collect();
    out.push(("nvidia/cudnn/lib/libcudnn.so.9".to_string(), true));
    out
}

/// What `preload_dlls()` printed: the lines of its failures.
fn preload(ctx: &Ctx, i: &Install, major: u32, p: &mut dyn Process) -> Vec<String> {
    let mut printed = Vec::new();
    if major < 12 {
        printed.push(format!(
            "WARNING: {} is built with CUDA {major}, which is not supported for preloading.",
            i.dist.name()
        ));
        return printed;
    }
    let files = preload_files(major);
    let mut loaded = Vec::new();
    for (rel, optional) in &files {
        let path = i.dist.site.join(rel);
        if !ctx.root.is_file(&path) {
            continue;
        }
        let search = format!("onnxruntime.preload_dlls(): {}", i.dist.site.display());
        match p.load_path("onnxruntime", &path, &search, false) {
            Ok(_) => loaded.push(rel.clone()),
            Err(e) if !optional => printed.push(format!("Failed to load {}: {}", path.display(), e.message)),
            Err(_) => {}
        }
    }
    // Then `ctypes.CDLL(name)` for each file not loaded: the system's search, as from the interpreter.
    let Some(caller) = super::pathfinder::interpreter(p) else {
        return printed;
    };
    let mut failed = false;
    for (rel, optional) in files.iter().filter(|(r, _)| !loaded.contains(r)) {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if let Err(e) = p.dlopen("onnxruntime", caller, name, When::FirstUse)
            && !optional
        {
            failed = true;
            printed.push(format!("Failed to load {name}: {}", e.message));
        }
    }
    if failed {
        printed.push(
            "Please follow https://onnxruntime.ai/docs/install/#cuda-and-cudnn to install CUDA.".to_string(),
        );
    }
    printed
}

impl Framework for OnnxRuntime {
    /// `onnxruntime`; `onnxruntime.preload_dlls` for a program that calls it before its session (what
    /// `cudadiag import onnxruntime.preload_dlls` models).
    fn module(&self) -> &'static str {
        if self.preload {
            "onnxruntime.preload_dlls"
        } else {
            "onnxruntime"
        }
    }

    fn distributions(&self) -> &'static [&'static str] {
        DISTRIBUTIONS
    }

    fn models(&self) -> &'static [Range] {
        MODELS
    }

    fn import(&self, ctx: &Ctx, _m: &Selected, p: &mut dyn Process) -> Step {
        let Some(i) = install(ctx) else {
            return fails(
                "ModuleNotFoundError: No module named 'onnxruntime'".to_string(),
                None,
            );
        };
        let module = i
            .dist
            .files()
            .iter()
            .find(|f| f.starts_with("onnxruntime/capi/onnxruntime_pybind11_state") && f.ends_with(".so"))
            .map(|f| i.dist.site.join(f));
        let shared = i.file(SHARED);
        // The module, the provider bridge and the CUDA provider (loaded at first use): read ahead.
        let ahead: Vec<PathBuf> = module
            .iter()
            .cloned()
            .chain([shared.clone(), i.file(PROVIDER)])
            .collect();
        p.expect_paths(&ahead);
        if let Some(module) = &module
            && let Err(e) = p.load_extension(
                "onnxruntime",
                "onnxruntime.capi.onnxruntime_pybind11_state",
                module,
            )
        {
            return fails(format!("ImportError: {}", e.message), Some(e));
        }
        // The provider bridge, loaded by path at import (observed in /proc/self/maps after `import onnxruntime`).
        if ctx.root.exists(&shared) {
            let _ = p.load_path("onnxruntime", &shared, "onnxruntime: the provider bridge", false);
        }
        let notes = Vec::new();
        Step {
            outcome: Outcome::Gpu,
            notes,
        }
    }

    fn first_use(&self, ctx: &Ctx, m: &Selected, p: &mut dyn Process) -> Step {
        let Some(i) = install(ctx) else {
            return fails(
                "ModuleNotFoundError: No module named 'onnxruntime'".to_string(),
                None,
            );
        };
        let provider = i.file(PROVIDER);
        let Some(major) = i.cuda.filter(|_| ctx.root.exists(&provider)) else {
            return cpu(
                Some(format!(
                    "Specified provider 'CUDAExecutionProvider' is not in available provider names.Available \
                     providers: 'CPUExecutionProvider' ({} {} is a build without CUDA)",
                    i.dist.name(),
                    i.dist.version()
                )),
                format!("{} {} has no CUDA provider", i.dist.name(), i.dist.version()),
            );
        };
        let mut notes = Vec::new();
        if self.preload && m.index == WITH_PRELOAD {
            notes.extend(preload(ctx, &i, major, p));
        } else if self.preload {
            notes.push(format!(
                "onnxruntime {} has no preload_dlls() (from 1.21): the call raises AttributeError",
                i.dist.version()
            ));
        }
        let search = "onnxruntime ProviderLibrary::Get: the CUDA provider, by path";
        match p.load_path("onnxruntime", &provider, search, false) {
            Ok(_) => {
                notes.push(
                    "cuDNN and NVRTC, opened by the CUDA provider at the first operation that needs them, are not \
                     modelled"
                        .to_string(),
                );
                Step {
                    outcome: Outcome::Gpu,
                    notes,
                }
            }
            Err(e) => {
                let mut step = fallback(ctx, &i, major, &provider, &e, self.preload);
                step.notes.splice(0..0, notes);
                step
            }
        }
    }

    fn checks(&self, _ctx: &Ctx, _m: &Selected, _p: &dyn Process) -> Vec<Finding> {
        // The CUDA provider checks nothing beyond its DT_NEEDED sonames: a mismatch shows as an undefined
        // symbol or a cuDNN error at run time, which the loader's own rules judge.
        Vec::new()
    }

    fn help(&self, ctx: &Ctx, m: &Selected, outcome: &Outcome) -> Option<String> {
        let Outcome::CpuFallback { message, .. } = outcome else {
            return None;
        };
        // A provider that stops at the driver's library is the driver's finding.
        if message
            .as_deref()
            .is_some_and(|t| t.contains("error: libcuda.so.1:"))
        {
            return None;
        }
        fix(ctx, m)
    }
}

fn fails(message: String, load: Option<LoadError>) -> Step {
    Step {
        outcome: Outcome::Fails { message, load },
        notes: Vec::new(),
    }
}

fn cpu(message: Option<String>, because: String) -> Step {
    Step {
        outcome: Outcome::CpuFallback { message, because },
        notes: Vec::new(),
    }
}

/// The session's fall-back to the CPU, with ONNX Runtime's two lines and why in the model's terms.
fn fallback(ctx: &Ctx, i: &Install, major: u32, provider: &Path, e: &LoadError, preloaded: bool) -> Step {
    let message = format!(
        "Failed to load library {} with error: {}; Failed to create CUDAExecutionProvider. Require cuDNN 9.* and \
         CUDA {major}.*. Please install all dependencies as mentioned in the GPU requirements page \
         (https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements), make sure \
         they're in the PATH, and that your GPU is supported.",
        provider.display(),
        e.message
    );
    let missing = missing_soname(e);
    let beside = missing
        .as_deref()
        .and_then(|s| in_wheels(ctx, i, major, s))
        .filter(|_| !preloaded);
    let because = match (&missing, beside) {
        (Some(s), Some(at)) => format!(
            "libonnxruntime_providers_cuda.so has no RPATH: {s} is installed at {} but is found only if already \
             loaded, in LD_LIBRARY_PATH or in ld.so.cache; the session runs on the CPU",
            at.display()
        ),
        (Some(s), None) => format!(
            "{s}, needed by the CUDA provider, is not installed where the search reaches; the session runs on the CPU"
        ),
        (None, _) => format!(
            "the CUDA provider does not load ({}); the session runs on the CPU",
            e.message
        ),
    };
    cpu(Some(message), because)
}

/// The soname a failed load names first (`libcublasLt.so.13: cannot open shared object file`).
fn missing_soname(e: &LoadError) -> Option<String> {
    let first = e.message.split(':').next()?.trim();
    (first.starts_with("lib") && first.contains(".so")).then(|| first.to_string())
}

/// Where `preload_dlls()` would find `soname`: a file of its list in onnxruntime's own site-packages.
fn in_wheels(ctx: &Ctx, i: &Install, major: u32, soname: &str) -> Option<PathBuf> {
    preload_files(major)
        .into_iter()
        .map(|(rel, _)| i.dist.site.join(rel))
        .find(|p| p.file_name().is_some_and(|n| n == soname) && ctx.root.exists(p))
}

/// What to run when the session falls back to the CPU, in ONNX Runtime's terms.
pub fn fix(ctx: &Ctx, m: &Selected) -> Option<String> {
    let i = install(ctx)?;
    let Some(major) = i.cuda else {
        return Some(
            "Install ONNX Runtime's CUDA build: `pip uninstall onnxruntime` then `pip install \
             'onnxruntime-gpu[cuda,cudnn]'`"
                .to_string(),
        );
    };
    let extras = format!("'onnxruntime-gpu[cuda,cudnn]=={}'", i.dist.version());
    if m.index != WITH_PRELOAD {
        return Some(format!(
            "onnxruntime {} has no preload_dlls(): upgrade (`pip install -U 'onnxruntime-gpu[cuda,cudnn]'`) and call \
             `onnxruntime.preload_dlls()` before creating the session, or run with the CUDA {major} libraries' \
             directory in LD_LIBRARY_PATH",
            i.dist.version()
        ));
    }
    let have = preload_files(major)
        .iter()
        .any(|(rel, optional)| !optional && ctx.root.exists(&i.dist.site.join(rel)));
    Some(if have {
        format!(
            "Call `onnxruntime.preload_dlls()` before creating the InferenceSession: it loads the CUDA {major} and \
             cuDNN wheels of {} by path, which the CUDA provider (no RPATH) does not search (`cudadiag import \
             onnxruntime.preload_dlls` checks it). `import torch` before `onnxruntime` helps only with the \
             libraries torch loads itself (`cudadiag import torch onnxruntime` checks that order)",
            i.dist.site.display()
        )
    } else {
        format!(
            "Install the CUDA {major} and cuDNN wheels onnxruntime-gpu declares, `pip install {extras}`, then call \
             `onnxruntime.preload_dlls()` before creating the InferenceSession"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cuda_major_is_read_from_the_build_information() {
        let text = "package_name = 'onnxruntime-gpu'\n__version__ = '1.31.1'\ncuda_version = '13.0'\n";
        assert_eq!(cuda_major(text), Some(13));
        assert_eq!(cuda_major("cuda_version = \"12.4\""), Some(12));
        assert_eq!(cuda_major("package_name = 'onnxruntime'\n"), None);
    }

    #[test]
    fn preload_dlls_names_the_cuda_13_wheels_one_directory_and_cuda_12s_split_ones() {
        let f13 = preload_files(13);
        assert_eq!(f13[0].0, "nvidia/cu13/lib/libcublasLt.so.13");
        assert!(
            f13.iter()
                .any(|(r, opt)| r == "nvidia/cu13/lib/libcufft.so.12" && *opt)
        );
        let f12 = preload_files(12);
        assert_eq!(f12[5].0, "nvidia/cuda_runtime/lib/libcudart.so.12");
        assert!(f12.iter().any(|(r, _)| r == "nvidia/cufft/lib/libcufft.so.11"));
        assert_eq!(
            f12.last().map(|f| f.0.as_str()),
            Some("nvidia/cudnn/lib/libcudnn.so.9")
        );
    }

    #[test]
    fn the_missing_soname_is_the_first_word_of_dlerror() {
        let e = LoadError {
            name: "x".into(),
            requester: "y".into(),
            message: "libcublasLt.so.13: cannot open shared object file: No such file or directory".into(),
            library: None,
        };
        assert_eq!(missing_soname(&e).as_deref(), Some("libcublasLt.so.13"));
    }
}
