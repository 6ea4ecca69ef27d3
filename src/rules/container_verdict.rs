//! The NVIDIA Container Toolkit's effect on the verdicts of an image's program (`inspect --image`,
//! `fleet --image`).
//!
//! A container the toolkit refuses to start never runs its program: whatever the machine's rules say of the
//! program's device code or libraries, the verdict on every GPU is that it fails, for the toolkit's reason.
//! So the toolkit's findings come first, then the machine's rules and the image's own (its `User`), most
//! severe first (a stable sort): that refusal is the answer to lead with, and each verdict's reason.

use crate::facts::Facts;
use crate::facts::image::ImageFacts;
use crate::findings::{Code, Finding};
use crate::matrix::Matrix;

use super::{Outcome, Verdict};

/// The findings and verdicts of an image's program in a container: `facts` carry the container's host facts,
/// `toolkit` the toolkit's findings on the node (none without a node), `image` what the image's own rules read.
pub fn evaluate(
    facts: &Facts,
    matrix: &Matrix,
    toolkit: &[Finding],
    image: &ImageFacts,
) -> (Vec<Finding>, Vec<Verdict>) {
    let mut findings = toolkit.to_vec();
    findings.extend(super::evaluate(facts, matrix));
    findings.extend(super::image::user(image));
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    let mut verdicts = super::verdicts(facts, &findings, matrix);
    if let Some(stop) = findings.iter().find(|f| stops_the_container(f.code)) {
        for v in &mut verdicts {
            v.outcome = Outcome::Fails;
            v.reason = stop.message.clone();
            v.codes.retain(|c| *c != stop.slug);
            v.codes.insert(0, stop.slug.clone());
        }
    }
    (findings, verdicts)
}

/// Whether the NVIDIA Container Toolkit refuses to start the container for this finding, so that nothing of
/// the image runs at all.
fn stops_the_container(code: Code) -> bool {
    matches!(
        code,
        Code::ContainerRequirementUnmet
            | Code::ContainerConfigInvalid
            | Code::ContainerUnknownDevice
            | Code::ContainerUserUnknown
    )
}
