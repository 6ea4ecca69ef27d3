//! PTX directive scanning.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let facts = cudadiag::inspect::ptx::parse(data);
    let _ = cudadiag::inspect::ptx::target_arch(&facts);
});
