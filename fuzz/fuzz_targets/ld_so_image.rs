//! Any bytes as an ld.so image: the default-directory table search. Must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cudadiag::fuzzing::ld_so_image(data));
