//! The CUDA an NCCL library was built for, read from the library itself.
//!
//! NCCL builds its version string by the preprocessor as `"NCCL version " MAJOR "." MINOR "." PATCH SUFFIX
//! "+cuda" CUDA_MAJOR "." CUDA_MINOR`, so that `strings` on the library shows it (NVIDIA/nccl, `src/init.cc`,
//! `VERSION_STRING`); it is the line NCCL prints with `NCCL_DEBUG=VERSION` or `INFO`. Only the library's
//! `.rodata` is searched (half a megabyte of a library of hundreds), through a map of the file; a library
//! without a `.rodata` section header is not searched at all.

use super::{elf, source};
use crate::facts::loader::Resolution;
use crate::facts::nccl::NcclBuild;
use crate::system::Root;
use std::path::Path;

const PREFIX: &[u8] = b"NCCL version ";

/// NCCL's version and the CUDA it was built with (`("2.21.5", "12.4")`), from the string in the `.rodata` of
/// the ELF file `data`.
pub fn build(data: &[u8]) -> Option<(String, String)> {
    elf::find_in_rodata(data, version_string)
}

/// The first `NCCL version X.Y.Z[suffix]+cudaA.B` in `bytes`.
pub fn version_string(bytes: &[u8]) -> Option<(String, String)> {
    memchr::memmem::find_iter(bytes, PREFIX).find_map(|at| {
        let rest = &bytes[at + PREFIX.len()..];
        let text = &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len()).min(64)];
        let text = std::str::from_utf8(text).ok()?;
        let (version, cuda) = text.split_once("+cuda")?;
        let dotted = |s: &str, parts: usize| {
            let n: Vec<&str> = s.split('.').collect();
            n.len() == parts
                && n.iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        };
        // A suffix (`2.18.1a0`) is kept in the version; the CUDA part is exactly major.minor.
        let numeric = version.split(|c: char| !c.is_ascii_digit() && c != '.').next()?;
        (dotted(numeric, 3) && dotted(cuda, 2)).then(|| (version.to_string(), cuda.to_string()))
    })
}

/// Every `libnccl.so*` the binaries' loader trees map, with the CUDA it was built for; each file read once.
pub fn loaded(libraries: &[Resolution], root: &Root) -> Vec<NcclBuild> {
    let mut out: Vec<NcclBuild> = Vec::new();
    for r in libraries {
        for o in r.objects.iter().skip(1) {
            let name = o
                .soname
                .as_deref()
                .unwrap_or_else(|| o.path.rsplit('/').next().unwrap_or(""));
            if !name.starts_with("libnccl.so") {
                continue;
            }
            let known = out.iter().find(|n| n.path == o.path).cloned();
            let found = known.map(|n| (n.version, n.cuda)).or_else(|| {
                let (_file, map) = source::map(&root.host_path(Path::new(&o.realpath))).ok()?;
                build(&map)
            });
            if let Some((version, cuda)) = found {
                out.push(NcclBuild {
                    binary: r.binary.clone(),
                    path: o.path.clone(),
                    version,
                    cuda,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_string_of_nccl() {
        let ro = b"\0NCCL_MNNVL_\0NCCL version 2.30.7+cuda13.3\0NCCL version %s\0";
        assert_eq!(
            version_string(ro),
            Some(("2.30.7".to_string(), "13.3".to_string()))
        );
        // The format string NCCL also keeps is not a version.
        assert_eq!(version_string(b"NCCL version %s+cuda%d.%d\0"), None);
        assert_eq!(
            version_string(b"NCCL version 2.18.1a0+cuda11.8\0").map(|v| v.1),
            Some("11.8".to_string())
        );
        assert_eq!(version_string(b"NCCL version 2.18.1+cuda12\0"), None);
        assert_eq!(version_string(b"NCCL version "), None);
    }
}
