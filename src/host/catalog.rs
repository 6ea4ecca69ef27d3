//! The catalogue of every CUDA library on the machine, with its version and owner.
//!
//! "Which copy won, and why" needs every copy first (`docs/compatibility.md`, "Failures on the host"):
//! toolkits under `/usr/local/cuda*` and `/opt/nvidia`, `CUDA_HOME`/`CUDA_PATH`, the loader's directories,
//! conda environments (`CONDA_PREFIX`, the usual install roots and their `envs/`), and the site-packages of
//! every Python environment found, where pip wheels put `nvidia/*/lib` (CUDA 12) or `nvidia/cu13/lib` (CUDA
//! 13; see NVIDIA/cuda-python `cuda_pathfinder` `descriptor_catalog.py`), and frameworks vendor copies
//! (`torch/lib`, auditwheel's `<pkg>.libs`).
//!
//! The walk is bounded in depth, runs on a few threads, never follows directory links (so link loops cannot
//! trap it), and records unreadable directories and loops as problems instead of failing.

use super::libcuda;
use crate::loader::cache::LdCache;
use crate::python::envs::{conda_prefixes, glob_dirs, python_sites};
use crate::system::{Env, Root};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A CUDA library's file name, as (base name, version suffix): `lib`, one of the libraries below, an optional
/// auditwheel hash, `.so`, numeric version components (`libcudart-d0da41ae.so.11.0` → `libcudart`, `.11.0`).
/// Asked of every file of every directory the catalogue walks (thousands in `/usr/lib/x86_64-linux-gnu`): a
/// few comparisons, where the regular expression it replaces took a compilation and a search each (the test
/// `library_names_are_the_patterns` holds that pattern and compares them).
pub(super) fn lib_name(name: &str) -> Option<(&str, &str)> {
    // No base name and no hash holds a `.`: the first one starts `.so`.
    let (stem, rest) = name.split_at(name.find('.')?);
    let suffix = rest.strip_prefix(".so")?;
    let numeric = |c: &str| !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit());
    if !suffix.is_empty()
        && !suffix
            .strip_prefix('.')
            .is_some_and(|v| v.split('.').all(numeric))
    {
        return None;
    }
    // An auditwheel hash (`-d0da41ae`) cannot end a base name (no base name ends in `-` and 8 hex digits),
    // so at most one of the two readings holds.
    let hashed = stem.len().checked_sub(9).and_then(|i| {
        let (base, hash) = (stem.get(..i)?, stem.get(i..)?);
        let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        (hash.strip_prefix('-')?.bytes().all(hex) && known_base(base)).then_some(base)
    });
    let base = hashed.or_else(|| known_base(stem).then_some(stem))?;
    Some((base, suffix))
}

/// `lib` and a CUDA library's name (`libcublasLt`, `libcudnn_ops`, `libnppial`, `libnvshmem_host`).
fn known_base(base: &str) -> bool {
    let Some(b) = base.strip_prefix("lib") else {
        return false;
    };
    let tail = |prefix: &str, ok: fn(u8) -> bool| b.strip_prefix(prefix).is_some_and(|t| t.bytes().all(ok));
    matches!(
        b,
        "cuda"
            | "cudart"
            | "nvidia-ml"
            | "nvrtc"
            | "nvrtc-builtins"
            | "cublas"
            | "cublasLt"
            | "cufft"
            | "cufftw"
            | "curand"
            | "cusolver"
            | "cusolverMg"
            | "cusparse"
            | "cusparseLt"
            | "nvJitLink"
            | "nvjitlink"
            | "nccl"
            | "nvToolsExt"
            | "cupti"
            | "nvjpeg"
            | "cufile"
            | "cufile_rdma"
            | "nvidia-ptxjitcompiler"
            | "nvvm"
            | "cudla"
            | "cudss"
            | "nvblas"
            | "cudadebugger"
    ) || tail("cudnn", |c| c.is_ascii_lowercase() || c == b'_')
        || tail("npp", |c| c.is_ascii_lowercase())
        || tail("nvshmem", |c| c.is_ascii_lowercase() || c == b'_')
        || tail("cutensor", |c| c.is_ascii_alphabetic())
}

/// Directory names never worth descending into inside a toolkit or package.
const SKIP_DIRS: &[&str] = &[
    "include",
    "doc",
    "docs",
    "share",
    "samples",
    "src",
    "bin",
    "man",
    "libnvvp",
    "tools",
    "__pycache__",
    "nsight-compute",
    "nsight-systems",
    "nsightee_plugins",
    "gds",
    "extras-demo",
];

fn skip_dir(name: &str) -> bool {
    SKIP_DIRS.contains(&name) || name.starts_with("nsight")
}

/// What kind of place a scan root is: it decides where owners and versions are looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    /// A loader directory (owned by dpkg or the driver installer).
    Loader,
    /// A toolkit install (`version.json` at its top).
    Toolkit(PathBuf),
    /// A conda environment's `lib`.
    Conda(PathBuf),
    /// A directory inside a site-packages (the site-packages is the owner lookup root).
    Site(PathBuf),
}

#[derive(Debug, Clone)]
struct ScanRoot {
    dir: PathBuf,
    depth: usize,
    place: Place,
}

/// The kind of library a base name is (`libcublasLt` → `cublas`).
pub fn kind_of_name(base: &str) -> String {
    let b = base.trim_start_matches("lib").to_ascii_lowercase();
    match b.as_str() {
        "cuda" => "libcuda".into(),
        "nvidia-ml" => "nvml".into(),
        "cublaslt" => "cublas".into(),
        b if b.starts_with("cudnn") => "cudnn".into(),
        b if b.starts_with("npp") => "npp".into(),
        b if b.starts_with("nvshmem") => "nvshmem".into(),
        b if b.starts_with("cutensor") => "cutensor".into(),
        _ => b,
    }
}

/// Where to look, in reporting order.
fn scan_roots(root: &Root, env: &Env, cache: Option<&LdCache>) -> Vec<ScanRoot> {
    let mut roots = Vec::new();
    // Loader directories last: one inside a toolkit or an environment is then walked as part of it, and its
    // files get that owner.
    let mut loader_roots = Vec::new();
    let loader = |d: PathBuf| ScanRoot {
        dir: d,
        depth: 1,
        place: Place::Loader,
    };
    for d in env
        .get("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split([':', ';'])
        .filter(|d| d.starts_with('/'))
    {
        loader_roots.push(loader(PathBuf::from(d)));
    }
    for e in cache.map_or(&[][..], |c| &c.entries) {
        // Hundreds of entries, most in one directory: a run of them is one scan root (`scan` would pass
        // over the others).
        if let Some(d) = Path::new(&e.path).parent()
            && loader_roots.last().is_none_or(|l| l.dir.as_path() != d)
        {
            loader_roots.push(loader(d.to_path_buf()));
        }
    }
    for d in crate::loader::copies::ld_so_conf_dirs(root, "/etc/ld.so.conf") {
        loader_roots.push(loader(PathBuf::from(d)));
    }
    for d in libcuda::DEFAULT_DIRS {
        loader_roots.push(loader(PathBuf::from(d)));
    }
    loader_roots.push(loader(PathBuf::from("/usr/lib/wsl/lib")));
    let mut toolkits: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|k| env.get(k).filter(|v| v.starts_with('/')).map(PathBuf::from))
        .collect();
    toolkits.extend(glob_dirs(root, Path::new("/usr/local"), "cuda"));
    toolkits.push(PathBuf::from("/opt/nvidia"));
    for t in toolkits {
        roots.push(ScanRoot {
            dir: t.clone(),
            depth: 5,
            place: Place::Toolkit(t),
        });
    }
    let prefixes = conda_prefixes(root, env);
    for p in &prefixes {
        roots.push(ScanRoot {
            dir: p.join("lib"),
            depth: 1,
            place: Place::Conda(p.clone()),
        });
    }
    for site in python_sites(root, env, &prefixes) {
        site_roots(root, &site, &mut roots);
    }
    roots.extend(loader_roots);
    roots
}

/// Inside one site-packages: `nvidia/` (all of it, bounded), and every top-level package's `lib/` and
/// auditwheel `*.libs/` directory.
fn site_roots(root: &Root, site: &Path, roots: &mut Vec<ScanRoot>) {
    // Resolved once, so that the per-package checks below are one `lstat` each (a site-packages can hold
    // thousands of packages) and so that owner lookups (RECORD paths) and walked paths agree.
    let Ok(site) = root.resolve(site) else {
        return;
    };
    // Metadata directories and modules hold no libraries: passed over by name, before a path is made.
    let package = |n: &std::ffi::OsStr| {
        let name = n.to_string_lossy();
        !(name.ends_with(".dist-info") || name.ends_with(".egg-info") || name.ends_with(".py"))
    };
    let Ok(names) = root.read_dir_names(&site, package) else {
        return;
    };
    let place = Place::Site(site.clone());
    for n in names {
        let e = site.join(&n);
        let name = n.to_string_lossy();
        if name == "nvidia" {
            roots.push(ScanRoot {
                dir: e,
                depth: 4,
                place: place.clone(),
            });
        } else if name.ends_with(".libs") {
            roots.push(ScanRoot {
                dir: e,
                depth: 1,
                place: place.clone(),
            });
        } else if is_dir_here(root, &e.join("lib")) {
            roots.push(ScanRoot {
                dir: e.join("lib"),
                depth: 1,
                place: place.clone(),
            });
        }
    }
}

/// `path` (whose parent is already resolved) is a directory, or a link to one inside the root.
fn is_dir_here(root: &Root, path: &Path) -> bool {
    match std::fs::symlink_metadata(root.host_path(path)) {
        Ok(m) if m.file_type().is_symlink() => root.is_dir(path),
        Ok(m) => m.is_dir(),
        Err(_) => false,
    }
}

/// The usual library link names a plain file in its own (already resolved) directory
/// (`libcudart.so.12 -> libcudart.so.12.4.127`): follow such chains with one `readlink` and one `lstat` per
/// step instead of resolving the whole path again. `None` for anything else (absolute targets, `..`, loops).
fn sibling_target(root: &Root, path: &Path) -> Option<PathBuf> {
    let dir = path.parent()?;
    let mut cur = path.to_path_buf();
    for _ in 0..40 {
        // Linux gives up after 40 links, as Root::resolve does.
        let target = std::fs::read_link(root.host_path(&cur)).ok()?;
        let name = target.to_str()?;
        if name.contains('/') || name == ".." || name == "." {
            return None;
        }
        cur = dir.join(name);
        let m = std::fs::symlink_metadata(root.host_path(&cur)).ok()?;
        if m.is_file() {
            return Some(cur);
        }
        if !m.file_type().is_symlink() {
            return None;
        }
    }
    None
}

/// A library file found by the walk, before owners and versions are looked up.
pub(super) struct Found {
    pub(super) path: PathBuf,
    pub(super) real: PathBuf,
    pub(super) base: String,
    pub(super) suffix: String,
    pub(super) place: Place,
    pub(super) scan_root: PathBuf,
}

fn walk(root: &Root, sr: &ScanRoot, progress: Option<&AtomicUsize>) -> (Vec<Found>, Vec<String>) {
    let (mut found, mut problems) = (Vec::new(), Vec::new());
    let host_dir = root.host_path(&sr.dir);
    let walker = walkdir::WalkDir::new(&host_dir)
        .max_depth(sr.depth)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0 || !e.file_type().is_dir() || !skip_dir(&e.file_name().to_string_lossy())
        });
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                if e.depth() > 0
                    || e.io_error()
                        .is_none_or(|io| io.kind() != std::io::ErrorKind::NotFound)
                {
                    problems.push(format!("{}: {e}", sr.dir.display()));
                }
                continue;
            }
        };
        if entry.file_type().is_dir() {
            if let Some(p) = progress {
                p.fetch_add(1, Ordering::Relaxed);
            }
            continue;
        }
        let name = entry.file_name().to_string_lossy();
        let Some((base, suffix)) = lib_name(&name) else {
            continue;
        };
        let Some(rel) = relative(entry.path(), &host_dir) else {
            continue;
        };
        let path = sr.dir.join(rel);
        // Scan roots are resolved and the walk follows no links, so only a link entry needs resolving; a
        // link to a sibling file ends at a real path that `sibling_target` saw is a regular file.
        let resolved = if entry.path_is_symlink() {
            match sibling_target(root, &path) {
                Some(real) => Ok((real, true)),
                None => root.resolve(&path).map(|r| (r, false)),
            }
        } else {
            Ok((path.clone(), entry.file_type().is_file()))
        };
        let real = match resolved {
            Ok((r, true)) => r,
            Ok((r, false)) if root.is_file(&r) => r,
            Ok((r, _)) => {
                problems.push(format!(
                    "{}: points to {}, not a file",
                    path.display(),
                    r.display()
                ));
                continue;
            }
            Err(e) => {
                problems.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        found.push(Found {
            path,
            real,
            base: base.to_string(),
            suffix: suffix.to_string(),
            place: sr.place.clone(),
            scan_root: sr.dir.clone(),
        });
    }
    (found, problems)
}

/// `path` below `dir`, as `Path::strip_prefix` gives it: walkdir names each entry by joining names onto the
/// directory it was given, so the bytes of `dir` begin it, which is one comparison instead of a walk over the
/// components of both (a long `--root` has many); anything else (an empty or `.` component, which
/// `strip_prefix` drops) takes `strip_prefix`.
fn relative<'a>(path: &'a Path, dir: &Path) -> Option<&'a Path> {
    let rest = path
        .as_os_str()
        .as_bytes()
        .strip_prefix(dir.as_os_str().as_bytes());
    let dir_ends_in_slash = dir.as_os_str().as_bytes().ends_with(b"/");
    match rest.and_then(|r| r.strip_prefix(b"/").or(dir_ends_in_slash.then_some(r))) {
        Some(r) if r.split(|&b| b == b'/').all(|c| !c.is_empty() && c != b".") => {
            Some(Path::new(std::ffi::OsStr::from_bytes(r)))
        }
        _ => path.strip_prefix(dir).ok(),
    }
}

/// Walks every scan root (on up to eight threads) and returns every CUDA library file found, with problems met;
/// `library::describe` looks up their owners and versions.
pub(super) fn scan(
    root: &Root,
    env: &Env,
    cache: Option<&LdCache>,
    progress: Option<&AtomicUsize>,
) -> (Vec<Found>, Vec<String>) {
    // One walk per real directory: `/usr/local/cuda` and `/usr/local/cuda-12.4` are the same tree.
    let mut seen = Vec::new();
    let mut roots = Vec::new();
    // A directory named twice (every `ld.so.cache` entry names its own: hundreds of `/lib/x86_64-linux-gnu`)
    // resolves to the same real one, which the first has walked or found missing: resolved once.
    let mut named = std::collections::HashSet::new();
    for mut sr in scan_roots(root, env, cache) {
        if !named.insert(sr.dir.clone()) {
            continue;
        }
        let Ok(real) = root.resolve(&sr.dir) else {
            continue;
        };
        if seen
            .iter()
            .any(|s: &(PathBuf, usize)| s.0 == real || (s.1 > 1 && real.starts_with(&s.0)))
        {
            continue;
        }
        seen.push((real.clone(), sr.depth));
        if let Place::Toolkit(t) = &sr.place {
            sr.place = Place::Toolkit(root.resolve(t).unwrap_or_else(|_| t.clone()));
        }
        sr.dir = real;
        roots.push(sr);
    }
    let walked = crate::parallel::map(&roots, 8, |sr| walk(root, sr, progress));
    let mut results: Vec<(usize, Found)> = Vec::new();
    let mut problems = Vec::new();
    for (order, (found, probs)) in walked.into_iter().enumerate() {
        results.extend(found.into_iter().map(|x| (order, x)));
        problems.extend(probs);
    }
    results.sort_by(|a, b| (a.0, &a.1.path).cmp(&(b.0, &b.1.path)));
    let mut seen_paths = std::collections::HashSet::new();
    let found: Vec<Found> = results
        .into_iter()
        .map(|(_, f)| f)
        .filter(|f| seen_paths.insert(f.path.clone()))
        .collect();
    // Walks run in any order on any thread: sort, so that two runs on one machine give the same facts.
    problems.sort();
    (found, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names() {
        for (name, base, suffix) in [
            ("libcudart.so.12.4.127", "libcudart", ".12.4.127"),
            ("libcudart.so", "libcudart", ""),
            ("libcudart-d0da41ae.so.11.0", "libcudart", ".11.0"),
            ("libcublasLt.so.12", "libcublasLt", ".12"),
            ("libcudnn_ops.so.9", "libcudnn_ops", ".9"),
            ("libnvidia-ml.so.550.90.07", "libnvidia-ml", ".550.90.07"),
        ] {
            assert_eq!(lib_name(name), Some((base, suffix)), "{name}");
        }
        for name in [
            "libcudart_static.a",
            "libcuda.so.1.txt",
            "libfoo.so",
            "libcudart.so.12~",
        ] {
            assert_eq!(lib_name(name), None, "{name}");
        }
        assert_eq!(kind_of_name("libcublasLt"), "cublas");
        assert_eq!(kind_of_name("libnvidia-ml"), "nvml");
        assert_eq!(kind_of_name("libcudnn_ops"), "cudnn");
    }

    /// The pattern `lib_name` replaced: what it matched, and its captures, are `lib_name`'s answers.
    const PATTERN: &str = r"^(lib(?:cuda|cudart|nvidia-ml|nvrtc|nvrtc-builtins|cublas|cublasLt|cufft|cufftw|curand|cusolver|cusolverMg|cusparse|cusparseLt|cudnn[a-z_]*|nvJitLink|nvjitlink|nccl|nvToolsExt|cupti|npp[a-z]*|nvjpeg|cufile|cufile_rdma|nvidia-ptxjitcompiler|nvvm|cudla|nvshmem[a-z_]*|cudss|cutensor[a-zA-Z]*|nvblas|cudadebugger))(-[0-9a-f]{8})?\.so((?:\.[0-9]+)*)$";

    #[test]
    fn library_names_are_the_patterns() {
        let re = regex::Regex::new(PATTERN).unwrap();
        let mut names = Vec::new();
        let bases = [
            "cuda",
            "cudart",
            "nvidia-ml",
            "nvrtc",
            "nvrtc-builtins",
            "cublas",
            "cublasLt",
            "cufft",
            "cufftw",
            "curand",
            "cusolver",
            "cusolverMg",
            "cusparse",
            "cusparseLt",
            "cudnn",
            "cudnn_ops",
            "cudnn_adv_infer",
            "cudnnX",
            "cudnn9",
            "nvJitLink",
            "nvjitlink",
            "nccl",
            "nvToolsExt",
            "cupti",
            "npp",
            "nppial",
            "nppiAl",
            "nvjpeg",
            "cufile",
            "cufile_rdma",
            "nvidia-ptxjitcompiler",
            "nvvm",
            "cudla",
            "nvshmem",
            "nvshmem_host",
            "nvshmem-host",
            "cudss",
            "cutensor",
            "cutensorMg",
            "cutensor_mg",
            "nvblas",
            "cudadebugger",
            "cu",
            "nv",
            "nvidia",
            "cublaslt",
            "CUDA",
            "cudart-d0da41ae",
            "",
            "ü",
        ];
        let hashes = [
            "",
            "-d0da41ae",
            "-D0DA41AE",
            "-d0da41a",
            "-d0da41aeb",
            "-d0da41ag",
            "d0da41ae1",
        ];
        let suffixes = [
            "",
            ".12",
            ".12.4.127",
            ".",
            ".12.",
            ".12..4",
            ".a",
            "~",
            ".so",
            ".1x",
            "\n",
            ".١٢",
        ];
        for pre in ["lib", "Lib", "", "liblib"] {
            for b in bases {
                for h in hashes {
                    for s in suffixes {
                        names.push(format!("{pre}{b}{h}.so{s}"));
                    }
                    names.push(format!("{pre}{b}{h}"));
                    names.push(format!("{pre}{b}{h}.sox"));
                }
            }
        }
        for dir in [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib64",
            "/usr/local/lib",
            "/usr/lib",
        ] {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                names.push(e.file_name().to_string_lossy().into_owned());
            }
        }
        let mut matched = 0;
        for n in &names {
            let want = re
                .captures(n)
                .map(|c| (c.get(1).unwrap().as_str(), c.get(3).unwrap().as_str()));
            assert_eq!(lib_name(n), want, "{n:?}");
            matched += usize::from(want.is_some());
        }
        assert!(matched > 200, "{matched} of {} names match", names.len());
    }

    #[test]
    fn relative_is_strip_prefix() {
        let dirs = [
            "/r/usr/lib",
            "/r/usr/lib/",
            "/r//usr/lib",
            "/r/./usr",
            "/",
            "rel/dir",
            "/r/usr/li",
        ];
        let paths = [
            "/r/usr/lib",
            "/r/usr/lib/x",
            "/r/usr/lib/a/b.so",
            "/r/usr/libx/y",
            "/r//usr/lib/x",
            "/r/./usr/x",
            "/x",
            "rel/dir/x",
            "/r/usr/lib//x",
            "/r/usr/lib/./x",
            "/r/usr/li/b",
        ];
        for d in dirs {
            for p in paths {
                let (d, p) = (Path::new(d), Path::new(p));
                assert_eq!(
                    relative(p, d).map(|r| r.join("f")),
                    p.strip_prefix(d).ok().map(|r| r.join("f")),
                    "{p:?} under {d:?}"
                );
            }
        }
    }
}
