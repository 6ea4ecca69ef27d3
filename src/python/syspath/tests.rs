//! Layouts no test machine has (a conda environment, Debian's and Fedora's system Pythons, a Debian venv),
//! built as plain directory trees under a root: nothing in them runs.

use super::model::abspath;
use super::*;
use crate::system::put;
use std::path::{Path, PathBuf};

fn link(root: &Path, path: &str, target: &str) {
    let p = root.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, p).unwrap();
}

fn dir(root: &Path, path: &str) {
    std::fs::create_dir_all(root.join(path.trim_start_matches('/'))).unwrap();
}

/// A Python `X.Y` at `prefix` (`lib` or `lib64`), its `site.py` with `site_py` in it.
fn python(root: &Path, prefix: &str, lib: &str, xy: &str, site_py: &str) {
    put(root, &format!("{prefix}/bin/python{xy}"), b"\x7fELF");
    link(root, &format!("{prefix}/bin/python3"), &format!("python{xy}"));
    put(root, &format!("{prefix}/{lib}/python{xy}/os.py"), b"");
    put(
        root,
        &format!("{prefix}/{lib}/python{xy}/site.py"),
        site_py.as_bytes(),
    );
    dir(root, &format!("{prefix}/{lib}/python{xy}/lib-dynload"));
}

fn request(target: Target) -> Request {
    Request {
        target,
        main: Main::Command,
        flags: Flags::default(),
        cwd: PathBuf::from("/work"),
        uid: None,
    }
}

fn env(vars: &[(&str, &str)]) -> Env {
    let mut e = Env::empty();
    for (k, v) in vars {
        e.set(k, v);
    }
    e
}

#[test]
fn a_conda_environment_with_pth_lines_and_a_user_site() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    let p = "/opt/conda/envs/ml";
    python(r, p, "lib", "3.10", "# upstream site.py\n");
    dir(r, &format!("{p}/conda-meta"));
    let site = format!("{p}/lib/python3.10/site-packages");
    dir(r, &format!("{site}/pkg_src"));
    dir(r, "/data/shared");
    put(
        r,
        &format!("{site}/easy.pth"),
        b"pkg_src\nimport sys; sys.path.insert(0, '/x')\n/data/shared\nmissing\npkg_src\n",
    );
    put(r, &format!("{site}/sitecustomize.py"), b"");
    dir(r, "/home/u/.local/lib/python3.10/site-packages");
    let got = compute(
        &Root::at(r),
        &env(&[("HOME", "/home/u")]),
        &request(Target::Environment(PathBuf::from(p))),
    )
    .unwrap();
    assert_eq!(
        got.paths(),
        [
            "",
            "/opt/conda/envs/ml/lib/python310.zip",
            "/opt/conda/envs/ml/lib/python3.10",
            "/opt/conda/envs/ml/lib/python3.10/lib-dynload",
            "/home/u/.local/lib/python3.10/site-packages",
            "/opt/conda/envs/ml/lib/python3.10/site-packages",
            "/opt/conda/envs/ml/lib/python3.10/site-packages/pkg_src",
            "/data/shared",
        ]
    );
    assert_eq!(got.version, Some(PyVersion { major: 3, minor: 10 }));
    assert!(got.venv.is_none() && !got.debian_site && got.user_site.added);
    let pth = PathBuf::from(format!("{site}/easy.pth"));
    assert_eq!(
        got.entries[7].why,
        Why::PthLine {
            pth: pth.clone(),
            line: 3
        }
    );
    assert_eq!(got.entries[4].why, Why::UserSite);
    assert!(got.not_modelled.contains(&NotModelled::PthImport {
        pth,
        line: 2,
        text: "import sys; sys.path.insert(0, '/x')".into()
    }));
    assert!(got.not_modelled.contains(&NotModelled::SiteCustomize {
        path: PathBuf::from(format!("{site}/sitecustomize.py"))
    }));
}

const DEBIAN_SITE: &str = "sitepackages.append(os.path.join(prefix, 'lib', 'python3', 'dist-packages'))\n";

fn debian(r: &Path) {
    python(r, "/usr", "lib", "3.11", DEBIAN_SITE);
    dir(r, "/usr/local/lib/python3.11/dist-packages");
    dir(r, "/usr/lib/python3/dist-packages");
    // Not a site directory on Debian: `site-packages` under /usr is never read.
    dir(r, "/usr/lib/python3.11/site-packages");
}

#[test]
fn debian_reads_dist_packages() {
    let t = tempfile::tempdir().unwrap();
    debian(t.path());
    let mut req = request(Target::Interpreter(PathBuf::from("python3")));
    req.flags.no_user_site = true;
    let got = compute(
        &Root::at(t.path()),
        &env(&[("PATH", "/usr/local/bin:/usr/bin")]),
        &req,
    )
    .unwrap();
    assert_eq!(
        got.paths(),
        [
            "",
            "/usr/lib/python311.zip",
            "/usr/lib/python3.11",
            "/usr/lib/python3.11/lib-dynload",
            "/usr/local/lib/python3.11/dist-packages",
            "/usr/lib/python3/dist-packages",
        ]
    );
    assert!(got.debian_site);
    assert_eq!(got.executable, Path::new("/usr/bin/python3"));
    assert_eq!(
        got.entries[5].why,
        Why::SiteDir {
            prefix: PathBuf::from("/usr"),
            site: SiteKind::DebianSharedDistPackages
        }
    );
    assert_eq!(got.user_site.disabled_by, Some(UserSiteOff::Flag));
}

#[test]
fn a_debian_venv_with_system_site_packages() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    debian(r);
    link(r, "/srv/venv/bin/python", "/usr/bin/python3");
    put(
        r,
        "/srv/venv/pyvenv.cfg",
        b"home = /usr/bin\nInclude-System-Site-Packages = TRUE\nversion = 3.11.2\n",
    );
    dir(r, "/srv/venv/lib/python3.11/site-packages");
    // The home comes from passwd when HOME is unset.
    put(
        r,
        "/etc/passwd",
        b"root:x:0:0:root:/root:/bin/sh\nu:x:1000:1000::/home/u:/bin/sh\n",
    );
    dir(r, "/home/u/.local/lib/python3.11/site-packages");
    let mut req = request(Target::Environment(PathBuf::from("/srv/venv")));
    req.uid = Some(1000);
    let got = compute(&Root::at(r), &Env::empty(), &req).unwrap();
    assert_eq!(
        got.paths(),
        [
            "",
            "/usr/lib/python311.zip",
            "/usr/lib/python3.11",
            "/usr/lib/python3.11/lib-dynload",
            "/srv/venv/lib/python3.11/site-packages",
            "/home/u/.local/lib/python3.11/site-packages",
            // Debian's site.py adds `lib/pythonX.Y/site-packages` of *every* prefix once in a venv.
            "/usr/lib/python3.11/site-packages",
            "/usr/local/lib/python3.11/dist-packages",
            "/usr/lib/python3/dist-packages",
        ]
    );
    let venv = got.venv.as_ref().unwrap();
    assert!(venv.system_site_packages);
    assert_eq!(venv.home.as_deref(), Some(Path::new("/usr/bin")));
    assert_eq!(got.prefix, Path::new("/srv/venv"));
    assert_eq!(got.base_prefix, Path::new("/usr"));
}

#[test]
fn a_venv_without_system_site_packages_has_no_user_site() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    debian(r);
    link(r, "/srv/venv/bin/python3", "/usr/bin/python3");
    put(
        r,
        "/srv/venv/pyvenv.cfg",
        b"home = /usr/bin\ninclude-system-site-packages = false\n",
    );
    dir(r, "/srv/venv/lib/python3.11/site-packages");
    dir(r, "/home/u/.local/lib/python3.11/site-packages");
    let got = compute(
        &Root::at(r),
        &env(&[("HOME", "/home/u"), ("PYTHONPATH", "src:/usr/lib/python3.11")]),
        &request(Target::Environment(PathBuf::from("/srv/venv"))),
    )
    .unwrap();
    assert_eq!(
        got.paths(),
        [
            "",
            "/work/src",
            "/usr/lib/python3.11",
            "/usr/lib/python311.zip",
            "/usr/lib/python3.11/lib-dynload",
            "/srv/venv/lib/python3.11/site-packages",
        ]
    );
    assert_eq!(got.entries[2].why, Why::PythonPath { index: 1 });
    assert_eq!(got.user_site.disabled_by, Some(UserSiteOff::Venv));
    assert!(!got.user_site.added);
}

#[test]
fn fedora_keeps_the_standard_library_in_lib64() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    python(r, "/usr", "lib64", "3.12", "# upstream\n");
    dir(r, "/usr/lib64/python3.12/site-packages");
    dir(r, "/usr/lib/python3.12/site-packages");
    let mut req = request(Target::Interpreter(PathBuf::from("/usr/bin/python3")));
    req.main = Main::Module;
    let got = compute(&Root::at(r), &env(&[("PYTHONSAFEPATH", "")]), &req).unwrap();
    assert_eq!(got.platlibdir, "lib64");
    assert_eq!(
        got.paths(),
        [
            "/work",
            "/usr/lib64/python312.zip",
            "/usr/lib64/python3.12",
            "/usr/lib64/python3.12/lib-dynload",
            "/usr/lib64/python3.12/site-packages",
            "/usr/lib/python3.12/site-packages",
        ]
    );
    // No home known at all: said, not guessed.
    assert!(got.not_modelled.contains(&NotModelled::UserHomeUnknown));
}

#[test]
fn hidden_and_unreadable_pth_files() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    // 3.13's site.py skips `.pth` names that start with a dot.
    python(
        r,
        "/usr",
        "lib",
        "3.13",
        "if name.endswith(\".pth\") and not name.startswith(\".\")\n",
    );
    let site = "/usr/lib/python3.13/site-packages";
    dir(r, &format!("{site}/shown"));
    dir(r, &format!("{site}/hidden"));
    put(r, &format!("{site}/.a.pth"), b"hidden\n");
    put(r, &format!("{site}/b.pth"), b"shown\n");
    dir(r, &format!("{site}/c.pth"));
    let mut req = request(Target::Interpreter(PathBuf::from("/usr/bin/python3.13")));
    req.flags.isolated = true;
    let got = compute(&Root::at(r), &Env::empty(), &req).unwrap();
    assert_eq!(
        got.paths().last().map(String::as_str),
        Some("/usr/lib/python3.13/site-packages/shown")
    );
    assert!(!got.paths().iter().any(|p| p.ends_with("hidden")));
    assert!(got.paths()[0].starts_with('/'), "-I implies -P from 3.11: no ''");
    assert!(matches!(
        &got.not_modelled[..],
        [NotModelled::PthUnreadable { pth, .. }] if pth.ends_with("c.pth")
    ));
}

#[test]
fn what_cannot_be_computed_says_why() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    put(r, "/opt/odd/bin/python3", b"");
    let root = Root::at(r);
    let e = compute(
        &root,
        &Env::empty(),
        &request(Target::Environment(PathBuf::from("/opt/none"))),
    );
    assert!(matches!(e, Err(SysPathError::NoInterpreter(_))));
    let e = compute(
        &root,
        &Env::empty(),
        &request(Target::Environment(PathBuf::from("/opt/odd"))),
    );
    assert!(matches!(e, Err(SysPathError::UnknownVersion(_))));
}

#[test]
fn abspath_is_lexical() {
    let cwd = Path::new("/a/b");
    assert_eq!(abspath(cwd, Path::new("")), Path::new("/a/b"));
    assert_eq!(abspath(cwd, Path::new("../c/./d/")), Path::new("/a/c/d"));
    assert_eq!(abspath(cwd, Path::new("/x//y/..")), Path::new("/x"));
    assert_eq!(abspath(cwd, Path::new("/../..")), Path::new("/"));
}
