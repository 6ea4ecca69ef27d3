//! The driver's JIT cache (the "compute cache"): where PTX compiled at run time is kept for later runs.
//!
//! CUDA C++ Programming Guide, "CUDA Environment Variables" (JIT compilation; summarised with sources in
//! `docs/jit-cache.md`): `CUDA_CACHE_DISABLE=1` turns the cache off; `CUDA_CACHE_PATH` names its directory,
//! by default `~/.nv/ComputeCache` on Linux (the HOME of the process); `CUDA_CACHE_MAXSIZE` bounds it in bytes.
//! `CUDA_DISABLE_PTX_JIT=1` forbids compiling PTX, but a kernel whose compile an earlier run cached still
//! loads from the cache: a PTX-only program then runs on a machine where it "cannot" (observed on an H200,
//! issue 21). Whether the cache holds that exact kernel cannot be read from outside (entries are keyed by
//! the driver on a hash of the PTX and its options), so what is recorded is whether it may: the directory
//! exists and holds entries, and caching is on.

use crate::facts::host::{CacheDir, JitCacheFacts};
use crate::system::{Env, Root};
use std::path::Path;

/// The most directory entries counted (a cache holds an `index` file and sixteen subdirectories).
const ENTRIES: usize = 4096;

/// Reads the cache's settings from the environment and its directory through the root. `None` when neither
/// `CUDA_CACHE_PATH` nor `HOME` says where it is.
pub fn collect(root: &Root, env: &Env) -> Option<JitCacheFacts> {
    let (path, from) = match env.get("CUDA_CACHE_PATH").filter(|p| !p.is_empty()) {
        Some(p) => (p.to_string(), "CUDA_CACHE_PATH"),
        None => {
            let home = env.get("HOME").filter(|h| h.starts_with('/'))?;
            (format!("{}/.nv/ComputeCache", home.trim_end_matches('/')), "HOME")
        }
    };
    let disabled = env
        .get("CUDA_CACHE_DISABLE")
        .is_some_and(|v| !v.trim().is_empty() && v.trim() != "0");
    let max_size = env.get("CUDA_CACHE_MAXSIZE").and_then(|v| v.trim().parse().ok());
    let dir = match root.read_dir(Path::new(&path)) {
        Ok(entries) if entries.is_empty() => CacheDir::Empty,
        Ok(entries) => CacheDir::Holds {
            entries: entries.len().min(ENTRIES),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => CacheDir::Missing,
        Err(e) => CacheDir::Unreadable {
            reason: e.to_string(),
        },
    };
    Some(JitCacheFacts {
        path,
        from: from.to_string(),
        disabled,
        max_size,
        dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::put;

    #[test]
    fn location_settings_and_contents() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::at(t.path());
        let mut env = Env::empty();
        assert_eq!(collect(&root, &env), None);
        env.set("HOME", "/home/u/");
        let c = collect(&root, &env).unwrap();
        assert_eq!(
            (c.path.as_str(), c.dir.clone()),
            ("/home/u/.nv/ComputeCache", CacheDir::Missing)
        );
        put(t.path(), "/home/u/.nv/ComputeCache/index", b"x");
        assert!(collect(&root, &env).unwrap().may_hold_compiles());
        env.set("CUDA_CACHE_DISABLE", "1");
        assert!(!collect(&root, &env).unwrap().may_hold_compiles());
        env.set("CUDA_CACHE_DISABLE", "0");
        std::fs::create_dir_all(t.path().join("tmp/empty")).unwrap();
        env.set("CUDA_CACHE_PATH", "/tmp/empty");
        env.set("CUDA_CACHE_MAXSIZE", "268435456");
        let c = collect(&root, &env).unwrap();
        assert_eq!(c.dir, CacheDir::Empty);
        assert_eq!(c.from, "CUDA_CACHE_PATH");
        assert_eq!(c.max_size, Some(268435456));
        assert!(!c.may_hold_compiles());
    }
}
