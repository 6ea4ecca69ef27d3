//! PyTorch: what `import torch` loads, as its `torch/__init__.py` does it per version, and what the first GPU
//! use adds (`docs/python-frameworks.md`, "PyTorch", gives each step with its source).
//!
//! 1. `_load_global_deps()`: `ctypes.CDLL(torch/lib/libtorch_global_deps.so, RTLD_GLOBAL)`, whose DT_NEEDED
//!    `libcudart.so.N` resolves through its DT_RPATH (`$ORIGIN/../../nvidia/…/lib`), `LD_LIBRARY_PATH`, then
//!    `ld.so.cache`. Skipped when `TORCH_USE_RTLD_GLOBAL` is set.
//! 2. When that load succeeds and `/proc/self/maps` shows a `libcudart.so`, torch preloads CUDA libraries by
//!    path from the first `sys.path` entry holding each (2.6 to 2.9: NVRTC and nvJitLink; from 2.10: the whole
//!    list, from 2.14 each best effort). When it fails with an error naming one of them, it preloads the whole
//!    list, each required (`ValueError: … not found in the system path`), then loads it again.
//! 3. `from torch._C import *`: the extension module and its DT_NEEDED tree, every soname already loaded by
//!    steps 1-2 reused.
//! 4. `torch._C`'s module init imports NumPy when it is installed ([`numpy`]): its extension modules, each
//!    opened by path; a failure is a warning, torch goes on without NumPy.
//! 5. From 2.12, `torch.cuda._utils` imports `cuda.bindings` when it is installed ([`bindings`]): NVIDIA's
//!    Cython extension modules, each opened by path; a failure is an `ImportError` torch catches.
//! 6. First GPU use: the CUDA runtime `dlopen`s the driver, NVML, NVRTC and cuDNN's sub-libraries are opened by
//!    the names the libraries keep.
//!
//! Steps 4 and 5 add notes only: a process modelled for a file that step 3 loads (`inspect` of
//! `torch/lib/libtorch_cuda.so`, [`Process::settled`]) ends after step 3.

mod bindings;
mod checks;
mod search;

use super::extension::Modules;
use super::{Ctx, Framework, LoadError, Outcome, Process, Range, Selected, Step, numpy};
use crate::findings::Finding;
use crate::system::read;
use search::{Layouts, PreloadError};
use std::path::{Path, PathBuf};

/// The model of `import torch`.
pub struct Torch;

/// What torch does after `libtorch_global_deps.so` loads.
#[derive(Debug, Clone, Copy)]
enum After {
    /// Preloads `libs` when `/proc/self/maps` contains `needle`; `required`: the first missing one raises
    /// (and the `except Exception: pass` around it stops the rest silently); `nvtx`: then `libnvToolsExt`,
    /// optional.
    Preload {
        needle: &'static str,
        libs: &'static [(&'static str, &'static str)],
        required: bool,
        nvtx: bool,
    },
}

/// One version range's loading.
#[derive(Debug, Clone, Copy)]
struct Loading {
    after: After,
    /// The list preloaded, each required, when `libtorch_global_deps.so` fails with an error naming one.
    fallback: &'static [(&'static str, &'static str)],
    /// `libnvToolsExt` is tried after the list, as optional.
    nvtx_optional: bool,
    /// Where each library is looked for in a `sys.path` entry.
    layouts: Layouts,
}

const NVRTC: (&str, &str) = ("cuda_nvrtc", "libnvrtc.so.*[0-9]");
const NVRTC_BUILTINS: (&str, &str) = ("cuda_nvrtc", "libnvrtc-builtins.so.*[0-9]");
const NVJITLINK: (&str, &str) = ("nvjitlink", "libnvJitLink.so.*[0-9]");

/// 2.6's fallback (`torch/__init__.py` 2.6.0 L342-356): nvtx is in the list, required.
const LIST_2_6: &[(&str, &str)] = &[
    ("cublas", "libcublas.so.*[0-9]"),
    ("cudnn", "libcudnn.so.*[0-9]"),
    NVRTC,
    ("cuda_runtime", "libcudart.so.*[0-9]"),
    ("cuda_cupti", "libcupti.so.*[0-9]"),
    ("cufft", "libcufft.so.*[0-9]"),
    ("curand", "libcurand.so.*[0-9]"),
    NVJITLINK,
    ("cusparse", "libcusparse.so.*[0-9]"),
    ("cusparselt", "libcusparseLt.so.*[0-9]"),
    ("cusolver", "libcusolver.so.*[0-9]"),
    ("nccl", "libnccl.so.*[0-9]"),
    ("nvtx", "libnvToolsExt.so.*[0-9]"),
];

/// 2.9 and 2.10's list (2.10.0 `_preload_cuda_deps`).
const LIST_2_10: &[(&str, &str)] = &[
    ("cublas", "libcublas.so.*[0-9]"),
    ("cudnn", "libcudnn.so.*[0-9]"),
    NVRTC,
    NVRTC_BUILTINS,
    ("cuda_runtime", "libcudart.so.*[0-9]"),
    ("cuda_cupti", "libcupti.so.*[0-9]"),
    ("cufft", "libcufft.so.*[0-9]"),
    ("curand", "libcurand.so.*[0-9]"),
    NVJITLINK,
    ("cusparse", "libcusparse.so.*[0-9]"),
    ("cusparselt", "libcusparseLt.so.*[0-9]"),
    ("cusolver", "libcusolver.so.*[0-9]"),
    ("nccl", "libnccl.so.*[0-9]"),
    ("nvshmem", "libnvshmem_host.so.*[0-9]"),
    ("cufile", "libcufile.so.*[0-9]"),
];

/// 2.11 to 2.14: cuBLASLt first, so that cuBLAS cannot pull another copy through its RUNPATH.
const LIST_2_11: &[(&str, &str)] = &[
    ("cublas", "libcublasLt.so.*[0-9]"),
    ("cublas", "libcublas.so.*[0-9]"),
    ("cudnn", "libcudnn.so.*[0-9]"),
    NVRTC,
    NVRTC_BUILTINS,
    ("cuda_runtime", "libcudart.so.*[0-9]"),
    ("cuda_cupti", "libcupti.so.*[0-9]"),
    ("cufft", "libcufft.so.*[0-9]"),
    ("curand", "libcurand.so.*[0-9]"),
    NVJITLINK,
    ("cusparse", "libcusparse.so.*[0-9]"),
    ("cusparselt", "libcusparseLt.so.*[0-9]"),
    ("cusolver", "libcusolver.so.*[0-9]"),
    ("nccl", "libnccl.so.*[0-9]"),
    ("nvshmem", "libnvshmem_host.so.*[0-9]"),
    ("cufile", "libcufile.so.*[0-9]"),
];

/// 2.15: cuRAND left the list (2.15.0 L362-380).
const LIST_2_15: &[(&str, &str)] = &[
    ("cublas", "libcublasLt.so.*[0-9]"),
    ("cublas", "libcublas.so.*[0-9]"),
    ("cudnn", "libcudnn.so.*[0-9]"),
    NVRTC,
    NVRTC_BUILTINS,
    ("cuda_runtime", "libcudart.so.*[0-9]"),
    ("cuda_cupti", "libcupti.so.*[0-9]"),
    ("cufft", "libcufft.so.*[0-9]"),
    NVJITLINK,
    ("cusparse", "libcusparse.so.*[0-9]"),
    ("cusparselt", "libcusparseLt.so.*[0-9]"),
    ("cusolver", "libcusolver.so.*[0-9]"),
    ("nccl", "libnccl.so.*[0-9]"),
    ("nvshmem", "libnvshmem_host.so.*[0-9]"),
    ("cufile", "libcufile.so.*[0-9]"),
];

/// The version ranges, in the order of [`LOADINGS`].
const RANGES: &[Range] = &[
    Range {
        from: "2.6",
        until: Some("2.9"),
        about: "NVRTC and nvJitLink preloaded when the wheel's libcudart is mapped",
    },
    Range {
        from: "2.9",
        until: Some("2.10"),
        about: "NVRTC, its builtins and nvJitLink preloaded when any libcudart is mapped",
    },
    Range {
        from: "2.10",
        until: Some("2.11"),
        about: "every CUDA wheel preloaded from sys.path, the first missing one stopping the rest",
    },
    Range {
        from: "2.11",
        until: Some("2.14"),
        about: "every CUDA wheel preloaded from sys.path, cuBLASLt first, the first missing one stopping the rest",
    },
    Range {
        from: "2.14",
        until: Some("2.15"),
        about: "every CUDA wheel preloaded from sys.path, each best effort",
    },
    Range {
        from: "2.15",
        until: Some("2.16"),
        about: "every CUDA wheel preloaded from sys.path, each best effort, cuRAND no longer",
    },
];

const LOADINGS: &[Loading] = &[
    Loading {
        after: After::Preload {
            needle: "nvidia/cuda_runtime/lib/libcudart.so",
            libs: &[NVRTC, NVJITLINK],
            required: true,
            nvtx: false,
        },
        fallback: LIST_2_6,
        nvtx_optional: false,
        layouts: Layouts::V2_6,
    },
    Loading {
        after: After::Preload {
            needle: "libcudart.so",
            libs: &[NVRTC, NVRTC_BUILTINS, NVJITLINK],
            required: true,
            nvtx: false,
        },
        fallback: LIST_2_10,
        nvtx_optional: true,
        layouts: Layouts::V2_9,
    },
    Loading {
        after: After::Preload {
            needle: "libcudart.so",
            libs: LIST_2_10,
            required: true,
            nvtx: true,
        },
        fallback: LIST_2_10,
        nvtx_optional: true,
        layouts: Layouts::V2_9,
    },
    Loading {
        after: After::Preload {
            needle: "libcudart.so",
            libs: LIST_2_11,
            required: true,
            nvtx: true,
        },
        fallback: LIST_2_11,
        nvtx_optional: true,
        layouts: Layouts::V2_9,
    },
    Loading {
        after: After::Preload {
            needle: "libcudart.so",
            libs: LIST_2_11,
            required: false,
            nvtx: true,
        },
        fallback: LIST_2_11,
        nvtx_optional: true,
        layouts: Layouts::V2_9,
    },
    Loading {
        after: After::Preload {
            needle: "libcudart.so",
            libs: LIST_2_15,
            required: false,
            nvtx: true,
        },
        fallback: LIST_2_15,
        nvtx_optional: true,
        layouts: Layouts::V2_9,
    },
];

/// The installed torch package: the first `sys.path` directory with `torch/__init__.py`, as Python's path
/// finder takes it.
fn package(ctx: &Ctx) -> Option<PathBuf> {
    ctx.python
        .dirs()
        .map(|d| d.join("torch"))
        .find(|p| ctx.root.exists(&p.join("__init__.py")))
}

/// `torch.version.cuda` from `torch/version.py` (`cuda: Optional[str] = '13.2'`): `Some(None)` for a CPU
/// build (`= None`), `None` when the file says neither.
fn version_cuda(ctx: &Ctx, pkg: &Path) -> Option<Option<String>> {
    let text = ctx
        .root
        .read_to_string(&pkg.join("version.py"), read::PACKAGE_METADATA)
        .ok()?;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("cuda")?;
        let (_, value) = rest.split_once('=')?;
        let value = value.trim();
        if value == "None" {
            return Some(None);
        }
        let v = value.trim_matches(|c| c == '\'' || c == '"');
        (!v.is_empty() && v.len() + 2 == value.len()).then(|| Some(v.to_string()))
    })
}

impl Torch {
    /// The preloads of `libs` from `sys.path`. `required`: the first library found nowhere raises the
    /// `ValueError` torch raises, and stops the rest.
    fn preload(
        ctx: &Ctx,
        l: &Loading,
        cuda_major: Option<&str>,
        libs: &[(&str, &str)],
        required: bool,
        p: &mut dyn Process,
    ) -> Result<(), PreloadError> {
        // Every search first (they read only directories), so that the files can be read ahead while the
        // loads go one after the other as torch makes them.
        let found: Vec<Option<search::Found>> = libs
            .iter()
            .map(|(folder, glob)| search::find(ctx, l.layouts, cuda_major, folder, glob))
            .collect();
        let files: Vec<PathBuf> = found.iter().flatten().map(|f| f.first().to_path_buf()).collect();
        p.expect_paths(&files);
        for ((folder, glob), found) in libs.iter().zip(&found) {
            search::preload_found(ctx, found.as_ref(), folder, glob, required, p)?;
        }
        Ok(())
    }
}

impl Framework for Torch {
    fn module(&self) -> &'static str {
        "torch"
    }

    fn distributions(&self) -> &'static [&'static str] {
        &["torch"]
    }

    fn models(&self) -> &'static [Range] {
        RANGES
    }

    fn import(&self, ctx: &Ctx, m: &Selected, p: &mut dyn Process) -> Step {
        let l = &LOADINGS[m.index.min(LOADINGS.len() - 1)];
        let mut notes = Vec::new();
        let Some(pkg) = package(ctx) else {
            return fails("ModuleNotFoundError: No module named 'torch'".into(), None, notes);
        };
        let cuda = version_cuda(ctx, &pkg).flatten();
        let major = cuda
            .as_deref()
            .and_then(|c| c.split('.').next())
            .map(str::to_string);
        let rtld_global = ctx
            .env
            .get("TORCH_USE_RTLD_GLOBAL")
            .is_some_and(|v| !v.is_empty());
        if rtld_global {
            notes.push("TORCH_USE_RTLD_GLOBAL is set: torch skips _load_global_deps and its preloads".into());
        } else {
            let deps = pkg.join("lib/libtorch_global_deps.so");
            let search = "torch/lib/libtorch_global_deps.so, beside torch/__init__.py".to_string();
            match p.load_path("torch", &deps, &search, true) {
                Ok(_) => {
                    let After::Preload {
                        needle,
                        libs,
                        required,
                        nvtx,
                    } = l.after;
                    if p.maps_contain(needle) {
                        // `except Exception: pass`: a missing required one stops the rest, silently.
                        let done = Self::preload(ctx, l, major.as_deref(), libs, required, p);
                        if let Err(e) = done {
                            notes.push(format!(
                                "{}: torch stops preloading there and goes on (its except Exception: pass)",
                                e.message
                            ));
                        } else if nvtx {
                            let nvtx = [("nvtx", "libnvToolsExt.so.*[0-9]")];
                            let _ = Self::preload(ctx, l, major.as_deref(), &nvtx, false, p);
                        }
                    }
                }
                Err(e) => {
                    let named = l
                        .fallback
                        .iter()
                        .any(|(_, g)| e.message.contains(g.split('.').next().unwrap_or(g)));
                    if !named {
                        return fails(format!("OSError: {}", e.message), Some(e), notes);
                    }
                    if let Err(v) = Self::preload(ctx, l, major.as_deref(), l.fallback, true, p) {
                        return fails(v.message.clone(), Some(v.into_load()), notes);
                    }
                    if l.nvtx_optional {
                        let nvtx = [("nvtx", "libnvToolsExt.so.*[0-9]")];
                        let _ = Self::preload(ctx, l, major.as_deref(), &nvtx, false, p);
                    }
                    if let Err(e) = p.load_path("torch", &deps, &search, true) {
                        return fails(format!("OSError: {}", e.message), Some(e), notes);
                    }
                }
            }
        }
        let mut modules = Modules::new(ctx, pkg.clone());
        let Some(c) = modules.file("_C") else {
            let others = modules.for_other_interpreters("_C");
            if !others.is_empty() {
                let python = ctx.python.syspath.version.as_ref().map_or(String::new(), |v| {
                    format!(" (the interpreter is CPython {}.{})", v.major, v.minor)
                });
                notes.push(format!(
                    "{} holds {}: built for another CPython{python}, which Python does not import; install \
                     the torch wheel built for this interpreter",
                    pkg.display(),
                    others.join(", ")
                ));
            }
            // The wheels ship `torch/_C/` (type stubs, no `__init__.py`): Python imports it as a namespace
            // package, and torch's own check of `_C.__file__` raises instead.
            let stubs = ctx.root.is_dir(&pkg.join("_C"));
            let message = if stubs {
                "ImportError: Failed to load PyTorch C extensions: It appears that PyTorch has loaded the \
                 `torch/_C` folder of the PyTorch repository rather than the C extensions which are expected in \
                 the `torch._C` namespace."
            } else {
                "ModuleNotFoundError: No module named 'torch._C'"
            };
            return fails(message.into(), None, notes);
        };
        if let Err(e) = p.load_extension("torch", "torch._C", &c) {
            return fails(format!("ImportError: {}", e.message), Some(e), notes);
        }
        // What comes next adds notes only (NumPy's failure is a warning, the bindings' an `ImportError` torch
        // catches): a process modelled for a file `_C`'s tree has loaded is done.
        if !p.settled() {
            // `torch._C`'s module init imports NumPy (`torch/csrc/utils/tensor_numpy.cpp`); a failure is a warning.
            let then = "torch._C, whose init imports it, warns \"Failed to initialize NumPy\" and goes on without it";
            notes.extend(numpy::import(ctx, "torch", then, p));
            notes.extend(bindings::import(ctx, &m.version, p));
        }
        Step {
            outcome: Outcome::Gpu,
            notes,
        }
    }

    fn first_use(&self, ctx: &Ctx, _m: &Selected, p: &mut dyn Process) -> Step {
        checks::first_use(ctx, p)
    }

    fn checks(&self, ctx: &Ctx, _m: &Selected, p: &dyn Process) -> Vec<Finding> {
        checks::checks(ctx, p)
    }
}

/// An import that raises `message`.
fn fails(message: String, load: Option<LoadError>, notes: Vec<String>) -> Step {
    Step {
        outcome: Outcome::Fails { message, load },
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::frameworks::testproc::{FakeProcess, TestEnv};

    /// torch 2.15 with its `_C` extension (whose tree holds `torch/lib/libtorch_cuda.so`) and NumPy 2.1.
    fn torch_and_numpy() -> TestEnv {
        let mut t = TestEnv::new();
        let site = t.site();
        let torch = [
            "torch/__init__.py",
            "torch/lib/libtorch_global_deps.so",
            "torch/lib/libtorch_cuda.so",
            "torch/_C.so",
        ];
        t.install(&site, "torch", "2.15.0", &torch, &[]);
        std::fs::write(site.join("torch/version.py"), "cuda: Optional[str] = '13.0'\n").unwrap();
        let numpy = [
            "numpy/__init__.py",
            "numpy/_core/__init__.py",
            "numpy/_core/_multiarray_umath.so",
            "numpy/linalg/_umath_linalg.so",
        ];
        t.install(&site, "numpy", "2.1.0", &numpy, &[]);
        t
    }

    /// `import torch` in a fake process, modelled for `until` when given: the outcome and the files loaded.
    fn import(t: &TestEnv, until: Option<&str>) -> (Outcome, Vec<String>) {
        t.with_ctx(|ctx, root| {
            let mut p = FakeProcess::new(root);
            p.needed
                .insert("_C.so".into(), vec![t.site().join("torch/lib/libtorch_cuda.so")]);
            p.until = until.map(|rel| t.site().join(rel));
            let m = super::super::select("torch", "2.15.0", RANGES).expect("a model");
            let outcome = Torch.import(ctx, &m, &mut p).outcome;
            let site = t.site().display().to_string();
            let rel = |s: String| {
                s.strip_prefix(&format!("{site}/"))
                    .map_or(s.clone(), str::to_string)
            };
            (outcome, p.paths().into_iter().map(rel).collect())
        })
    }

    #[test]
    fn a_process_modelled_for_a_file_of_c_stops_once_it_is_loaded() {
        let t = torch_and_numpy();
        let (whole, all) = import(&t, None);
        assert_eq!(whole, Outcome::Gpu);
        let c = [
            "torch/lib/libtorch_global_deps.so",
            "torch/_C.so",
            "torch/lib/libtorch_cuda.so",
        ];
        let numpy = [
            "numpy/_core/_multiarray_umath.so",
            "numpy/linalg/_umath_linalg.so",
        ];
        assert_eq!(all, [&c[..], &numpy[..]].concat());
        // `inspect` of libtorch_cuda.so: the same outcome and the same objects up to the file, NumPy not modelled.
        let (settled, up_to) = import(&t, Some("torch/lib/libtorch_cuda.so"));
        assert_eq!(settled, Outcome::Gpu);
        assert_eq!(up_to, c);
        // A file the import loads later, or never: the whole import.
        assert_eq!(import(&t, Some("numpy/linalg/_umath_linalg.so")).1, all);
        assert_eq!(import(&t, Some("torch/lib/libtorch_cpu.so")).1, all);
    }
}
