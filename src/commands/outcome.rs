//! What every command shares: how a run ended, the engine's progress shown on a terminal, and the tail of the
//! commands that render a report of findings.

use crate::diagnose::ToolError;
use crate::report::Paint;
use std::io::Write;

/// How a run ended, for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing at or above `--fail-on`: exit 0.
    Clean,
    /// Findings at or above `--fail-on`: exit 1.
    Failed,
}

/// The engine's long stages shown on a terminal, as every command shows its own (`report::progress`).
pub(super) struct Terminal;

impl crate::diagnose::Progress for Terminal {
    fn show(&self, what: &str, unit: &str, count: &std::sync::atomic::AtomicUsize, work: &mut dyn FnMut()) {
        crate::report::progress::while_running(what, unit, count, work)
    }
}

/// Evaluates the rules over `facts`, renders the report, and says how the run ended: the shared tail of
/// every command that gives findings (`inspect`, `doctor`, `probe`).
pub(super) fn evaluate_and_render(
    facts: crate::facts::Facts,
    matrix: &crate::matrix::Matrix,
    output: &crate::cli::OutputArgs,
    paint: Paint,
    detail: crate::report::Detail,
    out: &mut dyn Write,
) -> Result<Outcome, ToolError> {
    let judgement = crate::diagnose::judge(&facts, matrix);
    let report = crate::report::Report::new(facts, judgement);
    let outcome = render(&report, output, paint, detail, out);
    // A large tree's report is tens of thousands of strings: the exit need not wait for them to be freed.
    crate::parallel::discard(report);
    outcome
}

/// Renders `report` and maps `--fail-on` to the outcome.
pub(super) fn render(
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
