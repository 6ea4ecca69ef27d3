//! The loader's parsers of untrusted bytes (a library it maps, `/etc/ld.so.cache`, an interpreter's image)
//! under deterministic mutations and truncations of real files, through the entry points the fuzz targets use
//! (`cudadiag::fuzzing`): each must return, whatever the bytes. Then one whole resolution over damaged files.

use crate::support;
use crate::support::loader_build as build;

use cudadiag::fuzzing;
use cudadiag::inspect::{self, InspectOptions};
use cudadiag::loader;
use cudadiag::system::{Env, Root};
use std::path::Path;
use support::Rng;

/// `iterations` mutants of `original`: 1–4 bytes set to 0, 0xff or a random value, mostly in the first
/// `hot` bytes (headers, dynamic section, version tables lie there in small files), plus truncations.
fn mutants(original: &[u8], hot: usize, iterations: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(iterations + 32);
    for i in 0..iterations {
        let mut m = original.to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = if i % 4 == 0 {
                rng.below(m.len())
            } else {
                rng.below(hot.min(m.len()))
            };
            m[at] = match rng.below(4) {
                0 => 0,
                1 => 0xff,
                _ => rng.next() as u8,
            };
        }
        out.push(m);
    }
    for _ in 0..32 {
        out.push(original[..rng.below(original.len())].to_vec());
    }
    out
}

/// A small shared library with version definitions, versioned imports from libc and a GNU hash table.
fn versioned_library(dir: &Path) -> Vec<u8> {
    std::fs::create_dir_all(dir).unwrap();
    let src = build::source(
        dir,
        "v",
        "#include <stdlib.h>\nint foo(void) { return abs(-1); }\nint bar(void) { return atoi(\"2\"); }\n",
    );
    let map = dir.join("v.map");
    std::fs::write(
        &map,
        "V_1 { global: foo; local: *; };\nV_2 { global: bar; } V_1;\n",
    )
    .unwrap();
    let out = dir.join("libv.so.1");
    build::cc(&[
        "-shared",
        "-fPIC",
        "-Wl,-soname,libv.so.1",
        "-Wl,--hash-style=gnu",
        &format!("-Wl,--version-script={}", map.display()),
        "-o",
        &out.to_string_lossy(),
        &src.to_string_lossy(),
    ]);
    std::fs::read(out).unwrap()
}

#[test]
fn mutated_libraries_caches_and_interpreters_never_panic() {
    let t = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let lib = versioned_library(&t.path().join("lib"));
    let mut objects = vec![(lib, 1000)];
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/multi");
    objects.push((std::fs::read(fixture).unwrap(), 300));
    if let Ok(libm) = std::fs::read("/lib/x86_64-linux-gnu/libm.so.6") {
        objects.push((libm, 150));
    }
    for (original, n) in &objects {
        fuzzing::loader_object(original);
        for m in mutants(original, 4096, *n, &mut rng) {
            fuzzing::loader_object(&m);
        }
    }
    let mut caches: Vec<Vec<u8>> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts"))
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("root/etc/ld.so.cache")).ok())
            .collect();
    caches.extend(std::fs::read("/etc/ld.so.cache"));
    assert!(!caches.is_empty());
    for original in &caches {
        fuzzing::ld_cache(original);
        for m in mutants(original, 256, 400, &mut rng) {
            fuzzing::ld_cache(&m);
        }
    }
    if let Some(ldso) = crate::support::skip::system_ldso() {
        let original = std::fs::read(ldso).unwrap();
        for m in mutants(&original, original.len(), 100, &mut rng) {
            fuzzing::ld_so_image(&m);
        }
    }
}

/// A program whose NEEDED library, cache and interpreter are all damaged still gets a resolution: the
/// damaged library is a finding's evidence (or not found), never a panic.
#[test]
fn a_resolution_over_damaged_files_completes() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let dep = build::lib(&root.join("usr/lib64"), "libdep.so.1", "dep", &[], &[]);
    let main = build::exe(&root.join("app/main"), &[&dep], &[]);
    let facts = inspect::path(&main, &InspectOptions::default()).expect("inspect");
    let original = std::fs::read(&dep).unwrap();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::create_dir_all(root.join("lib64")).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (i, m) in mutants(&original, 2048, 120, &mut rng).into_iter().enumerate() {
        std::fs::write(&dep, &m).unwrap();
        std::fs::write(root.join("etc/ld.so.cache"), &m[..m.len().min(64 + i)]).unwrap();
        std::fs::write(root.join("lib64/ld-linux-x86-64.so.2"), &m).unwrap();
        let r = loader::resolve(&Root::at(root), &Env::empty(), &main, &facts[0]).expect("an ELF program");
        assert!(r.libraries.iter().any(|l| l.soname == "libdep.so.1"));
        let _ = cudadiag::rules::loader::evaluate(std::slice::from_ref(&r));
    }
}

/// Every input a fuzzing campaign crashed on (`tests/data/fuzz/TARGET-what-it-broke`), through the entry point
/// of its target: each must return. The first: a `DT_HASH` address near `u64::MAX` overflowed the offset of
/// the table's symbol count (found by `loader_object`).
#[test]
fn fuzz_crash_inputs_return() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz");
    let mut ran = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(&path).unwrap();
        match name.split('-').next().unwrap() {
            "loader_object" => fuzzing::loader_object(&data),
            "ld_cache" => fuzzing::ld_cache(&data),
            "ld_so_image" => fuzzing::ld_so_image(&data),
            "host_root" => fuzzing::host_root(&data),
            "wheel" => fuzzing::wheel(&data),
            "snapshot" => fuzzing::snapshot(&String::from_utf8_lossy(&data)),
            "config_text" => fuzzing::config_text(&String::from_utf8_lossy(&data)),
            other => panic!("{name}: no fuzz target called {other}"),
        }
        ran += 1;
    }
    assert!(ran >= 1, "no crash inputs under {}", dir.display());
}
