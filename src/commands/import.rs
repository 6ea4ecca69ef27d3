//! `cudadiag import MODULE…`: parse, read the machine's GPUs and driver (or `--facts`, `--gpu`, `--driver`),
//! model the imports (`imports`), render (`report::import`).

use super::outcome::Outcome;
use crate::cli::ImportArgs;
use crate::diagnose::{ToolError, frameworks, targets};
use crate::report::{Detail, Paint};
use std::io::Write;

/// Runs `cudadiag import`.
pub fn run(args: &ImportArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let matrix = targets::load_matrix(args.target.matrix.as_deref())?;
    let (system, target) = (args.system.lower(), args.target.lower());
    let (root, env) = (system.root(), system.env());
    let facts = frameworks::machine_facts(&system, &target, args.facts.as_deref(), &matrix)?;
    let (gpus, driver) =
        frameworks::machine_of(facts.host.as_ref(), env.get("CUDA_VISIBLE_DEVICES"), &matrix);
    let chosen = crate::python::frameworks::env::choose(&env, args.python.as_deref(), args.venv.as_deref());
    let report = crate::imports::run(
        &root,
        &env,
        chosen,
        &args.modules,
        &crate::imports::Machine {
            gpus: &gpus,
            driver: driver.as_ref(),
            declared: args.facts.is_some() || target.what_if(),
        },
        &matrix,
    )
    .map_err(|e| ToolError(e.to_string()))?;
    let detail = if args.verbose {
        Detail::Verbose
    } else {
        Detail::Short
    };
    crate::report::import::render(&report, args.format, paint, detail, out)?;
    Ok(if report.fails(args.fail_on.threshold()) {
        Outcome::Failed
    } else {
        Outcome::Clean
    })
}
