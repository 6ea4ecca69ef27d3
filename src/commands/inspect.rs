//! `cudadiag inspect` (without `--image`: the dispatcher sends that to `commands::image`).

use super::outcome::{Outcome, Terminal};
use crate::cli::InspectArgs;
use crate::diagnose::ToolError;
use crate::diagnose::{read, targets};
use crate::report::{Detail, Paint};
use std::io::Write;

pub fn run(args: &InspectArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let reading = reading(args);
    let (mut facts, matrix) = read::read(
        &reading,
        || targets::load_matrix(args.target.matrix.as_deref()),
        &Terminal,
    )?;
    if args.probe {
        facts.probe = Some(super::probe::live(
            &args.probe_options,
            &reading.system,
            &facts.binaries,
        )?);
    }
    let outcome = super::outcome::evaluate_and_render(facts, &matrix, &args.output, paint, detail(args), out);
    crate::parallel::discard(matrix);
    outcome
}

/// What the engine reads for `inspect` (and for the program of `inspect --image`): the flags lowered once.
/// With `--root`, a path written as the path inside the root names that file (`read::in_root`).
pub(super) fn reading(args: &InspectArgs) -> read::Reading {
    let system = args.system.lower();
    read::Reading {
        paths: read::in_root(&args.paths, &system),
        opts: read::options(args.no_device_code, args.deep, args.max_entry_mib),
        system,
        target: args.target.lower(),
        libraries: !args.no_libraries,
        device_code: !args.no_device_code,
        host: !args.no_host,
        snapshot: args.facts.clone(),
    }
}

/// How much the human report shows: every kernel name of a large library is thousands of lines, so `-v`
/// counts them and `-v --deep` lists them (`inspect --image` too).
pub(super) fn detail(args: &InspectArgs) -> Detail {
    match (args.verbose, args.deep) {
        (false, _) => Detail::Short,
        (true, false) => Detail::Verbose,
        (true, true) => Detail::Everything,
    }
}
