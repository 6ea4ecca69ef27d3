//! Any bytes as a container image (`docker save` tarball, OCI layout tar, gzip or zstd of either): opened, its
//! layers applied under small bounds, its entrypoint looked for. Must never panic, hang or write outside its
//! temporary directory.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cudadiag::fuzzing::image(data);
});
