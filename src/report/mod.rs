//! The report and its renderers.
//!
//! Every command builds one [`Report`] (facts + findings) and hands it to a renderer; renderers compute nothing
//! and never decide exit codes. All of cudadiag's standard output goes through this module (clippy bans
//! `println!` elsewhere).

pub mod diff;
pub mod fleet;
mod github;
mod human;
mod human_host;
mod human_image;
mod human_wheel;
pub mod import;
pub mod json;
mod junit;
mod paint;
pub mod progress;
mod sane;
mod sarif;
mod tree;

use crate::facts::Facts;
use crate::findings::{Finding, Severity};
use std::io::{self, Write};

pub use paint::{ColorChoice, Paint};
pub use sane::{Sane, escape, truncated};

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
    pub verdicts: Vec<crate::rules::Verdict>,
    /// The first lines of the human report: per binary (or for the machine), will it run and why.
    pub headlines: Vec<crate::rules::Headline>,
    /// The rules' one-line fix of each library no search found, for the loader tree (`inspect -v`).
    pub fixes: Fixes,
}

pub use crate::rules::loader::Fixes;

impl Report {
    /// A report of `facts` and `findings`, with the verdicts and the headlines the rules give for them.
    pub fn new(facts: Facts, findings: Vec<Finding>, verdicts: Vec<crate::rules::Verdict>) -> Report {
        let headlines = crate::rules::headlines(&facts, &findings, &verdicts);
        let fixes = crate::rules::loader::missing_fixes(&facts.libraries);
        Report {
            facts,
            findings,
            verdicts,
            headlines,
            fixes,
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

/// Renders `report` to `out`.
pub fn render(report: &Report, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
    match opts.format {
        OutputFormat::Human => human::render(report, opts, &mut sane::Guard::new(out, opts.paint.enabled())),
        OutputFormat::Json => json::render(report, out),
        OutputFormat::Sarif => sarif::render(report, out),
        OutputFormat::Junit => junit::render(report, out),
        OutputFormat::Github => github::render(report, &mut sane::Guard::new(out, false)),
    }
}

/// Writes one finding as the human report does, with every line of its evidence (no search trail in short):
/// `explain --check` shows the findings it confirms this way.
pub fn finding_whole(f: &crate::findings::Finding, paint: Paint, out: &mut dyn Write) -> io::Result<()> {
    let opts = RenderOptions {
        format: OutputFormat::Human,
        paint,
        detail: Detail::Everything,
    };
    human::finding(f, &opts, &mut sane::Guard::new(out, paint.enabled()))
}

/// Writes a message for people to `out` as one line: the one place tool errors reach stderr (the binary calls
/// it). Messages quote input data (a RepoTag, a layer name, an Entrypoint word, a path) and a newline in that
/// data would let it write a line of its own choosing, a GitHub workflow command (`::error …`,
/// `::add-mask::…`) under Actions included, which the runner reads on stderr as on stdout. So every control
/// character, newlines included, is shown escaped ([`sane::escape`]); the line starts with `error:`, so
/// it never starts with `::`.
pub fn error_line(out: &mut dyn Write, paint: Paint, message: &str) -> io::Result<()> {
    let message = sane::escape(message);
    writeln!(
        sane::Guard::new(out, paint.enabled()),
        "{}: {message}",
        paint.error("error")
    )
}

/// Writes raw text (used by commands whose output is a document, like `codes`).
pub fn text(out: &mut dyn Write, text: &str) -> io::Result<()> {
    out.write_all(text.as_bytes())
}
