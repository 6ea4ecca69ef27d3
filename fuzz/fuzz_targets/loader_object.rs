//! Any bytes as a library the loader maps: loader view, versioned imports, exports. Must never panic or
//! allocate without bound.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cudadiag::fuzzing::loader_object(data));
