//! `cudadiag inspect`.

use super::{Outcome, ToolError};
use crate::cli::InspectArgs;
use crate::facts::Facts;
use crate::inspect::{self, Depth, InspectOptions};
use crate::report::{self, Paint, RenderOptions, Report};
use std::io::Write;

pub fn run(args: &InspectArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let opts = InspectOptions {
        depth: if args.deep {
            Depth::Full
        } else {
            Depth::Headers
        },
        max_decompressed: args.max_entry_mib.saturating_mul(1 << 20),
    };
    let mut facts = Facts::default();
    let (root, env) = (args.system.root(), args.system.env());
    let mut files = crate::loader::Files::default();
    for path in &args.paths {
        let binaries = inspect::path(path, &opts).map_err(|e| ToolError(e.to_string()))?;
        for b in &binaries {
            facts.libraries.extend(crate::loader::resolve_with(
                &root, &env, path, b, &mut files,
            ));
        }
        facts.binaries.extend(binaries);
    }
    let findings = crate::rules::evaluate(&facts);
    let report = Report { facts, findings };
    let render = RenderOptions {
        format: args.output.format,
        paint,
        verbose: args.verbose,
    };
    report::render(&report, &render, out)?;
    Ok(if report.fails(args.output.fail_on.threshold()) {
        Outcome::Failed
    } else {
        Outcome::Clean
    })
}
