//! `cudadiag doctor`: the machine alone, judged, and the active Python environment's frameworks.
//!
//! Collects [`HostFacts`](crate::facts::HostFacts) (or reads them from a snapshot), runs the rules and renders
//! the report. The library catalogue walks directories; when that takes more than a second on a terminal, a
//! progress line on stderr says so (`report::progress`). On the machine itself (not `--facts`), the
//! environment `cudadiag import` would choose is read and each framework installed in it judged
//! (`diagnose::frameworks::active`): its findings join the machine's.

use super::outcome::{Outcome, Terminal};
use crate::cli::DoctorArgs;
use crate::diagnose::ToolError;
use crate::diagnose::{machine, snapshot, targets};
use crate::facts::Facts;
use crate::report::Paint;
use std::io::Write;

pub fn run(args: &DoctorArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let matrix = targets::load_matrix(args.matrix.as_deref())?;
    let system = args.system.lower();
    let env = system.env();
    let (mut host, python) = match &args.facts {
        // A snapshot is another machine: this machine's Python environment is not its.
        Some(path) => (snapshot::load_host(path)?, None),
        None => {
            let root = machine::checked_root(&system)?;
            std::thread::scope(|s| {
                // The environment needs nothing of the machine: it is read while the machine is.
                let read = s.spawn(|| crate::diagnose::frameworks::read_active(&root, &env));
                // The frameworks' models need of the machine only its driver and GPUs, read first: the rest of
                // the machine (the library catalogue's walk, most of the time) is read beside the models.
                let early = crate::host::early(&root, &env);
                let mut seen = early.facts();
                crate::host::enrich::with_matrix(&mut seen, &matrix);
                let host = s.spawn(|| machine::collect_from(&root, &env, early, args.no_catalog, &Terminal));
                let read = crate::parallel::join(read);
                let python = crate::diagnose::frameworks::active(&root, &env, read, Some(&seen), &matrix);
                (crate::parallel::join(host), Some(python))
            })
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
    let (frameworks, findings) = python.map_or((None, Vec::new()), |(p, f)| (Some(p), f));
    let judgement = crate::diagnose::judge(&facts, &matrix).with(&facts, findings);
    let mut report = crate::report::Report::new(facts, judgement);
    report.python = frameworks;
    let outcome = super::outcome::render(&report, &args.output, paint, detail, out);
    crate::parallel::discard(report);
    outcome
}
