//! `python`: the Python (and conda) environments of a root, read from files alone: where they are
//! ([`envs`]), and which package installed a file, by the installers' own records: pip's `*.dist-info/RECORD`
//! wherever it is ([`dist_info`]) and conda's `conda-meta` ([`conda`]). Nothing is imported or run.
//!
//! The collectors that need these answers (the loader's search for copies and its installation origins, the
//! host's library catalogue) ask here, so neither depends on the other for them.

pub mod conda;
pub mod dist_info;
pub mod envs;
pub mod frameworks;
pub mod metadata;
pub mod site;
pub mod syspath;

/// Does a package name look like it may hold CUDA libraries?
pub fn cuda_related(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "nvidia",
        "cuda",
        "cudnn",
        "nccl",
        "cublas",
        "cufft",
        "curand",
        "cusolver",
        "cusparse",
        "nvjitlink",
        "nvrtc",
        "cupti",
        "libnv",
        "libcu",
        "torch",
        "tensorrt",
        "cupy",
        "jax",
        "tensorflow",
        "nvtx",
    ]
    .iter()
    .any(|k| n.contains(k))
}
