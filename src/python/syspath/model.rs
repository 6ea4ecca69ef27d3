//! What `sys.path` is computed for and what it is made of: the request, each entry with why it is there,
//! the venv, the user site, the version, the errors, and the two helpers every step reads (the `PYTHON*`
//! variables, `os.path.abspath`). A leaf below the two steps (`getpath`, `site`) and `mod.rs`, which runs
//! them.

use crate::system::Env;
use std::path::{Path, PathBuf};

/// A Python `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct PyVersion {
    /// 3.
    pub major: u32,
    /// 11 in 3.11.
    pub minor: u32,
}

impl PyVersion {
    /// `3.11` (or `3.11.7`, `3.12.1.final.0`) → 3.11.
    pub fn parse(text: &str) -> Option<PyVersion> {
        let mut it = text.trim().split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        Some(PyVersion { major, minor })
    }

    /// The version in an interpreter's file name: `python3.11` → 3.11 (`python3` says too little).
    pub(super) fn from_name(name: &str) -> Option<PyVersion> {
        PyVersion::parse(name.strip_prefix("python")?)
    }

    pub(super) fn dotted(self) -> String {
        format!("{}.{}", self.major, self.minor)
    }
}

/// What to compute `sys.path` for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An interpreter, as it would be run (`/opt/venv/bin/python`, `/usr/bin/python3`); a bare name is
    /// looked up in the environment's `PATH` inside the root.
    Interpreter(PathBuf),
    /// An environment directory (a venv, a conda environment, a system prefix such as `/usr`): its
    /// `bin/python3` (else `bin/python`) is the interpreter.
    Environment(PathBuf),
}

/// What the interpreter runs first: decides `sys.path[0]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum Main {
    /// `python -c CODE`: `''` (the current directory, as given) goes first.
    Command,
    /// `python -m MODULE`: the current directory, absolute, goes first.
    Module,
    /// `python` with no argument (interactive, or a script on stdin): `''` goes first.
    Interactive,
    /// `python SCRIPT`: the script's directory (its own symbolic links followed) goes first.
    Script(PathBuf),
}

/// The interpreter's command-line options that change `sys.path`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// `-E`: every `PYTHON*` variable is ignored (`PYTHONUSERBASE` aside: `site.py` reads it directly).
    pub ignore_environment: bool,
    /// `-s`: no user site.
    pub no_user_site: bool,
    /// `-S`: `site` is not imported: no site-packages, no `.pth` file.
    pub no_site: bool,
    /// `-I`: isolated: `-E` and `-s`, and `-P` from 3.11.
    pub isolated: bool,
    /// `-P` (3.11+): no `sys.path[0]`.
    pub safe_path: bool,
}

/// One question: which interpreter, run how, in which environment, from which directory.
#[derive(Debug, Clone)]
pub struct Request {
    /// The interpreter or environment.
    pub target: Target,
    /// `-c`, `-m`, a script, or interactive.
    pub main: Main,
    /// The command-line options.
    pub flags: Flags,
    /// The working directory the process starts in (relative `PYTHONPATH` entries, `-m`, `''`).
    pub cwd: PathBuf,
    /// The user the process runs as, for the home directory when `HOME` is unset (read from the root's
    /// `/etc/passwd`). `None`: unknown; then without `HOME` the user site is not modelled.
    pub uid: Option<u32>,
}

/// Why a `sys.path` entry is there: the rule that put it, typed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Why {
    /// `sys.path[0]`: what [`Main`] says.
    Main {
        /// How the interpreter was started.
        main: Main,
    },
    /// The `index`-th entry (from 0) of `PYTHONPATH`.
    PythonPath {
        /// Its position in the variable.
        index: usize,
    },
    /// The standard library's zip (`<prefix>/lib/pythonXY.zip`), listed whether it exists or not.
    StdlibZip,
    /// The standard library (`<prefix>/lib/pythonX.Y`).
    Stdlib,
    /// The extension modules of the standard library (`<exec_prefix>/lib/pythonX.Y/lib-dynload`).
    LibDynload,
    /// A site-packages directory of the environment's `prefix` (`site.getsitepackages`).
    SiteDir {
        /// The prefix it belongs to.
        prefix: PathBuf,
        /// Which of that prefix's directories.
        site: SiteKind,
    },
    /// The user site (`~/.local/lib/pythonX.Y/site-packages`, or under `PYTHONUSERBASE`).
    UserSite,
    /// A path line of a `.pth` file.
    PthLine {
        /// The `.pth` file.
        pth: PathBuf,
        /// Its line, from 1.
        line: usize,
    },
}

/// Which site directory of a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteKind {
    /// `<prefix>/<lib|lib64>/pythonX.Y/site-packages`.
    SitePackages,
    /// Debian's `<prefix>/local/lib/pythonX.Y/dist-packages` (`/usr/local/...` for `/usr`).
    DebianLocalDistPackages,
    /// Debian's `<prefix>/lib/python3/dist-packages`, shared by every Python 3.
    DebianSharedDistPackages,
    /// Debian's `<prefix>/<lib|lib64>/pythonX.Y/dist-packages`.
    DebianVersionDistPackages,
}

/// One `sys.path` entry, as Python prints it, with why it is there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// The entry: an absolute machine path, or the empty path for `''` (the current directory).
    pub path: PathBuf,
    /// Why it is there.
    pub why: Why,
}

/// Something CPython would do at start-up that may change `sys.path` and that is not modelled (it would
/// mean running code), or a file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum NotModelled {
    /// A `.pth` line that starts with `import`: `site.py` runs it (editable installs, `distutils-precedence`).
    PthImport {
        /// The `.pth` file.
        pth: PathBuf,
        /// The line, from 1.
        line: usize,
        /// Its text (raw: sanitise before printing).
        text: String,
    },
    /// A `.pth` file that could not be read (too large, not text, unreadable).
    PthUnreadable {
        /// The `.pth` file.
        pth: PathBuf,
        /// Why.
        error: String,
    },
    /// A `sitecustomize` module on the path: `site` imports it last.
    SiteCustomize {
        /// Where it is.
        path: PathBuf,
    },
    /// A `usercustomize` module on the path (user site enabled): imported after `sitecustomize`.
    UserCustomize {
        /// Where it is.
        path: PathBuf,
    },
    /// `HOME` is unset and the user's passwd entry is unknown: the user site was left out.
    UserHomeUnknown,
    /// `pyvenv.cfg` could not be read.
    PyvenvUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        error: String,
    },
}

/// A venv's `pyvenv.cfg`, as `site.py` and `getpath` read it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Venv {
    /// The `pyvenv.cfg` file.
    pub config: PathBuf,
    /// The venv's directory (`sys.prefix`).
    pub prefix: PathBuf,
    /// `home`: the base interpreter's directory.
    pub home: Option<PathBuf>,
    /// `include-system-site-packages` (true when the key is absent, as `site.py` reads it).
    pub system_site_packages: bool,
    /// `version` (or `version_info`, as uv writes it), as written.
    pub version: Option<String>,
}

/// Where the user site is, and whether it is on the path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UserSite {
    /// `~/.local/lib/pythonX.Y/site-packages` (or under `PYTHONUSERBASE`), when a home is known.
    pub path: Option<PathBuf>,
    /// Whether `site` adds it (enabled and the directory exists).
    pub added: bool,
    /// Why it is off, when it is.
    pub disabled_by: Option<UserSiteOff>,
}

/// What turns the user site off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UserSiteOff {
    /// A venv without system site-packages.
    Venv,
    /// `PYTHONNOUSERSITE`.
    PythonNoUserSite,
    /// `-s` (or `-I`).
    Flag,
    /// `-S`: `site` is not imported at all.
    NoSite,
}

/// `sys.path` of one interpreter, entry by entry, with the facts it was computed from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SysPath {
    /// The interpreter, as run.
    pub executable: PathBuf,
    /// Its `X.Y`, when known.
    pub version: Option<PyVersion>,
    /// `sys.prefix` (the venv's directory in a venv).
    pub prefix: PathBuf,
    /// `sys.base_prefix`: where the standard library is.
    pub base_prefix: PathBuf,
    /// `sys.base_exec_prefix`: where `lib-dynload` is.
    pub base_exec_prefix: PathBuf,
    /// `sys.platlibdir`: `lib`, or `lib64` where the standard library lives there (Fedora, RHEL, SUSE).
    pub platlibdir: String,
    /// The venv, when the interpreter is one's.
    pub venv: Option<Venv>,
    /// Debian's `site.py` (`dist-packages`), read from the standard library's own `site.py`.
    pub debian_site: bool,
    /// The user site.
    pub user_site: UserSite,
    /// `sys.path`, in order.
    pub entries: Vec<Entry>,
    /// What would run at start-up and may change `sys.path`, unread files: not modelled, listed.
    pub not_modelled: Vec<NotModelled>,
}

impl SysPath {
    /// The entries as Python prints them (`''` for the current directory).
    pub fn paths(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| e.path.to_string_lossy().into_owned())
            .collect()
    }
}

/// Why `sys.path` could not be computed at all.
#[derive(Debug)]
pub enum SysPathError {
    /// No interpreter at the target (an environment without `bin/python3`, a name not on `PATH`).
    NoInterpreter(PathBuf),
    /// The interpreter's `X.Y` could not be told: not in its names, its `pyvenv.cfg`, nor a standard
    /// library above it.
    UnknownVersion(PathBuf),
}

impl std::fmt::Display for SysPathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SysPathError::NoInterpreter(p) => {
                write!(f, "{}: no Python interpreter there", p.display())
            }
            SysPathError::UnknownVersion(p) => write!(
                f,
                "{}: its Python version could not be told from its name, pyvenv.cfg or standard library",
                p.display()
            ),
        }
    }
}

impl std::error::Error for SysPathError {}

/// The `PYTHON*` variables as the interpreter sees them: empty means unset, and `-E`/`-I` hide them.
pub(super) struct Vars<'a> {
    env: &'a Env,
    ignore: bool,
}

impl<'a> Vars<'a> {
    pub(super) fn new(env: &'a Env, flags: &Flags) -> Vars<'a> {
        Vars {
            env,
            ignore: flags.ignore_environment || flags.isolated,
        }
    }

    /// A `PYTHON*` variable, `None` when unset, empty, or ignored.
    pub(super) fn python(&self, key: &str) -> Option<&'a str> {
        if self.ignore {
            return None;
        }
        self.env.get(key).filter(|v| !v.is_empty())
    }
}

/// `os.path.abspath`: `p` joined to `cwd` when relative, then normalised lexically (`.`, `..`, repeated and
/// trailing slashes), without looking at the filesystem.
pub(crate) fn abspath(cwd: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let mut out: Vec<&std::ffi::OsStr> = Vec::new();
    for c in joined.components() {
        match c {
            std::path::Component::Normal(n) => out.push(n),
            std::path::Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    let mut path = PathBuf::from("/");
    path.extend(out);
    path
}
