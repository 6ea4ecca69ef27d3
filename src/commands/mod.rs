//! The commands: each turns parsed arguments into a report (or a document) and renders it.

mod audit;
mod codes;
mod completions;
mod diff;
mod doctor;
mod explain;
mod fleet;
mod image;
mod import;
mod inspect;
mod ldconfig;
mod matrix;
mod probe;
pub(crate) mod snapshot;
mod targets;

use crate::cli::{Cli, Command};
use crate::report::Paint;
use std::io::{IsTerminal, Write};

pub use explain::doc as explain_doc;

// What the commands hand to `parallel::discard`, which a process about to exit never drops: memory and
// read-only maps alone. Not `image::Image` (its `TempDir` removes the unpacked tree when dropped) nor anything holding one.
impl crate::parallel::Forgettable for crate::facts::Facts {}
impl crate::parallel::Forgettable for crate::matrix::Matrix {}
impl crate::parallel::Forgettable for crate::report::Report {}
impl crate::parallel::Forgettable for crate::loader::Files {}
impl crate::parallel::Forgettable for crate::fleet::Fleet {}

/// How a run ended, for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing at or above `--fail-on`: exit 0.
    Clean,
    /// Findings at or above `--fail-on`: exit 1.
    Failed,
}

/// A tool failure: bad arguments, unreadable input, output I/O. Exit 2.
#[derive(Debug)]
pub struct ToolError(pub String);

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The library's errors that already say what failed and where (the file, the line, the layer) become the
/// tool error as they are, through `?`. `std::io::Error` has no such conversion on purpose: alone it names no
/// file, so each call site says which one.
macro_rules! tool_error_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for ToolError {
            fn from(e: $t) -> ToolError {
                ToolError(e.to_string())
            }
        }
    )*};
}
tool_error_from!(
    serde_json::Error,
    crate::inspect::InspectError,
    crate::policy::PolicyError,
    crate::image::ImageError,
);

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError(format!("cannot write output: {e}"))
    }
}

/// Evaluates the rules over `facts`, renders the report, and says how the run ended: the shared tail of
/// every command that gives findings (`inspect`, `doctor`, `probe`).
pub(crate) fn evaluate_and_render(
    facts: crate::facts::Facts,
    matrix: &crate::matrix::Matrix,
    output: &crate::cli::OutputArgs,
    paint: Paint,
    detail: crate::report::Detail,
    out: &mut dyn Write,
) -> Result<Outcome, ToolError> {
    let judgement = crate::rules::judge(&facts, matrix);
    let report = crate::report::Report::new(facts, judgement.findings, judgement.verdicts);
    let outcome = render(&report, output, paint, detail, out);
    // A large tree's report is tens of thousands of strings: the exit need not wait for them to be freed.
    crate::parallel::discard(report);
    outcome
}

/// Renders `report` and maps `--fail-on` to the outcome.
pub(crate) fn render(
    report: &crate::report::Report,
    output: &crate::cli::OutputArgs,
    paint: Paint,
    detail: crate::report::Detail,
    out: &mut dyn Write,
) -> Result<Outcome, ToolError> {
    let options = crate::report::RenderOptions {
        format: output.format,
        paint,
        detail,
    };
    crate::report::render(report, &options, out)?;
    Ok(if report.fails(output.fail_on.threshold()) {
        Outcome::Failed
    } else {
        Outcome::Clean
    })
}

/// Runs the parsed command line, writing the report to `out`.
pub fn run(cli: &Cli, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let paint = Paint::from_env(cli.color, std::io::stdout().is_terminal());
    crate::report::progress::configure(Paint::from_env(cli.color, std::io::stderr().is_terminal()));
    match &cli.command {
        Command::Inspect(args) => inspect::run(args, paint, out),
        Command::Codes(args) => codes::run(args, out),
        Command::Doctor(args) => doctor::run(args, paint, out),
        Command::Import(args) => import::run(args, paint, out),
        Command::Snapshot(args) => snapshot::run(args, out),
        Command::Diff(args) => diff::run(args, paint, out),
        Command::Audit(args) => audit::run(args, paint, out),
        Command::Init(args) => audit::init(args, out),
        Command::Explain(args) => explain::run(args, paint, out),
        Command::Matrix(args) => matrix::run(args, out),
        Command::Probe(args) => probe::run(args, paint, out),
        Command::Fleet(args) => fleet::run(args, paint, out),
        Command::Completions(args) => completions::run(args, out),
        Command::Man(args) => completions::man(args, out),
        Command::ProbeChild => probe::child(out),
    }
}
