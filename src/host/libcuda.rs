//! Which files the dynamic loader could pick for the driver's sonames (`libcuda.so.1`, `libnvidia-ml.so.1`).
//!
//! Static cudart and the frameworks `dlopen("libcuda.so.1")` (DESIGN.md "Knowledge the rules need"), so what
//! matters is the loader's search for that exact name: `LD_LIBRARY_PATH`, then `/etc/ld.so.cache`, then the
//! default directories (ld.so(8)). A dlopen from the main program also honours its RPATH/RUNPATH; those are per
//! binary and belong to the loader emulation.
//!
//! This is a small, deliberately plain version of that search, kept apart so that the loader emulation
//! (`src/loader/`, issue 3) can replace [`search_dirs`] with its glibc-faithful one when it lands. The rules only
//! see the resulting [`LibCandidate`] list, so they do not change when the search does. Approximations here:
//! no hwcaps subdirectories; when the machine has no ld.so.cache, the directories of `/etc/ld.so.conf` (with
//! its `include` globs) stand in for it, which is what `ldconfig` would put in the cache.
//!
//! Kinds: a file under a `stubs` directory is the toolkit's link stub (error 34, research/compat.md §9); one
//! under a `compat` directory is a forward-compatibility libcuda (`/usr/local/cuda-X.Y/compat`, compat.md §3);
//! one under `/usr/lib/wsl` is WSL2's.

use super::model::{FoundVia, LibCandidate, LibKind};
use crate::system::{Env, Root};
use std::path::{Path, PathBuf};

/// The loader's built-in directories, as Debian/Ubuntu (multiarch) and Red Hat (lib64) glibc builds have them.
pub const DEFAULT_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// One directory of the search and how it got there, or, for the cache, one exact file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchStep {
    /// A directory to look in.
    pub dir: PathBuf,
    /// Why it is searched.
    pub via: FoundVia,
}

/// The search order for `soname`: `LD_LIBRARY_PATH` directories, then the directories that ld.so.cache lists
/// for that name (or ld.so.conf's when there is no cache), then the defaults.
pub fn search_dirs(root: &Root, env: &Env, soname: &str) -> Vec<SearchStep> {
    let mut steps = Vec::new();
    for d in env.get("LD_LIBRARY_PATH").unwrap_or_default().split([':', ';']) {
        if !d.is_empty() {
            steps.push(SearchStep {
                dir: PathBuf::from(d),
                via: FoundVia::LdLibraryPath,
            });
        }
    }
    match root.read(Path::new("/etc/ld.so.cache")) {
        Ok(bytes) => {
            for path in cache_entries(&bytes, soname) {
                if let Some(dir) = Path::new(&path).parent() {
                    steps.push(SearchStep {
                        dir: dir.to_path_buf(),
                        via: FoundVia::LdSoCache,
                    });
                }
            }
        }
        Err(_) => {
            for dir in conf_dirs(root, Path::new("/etc/ld.so.conf"), 0) {
                steps.push(SearchStep {
                    dir,
                    via: FoundVia::LdSoConf,
                });
            }
        }
    }
    for d in DEFAULT_DIRS {
        steps.push(SearchStep {
            dir: PathBuf::from(d),
            via: FoundVia::DefaultPath,
        });
    }
    steps
}

/// The directories an ld.so.conf names, `include` lines followed (one `*` glob in the file name part).
pub fn conf_dirs(root: &Root, file: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if depth > 8 {
        return out;
    }
    let Ok(text) = root.read_to_string(file) else {
        return out;
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        if let Some(pattern) = line.strip_prefix("include") {
            for f in glob(root, file, pattern.trim()) {
                out.extend(conf_dirs(root, &f, depth + 1));
            }
        } else if line.starts_with('/') {
            // `dir=TYPE` (libc5 era) still names a directory.
            let dir = line.split('=').next().unwrap_or(line).trim();
            out.push(PathBuf::from(dir));
        }
    }
    out
}

fn glob(root: &Root, conf: &Path, pattern: &str) -> Vec<PathBuf> {
    let full = if pattern.starts_with('/') {
        PathBuf::from(pattern)
    } else {
        conf.parent().unwrap_or(Path::new("/")).join(pattern)
    };
    let (Some(dir), Some(name)) = (full.parent(), full.file_name()) else {
        return Vec::new();
    };
    let name = name.to_string_lossy();
    let Some((pre, post)) = name.split_once('*') else {
        return vec![full];
    };
    root.read_dir(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.len() >= pre.len() + post.len() && n.starts_with(pre) && n.ends_with(post)
            })
        })
        .collect()
}

/// The paths the ld.so.cache lists for `soname`, in cache order (read by the loader's cache parser,
/// `loader::cache`, which follows glibc's `elf/cache.c` in all three formats).
pub fn cache_entries(bytes: &[u8], soname: &str) -> Vec<String> {
    cache_pairs(bytes)
        .into_iter()
        .filter(|(k, _)| k == soname)
        .map(|(_, v)| v)
        .collect()
}

/// Every `(soname, path)` pair of an ld.so.cache, in cache order; an unreadable cache has none.
pub fn cache_pairs(bytes: &[u8]) -> Vec<(String, String)> {
    crate::loader::cache::LdCache::parse(bytes)
        .map(|c| c.entries.into_iter().map(|e| (e.name, e.path)).collect())
        .unwrap_or_default()
}

/// The kind of a driver library, from where it lives.
pub fn kind_of(path: &Path, real: &Path) -> LibKind {
    let has = |p: &Path, name: &str| p.components().any(|c| c.as_os_str() == name);
    if has(path, "stubs") || has(real, "stubs") {
        LibKind::Stub
    } else if has(path, "compat") || has(real, "compat") {
        LibKind::Compat
    } else if path.starts_with("/usr/lib/wsl") || real.starts_with("/usr/lib/wsl") {
        LibKind::Wsl
    } else {
        LibKind::Driver
    }
}

/// The driver version in a real file name (`libcuda.so.550.90.07` → `550.90.07`).
pub fn version_in_name(real: &Path, stem: &str) -> Option<String> {
    let name = real.file_name()?.to_str()?;
    let v = name.strip_prefix(stem)?.strip_prefix('.')?;
    super::driver::is_driver_version(v).then(|| v.to_string())
}

/// Every file the search finds for `soname`, in search order, each real file once.
pub fn candidates(root: &Root, env: &Env, soname: &str) -> Vec<LibCandidate> {
    let stem = soname.split(".so").next().unwrap_or(soname).to_string() + ".so";
    let mut out: Vec<LibCandidate> = Vec::new();
    for step in search_dirs(root, env, soname) {
        let path = step.dir.join(soname);
        let Ok(real) = root.resolve(&path) else {
            continue;
        };
        if !root.metadata(&real).is_ok_and(|m| m.is_file()) {
            continue;
        }
        if out.iter().any(|c| Path::new(&c.real_path) == real) {
            continue;
        }
        out.push(LibCandidate {
            path: path.display().to_string(),
            real_path: real.display().to_string(),
            version: version_in_name(&real, &stem),
            kind: kind_of(&path, &real),
            found_via: step.via,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a new-format cache with the given (key, value) entries.
    pub fn cache(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let mut offs = Vec::new();
        let table = 48 + entries.len() * 24;
        for (k, v) in entries {
            let ko = table + strings.len();
            strings.extend_from_slice(k.as_bytes());
            strings.push(0);
            let vo = table + strings.len();
            strings.extend_from_slice(v.as_bytes());
            strings.push(0);
            offs.push((ko as u32, vo as u32));
        }
        let mut b = b"glibc-ld.so.cache1.1".to_vec();
        b.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        b.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        b.resize(48, 0);
        for (k, v) in offs {
            b.extend_from_slice(&0x0303i32.to_le_bytes());
            b.extend_from_slice(&k.to_le_bytes());
            b.extend_from_slice(&v.to_le_bytes());
            b.extend_from_slice(&[0; 12]);
        }
        b.extend_from_slice(&strings);
        b
    }

    #[test]
    fn reads_the_cache() {
        let c = cache(&[
            ("libcuda.so.1", "/usr/local/cuda-12.4/compat/libcuda.so.1"),
            ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"),
            ("libcuda.so.1", "/lib/x86_64-linux-gnu/libcuda.so.1"),
        ]);
        assert_eq!(
            cache_entries(&c, "libcuda.so.1"),
            vec![
                "/usr/local/cuda-12.4/compat/libcuda.so.1",
                "/lib/x86_64-linux-gnu/libcuda.so.1"
            ]
        );
        assert!(cache_entries(&c[..60], "libcuda.so.1").is_empty());
        assert!(cache_entries(b"junk", "libcuda.so.1").is_empty());
    }

    #[test]
    fn kinds_and_versions() {
        let p = Path::new("/usr/local/cuda-12.4/lib64/stubs/libcuda.so.1");
        assert_eq!(kind_of(p, p), LibKind::Stub);
        let p = Path::new("/usr/local/cuda-12.8/compat/libcuda.so.1");
        assert_eq!(kind_of(p, p), LibKind::Compat);
        let p = Path::new("/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07");
        assert_eq!(kind_of(p, p), LibKind::Driver);
        assert_eq!(version_in_name(p, "libcuda.so").as_deref(), Some("550.90.07"));
        assert_eq!(
            version_in_name(Path::new("/usr/lib/wsl/lib/libcuda.so.1.1"), "libcuda.so"),
            None
        );
    }
}
