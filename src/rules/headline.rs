//! The first lines of a human report: for each binary (or, for `doctor`, the machine), will it run, and the one
//! reason why.
//!
//! A person reads the top of a report and stops. The answer there is the verdict when a GPU is known
//! ([`super::verdicts`]); without one (`--no-host`, a build box) it is whether anything stops the binary at all:
//! its first error, and how many more there are. The renderer only prints these; every judgement is here.

use super::compat::{Outcome, Verdict, stops};
use super::process::{FindingIndex, processes};
use crate::facts::Facts;
use crate::findings::Finding;
use serde::Serialize;
use std::collections::HashMap;

/// What a headline says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// The verdict on a GPU: it runs as is.
    Runs,
    /// The verdict on a GPU: it runs once the driver has JIT-compiled its PTX.
    RunsAfterJit,
    /// An error stops it (with a GPU known or not).
    Fails,
    /// The verdict on a GPU: it has no device code of its own to judge.
    NoDeviceCode,
    /// No GPU is known and no error was found: what it can say without one.
    NoError,
}

/// One line at the top of the human report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Headline {
    /// The binary, or `None` for the machine itself (`doctor`).
    pub subject: Option<String>,
    /// The GPU it was judged on, when one is known.
    pub gpu: Option<String>,
    /// The answer.
    pub standing: Standing,
    /// Why, one line (the first error's message without the binary's name, or the caveats); may be empty.
    pub why: String,
    /// How many other errors stop it as well.
    pub more_errors: usize,
}

/// One headline per verdict; for a binary without one, the first error that stops its process (an error at it
/// or an object it maps, or the machine's) or "no error"; for a report of the machine alone (`doctor`), the
/// machine's. Findings and verdicts are looked up by path, once each: the time is linear in the report's size.
pub fn headlines(facts: &Facts, findings: &[Finding], verdicts: &[Verdict]) -> Vec<Headline> {
    let strip = |subject: &str, message: &str| {
        message
            .strip_prefix(&format!("{subject}: "))
            .unwrap_or(message)
            .to_string()
    };
    let index = FindingIndex::new(findings);
    let mut by_binary: HashMap<&str, Vec<&Verdict>> = HashMap::new();
    for v in verdicts {
        by_binary.entry(v.binary.as_str()).or_default().push(v);
    }
    let mut out = Vec::new();
    for p in processes(facts) {
        let b = p.binary;
        let errors: Vec<&Finding> = index.of(&p).into_iter().filter(|f| stops(f)).collect();
        let Some(mine) = by_binary.get(b.path.as_str()) else {
            // The machine's own faults first, as a verdict would give them.
            let first = errors
                .iter()
                .find(|f| f.path.is_none() && f.gpu.is_none())
                .or(errors.first());
            out.push(Headline {
                subject: Some(b.path.clone()),
                gpu: None,
                standing: if errors.is_empty() {
                    Standing::NoError
                } else {
                    Standing::Fails
                },
                why: first.map(|e| strip(&b.path, &e.message)).unwrap_or_default(),
                more_errors: errors.len().saturating_sub(1),
            });
            continue;
        };
        for v in mine {
            let standing = match v.outcome {
                Outcome::Runs => Standing::Runs,
                Outcome::RunsAfterJit => Standing::RunsAfterJit,
                Outcome::Fails => Standing::Fails,
                Outcome::NoDeviceCode => Standing::NoDeviceCode,
            };
            // The verdict's reason is one of the errors that stop it on its GPU: the others are counted.
            let more_errors = if standing == Standing::Fails {
                errors
                    .iter()
                    .filter(|e| e.gpu.as_deref().is_none_or(|g| g == v.gpu))
                    .filter(|e| e.message != v.reason)
                    .count()
            } else {
                0
            };
            out.push(Headline {
                subject: Some(b.path.clone()),
                gpu: Some(v.gpu.clone()),
                standing,
                why: strip(&b.path, &v.reason),
                more_errors,
            });
        }
    }
    if facts.binaries.is_empty() && facts.host.as_ref().is_some_and(|h| h.observed) {
        let errors: Vec<&Finding> = findings.iter().filter(|f| stops(f)).collect();
        out.push(Headline {
            subject: None,
            gpu: None,
            standing: if errors.is_empty() {
                Standing::NoError
            } else {
                Standing::Fails
            },
            why: errors.first().map(|e| e.message.clone()).unwrap_or_default(),
            more_errors: errors.len().saturating_sub(1),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::BinaryFacts;
    use crate::findings::Code;

    fn facts(paths: &[&str]) -> Facts {
        Facts {
            binaries: paths
                .iter()
                .map(|p| BinaryFacts {
                    path: p.to_string(),
                    ..BinaryFacts::default()
                })
                .collect(),
            ..Facts::default()
        }
    }

    #[test]
    fn without_a_gpu_the_first_error_of_each_binary_and_a_count_of_the_rest() {
        let f = facts(&["app", "tool"]);
        let findings = vec![
            Finding::new(Code::LibraryNotFound, "app: libcudart.so.12 will not load", "").at("app"),
            Finding::new(Code::LibraryNotFound, "app: libcublas.so.12 will not load", "").at("app"),
            Finding::new(Code::NoDeviceCode, "tool: no CUDA device code", "").at("tool"),
        ];
        let h = headlines(&f, &findings, &[]);
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].standing, Standing::Fails);
        assert_eq!(h[0].why, "libcudart.so.12 will not load");
        assert_eq!(h[0].more_errors, 1);
        // A note does not stop a binary.
        assert_eq!(h[1].standing, Standing::NoError);
        assert_eq!(h[1].why, "");
    }

    #[test]
    fn with_a_gpu_one_headline_per_verdict() {
        let f = facts(&["app"]);
        let v = |gpu: &str, outcome| Verdict {
            binary: "app".into(),
            gpu: gpu.into(),
            outcome,
            reason: if outcome == Outcome::Fails {
                "app: no kernel image".into()
            } else {
                String::new()
            },
            codes: Vec::new(),
        };
        let findings = vec![Finding::new(Code::NoKernelImage, "app: no kernel image", "").at("app")];
        let h = headlines(
            &f,
            &findings,
            &[v("CC 7.0", Outcome::Fails), v("CC 9.0", Outcome::Runs)],
        );
        assert_eq!(h.len(), 2);
        assert_eq!(
            (h[0].standing, h[0].why.as_str(), h[0].more_errors),
            (Standing::Fails, "no kernel image", 0)
        );
        assert_eq!(h[1].standing, Standing::Runs);
        assert_eq!(h[1].gpu.as_deref(), Some("CC 9.0"));
    }
}
