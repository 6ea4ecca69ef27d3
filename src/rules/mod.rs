//! Rules: pure functions from [`Facts`] and the [`Matrix`] to [`Finding`]s.
//!
//! No rule does I/O, so the same facts give the same findings anywhere: live, under `--root`, or read back from
//! a snapshot, or with what-if targets (`--gpu`, `--driver`). Each concern has its own module and each finding
//! its own function.

mod binary;
pub mod cdi;
pub mod compat;
pub mod device_order;
pub mod driver;
pub mod driver_files;
pub mod duplicates;
pub mod glibc;
pub mod headline;
pub mod host;
pub mod jit_cache;
pub mod kernel_image;
pub mod library_versions;
pub mod loader;
pub mod missing;
pub mod packages;
pub mod policy;
pub mod probe;
pub mod visibility;
pub mod wheel;

use crate::facts::Facts;
use crate::findings::Finding;
use crate::matrix::Matrix;

pub use compat::{Outcome, Verdict, verdicts};
pub use headline::{Headline, Standing, headlines};

/// Runs every rule over the facts, returning findings most severe first (stable within a severity).
pub fn evaluate(facts: &Facts, matrix: &Matrix) -> Vec<Finding> {
    let mut findings = Vec::new();
    for b in &facts.binaries {
        findings.extend(binary::malformed(b));
        findings.extend(binary::unrecognized(b));
        findings.extend(binary::unreadable(b));
        findings.extend(binary::no_device_code(b));
    }
    findings.extend(compat::findings(facts, matrix));
    findings.extend(loader::evaluate_on(
        &facts.libraries,
        facts.glibc(),
        &facts.binaries,
    ));
    for r in &facts.libraries {
        findings.extend(duplicates::duplicate_cuda_libraries(r));
        findings.extend(library_versions::cuda_library_too_old(r));
    }
    if let Some(h) = &facts.host {
        findings.extend(host::evaluate(h));
    }
    // Last: the probe is compared with every static finding above.
    probe::evaluate(facts, &mut findings);
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    findings
}
