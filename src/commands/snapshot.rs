//! `cudadiag snapshot`: the machine's facts (and the binaries' facts) in one JSON file (the format is
//! `diagnose::snapshot`'s), or with `--format labels` the node's labels.

use super::outcome::{Outcome, Terminal};
use crate::cli::{SnapshotArgs, SnapshotFormat};
use crate::diagnose::ToolError;
use crate::diagnose::snapshot;
use std::io::Write;
use std::path::Path;

pub fn run(args: &SnapshotArgs, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let system = args.system.lower();
    let text = if args.format == SnapshotFormat::Labels {
        if let Some(p) = args.paths.first() {
            return Err(ToolError(format!(
                "{}: --format labels describes the machine alone; binaries are not read for labels",
                p.display()
            )));
        }
        snapshot::labels(&system)?
    } else {
        snapshot::take(&system, &args.paths, args.no_catalog, args.redact, &Terminal)?
    };
    write_out(&args.output, &text, out)
}

/// Writes `text` to `path`, or to standard output for `-`.
fn write_out(path: &Path, text: &str, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    if path.as_os_str() == "-" {
        crate::report::text(out, text)?;
    } else {
        std::fs::write(path, text).map_err(|e| ToolError(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(Outcome::Clean)
}
