//! The machine's glibc release, read from the `libc.so.6` its loader resolves, never by running it.
//!
//! The file is the one the loader's search for `libc.so.6` finds first ([`super::libcuda::candidates`]:
//! `LD_LIBRARY_PATH`, `/etc/ld.so.cache`, the default directories, files of another class or machine passed
//! over), read through the [`Root`], so `--root` and snapshots answer for the machine they describe. The
//! release comes from glibc's banner in `.rodata`, else from the highest `GLIBC_x.y` the library defines
//! ([`crate::glibc`]; `docs/glibc-floor.md`).

use crate::facts::host::{GlibcFacts, GlibcSource};
use crate::loader::cache::LdCache;
use crate::loader::platform::Platform;
use crate::system::{Env, Root};
use std::path::Path;

/// The glibc of the machine at `root` for programs of the loader `p`; `None` when no `libc.so.6` is found or
/// none of its release can be read.
pub fn collect(root: &Root, env: &Env, p: &Platform, cache: Option<&LdCache>) -> Option<GlibcFacts> {
    let libc = super::libcuda::candidates(root, env, p, cache, "libc.so.6")
        .into_iter()
        .next()?;
    let (banner, defs) = crate::inspect::libc_release_at(&root.host_path(Path::new(&libc.real_path)))?;
    let (version, source, evidence) = match banner {
        Some(b) => (
            b.version,
            GlibcSource::Banner,
            format!("{:?} at offset {:#x}", b.line, b.offset),
        ),
        None => {
            let v = crate::glibc::highest_defined(&defs)?;
            let evidence = format!("no banner; the highest version it defines is GLIBC_{v} (DT_VERDEF)");
            (v, GlibcSource::Verdef, evidence)
        }
    };
    Some(GlibcFacts {
        version,
        source,
        path: libc.path,
        real_path: libc.real_path,
        evidence,
    })
}
