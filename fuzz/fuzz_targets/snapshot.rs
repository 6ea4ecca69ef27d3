//! A snapshot file (`--facts`): decoded, judged and rendered in every format. Must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        cudadiag::fuzzing::snapshot(text);
    }
});
