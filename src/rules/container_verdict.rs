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

use super::compat::{Outcome, Verdict, verdicts};

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
    let mut verdicts = verdicts(facts, &findings, matrix);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{BinaryFacts, DriverFacts, Format, GpuFacts, HostFacts};

    fn program_on_a_gpu() -> Facts {
        Facts {
            binaries: vec![BinaryFacts {
                path: "/usr/bin/app".into(),
                format: Some(Format::Elf),
                ..BinaryFacts::default()
            }],
            host: Some(HostFacts {
                observed: true,
                driver: Some(DriverFacts {
                    version: "580.95.05".into(),
                    source: "test".into(),
                }),
                gpus: vec![GpuFacts {
                    name: "NVIDIA H200".into(),
                    cc: Some("9.0".into()),
                    source: "test".into(),
                    ..GpuFacts::default()
                }],
                ..HostFacts::default()
            }),
            ..Facts::default()
        }
    }

    #[test]
    fn a_container_the_toolkit_refuses_fails_on_every_gpu_for_its_reason() {
        let m = Matrix::bundled().expect("the bundled matrix parses");
        let facts = program_on_a_gpu();
        let refusal = Finding::new(
            Code::ContainerRequirementUnmet,
            "the toolkit refuses to start the container: cuda>=13.0",
            "run it on a node whose driver serves CUDA 13",
        );
        let (findings, verdicts) =
            evaluate(&facts, &m, std::slice::from_ref(&refusal), &ImageFacts::default());
        assert!(!verdicts.is_empty(), "a program on a known GPU has a verdict");
        assert_eq!(findings[0].code, Code::ContainerRequirementUnmet);
        for v in &verdicts {
            assert_eq!(v.outcome, Outcome::Fails, "{v:?}");
            assert_eq!(v.reason, refusal.message);
            assert_eq!(v.codes[0], refusal.slug);
        }
    }

    #[test]
    fn a_toolkit_finding_that_starts_the_container_leaves_the_verdicts_to_the_machine_rules() {
        let m = Matrix::bundled().expect("the bundled matrix parses");
        let facts = program_on_a_gpu();
        let (_, alone) = evaluate(&facts, &m, &[], &ImageFacts::default());
        let note = Finding::new(
            Code::ContainerGpusFromRun,
            "the GPUs come from the run's --gpus",
            "nothing to do",
        );
        let (findings, with) = evaluate(&facts, &m, &[note], &ImageFacts::default());
        assert!(findings.iter().any(|f| f.code == Code::ContainerGpusFromRun));
        assert!(!alone.is_empty());
        let outcomes = |v: &[Verdict]| {
            v.iter()
                .map(|v| (v.outcome, v.reason.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(outcomes(&alone), outcomes(&with));
    }
}
