//! Whether the machine (or `--root`) can load objects of a binary's architecture at all.
//!
//! The kernel starts a dynamically linked program through the interpreter it names (`PT_INTERP`), and that
//! ld.so accepts only objects of its own class and machine (`elf_machine_matches_host`, glibc
//! `sysdeps/*/dl-machine.h`). An aarch64 program on an x86-64 machine has no loader to start it
//! ("cannot execute binary file: Exec format error"); searching for its libc among x86-64 libraries would only
//! report every library as missing. So before the search, the root is asked whether it holds that
//! architecture's loader world:
//! - its interpreter under the root is an ELF file of the binary's machine (a sysroot, an image, a multiarch
//!   or qemu-user install on this machine); or
//! - its `ld.so.cache` lists libraries with that architecture's flags (`_DL_CACHE_DEFAULT_ID`).
//!
//! A root whose cache names no architecture (none, or a damaged one: a bare test tree, a minimal image) is taken
//! to be of the architecture cudadiag runs on, as it always was; a damaged or foreign interpreter alone does not
//! make the binary foreign there.

use super::cache::LdCache;
use super::platform::{Platform, own_machine};
use crate::facts::loader::Foreign;
use crate::inspect::elf::machine_name;
use crate::system::Root;
use std::io::Read;
use std::path::Path;

/// `e_machine` of the ELF file at `path` under the root (its first 20 bytes), if it is one.
fn elf_machine(root: &Root, path: &str) -> Option<u16> {
    let mut h = [0u8; 20];
    root.open(Path::new(path)).ok()?.read_exact(&mut h).ok()?;
    (h[..4] == *b"\x7fELF").then(|| match h[5] {
        2 => u16::from_be_bytes([h[18], h[19]]),
        _ => u16::from_le_bytes([h[18], h[19]]),
    })
}

/// The architecture an `ld.so.cache` flags value names (`FLAG_*_LIB*` of glibc's `elf/cache.c` ORed with
/// `FLAG_ELF_LIBC6`), for the finding's wording.
fn cache_architecture(flags: i32) -> Option<&'static str> {
    Some(match flags {
        0x0303 => "x86_64",
        0x0803 => "x32",
        0x0003 => "i386",
        0x0a03 => "aarch64",
        0x0503 => "ppc64",
        0x0403 => "s390",
        0x0903 => "arm",
        _ => return None,
    })
}

/// `None` when the root can load objects of `p`'s class and machine; else why not. `cache` is the root's
/// parsed `ld.so.cache`, if any.
pub fn check(root: &Root, p: &Platform, cache: Option<&LdCache>) -> Option<Foreign> {
    let interp = elf_machine(root, &p.interpreter);
    if interp == Some(p.machine) {
        return None;
    }
    let entries = cache.map_or(&[][..], |c| c.entries.as_slice());
    // Only the flags of a known architecture are evidence: `FLAG_ELF` (1) entries are taken by every loader,
    // and a damaged cache's are noise.
    let specific = || entries.iter().filter(|e| cache_architecture(e.flags).is_some());
    if p.cache_id.is_some_and(|id| specific().any(|e| e.flags == id)) {
        return None;
    }
    let other_cache = specific().next().is_some();
    if !other_cache && own_machine() == Some(p.machine) {
        return None;
    }
    let needs = machine_name(p.machine);
    let mut evidence = vec![format!(
        "the binary is an ELF file for {needs} ({}-bit): its loader is {}",
        if p.is_64 { 64 } else { 32 },
        p.interpreter
    )];
    evidence.push(match interp {
        Some(m) => format!("{} is a {} file", p.interpreter, machine_name(m)),
        None => format!("{} is not on this machine", p.interpreter),
    });
    // The architecture the cache serves, by the flags most of its entries carry.
    let mut counts: Vec<(i32, usize)> = Vec::new();
    for e in specific() {
        match counts.iter_mut().find(|(f, _)| *f == e.flags) {
            Some((_, n)) => *n += 1,
            None => counts.push((e.flags, 1)),
        }
    }
    let cached = counts
        .iter()
        .max_by_key(|(_, n)| *n)
        .and_then(|(f, _)| cache_architecture(*f));
    if other_cache {
        evidence.push(format!(
            "/etc/ld.so.cache lists no {needs} library ({} entries{})",
            entries.len(),
            cached.map(|a| format!(", for {a}")).unwrap_or_default()
        ));
    }
    let here = cached
        .map(str::to_string)
        .or_else(|| root.is_host().then(|| own_machine().map(machine_name)).flatten());
    Some(Foreign {
        needs,
        here,
        evidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use goblin::elf::header::EM_AARCH64;

    /// A bare root (no loader, no cache) is of the architecture cudadiag runs on; another is foreign, and the
    /// evidence says the loader is missing.
    #[test]
    fn a_bare_root_serves_only_this_build_s_architecture() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::at(t.path());
        if let Some(own) = own_machine() {
            let p = Platform::detect(&root, own, true, None);
            assert_eq!(check(&root, &p, None), None);
        }
        let other = if own_machine() == Some(EM_AARCH64) {
            goblin::elf::header::EM_X86_64
        } else {
            EM_AARCH64
        };
        let p = Platform::detect(&root, other, true, None);
        let f = check(&root, &p, None).expect("foreign");
        assert_eq!(f.needs, machine_name(other));
        assert_eq!(f.here, None, "a --root without a cache does not say what it is");
        assert!(f.evidence[1].ends_with("is not on this machine"), "{f:?}");
        // Its loader present under the root, as an ELF file of its machine: the root serves it.
        let mut elf = vec![0u8; 64];
        elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
        elf[18..20].copy_from_slice(&other.to_le_bytes());
        crate::system::put(t.path(), &p.interpreter, &elf);
        assert_eq!(check(&root, &p, None), None);
    }

    fn cache(flags: &[i32]) -> LdCache {
        LdCache {
            entries: flags
                .iter()
                .map(|&flags| super::super::cache::Entry {
                    name: "libc.so.6".into(),
                    path: "/lib/libc.so.6".into(),
                    flags,
                    hwcaps: None,
                    isa_level: 0,
                    legacy_hwcap: 0,
                })
                .collect(),
            ..LdCache::default()
        }
    }

    /// The root's cache tells its architecture: x86-64 entries make an aarch64 binary foreign (and name the
    /// machine), aarch64 entries serve it, and unknown flags (a damaged cache) say nothing.
    #[test]
    fn the_cache_names_the_root_s_architecture() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::at(t.path());
        let p = Platform::detect(&root, EM_AARCH64, true, None);
        let f = check(&root, &p, Some(&cache(&[0x0303, 0x0303, 1]))).expect("foreign");
        assert_eq!(f.here.as_deref(), Some("x86_64"));
        assert!(
            f.evidence[2].contains("no aarch64 library (3 entries, for x86_64)"),
            "{f:?}"
        );
        assert_eq!(check(&root, &p, Some(&cache(&[0x0303, 0x0a03]))), None);
        let damaged = check(&root, &p, Some(&cache(&[0x7777, 1])));
        assert_eq!(damaged.is_none(), own_machine() == Some(EM_AARCH64));
    }
}
