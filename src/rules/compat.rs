//! The verdict for this machine (or a what-if target): which GPUs and which driver the rules check the
//! binaries against, and the per-binary, per-GPU verdict line the human report ends with.
//!
//! Facts give GPUs by name, PCI id and (when the driver said so) compute capability; the matrix completes a
//! missing compute capability from the PCI id or the name (`data/compat.toml`, `[[gpu]]`, sources GPUS and
//! PCIIDS). GPUs of one compute capability are checked once: the driver picks kernel images by compute
//! capability alone (CUDA C++ Programming Guide, "Binary Compatibility").

use super::{driver, kernel_image};
use crate::facts::{BinaryFacts, CodeKind, Facts, HostFacts};
use crate::findings::{Code, Finding, Severity};
use crate::matrix::{Cc, DriverVersion, Matrix};
use serde::Serialize;

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

/// Whether the binary carries device code the driver loads at run time (SASS or PTX, not relocatable).
pub fn has_loadable_code(b: &BinaryFacts) -> bool {
    b.device_code
        .iter()
        .any(|e| !e.relocatable && matches!(e.kind, CodeKind::Sass | CodeKind::Ptx))
}

/// Every finding of the compatibility rules: per binary (runtime against driver), per GPU (driver support),
/// and per binary and GPU (kernel image).
pub fn findings(facts: &Facts, m: &Matrix) -> Vec<Finding> {
    let host = facts.host.as_ref();
    let drv = driver_of(host);
    let targets = targets(host, m);
    let mut out = Vec::new();
    for t in &targets {
        out.extend(driver::gpu_unsupported(t, drv.as_ref(), m));
    }
    for b in &facts.binaries {
        out.extend(driver::runtime(b, drv.as_ref(), m));
        out.extend(super::jetson::runtime(b, host, m));
        out.extend(driver::zstd(b, drv.as_ref(), m));
        for t in &targets {
            out.extend(kernel_image::check(b, t, drv.as_ref(), m));
            out.extend(super::jit_cache::check(b, t, host, m));
        }
        if targets.is_empty() {
            out.extend(kernel_image::ptx_only_too_new(b, drv.as_ref(), m));
        }
    }
    // The libraries the binaries load carry their own kernels (cuBLAS, cuDNN): each must have an image too.
    for l in &facts.loaded {
        out.extend(driver::zstd(l, drv.as_ref(), m));
        for t in &targets {
            out.extend(
                kernel_image::check(l, t, drv.as_ref(), m)
                    .into_iter()
                    .map(|f| loaded_by(f, facts, &l.path)),
            );
        }
    }
    out
}

/// Adds which binaries load the library a finding is about.
fn loaded_by(f: Finding, facts: &Facts, library: &str) -> Finding {
    let users: Vec<&str> = facts
        .libraries
        .iter()
        .filter(|r| r.objects.iter().skip(1).any(|o| o.path == library))
        .map(|r| r.binary.as_str())
        .collect();
    if users.is_empty() {
        f
    } else {
        f.because(format!("{library} is loaded by {}", users.join(", ")))
    }
}

/// The loaded libraries with device code that `binary` loads.
fn loaded_for<'a>(facts: &'a Facts, binary: &str) -> Vec<&'a BinaryFacts> {
    let paths: Vec<&str> = facts
        .libraries
        .iter()
        .filter(|r| r.binary == binary)
        .flat_map(|r| r.objects.iter().skip(1).map(|o| o.path.as_str()))
        .collect();
    facts
        .loaded
        .iter()
        .filter(|l| paths.contains(&l.path.as_str()))
        .collect()
}

/// What will happen when a binary starts its kernels on a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A SASS image runs as is.
    Runs,
    /// The driver JIT-compiles PTX first.
    RunsAfterJit,
    /// It fails.
    Fails,
    /// The binary has no device code of its own.
    NoDeviceCode,
}

/// The verdict for one binary on one GPU.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The binary.
    pub binary: String,
    /// The GPU(s), with the compute capability.
    pub gpu: String,
    /// The outcome.
    pub outcome: Outcome,
    /// Why, one line (the first error's message, or the caveats).
    pub reason: String,
    /// Codes of the findings behind it, most severe first, each once.
    pub codes: Vec<String>,
}

/// One verdict per binary and GPU compute capability. Empty when no GPU is known.
pub fn verdicts(facts: &Facts, m: &Matrix) -> Vec<Verdict> {
    let host = facts.host.as_ref();
    let drv = driver_of(host);
    let targets = targets(host, m);
    if targets.is_empty() {
        return Vec::new();
    }
    // What stops every CUDA program on a machine read (no libcuda, a stub or unusable compat libcuda, no
    // device node it may open, no GPU left visible) stops this one before any kernel: it fails whatever its
    // device code. A what-if target has no such findings.
    let machine: Vec<Finding> = host
        .map(super::host::evaluate)
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    let mut out = Vec::new();
    for b in &facts.binaries {
        // Unread device code (`--no-device-code`) gives no verdict: its findings about the driver and the
        // runtime still come, but "will run" cannot be said of kernels nobody looked at.
        if b.format.is_none()
            || b.device_code_skipped
            || b.problems
                .iter()
                .any(|p| p.kind == crate::facts::ProblemKind::Unrecognized)
        {
            continue;
        }
        let libs = loaded_for(facts, &b.path);
        // Nor does a binary whose libraries will not load (a NEEDED one missing, a version its provider lacks)
        // start its kernels.
        let loading: Vec<Finding> = facts
            .libraries
            .iter()
            .filter(|r| r.binary == b.path)
            .flat_map(|r| super::loader::evaluate_on(std::slice::from_ref(r), facts.glibc(), &facts.binaries))
            .filter(|f| f.severity == Severity::Error)
            .collect();
        for t in &targets {
            if !has_loadable_code(b) && libs.is_empty() {
                out.push(Verdict {
                    binary: b.path.clone(),
                    gpu: t.label.clone(),
                    outcome: Outcome::NoDeviceCode,
                    reason: "no device code of its own; the libraries it loads carry their own".into(),
                    codes: Vec::new(),
                });
                continue;
            }
            let mut fs: Vec<Finding> = machine.clone();
            fs.extend(loading.iter().cloned());
            fs.extend(driver::gpu_unsupported(t, drv.as_ref(), m));
            fs.extend(driver::runtime(b, drv.as_ref(), m));
            fs.extend(super::jetson::runtime(b, host, m));
            fs.extend(driver::zstd(b, drv.as_ref(), m));
            if has_loadable_code(b) {
                fs.extend(kernel_image::check(b, t, drv.as_ref(), m));
                fs.extend(super::jit_cache::check(b, t, host, m));
            }
            for l in &libs {
                fs.extend(kernel_image::check(l, t, drv.as_ref(), m));
            }
            fs.sort_by_key(|f| std::cmp::Reverse(f.severity));
            // Each code once (four missing libraries are one reason to fail), most severe first.
            let mut codes: Vec<String> = Vec::new();
            for f in &fs {
                if !codes.contains(&f.slug) {
                    codes.push(f.slug.clone());
                }
            }
            let (outcome, reason) = if let Some(e) = fs.iter().find(|f| f.severity == Severity::Error) {
                (Outcome::Fails, e.message.clone())
            } else if fs.iter().any(|f| f.slug == Code::PtxJitRequired.info().slug) {
                let caveats: Vec<&str> = fs.iter().map(|f| f.message.as_str()).collect();
                (Outcome::RunsAfterJit, caveats.join("; "))
            } else {
                let caveats: Vec<&str> = fs.iter().map(|f| f.message.as_str()).collect();
                (Outcome::Runs, caveats.join("; "))
            };
            out.push(Verdict {
                binary: b.path.clone(),
                gpu: t.label.clone(),
                outcome,
                reason,
                codes,
            });
        }
    }
    out
}
