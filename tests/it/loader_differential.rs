//! Differential test: the loader emulation against glibc's own resolution, on a few hundred ELF files of the
//! machine the tests run on. For every library glibc's trace mode lists (`LD_TRACE_LOADED_OBJECTS=1 ld.so FILE`,
//! what `ldd` runs; it maps libraries and runs none of the file's code), cudadiag must resolve the same path, or
//! equally find nothing. `scripts/loader-differential.py` runs the same comparison over every ELF file.

use crate::support::loader_build as build;

use cudadiag::facts::BinaryFacts;
use cudadiag::inspect;
use cudadiag::system::{Env, Root};
use std::io::Read;
use std::path::{Path, PathBuf};

/// How many files the test compares (the script does them all).
const FILES: usize = 300;

fn is_elf64_object(p: &Path) -> bool {
    let mut h = [0u8; 20];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut h))
        .is_ok()
        && &h[..4] == b"\x7fELF"
        && h[4] == 2
        && (h[16] == 2 || h[16] == 3)
}

fn sample() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for dir in [
        "/usr/bin",
        "/usr/sbin",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/libexec",
    ] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            let Ok(real) = std::fs::canonicalize(&p) else {
                continue;
            };
            if real.is_file() && is_elf64_object(&real) && seen.insert(real.clone()) {
                out.push(real);
            }
        }
    }
    // Spread the sample over the whole list rather than its first names.
    let step = (out.len() / FILES).max(1);
    out.into_iter().step_by(step).take(FILES).collect()
}

#[test]
fn resolution_matches_glibc_on_system_files() {
    if crate::support::skip::system_ldso().is_none() {
        return;
    }
    let files = sample();
    assert!(files.len() >= 50, "too few ELF files to compare: {}", files.len());
    let (root, env) = (Root::host(), Env::empty());
    // Four workers whatever the machine has: the read-ahead of likely files (on only with spare cores) and
    // the background `.rodata` searches are both in play, and must change no answer (checked below against a
    // resolution with a single worker, which reads nothing ahead).
    let mut shared = cudadiag::loader::Files::with_threads(4);
    let mut plain = cudadiag::loader::Files::with_threads(1);
    let (mut compared, mut differences) = (0usize, Vec::new());
    for f in &files {
        let Some(want) = build::glibc_list(f, &[]) else {
            continue;
        };
        if want.is_empty() {
            continue; // static, or not something ld.so loads
        }
        // Only the loader facts: the fatbin reader is not under test here, and this keeps the test fast.
        let Ok(view) = inspect::loader_view(f, inspect::RodataScan::CudaObjects) else {
            continue;
        };
        let b = BinaryFacts {
            elf: view.elf,
            ..BinaryFacts::default()
        };
        let Some(r) = cudadiag::loader::resolve_with(&root, &env, f, &b, &mut shared) else {
            differences.push(format!("{}: glibc resolves it, cudadiag does not", f.display()));
            continue;
        };
        if compared < 2000 {
            let alone = cudadiag::loader::resolve_with(&root, &env, f, &b, &mut plain);
            assert_eq!(
                alone.as_ref(),
                Some(&r),
                "{}: read ahead or not, one answer",
                f.display()
            );
        }
        for (name, path) in want {
            compared += 1;
            let got = r
                .libraries
                .iter()
                .filter(|l| !l.dlopen)
                .find(|l| l.soname == name || l.path.as_deref() == Some(name.as_str()))
                .map(|l| l.path.clone());
            if got != Some(path.clone()) {
                differences.push(format!(
                    "{}: {name}: glibc {path:?}, cudadiag {got:?}",
                    f.display()
                ));
            }
        }
    }
    assert!(compared > 200, "only {compared} libraries compared");
    assert!(
        differences.is_empty(),
        "{} of {compared} differ:\n{}",
        differences.len(),
        differences.join("\n")
    );
}
