//! `fleet --artifact`: will this program, library, directory or wheel run on each node?
//!
//! The artefact is read once ([`Artefact::read`], as `audit` reads its inputs: files, directories walked,
//! wheels opened) and its facts are judged against each node's recorded host facts with the rules and
//! verdicts `inspect --facts node.json app` uses: the same question, asked once per node, never re-reading
//! the artefact. What a node's report cannot answer is left out and said so: the loader tree (which
//! libraries the node's filesystem provides) is not in a report, so library findings are not predicted; run
//! `inspect` on the node (or `inspect --root` on its image) for them.
//!
//! A container image (`fleet --image`) is judged elsewhere (`diagnose::image::fleet`, through the code of
//! `inspect --image`): its per-node step (what the NVIDIA Container Toolkit does on that node, which mounts
//! the node's libraries into the image's tree) needs an unpacked tree per distinct set of mounts; its answer is
//! the same [`Prediction`], made by [`Prediction::of`] from the findings and verdicts as here.

use crate::facts::{Facts, HostFacts};
use crate::findings::{Finding, Severity};
use crate::matrix::Matrix;
use crate::rules::{Outcome as VerdictOutcome, Verdict};
use serde::Serialize;

/// The facts of what is judged, read once.
#[derive(Debug)]
pub struct Artefact {
    /// The paths given.
    pub paths: Vec<String>,
    /// Its binaries (and wheels), with no host.
    facts: Facts,
}

/// What is predicted for one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// An error stops it there.
    Fails,
    /// It runs once the driver has JIT-compiled its PTX (slow first start; fails where JIT is disabled).
    RunsAfterJit,
    /// It runs.
    Runs,
    /// It has no device code of its own to judge; nothing else stops it.
    NoDeviceCode,
    /// The node's file has no facts to judge it on (no GPU recorded, or a report without host facts).
    Unknown,
}

impl Outcome {
    /// The name used in every output.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Fails => "fails",
            Outcome::RunsAfterJit => "runs-after-jit",
            Outcome::Runs => "runs",
            Outcome::NoDeviceCode => "no-device-code",
            Outcome::Unknown => "unknown",
        }
    }
}

/// The artefact's predicted outcome on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prediction {
    /// The outcome.
    pub outcome: Outcome,
    /// Why, one line: the first error (or the caveats of a run after JIT); empty when it just runs.
    pub reason: String,
    /// The slugs of the findings behind a failure, most severe first, each once.
    pub codes: Vec<String>,
}

impl Artefact {
    /// Reads the artefact: executables, libraries, directories (walked) and wheels, as `audit` reads them.
    pub fn read(paths: &[std::path::PathBuf]) -> Result<Artefact, String> {
        // An image is not judged as a file: what runs is its entrypoint, in its tree, with what the container
        // toolkit mounts there, which `--image` predicts.
        if let Some(image) = paths
            .iter()
            .find(|p| p.extension().is_none_or(|x| x != "whl") && crate::image::looks_like_image(p))
        {
            return Err(format!(
                "--artifact {0}: a container image; judge it with `cudadiag fleet --image {0} …`, which runs its \
                 entrypoint in its own tree with what the NVIDIA Container Toolkit mounts on each node",
                image.display()
            ));
        }
        let opts = crate::inspect::InspectOptions::default();
        let (binaries, wheels) = crate::inspect::wheel::collect(paths, &opts).map_err(|e| e.to_string())?;
        if binaries.is_empty() {
            let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            return Err(format!(
                "--artifact {}: no program, library or device code found",
                shown.join(" ")
            ));
        }
        let mut facts = Facts {
            binaries,
            wheels,
            ..Facts::default()
        };
        // A wheel's pinned CUDA runtime is the runtime its binaries run with: the driver is checked against it.
        let pip = crate::rules::wheel::Table::bundled()?;
        crate::rules::wheel::resolve(&mut facts, &pip);
        Ok(Artefact {
            paths: paths.iter().map(|p| p.display().to_string()).collect(),
            facts,
        })
    }

    /// A copy of the artefact's facts for one thread to judge nodes with (its host replaced per node).
    pub fn judge_facts(&self) -> Facts {
        self.facts.clone()
    }

    /// Predicts the artefact's outcome on the node whose host facts are `host`, in `facts` (a copy of the
    /// artefact's from [`Artefact::judge_facts`]; its host is the node's for the time of the call).
    pub fn predict(&self, host: Option<HostFacts>, facts: &mut Facts, matrix: &Matrix) -> Prediction {
        let Some(mut host) = host else {
            return Prediction::no_host();
        };
        crate::host::enrich::with_matrix(&mut host, matrix);
        facts.host = Some(host);
        let findings = crate::rules::evaluate(facts, matrix);
        let verdicts = crate::rules::verdicts(facts, &findings, matrix);
        facts.host = None;
        Prediction::of(&findings, &verdicts)
    }
}

impl Prediction {
    /// The prediction on a node whose file holds no host facts (a report of `inspect --no-host`).
    pub fn no_host() -> Prediction {
        Prediction {
            outcome: Outcome::Unknown,
            reason: "the node's file holds no host facts to judge on".into(),
            codes: Vec::new(),
        }
    }

    /// A node left unjudged, and why (a bound of `fleet --image`).
    pub fn not_judged(reason: String) -> Prediction {
        Prediction {
            outcome: Outcome::Unknown,
            reason,
            codes: Vec::new(),
        }
    }

    /// The prediction a judgement gives: its findings (most severe first) and verdicts, as `inspect` reports
    /// them. `fleet --artifact` and `fleet --image` both answer through here.
    pub fn of(findings: &[Finding], verdicts: &[Verdict]) -> Prediction {
        let mut codes: Vec<String> = Vec::new();
        for f in findings.iter().filter(|f| f.severity == Severity::Error) {
            if !codes.contains(&f.slug) {
                codes.push(f.slug.clone());
            }
        }
        let failing = verdicts.iter().find(|v| v.outcome == VerdictOutcome::Fails);
        if let Some(v) = failing {
            for c in &v.codes {
                if !codes.contains(c) {
                    codes.push(c.clone());
                }
            }
        }
        let first_error = findings.iter().find(|f| f.severity == Severity::Error);
        if failing.is_some() || first_error.is_some() {
            let reason = failing
                .map(|v| v.reason.clone())
                .or_else(|| first_error.map(|f| f.message.clone()))
                .unwrap_or_default();
            // The verdict's own first code leads: it is the reason given.
            if let Some(first) = failing.and_then(|v| v.codes.first())
                && let Some(i) = codes.iter().position(|c| c == first)
            {
                let c = codes.remove(i);
                codes.insert(0, c);
            }
            return Prediction {
                outcome: Outcome::Fails,
                reason,
                codes,
            };
        }
        if let Some(v) = verdicts
            .iter()
            .find(|v| v.outcome == VerdictOutcome::RunsAfterJit)
        {
            return Prediction {
                outcome: Outcome::RunsAfterJit,
                reason: v.reason.clone(),
                codes: v.codes.clone(),
            };
        }
        if verdicts.iter().any(|v| v.outcome == VerdictOutcome::Runs) {
            return Prediction {
                outcome: Outcome::Runs,
                reason: String::new(),
                codes: Vec::new(),
            };
        }
        if !verdicts.is_empty() {
            return Prediction {
                outcome: Outcome::NoDeviceCode,
                reason: "no device code of its own; nothing on the node stops it".into(),
                codes: Vec::new(),
            };
        }
        Prediction {
            outcome: Outcome::Unknown,
            reason: "no GPU in the node's facts: its kernels cannot be judged".into(),
            codes: Vec::new(),
        }
    }
}

/// The image `fleet --image` judged.
#[derive(Debug, Clone, Serialize)]
pub struct ImageJudged {
    /// The image's path, as given.
    pub path: String,
    /// Its program, as a path inside it (its entrypoint's, found as `inspect --image` finds it).
    pub program: String,
    /// How many times it was unpacked (once: each distinct set of the toolkit's mounts is made and undone on
    /// the same tree).
    pub unpacked: usize,
    /// The distinct sets of the toolkit's mounts (driver versions) the nodes were judged with.
    pub mount_sets: usize,
}
