//! Any bytes: ELF, archive, fatbin, cubin or PTX detection and every parser behind it, with full-depth
//! payload reading and a small decompression bound. Must never panic or allocate past the bound.
#![no_main]
use cudadiag::inspect::{self, Depth, InspectOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A fresh run budget per input: its memory of decoded payloads must not grow across inputs.
    let opts = InspectOptions { depth: Depth::Full, max_decompressed: 16 << 20, ..InspectOptions::default() };
    let _ = inspect::bytes("fuzz", data, &opts);
});
