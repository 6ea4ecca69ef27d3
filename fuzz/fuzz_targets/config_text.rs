//! A policy, a compatibility matrix, the pip package table and Requires-Dist lines, parsed. Must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        cudadiag::fuzzing::config_text(text);
    }
});
