//! `ld.so.cache` reading against caches written by the real `ldconfig`, in each of its formats (`new`,
//! `compat` = old with the new table embedded, `old`), with a glibc-hwcaps subdirectory entry.

use crate::support::loader_build as build;

use cudadiag::loader::cache::LdCache;
use std::path::{Path, PathBuf};
use std::process::Command;

fn ldconfig() -> Option<PathBuf> {
    ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Runs `ldconfig` to write the cache `out` (in `format`) for an ld.so.conf that lists `dir` (written beside
/// `out`); false when this ldconfig does not write that format.
fn write_cache(ldconfig: &Path, dir: &Path, out: &Path, format: &str) -> bool {
    let conf = out.with_extension("conf");
    std::fs::write(&conf, format!("{}\n", dir.display())).unwrap();
    Command::new(ldconfig)
        .arg("-C")
        .arg(out)
        .arg("-f")
        .arg(&conf)
        .args(["-c", format])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn caches_written_by_ldconfig_are_read_in_every_format() {
    let Some(ldconfig) = ldconfig() else {
        crate::support::skip::optional("no ldconfig in /sbin or /usr/sbin to write caches with");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("lib");
    build::lib(&dir, "libplain.so.1", "p", &[], &[]);
    build::lib(&dir, "libhw.so.1", "h", &[], &[]);
    build::lib(&dir.join("glibc-hwcaps/x86-64-v2"), "libhw.so.1", "h", &[], &[]);
    let mut read = 0;
    for format in ["new", "compat", "old"] {
        let out = t.path().join(format!("cache.{format}"));
        if !write_cache(&ldconfig, &dir, &out, format) {
            continue; // this ldconfig does not write that format
        }
        read += 1;
        let cache = LdCache::parse(&std::fs::read(&out).unwrap()).unwrap();
        let expected = match format {
            "new" => "new",
            "compat" => "old+new",
            _ => "old",
        };
        assert_eq!(cache.format, expected);
        let plain = cache
            .lookup("libplain.so.1", 0x0303, &[], 1)
            .expect("libplain in the cache");
        assert_eq!(Path::new(&plain.path), dir.join("libplain.so.1"));
        // Every name ldconfig wrote is found by the binary search (the sort order is ldconfig's).
        for e in cache
            .entries
            .iter()
            .filter(|e| e.hwcaps.is_none() && e.flags == 0x0303)
        {
            assert!(cache.lookup(&e.name, 0x0303, &[], 1).is_some(), "{}", e.name);
        }
        if format != "old" {
            let hw = cache
                .lookup("libhw.so.1", 0x0303, &["x86-64-v2".to_string()], 2)
                .expect("libhw");
            assert_eq!(Path::new(&hw.path), dir.join("glibc-hwcaps/x86-64-v2/libhw.so.1"));
            // A CPU without x86-64-v2 gets the baseline copy.
            let base = cache
                .lookup("libhw.so.1", 0x0303, &[], 1)
                .expect("libhw baseline");
            assert_eq!(Path::new(&base.path), dir.join("libhw.so.1"));
        }
        assert!(cache.lookup("libabsent.so.1", 0x0303, &[], 1).is_none());
    }
    assert!(read >= 1, "ldconfig wrote no cache");
}

/// An ldconfig older than 2.37 writes legacy hwcap entries for libraries in `tls/`, `x86_64/`, `haswell/` and
/// `tls/haswell/` (glibc 2.26–2.36 loaders take them by their bits); a newer one writes the plain entry only.
#[test]
fn legacy_hwcap_entries_of_the_machines_ldconfig() {
    use cudadiag::loader::platform::legacy_x86_64_hwcaps;
    let Some(ldconfig) = ldconfig() else {
        crate::support::skip::optional("no ldconfig in /sbin or /usr/sbin to write caches with");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("lib");
    for sub in ["", "tls", "x86_64", "haswell", "tls/haswell"] {
        build::lib(&dir.join(sub), "libq.so.1", "q", &[], &[]);
    }
    let out = t.path().join("cache");
    assert!(write_cache(&ldconfig, &dir, &out, "new"));
    let cache = LdCache::parse(&std::fs::read(&out).unwrap()).unwrap();
    let at = |sub: &str| dir.join(sub).join("libq.so.1");
    let pick = |legacy| {
        let e = cache
            .lookup_legacy("libq.so.1", 0x0303, &[], 1, legacy)
            .expect("libq");
        std::path::PathBuf::from(&e.path)
    };
    assert_eq!(pick(Default::default()), at(""));
    let legacy: Vec<u64> = cache
        .entries
        .iter()
        .filter(|e| e.name == "libq.so.1" && e.legacy_hwcap != 0)
        .map(|e| e.legacy_hwcap)
        .collect();
    if legacy.is_empty() {
        // glibc ≥ 2.37's ldconfig: no legacy entries to take
        crate::support::skip::optional("this ldconfig writes no legacy hwcap entries (glibc 2.37 or newer)");
        return;
    }
    assert!(
        legacy.contains(&0x8000_0000_0000_0000) && legacy.contains(&0x0004_0000_0000_0000),
        "{legacy:x?}"
    );
    let flags = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
    let amd = legacy_x86_64_hwcaps("AuthenticAMD", &flags("avx2"), "x86_64");
    assert_eq!(pick(amd), at("tls"));
    let intel = legacy_x86_64_hwcaps(
        "GenuineIntel",
        &flags("avx2 fma bmi1 bmi2 abm movbe popcnt"),
        "haswell",
    );
    assert_eq!(pick(intel), at("tls/haswell"));
}

#[test]
fn the_machine_cache_finds_every_entry() {
    let Ok(d) = std::fs::read("/etc/ld.so.cache") else {
        crate::support::skip::optional("no /etc/ld.so.cache on this machine");
        return;
    };
    let cache = LdCache::parse(&d).expect("the machine's cache parses");
    assert!(!cache.entries.is_empty());
    for e in cache.entries.iter().filter(|e| e.hwcaps.is_none()) {
        let found = cache.lookup(&e.name, e.flags, &[], 1);
        assert!(
            found.is_some_and(|f| f.name == e.name),
            "{} not found by lookup",
            e.name
        );
    }
}
