//! What the renderers present: the [`Report`] (the facts and the engine's judgement of them, as they are) and
//! how to render it.

use super::paint::Paint;
use crate::facts::Facts;
use crate::findings::{Finding, Severity};

pub use crate::diagnose::Fixes;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Text for people (colour when the terminal allows it).
    Human,
    /// The stable JSON contract (`schema_version` 1).
    Json,
    /// SARIF 2.1.0, for code-scanning dashboards.
    Sarif,
    /// JUnit XML, for CI test reports.
    Junit,
    /// GitHub Actions annotations (`::error file=…::…`).
    Github,
}

/// Formats of documents that are not finding reports (`codes`, `explain`, `matrix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DocFormat {
    /// Text for people.
    Human,
    /// JSON.
    Json,
}

/// What a command found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The facts the findings rest on.
    pub facts: Facts,
    /// Findings, most severe first.
    pub findings: Vec<Finding>,
    /// One verdict per binary and GPU (empty when no GPU is known).
    pub verdicts: Vec<crate::diagnose::Verdict>,
    /// The first lines of the human report: per binary (or for the machine), will it run and why.
    pub headlines: Vec<crate::diagnose::Headline>,
    /// The rules' one-line fix of each library no search found, for the loader tree (`inspect -v`).
    pub fixes: Fixes,
    /// The rules' glibc floor of each binary's whole process.
    pub glibc_floors: crate::diagnose::GlibcFloors,
    /// The Python environment's frameworks, each judged (`inspect` of an environment, `doctor`); their
    /// findings are among [`Report::findings`].
    pub python: Option<crate::diagnose::frameworks::Frameworks>,
}

impl Report {
    /// A report of `facts` and the rules' judgement of them, as it is: the report computes nothing.
    pub fn new(facts: Facts, judgement: crate::diagnose::Judgement) -> Report {
        let crate::diagnose::Judgement {
            findings,
            verdicts,
            headlines,
            fixes,
            glibc_floors,
        } = judgement;
        Report {
            facts,
            findings,
            verdicts,
            headlines,
            fixes,
            glibc_floors,
            python: None,
        }
    }
}

/// Counts per severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Findings of severity error.
    pub errors: usize,
    /// Findings of severity warning.
    pub warnings: usize,
    /// Findings of severity note.
    pub notes: usize,
}

impl Report {
    /// Counts the findings per severity.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for f in &self.findings {
            match f.severity {
                Severity::Error => s.errors += 1,
                Severity::Warning => s.warnings += 1,
                Severity::Note => s.notes += 1,
            }
        }
        s
    }

    /// Whether any finding is at or above `threshold` (`None`: never fail).
    pub fn fails(&self, threshold: Option<Severity>) -> bool {
        threshold.is_some_and(|t| self.findings.iter().any(|f| f.severity >= t))
    }
}

/// How to render.
#[derive(Debug, Clone, Copy)]
pub struct RenderOptions {
    /// The format.
    pub format: OutputFormat,
    /// Colours (human format only).
    pub paint: Paint,
    /// How much to show.
    pub detail: Detail,
}

/// How much of a report the human format shows. The other formats always carry everything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Detail {
    /// The answer: verdicts, findings (search trails in short), the machine in summary.
    #[default]
    Short,
    /// `-v`: every device-code entry, the ELF details, the loader tree, whole search trails, every library
    /// file; long name lists (kernels, PTX entries) counted with their first few.
    Verbose,
    /// `-v --deep`: as `Verbose`, with every name of every list.
    Everything,
}

impl Detail {
    /// `-v` or more.
    pub fn verbose(self) -> bool {
        self >= Detail::Verbose
    }
}
