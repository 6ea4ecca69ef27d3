//! Any bytes as a Python wheel: every member inspected as `audit` does. Must never panic or write past the
//! decompression bound.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cudadiag::fuzzing::wheel(data);
});
