//! Entry points for the fuzz targets (`fuzz/`) and the mutation tests (`tests/loader_malformed.rs`): each runs
//! every parser the loader emulation applies to one kind of untrusted input, the way the loader applies it.
//! Not part of the stable interface.
//!
//! Every one of them must return, whatever the bytes: no panic, no unbounded allocation, no endless walk.

use crate::inspect::exports::Exports;
use crate::inspect::source::Source;
use crate::inspect::{self, RodataScan};
use crate::loader::cache::{self, LdCache};
use crate::loader::platform;
use goblin::elf::header::{EM_386, EM_AARCH64, EM_X86_64};
use std::sync::Arc;

/// One object's bytes as the loader reads a library it maps: its loader view (dynamic section, version
/// needs, where `.rodata` lies, cut into the parts the search reads), its versioned imports, and its exports,
/// asked for each of those imports and for names it may or may not define.
pub fn loader_object(data: &[u8]) {
    let map = Arc::new(Source::Owned(data.to_vec()));
    let view = inspect::loader_view_of(map.clone(), RodataScan::Always);
    for &(start, size) in &view.rodata {
        let _ = inspect::rodata_parts(start, size, 1 << 20);
    }
    let imports = inspect::versioned_imports(data).unwrap_or_default();
    if let Some(exports) = Exports::of(map) {
        for s in imports.iter().take(4096) {
            if let Some(v) = &s.version {
                let _ = exports.defines(&s.name, v);
            }
        }
        for (name, version) in [("dlopen", "GLIBC_2.2.5"), ("cuInit", "libcuda.so.1"), ("", "")] {
            let _ = exports.defines(name, version);
        }
    }
}

/// An `/etc/ld.so.cache`: parsed, and the names of its first entries looked up as x86-64, i386 and AArch64
/// loaders with glibc-hwcaps subdirectories would.
pub fn ld_cache(data: &[u8]) {
    let Ok(cache) = LdCache::parse(data) else {
        return;
    };
    let hwcaps = ["x86-64-v3".to_string(), "x86-64-v2".to_string()];
    for e in cache.entries.iter().take(256) {
        for (machine, is_64) in [(EM_X86_64, true), (EM_386, false), (EM_AARCH64, true)] {
            if let Some(id) = cache::default_id(machine, is_64) {
                let _ = cache.lookup(&e.name, id, &hwcaps, 3);
            }
        }
    }
    let _ = cache.lookup("libcuda.so.1", 0x0303, &[], 1);
}

/// An interpreter's image, as the loader reads a `PT_INTERP` file: its default directories, both classes.
pub fn ld_so_image(data: &[u8]) {
    let _ = platform::system_dirs_in(data, true);
    let _ = platform::system_dirs_in(data, false);
}
