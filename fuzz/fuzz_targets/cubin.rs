//! Device ELF parsing: e_flags layouts, notes, `.nv.compat`, kernel symbols.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = cudadiag::inspect::cubin::parse(data) {
        let _ = cudadiag::inspect::cubin::toolkit(&c);
    }
});
