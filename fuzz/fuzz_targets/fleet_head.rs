//! A node file's head as `fleet` skims it, against `serde_json`'s whole decode. Must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        cudadiag::fuzzing::fleet_head(text);
    }
});
