//! The live probe (opt-in): confirm the static verdict with the real driver, in a child process.
//!
//! cudadiag's first principle (README: "nothing is executed or loaded"): cudadiag itself never loads a CUDA
//! library. `cudadiag probe` and `inspect --probe` re-execute cudadiag as `cudadiag __probe` ([`spawn`]),
//! with the diagnosis environment and a timeout; the child ([`child`], [`runtime`]) `dlopen`s `libcuda.so.1`
//! (and a libcudart when asked), runs a short self-test and loads the inspected binaries' device code as
//! data, writing what it saw as JSON lines. A crash, a signal, a hang or garbage becomes a [`crate::facts::probe::ProbeOutcome`]
//! in the facts, and a `probe-failed` finding through `rules::probe`.
//!
//! This module holds most of the crate's `unsafe` code: calling C functions found with `dlsym` cannot be done
//! otherwise (the rest: the input maps and their SIGBUS guard, `inspect::source` and `inspect::guard`). Every
//! `unsafe` block says why it is sound in a `SAFETY:` comment, and every function pointer type is the exact
//! prototype of NVIDIA's headers.
#![allow(unsafe_code)]

pub mod child;
pub mod cuda;
pub mod kernel;
pub mod library;
pub mod maps;
pub mod nvml;
pub mod runtime;
mod selftest;
pub mod spawn;

pub use spawn::{ProbeOptions, run};

use crate::facts::probe::{CudartRequest, ModuleRequest};
use crate::facts::{BinaryFacts, CodeKind, CudartLinkage, Format};
use std::path::Path;

/// The sonames tried, newest first, when no libcudart is named: what `dlopen` finds for an application that
/// loads the runtime by its usual names.
pub const DEFAULT_CUDART: &[&str] = &["libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"];

/// Largest number of modules loaded in one probe; the rest are left out (and counted in the facts).
pub const MAX_MODULES: usize = 256;

/// Which libcudart the runtime probe loads: `--cudart PATH`, else the soname the inspected binaries need, else
/// (with no binaries: `cudadiag probe`) the default names. `None` when the inspected binaries carry their
/// runtime inside (static cudart) or none: a libcudart found on the machine is not what they would meet.
/// (The loader's resolution, when it exists, is the better answer: pass its path.)
pub fn cudart_request(explicit: Option<&Path>, binaries: &[BinaryFacts]) -> Option<CudartRequest> {
    if let Some(p) = explicit {
        return Some(CudartRequest {
            candidates: vec![p.to_string_lossy().into_owned()],
            source: "--cudart".to_string(),
        });
    }
    for b in binaries {
        if b.cudart.linkage == CudartLinkage::Dynamic
            && let Some(so) = &b.cudart.soname
        {
            return Some(CudartRequest {
                candidates: vec![so.clone()],
                source: format!("NEEDED of {}", b.path),
            });
        }
    }
    binaries.is_empty().then(|| CudartRequest {
        candidates: DEFAULT_CUDART.iter().map(|s| s.to_string()).collect(),
        source: "default search".to_string(),
    })
}

/// Bytes of a fatbin container's header; a container no larger declares no entry.
const FATBIN_HEADER: u64 = 16;

/// Whether container `i` of `b` declares kernels: `Some(true)` if any entry names one (cubin kernels, PTX
/// `.entry`), `Some(false)` if every loadable entry was read and none does, or if the container declares no
/// entry at all (a bare 16-byte header: nvcc 13's device-link container of a PTX-only build), `None` if some
/// payload was not read.
pub fn container_has_kernels(b: &BinaryFacts, i: usize) -> Option<bool> {
    if b.fatbins
        .get(i)
        .is_some_and(|c| c.entries == 0 && c.size <= FATBIN_HEADER)
    {
        return Some(false);
    }
    let entries: Vec<_> = b
        .device_code
        .iter()
        .filter(|e| e.container == i && e.kind != CodeKind::Nvvm)
        .collect();
    if entries.iter().any(|e| {
        e.cubin.as_ref().is_some_and(|c| !c.kernels.is_empty())
            || e.ptx.as_ref().is_some_and(|p| !p.entries.is_empty())
    }) {
        return Some(true);
    }
    if !entries.is_empty() && entries.iter().all(|e| e.cubin.is_some() || e.ptx.is_some()) {
        return Some(false);
    }
    None
}

/// The modules to load for these binaries: every fatbin container that is loaded at run time (relocatable
/// `__nv_relfatbin` containers are device-link input and never are), and whole `.cubin` and `.ptx` files.
/// Archive members are left out (the driver never loads an object file's fatbin as is).
pub fn module_requests(binaries: &[BinaryFacts]) -> Vec<ModuleRequest> {
    let mut out = Vec::new();
    for b in binaries {
        if !Path::new(&b.path).is_file() {
            continue;
        }
        match b.format {
            Some(Format::Cubin) | Some(Format::Ptx) => out.push(ModuleRequest {
                binary: b.path.clone(),
                file: b.path.clone(),
                container: None,
                offset: 0,
                size: b.size,
                has_kernels: None,
            }),
            Some(Format::Fatbin) | Some(Format::Elf) => {
                if b.elf.as_ref().is_some_and(|e| e.elf_type == "rel") {
                    continue;
                }
                for (i, c) in b.fatbins.iter().enumerate() {
                    if c.section.as_deref() == Some("__nv_relfatbin") {
                        continue;
                    }
                    out.push(ModuleRequest {
                        binary: b.path.clone(),
                        file: b.path.clone(),
                        container: Some(i),
                        offset: c.offset,
                        size: c.size,
                        has_kernels: container_has_kernels(b, i),
                    });
                }
            }
            _ => {}
        }
    }
    out.truncate(MAX_MODULES);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{CudartFacts, FatbinContainer};

    fn binary(path: &str, linkage: CudartLinkage, soname: Option<&str>) -> BinaryFacts {
        BinaryFacts {
            path: path.into(),
            format: Some(Format::Elf),
            cudart: CudartFacts {
                linkage,
                soname: soname.map(String::from),
                ..CudartFacts::default()
            },
            ..BinaryFacts::default()
        }
    }

    #[test]
    fn the_runtime_probed_is_the_one_the_binary_would_load() {
        let explicit = cudart_request(Some(Path::new("/opt/x/libcudart.so.12")), &[]);
        assert_eq!(explicit.map(|c| c.source), Some("--cudart".to_string()));
        let dynamic = binary("./app", CudartLinkage::Dynamic, Some("libcudart.so.12"));
        let r = cudart_request(None, &[binary("./lib", CudartLinkage::None, None), dynamic]);
        assert_eq!(
            r.as_ref().map(|c| c.candidates.clone()),
            Some(vec!["libcudart.so.12".to_string()])
        );
        assert_eq!(r.map(|c| c.source), Some("NEEDED of ./app".to_string()));
        // A statically linked runtime is inside the binary: a system libcudart would answer for someone else.
        assert_eq!(
            cudart_request(None, &[binary("./app", CudartLinkage::Static, None)]),
            None
        );
        assert_eq!(
            cudart_request(None, &[]).map(|c| c.candidates.len()),
            Some(DEFAULT_CUDART.len())
        );
    }

    #[test]
    fn relocatable_containers_and_missing_files_are_not_loaded() {
        let this = file!();
        let mut b = binary(this, CudartLinkage::None, None);
        let container = |section: &str, offset| FatbinContainer {
            section: Some(section.into()),
            offset,
            size: 16,
            entries: 0,
            found_by_scan: false,
        };
        b.fatbins = vec![container(".nv_fatbin", 0), container("__nv_relfatbin", 16)];
        let missing = binary("/nonexistent/cudadiag/app", CudartLinkage::None, None);
        let r = module_requests(&[b, missing]);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].container, r[0].offset), (Some(0), 0));
    }

    /// Seen live on the H200: a PTX-only nvcc 13 program's first container is a bare header, which the
    /// driver answers with 209 as data while the program runs; the probe took it for a failure and reported
    /// probe-disagrees. A container that declares no entry has no kernels.
    #[test]
    fn an_empty_container_has_no_kernels() {
        let mut b = binary(file!(), CudartLinkage::Static, None);
        let container = |offset, size, entries| FatbinContainer {
            section: Some(".nv_fatbin".into()),
            offset,
            size,
            entries,
            found_by_scan: false,
        };
        b.fatbins = vec![container(0, 16, 0), container(16, 496, 1)];
        assert_eq!(container_has_kernels(&b, 0), Some(false));
        // Its neighbour's one entry was not read (no device_code facts here): unknown, not "none".
        assert_eq!(container_has_kernels(&b, 1), None);
        // A container that declares entry bytes but yielded none (damage) is not taken as empty.
        b.fatbins[0] = container(0, 512, 0);
        assert_eq!(container_has_kernels(&b, 0), None);
    }
}
