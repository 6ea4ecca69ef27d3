//! NVIDIA's cuda-pathfinder (`cuda.pathfinder.load_nvidia_dynamic_lib`), the search CuPy 14 runs for each CUDA
//! library before it imports the extension module that needs it. Read at cuda-pathfinder 1.9.1
//! (NVIDIA/cuda-python, `cuda_pathfinder/cuda/pathfinder/_dynamic_libs/load_nvidia_dynamic_lib.py`,
//! `search_steps.py`, `search_platform.py`, `descriptor_catalog.py`); `docs/framework-cupy-onnxruntime.md` gives
//! each step with what was observed on real wheels.
//!
//! Its order is not the loader's: the site-packages directories (`site.getsitepackages()` and the user site,
//! never `PYTHONPATH` or a `.pth` line) and `CONDA_PREFIX` first, then a copy already in the process, then the
//! system loader, then `CUDA_PATH`/`CUDA_HOME`. A file it finds is loaded by absolute path, so
//! `LD_LIBRARY_PATH` does not shadow it; the descriptor's CUDA 13 directory and soname come before CUDA 12's in
//! every site directory, so a CUDA 13 wheel anywhere wins.

use super::{Ctx, LoadError, Process, When};
use crate::python::syspath::Why;
use std::path::{Path, PathBuf};

/// One library pathfinder knows (`descriptor_catalog.py`, Linux fields).
#[derive(Debug)]
pub struct Descriptor {
    /// The name asked for (`cublas`).
    pub name: &'static str,
    /// Its sonames, most preferred first (`libcublas.so.13`, `libcublas.so.12`).
    pub sonames: &'static [&'static str],
    /// The directories under a site-packages directory that hold it, most preferred first.
    pub site_dirs: &'static [&'static str],
    /// What is loaded first, through the same search (`cublas` → `cublasLt`).
    pub deps: &'static [&'static str],
    /// Variables naming an installation root of this library alone, and the directories under it.
    pub roots: &'static [&'static str],
    /// The directories under such a root.
    pub root_dirs: &'static [&'static str],
    /// A driver library: only the already-loaded check and the system loader.
    pub driver: bool,
}

const fn ctk(
    name: &'static str,
    sonames: &'static [&'static str],
    site_dirs: &'static [&'static str],
    deps: &'static [&'static str],
) -> Descriptor {
    Descriptor {
        name,
        sonames,
        site_dirs,
        deps,
        roots: &[],
        root_dirs: &[],
        driver: false,
    }
}

/// The libraries CuPy asks for, as cuda-pathfinder 1.9.1 describes them.
pub const DESCRIPTORS: &[Descriptor] = &[
    ctk(
        "cudart",
        &["libcudart.so.13", "libcudart.so.12"],
        &["nvidia/cu13/lib", "nvidia/cuda_runtime/lib"],
        &[],
    ),
    ctk(
        "nvrtc",
        &["libnvrtc.so.13", "libnvrtc.so.12"],
        &["nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"],
        &[],
    ),
    ctk(
        "cublasLt",
        &["libcublasLt.so.13", "libcublasLt.so.12"],
        &["nvidia/cu13/lib", "nvidia/cublas/lib"],
        &[],
    ),
    ctk(
        "cublas",
        &["libcublas.so.13", "libcublas.so.12"],
        &["nvidia/cu13/lib", "nvidia/cublas/lib"],
        &["cublasLt"],
    ),
    ctk(
        "cufft",
        &["libcufft.so.12", "libcufft.so.11"],
        &["nvidia/cu13/lib", "nvidia/cufft/lib"],
        &[],
    ),
    ctk(
        "curand",
        &["libcurand.so.11", "libcurand.so.10"],
        &["nvidia/cu13/lib", "nvidia/curand/lib"],
        &[],
    ),
    ctk(
        "nvJitLink",
        &["libnvJitLink.so.13", "libnvJitLink.so.12"],
        &["nvidia/cu13/lib", "nvidia/nvjitlink/lib"],
        &[],
    ),
    ctk(
        "cusparse",
        &["libcusparse.so.12"],
        &["nvidia/cu13/lib", "nvidia/cusparse/lib"],
        &["nvJitLink"],
    ),
    ctk(
        "cusolver",
        &["libcusolver.so.12", "libcusolver.so.11"],
        &["nvidia/cu13/lib", "nvidia/cusolver/lib"],
        &["nvJitLink", "cusparse", "cublasLt", "cublas"],
    ),
    Descriptor {
        name: "nccl",
        sonames: &["libnccl.so.2"],
        site_dirs: &["nvidia/nccl/lib"],
        deps: &[],
        roots: &["NCCL_HOME"],
        root_dirs: &["lib", "lib64", "build/lib"],
        driver: false,
    },
    ctk(
        "cutensor",
        &["libcutensor.so.2"],
        &["cutensor/lib"],
        &["cublasLt"],
    ),
    ctk(
        "cusparseLt",
        &["libcusparseLt.so.0"],
        &["nvidia/cu13/lib", "nvidia/cusparselt/lib"],
        &[],
    ),
    Descriptor {
        name: "cuda",
        sonames: &["libcuda.so.1"],
        site_dirs: &[],
        deps: &[],
        roots: &[],
        root_dirs: &[],
        driver: true,
    },
];

/// The descriptor of `name`.
pub fn descriptor(name: &str) -> Option<&'static Descriptor> {
    DESCRIPTORS.iter().find(|d| d.name == name)
}

/// The directories and variables pathfinder reads, computed once for a process.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// `site.getsitepackages()` with the user site where pathfinder inserts it: in `sys.path` order, the
    /// site-packages entries and the user site, nothing else.
    pub site: Vec<PathBuf>,
    /// `CONDA_PREFIX`, when set and not empty.
    pub conda: Option<PathBuf>,
    /// `CUDA_PATH`, else `CUDA_HOME` (the first set and not empty), with the variable's name.
    pub cuda_home: Option<(&'static str, PathBuf)>,
    /// The library roots' variables that are set (`NCCL_HOME`), with their values.
    pub roots: Vec<(&'static str, PathBuf)>,
}

impl Places {
    /// The places of `ctx`'s Python environment and process environment.
    pub fn of(ctx: &Ctx) -> Places {
        // site.py adds the venv's site-packages, then the user site, then the system's: the order
        // find_sub_dirs_all_sitepackages builds from site.getsitepackages() (cuda-python #1716).
        let site = ctx
            .python
            .syspath
            .entries
            .iter()
            .filter(|e| matches!(e.why, Why::SiteDir { .. } | Why::UserSite))
            .map(|e| e.path.clone())
            .collect();
        let var = |k: &str| ctx.env.get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let cuda_home = ["CUDA_PATH", "CUDA_HOME"]
            .into_iter()
            .find_map(|k| var(k).map(|v| (k, v)));
        let roots = DESCRIPTORS
            .iter()
            .flat_map(|d| d.roots.iter())
            .filter_map(|k| var(k).map(|v| (*k, v)))
            .collect();
        Places {
            site,
            conda: var("CONDA_PREFIX"),
            cuda_home,
            roots,
        }
    }
}

/// How pathfinder got a library, in its own words (`LoadedDL.found_via`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// A site-packages directory (the directory that held it).
    SitePackages(PathBuf),
    /// `$CONDA_PREFIX`.
    Conda,
    /// A copy already in the process (`dlopen(soname, RTLD_NOLOAD)`).
    AlreadyLoaded,
    /// A plain `dlopen(soname)`: `LD_LIBRARY_PATH`, `ld.so.cache`, the default directories.
    SystemSearch,
    /// A root named by a variable (`CUDA_PATH`, `CUDA_HOME`, `NCCL_HOME`).
    Variable(&'static str),
}

impl Via {
    /// The words of a report: `site-packages /venv/…/site-packages`.
    pub fn label(&self) -> String {
        match self {
            Via::SitePackages(d) => format!("site-packages {}", d.display()),
            Via::Conda => "CONDA_PREFIX".to_string(),
            Via::AlreadyLoaded => "already loaded".to_string(),
            Via::SystemSearch => "system search".to_string(),
            Via::Variable(v) => (*v).to_string(),
        }
    }
}

/// A library pathfinder gave: the object in the process, and how it came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Got {
    /// Its index in the process.
    pub index: usize,
    /// How pathfinder got it.
    pub via: Via,
}

/// Why pathfinder raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// `DynamicLibNotFoundError`, with its text (`Failure finding "libnvrtc.so.13 or libnvrtc.so.12": No such
    /// file: …`).
    NotFound {
        /// The library asked for (`nvrtc`): may be a dependency of the one the caller asked for.
        name: &'static str,
        /// The exception's text, as pathfinder builds it (the directory listings left out).
        message: String,
    },
    /// A file was found but could not be loaded (`RuntimeError: Failed to dlopen PATH: …`).
    Load(LoadError),
    /// A name pathfinder does not know (a model error, not a user's).
    Unknown(String),
}

impl Failure {
    /// The exception as Python shows it.
    pub fn message(&self) -> String {
        match self {
            Failure::NotFound { message, .. } => message.clone(),
            Failure::Load(e) => format!("Failed to dlopen {}: {}", e.name, e.message),
            Failure::Unknown(n) => format!("Unknown library name: '{n}'"),
        }
    }
}

/// The first file among `d`'s sonames in `dir`, as `_find_descriptor_so_under_dir` looks.
fn so_in(ctx: &Ctx, dir: &Path, d: &Descriptor) -> Option<PathBuf> {
    d.sonames
        .iter()
        .map(|s| dir.join(s))
        .find(|p| ctx.root.is_file(p))
}

/// Step 1, site-packages: the descriptor's directories outside, the site directories inside. Each directory
/// searched without a hit adds pathfinder's "No such file" to `errors`.
fn in_site(ctx: &Ctx, places: &Places, d: &Descriptor, errors: &mut Vec<String>) -> Option<(PathBuf, Via)> {
    for rel in d.site_dirs {
        for site in &places.site {
            let dir = site.join(rel);
            if let Some(p) = so_in(ctx, &dir, d) {
                return Some((p, Via::SitePackages(dir)));
            }
        }
    }
    for _ in d.site_dirs {
        errors.push(format!("No such file: {}", d.sonames.join(" or ")));
    }
    None
}

/// A root's directories (those that exist), searched in order: `_find_under_root`.
fn under(ctx: &Ctx, root: &Path, dirs: &[&str], d: &Descriptor, errors: &mut Vec<String>) -> Option<PathBuf> {
    for rel in dirs {
        let dir = root.join(rel);
        if !ctx.root.is_dir(&dir) {
            continue;
        }
        if let Some(p) = so_in(ctx, &dir, d) {
            return Some(p);
        }
        errors.push(format!("No such file: {}", d.sonames.join(" or ")));
    }
    None
}

/// The early steps: site-packages, then `CONDA_PREFIX` (`lib64`, `lib`).
fn early(ctx: &Ctx, places: &Places, d: &Descriptor, errors: &mut Vec<String>) -> Option<(PathBuf, Via)> {
    if let Some(hit) = in_site(ctx, places, d, errors) {
        return Some(hit);
    }
    let conda = places.conda.as_deref()?;
    under(ctx, conda, &["lib64", "lib"], d, errors).map(|p| (p, Via::Conda))
}

/// The late steps: the library's own root variables, then `CUDA_PATH`/`CUDA_HOME` (`lib64`, `lib`).
fn late(ctx: &Ctx, places: &Places, d: &Descriptor, errors: &mut Vec<String>) -> Option<(PathBuf, Via)> {
    for (var, root) in places.roots.iter().filter(|(v, _)| d.roots.contains(v)) {
        if let Some(p) = under(ctx, root, d.root_dirs, d, errors) {
            return Some((p, Via::Variable(var)));
        }
    }
    let (var, root) = places.cuda_home.as_ref()?;
    under(ctx, root, &["lib64", "lib"], d, errors).map(|p| (p, Via::Variable(var)))
}

/// What a load through pathfinder needs besides the process: where, on whose behalf, at which step.
pub struct Request<'c, 'a> {
    /// The model's context.
    pub ctx: &'c Ctx<'a>,
    /// The places, computed once.
    pub places: &'c Places,
    /// The import on whose behalf (`cupy`).
    pub by: &'c str,
    /// At import or at first use.
    pub when: When,
    /// The object a system search's `dlopen` runs from: `ctypes.CDLL(name)` searches as the interpreter does
    /// (the process's program, index 0; `_ctypes` has no RPATH of its own). `None`: no system search.
    pub caller: Option<usize>,
}

/// The interpreter, the process's first object: `ctypes.CDLL(name)` searches as a `dlopen` from it does
/// (`_ctypes` has no RPATH of its own; the program's DT_RPATH, if any, applies to both).
pub fn interpreter(p: &dyn Process) -> Option<usize> {
    (!p.loaded().is_empty()).then_some(0)
}

/// `load_nvidia_dynamic_lib(name)`, into `p`: the search in pathfinder's order (`_load_lib_no_cache`), its
/// dependencies first. A library already given in this process is given again (`functools.cache`: the
/// process's own set of objects answers that).
pub fn load(r: &Request, p: &mut dyn Process, name: &str) -> Result<Got, Failure> {
    load_at(r, p, name, 0)
}

fn load_at(r: &Request, p: &mut dyn Process, name: &str, depth: usize) -> Result<Got, Failure> {
    let d = descriptor(name).ok_or_else(|| Failure::Unknown(name.to_string()))?;
    // The catalogue's dependency chains are short (cusolver → cublas → cublasLt); a deeper chain is a model
    // error, not a reason to recurse without end.
    if depth > DESCRIPTORS.len() {
        return Err(Failure::Unknown(name.to_string()));
    }
    if d.driver {
        if let Some(index) = d.sonames.iter().find_map(|s| p.find(s)) {
            return Ok(Got {
                index,
                via: Via::AlreadyLoaded,
            });
        }
        return system(r, p, d).ok_or_else(|| Failure::NotFound {
            name: d.name,
            message: format!(
                "\"{}\" is an NVIDIA driver library and can only be found via system search. Ensure the \
                 NVIDIA display driver is installed.",
                d.name
            ),
        });
    }
    let mut errors = Vec::new();
    let found = early(r.ctx, r.places, d, &mut errors);
    // The already-loaded check runs after the search, and the dependencies load whatever it says.
    let already = d.sonames.iter().find_map(|s| p.find(s));
    for dep in d.deps {
        load_at(r, p, dep, depth + 1)?;
    }
    if let Some(index) = already {
        return Ok(Got {
            index,
            via: Via::AlreadyLoaded,
        });
    }
    if let Some((path, via)) = found {
        return by_path(r, p, &path, via);
    }
    if let Some(got) = system(r, p, d) {
        return Ok(got);
    }
    if let Some((path, via)) = late(r.ctx, r.places, d, &mut errors) {
        return by_path(r, p, &path, via);
    }
    Err(Failure::NotFound {
        name: d.name,
        message: format!(
            "Failure finding \"{}\": {}",
            d.sonames.join(" or "),
            errors.join(", ")
        ),
    })
}

/// `ctypes.CDLL(path, RTLD_NOW | RTLD_GLOBAL)`.
fn by_path(r: &Request, p: &mut dyn Process, path: &Path, via: Via) -> Result<Got, Failure> {
    let search = format!("cuda-pathfinder: {}", via.label());
    let index = p.load_path(r.by, path, &search, true).map_err(Failure::Load)?;
    if path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("libnvrtc.so"))
    {
        nvrtc_builtins(r, p, index, &via);
    }
    Ok(Got { index, via })
}

/// pathfinder's NVRTC workaround (`load_dl_linux.py`: `_work_around_known_bugs` from 1.1 to 1.8,
/// `_preload_nvrtc_builtins` in 1.9): the `nvidia-cuda-nvrtc` 13.0 wheel's `libnvrtc.so.13` has no RUNPATH, so
/// NVRTC's own `dlopen` of its builtins would not look beside it; pathfinder loads `libnvrtc-builtins.so.13.0`
/// from NVRTC's directory by path when it is there, failures ignored. 1.9 does it for any CUDA 13 NVRTC found in
/// site-packages, and for one found under `CUDA_PATH`/`CUDA_HOME` with the builtins of its own `M.m`; 1.1 to 1.8
/// for a file named `libnvrtc.so.13`, wherever found. Never for `CONDA_PREFIX` (its RPATH finds them). The GPU
/// machine's CuPy 14 mapped the wheel's builtins, which NVRTC's own search (`ld.so.cache`) would have missed.
fn nvrtc_builtins(r: &Request, p: &mut dyn Process, index: usize, via: &Via) {
    let Some(l) = p.loaded().get(index) else {
        return;
    };
    let (path, real) = (PathBuf::from(&l.path), PathBuf::from(&l.realpath));
    let real_name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let version: Vec<&str> = real_name
        .strip_prefix("libnvrtc.so.")
        .unwrap_or("")
        .split('.')
        .collect();
    let new = (r.ctx.python.dist("cuda-pathfinder"))
        .is_none_or(|d| d.release().is_none_or(|v| v >= [1u64, 9].as_slice()));
    let (dir, minor) = match via {
        Via::Conda | Via::AlreadyLoaded | Via::SystemSearch => return,
        _ if !new => {
            if path.file_name().is_none_or(|n| n != "libnvrtc.so.13") {
                return;
            }
            (path.parent().map(Path::to_path_buf), "13.0".to_string())
        }
        Via::SitePackages(_) => {
            if version.first() != Some(&"13") {
                return;
            }
            (real.parent().map(Path::to_path_buf), "13.0".to_string())
        }
        Via::Variable(_) => match version.as_slice() {
            [major, minor, ..] if major.parse::<u32>().is_ok() && minor.parse::<u32>().is_ok() => {
                (real.parent().map(Path::to_path_buf), format!("{major}.{minor}"))
            }
            _ => return,
        },
    };
    let Some(sibling) = dir.map(|d| d.join(format!("libnvrtc-builtins.so.{minor}"))) else {
        return;
    };
    if r.ctx.root.is_file(&sibling) {
        let search = format!("cuda-pathfinder: the NVRTC builtins beside {}", path.display());
        let _ = p.load_path(r.by, &sibling, &search, true);
    }
}

/// A plain `dlopen` of each soname in order, from Python's `_ctypes`: the first that loads.
fn system(r: &Request, p: &mut dyn Process, d: &Descriptor) -> Option<Got> {
    let caller = r.caller?;
    d.sonames.iter().find_map(|s| {
        p.dlopen(r.by, caller, s, r.when).ok().map(|index| Got {
            index,
            via: Via::SystemSearch,
        })
    })
}

#[cfg(test)]
mod tests;
