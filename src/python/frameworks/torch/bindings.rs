//! NVIDIA's `cuda.bindings` (the cuda-bindings distribution), which `import torch` imports beside its own
//! extension modules from 2.12 on: `torch/cuda/_utils.py` runs `from cuda.bindings import runtime` (2.12,
//! 2.13) or `from cuda.bindings import __version__, driver, runtime` (from 2.14) at module level, inside
//! `try: … except ImportError`, and `torch/cuda/__init__.py` imports `torch.cuda._utils` during `import torch`.
//! Every module it imports is a Cython extension module, opened by path as Python imports any extension module,
//! and those modules import each other (their `cimport`s and their Python imports) in an order that differs
//! by cuda-bindings version. `docs/python-frameworks.md` ("cuda.bindings") gives the sources and the
//! measurements each step rests on.
//!
//! What is read: which `cuda` directories of `sys.path` make the `cuda` package (a regular package, else the
//! namespace package of every `cuda` directory, in `sys.path` order), the first of them holding
//! `bindings/__init__.py`, and the extension module files of `cuda/bindings` and of its subdirectories
//! `_internal`, `_bindings`, `_lib` and `_lib/cyM` (one listing each, when the chain asks for a module
//! there). Which modules a version has decides which are imported; no module is run, no `.pyx` is read.
//!
//! The chain of `cuda.bindings.M` (`M` = `driver` or `runtime`), as glibc's `LD_DEBUG=libs` shows it for
//! cuda-bindings 12.8.0, 12.9.10, 13.0.3, 13.2.0, 13.4.4 and 13.5.0:
//!
//! 1. `M` itself (Python's import opens the file before its module code runs).
//! 2. For `runtime`: `driver`'s whole chain first (runtime's extension types come from `driver`: its
//!    `runtime.pxd` cimports `cuda.bindings.driver`, and Cython imports types before functions).
//! 3. `_lib/utils`, where that module exists (12.8).
//! 4. `cyM`, the C-level layer whose functions `M` cimports.
//! 5. Its backend: `_internal/M` where that module exists (12.9 for the driver, from 13.3 for both), else
//!    `_bindings/cyM` (12.8's driver, 13.0 to 13.2, 12.9's runtime), else `_lib/cyM/cyM` (12.8's runtime),
//!    that one after its sibling `_lib/cyM/utils`.
//! 6. The backend's per-thread-default-stream twin `…_ptds`, where one exists (the runtime's).
//! 7. For an `_internal` backend: `_internal/utils` (its `from .utils import …`), then `cuda.pathfinder`
//!    (pure Python, its `from cuda.pathfinder import load_nvidia_dynamic_lib`).
//!
//! None of them opens a CUDA library at import: the driver backend opens `libcuda.so.1` through
//! cuda-pathfinder on its first call, the runtime's is the static CUDA runtime linked into the backend, which
//! opens the driver on its first call, and `libcudart.so` is opened only by `getLocalRuntimeVersion`. Their
//! DT_NEEDED entries (libstdc++, librt…) resolve in the process as any object's.
//!
//! A module that is missing, a file `dlopen` refuses, or a missing `cuda.pathfinder` raises an `ImportError`:
//! torch catches it and goes on without cuda.bindings, and the modules imported before it stay mapped (Python
//! never unloads an extension module).

use super::super::extension::Modules;
use super::super::{Ctx, LoadError, Process};
use std::path::PathBuf;

/// The `cuda.bindings` modules `torch/cuda/_utils.py` of torch `version` imports at `import torch`, in order.
/// Read at the release tags: 2.11.0 has no such import, 2.12.0 and 2.13.0 import `runtime`, 2.14.0 and 2.15.0
/// `__version__, driver, runtime` (`__version__` is an attribute of the package). Newer versions are taken as
/// 2.15 does it.
pub(super) fn wanted(version: &str) -> &'static [&'static str] {
    let mut parts = version.split(['.', '+']).map(|p| {
        let digits = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
        p[..digits].parse::<u64>().ok()
    });
    let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else {
        return &[];
    };
    match (major, minor) {
        (2, 0..=11) | (0..=1, _) => &[],
        (2, 12..=13) => &["runtime"],
        _ => &["driver", "runtime"],
    }
}

/// Why the import stopped.
enum Stop {
    /// A module no file provides: `ModuleNotFoundError`.
    Missing(String),
    /// An extension module `dlopen` refused: `ImportError` with its text.
    Load(LoadError),
}

impl Stop {
    fn message(&self) -> String {
        match self {
            Stop::Missing(m) => format!("ModuleNotFoundError: No module named '{m}'"),
            Stop::Load(e) => format!("ImportError: {}", e.message),
        }
    }
}

/// The installed `cuda.bindings` being imported.
struct Bindings<'c, 'a> {
    ctx: &'c Ctx<'a>,
    /// The `cuda` package's directories (`cuda.__path__`).
    cuda: Vec<PathBuf>,
    /// The extension modules of `…/cuda/bindings`.
    modules: Modules<'a>,
    /// Modules imported so far (`_internal/driver`), as Python's `sys.modules`.
    imported: Vec<String>,
}

/// The `cuda` package of `sys.path`, as Python's path finder finds it: the first `cuda/__init__.py` wins
/// (a regular package beats namespace portions found before it); else every `cuda` directory, in order, is a
/// portion of the namespace package; a `cuda.py` module first means no package at all.
fn cuda_package(ctx: &Ctx) -> Vec<PathBuf> {
    let mut portions = Vec::new();
    for d in ctx.python.dirs() {
        let c = d.join("cuda");
        if ctx.root.exists(&c.join("__init__.py")) {
            return vec![c];
        }
        if ctx.root.exists(&d.join("cuda.py")) {
            return Vec::new();
        }
        if ctx.root.is_dir(&c) {
            portions.push(c);
        }
    }
    portions
}

impl Bindings<'_, '_> {
    /// The extension module file of `rel` (`driver`, `_internal/driver`).
    fn file(&mut self, rel: &str) -> Option<PathBuf> {
        self.modules.file(rel)
    }

    /// `import cuda.bindings.<rel>`: opens its file by path, once.
    fn load(&mut self, p: &mut dyn Process, rel: &str) -> Result<(), Stop> {
        if self.imported.iter().any(|m| m == rel) {
            return Ok(());
        }
        let module = format!("cuda.bindings.{}", rel.replace('/', "."));
        let file = self.file(rel).ok_or_else(|| Stop::Missing(module.clone()))?;
        p.load_extension("torch", &module, &file).map_err(Stop::Load)?;
        self.imported.push(rel.to_string());
        Ok(())
    }

    /// `import cuda.bindings.<m>` and the modules it imports, in the order of the module docs.
    fn chain(&mut self, p: &mut dyn Process, m: &str) -> Result<(), Stop> {
        if self.imported.iter().any(|i| i == m) {
            return Ok(());
        }
        self.load(p, m)?;
        if m == "runtime" {
            self.chain(p, "driver")?;
        }
        if self.file("_lib/utils").is_some() {
            self.load(p, "_lib/utils")?;
        }
        self.load(p, &format!("cy{m}"))?;
        let candidates = [
            format!("_internal/{m}"),
            format!("_bindings/cy{m}"),
            format!("_lib/cy{m}/cy{m}"),
        ];
        let Some(backend) = candidates.into_iter().find(|c| self.file(c).is_some()) else {
            return Ok(());
        };
        if let Some((lib, _)) = backend.rsplit_once('/').filter(|(d, _)| d.starts_with("_lib/")) {
            let utils = format!("{lib}/utils");
            if self.file(&utils).is_some() {
                self.load(p, &utils)?;
            }
        }
        self.load(p, &backend)?;
        let ptds = format!("{backend}_ptds");
        if self.file(&ptds).is_some() {
            self.load(p, &ptds)?;
        }
        if backend.starts_with("_internal/") {
            self.load(p, "_internal/utils")?;
            let pathfinder = self
                .cuda
                .iter()
                .any(|c| self.ctx.root.exists(&c.join("pathfinder/__init__.py")));
            if !pathfinder {
                return Err(Stop::Missing("cuda.pathfinder".into()));
            }
        }
        Ok(())
    }
}

/// `torch.cuda._utils`'s import of `cuda.bindings` under torch `version`, into `p`. A note when cuda-bindings
/// is installed but its import raised (torch goes on without it); `None` otherwise, also when torch does not
/// import it or it is not on `sys.path` (`ImportError`, caught, nothing loaded).
pub(super) fn import(ctx: &Ctx, version: &str, p: &mut dyn Process) -> Option<String> {
    let names = wanted(version);
    if names.is_empty() {
        return None;
    }
    let cuda = cuda_package(ctx);
    let dir = cuda
        .iter()
        .map(|c| c.join("bindings"))
        .find(|b| ctx.root.exists(&b.join("__init__.py")))?;
    let mut b = Bindings {
        ctx,
        cuda,
        modules: Modules::new(ctx, dir),
        imported: Vec::new(),
    };
    let stopped = names.iter().try_for_each(|m| b.chain(p, m)).err()?;
    let what = if names.len() == 1 {
        "runtime".to_string()
    } else {
        format!("__version__, {}", names.join(", "))
    };
    Some(format!(
        "torch.cuda._utils: `from cuda.bindings import {what}` ({}) raised {}: torch catches it (except \
         ImportError) and goes on without cuda.bindings; {} of its modules imported before stay loaded",
        b.modules.base().display(),
        stopped.message(),
        b.imported.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::wanted;

    #[test]
    fn torch_imports_cuda_bindings_from_2_12_runtime_first_then_driver_and_runtime_from_2_14() {
        assert!(wanted("2.11.0+cu130").is_empty());
        assert!(wanted("2.6.0").is_empty());
        assert_eq!(wanted("2.12.0"), ["runtime"]);
        assert_eq!(wanted("2.13.0.dev20260301+cu130"), ["runtime"]);
        assert_eq!(wanted("2.14.1"), ["driver", "runtime"]);
        assert_eq!(wanted("2.15.0+cu132"), ["driver", "runtime"]);
        assert_eq!(wanted("3.0"), ["driver", "runtime"]);
        assert!(wanted("1.13.1").is_empty());
        assert!(wanted("nightly").is_empty());
    }
}
