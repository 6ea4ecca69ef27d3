//! Any bytes as an image layout's documents (`index.json` or `manifest.json`, then blobs named by digest): the
//! manifest and index chooser alone (`fuzzing::image_manifest`). Must never panic, hang or hold more memory
//! than the image's budget for documents.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cudadiag::fuzzing::image_manifest(data);
});
