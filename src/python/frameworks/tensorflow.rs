//! TensorFlow, modelled as its C++ loader does it: no Python code looks for CUDA. `import tensorflow` maps
//! `libtensorflow_framework.so.2`, whose `tsl::internal::DsoLoader` opens the CUDA runtime at once; at GPU
//! device registration it `dlopen`s cudart, cuBLAS, cuBLASLt, cuFFT, cuSOLVER, cuSPARSE and cuDNN by versioned
//! soname (`TryDlopenCUDALibraries`), each resolved from `libtensorflow_framework.so.2`: `LD_LIBRARY_PATH`
//! first, then its DT_RUNPATH (`$ORIGIN/../nvidia/<x>/lib`), then `ld.so.cache`. If any is missing it logs
//! `Cannot dlopen some GPU libraries.` and registers no GPU: the program runs on the CPU without raising.
//! The sonames come from the build (`tensorflow/python/platform/build_info.py`: `cuda_version`,
//! `cudnn_version`). Sources and observations: `docs/framework-jax-tensorflow.md`.

use super::xla::{floor_of, pin, xla_cudnn_rule};
use super::{Ctx, Framework, Outcome, Process, Range, Selected, Step, When};
use crate::findings::Finding;
use crate::system::read::Limit;
use std::path::PathBuf;

/// The TensorFlow model.
pub struct TensorFlow;

/// The versions whose loading differs: CUDA 11 builds, then CUDA 12 builds with the `[and-cuda]` wheels.
pub const MODELS: &[Range] = &[
    Range {
        from: "2.5",
        until: Some("2.15"),
        about: "CUDA 11 builds: libcudart.so.11.0, libcufft.so.10 and the system's CUDA, found through LD_LIBRARY_PATH or ld.so.cache",
    },
    Range {
        from: "2.15",
        until: None,
        about: "CUDA 12 builds: the tensorflow[and-cuda] wheels, reached through libtensorflow_framework.so.2's DT_RUNPATH",
    },
];

/// `build_info.py` is a few hundred bytes; a larger one is not TensorFlow's.
const BUILD_INFO: Limit = Limit {
    bytes: 64 * 1024,
    what: "TensorFlow's build_info.py",
};

/// The header message TensorFlow logs after the failed `dlopen`s (`gpu_device.cc`), verbatim.
pub const CANNOT_DLOPEN: &str = "Cannot dlopen some GPU libraries. Please make sure the missing libraries \
     mentioned above are installed properly if you would like to use GPU. Follow the guide at \
     https://www.tensorflow.org/install/gpu for how to download and setup the required libraries for your \
     platform.\nSkipping registering GPU devices...";

/// What the build says (`build_info.py`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    /// `is_cuda_build`.
    pub cuda: bool,
    /// The CUDA major of `cuda_version` (`12.5.1` → 12).
    pub cuda_major: u8,
    /// `cudnn_version`'s major (`9`).
    pub cudnn_major: u8,
}

/// Reads `build_info.py`'s `cuda_version`, `cudnn_version` and `is_cuda_build` (a Python literal, not run).
pub fn parse_build_info(text: &str) -> Option<Build> {
    let value = |key: &str| -> Option<&str> {
        let at = text.find(&format!("'{key}', "))? + key.len() + 4;
        let rest = text.get(at..)?;
        let end = rest.find([')', ','])?;
        Some(rest[..end].trim().trim_matches('\''))
    };
    let major = |v: &str| v.split('.').next()?.parse::<u8>().ok();
    Some(Build {
        cuda: value("is_cuda_build") == Some("True"),
        cuda_major: value("cuda_version").and_then(major)?,
        cudnn_major: value("cudnn_version").and_then(major)?,
    })
}

/// The names `TryDlopenCUDALibraries` opens for a build, in its order: cudart, cuBLAS, cuBLASLt, cuFFT,
/// cuSOLVER, cuSPARSE, cuDNN. CUDA 11's cudart soname is `libcudart.so.11.0`.
pub fn sonames(b: &Build) -> [String; 7] {
    let m = b.cuda_major;
    let cudart = if m == 11 {
        "libcudart.so.11.0".to_string()
    } else {
        format!("libcudart.so.{m}")
    };
    let (fft, solver, sparse) = match m {
        11 => (10, 11, 11),
        12 => (11, 11, 12),
        _ => (12, 12, 12),
    };
    [
        cudart,
        format!("libcublas.so.{m}"),
        format!("libcublasLt.so.{m}"),
        format!("libcufft.so.{fft}"),
        format!("libcusolver.so.{solver}"),
        format!("libcusparse.so.{sparse}"),
        format!("libcudnn.so.{}", b.cudnn_major),
    ]
}

/// The installed `tensorflow` package directory and its build facts.
fn installed(ctx: &Ctx) -> Option<(PathBuf, Option<Build>, Vec<String>)> {
    let dist = ctx.python.dist("tensorflow")?;
    let package = dist.site.join("tensorflow");
    let build = ctx
        .root
        .read_to_string(&package.join("python/platform/build_info.py"), BUILD_INFO)
        .ok()
        .and_then(|t| parse_build_info(&t));
    Some((package, build, dist.requires().to_vec()))
}

/// A library TensorFlow could not open, and the fix in its terms: the pinned wheel, or, when the wheel is
/// installed where the framework's RUNPATH does not reach, the `LD_LIBRARY_PATH` entry TensorFlow's own
/// issue threads give.
fn fix_for(ctx: &Ctx, soname: &str, requires: &[String]) -> String {
    let on_disk = ctx.python.dists().find_map(|d| {
        d.files()
            .iter()
            .find(|f| f.starts_with("nvidia/") && f.ends_with(&format!("/{soname}")))
            .map(|f| d.site.join(f))
    });
    if let Some(file) = on_disk {
        let dir = file.parent().map(|p| p.display().to_string()).unwrap_or_default();
        return format!(
            "{soname} is installed at {} but libtensorflow_framework.so.2's RUNPATH does not reach it: \
             `export LD_LIBRARY_PATH={dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}` before starting Python",
            file.display()
        );
    }
    let stem = soname
        .trim_start_matches("lib")
        .split(".so")
        .next()
        .unwrap_or(soname)
        .to_ascii_lowercase();
    let wheel = requires
        .iter()
        .filter(|r| r.contains("extra == \"and-cuda\""))
        .find_map(|r| {
            let spec = r.split(';').next().unwrap_or(r).trim();
            let name = spec.split(['<', '>', '=', '!', '~', ' ']).next().unwrap_or(spec);
            let key = super::normalise(name);
            let component = key
                .trim_start_matches("nvidia-")
                .trim_end_matches("-cu12")
                .trim_end_matches("-cu11");
            let component = component.trim_start_matches("cuda-").replace("runtime", "cudart");
            (component == stem || (stem == "cublaslt" && component == "cublas")).then(|| pin(requires, name))
        })
        .flatten();
    match wheel {
        Some(w) => format!("`pip install -U \"tensorflow[and-cuda]\"` (it pins `{w}`)"),
        None => "`pip install -U \"tensorflow[and-cuda]\"`".to_string(),
    }
}

impl Framework for TensorFlow {
    fn module(&self) -> &'static str {
        "tensorflow"
    }

    fn distributions(&self) -> &'static [&'static str] {
        &["tensorflow"]
    }

    fn models(&self) -> &'static [Range] {
        MODELS
    }

    fn import(&self, ctx: &Ctx, _m: &Selected, p: &mut dyn Process) -> Step {
        let Some((package, build, _)) = installed(ctx) else {
            return Step {
                outcome: Outcome::Fails {
                    message: "ModuleNotFoundError: No module named 'tensorflow'".into(),
                    load: None,
                },
                notes: vec![],
            };
        };
        let module = "tensorflow.python._pywrap_tensorflow_internal";
        let ext = package.join("python/_pywrap_tensorflow_internal.so");
        if let Err(e) = p.load_extension("tensorflow", module, &ext) {
            return Step {
                outcome: Outcome::Fails {
                    message: format!("ImportError: {}", e.message),
                    load: Some(e),
                },
                notes: vec![],
            };
        }
        let mut notes = Vec::new();
        // The framework library comes in as a DT_NEEDED entry of the extension; its DsoLoader opens the CUDA
        // runtime at import (a failure is only logged: "Ignore above cudart dlerror if you do not have a GPU").
        if let (Some(fw), Some(b)) = (
            p.find("libtensorflow_framework.so.2"),
            build.as_ref().filter(|b| b.cuda),
        ) {
            let cudart = sonames(b)[0].clone();
            if let Err(e) = p.dlopen("tensorflow", fw, &cudart, When::Import) {
                notes.push(format!(
                    "Could not load dynamic library '{cudart}'; dlerror: {}",
                    e.message
                ));
            }
        }
        Step {
            outcome: Outcome::Gpu,
            notes,
        }
    }

    fn first_use(&self, ctx: &Ctx, _m: &Selected, p: &mut dyn Process) -> Step {
        let Some((_, build, requires)) = installed(ctx) else {
            return Step {
                outcome: Outcome::Fails {
                    message: "ModuleNotFoundError: No module named 'tensorflow'".into(),
                    load: None,
                },
                notes: vec![],
            };
        };
        let fallback = |message: Option<String>, because: String| Step {
            outcome: Outcome::CpuFallback { message, because },
            notes: vec![],
        };
        let Some(build) = build.filter(|b| b.cuda) else {
            return fallback(
                None,
                "this TensorFlow is not a CUDA build (build_info.py): it never uses the GPU; `pip install -U \
                 \"tensorflow[and-cuda]\"`"
                    .into(),
            );
        };
        let Some(fw) = p.find("libtensorflow_framework.so.2") else {
            return fallback(
                None,
                "libtensorflow_framework.so.2 is not loaded: `import tensorflow` failed".into(),
            );
        };
        if let Err(e) = p.dlopen("tensorflow", fw, "libcuda.so.1", When::FirstUse)
            && !ctx.provided("libcuda.so.1")
        {
            return fallback(
                Some("Could not find cuda drivers on your machine, GPU will not be used.".into()),
                format!(
                    "libcuda.so.1 cannot be loaded ({}): TensorFlow will not use the GPU",
                    e.message
                ),
            );
        }
        if ctx.gpus.is_empty() {
            return fallback(
                None,
                "no GPU is visible to the process: cuInit finds no device and TensorFlow runs on the CPU"
                    .into(),
            );
        }
        let ld = ctx.env.get("LD_LIBRARY_PATH").filter(|v| !v.is_empty());
        let mut lines = Vec::new();
        let mut fixes = Vec::new();
        for name in sonames(&build) {
            if let Err(e) = p.dlopen("tensorflow", fw, &name, When::FirstUse) {
                let tail = ld.map(|v| format!("; LD_LIBRARY_PATH: {v}")).unwrap_or_default();
                lines.push(format!(
                    "Could not load dynamic library '{name}'; dlerror: {}{tail}",
                    e.message
                ));
                fixes.push(fix_for(ctx, &name, &requires));
            }
        }
        if lines.is_empty() {
            p.runtime_loads("tensorflow");
            return Step {
                outcome: Outcome::Gpu,
                notes: vec![],
            };
        }
        let message = format!("{}\n{CANNOT_DLOPEN}", lines.join("\n"));
        let because = format!(
            "TensorFlow cannot dlopen every CUDA library it needs from libtensorflow_framework.so.2 \
             (LD_LIBRARY_PATH, its RUNPATH, ld.so.cache), so it registers no GPU and will not use the GPU; {}",
            fixes.join("; ")
        );
        fallback(Some(message), because)
    }

    fn checks(&self, ctx: &Ctx, _m: &Selected, p: &dyn Process) -> Vec<Finding> {
        let Some((_, Some(build), requires)) = installed(ctx) else {
            return vec![];
        };
        let wheel = format!("nvidia-cudnn-cu{}", build.cuda_major);
        let pinned = pin(&requires, &wheel);
        let compiled = pinned.as_deref().and_then(floor_of);
        let help = format!(
            "Let TensorFlow load the cuDNN it pins: `pip install -U \"tensorflow[and-cuda]\"` (`{}`), and take \
             any older cuDNN directory out of LD_LIBRARY_PATH (it is searched before TensorFlow's RUNPATH)",
            pinned.unwrap_or(wheel)
        );
        xla_cudnn_rule(ctx, p, compiled, "TensorFlow", &help)
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
#[path = "tensorflow_tests.rs"]
mod tests;
