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

use crate::system::{Env, Root};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The most directory entries counted (a cache holds an `index` file and sixteen subdirectories).
const ENTRIES: usize = 4096;

/// The JIT cache as the diagnosed program would see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JitCacheFacts {
    /// The cache directory (machine path).
    pub path: String,
    /// Where the path came from: `CUDA_CACHE_PATH`, or `HOME` (the default `$HOME/.nv/ComputeCache`).
    pub from: String,
    /// `CUDA_CACHE_DISABLE` is set to a value other than `0`: nothing is read from or written to the cache.
    pub disabled: bool,
    /// `CUDA_CACHE_MAXSIZE`, when set and a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<u64>,
    /// What the directory holds.
    pub dir: CacheDir,
}

/// What the cache directory holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum CacheDir {
    /// No such directory: no earlier run cached anything there.
    Missing,
    /// The directory exists and is empty.
    Empty,
    /// The directory has entries (counted up to a bound).
    Holds {
        /// How many entries its top level lists.
        entries: usize,
    },
    /// The directory could not be listed.
    Unreadable {
        /// Why.
        reason: String,
    },
}

impl JitCacheFacts {
    /// May an earlier run's compile be loaded from this cache: caching on, and a directory with entries?
    pub fn may_hold_compiles(&self) -> bool {
        !self.disabled && matches!(self.dir, CacheDir::Holds { .. })
    }

    /// One line for a finding's evidence.
    pub fn describe(&self) -> String {
        let state = match &self.dir {
            CacheDir::Missing => "does not exist".to_string(),
            CacheDir::Empty => "is empty".to_string(),
            CacheDir::Holds { entries } => format!("holds {entries} entries"),
            CacheDir::Unreadable { reason } => format!("cannot be listed ({reason})"),
        };
        let mut s = format!("JIT cache {} (from {}) {state}", self.path, self.from);
        if self.disabled {
            s.push_str("; CUDA_CACHE_DISABLE turns it off");
        }
        if let Some(m) = self.max_size {
            s.push_str(&format!("; CUDA_CACHE_MAXSIZE={m}"));
        }
        s
    }
}

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
