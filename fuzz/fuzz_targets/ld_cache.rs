//! Any bytes as /etc/ld.so.cache: parse and lookups. Must never panic; decoded strings stay within the
//! cache parser's budget.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cudadiag::fuzzing::ld_cache(data));
