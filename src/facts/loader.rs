//! The loader's results: owned, serialisable records of what `loader::resolve` decided for every library of a
//! binary (which file glibc's dynamic loader would map, and every step of the search that found it or not).
//!
//! They are the JSON `libraries` section of the report and the part of [`crate::facts::Facts`] that a snapshot
//! carries; the emulation that fills them is the `loader` module.

use super::binary::{DynSymbol, VersionNeed};
use serde::{Deserialize, Serialize};

/// Where a search step looked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum How {
    /// DT_RPATH of the requesting object or of one of the objects that loaded it.
    Rpath,
    /// The `LD_LIBRARY_PATH` environment variable.
    LdLibraryPath,
    /// DT_RUNPATH of the requesting object.
    Runpath,
    /// `/etc/ld.so.cache`.
    LdSoCache,
    /// The loader's built-in default directories.
    DefaultPath,
    /// The name has a `/`: it is a path, not searched.
    Path,
    /// An object already loaded answers to the name (its soname, or a name it was loaded under).
    AlreadyLoaded,
    /// Found nowhere.
    NotFound,
}

impl How {
    /// The contract's spelling (`ld_so_cache`).
    pub fn as_str(self) -> &'static str {
        match self {
            How::Rpath => "rpath",
            How::LdLibraryPath => "ld_library_path",
            How::Runpath => "runpath",
            How::LdSoCache => "ld_so_cache",
            How::DefaultPath => "default_path",
            How::Path => "path",
            How::AlreadyLoaded => "already_loaded",
            How::NotFound => "not_found",
        }
    }

    /// The libtree-style label of a step's source, as people read it (`rpath of libfoo.so`, `ld.so.cache`).
    /// `of` is the object whose DT_RPATH was used; it is named when it is not the requester itself.
    pub fn label(self, of: Option<&str>, requester: &str) -> String {
        match self {
            How::Rpath => match of {
                Some(o) if o != requester => format!("rpath of {o}"),
                _ => "rpath".into(),
            },
            How::LdLibraryPath => "LD_LIBRARY_PATH".into(),
            How::Runpath => "runpath".into(),
            How::LdSoCache => "ld.so.cache".into(),
            How::DefaultPath => "default path".into(),
            How::Path => "path".into(),
            How::AlreadyLoaded => "already loaded".into(),
            How::NotFound => "not found".into(),
        }
    }
}

/// What one step of a search gave (written through `wire::Step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepResult {
    /// The file is there and loadable: the search ends.
    Found,
    /// No such file.
    NotPresent,
    /// A file of the other ELF class: skipped, the search goes on.
    WrongClass,
    /// A file for another machine: skipped, the search goes on.
    WrongMachine,
    /// A file that is not a loadable ELF object: ld.so stops with an error.
    Invalid,
    /// The step was not taken (the note says why).
    Skipped,
    /// The cache has no usable entry for the name.
    NoEntry,
    /// The cache step was not taken: the machine has no `/etc/ld.so.cache` the loader can read. Written as a
    /// `skipped` step whose note is [`StepResult::NO_CACHE_NOTE`], so the JSON contract keeps one spelling.
    NoCache,
}

impl StepResult {
    /// The note a [`StepResult::NoCache`] step carries on the wire.
    pub const NO_CACHE_NOTE: &'static str = "no usable /etc/ld.so.cache";

    /// The note the result itself implies, for results whose reason is the result (`NoCache`).
    pub fn implied_note(self) -> Option<&'static str> {
        match self {
            StepResult::NoCache => Some(Self::NO_CACHE_NOTE),
            _ => None,
        }
    }

    /// What the step gave, as people read it (`wrong ELF class, skipped`).
    pub fn as_str(self) -> &'static str {
        match self {
            StepResult::Found => "found",
            StepResult::NotPresent => "not present",
            StepResult::WrongClass => "wrong ELF class, skipped",
            StepResult::WrongMachine => "wrong machine, skipped",
            StepResult::Invalid => "not a loadable ELF object, the load stops",
            StepResult::Skipped | StepResult::NoCache => "skipped",
            StepResult::NoEntry => "no entry",
        }
    }
}

impl std::fmt::Display for StepResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One step of a search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "wire::Step", from = "wire::Step")]
pub struct Step {
    /// The source of the directory.
    pub how: How,
    /// For RPATH and RUNPATH: the object whose entry this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<String>,
    /// The directory searched (expanded), or the cache file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// The file tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What happened.
    pub result: StepResult,
    /// Why, for skipped steps and rejected files, when the result does not say it itself (see
    /// [`Step::note`]).
    pub note: Option<String>,
}

impl Step {
    /// Why: the result's own reason ([`StepResult::implied_note`]) or the recorded note.
    pub fn note(&self) -> Option<&str> {
        self.result.implied_note().or(self.note.as_deref())
    }
}

/// The JSON form of a step: results whose reason is the result itself are written as `skipped` with that
/// reason as the note, and read back into their typed form.
mod wire {
    use super::How;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum StepResult {
        Found,
        NotPresent,
        WrongClass,
        WrongMachine,
        Invalid,
        Skipped,
        NoEntry,
    }

    #[derive(Serialize, Deserialize)]
    pub(super) struct Step {
        how: How,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        of: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dir: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        result: StepResult,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    }

    impl From<super::Step> for Step {
        fn from(s: super::Step) -> Self {
            use super::StepResult as R;
            let note = s.result.implied_note().map(str::to_string).or(s.note);
            let result = match s.result {
                R::Found => StepResult::Found,
                R::NotPresent => StepResult::NotPresent,
                R::WrongClass => StepResult::WrongClass,
                R::WrongMachine => StepResult::WrongMachine,
                R::Invalid => StepResult::Invalid,
                R::Skipped | R::NoCache => StepResult::Skipped,
                R::NoEntry => StepResult::NoEntry,
            };
            Step {
                how: s.how,
                of: s.of,
                dir: s.dir,
                path: s.path,
                result,
                note,
            }
        }
    }

    impl From<Step> for super::Step {
        fn from(s: Step) -> Self {
            use super::StepResult as R;
            let (result, note) = match s.result {
                StepResult::Found => (R::Found, s.note),
                StepResult::NotPresent => (R::NotPresent, s.note),
                StepResult::WrongClass => (R::WrongClass, s.note),
                StepResult::WrongMachine => (R::WrongMachine, s.note),
                StepResult::Invalid => (R::Invalid, s.note),
                StepResult::Skipped if s.note.as_deref() == Some(R::NO_CACHE_NOTE) => (R::NoCache, None),
                StepResult::Skipped => (R::Skipped, s.note),
                StepResult::NoEntry => (R::NoEntry, s.note),
            };
            super::Step {
                how: s.how,
                of: s.of,
                dir: s.dir,
                path: s.path,
                result,
                note,
            }
        }
    }
}

/// The copy a consumer's own RUNPATH (or RPATH) would have given, for the shadowing check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intended {
    /// RUNPATH or RPATH.
    pub how: How,
    /// The file there.
    pub path: String,
    /// Its real path.
    pub realpath: String,
    /// Its version, read from the file name.
    pub version: Option<String>,
}

/// Another file with the same or a related name, found on disk for a library that was not found (or shadowed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Copy {
    /// Where it is.
    pub path: String,
    /// The name requested exactly (`libcudart.so.12`), or only the same library of another version.
    pub same_name: bool,
    /// Version read from the real file name (`12.4.127`).
    pub version: Option<String>,
    /// Why this loader would pass the file over (`wrong ELF class: ELFCLASS32`), as ld.so would on finding it
    /// in a searched directory: such a copy is no answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
    /// Its directory is one `/etc/ld.so.conf` lists (through its `include`s): the loader searches it only
    /// through `/etc/ld.so.cache`, so a missing library found here means a cache `ldconfig` has not refreshed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_ld_so_conf: bool,
    /// The package that installed it, by the package manager's own record: the pip distribution whose
    /// `*.dist-info/RECORD` lists it (kind `pip`), or the conda package whose `conda-meta/*.json` does (kind
    /// `conda`). Looked up for the usable copies of the requested name alone: a package already installed is
    /// not one to install again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<super::host::Owner>,
}

impl Copy {
    /// The copy as a report lists it: its path, then its version, why this loader would pass it over, and
    /// whether `/etc/ld.so.conf` lists its directory.
    pub fn line(&self) -> String {
        let mut notes: Vec<String> = self.version.iter().map(|v| format!("version {v}")).collect();
        notes.extend(self.package.iter().map(|p| match &p.version {
            Some(v) => format!("installed by {}: {} {v}", p.kind, p.name),
            None => format!("installed by {}: {}", p.kind, p.name),
        }));
        notes.extend(self.unusable.iter().map(|u| format!("not loadable here: {u}")));
        if self.in_ld_so_conf {
            notes.push("listed in ld.so.conf".into());
        }
        if notes.is_empty() {
            self.path.clone()
        } else {
            format!("{} ({})", self.path, notes.join("; "))
        }
    }
}

/// One library request: a DT_NEEDED entry, an LD_PRELOAD entry or a known `dlopen`, and how it was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Library {
    /// The name requested (`libcudart.so.12`, or a path).
    pub soname: String,
    /// The object that requested it (its path as loaded).
    pub needed_by: String,
    /// Index of the requester in [`Resolution::objects`].
    pub needed_by_index: usize,
    /// The file ld.so would map, `None` when not found.
    pub path: Option<String>,
    /// How it was found (for an object already loaded: [`How::AlreadyLoaded`]).
    pub how: How,
    /// For `how = rpath`: whose DT_RPATH it was, when not the requester's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Index of the object in [`Resolution::objects`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<usize>,
    /// Loaded at run time with `dlopen`, not through DT_NEEDED.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dlopen: bool,
    /// An LD_PRELOAD (or `/etc/ld.so.preload`) entry, or a library a Python framework loads before the
    /// inspected file of its own (with `dlopen` set; [`Library::reason`] says which framework and how).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preload: bool,
    /// Why the request exists, for `dlopen`s and preloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every step of the search.
    pub trail: Vec<Step>,
    /// The copy the requester's own RUNPATH/RPATH points at, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intended: Option<Intended>,
    /// Other files of that library on disk (filled for missing and shadowed libraries).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<Copy>,
    /// For a `dlopen` stem ([`Library::is_dlopen_stem`]) no step finds under its bare name: the versioned
    /// names of it (`libnvJitLink.so.13`) along its search, in search order, each once
    /// (`loader::dlopen::completions`). Listed, not loaded: which one the library asks for is in its code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completions: Vec<String>,
    /// The error ld.so would stop with ("wrong ELF class: ELFCLASS32", "invalid ELF header").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Library {
    /// A request for `soname` by object `needed_by_index` (`needed_by`) that no step has answered yet: the
    /// start of every resolution, and what a missing library stays.
    pub fn unresolved(soname: &str, needed_by: &str, needed_by_index: usize) -> Library {
        Library {
            soname: soname.to_string(),
            needed_by: needed_by.to_string(),
            needed_by_index,
            path: None,
            how: How::NotFound,
            via: None,
            object: None,
            dlopen: false,
            preload: false,
            reason: None,
            trail: Vec::new(),
            intended: None,
            copies: Vec::new(),
            completions: Vec::new(),
            error: None,
        }
    }

    /// A run-time load named by a bare stem (`libcudnn_ops.so`): the library completes it with a version
    /// before it calls dlopen, or tries it among other names. Not a load that can fail on its own.
    pub fn is_dlopen_stem(&self) -> bool {
        self.dlopen && is_stem(&self.soname)
    }

    /// The numbered search trail, one line per step (skipped steps with their reason).
    pub fn trail_lines(&self) -> Vec<String> {
        self.trail
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let what = s.how.label(s.of.as_deref(), &self.needed_by);
                let result = s.result.as_str();
                let at = s.path.as_deref().or(s.dir.as_deref()).unwrap_or("");
                let note = s.note().map(|n| format!(" ({n})")).unwrap_or_default();
                if at.is_empty() {
                    format!("{}. [{what}] {result}{note}", i + 1)
                } else {
                    format!("{}. [{what}] {at}: {result}{note}", i + 1)
                }
            })
            .collect()
    }
}

/// One object in the process, in load order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadedObject {
    /// The path it was loaded from (as ld.so names it: directory + name, links not resolved).
    pub path: String,
    /// The real path.
    pub realpath: String,
    /// What `$ORIGIN` expands to in its RPATH and RUNPATH (glibc's `l_origin`): the directory of the path it
    /// was opened by, made absolute, links not resolved; for a program the kernel starts, the directory of its
    /// real path (`/proc/self/exe`). See `docs/loader-origin.md`. Empty in facts recorded before it was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub origin: String,
    /// DT_SONAME.
    pub soname: Option<String>,
    /// Version read from the real file name (`libcudart.so.12.4.127` → `12.4.127`).
    pub version: Option<String>,
    /// The object that first requested it (`l_loader`), for the RPATH chain.
    pub loader: Option<usize>,
    /// Mapped by a `dlopen`.
    pub dlopen: bool,
    /// The main program, the interpreter or a library.
    pub role: Role,
    /// DT_NEEDED.
    pub needed: Vec<String>,
    /// DT_RPATH (empty when DT_RUNPATH is set: ld.so ignores it then).
    pub rpath: Vec<String>,
    /// DT_RUNPATH.
    pub runpath: Vec<String>,
    /// DF_1_NODEFLIB.
    pub nodeflib: bool,
    /// DT_VERNEED.
    pub version_needs: Vec<VersionNeed>,
    /// DT_VERDEF names.
    pub version_defs: Vec<String>,
    /// Undefined dynamic symbols that carry a version.
    pub needs: std::sync::Arc<[DynSymbol]>,
    /// Of [`LoadedObject::needs`], the strong references to a version some object of the process defines, but
    /// that no object defines in that version: ld.so's `undefined symbol: NAME, version V`. (A version no
    /// object defines is the `version 'V' not found` error instead, read from the version tables.)
    pub unbound: Vec<DynSymbol>,
}

/// What an object is in the process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The inspected binary.
    Main,
    /// The program interpreter (`ld-linux-x86-64.so.2`).
    Interpreter,
    /// A shared library.
    #[default]
    Library,
}

/// The loader's view of one binary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    /// The inspected binary.
    pub binary: String,
    /// The default directories used, and where they were read.
    pub system_dirs: Vec<String>,
    /// Where [`Resolution::system_dirs`] came from.
    pub system_dirs_source: String,
    /// The glibc-hwcaps subdirectories searched, best first.
    pub hwcaps: Vec<String>,
    /// `ld.so.cache` as read ("new format, 523 entries", or why it is unusable).
    pub cache: String,
    /// The program is secure-execution (setuid/setgid): LD_LIBRARY_PATH is ignored.
    pub secure: bool,
    /// Objects in load order (the binary first).
    pub objects: Vec<LoadedObject>,
    /// Every request, in the order ld.so makes them.
    pub libraries: Vec<Library>,
    /// How objects were installed (pip, conda, the system's packages), read beside them: each object that
    /// requested a missing DT_NEEDED library (what the fix names packages from), and for
    /// `cuda-library-too-old` each object that loads an NVIDIA library whose version is known beyond its major,
    /// and each such library pip installed (its distribution's version is the library's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<Origin>,
    /// Set when the machine (or root) cannot load the binary's architecture: its libraries were not looked up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign: Option<Foreign>,
    /// Set when the binary belongs to a Python framework's distribution and was resolved in the process that
    /// framework's import builds: what it loads by path first was already loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework: Option<FrameworkLoad>,
}

/// How a Python framework loads a file of its own distribution (`torch/_C*.so`, `torch/lib/libtorch_cuda.so`,
/// the CUDA provider of ONNX Runtime): the libraries its Python code loads by path (or opens by name) before
/// the file, which the file's own DT_NEEDED entries then find loaded instead of searching for them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameworkLoad {
    /// The module imported (`torch`).
    pub module: String,
    /// The distribution that owns the file, and its version (`torch 2.15.0`).
    pub installed: String,
    /// What the model of that version does (`every CUDA wheel preloaded from sys.path, each best effort`).
    pub model: String,
    /// Set when the version is outside every modelled range: the nearest model was used, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nearest: Option<String>,
    /// The `sys.path` entry the distribution is installed in (a machine path).
    pub site: String,
    /// The libraries the framework loads before the file, in order (their paths as loaded).
    pub before: Vec<String>,
    /// What the framework itself says to do when its import or first GPU use, modelled, does not reach the
    /// GPU (ONNX Runtime: call `onnxruntime.preload_dlls()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// A binary the machine cannot load: another architecture than the root's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Foreign {
    /// The binary's architecture (`aarch64`).
    pub needs: String,
    /// The architecture the machine or root serves (`x86_64`), where it is known.
    pub here: Option<String>,
    /// What was looked for, and found instead.
    pub evidence: Vec<String>,
}

/// The system's package manager, by the database the root has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PackageManager {
    /// `/var/lib/dpkg/status`: apt and `.deb` packages.
    Dpkg,
    /// `/var/lib/rpm`: dnf/yum/zypper and `.rpm` packages.
    Rpm,
}

/// One `Requires-Dist` line of a distribution's `METADATA`, with its line number (1-based) for evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataLine {
    /// Line number in `METADATA`.
    pub line: usize,
    /// The value after `Requires-Dist: `, verbatim.
    pub text: String,
    /// The lowest release of the distribution the line admits, when its specifier sets one and its marker
    /// does not rule Linux out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<Floor>,
}

/// How a requirement sets its lowest release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FloorOp {
    /// `==V`, `===V` or `==V.*`: that release (line) exactly.
    Pinned,
    /// `>=V`, `~=V` or `>V`: that release or a later one.
    AtLeast,
}

/// The lowest release of a distribution a `Requires-Dist` line admits (PEP 440 specifiers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Floor {
    /// The distribution, PEP 503-normalised (`nvidia-cudnn-cu13`).
    pub name: String,
    /// The operator that sets it.
    pub op: FloorOp,
    /// The release as written, without a `.*` (`9.19.0.56`).
    pub version: String,
    /// Its release numbers (`[9, 19, 0, 56]`).
    pub release: Vec<u64>,
}

/// The pip distribution that installed an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipDist {
    /// Its name as `METADATA` spells it (`torch`).
    pub name: String,
    /// Its version (`2.11.0`).
    pub version: String,
    /// The `METADATA` file read.
    pub metadata: String,
    /// Its `Requires-Dist` lines.
    pub requires: Vec<MetadataLine>,
}

/// How one object was installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Installed {
    /// Installed by pip: a `*.dist-info/RECORD` lists it, or it is under a Python `site-packages` directory.
    Pip {
        /// The directory pip installed into: the `.dist-info`'s parent (a `site-packages`, a `pip install
        /// --target` directory, a `PYTHONPATH` entry), else the `site-packages` above the object.
        site: String,
        /// The distribution whose `RECORD` lists the object, when one does.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dist: Option<PipDist>,
    },
    /// In a conda environment.
    Conda {
        /// The environment's prefix (the directory holding `conda-meta/`).
        prefix: String,
    },
    /// Anywhere else: the system's packages, or files put there by hand.
    System {
        /// The package manager the root has, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        manager: Option<PackageManager>,
    },
}

/// An object and how it was installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The object's path as loaded ([`LoadedObject::path`], as [`Library::needed_by`] names a requester).
    pub object: String,
    /// How it was installed.
    #[serde(flatten)]
    pub installed: Installed,
}

/// The release numbers of a PEP 440 version (`9.19.0.56` → `[9, 19, 0, 56]`); a pre-, post- or dev-release
/// suffix ends the release (`12.8.0rc1` → `[12, 8, 0]`). `None` for an epoch (`1!2.0`), a local version
/// (`2.0+cu12`) or no number at all.
pub fn release(version: &str) -> Option<Vec<u64>> {
    if version.contains('!') || version.contains('+') {
        return None;
    }
    let mut out = Vec::new();
    for part in version.split('.') {
        let digits = part.len() - part.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let n = part[..digits].parse().ok()?;
        out.push(n);
        if digits < part.len() {
            break;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Is `name` a stem: a library name without a version (`libcudnn_ops.so`), which a library may complete with
/// one before it calls `dlopen`, or try among other names?
pub fn is_stem(name: &str) -> bool {
    name.ends_with(".so")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache_step(result: StepResult, note: Option<&str>) -> Step {
        Step {
            how: How::LdSoCache,
            of: None,
            dir: None,
            path: None,
            result,
            note: note.map(str::to_string),
        }
    }

    #[test]
    fn a_missing_cache_is_written_as_a_skipped_step_and_read_back_typed() {
        let step = cache_step(StepResult::NoCache, None);
        let json = serde_json::to_string(&step).unwrap();
        assert_eq!(
            json,
            r#"{"how":"ld_so_cache","result":"skipped","note":"no usable /etc/ld.so.cache"}"#
        );
        let back: Step = serde_json::from_str(&json).unwrap();
        assert_eq!(back, step);
        assert_eq!(back.note(), Some(StepResult::NO_CACHE_NOTE));
    }

    #[test]
    fn other_skipped_steps_keep_their_note_and_stay_skipped() {
        let step = cache_step(StepResult::Skipped, Some("cache entry /lib/x refused"));
        let json = serde_json::to_string(&step).unwrap();
        assert_eq!(
            json,
            r#"{"how":"ld_so_cache","result":"skipped","note":"cache entry /lib/x refused"}"#
        );
        let back: Step = serde_json::from_str(&json).unwrap();
        assert_eq!(back.result, StepResult::Skipped);
        assert_eq!(back.note(), Some("cache entry /lib/x refused"));
        let entry = cache_step(StepResult::NoEntry, Some("no entry"));
        let json = serde_json::to_string(&entry).unwrap();
        assert_eq!(
            json,
            r#"{"how":"ld_so_cache","result":"no_entry","note":"no entry"}"#
        );
        assert_eq!(serde_json::from_str::<Step>(&json).unwrap(), entry);
    }
}
