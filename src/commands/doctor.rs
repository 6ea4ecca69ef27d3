//! `cudadiag doctor`: the machine alone, judged.
//!
//! Collects [`HostFacts`](crate::facts::HostFacts) (or reads them from a snapshot), runs the rules and renders
//! the report. The library catalogue walks directories; when that takes more than a second on a terminal, a
//! progress line on stderr says so (`report::progress`).

use super::outcome::{Outcome, Terminal};
use crate::cli::DoctorArgs;
use crate::diagnose::ToolError;
use crate::diagnose::{machine, snapshot, targets};
use crate::facts::Facts;
use crate::report::Paint;
use std::io::Write;

pub fn run(args: &DoctorArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let matrix = targets::load_matrix(args.matrix.as_deref())?;
    let mut host = match &args.facts {
        Some(path) => snapshot::load_host(path)?,
        None => {
            let system = args.system.lower();
            let root = machine::checked_root(&system)?;
            machine::collect(&root, &system.env(), args.no_catalog, &Terminal)
        }
    };
    crate::host::enrich::with_matrix(&mut host, &matrix);
    let facts = Facts {
        host: Some(host),
        ..Facts::default()
    };
    let detail = if args.verbose {
        crate::report::Detail::Verbose
    } else {
        crate::report::Detail::Short
    };
    super::outcome::evaluate_and_render(facts, &matrix, &args.output, paint, detail, out)
}
