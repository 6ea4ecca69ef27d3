//! Rules: pure functions from [`Facts`] and the [`Matrix`] to [`Finding`]s.
//!
//! No rule does I/O, so the same facts give the same findings anywhere: live, under `--root`, or read back from
//! a snapshot, or with what-if targets (`--gpu`, `--driver`). Each concern has its own module and each finding
//! its own function.
//!
//! Two pipelines own the order in which the rules run, the severities and the waivers, as cargo-deny's sink
//! does: [`evaluate`] for `inspect`, `doctor`, `probe` and `explain --check` (a machine, real or what-if), and
//! [`evaluate_release`] for `audit` (release artifacts against a policy); [`container_verdict`] runs the first
//! for an image's program in a container. Commands call one of them and never a rule of their own.
//!
//! What a report shows is one [`Judgement`]: the findings, the verdicts, and what is read from them (the
//! headlines, the loader tree's fixes, each process's glibc floor). The report presents it and computes
//! nothing.

mod binary;
pub mod cdi;
pub mod compat;
pub mod container_verdict;
pub mod cpu_only;
pub mod device_order;
pub mod driver;
pub mod driver_files;
pub mod duplicates;
pub mod extension_abi;
pub mod glibc;
pub mod headline;
pub mod host;
pub mod image;
pub mod jax_versions;
pub mod jetson;
pub mod jit_cache;
pub mod kernel_image;
pub mod library_versions;
pub mod loader;
pub mod missing;
pub mod nccl;
pub mod node;
pub mod not_found;
pub mod packages;
mod pins;
pub mod policy;
pub mod probe;
pub mod process;
pub mod ptxas;
pub mod secure_boot;
pub mod target;
pub mod visibility;
pub mod wheel;

use crate::facts::Facts;
use crate::facts::loader::Resolution;
use crate::findings::{Code, Finding};
use crate::glibc::GlibcNeed;
use crate::matrix::Matrix;
use crate::policy::Policy;
use std::collections::BTreeMap;

pub use compat::{Outcome, Verdict, stops, verdicts};
pub use headline::{Headline, Standing, headlines};
pub use loader::Fixes;
pub use packages::Providers;

/// One judgement of the facts: the findings, the verdicts read from them, and what a report shows of them.
/// The first line of a report, the JSON outcome and the exit status all come from it, so they cannot
/// disagree.
#[derive(Debug, Clone, Default)]
pub struct Judgement {
    /// Every finding, most severe first.
    pub findings: Vec<Finding>,
    /// One verdict per inspected program and GPU, from [`Judgement::findings`].
    pub verdicts: Vec<Verdict>,
    /// The first lines of the human report: per binary (or for the machine), will it run and why.
    pub headlines: Vec<Headline>,
    /// The one-line fix of each library no search found, for the loader tree (`inspect -v`).
    pub fixes: Fixes,
    /// The glibc floor of each binary's whole process ([`glibc::tree_floor`]).
    pub glibc_floors: GlibcFloors,
}

/// The glibc floor of each binary's process, by the binary's path (its first loader tree): the object that
/// needs the highest glibc version, and that need; `None` when no object of the tree needs a version.
pub type GlibcFloors = BTreeMap<String, Option<(String, GlibcNeed)>>;

impl Judgement {
    /// The judgement made of `findings` and `verdicts` on `facts`: with its headlines, fixes and floors.
    pub fn of(facts: &Facts, findings: Vec<Finding>, verdicts: Vec<Verdict>) -> Judgement {
        Judgement {
            headlines: headlines(facts, &findings, &verdicts),
            fixes: loader::missing_fixes(&facts.libraries),
            glibc_floors: glibc_floors(&facts.libraries),
            findings,
            verdicts,
        }
    }
}

impl Judgement {
    /// This judgement with `more` findings joined (the frameworks' of the active Python environment, for
    /// `doctor`): most severe first again, and the headlines made again, so that the first line, the findings
    /// and the exit status still agree.
    pub fn with(mut self, facts: &Facts, more: Vec<Finding>) -> Judgement {
        if more.is_empty() {
            return self;
        }
        self.findings.extend(more);
        self.findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        self.headlines = headlines(facts, &self.findings, &self.verdicts);
        self
    }
}

/// Judges the facts for a machine (real or what-if): [`evaluate`], then [`verdicts`] from its findings.
pub fn judge(facts: &Facts, matrix: &Matrix) -> Judgement {
    let findings = evaluate(facts, matrix);
    let verdicts = verdicts(facts, &findings, matrix);
    Judgement::of(facts, findings, verdicts)
}

/// Each binary's process glibc floor ([`GlibcFloors`]).
fn glibc_floors(libraries: &[Resolution]) -> GlibcFloors {
    let mut floors = GlibcFloors::new();
    for r in libraries {
        floors
            .entry(r.binary.clone())
            .or_insert_with(|| glibc::tree_floor(r).map(|(o, need)| (o.path.clone(), need)));
    }
    floors
}

/// Runs every rule over the facts, returning findings most severe first (stable within a severity).
pub fn evaluate(facts: &Facts, matrix: &Matrix) -> Vec<Finding> {
    let mut findings = Vec::new();
    for p in process::processes(facts) {
        let b = p.binary;
        findings.extend(binary::malformed(b));
        findings.extend(binary::unrecognized(b));
        findings.extend(binary::unreadable(b));
        if process::python_imports(facts, &b.path).is_none() {
            findings.extend(binary::no_device_code(b, &p.libraries));
        }
    }
    findings.extend(compat::findings(facts, matrix));
    findings.extend(loader::evaluate_on(
        &facts.libraries,
        facts.glibc(),
        &facts.binaries,
        facts.loader_on_host,
    ));
    for r in &facts.libraries {
        findings.extend(duplicates::duplicate_cuda_libraries(r));
        findings.extend(library_versions::cuda_library_too_old(r));
    }
    findings.extend(nccl::nccl_cuda_mismatch(facts, matrix));
    findings.extend(ptxas::ptxas_too_old(facts, matrix));
    for e in &facts.python {
        findings.extend(jax_versions::jax_plugin_version_mismatch(e));
        findings.extend(extension_abi::framework_extension_abi_mismatch(e));
        let gpus = facts.host.as_ref().map(|h| h.gpus.as_slice()).unwrap_or_default();
        findings.extend(cpu_only::cpu_only_framework_build(e, gpus));
    }
    if let Some(h) = &facts.host {
        findings.extend(host::evaluate(h));
        findings.extend(secure_boot::secure_boot_blocks_module(h));
        findings.extend(node::evaluate(h));
    }
    // Last: the probe is compared with every static finding above.
    probe::evaluate(facts, &mut findings);
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    findings
}

/// The release pipeline of `audit`: the machine rules that make sense for a release (every one of
/// [`evaluate`] but `no-device-code`: host-only libraries are normal in a release), judged against the
/// policy's targets (`facts.host` is [`policy::target_host`]); the policy's `min-driver` taking over from
/// `driver-insufficient`; the wheels' dependencies (`pip`, after [`wheel::resolve`] filled the facts); the
/// policy's own checks; then its severity overrides and waivers as of `today` (unused and expired waivers are
/// findings too). Most severe first.
pub fn evaluate_release(
    facts: &Facts,
    policy: &Policy,
    matrix: &Matrix,
    pip: &wheel::Table,
    today: (i32, u32, u32),
) -> Vec<Finding> {
    let findings: Vec<Finding> = evaluate(facts, matrix)
        .into_iter()
        .filter(|f| f.code != Code::NoDeviceCode)
        .collect();
    let mut findings = policy::min_driver(findings, policy);
    findings.extend(wheel::evaluate(facts, pip));
    findings.extend(policy::evaluate(facts, policy, matrix));
    let mut findings = policy::apply(findings, policy, today);
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    findings
}
