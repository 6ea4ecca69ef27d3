//! What a pasted error message means: the message is read into typed values (`read`: error numbers in every
//! form, library names with their CUDA release, versions compiled against and loaded, architectures), the
//! recognisers of each tool's messages (`known`) turn those into candidate causes with a score, a reason and
//! the check that tells them apart, and the candidates are ranked. [`diagnose`] is a pure function of the text
//! and the matrix: `cudadiag explain` renders it, and the corpus test calls it directly.
//!
//! A candidate is either a finding of the catalogue (a rule can confirm it: `explain --check`) or a cause
//! that only `explain` knows ([`causes`]): something no file on the machine shows, such as a container that
//! lost its device rules after the host reloaded systemd.

pub mod causes;
mod known;
pub mod read;
pub mod sonames;
mod vote;

use crate::matrix::Matrix;
use serde::Serialize;
use vote::{Hit, resolve};

/// How strongly the text points at a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    /// One of several causes the text fits; the check decides.
    Low,
    /// The likely cause, with another one plausible.
    Medium,
    /// The text names this cause (a message only it prints, or a number only it gives).
    High,
}

impl Confidence {
    fn of(score: u32) -> Confidence {
        match score {
            80.. => Confidence::High,
            50..=79 => Confidence::Medium,
            _ => Confidence::Low,
        }
    }
}

/// One cause the message fits.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    /// The finding's or cause's slug (`library-not-found`, `container-lost-device-rules`).
    pub slug: &'static str,
    /// The finding code, for a finding of the catalogue; `None` for a cause only `explain` knows.
    pub code: Option<&'static str>,
    /// How strongly the text points at it.
    pub confidence: Confidence,
    /// The score the ranking used (0 to 100).
    pub score: u32,
    /// What in the text points at it.
    pub why: Vec<String>,
    /// What tells it apart from the other candidates: a command to run, or `explain --check`.
    pub check: String,
    /// The CUDA error it gives, when it gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_error: Option<u32>,
    /// The libraries the text names that this candidate is about, with the CUDA releases of each name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub libraries: Vec<sonames::Identified>,
}

/// What the text says, and the causes it fits, best first.
#[derive(Debug, Clone, Default)]
pub struct Diagnosis {
    /// The values read from the text.
    pub read: read::Read,
    /// The candidates, best first.
    pub candidates: Vec<Candidate>,
}

/// Reads `text` and ranks the causes it fits. Pure: no I/O.
pub fn diagnose(text: &str, m: &Matrix) -> Diagnosis {
    let r = read::read(text, m);
    let mut hits = Vec::new();
    known::recognise(&r, m, &mut hits);
    Diagnosis {
        candidates: rank(hits),
        read: r,
    }
}

/// Merges the votes per slug (the best score wins, each reason kept once, a second independent reason adds a
/// little) and sorts them best first; a slug that is neither a finding nor a cause is dropped (a test checks
/// there is none).
fn rank(hits: Vec<Hit>) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for h in hits {
        let Some((slug, code, cuda_error)) = resolve(h.slug) else {
            continue;
        };
        if let Some(c) = out.iter_mut().find(|c| c.slug == slug) {
            if !c.why.contains(&h.why) {
                c.why.push(h.why);
                c.score = (c.score.max(h.score) + 3).min(100);
            }
            if h.score > c.score {
                c.score = h.score;
                c.check = h.check;
            }
            for l in h.libraries {
                if !c.libraries.contains(&l) {
                    c.libraries.push(l);
                }
            }
            continue;
        }
        out.push(Candidate {
            slug,
            code,
            confidence: Confidence::Low,
            score: h.score,
            why: vec![h.why],
            check: h.check,
            cuda_error,
            libraries: h.libraries,
        });
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.score));
    // Two candidates close to each other: neither is certain.
    let second = out.get(1).map_or(0, |c| c.score);
    for (i, c) in out.iter_mut().enumerate() {
        c.confidence = Confidence::of(c.score);
        if i == 0 && c.confidence == Confidence::High && second + 10 >= c.score {
            c.confidence = Confidence::Medium;
        }
    }
    out
}

#[cfg(test)]
mod tests;
