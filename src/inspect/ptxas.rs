//! Which CUDA release a `ptxas` belongs to, read from the file rather than by running it.
//!
//! `ptxas --version` prints `Cuda compilation tools, release 12.9, V12.9.86`; the line is a constant in the
//! program's `.rodata` (its format string `release %d.%d` is there too, and is skipped). A ptxas accepts the
//! PTX ISA versions and GPU targets of its release and older ones (PTX ISA, "Release Notes": each ISA version
//! with the CUDA release that introduced it and the targets it added), so an old one refuses newer PTX with
//! `Unsupported .version X.Y; current version is 'A.B'` and a newer GPU with `Value 'sm_NN' is not defined for
//! option 'gpu-name'`. Only `.rodata` is searched, through a map.

use super::{elf, source};
use crate::facts::ptxas::Ptxas;
use crate::system::Root;
use std::path::Path;

const BANNER: &[u8] = b"Cuda compilation tools, release ";

/// The release (`12.9`) in the `.rodata` of the ELF file `data`.
pub fn release(data: &[u8]) -> Option<String> {
    elf::find_in_rodata(data, banner_release)
}

/// The first `Cuda compilation tools, release A.B,` with digits in `bytes`.
pub fn banner_release(bytes: &[u8]) -> Option<String> {
    memchr::memmem::find_iter(bytes, BANNER).find_map(|at| {
        let rest = &bytes[at + BANNER.len()..];
        let rest = &rest[..rest.len().min(16)];
        let end = rest.iter().position(|&b| b == b',')?;
        let v = std::str::from_utf8(&rest[..end]).ok()?;
        let (major, minor) = v.split_once('.')?;
        let digits = |s: &str| !s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit());
        (digits(major) && digits(minor)).then(|| v.to_string())
    })
}

/// The ptxas at the machine path `path`, when it is a regular ELF file whose release can be read.
pub fn at(root: &Root, path: &str, via: &str) -> Option<Ptxas> {
    let real = root.resolve(Path::new(path)).ok()?;
    let (_file, map) = source::map(&root.host_path(&real)).ok()?;
    Some(Ptxas {
        path: path.to_string(),
        release: release(&map)?,
        via: via.to_string(),
    })
}

/// The ptxas the packages of a Python environment ship: Triton's own (`triton/backends/nvidia/bin`, older
/// releases `triton/third_party/cuda/bin`) and the `nvidia-cuda-nvcc` wheel's, which JAX and TensorFlow look
/// for beside the other NVIDIA wheels.
pub fn in_environments(sites: &[String], root: &Root) -> Vec<Ptxas> {
    let mut out: Vec<Ptxas> = Vec::new();
    for site in sites {
        for (rel, via) in [
            ("triton/backends/nvidia/bin/ptxas", "triton's own"),
            ("triton/third_party/cuda/bin/ptxas", "triton's own"),
            ("nvidia/cuda_nvcc/bin/ptxas", "nvidia-cuda-nvcc (JAX, TensorFlow)"),
        ] {
            let path = format!("{}/{rel}", site.trim_end_matches('/'));
            if out.iter().any(|p| p.path == path) {
                continue;
            }
            out.extend(at(root, &path, via));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_in_the_banner() {
        let ro = b"Cuda compilation tools, release %d.%d, V%s\0\0Cuda compilation tools, release 12.9, V12.9.86\nBuild";
        assert_eq!(banner_release(ro).as_deref(), Some("12.9"));
        assert_eq!(
            banner_release(b"Cuda compilation tools, release 11.8, V11.8.89").as_deref(),
            Some("11.8")
        );
        assert_eq!(banner_release(b"Cuda compilation tools, release 12"), None);
        assert_eq!(banner_release(b"Cuda compilation tools, release x.y, V"), None);
    }
}
