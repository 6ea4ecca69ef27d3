//! `python::frameworks`: what `import torch` (or `jax`, `cupy`, `tensorflow`, `onnxruntime`) loads, modelled
//! as each framework's own Python code does it, in one process.
//!
//! Frameworks do not load CUDA through the ELF tree of one extension module alone. They preload libraries by
//! absolute path from directories they find themselves (torch walks `sys.path` for `nvidia/*/lib`, JAX imports
//! the `nvidia.*` packages, CuPy asks cuda-pathfinder), then import an extension module whose DT_NEEDED entries
//! the dynamic loader resolves against what is already loaded, then `dlopen` names they build at run time, at
//! import or at the first GPU use. Each has run-time version rules with its own message, and some fall back
//! to the CPU without raising.
//!
//! The pieces, and who fills them:
//! - [`PyEnv`]: the environment as facts (`sys.path`, every installed distribution). Read, never run.
//! - [`Framework`]: one framework's model. It recognises its distributions, picks the model of its version
//!   ([`select`]: a version outside every modelled range is judged with the nearest model, and says so), and
//!   drives a [`Process`] through its import, its first GPU use and its checks.
//! - [`Process`]: one process, one set of loaded libraries, shared by every import in order: the first copy of
//!   a soname loaded wins for the whole process, whoever asks later. Every library records how it came in
//!   ([`LoadedHow`]) and for which import. `crate::imports` implements it over the loader's emulation of the
//!   process (this module is below the loader, which asks it about pip's records, so it names no loader).
//!
//! A model never reads a file outside [`Ctx::root`], never runs Python and never loads what it inspects.

pub mod cupy;
pub mod env;
pub mod extension;
pub mod numpy;
pub mod onnxruntime;
pub mod pathfinder;
pub mod torch;

pub mod jax;
pub mod tensorflow;
#[cfg(test)]
mod testproc;
pub mod xla;

use crate::findings::Finding;
use crate::python::syspath::SysPath;
use crate::system::{Env, Root};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// One installed distribution: a `*.dist-info` directory in a `sys.path` entry. Its `METADATA` is read when
/// first asked for ([`Dist::meta`]): a run asks about a few of an environment's two hundred distributions, and
/// reading every one cost `doctor` 5 ms of CPU time in the GPU machine's venv of 197, and 2.6 ms of wall time
/// on 2 cores in a venv of 189.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dist {
    /// Its name normalised as PEP 503 does (lower case, runs of `-`, `_`, `.` as one `-`): what
    /// [`PyEnv::dist`] compares. Taken from the directory's name (`nvidia_cudnn_cu12-9.1.0.70.dist-info`), as
    /// `importlib.metadata` finds a distribution by name.
    pub key: String,
    /// The `sys.path` entry that holds the `.dist-info` (a machine path).
    pub site: PathBuf,
    /// The `.dist-info` directory.
    pub info: PathBuf,
    /// The files its `RECORD` lists, as written there (relative to [`Dist::site`], or absolute), sorted:
    /// read when first asked for ([`Dist::files`]).
    pub files: RecordFiles,
    /// Its `METADATA`'s headers, read when first asked for.
    pub metadata: Metadata,
}

impl Dist {
    /// The files its `RECORD` lists (sorted), read on the first call.
    pub fn files(&self) -> &[String] {
        self.files.get()
    }

    /// Its `METADATA`'s headers, read on the first call; `None` when the file is unreadable or names no name
    /// or version (such a distribution is not one of [`PyEnv::dists`]).
    pub fn meta(&self) -> Option<&Meta> {
        self.metadata.get()
    }

    /// Its name as `METADATA` spells it (`nvidia-cudnn-cu12`); empty when unreadable.
    pub fn name(&self) -> &str {
        self.meta().map_or("", |m| m.name.as_str())
    }

    /// Its version as written (`2.11.0+cu130`); empty when unreadable.
    pub fn version(&self) -> &str {
        self.meta().map_or("", |m| m.version.as_str())
    }

    /// The release numbers of its version (`[2, 11, 0]`), when it has plain ones.
    pub fn release(&self) -> Option<&[u64]> {
        self.meta().and_then(|m| m.release.as_deref())
    }

    /// Its `Requires-Dist` values, in order (`nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"`).
    pub fn requires(&self) -> &[String] {
        self.meta().map_or(&[], |m| m.requires.as_slice())
    }
}

/// The headers of a distribution's `METADATA` that the models read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// `Name:`, as written (`nvidia-cudnn-cu12`).
    pub name: String,
    /// `Version:`, as written (`2.11.0+cu130`).
    pub version: String,
    /// The release numbers of the version (`[2, 11, 0]`), when it has plain ones (a local version's part after
    /// `+` aside).
    pub release: Option<Vec<u64>>,
    /// Each `Requires-Dist` value, in order.
    pub requires: Vec<String>,
}

impl Meta {
    /// The headers given.
    pub fn new(name: &str, version: &str, requires: Vec<String>) -> Meta {
        Meta {
            name: name.to_string(),
            version: version.to_string(),
            release: crate::facts::loader::release(version.split('+').next().unwrap_or(version)),
            requires,
        }
    }
}

/// A distribution's `METADATA` headers, read when first asked for, within the root's cap for package
/// metadata. Clones share the headers once read.
#[derive(Clone)]
pub struct Metadata {
    /// The machine and the `METADATA`'s path; `None`: the headers are given.
    source: Option<(Root, PathBuf)>,
    read: Arc<OnceLock<Option<Meta>>>,
}

impl Metadata {
    /// Headers known already (tests, a model's synthetic distribution).
    pub fn known(meta: Meta) -> Metadata {
        Metadata {
            source: None,
            read: Arc::new(OnceLock::from(Some(meta))),
        }
    }

    /// The headers of the `METADATA` at `path`, read on first use.
    pub fn lazy(root: Root, path: PathBuf) -> Metadata {
        Metadata {
            source: Some((root, path)),
            read: Arc::new(OnceLock::new()),
        }
    }

    /// The headers, read now if not yet.
    pub fn get(&self) -> Option<&Meta> {
        self.read
            .get_or_init(|| {
                let (root, path) = self.source.as_ref()?;
                let text = root
                    .read_to_string(path, crate::system::read::PACKAGE_METADATA)
                    .ok()?;
                let h = crate::python::metadata::headers(&text)?;
                Some(Meta::new(
                    &h.name,
                    &h.version,
                    h.requires.into_iter().map(|(_, text)| text).collect(),
                ))
            })
            .as_ref()
    }
}

impl std::fmt::Debug for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.read.get() {
            Some(Some(m)) => write!(f, "{} {}", m.name, m.version),
            Some(None) => f.write_str("unreadable"),
            None => f.write_str("not read yet"),
        }
    }
}

impl PartialEq for Metadata {
    fn eq(&self, other: &Metadata) -> bool {
        self.get() == other.get()
    }
}

impl Eq for Metadata {}

/// A distribution's `RECORD` file list, read when first asked for: a run asks about two or three of an
/// environment's sixty distributions, and torch's `RECORD` alone lists twelve thousand files (parsing and
/// sorting every list was a tenth of `import torch`'s time). Clones share the list once read.
#[derive(Clone)]
pub struct RecordFiles {
    /// Where to read it: the machine, the `RECORD`'s path and the bytes of `RECORD`s its environment may still
    /// read ([`env::MAX_RECORD_BYTES`] in all, shared by its distributions). `None`: the list is given.
    source: Option<(Root, PathBuf, Arc<AtomicU64>)>,
    files: Arc<OnceLock<Vec<String>>>,
}

impl RecordFiles {
    /// A list known already (tests, an environment read without its files), sorted as a `RECORD`'s list is
    /// ([`crate::python::dist_info::record_paths_sorted`]: looked up by binary search).
    pub fn known(mut files: Vec<String>) -> RecordFiles {
        files.sort_unstable();
        files.dedup();
        RecordFiles {
            source: None,
            files: Arc::new(OnceLock::from(files)),
        }
    }

    /// The list of the `RECORD` at `record`, read on first use if `budget` has bytes left then.
    pub fn lazy(root: Root, record: PathBuf, budget: Arc<AtomicU64>) -> RecordFiles {
        RecordFiles {
            source: Some((root, record, budget)),
            files: Arc::new(OnceLock::new()),
        }
    }

    /// The files, read now if not yet.
    pub fn get(&self) -> &[String] {
        self.files.get_or_init(|| {
            let Some((root, record, budget)) = &self.source else {
                return Vec::new();
            };
            if budget.load(Ordering::Relaxed) == 0 {
                return Vec::new();
            }
            let Ok(text) = root.read_text(record, crate::system::read::PACKAGE_METADATA) else {
                return Vec::new();
            };
            let len = text.len() as u64;
            // Saturating: the budget only runs out.
            let _ = budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_sub(len))
            });
            crate::python::dist_info::record_paths_sorted(&text)
        })
    }
}

impl std::fmt::Debug for RecordFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.files.get() {
            Some(files) => write!(f, "{} files", files.len()),
            None => f.write_str("not read yet"),
        }
    }
}

impl PartialEq for RecordFiles {
    fn eq(&self, other: &RecordFiles) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RecordFiles {}

impl Serialize for RecordFiles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

/// The fix where a framework cannot load the driver's `libcuda.so.1`, for a model's help.
pub const INSTALL_DRIVER: &str = "install the NVIDIA driver (in a container, run it with the NVIDIA Container \
     Toolkit: `docker run --gpus all`); `cudadiag doctor` says what is missing";

/// The normalised form of a distribution name (PEP 503): `Nvidia_CUDNN.cu12` → `nvidia-cudnn-cu12`.
pub use crate::inspect::pep508::normalise;

/// Threads that read the distributions' `METADATA` at most, where all are asked for ([`PyEnv::read_all`]).
const METADATA_THREADS: usize = 8;

/// A Python environment as facts: its `sys.path` and the distributions installed on it. Nothing is run.
#[derive(Debug, Clone)]
pub struct PyEnv {
    /// `sys.path` of the interpreter, computed by `python::syspath::compute`.
    pub syspath: SysPath,
    /// Every `.dist-info` found in a `sys.path` entry, in `sys.path` order (within an entry, by name), its
    /// `METADATA` read or not yet.
    listed: Vec<Dist>,
    /// [`PyEnv::remembered`] answers, by question; shared by clones.
    answers: Arc<Mutex<HashMap<String, Answer>>>,
}

/// One answer [`PyEnv::remembered`] keeps, of whatever type its question has.
type Answer = Arc<dyn std::any::Any + Send + Sync>;

impl PyEnv {
    /// The environment of `syspath` with the distributions `listed` there, in `sys.path` order.
    pub fn new(syspath: SysPath, listed: Vec<Dist>) -> PyEnv {
        PyEnv {
            syspath,
            listed,
            answers: Arc::default(),
        }
    }

    /// Every distribution installed on `sys.path`, in order: the `.dist-info` directories whose `METADATA`
    /// names a name and a version (each read as the iteration reaches it).
    pub fn dists(&self) -> impl Iterator<Item = &Dist> {
        self.listed.iter().filter(|d| d.meta().is_some())
    }

    /// The `.dist-info` directories on `sys.path`, their `METADATA` read or not.
    pub fn listed(&self) -> usize {
        self.listed.len()
    }

    /// Reads every distribution's `METADATA` now, side by side, for a caller that will ask for all of them.
    pub fn read_all(&self) {
        crate::parallel::map(&self.listed, METADATA_THREADS, |d| {
            d.meta();
        });
    }

    /// The distribution `importlib.metadata.distribution(name)` returns: the first on `sys.path` whose
    /// normalised name is `name`'s.
    pub fn dist(&self, name: &str) -> Option<&Dist> {
        let key = normalise(name);
        self.named(&key).next()
    }

    /// The distributions whose normalised name is `key`, in `sys.path` order: only theirs of the environment's
    /// `METADATA` are read.
    pub fn named<'a, 'k>(&'a self, key: &'k str) -> impl Iterator<Item = &'a Dist> + use<'a, 'k> {
        self.listed
            .iter()
            .filter(move |d| d.key == key && d.meta().is_some())
    }

    /// The distribution whose `RECORD` lists one of `paths` (each a machine path, under the distribution's
    /// `site`). The distributions whose names best match the path are asked first
    /// ([`crate::python::dist_info::name_score`]): each asked reads its `RECORD`, and an environment of two
    /// hundred distributions would otherwise have every list before the owner's read to find one.
    /// The answers are remembered: every modelled process of a run asks about the libraries it loads, and
    /// `doctor`'s runs of one environment load the same ones.
    pub fn owner(&self, paths: &[&Path]) -> Option<&Dist> {
        // `{:?}` of the paths: lossless, and one question per list of paths.
        self.remembered(&format!("owner {paths:?}"), || self.find_owner(paths))
            .map(|i| &self.listed[i])
    }

    /// [`PyEnv::owner`], asked of the `RECORD`s: the distribution's index in `listed`.
    fn find_owner(&self, paths: &[&Path]) -> Option<usize> {
        // Per site (most distributions share one), taken apart once: the paths under it, relative to it, and
        // the words of the first. Per distribution, they were most of a warm `doctor` run's time in here.
        let mut sites: Vec<(&Path, Vec<String>, Vec<String>)> = Vec::new();
        let mut asked: Vec<(usize, usize, (usize, usize))> = Vec::new();
        for (i, d) in self.listed.iter().enumerate() {
            let at = match sites
                .iter()
                .position(|(site, ..)| site.as_os_str() == d.site.as_os_str())
            {
                Some(at) => at,
                None => {
                    let rels: Vec<String> = paths
                        .iter()
                        .filter_map(|p| p.strip_prefix(&d.site).ok())
                        .map(|rel| rel.to_string_lossy().into_owned())
                        .collect();
                    let words = rels
                        .first()
                        .map(|first| crate::python::dist_info::words_of(first))
                        .unwrap_or_default();
                    sites.push((d.site.as_path(), rels, words));
                    sites.len() - 1
                }
            };
            let (_, rels, words) = &sites[at];
            if !rels.is_empty() {
                asked.push((i, at, crate::python::dist_info::normalised_score(&d.key, words)));
            }
        }
        asked.sort_by_key(|&(_, _, score)| std::cmp::Reverse(score));
        // A distribution's files are sorted (`record_paths_sorted`): each path is looked up, not compared with all.
        asked
            .into_iter()
            .find(|&(i, at, _)| {
                let d = &self.listed[i];
                // A `.dist-info` without readable `METADATA` is no distribution: its `RECORD` is not asked.
                if d.meta().is_none() {
                    return false;
                }
                let files = d.files();
                sites[at].1.iter().any(|r| files.binary_search(r).is_ok())
            })
            .map(|(i, _, _)| i)
    }

    /// The answer to `question`, a search of the environment's directories that every process of it makes
    /// alike (which distribution owns a loaded library, where `nvidia.cudnn` is, where torch's preload of cuDNN
    /// is found): made by `find` the first time it is asked, then remembered. `doctor` models each framework's
    /// import alone and all together, in the same environment. A question is named with its kind
    /// (`nvidia-module nvidia.cudnn`), so that two kinds of answer never share a name.
    pub fn remembered<T: Clone + Send + Sync + 'static>(
        &self,
        question: &str,
        find: impl FnOnce() -> T,
    ) -> T {
        let known = self
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(question)
            .cloned();
        if let Some(known) = known.and_then(|a| a.downcast::<T>().ok()) {
            return T::clone(&known);
        }
        let found = find();
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(question.to_string(), Arc::new(found.clone()));
        found
    }

    /// The `sys.path` entries that are directories of the machine (not `''`, not a zip), in order.
    pub fn dirs(&self) -> impl Iterator<Item = &Path> {
        self.syspath
            .entries
            .iter()
            .map(|e| e.path.as_path())
            .filter(|p| p.is_absolute() && p.extension().is_none_or(|x| x != "zip"))
    }
}

/// GPUs of one compute capability visible to the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// `NVIDIA H200 (CC 9.0)`.
    pub label: String,
    /// The compute capability.
    pub cc: crate::matrix::Cc,
}

/// The driver the question is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Driver {
    /// Its version.
    pub version: crate::matrix::DriverVersion,
    /// Where it was read (`/proc/driver/nvidia/version`, `--driver`).
    pub source: String,
}

/// What every model is given: the machine, the process's environment, the Python environment, and the GPUs
/// and driver the question is about.
pub struct Ctx<'a> {
    /// Every read goes through it.
    pub root: &'a Root,
    /// The environment the Python process starts with (`LD_LIBRARY_PATH`, `TORCH_USE_RTLD_GLOBAL`, …).
    pub env: &'a Env,
    /// The Python environment.
    pub python: &'a PyEnv,
    /// The GPUs visible to the process (by compute capability); empty when none is.
    pub gpus: &'a [Gpu],
    /// The driver, when known (the machine's, or `--driver`).
    pub driver: Option<&'a Driver>,
    /// The compatibility matrix (the CUDA a driver supports, for the frameworks' driver checks).
    pub matrix: &'a crate::matrix::Matrix,
    /// Does the machine judged provide this library with its driver although no file here holds it? True
    /// for the driver's user-space libraries (`libcuda.so.1`, `libnvidia-ml.so.1`, …) of a declared machine
    /// (`--gpu`/`--driver`, `--facts`): they come with that driver there (as `inspect` of a declared target
    /// gives no `library-not-found` for them).
    pub provides: &'a dyn Fn(&str) -> bool,
}

impl Ctx<'_> {
    /// Is a failed load of `soname` no failure, the machine judged providing it ([`Ctx::provides`])?
    pub fn provided(&self, soname: &str) -> bool {
        (self.provides)(soname)
    }
}

/// When a load happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// During `import`.
    Import,
    /// At the first GPU use (the first CUDA tensor, the first cuDNN or NVRTC call).
    FirstUse,
}

/// How a library came into the process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LoadedHow {
    /// Mapped when the interpreter starts: the program itself, or the dynamic loader.
    Start,
    /// Loaded by absolute path by a framework's own code (`ctypes.CDLL(path)`), from a directory the framework
    /// found itself.
    Preloaded {
        /// The framework (`torch`).
        by: String,
        /// How it found the file, in its terms (`sys.path[3] nvidia/cudnn/lib/libcudnn.so.*[0-9]`).
        search: String,
        /// Opened with `RTLD_GLOBAL`: its symbols serve every later object.
        global: bool,
    },
    /// An extension module Python's import system opened by path (`torch._C`).
    Extension {
        /// The module (`torch._C`).
        module: String,
    },
    /// A DT_NEEDED entry of an object already in the process, found by the loader's search.
    Needed {
        /// The object that needed it (its path as loaded).
        needed_by: String,
        /// Where the loader found it.
        found: crate::facts::loader::How,
        /// For `found = rpath`: whose DT_RPATH it was, when not the requester's own.
        via: Option<String>,
    },
    /// `dlopen(name)` by an object of the process, at run time, resolved from that caller.
    Opened {
        /// The name asked for (`libcudnn_ops.so.9`).
        name: String,
        /// The caller (its path as loaded).
        caller: String,
        /// Where the loader found it.
        found: crate::facts::loader::How,
    },
}

/// One object in the process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Loaded {
    /// Its path as loaded (links not resolved): what `/proc/self/maps` shows is [`Loaded::realpath`].
    pub path: String,
    /// Its real path.
    pub realpath: String,
    /// Its DT_SONAME.
    pub soname: Option<String>,
    /// Its version, from the real file name (`9.19.0`).
    pub version: Option<String>,
    /// How it came in.
    pub how: LoadedHow,
    /// The import that brought it in (`torch`), or the framework whose first use did.
    pub import: String,
    /// At import or at first use.
    pub when: When,
}

/// A load that fails, with the text the process would show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadError {
    /// The name or path asked for.
    pub name: String,
    /// Who asked (a path as loaded, or the framework for a preload).
    pub requester: String,
    /// `dlerror()`'s text: `libcudnn.so.9: cannot open shared object file: No such file or directory`.
    pub message: String,
    /// The loader's record of the failed request, with its search trail.
    pub library: Option<Box<crate::facts::loader::Library>>,
}

/// One process: the libraries loaded so far, and the loads a framework's code makes. Each load resolves the
/// new object's DT_NEEDED entries (breadth-first, as `_dl_map_object_deps`) against the objects already there
/// before any search, so the first copy of a soname wins.
pub trait Process {
    /// Every object loaded, in load order.
    fn loaded(&self) -> &[Loaded];

    /// `ctypes.CDLL(path, mode)`: opens `path` and its DT_NEEDED tree, on behalf of the import `by`.
    /// `search` says how the framework found it, `global` whether the mode is `RTLD_GLOBAL`.
    fn load_path(&mut self, by: &str, path: &Path, search: &str, global: bool) -> Result<usize, LoadError>;

    /// Python's import of extension module `module` (a path on `sys.path`), on behalf of the import `by`.
    fn load_extension(&mut self, by: &str, module: &str, path: &Path) -> Result<usize, LoadError>;

    /// `dlopen(name)` by object `caller` (an index into [`Process::loaded`]): resolved from the caller, with
    /// its RPATH or RUNPATH, `LD_LIBRARY_PATH` and `ld.so.cache`, unless an object already answers to `name`.
    fn dlopen(&mut self, by: &str, caller: usize, name: &str, when: When) -> Result<usize, LoadError>;

    /// The loads the objects already in the process make by their own data when the GPU is first used: the
    /// CUDA runtime's `dlopen("libcuda.so.1")`, and every library name an object keeps for `dlopen` (NVML,
    /// NVRTC's builtins, cuDNN's sub-libraries), each resolved from that object, on behalf of `by`.
    fn runtime_loads(&mut self, by: &str);

    /// The object that answers to `name` (a soname or a path as loaded), if one is loaded.
    fn find(&self, name: &str) -> Option<usize> {
        self.loaded().iter().position(|l| {
            l.soname.as_deref() == Some(name) || l.path == name || l.path.rsplit('/').next() == Some(name)
        })
    }

    /// Does any mapped file's real path contain `needle`, as a framework reading `/proc/self/maps` sees it?
    fn maps_contain(&self, needle: &str) -> bool {
        self.loaded().iter().any(|l| l.realpath.contains(needle))
    }

    /// Says that the files at `paths` are about to be loaded by path ([`Process::load_path`]), in that
    /// order: a process with cores to spare starts reading them on other threads, so that each load finds its
    /// file parsed. A hint only: what any load does, and its answer, is the same without it.
    fn expect_paths(&mut self, _paths: &[PathBuf]) {}

    /// Has the process loaded the file its caller models it for? `cudadiag inspect` of a framework's own file
    /// (`torch/lib/libtorch_cuda.so`) wants only what the process holds up to that file and whether the import
    /// ends on the GPU ([`crate::imports::file`]): once the file is loaded, an import may skip its later steps
    /// that can neither fail it nor turn it away from the GPU. Always `false` for `cudadiag import`, which
    /// models the whole import.
    fn settled(&self) -> bool {
        false
    }
}

/// What an import (or a first use) ends in, as the user sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// It works and uses the GPU.
    Gpu,
    /// It works but runs on the CPU without raising: the GPU will not be used (an error finding).
    CpuFallback {
        /// What the framework prints, verbatim (`Unable to load cuDNN. Is it installed?`), when it prints.
        message: Option<String>,
        /// Why, in the model's terms.
        because: String,
    },
    /// It raises: the exception as the user sees it (`ImportError: libcudnn.so.9: cannot open shared object
    /// file: No such file or directory`).
    Fails {
        /// The exception's text.
        message: String,
        /// The failed load, when a load is the cause.
        load: Option<LoadError>,
    },
}

/// What one step of a model (the import, or the first use) gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The outcome.
    pub outcome: Outcome,
    /// What the model did not model in this environment (a `.pth` that runs code, an unmodelled variable).
    pub notes: Vec<String>,
}

/// A version range whose loading one model describes: `from` included, `until` excluded (`None`: open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// The first version (`2.10`).
    pub from: &'static str,
    /// The first version not in the range (`2.14`), `None` for the newest model.
    pub until: Option<&'static str>,
    /// What is particular to it, for the report (`the whole list preloaded, required`).
    pub about: &'static str,
}

/// The model chosen for an installed version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Selected {
    /// The index of the model in the framework's [`Framework::models`].
    pub index: usize,
    /// The installed version, as written.
    pub version: String,
    /// Set when the version is outside every modelled range: it is judged with the nearest model, and the
    /// report says so (`torch 2.16.0 is newer than every modelled version: judged as 2.14 and later`).
    pub nearest: Option<String>,
}

/// Picks the model for `version` among `ranges` (in ascending order). A version inside a range gets it; one
/// outside every range gets the nearest (below all: the first; above all: the last; between two: the one
/// whose bound is closer, the older on a tie), with a note. `None` when `version` has no release numbers or
/// `ranges` is empty.
pub fn select(name: &str, version: &str, ranges: &[Range]) -> Option<Selected> {
    let plain = version.split('+').next().unwrap_or(version);
    let v = crate::facts::loader::release(plain)?;
    let rel = |s: &str| crate::facts::loader::release(s).unwrap_or_default();
    let cmp = |a: &[u64], b: &[u64]| {
        let n = a.len().max(b.len());
        let at = |x: &[u64], i: usize| x.get(i).copied().unwrap_or(0);
        (0..n)
            .map(|i| at(a, i).cmp(&at(b, i)))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    };
    let inside =
        |r: &Range| cmp(&v, &rel(r.from)).is_ge() && r.until.is_none_or(|u| cmp(&v, &rel(u)).is_lt());
    if let Some(index) = ranges.iter().position(inside) {
        return Some(Selected {
            index,
            version: version.to_string(),
            nearest: None,
        });
    }
    let label = |r: &Range| match r.until {
        Some(u) => format!("{} up to {u} (excluded)", r.from),
        None => format!("{} and later", r.from),
    };
    let first = ranges.first()?;
    let index = if cmp(&v, &rel(first.from)).is_lt() {
        0
    } else {
        // Above the range ending before it; the next range (if any) starts after it.
        let below = ranges
            .iter()
            .rposition(|r| r.until.is_some_and(|u| cmp(&v, &rel(u)).is_ge()))
            .unwrap_or(0);
        match ranges.get(below + 1) {
            Some(next)
                if distance(&v, &rel(next.from))
                    < distance(&v, &rel(ranges[below].until.unwrap_or(next.from))) =>
            {
                below + 1
            }
            _ => below,
        }
    };
    let r = &ranges[index];
    let side = if cmp(&v, &rel(r.from)).is_lt() {
        "older"
    } else {
        "newer"
    };
    Some(Selected {
        index,
        version: version.to_string(),
        nearest: Some(format!(
            "{name} {version} is {side} than the nearest modelled version: judged with the model of {name} {}",
            label(r)
        )),
    })
}

/// How far apart two releases are, component by component (major first), for [`select`]'s nearest model.
fn distance(a: &[u64], b: &[u64]) -> Vec<u64> {
    let n = a.len().max(b.len());
    let at = |x: &[u64], i: usize| x.get(i).copied().unwrap_or(0);
    (0..n).map(|i| at(a, i).abs_diff(at(b, i))).collect()
}

/// One framework's model.
pub trait Framework: Sync {
    /// The module a user imports (`torch`): the name `cudadiag import` takes.
    fn module(&self) -> &'static str;

    /// The distributions that provide it, the one whose version selects the model first (`torch`; `jax`,
    /// `jaxlib`, `jax-cuda12-plugin`, …). The framework is installed when the first is on `sys.path`.
    fn distributions(&self) -> &'static [&'static str];

    /// The version ranges whose loading differs, in ascending order: [`select`] picks among them.
    fn models(&self) -> &'static [Range];

    /// `import MODULE`, as model `m` does it: its preloads, its extension modules, its run-time `dlopen`s at
    /// import, into `p`, which may already hold earlier imports' libraries.
    fn import(&self, ctx: &Ctx, m: &Selected, p: &mut dyn Process) -> Step;

    /// The first GPU use after a successful import (a CUDA tensor, a cuDNN operation): the driver, NVML,
    /// NVRTC, the cuDNN sub-libraries the framework `dlopen`s then.
    fn first_use(&self, ctx: &Ctx, m: &Selected, p: &mut dyn Process) -> Step;

    /// The framework's run-time rules on what the process holds after [`Framework::first_use`] (cuDNN's
    /// version rule, the driver check), each as a finding with the framework's exact message and the
    /// operations that raise it.
    fn checks(&self, ctx: &Ctx, m: &Selected, p: &dyn Process) -> Vec<Finding>;

    /// What to do about an outcome other than [`Outcome::Gpu`], in the framework's own terms
    /// (`pip install 'cupy-cuda12x[ctk]'`, `onnxruntime.preload_dlls()` before the session), when the model
    /// knows better than the generic help of the finding the outcome becomes.
    fn help(&self, _ctx: &Ctx, _m: &Selected, _outcome: &Outcome) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANGES: &[Range] = &[
        Range {
            from: "2.6",
            until: Some("2.9"),
            about: "a",
        },
        Range {
            from: "2.10",
            until: Some("2.14"),
            about: "b",
        },
        Range {
            from: "2.14",
            until: None,
            about: "c",
        },
    ];

    #[test]
    fn a_version_inside_a_range_gets_its_model_without_a_note() {
        let s = select("torch", "2.11.0+cu130", RANGES).unwrap();
        assert_eq!((s.index, s.nearest), (1, None));
        assert_eq!(select("torch", "2.15.0", RANGES).unwrap().index, 2);
        assert_eq!(select("torch", "2.6", RANGES).unwrap().index, 0);
    }

    #[test]
    fn a_version_outside_every_range_is_judged_with_the_nearest_and_says_so() {
        let old = select("torch", "2.2.0", RANGES).unwrap();
        assert_eq!(old.index, 0);
        assert!(old.nearest.unwrap().contains("older"));
        // 2.9.1 lies between 2.6–2.9 and 2.10–2.14: the end of the first is nearer.
        let gap = select("torch", "2.9.1", RANGES).unwrap();
        assert_eq!(gap.index, 0);
        assert!(
            gap.nearest
                .unwrap()
                .contains("judged with the model of torch 2.6 up to 2.9")
        );
        assert!(select("torch", "not a version", RANGES).is_none());
        assert!(select("torch", "2.0", &[]).is_none());
    }

    #[test]
    fn names_are_normalised_as_pep_503_does() {
        assert_eq!(normalise("Nvidia_CUDNN.cu12"), "nvidia-cudnn-cu12");
        assert_eq!(normalise("jax--cuda12__plugin"), "jax-cuda12-plugin");
    }

    /// A question is answered once per environment, whichever clone of it asks; another question, or the same
    /// words asked for another type, is answered anew.
    #[test]
    fn an_environments_answers_are_remembered_by_question() {
        let py = testproc::TestEnv::new().python();
        let asked = std::cell::Cell::new(0);
        let find = |v: u32| {
            asked.set(asked.get() + 1);
            Some(PathBuf::from(format!("/site/{v}")))
        };
        assert_eq!(py.remembered("q", || find(1)), Some(PathBuf::from("/site/1")));
        assert_eq!(
            py.clone().remembered("q", || find(2)),
            Some(PathBuf::from("/site/1"))
        );
        assert_eq!(asked.get(), 1);
        assert_eq!(py.remembered("other", || find(3)), Some(PathBuf::from("/site/3")));
        assert_eq!(py.remembered("q", || 7u8), 7);
        assert_eq!(asked.get(), 2);
    }

    #[test]
    fn the_owner_of_a_file_is_found_reading_the_likely_owners_records_first() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::at(t.path());
        let budget = Arc::new(AtomicU64::new(1 << 20));
        let mut env = testproc::TestEnv::new();
        let site = Path::new("/site");
        // Thirty distributions sorted before the owner on sys.path, each with a RECORD of its own.
        let names: Vec<String> = (0..30)
            .map(|i| format!("aaa-{i}"))
            .chain(["nvidia-cudnn-cu13".to_string(), "torch".to_string()])
            .collect();
        for name in &names {
            let record = format!("/site/{}-1.0.dist-info/RECORD", name.replace('-', "_"));
            let listed = match name.as_str() {
                "nvidia-cudnn-cu13" => "nvidia/cudnn/lib/libcudnn_graph.so.9,,\n".to_string(),
                other => format!("{other}/__init__.py,,\n"),
            };
            crate::system::put(t.path(), &record, listed.as_bytes());
            env.dists.push(Dist {
                key: normalise(name),
                site: site.into(),
                info: PathBuf::from(&record).parent().unwrap().into(),
                files: RecordFiles::lazy(root.clone(), record.into(), budget.clone()),
                metadata: Metadata::known(Meta::new(name, "9.19.0.56", Vec::new())),
            });
        }
        let py = env.python();
        // Opened through a link farm: the name is not listed, the real path is.
        let (opened, real) = (
            Path::new("/farm/libcudnn_graph.so.9"),
            Path::new("/site/nvidia/cudnn/lib/libcudnn_graph.so.9"),
        );
        let d = py.owner(&[opened, real]).expect("an owner");
        assert_eq!(d.name(), "nvidia-cudnn-cu13");
        assert_eq!(
            budget.load(Ordering::Relaxed),
            (1 << 20) - "nvidia/cudnn/lib/libcudnn_graph.so.9,,\n".len() as u64,
            "only the owner's RECORD was read"
        );
        // Asked again, the answer is the one remembered.
        assert_eq!(
            py.owner(&[opened, real]).map(Dist::name),
            Some("nvidia-cudnn-cu13")
        );
        assert_eq!(py.answers.lock().unwrap().len(), 1);
        // The name it was opened by alone is listed nowhere: the real path made the match.
        assert!(py.owner(&[opened]).is_none());
        assert!(py.owner(&[Path::new("/site/none/libx.so")]).is_none());
        assert!(py.owner(&[Path::new("/elsewhere/libx.so")]).is_none());
    }

    #[test]
    fn a_record_is_read_when_first_asked_for_once_for_all_clones_and_within_the_budget() {
        let t = tempfile::tempdir().unwrap();
        let record = "/site/x-1.0.dist-info/RECORD";
        crate::system::put(t.path(), record, b"x/b.py,,\nx/a.py,sha256=0,1\n");
        let root = Root::at(t.path());
        let budget = Arc::new(AtomicU64::new(1 << 20));
        let files = RecordFiles::lazy(root.clone(), record.into(), budget.clone());
        let clone = files.clone();
        assert_eq!(format!("{files:?}"), "not read yet");
        assert_eq!(
            budget.load(Ordering::Relaxed),
            1 << 20,
            "nothing read before it is asked for"
        );
        assert_eq!(clone.get(), ["x/a.py", "x/b.py"]);
        assert_eq!(format!("{files:?}"), "2 files", "the clone read it for both");
        assert_eq!(budget.load(Ordering::Relaxed), (1 << 20) - 27);
        // An environment whose budget is spent lists no more files; a missing RECORD lists none.
        let spent = Arc::new(AtomicU64::new(0));
        assert!(
            RecordFiles::lazy(root.clone(), record.into(), spent)
                .get()
                .is_empty()
        );
        assert!(
            RecordFiles::lazy(root, "/site/none/RECORD".into(), budget)
                .get()
                .is_empty()
        );
        assert_eq!(
            RecordFiles::known(vec!["a".into()]),
            RecordFiles::known(vec!["a".into()])
        );
    }
}
