//! `ld.so.cache` reading against caches written by the real `ldconfig`, in each of its formats (`new`,
//! `compat` = old with the new table embedded, `old`), with a glibc-hwcaps subdirectory entry.

#[path = "support/loader_build.rs"]
mod build;

use cudadiag::loader::cache::LdCache;
use std::path::{Path, PathBuf};
use std::process::Command;

fn ldconfig() -> Option<PathBuf> {
    ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn write_cache(ldconfig: &Path, conf: &Path, out: &Path, format: &str) -> bool {
    Command::new(ldconfig)
        .arg("-C")
        .arg(out)
        .arg("-f")
        .arg(conf)
        .args(["-c", format])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn caches_written_by_ldconfig_are_read_in_every_format() {
    let Some(ldconfig) = ldconfig() else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("lib");
    build::lib(&dir, "libplain.so.1", "p", &[], &[]);
    build::lib(&dir, "libhw.so.1", "h", &[], &[]);
    build::lib(&dir.join("glibc-hwcaps/x86-64-v2"), "libhw.so.1", "h", &[], &[]);
    let conf = t.path().join("ld.so.conf");
    std::fs::write(&conf, format!("{}\n", dir.display())).unwrap();
    let mut read = 0;
    for format in ["new", "compat", "old"] {
        let out = t.path().join(format!("cache.{format}"));
        if !write_cache(&ldconfig, &conf, &out, format) {
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

#[test]
fn the_machine_cache_finds_every_entry() {
    let Ok(d) = std::fs::read("/etc/ld.so.cache") else {
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
