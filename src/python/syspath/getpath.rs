//! The interpreter's own path configuration, before `site` runs: which interpreter, which version, the venv
//! (`pyvenv.cfg` next to the executable or one directory up), the prefixes (`PYTHONHOME`, else searched
//! upward from the base interpreter's real directory for the standard library's landmark `os.py` and for
//! `lib-dynload`), and the first entries of `sys.path`: `PYTHONPATH`, `pythonXY.zip`, `pythonX.Y`,
//! `lib-dynload` (CPython's `Modules/getpath.py`, 3.11+; `Modules/getpath.c` before, same order).

use super::model::{Entry, NotModelled, PyVersion, Request, SysPathError, Target, Vars, Venv, Why, abspath};
use crate::system::{Env, Root, read};
use std::path::{Path, PathBuf};

/// What `getpath` hands to `site`.
pub(super) struct Config {
    pub executable: PathBuf,
    pub version: PyVersion,
    pub base_prefix: PathBuf,
    pub base_exec_prefix: PathBuf,
    pub platlibdir: String,
    pub venv: Option<Venv>,
    /// `PYTHONPATH`, the zip, the standard library and `lib-dynload`, in order.
    pub entries: Vec<Entry>,
    pub not_modelled: Vec<NotModelled>,
}

/// The interpreter the request names, as an absolute machine path (not resolved: a venv's `bin/python` is a
/// link to the base interpreter, and the venv is found from the link's own directory).
pub fn interpreter(root: &Root, env: &Env, req: &Request) -> Result<PathBuf, SysPathError> {
    let is_file = |p: &Path| root.is_file(p);
    match &req.target {
        Target::Interpreter(p) if p.components().count() == 1 && !p.is_absolute() => env
            .get("PATH")
            .unwrap_or_default()
            .split(':')
            .filter(|d| !d.is_empty())
            .map(|d| abspath(&req.cwd, &Path::new(d).join(p)))
            .find(|c| is_file(c))
            .ok_or_else(|| SysPathError::NoInterpreter(p.clone())),
        Target::Interpreter(p) => {
            let exe = abspath(&req.cwd, p);
            if is_file(&exe) {
                Ok(exe)
            } else {
                Err(SysPathError::NoInterpreter(exe))
            }
        }
        Target::Environment(d) => {
            let dir = abspath(&req.cwd, d);
            ["python3", "python"]
                .iter()
                .map(|n| dir.join("bin").join(n))
                .find(|c| is_file(c))
                .ok_or(SysPathError::NoInterpreter(dir))
        }
    }
}

/// `pyvenv.cfg` in the executable's directory or the one above (`getpath`, and `site.venv()`), read as
/// `site.py` reads it: `key = value` lines, keys case-insensitive, `include-system-site-packages` true
/// unless it says otherwise. `sys.prefix` is the directory above the executable's, wherever the file was.
fn venv(root: &Root, exe: &Path, notes: &mut Vec<NotModelled>) -> Option<Venv> {
    let exe_dir = exe.parent()?;
    let site_prefix = exe_dir.parent().unwrap_or(exe_dir).to_path_buf();
    let config = [exe_dir.join("pyvenv.cfg"), site_prefix.join("pyvenv.cfg")]
        .into_iter()
        .find(|c| root.is_file(c))?;
    let text = match root.read_to_string(&config, read::CONFIG_TEXT) {
        Ok(t) => t,
        Err(e) => {
            notes.push(NotModelled::PyvenvUnreadable {
                path: config.clone(),
                error: e.to_string(),
            });
            String::new()
        }
    };
    let mut v = Venv {
        config,
        prefix: site_prefix,
        home: None,
        system_site_packages: true,
        version: None,
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        match key.trim().to_ascii_lowercase().as_str() {
            "include-system-site-packages" => v.system_site_packages = value.eq_ignore_ascii_case("true"),
            "home" => v.home = Some(PathBuf::from(value)),
            "version" | "version_info" if v.version.is_none() => v.version = Some(value.to_string()),
            _ => {}
        }
    }
    Some(v)
}

/// `search_up` of `getpath.py`: the first of `dir` and its ancestors where `landmark` passes `test`.
fn search_up(dir: &Path, test: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    dir.ancestors().find(|d| test(d)).map(Path::to_path_buf)
}

/// The version from the interpreter's names (`python3.11`, or what `python3` links to), else `pyvenv.cfg`,
/// else the standard library found above the interpreter's real directory.
fn version(root: &Root, exe: &Path, real: &Path, venv: Option<&Venv>) -> Option<PyVersion> {
    let named = |p: &Path| {
        p.file_name()
            .and_then(|n| PyVersion::from_name(&n.to_string_lossy()))
    };
    if let Some(v) = named(exe).or_else(|| named(real)) {
        return Some(v);
    }
    if let Some(v) = venv.and_then(|v| v.version.as_deref()).and_then(PyVersion::parse) {
        return Some(v);
    }
    let dir = real.parent()?;
    dir.ancestors().find_map(|d| {
        ["lib", "lib64"].iter().find_map(|lib| {
            super::super::envs::glob_dirs(root, &d.join(lib), "python3.")
                .into_iter()
                .rev()
                .filter(|p| root.exists(&p.join("os.py")))
                .find_map(|p| named(&p))
        })
    })
}

/// The path configuration of the requested interpreter.
pub(super) fn configure(root: &Root, env: &Env, vars: &Vars, req: &Request) -> Result<Config, SysPathError> {
    let executable = interpreter(root, env, req)?;
    let mut not_modelled = Vec::new();
    let venv = venv(root, &executable, &mut not_modelled);
    // The base interpreter: a venv's `home` names its directory; the prefix search starts from its real one.
    let base = venv
        .as_ref()
        .and_then(|v| v.home.as_ref())
        .map(|h| abspath(&req.cwd, h).join(executable.file_name().unwrap_or_default()))
        .unwrap_or_else(|| executable.clone());
    let real = root.resolve(&base).unwrap_or(base);
    let version = version(root, &executable, &real, venv.as_ref())
        .ok_or_else(|| SysPathError::UnknownVersion(executable.clone()))?;
    let xy = version.dotted();
    let real_dir = real.parent().unwrap_or(Path::new("/")).to_path_buf();
    let has_stdlib = |lib: &str| {
        search_up(&real_dir, |d| {
            root.exists(&d.join(lib).join(format!("python{xy}")).join("os.py"))
        })
        .is_some()
    };
    // `sys.platlibdir` is a build setting (3.9+); the standard library lives under it, so where `os.py` is
    // tells it: `lib64` on Fedora, RHEL and SUSE builds, `lib` elsewhere.
    let platlibdir =
        if version >= (PyVersion { major: 3, minor: 9 }) && has_stdlib("lib64") && !has_stdlib("lib") {
            "lib64"
        } else {
            "lib"
        };
    let stdlib_sub = Path::new(platlibdir).join(format!("python{xy}"));
    let (base_prefix, base_exec_prefix) = match vars.python("PYTHONHOME") {
        Some(home) => {
            let (p, e) = home.split_once(':').unwrap_or((home, home));
            (abspath(&req.cwd, Path::new(p)), abspath(&req.cwd, Path::new(e)))
        }
        None => {
            let prefix = search_up(&real_dir, |d| root.exists(&d.join(&stdlib_sub).join("os.py")))
                .unwrap_or_else(|| real_dir.parent().unwrap_or(&real_dir).to_path_buf());
            let exec_prefix = search_up(&real_dir, |d| {
                root.is_dir(&d.join(&stdlib_sub).join("lib-dynload"))
            })
            .unwrap_or_else(|| prefix.clone());
            (prefix, exec_prefix)
        }
    };
    let mut entries = Vec::new();
    if let Some(pp) = vars.python("PYTHONPATH") {
        for (index, p) in pp.split(':').enumerate() {
            entries.push(Entry {
                path: abspath(&req.cwd, Path::new(p)),
                why: Why::PythonPath { index },
            });
        }
    }
    let zip = format!("python{}{}.zip", version.major, version.minor);
    entries.push(Entry {
        path: base_prefix.join(platlibdir).join(zip),
        why: Why::StdlibZip,
    });
    entries.push(Entry {
        path: base_prefix.join(&stdlib_sub),
        why: Why::Stdlib,
    });
    entries.push(Entry {
        path: base_exec_prefix.join(&stdlib_sub).join("lib-dynload"),
        why: Why::LibDynload,
    });
    Ok(Config {
        executable,
        version,
        base_prefix,
        base_exec_prefix,
        platlibdir: platlibdir.to_string(),
        venv,
        entries,
        not_modelled,
    })
}
