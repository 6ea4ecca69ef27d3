//! What the rules check the binaries against: the GPUs of the host facts (or a what-if target), grouped by
//! compute capability, and the driver. Its own leaf so that the rules that take a target (`driver`,
//! `kernel_image`, `jit_cache`) and `compat`, which calls them, do not import each other.
//!
//! Facts give GPUs by name, PCI id and (when the driver said so) compute capability; the matrix completes a
//! missing compute capability from the PCI id or the name (`data/compat.toml`, `[[gpu]]`, sources GPUS and
//! PCIIDS). GPUs of one compute capability are checked once: the driver picks kernel images by compute
//! capability alone (CUDA C++ Programming Guide, "Binary Compatibility").

use crate::facts::HostFacts;
use crate::matrix::{Cc, DriverVersion, Matrix};

/// GPUs of one compute capability that the rules check against.
#[derive(Debug, Clone)]
pub struct Target {
    /// `NVIDIA H200 (CC 9.0)`, or several names joined.
    pub label: String,
    /// The compute capability.
    pub cc: Cc,
    /// Where the GPU and its compute capability were read.
    pub evidence: Vec<String>,
}

/// The driver the rules check against.
#[derive(Debug, Clone)]
pub struct Driver {
    /// Its version.
    pub version: DriverVersion,
    /// Where it was read (`/proc/driver/nvidia/version`, `--driver`).
    pub source: String,
}

/// The GPUs of the host facts, grouped by compute capability (completed from the matrix where missing).
pub fn targets(host: Option<&HostFacts>, m: &Matrix) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    for g in host.map(|h| h.gpus.as_slice()).unwrap_or_default() {
        let from_facts = g.cc.as_deref().and_then(Cc::parse);
        let (cc, how) = if let Some(cc) = from_facts {
            (
                cc,
                format!("{} has compute capability {cc} (read from {})", g.name, g.source),
            )
        } else if let Some(hit) = g.pci_device_id.and_then(|id| m.gpu_by_pci(id)) {
            let cc = hit.row.cc;
            (
                cc,
                format!(
                    "{} (PCI id 10de:{:04x}) has compute capability {cc} [matrix {}]",
                    g.name,
                    g.pci_device_id.unwrap_or(0),
                    hit.row.row.cite(m)
                ),
            )
        } else if let Some(hit) = m.gpu_by_name(&g.name) {
            let cc = hit.row.cc;
            (
                cc,
                format!(
                    "{} has compute capability {cc}{} [matrix {}]",
                    g.name,
                    if hit.exact {
                        String::new()
                    } else {
                        format!(" (by its name's start, {})", hit.name)
                    },
                    hit.row.row.cite(m)
                ),
            )
        } else {
            continue;
        };
        if let Some(t) = out.iter_mut().find(|t| t.cc == cc) {
            if !t.label.contains(&g.name) {
                t.label = t
                    .label
                    .replace(&format!(" (CC {cc})"), &format!(", {} (CC {cc})", g.name));
            }
            if !t.evidence.contains(&how) {
                t.evidence.push(how);
            }
        } else {
            let label = if g.name.contains(&format!("CC {cc}")) {
                g.name.clone()
            } else {
                format!("{} (CC {cc})", g.name)
            };
            out.push(Target {
                label,
                cc,
                evidence: vec![how],
            });
        }
    }
    out
}

/// The driver of the host facts, if its version parses.
pub fn driver_of(host: Option<&HostFacts>) -> Option<Driver> {
    let d = host?.driver.as_ref()?;
    Some(Driver {
        version: DriverVersion::parse(&d.version)?,
        source: d.source.clone(),
    })
}
