//! `snapshot --redact` replayed: a fuzzed snapshot redacted with fuzzed host and user names (the input's first
//! two lines) must read back as a snapshot, and nothing may panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cudadiag::fuzzing::redact(data);
});
