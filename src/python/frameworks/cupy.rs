//! CuPy's loading (`cupy-cuda11x`, `cupy-cuda12x`, `cupy-cuda13x`), versioned: CuPy 13 has no search of its
//! own (its extension modules have no RPATH, so a CUDA library comes from `LD_LIBRARY_PATH`, `ld.so.cache` or
//! a copy already in the process); CuPy 14 asks cuda-pathfinder ([`super::pathfinder`]) for each library just
//! before the extension module that needs it. Neither needs a CUDA library at `import cupy`: CuPy 14 maps
//! cuBLASLt then (the dependency of cuTENSOR, which it preloads) and opens the driver, a failure of either
//! tolerated; NVRTC comes at the first kernel, cuBLAS at the first cuBLAS call. Read at cupy/cupy v13.6.0 and v14.2.0 (`cupy/__init__.py`, `cupy/_environment.py`,
//! `cupy_backends/cuda/libs/__init__.py`) and observed on real wheels: `docs/framework-cupy-onnxruntime.md`.

use super::pathfinder::{self, Failure, Places, Request, interpreter};
use super::{Ctx, Dist, Framework, LoadError, Outcome, Process, Range, Selected, Step, When};
use crate::findings::Finding;
use crate::system::read::CONFIG_TEXT;
use std::path::PathBuf;
use std::sync::Arc;

/// The model.
pub struct Cupy;

/// CuPy 13, then CuPy 14.
const MODELS: &[Range] = &[
    Range {
        from: "13",
        until: Some("14"),
        about: "no search of its own: NVRTC by soname at the first kernel, each library module's DT_NEEDED \
                through LD_LIBRARY_PATH and ld.so.cache (no RPATH)",
    },
    Range {
        from: "14",
        until: None,
        about: "cuda-pathfinder for each library before its module: site-packages, CONDA_PREFIX, an already \
                loaded copy, the system loader, CUDA_PATH/CUDA_HOME",
    },
];

const V13: usize = 0;

/// The distributions CuPy is installed as: the prebuilt wheels, then the source package.
const DISTRIBUTIONS: &[&str] = &["cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy"];

/// The extension modules `import cupy` does not import: the library modules (each imported at its first
/// use, after its library), and `numpy_allocator` (imported on request). Every other extension module of
/// `cupy/` and `cupy_backends/` is mapped by `import cupy` (observed on the H200: 53 of the 65 of
/// `cupy-cuda13x` 14.2.0, these being the 12 others with `cupyx`'s).
const LAZY: &[&str] = &[
    "cupy_backends/cuda/libs/cublas",
    "cupy_backends/cuda/libs/cusolver",
    "cupy_backends/cuda/libs/cusparse",
    "cupy_backends/cuda/libs/cusparselt",
    "cupy_backends/cuda/libs/curand",
    "cupy_backends/cuda/libs/nccl",
    "cupy_backends/cuda/libs/cutensor",
    "cupy_backends/cuda/libs/cudnn",
    "cupy/cuda/cufft",
    "cupy/cuda/jitify",
    "cupy/cuda/cudnn",
    "cupy/cuda/nccl",
    "cupy/_core/numpy_allocator",
];

/// The module CuPy 13's `dlopen` of NVRTC runs from (no RPATH, no RUNPATH).
const NVRTC_MODULE: &str = "cupy_backends/cuda/libs/nvrtc";

/// The cuBLAS module, imported at the first cuBLAS call (`cupy.matmul`, `cupy.linalg`).
const CUBLAS_MODULE: &str = "cupy_backends/cuda/libs/cublas";

/// The installed CuPy, as the model needs it.
struct Install<'a> {
    dist: &'a Dist,
    /// The CUDA major it was built for (`cupy-cuda12x`: 12), from its name or `cupy/.data/_wheel.json`.
    major: Option<u32>,
    /// Every extension module among its files ([`extensions`]).
    extensions: Arc<Vec<(String, PathBuf)>>,
}

impl Install<'_> {
    /// The extension module `module` (`cupy_backends/cuda/libs/cublas`) among the distribution's files.
    fn module(&self, module: &str) -> Option<PathBuf> {
        self.extensions
            .iter()
            .find(|(m, _)| m == module)
            .map(|(_, path)| path.clone())
    }

    /// What `pip install` names for the fix: `'cupy-cuda12x[ctk]'`.
    fn with_ctk(&self) -> String {
        match self.major {
            Some(m) if self.dist.key != "cupy" => format!("'cupy-cuda{m}x[ctk]'"),
            Some(m) => format!("'cuda-toolkit[nvrtc,cublas,cufft,curand,cusolver,cusparse]=={m}.*'"),
            None => "'cupy-cuda12x[ctk]'".to_string(),
        }
    }
}

/// The module path of an extension file of a `RECORD` (`cupy/_core/core.cpython-312-x86_64-linux-gnu.so` →
/// `cupy/_core/core`); `None` for anything else.
fn module_of(file: &str) -> Option<String> {
    let stem = file.strip_suffix(".so")?;
    let stem = stem.split_once(".cpython-").map_or(stem, |(s, _)| s);
    let stem = stem.split_once(".abi3").map_or(stem, |(s, _)| s);
    (!stem.contains('.')).then(|| stem.to_string())
}

/// The CUDA major of a CuPy distribution's name (`cupy-cuda12x` → 12).
fn major_of_name(key: &str) -> Option<u32> {
    key.strip_prefix("cupy-cuda")?.strip_suffix('x')?.parse().ok()
}

/// `"cuda": "12.x"` of `cupy/.data/_wheel.json`, as CuPy's preload reads it.
fn major_of_wheel_json(text: &str) -> Option<u32> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.get("cuda")?.as_str()?.split('.').next()?.parse().ok()
}

fn install<'a>(ctx: &'a Ctx) -> Option<Install<'a>> {
    let dist = DISTRIBUTIONS.iter().find_map(|n| ctx.python.dist(n))?;
    let major = major_of_name(&dist.key).or_else(|| {
        let json = dist.site.join("cupy/.data/_wheel.json");
        let text = ctx.root.read_to_string(&json, CONFIG_TEXT).ok()?;
        major_of_wheel_json(&text)
    });
    Some(Install {
        dist,
        major,
        extensions: extensions(ctx, dist),
    })
}

/// The extension modules among `dist`'s files (module path and file, in `RECORD` order): CuPy's `RECORD` lists
/// thousands of files, and every process of the environment asks (remembered: [`super::PyEnv::remembered`]).
fn extensions(ctx: &Ctx, dist: &Dist) -> Arc<Vec<(String, PathBuf)>> {
    ctx.python
        .remembered(&format!("cupy-extensions {}", dist.info.display()), || {
            Arc::new(
                dist.files()
                    .iter()
                    .filter_map(|f| module_of(f).map(|m| (m, dist.site.join(f))))
                    .collect(),
            )
        })
}

/// The extension modules `import cupy` maps, in `RECORD` order.
fn import_modules(i: &Install, v13: bool) -> Vec<(String, PathBuf)> {
    i.extensions
        .iter()
        // CuPy 13 imports its random generator module at first use (observed with 13.6.0).
        .filter(|(m, _)| !(v13 && m == "cupy/random/_generator_api"))
        .filter(|(m, _)| {
            (m.starts_with("cupy/") || m.starts_with("cupy_backends/")) && !LAZY.contains(&m.as_str())
        })
        .cloned()
        .collect()
}

fn python_name(module: &str) -> String {
    module.replace('/', ".")
}

fn fails(message: String, load: Option<LoadError>) -> Step {
    Step {
        outcome: Outcome::Fails { message, load },
        notes: Vec::new(),
    }
}

fn works(notes: Vec<String>) -> Step {
    Step {
        outcome: Outcome::Gpu,
        notes,
    }
}

/// CuPy's NVRTC module, once imported: CuPy 13's `dlopen` of NVRTC runs from it (no RPATH, no RUNPATH).
fn nvrtc_module(p: &dyn Process, i: &Install) -> Option<usize> {
    let path = i.module(NVRTC_MODULE)?;
    p.find(&path.to_string_lossy())
}

impl Framework for Cupy {
    fn module(&self) -> &'static str {
        "cupy"
    }

    fn distributions(&self) -> &'static [&'static str] {
        DISTRIBUTIONS
    }

    fn models(&self) -> &'static [Range] {
        MODELS
    }

    fn import(&self, ctx: &Ctx, m: &Selected, p: &mut dyn Process) -> Step {
        let Some(i) = install(ctx) else {
            return fails("ModuleNotFoundError: No module named 'cupy'".to_string(), None);
        };
        let mut notes = Vec::new();
        if i.major.is_none() {
            notes.push(format!(
                "{} {}: the CUDA major it was built for is not in its name or cupy/.data/_wheel.json",
                i.dist.name(),
                i.dist.version()
            ));
        }
        // `from cupy import _core` and what it imports: no CUDA library among their DT_NEEDED. Sixty-odd
        // extension modules (CuPy 14), read ahead while they are loaded one after the other.
        let modules = import_modules(&i, m.index == V13);
        p.expect_paths(&modules.iter().map(|(_, path)| path.clone()).collect::<Vec<_>>());
        for (module, path) in modules {
            if let Err(e) = p.load_extension("cupy", &python_name(&module), &path) {
                let message = format!(
                    "ImportError: \n{}\n\nOriginal error:\n  ImportError: {}",
                    FAILED_TO_IMPORT, e.message
                );
                return fails(message, Some(e));
            }
        }
        if m.index == V13 {
            preload_cutensor_wheel(ctx, &i, p);
            return works(notes);
        }
        // CuPy 14's runtime module asks its static CUDA runtime for the driver at import (observed with
        // `LD_DEBUG=libs`: `find library=libcuda.so.1`, CuPy 13 does not); without one the import goes on.
        let _ = driver(p, When::Import);
        // `_environment._preload_library('cutensor')`: pathfinder loads cuTENSOR's dependency cuBLASLt first,
        // so cuBLASLt is mapped even where cuTENSOR is absent; a cuTENSOR not found is no error, a file found
        // that cannot be loaded is (RuntimeError).
        let places = Places::of(ctx);
        let r = Request {
            ctx,
            places: &places,
            by: "cupy",
            when: When::Import,
            caller: interpreter(p),
        };
        match pathfinder::load(&r, p, "cutensor") {
            Err(Failure::Load(e)) => {
                let message = format!("RuntimeError: {}", Failure::Load(e.clone()).message());
                fails(message, Some(e))
            }
            _ => works(notes),
        }
    }

    fn first_use(&self, ctx: &Ctx, m: &Selected, p: &mut dyn Process) -> Step {
        let Some(i) = install(ctx) else {
            return fails("ModuleNotFoundError: No module named 'cupy'".to_string(), None);
        };
        let mut notes = Vec::new();
        let step = if m.index == V13 {
            first_use_13(ctx, &i, p, &mut notes)
        } else {
            first_use_14(ctx, &i, p, &mut notes)
        };
        let outcome = match step {
            Ok(()) => Outcome::Gpu,
            Err((message, load)) => Outcome::Fails { message, load },
        };
        Step { outcome, notes }
    }

    fn checks(&self, _ctx: &Ctx, _m: &Selected, _p: &dyn Process) -> Vec<Finding> {
        // CuPy has no version rule of its own: the local runtime version is only reported, and mixing CUDA
        // majors is left to the loader (what first_use models).
        Vec::new()
    }

    fn help(&self, ctx: &Ctx, m: &Selected, outcome: &Outcome) -> Option<String> {
        let Outcome::Fails { message, .. } = outcome else {
            return None;
        };
        if message.contains("cudaErrorNoDevice") {
            return None;
        }
        if message.contains("cudaErrorInsufficientDriver") {
            return Some(format!(
                "CuPy's CUDA runtime opens the NVIDIA driver's libcuda.so.1, found nowhere: {}",
                super::INSTALL_DRIVER
            ));
        }
        let i = install(ctx)?;
        if m.index != V13
            && let Some(major) = i.major
            && let Some(dir) = newer_wheels(ctx, major)
        {
            let newer = major + 1;
            return Some(format!(
                "cuda-pathfinder takes CUDA {newer}'s libraries from {} before the CUDA {major} wheels {} {} was \
                 built for, in every site-packages; its modules then miss their CUDA {major} sonames. Install the \
                 CuPy build of CUDA {newer}: `pip uninstall {} && pip install 'cupy-cuda{newer}x[ctk]'`, or keep \
                 the CUDA {newer} wheels out of this environment",
                dir.display(),
                i.dist.name(),
                i.dist.version(),
                i.dist.name()
            ));
        }
        fix(ctx, m)
    }
}

/// CuPy's wrapper of an ImportError raised inside `cupy._core` (`_diagnose_import_error`).
const FAILED_TO_IMPORT: &str = "Failed to import CuPy.\n\nIf you installed CuPy via wheels (cupy-cudaXXX or \
     cupy-rocm-X-X), make sure that the package matches with the version of CUDA or ROCm installed.\n\nOn \
     Linux, you may need to set LD_LIBRARY_PATH environment variable depending on how you installed CUDA/ROCm.";

/// CuPy 13's `_preload_library('cutensor')`, its first candidate: the `cutensor-cuXX` wheel's
/// `cutensor/lib/libcutensor.so.2`, loaded by path. The other candidates (`~/.cupy/cuda_lib`, the fully
/// versioned name) are not modelled; a failure here is only logged by CuPy.
fn preload_cutensor_wheel(ctx: &Ctx, i: &Install, p: &mut dyn Process) {
    let Some(major) = i.major else { return };
    let Some(d) = ctx.python.dist(&format!("cutensor-cu{major}")) else {
        return;
    };
    let path = d.site.join("cutensor/lib/libcutensor.so.2");
    if ctx.root.exists(&path) {
        let search = format!("cupy._environment._preload_library: {} {}", d.name(), d.version());
        let _ = p.load_path("cupy", &path, &search, false);
    }
}

type Fail = (String, Option<LoadError>);

/// The driver, at the first CUDA call: the CUDA runtime CuPy links statically opens `libcuda.so.1`; without
/// it the call raises (observed with no driver: `cupy.arange(3)`). The libraries are modelled before it,
/// although a kernel allocates first: NVRTC and cuBLAS load without a driver (observed), and a machine
/// without one here may be judged for one that has it. `when`: CuPy 14 already asks at import.
fn driver(p: &mut dyn Process, when: When) -> Result<(), Fail> {
    if p.find("libcuda.so.1").is_some() {
        return Ok(());
    }
    let Some(caller) = interpreter(p) else {
        return Ok(());
    };
    p.dlopen("cupy", caller, "libcuda.so.1", when)
        .map(|_| ())
        .map_err(|e| {
            let message =
                "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorInsufficientDriver: CUDA \
                           driver version is insufficient for CUDA runtime version"
                    .to_string();
            (message, Some(e))
        })
}

/// The driver, then a device: with a driver known and no GPU visible, the first allocation raises.
fn device(ctx: &Ctx, p: &mut dyn Process) -> Result<(), Fail> {
    // A declared machine's driver provides libcuda.so.1 although no file here holds it.
    if let Err(e) = driver(p, When::FirstUse)
        && !ctx.provided("libcuda.so.1")
    {
        return Err(e);
    }
    if ctx.driver.is_some() && ctx.gpus.is_empty() {
        let message = "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable \
                       device is detected";
        return Err((message.to_string(), None));
    }
    Ok(())
}

/// CuPy 13 at the first kernel, then the first cuBLAS call: `dlopen("libnvrtc.so.12")` from its NVRTC module,
/// then the cuBLAS module's DT_NEEDED, each through the loader's search alone, then the driver and a device.
fn first_use_13(ctx: &Ctx, i: &Install, p: &mut dyn Process, notes: &mut Vec<String>) -> Result<(), Fail> {
    let soname = match i.major {
        Some(11) => "libnvrtc.so.11.2".to_string(),
        Some(m) => format!("libnvrtc.so.{m}"),
        None => "libnvrtc.so.12".to_string(),
    };
    let Some(module) = nvrtc_module(p, i) else {
        notes.push(format!(
            "{NVRTC_MODULE} is not among the files of {}",
            i.dist.name()
        ));
        return Ok(());
    };
    p.dlopen("cupy", module, &soname, When::FirstUse).map_err(|e| {
        let message = format!(
            "RuntimeError: CuPy failed to load {soname}: OSError: {}",
            e.message
        );
        (message, Some(e))
    })?;
    // NVRTC's builtins (`libnvrtc-builtins.so.M.m`, a name NVRTC keeps for `dlopen`), and the other names the
    // process's objects keep.
    p.runtime_loads("cupy");
    cublas_module(i, p)?;
    device(ctx, p)?;
    Ok(())
}

/// CuPy 14 at the first kernel, then the first cuBLAS call: pathfinder's NVRTC, then pathfinder's cuBLAS and
/// the cuBLAS module, whose DT_NEEDED must then be in the process, then the driver and a device.
fn first_use_14(ctx: &Ctx, i: &Install, p: &mut dyn Process, notes: &mut Vec<String>) -> Result<(), Fail> {
    let places = Places::of(ctx);
    let r = Request {
        ctx,
        places: &places,
        by: "cupy",
        when: When::FirstUse,
        caller: interpreter(p),
    };
    let nvrtc = pathfinder::load(&r, p, "nvrtc")
        .map_err(|f| pathfinder_error(f, "DynamicLibNotFoundError", i.major))?;
    if let (Some(built), Some(got)) = (i.major, soname_major(p, nvrtc.index))
        && got != built
    {
        notes.push(format!(
            "cuda-pathfinder gives NVRTC {got} ({}) to {} {}, built for CUDA {built}: it prefers CUDA 13's \
             directory in every site-packages; whether its kernels compile is not modelled",
            via_path(p, nvrtc.index),
            i.dist.name(),
            i.dist.version()
        ));
    }
    p.runtime_loads("cupy");
    pathfinder::load(&r, p, "cublas").map_err(|f| pathfinder_error(f, "ImportError", i.major))?;
    cublas_module(i, p)?;
    device(ctx, p)?;
    Ok(())
}

/// A pathfinder failure as CuPy shows it: its `DynamicLibNotFoundError` as is (NVRTC), or re-raised as
/// `ImportError` with the same text (a library module).
fn pathfinder_error(f: Failure, class: &str, major: Option<u32>) -> Fail {
    match f {
        Failure::Load(e) => (
            format!("RuntimeError: {}", Failure::Load(e.clone()).message()),
            Some(e),
        ),
        Failure::NotFound { name, message } => {
            // The load that failed, for the finding: the soname of the build's major among the descriptor's.
            let sonames = pathfinder::descriptor(name).map_or(&[][..], |d| d.sonames);
            let wanted = major.map(|m| format!(".so.{m}"));
            let soname = sonames
                .iter()
                .find(|s| wanted.as_deref().is_some_and(|w| s.ends_with(w)))
                .or(sonames.first())
                .map_or_else(|| name.to_string(), |s| s.to_string());
            let load = LoadError {
                name: soname,
                requester: "cupy (cuda-pathfinder)".to_string(),
                message: message.clone(),
                library: None,
            };
            (format!("{class}: {message}"), Some(load))
        }
        Failure::Unknown(n) => (format!("{class}: {}", Failure::Unknown(n).message()), None),
    }
}

/// The cuBLAS module's import: its DT_NEEDED (`libcublas.so.12`) resolved against the process.
fn cublas_module(i: &Install, p: &mut dyn Process) -> Result<(), Fail> {
    let Some(path) = i.module(CUBLAS_MODULE) else {
        return Ok(());
    };
    p.load_extension("cupy", &python_name(CUBLAS_MODULE), &path)
        .map(|_| ())
        .map_err(|e| (format!("ImportError: {}", e.message), Some(e)))
}

/// The CUDA major of a loaded library's soname (`libnvrtc.so.13` → 13).
fn soname_major(p: &dyn Process, index: usize) -> Option<u32> {
    let l = p.loaded().get(index)?;
    let name = l.soname.as_deref().unwrap_or(&l.path);
    let file = name.rsplit('/').next()?;
    file.split(".so.").nth(1)?.split('.').next()?.parse().ok()
}

fn via_path(p: &dyn Process, index: usize) -> String {
    p.loaded().get(index).map(|l| l.path.clone()).unwrap_or_default()
}

/// A site directory's `nvidia/cuNN/lib` of a CUDA major above `major` that holds cuBLAS or NVRTC: what
/// cuda-pathfinder takes first (its descriptors list CUDA 13's directory and sonames before CUDA 12's).
fn newer_wheels(ctx: &Ctx, major: u32) -> Option<PathBuf> {
    let places = Places::of(ctx);
    let newer = major + 1;
    places.site.iter().find_map(|site| {
        let dir = site.join(format!("nvidia/cu{newer}/lib"));
        ["libcublas.so", "libnvrtc.so"]
            .iter()
            .any(|s| ctx.root.exists(&dir.join(format!("{s}.{newer}"))))
            .then_some(dir)
    })
}

/// What to run when `first_use` fails, in CuPy's terms.
pub fn fix(ctx: &Ctx, m: &Selected) -> Option<String> {
    let i = install(ctx)?;
    Some(if m.index == V13 {
        format!(
            "CuPy 13 does not look for the NVIDIA wheels: upgrade to CuPy 14, which finds them through \
             cuda-pathfinder, with the CUDA wheels it needs: `pip install -U {}`; or run with the directory of \
             the library in LD_LIBRARY_PATH, or a system CUDA Toolkit {}.x in ld.so.cache",
            i.with_ctk(),
            i.major.unwrap_or(12)
        )
    } else {
        format!(
            "Install the CUDA wheels {} {} needs: `pip install {}`",
            i.dist.name(),
            i.dist.version(),
            i.with_ctk()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_files_are_named_as_python_imports_them() {
        assert_eq!(
            module_of("cupy/_core/core.cpython-312-x86_64-linux-gnu.so").as_deref(),
            Some("cupy/_core/core")
        );
        assert_eq!(
            module_of("cupy_backends/cuda/libs/cublas.abi3.so").as_deref(),
            Some("cupy_backends/cuda/libs/cublas")
        );
        assert_eq!(module_of("cupy/_core/core.pyx"), None);
        assert_eq!(module_of("cupy/.data/_wheel.json"), None);
    }

    #[test]
    fn the_cuda_major_comes_from_the_name_or_the_wheel_json() {
        assert_eq!(major_of_name("cupy-cuda12x"), Some(12));
        assert_eq!(major_of_name("cupy-cuda13x"), Some(13));
        assert_eq!(major_of_name("cupy"), None);
        assert_eq!(
            major_of_wheel_json(r#"{"cuda": "12.x", "packaging": "pip"}"#),
            Some(12)
        );
        assert_eq!(major_of_wheel_json("not json"), None);
    }
}
