//! `cudadiag fleet`: many nodes' reports and snapshots, grouped; an artefact judged on each (`fleet` module).

mod read;

use super::{Outcome, ToolError};
use crate::cli::FleetArgs;
use crate::fleet::{self, Files, judge::Artefact};
use crate::report::{DocFormat, Paint};
use std::io::Write;

pub fn run(args: &FleetArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let found = read::find(&args.paths).map_err(ToolError)?;
    // The artefact is read once, while the matrix loads; then every node is judged against its facts.
    let (matrix, artefact) = std::thread::scope(|s| {
        let artefact = (!args.artifact.is_empty()).then(|| s.spawn(|| Artefact::read(&args.artifact)));
        let matrix = super::targets::load_matrix(args.matrix.as_deref());
        (matrix, artefact.map(crate::parallel::join))
    });
    let matrix = matrix?;
    let artefact = artefact.transpose().map_err(ToolError)?;
    let done = std::sync::atomic::AtomicUsize::new(0);
    let read = crate::report::progress::while_running("reading node reports…", "files", &done, || {
        read::read_all(&found.files, &matrix, artefact.as_ref(), &done)
    });
    let mut files = Files {
        read: found.files.len(),
        other: found.other,
        skipped: found.skipped,
        truncated: found.truncated,
    };
    let mut nodes = Vec::with_capacity(read.len());
    for r in read {
        match r {
            Ok(n) => nodes.push(n),
            Err(s) => files.skipped.push(s),
        }
    }
    if nodes.is_empty() {
        let why = match files.skipped.first() {
            Some(s) => format!(
                " ({} file{} not used; the first, {}: {})",
                files.skipped.len(),
                if files.skipped.len() == 1 { "" } else { "s" },
                s.path,
                s.reason
            ),
            None if files.other > 0 => format!(
                " ({} file{} not named *.json skipped)",
                files.other,
                if files.other == 1 { "" } else { "s" }
            ),
            None => String::new(),
        };
        return Err(ToolError(format!("no node report or snapshot found{why}")));
    }
    fleet::unique_names(&mut nodes);
    let fleet = fleet::group(nodes, files, artefact.map(|a| a.paths));
    match args.format {
        DocFormat::Human => crate::report::fleet::human(&fleet, paint, args.verbose, out)?,
        DocFormat::Json => crate::report::fleet::json(&fleet, out)?,
    }
    let outcome = if fleet.fails(args.fail_on.threshold()) {
        Outcome::Failed
    } else {
        Outcome::Clean
    };
    crate::parallel::discard(fleet);
    crate::parallel::discard(matrix);
    Ok(outcome)
}
