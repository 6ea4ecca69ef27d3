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

/// Does a package name look like it may hold CUDA libraries? It contains, in any case, one of the words
/// below (`nvidia_cublas_cu12`, `libcudnn9-cuda-12`, `python3-torch`). Asked of every name in a
/// site-packages, `conda-meta` and `/var/lib/dpkg/info` (thousands): one pass over the name's bytes, each
/// compared with the words that start with its letter, instead of a lower-cased copy searched twenty times.
pub fn cuda_related(name: &str) -> bool {
    let b = name.as_bytes();
    (0..b.len()).any(|i| {
        let words: &[&[u8]] = match b[i].to_ascii_lowercase() {
            b'c' => &[
                b"cuda",
                b"cudnn",
                b"cublas",
                b"cufft",
                b"curand",
                b"cusolver",
                b"cusparse",
                b"cupti",
                b"cupy",
            ],
            b'n' => &[b"nvidia", b"nccl", b"nvjitlink", b"nvrtc", b"nvtx"],
            b'l' => &[b"libnv", b"libcu"],
            b't' => &[b"torch", b"tensorrt", b"tensorflow"],
            b'j' => &[b"jax"],
            _ => return false,
        };
        words
            .iter()
            .any(|w| b[i..].get(..w.len()).is_some_and(|s| s.eq_ignore_ascii_case(w)))
    })
}

#[cfg(test)]
mod tests {
    use super::cuda_related;

    /// The definition: a lower-cased copy that contains one of the words.
    fn contains_a_word(name: &str) -> bool {
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

    #[test]
    fn cuda_related_is_a_case_blind_search_for_its_words() {
        let mut names: Vec<String> = [
            "nvidia_cublas_cu12",
            "NVIDIA-CUDNN",
            "libcudnn9-cuda-12",
            "python3-torch",
            "libnccl2",
            "cupy-cuda12x",
            "jaxlib",
            "tensorflow",
            "TensorRT",
            "nvtx",
            "libnvinfer10",
            "libcufile",
            "numpy",
            "pandas",
            "cython",
            "cu",
            "c",
            "",
            "n",
            "libn",
            "jax",
            "ja",
            "torc",
            "cudacuda",
            "ÜnvidiaÜ",
            "xCUPTIx",
            "scipy",
            "nvid",
            "libcurl4",
            "curl",
            "nvme-cli",
            "tnsorflow",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        if let Ok(dir) = std::fs::read_dir("/var/lib/dpkg/info") {
            names.extend(
                dir.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned()),
            );
        }
        let related = names.iter().filter(|n| cuda_related(n)).count();
        for n in &names {
            assert_eq!(cuda_related(n), contains_a_word(n), "{n:?}");
        }
        assert!(related >= 13, "{related} names related");
    }
}
