//! A small machine tree whose text files (procfs, ld.so.conf, dpkg, pip metadata) are the input cut at NUL
//! bytes: collected as `doctor --root` collects it, judged and rendered. Must never panic, hang or escape the tree.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cudadiag::fuzzing::host_root(data);
});
