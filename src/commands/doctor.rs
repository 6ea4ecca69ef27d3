//! `cudadiag doctor`: the machine alone, judged.
//!
//! Collects [`HostFacts`] (or reads them from a snapshot), runs the rules and renders the report. The library
//! catalogue walks directories; when that takes more than a second on a terminal, a progress line on stderr
//! says so (`report::progress`).

use super::{Outcome, ToolError};
use crate::cli::{DoctorArgs, SystemArgs};
use crate::facts::{Facts, HostFacts};
use crate::host::{self, CollectOptions};
use crate::report::Paint;
use crate::system::{Env, Root};
use std::io::Write;
use std::sync::atomic::AtomicUsize;

/// The root the arguments name, refused when it is not a directory.
pub fn checked_root(system: &SystemArgs) -> Result<Root, ToolError> {
    let root = system.root();
    if !root.is_host() && !root.dir().is_dir() {
        return Err(ToolError(format!(
            "--root {}: not a directory",
            root.dir().display()
        )));
    }
    Ok(root)
}

/// Collects the host facts, with a progress line on a terminal when the catalogue takes over a second.
pub fn collect(root: &Root, env: &Env, skip_catalog: bool) -> HostFacts {
    let counter = AtomicUsize::new(0);
    let opts = CollectOptions {
        skip_catalog,
        progress: Some(&counter),
    };
    // Without the catalogue there is nothing long to show (and `inspect` reads the machine beside its own work).
    if skip_catalog {
        return host::collect(root, env, &opts);
    }
    crate::report::progress::while_running("scanning for CUDA libraries…", "directories", &counter, || {
        host::collect(root, env, &opts)
    })
}

pub fn run(args: &DoctorArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let matrix = super::targets::load_matrix(args.matrix.as_deref())?;
    let mut host = match &args.facts {
        Some(path) => super::snapshot::load_host(path)?,
        None => collect(&checked_root(&args.system)?, &args.system.env(), args.no_catalog),
    };
    host::enrich::with_matrix(&mut host, &matrix);
    let facts = Facts {
        host: Some(host),
        ..Facts::default()
    };
    let detail = if args.verbose {
        crate::report::Detail::Verbose
    } else {
        crate::report::Detail::Short
    };
    super::evaluate_and_render(facts, &matrix, &args.output, paint, detail, out)
}
