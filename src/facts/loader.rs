//! `loader`: which file glibc's dynamic loader would map for every library of a binary, and why.
//!
//! This is an emulation of `ld.so`, never a call to it: nothing is executed or loaded (`ldd` may execute the
//! binary). It follows glibc's own code, cited per module:
//! - [`search`]: the search order of `_dl_map_new_object` in `elf/dl-load.c` (DT_RPATH of the loader chain
//!   unless the object has DT_RUNPATH, `LD_LIBRARY_PATH`, DT_RUNPATH of the object only, `/etc/ld.so.cache`,
//!   the default directories unless `DF_1_NODEFLIB`), with `open_verify`'s class and machine checks;
//! - [`cache`]: `elf/dl-cache.c`'s reading of `ld.so.cache`;
//! - [`platform`]: the default directories, `$LIB` and `$PLATFORM`, and the glibc-hwcaps subdirectories of
//!   the machine (`elf/dl-hwcaps.c`, `sysdeps/x86/get-isa-level.h`);
//! - [`resolve`]: the breadth-first walk of `_dl_map_object_deps` (`elf/dl-deps.c`), LD_PRELOAD and
//!   `/etc/ld.so.preload` (`elf/rtld.c`), the `_dl_lookup_map` reuse of objects already loaded;
//! - [`dlopen`]: the CUDA libraries loaded with `dlopen` (`libcuda.so.1` by cudart, …), each resolved as
//!   `_dl_open` does from its caller (`__RTLD_CALLMAP`).
//!
//! Not modelled (each would be a difference the differential script reports): the legacy hwcap subdirectories
//! and cache entries outside x86-64 and before glibc 2.26 (x86-64 glibc 2.26–2.36 is modelled: [`platform`],
//! [`cache::LegacyHwcaps`]), `LD_AUDIT`, DT_AUXILIARY/DT_FILTER, `dlmopen` namespaces, and secure-execution
//! through file capabilities (setuid/setgid are modelled).
//!
//! Every step of every search is kept as a [`Step`] in a trail, so a missing library can be explained the way
//! libtree does ("rpath skipped: runpath is set"). All reads go through [`crate::system::Root`] and the
//! captured [`crate::system::Env`], so `--root` and `--env` replay another machine.

pub mod cache;
pub mod copies;
pub mod dlopen;
pub mod foreign;
pub mod object;
pub mod origin;
pub mod platform;
pub mod resolve;
pub mod search;

use crate::facts::{DynSymbol, VersionNeed};
use serde::{Deserialize, Serialize};

pub use object::Files;
pub use resolve::{MainSymbols, resolve, resolve_alongside, resolve_with};

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
    /// An LD_PRELOAD (or `/etc/ld.so.preload`) entry.
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
    /// ([`dlopen::completions`]). Listed, not loaded: which one the library asks for is in its code.
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
        self.dlopen && dlopen::is_stem(&self.soname)
    }
}

/// One object in the process, in load order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadedObject {
    /// The path it was loaded from (as ld.so names it: directory + name, links not resolved).
    pub path: String,
    /// The real path.
    pub realpath: String,
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
    pub needs: Vec<DynSymbol>,
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
    /// How each object that requested a missing library was installed (pip, conda, the system's packages),
    /// read beside it: what the fix names packages from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<origin::Origin>,
    /// Set when the machine (or root) cannot load the binary's architecture: its libraries were not looked up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign: Option<foreign::Foreign>,
}

/// Reads the version at the end of a file name: `libcudart.so.12.4.127` → `12.4.127`.
pub fn version_from_name(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    let (_, tail) = name.split_once(".so.")?;
    (!tail.is_empty()
        && tail
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then(|| tail.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_names() {
        assert_eq!(
            version_from_name("/x/libcudart.so.12.4.127").as_deref(),
            Some("12.4.127")
        );
        assert_eq!(version_from_name("/x/libcuda.so").as_deref(), None);
        assert_eq!(version_from_name("libfoo.so.1.x").as_deref(), None);
    }

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
