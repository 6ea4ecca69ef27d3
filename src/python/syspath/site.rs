//! `site.main()` of CPython's `Lib/site.py`: duplicates removed, the venv's site directories first, the user
//! site, the system site directories of each prefix, each directory followed by its `.pth` files in sorted
//! name order; then `sys.path[0]` goes in front. Debian's `site.py` (`dist-packages`) is told from the
//! standard library's own `site.py`, as is the 3.13 rule (backported to security releases) that skips `.pth`
//! files whose names start with a dot.

use super::getpath::Config;
use super::model::{
    Entry, Main, NotModelled, Request, SiteKind, SysPath, UserSite, UserSiteOff, Vars, Why, abspath,
};
use crate::system::{Env, Root, read};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// `.pth` files read from one directory at most (a site-packages holds tens).
const MAX_PTH_FILES: usize = 10_000;

/// What differs between the `site.py` of distributions and versions.
struct Flavour {
    debian: bool,
    skips_dot_pth: bool,
}

fn flavour(root: &Root, cfg: &Config) -> Flavour {
    let site_py = cfg
        .base_prefix
        .join(&cfg.platlibdir)
        .join(format!("python{}.{}", cfg.version.major, cfg.version.minor))
        .join("site.py");
    let text = root
        .read_to_string(&site_py, read::CONFIG_TEXT)
        .unwrap_or_default();
    Flavour {
        debian: text.contains("dist-packages"),
        skips_dot_pth: text.contains("name.startswith(\".\")")
            || (text.is_empty() && cfg.version.minor >= 13),
    }
}

/// `sys.path` as it grows: the entries and the set of those already there (`known_paths`).
struct Growing {
    entries: Vec<Entry>,
    known: HashSet<PathBuf>,
    notes: Vec<NotModelled>,
}

impl Growing {
    fn push(&mut self, path: PathBuf, why: Why) -> bool {
        if self.known.insert(path.clone()) {
            self.entries.push(Entry { path, why });
            true
        } else {
            false
        }
    }
}

/// `site.getsitepackages(prefixes)` on POSIX, with Debian's patch when its `site.py` has it.
fn site_packages(
    cfg: &Config,
    fl: &Flavour,
    prefixes: &[PathBuf],
    in_venv: bool,
) -> Vec<(PathBuf, PathBuf, SiteKind)> {
    let xy = format!("python{}.{}", cfg.version.major, cfg.version.minor);
    let mut libdirs = vec![cfg.platlibdir.as_str()];
    if cfg.platlibdir != "lib" {
        libdirs.push("lib");
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for prefix in prefixes {
        if !seen.insert(prefix.clone()) {
            continue;
        }
        let mut add = |p: PathBuf, k| out.push((p, prefix.clone(), k));
        if fl.debian {
            if in_venv {
                add(
                    prefix.join("lib").join(&xy).join("site-packages"),
                    SiteKind::SitePackages,
                );
            }
            add(
                prefix.join("local/lib").join(&xy).join("dist-packages"),
                SiteKind::DebianLocalDistPackages,
            );
            add(
                prefix.join("lib/python3/dist-packages"),
                SiteKind::DebianSharedDistPackages,
            );
            for lib in &libdirs {
                add(
                    prefix.join(lib).join(&xy).join("dist-packages"),
                    SiteKind::DebianVersionDistPackages,
                );
            }
        } else {
            for lib in &libdirs {
                add(
                    prefix.join(lib).join(&xy).join("site-packages"),
                    SiteKind::SitePackages,
                );
            }
        }
    }
    out
}

/// `site.addsitedir`: the directory, then its `.pth` files in sorted name order.
fn add_site_dir(root: &Root, fl: &Flavour, path: &mut Growing, dir: PathBuf, why: Why) {
    path.push(dir.clone(), why);
    let mut names: Vec<PathBuf> = root
        .read_dir(&dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
            name.ends_with(".pth") && !(fl.skips_dot_pth && name.starts_with('.'))
        })
        .take(MAX_PTH_FILES)
        .collect();
    // `sorted()` of the names: byte order of UTF-8 is code-point order, which `read_dir` already gives.
    names.sort();
    for pth in names {
        add_pth(root, path, &dir, &pth);
    }
}

/// `site.addpackage`: comment and blank lines skipped, `import` lines listed (never run), every other line a
/// path relative to the site directory, added if it exists and is not there yet.
fn add_pth(root: &Root, path: &mut Growing, dir: &Path, pth: &Path) {
    let bytes = match root.read(pth, read::CONFIG_TEXT) {
        Ok(b) => b,
        Err(e) => {
            path.notes.push(NotModelled::PthUnreadable {
                pth: pth.to_path_buf(),
                error: e.to_string(),
            });
            return;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if line.starts_with("import ") || line.starts_with("import\t") {
            path.notes.push(NotModelled::PthImport {
                pth: pth.to_path_buf(),
                line: n + 1,
                text: line.trim_end().to_string(),
            });
            continue;
        }
        let entry = abspath(dir, Path::new(line.trim_end()));
        if !path.known.contains(&entry) && root.exists(&entry) {
            path.push(
                entry,
                Why::PthLine {
                    pth: pth.to_path_buf(),
                    line: n + 1,
                },
            );
        }
    }
}

/// The user's home as `os.path.expanduser("~")` finds it: `HOME`, else the passwd entry of the uid.
fn home(root: &Root, env: &Env, uid: Option<u32>) -> Option<PathBuf> {
    if let Some(h) = env.get("HOME") {
        return Some(PathBuf::from(h));
    }
    let uid = uid?.to_string();
    let passwd = root
        .read_to_string(Path::new("/etc/passwd"), read::CONFIG_TEXT)
        .ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 6 && f[2] == uid).then(|| PathBuf::from(f[5]))
    })
}

fn user_site(
    root: &Root,
    env: &Env,
    req: &Request,
    cfg: &Config,
    notes: &mut Vec<NotModelled>,
) -> Option<PathBuf> {
    // `site._getuserbase` reads `PYTHONUSERBASE` from `os.environ` itself: `-E` does not hide it.
    let base = match env.get("PYTHONUSERBASE").filter(|b| !b.is_empty()) {
        Some(b) => PathBuf::from(b),
        None => match home(root, env, req.uid) {
            Some(h) => h.join(".local"),
            None => {
                notes.push(NotModelled::UserHomeUnknown);
                return None;
            }
        },
    };
    let xy = format!("python{}.{}", cfg.version.major, cfg.version.minor);
    Some(abspath(
        &req.cwd,
        &base.join("lib").join(xy).join("site-packages"),
    ))
}

/// The first `module` (`sitecustomize`, `usercustomize`) on the path, as a file or a package.
fn find_module(root: &Root, entries: &[Entry], module: &str) -> Option<PathBuf> {
    entries.iter().filter(|e| e.path.is_absolute()).find_map(|e| {
        [format!("{module}.py"), module.to_string()]
            .into_iter()
            .map(|n| e.path.join(n))
            .find(|p| root.exists(p))
    })
}

/// `sys.path[0]`.
fn main_entry(root: &Root, req: &Request, cfg: &Config, vars: &Vars) -> Option<Entry> {
    let safe = cfg.version.minor >= 11
        && (req.flags.safe_path || req.flags.isolated || vars.python("PYTHONSAFEPATH").is_some());
    if safe {
        return None;
    }
    let path = match &req.main {
        Main::Command | Main::Interactive => PathBuf::new(),
        Main::Module => abspath(&req.cwd, Path::new("")),
        Main::Script(s) => {
            // The script's own links are followed (each target taken from the link's directory), then its
            // directory is made absolute.
            let mut script = abspath(&req.cwd, s);
            for _ in 0..crate::system::MAX_LINKS {
                let Ok(Some(target)) = root.link_of(&root.host_path(&script)) else {
                    break;
                };
                let dir = script.parent().unwrap_or(Path::new("/")).to_path_buf();
                script = abspath(&dir, &target);
            }
            script.parent().unwrap_or(Path::new("/")).to_path_buf()
        }
    };
    Some(Entry {
        path,
        why: Why::Main {
            main: req.main.clone(),
        },
    })
}

/// `site.main()`, then `sys.path[0]`.
pub(super) fn run(root: &Root, env: &Env, vars: &Vars, req: &Request, cfg: Config) -> SysPath {
    let mut path = Growing {
        entries: Vec::new(),
        known: HashSet::new(),
        notes: cfg.not_modelled.clone(),
    };
    for e in cfg.entries.clone() {
        path.push(e.path, e.why);
    }
    let fl = flavour(root, &cfg);
    let no_user = req.flags.no_user_site || req.flags.isolated;
    let mut disabled_by = if req.flags.no_site {
        Some(UserSiteOff::NoSite)
    } else if no_user {
        Some(UserSiteOff::Flag)
    } else if vars.python("PYTHONNOUSERSITE").is_some() {
        Some(UserSiteOff::PythonNoUserSite)
    } else {
        None
    };
    let mut prefixes = vec![cfg.base_prefix.clone(), cfg.base_exec_prefix.clone()];
    let is_dir = |p: &Path| root.is_dir(p);
    let mut user = UserSite {
        path: None,
        added: false,
        disabled_by: None,
    };
    if !req.flags.no_site {
        if let Some(v) = &cfg.venv {
            for (dir, prefix, kind) in site_packages(&cfg, &fl, std::slice::from_ref(&v.prefix), true) {
                if is_dir(&dir) {
                    add_site_dir(root, &fl, &mut path, dir, Why::SiteDir { prefix, site: kind });
                }
            }
            if v.system_site_packages {
                prefixes.insert(0, v.prefix.clone());
            } else {
                prefixes = vec![v.prefix.clone()];
                disabled_by = disabled_by.or(Some(UserSiteOff::Venv));
            }
        }
        let mut notes = Vec::new();
        user.path = user_site(root, env, req, &cfg, &mut notes);
        // An unknown home matters only where the user site would be read.
        if disabled_by.is_none() {
            path.notes.extend(notes);
        }
        if let Some(u) = user.path.clone().filter(|u| disabled_by.is_none() && is_dir(u)) {
            add_site_dir(root, &fl, &mut path, u, Why::UserSite);
            user.added = true;
        }
        let in_venv = cfg.venv.is_some();
        for (dir, prefix, kind) in site_packages(&cfg, &fl, &prefixes, in_venv) {
            if is_dir(&dir) {
                add_site_dir(root, &fl, &mut path, dir, Why::SiteDir { prefix, site: kind });
            }
        }
        if let Some(p) = find_module(root, &path.entries, "sitecustomize") {
            path.notes.push(NotModelled::SiteCustomize { path: p });
        }
        if disabled_by.is_none()
            && let Some(p) = find_module(root, &path.entries, "usercustomize")
        {
            path.notes.push(NotModelled::UserCustomize { path: p });
        }
    }
    user.disabled_by = disabled_by;
    let mut entries = path.entries;
    if let Some(first) = main_entry(root, req, &cfg, vars) {
        entries.insert(0, first);
    }
    SysPath {
        prefix: cfg
            .venv
            .as_ref()
            .map_or(cfg.base_prefix.clone(), |v| v.prefix.clone()),
        executable: cfg.executable,
        version: Some(cfg.version),
        base_prefix: cfg.base_prefix,
        base_exec_prefix: cfg.base_exec_prefix,
        platlibdir: cfg.platlibdir,
        venv: cfg.venv,
        debian_site: fl.debian,
        user_site: user,
        entries,
        not_modelled: path.notes,
    }
}
