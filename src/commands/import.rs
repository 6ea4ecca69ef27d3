//! `cudadiag import MODULE…`: parse, read the machine's GPUs and driver (or `--facts`, `--gpu`, `--driver`),
//! model the imports (`imports`), render (`report::import`).

use super::{Outcome, ToolError};
use crate::cli::ImportArgs;
use crate::facts::Facts;
use crate::report::{Detail, Paint};
use std::io::Write;

/// Runs `cudadiag import`.
pub fn run(args: &ImportArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let matrix = super::targets::load_matrix(args.target.matrix.as_deref())?;
    let (root, env) = (args.system.root(), args.system.env());
    let mut facts = Facts::default();
    if let Some(snapshot) = &args.facts {
        let mut host = super::snapshot::load_host(snapshot)?;
        crate::host::enrich::with_matrix(&mut host, &matrix);
        facts.host = Some(host);
    } else if !args.target.what_if() {
        let checked = super::doctor::checked_root(&args.system)?;
        let mut host = super::doctor::collect(&checked, &env, true);
        crate::host::enrich::with_matrix(&mut host, &matrix);
        facts.host = Some(host);
    }
    super::targets::apply(&args.target, &mut facts, &matrix)?;
    let gpus: Vec<crate::python::frameworks::Gpu> =
        crate::rules::target::targets(facts.host.as_ref(), &matrix)
            .into_iter()
            .map(|t| crate::python::frameworks::Gpu {
                label: t.label,
                cc: t.cc,
            })
            .collect();
    let driver =
        crate::rules::target::driver_of(facts.host.as_ref()).map(|d| crate::python::frameworks::Driver {
            version: d.version,
            source: d.source,
        });
    let chosen = crate::python::frameworks::env::choose(&env, args.python.as_deref(), args.venv.as_deref());
    let report = crate::imports::run(
        &root,
        &env,
        chosen,
        &args.modules,
        &gpus,
        driver.as_ref(),
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
