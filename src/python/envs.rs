//! Where a root's Python environments and conda prefixes are, without running any Python.
//!
//! A conda environment is a prefix with `conda-meta/` (`CONDA_PREFIX`, the usual install roots under `/opt`
//! and each home, and their `envs/`). A Python environment's packages are in `<prefix>/lib*/python3*/
//! {site,dist}-packages` (`VIRTUAL_ENV`, the system's `/usr` and `/usr/local`, each home's `.local`, `.venv`
//! and `venv`, the prefix of each Python on `PATH`), and in each `PYTHONPATH` directory (where `pip install
//! --target` puts them). What `sys.path` really is, per interpreter, is a later model's question; this is the
//! set of places worth a look, each a few `lstat`s.

use crate::system::{Env, Root};
use std::path::{Path, PathBuf};

/// The entries of `dir` whose names start with `prefix`.
pub fn glob_dirs(root: &Root, dir: &Path, prefix: &str) -> Vec<PathBuf> {
    root.read_dir(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect()
}

/// Every home directory: `HOME`, `/root`, `/home/*`.
fn homes(root: &Root, env: &Env) -> Vec<PathBuf> {
    let mut h: Vec<PathBuf> = env.get("HOME").map(PathBuf::from).into_iter().collect();
    h.push(PathBuf::from("/root"));
    h.extend(root.read_dir(Path::new("/home")).unwrap_or_default());
    let mut unique = Vec::new();
    for d in h {
        if !unique.contains(&d) {
            unique.push(d);
        }
    }
    unique
}

fn site_dirs_under(root: &Root, prefix: &Path, out: &mut Vec<PathBuf>) {
    for lib in ["lib", "lib64"] {
        for py in glob_dirs(root, &prefix.join(lib), "python3") {
            for s in ["site-packages", "dist-packages"] {
                out.push(py.join(s));
            }
        }
    }
}

/// The conda environments of the machine: `CONDA_PREFIX`, and the usual install roots (under `/opt` and each
/// home) with their `envs/`, sorted, each once.
pub fn conda_prefixes(root: &Root, env: &Env) -> Vec<PathBuf> {
    let mut prefixes: Vec<PathBuf> = env.get("CONDA_PREFIX").map(PathBuf::from).into_iter().collect();
    let mut bases = vec![PathBuf::from("/opt")];
    bases.extend(homes(root, env));
    for base in &bases {
        for name in [
            "conda",
            "miniconda3",
            "anaconda3",
            "miniforge3",
            "mambaforge",
            ".conda",
        ] {
            let b = base.join(name);
            if root.exists(&b.join("conda-meta")) || root.exists(&b.join("envs")) {
                prefixes.push(b.clone());
                prefixes.extend(root.read_dir(&b.join("envs")).unwrap_or_default());
            }
        }
    }
    prefixes.sort();
    prefixes.dedup();
    prefixes
}

/// The site-packages of every Python environment found (real paths, each once): those of the conda
/// `prefixes`, `VIRTUAL_ENV`, the system's, the usual virtual environments of each home, every Python on
/// `PATH`, and each `PYTHONPATH` directory (where `pip install --target` puts packages).
pub fn python_sites(root: &Root, env: &Env, prefixes: &[PathBuf]) -> Vec<PathBuf> {
    let mut sites = Vec::new();
    for p in prefixes {
        site_dirs_under(root, p, &mut sites);
    }
    let mut venvs: Vec<PathBuf> = env.get("VIRTUAL_ENV").map(PathBuf::from).into_iter().collect();
    venvs.extend([
        PathBuf::from("/usr"),
        PathBuf::from("/usr/local"),
        PathBuf::from("/opt/venv"),
    ]);
    for h in homes(root, env) {
        venvs.extend([h.join(".local"), h.join(".venv"), h.join("venv")]);
    }
    // Every Python on PATH is an environment the user runs: `/opt/torch/.venv/bin/python3` → `/opt/torch/.venv`.
    for dir in env
        .get("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| d.ends_with("/bin"))
    {
        let bin = Path::new(dir);
        if ["python3", "python"].iter().any(|p| root.exists(&bin.join(p)))
            && let Some(prefix) = bin.parent()
        {
            venvs.push(prefix.to_path_buf());
        }
    }
    for v in &venvs {
        site_dirs_under(root, v, &mut sites);
    }
    sites.extend(
        env.get("PYTHONPATH")
            .unwrap_or_default()
            .split(':')
            .filter(|d| d.starts_with('/'))
            .map(PathBuf::from),
    );
    let mut unique = Vec::new();
    for site in sites {
        if let Ok(real) = root.resolve(&site)
            && !unique.contains(&real)
        {
            unique.push(real);
        }
    }
    unique
}
