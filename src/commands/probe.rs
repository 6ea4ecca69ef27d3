//! `cudadiag probe`, the probe part of `inspect --probe`, and the hidden `__probe` child.

use super::outcome::Outcome;
use crate::cli::{ProbeArgs, ProbeOptionArgs};
use crate::diagnose::System;
use crate::diagnose::ToolError;
use crate::facts::probe::{ProbeFacts, ProbeRequest};
use crate::facts::{BinaryFacts, Facts};
use crate::probe::{self, ProbeOptions};
use crate::report::Paint;
use std::io::Write;
use std::time::Duration;

/// Runs the probe child for `binaries` in the environment the system arguments describe.
pub fn live(
    opts: &ProbeOptionArgs,
    system: &System,
    binaries: &[BinaryFacts],
) -> Result<ProbeFacts, ToolError> {
    if system.root.is_some() {
        return Err(ToolError(
            "the live probe runs on this machine, so it cannot be combined with --root".to_string(),
        ));
    }
    let request = ProbeRequest {
        cudart: probe::cudart_request(opts.cudart.as_deref(), binaries),
        modules: probe::module_requests(binaries),
    };
    Ok(probe::run(&ProbeOptions {
        timeout: Duration::from_secs(opts.probe_timeout),
        env: system.env(),
        request,
        exe: None,
    }))
}

/// `cudadiag probe`.
pub fn run(args: &ProbeArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let facts = Facts {
        probe: Some(live(&args.probe, &args.system.lower(), &[])?),
        ..Facts::default()
    };
    let matrix = crate::diagnose::targets::load_matrix(None)?;
    super::outcome::evaluate_and_render(
        facts,
        &matrix,
        &args.output,
        paint,
        crate::report::Detail::Verbose,
        out,
    )
}

/// `cudadiag __probe`: the child. Reads its request on stdin, writes JSON lines on stdout.
pub fn child(out: &mut dyn Write) -> Result<Outcome, ToolError> {
    probe::child::main(&mut std::io::stdin().lock(), out);
    Ok(Outcome::Clean)
}
