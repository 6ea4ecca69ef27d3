//! `cudadiag diff A.json B.json`: the differences between two machines that explain why a program runs on
//! one and fails on the other (`crate::diff`), rendered by `report::diff`.
//!
//! Exit status as diff(1) has it: 0 when no difference that matters, 1 when there are differences, 2 when a
//! file cannot be read or is not a snapshot or a JSON report.

pub mod load;

use super::outcome::Outcome;
use crate::cli::DiffArgs;
use crate::diagnose::ToolError;
use crate::report::{DocFormat, Paint};
use std::io::Write;

pub fn run(args: &DiffArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let matrix = crate::diagnose::targets::load_matrix(args.matrix.as_deref())?;
    let a = load::node(&args.a, &matrix)?;
    let b = load::node(&args.b, &matrix)?;
    let diffs = crate::diff::compare(&a, &b);
    match args.format {
        DocFormat::Human => crate::report::diff::human(&a, &b, &diffs, paint, out)?,
        DocFormat::Json => crate::report::diff::json(&a, &b, &diffs, out)?,
    }
    Ok(if diffs.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Failed
    })
}
