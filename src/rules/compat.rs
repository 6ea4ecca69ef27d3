//! The verdict for this machine (or a what-if target): the compatibility findings of each process against the
//! GPUs and the driver of [`super::target`], and the per-program, per-GPU verdicts, read from the findings so
//! that the verdict, the headline and the exit status cannot disagree (`docs/verdict.md`).

use super::target::{Target, driver_of, targets};
use super::{driver, kernel_image};
use crate::facts::{BinaryFacts, CodeKind, Facts};
use crate::findings::{Code, Finding, Severity};
use crate::matrix::Matrix;
use serde::Serialize;

/// Whether the binary carries device code the driver loads at run time (SASS or PTX, not relocatable).
pub fn has_loadable_code(b: &BinaryFacts) -> bool {
    b.device_code
        .iter()
        .any(|e| !e.relocatable && matches!(e.kind, CodeKind::Sass | CodeKind::Ptx))
}

/// Every finding of the compatibility rules: per GPU (driver support), per process (the driver against every
/// runtime and all compressed device code it maps: one finding for the driver), and per object and GPU
/// (kernel images of the binary and of each library it loads). Findings that hold for one GPU say which.
pub fn findings(facts: &Facts, m: &Matrix) -> Vec<Finding> {
    let host = facts.host.as_ref();
    let drv = driver_of(host);
    let targets = targets(host, m);
    let mut out = Vec::new();
    for t in &targets {
        out.extend(on(&t.label, driver::gpu_unsupported(t, drv.as_ref(), m)));
    }
    for p in super::process::processes(facts) {
        let b = p.binary;
        out.extend(driver::process(&p, drv.as_ref(), m));
        out.extend(super::jetson::runtime(b, host, m));
        for t in &targets {
            out.extend(on(&t.label, kernel_image::check(b, t, drv.as_ref(), m)));
            out.extend(on(&t.label, super::jit_cache::check(b, t, host, m)));
        }
        if targets.is_empty() {
            out.extend(kernel_image::ptx_only_too_new(b, drv.as_ref(), m));
        }
    }
    // The libraries the binaries load carry their own kernels (cuBLAS, cuDNN): each must have an image too.
    // A library that is itself an inspected binary has had its findings above.
    let inspected: std::collections::HashSet<&str> = facts.binaries.iter().map(|b| b.path.as_str()).collect();
    let users = users(facts);
    for l in facts
        .loaded
        .iter()
        .filter(|l| !inspected.contains(l.path.as_str()))
    {
        for t in &targets {
            let fs = kernel_image::check(l, t, drv.as_ref(), m);
            out.extend(
                on(&t.label, fs)
                    .into_iter()
                    .map(|f| match users.get(l.path.as_str()) {
                        Some(who) => f.because(format!("{} is loaded by {}", l.path, who.join(", "))),
                        None => f,
                    }),
            );
        }
    }
    out
}

/// Marks findings as holding for the GPU `label` alone.
fn on(label: &str, fs: impl IntoIterator<Item = Finding>) -> Vec<Finding> {
    fs.into_iter().map(|f| f.on_gpu(label)).collect()
}

/// The inspected binaries that map each library, by the library's path as loaded.
fn users(facts: &Facts) -> std::collections::HashMap<&str, Vec<&str>> {
    let mut out: std::collections::HashMap<&str, Vec<&str>> = std::collections::HashMap::new();
    for r in &facts.libraries {
        for o in r.objects.iter().skip(1) {
            let who = out.entry(o.path.as_str()).or_default();
            if who.last() != Some(&r.binary.as_str()) {
                who.push(r.binary.as_str());
            }
        }
    }
    out
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

/// Whether a finding stops the process it is about: an error that predicts a failure of the program (not a
/// release policy's own checks, which gate a release but stop nothing).
pub fn stops(f: &Finding) -> bool {
    f.severity == Severity::Error && !gate(f)
}

/// A release policy's own checks: they gate a release and say nothing of how the program runs.
fn gate(f: &Finding) -> bool {
    matches!(
        f.code,
        Code::PolicyMissingArch
            | Code::PolicyMissingPtx
            | Code::PolicyForbiddenLibrary
            | Code::WaiverUnused
            | Code::WaiverExpired
    )
}

/// Whether the binary's device code was read and can be judged: unread code (`--no-device-code`), a file that
/// is no binary, or one that could not be read, gives no verdict ("will run" cannot be said of kernels nobody
/// looked at); its findings about the driver and the runtime still come.
fn judged(b: &BinaryFacts) -> bool {
    b.format.is_some()
        && !b.device_code_skipped
        && !b
            .problems
            .iter()
            .any(|p| p.kind == crate::facts::ProblemKind::Unrecognized)
}

/// One verdict per binary and GPU compute capability, read from the findings (`evaluate`, after any policy):
/// the process fails on a GPU when a finding about it or an object it maps, or about the machine, stops it there
/// ([`stops`]); it runs after JIT when its code must be JIT-compiled there; otherwise it runs. A process
/// without device code of its own or in the libraries it loads, and that nothing stops, has no kernels to
/// judge. Empty when no GPU is known.
pub fn verdicts(facts: &Facts, findings: &[Finding], m: &Matrix) -> Vec<Verdict> {
    let targets = targets(facts.host.as_ref(), m);
    if targets.is_empty() {
        return Vec::new();
    }
    let index = super::process::FindingIndex::new(findings);
    let mut out = Vec::new();
    for p in super::process::processes(facts) {
        let b = p.binary;
        if !judged(b) {
            continue;
        }
        let about = index.of(&p);
        for t in &targets {
            let here: Vec<&Finding> = about
                .iter()
                .copied()
                .filter(|f| f.gpu.as_deref().is_none_or(|g| g == t.label))
                .collect();
            out.push(verdict(
                &p,
                t,
                &here,
                super::process::python_imports(facts, &b.path),
            ));
        }
    }
    out
}

/// Did every judged import, and its first GPU use, end on the GPU (`cudadiag import`'s outcome kinds)?
fn all_use_the_gpu(py: &crate::facts::image::ImageImports) -> bool {
    let Some(imports) = py.detail.get("imports").and_then(|i| i.as_array()) else {
        return false;
    };
    let on_gpu = |step: &serde_json::Value| step["outcome"]["kind"] == "gpu";
    !imports.is_empty()
        && imports
            .iter()
            .all(|i| on_gpu(&i["import"]) && on_gpu(&i["first_use"]))
}

/// The verdict on one GPU from the findings that hold there, most severe first.
fn verdict(
    p: &super::process::Process<'_>,
    t: &Target,
    fs: &[&Finding],
    python: Option<&crate::facts::image::ImageImports>,
) -> Verdict {
    // What the verdict rests on: what stops the process, and its caveats (warnings); not notes, not a release
    // policy's own checks.
    let behind: Vec<&Finding> = fs
        .iter()
        .copied()
        .filter(|f| stops(f) || (f.severity == Severity::Warning && !gate(f)))
        .collect();
    // The machine's own faults come first: nothing of the program runs without a usable driver and device.
    let stop = behind
        .iter()
        .find(|f| stops(f) && f.path.is_none() && f.gpu.is_none())
        .or_else(|| behind.iter().find(|f| stops(f)));
    // Each code once (four missing libraries are one reason to fail), the reason's first, then most severe first.
    let mut codes: Vec<String> = stop.map(|f| vec![f.slug.clone()]).unwrap_or_default();
    for f in &behind {
        if !codes.contains(&f.slug) {
            codes.push(f.slug.clone());
        }
    }
    let caveats = || {
        behind
            .iter()
            .map(|f| f.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    };
    let (outcome, reason) = if let Some(e) = stop {
        (Outcome::Fails, e.message.clone())
    } else if behind.iter().any(|f| f.code == Code::PtxJitRequired) {
        (Outcome::RunsAfterJit, caveats())
    } else if let Some(py) = python.filter(|py| !has_loadable_code(p.binary) && all_use_the_gpu(py)) {
        // An interpreter judged by its imports: nothing stops them, so their first GPU use runs there.
        let mut reason = format!(
            "judged as Python: `import {}` uses the GPU (docs/python-frameworks.md)",
            py.modules.join("`, `import ")
        );
        if !behind.is_empty() {
            reason = format!("{reason}; {}", caveats());
        }
        (Outcome::Runs, reason)
    } else if !has_loadable_code(p.binary) && p.libraries.is_empty() {
        (
            Outcome::NoDeviceCode,
            "no device code of its own; the libraries it loads carry their own".into(),
        )
    } else {
        (Outcome::Runs, caveats())
    };
    Verdict {
        binary: p.binary.path.clone(),
        gpu: t.label.clone(),
        outcome,
        reason,
        codes: if outcome == Outcome::NoDeviceCode {
            Vec::new()
        } else {
            codes
        },
    }
}
