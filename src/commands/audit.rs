//! `cudadiag audit` and `cudadiag init`.

use super::outcome::Outcome;
use crate::cli::{AuditArgs, InitArgs};
use crate::diagnose::ToolError;
use crate::inspect::{self, InspectOptions};
use crate::policy::{self, Policy};
use crate::report::{self, Paint, Report};
use std::io::Write;
use std::path::PathBuf;

/// Reads the policy, every binary under the paths, and renders the policy's verdict.
pub fn run(args: &AuditArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let path = match &args.policy {
        Some(p) => p.clone(),
        None => {
            let default = PathBuf::from("cudadiag.toml");
            if !default.exists() {
                return Err(ToolError(
                    "no policy: pass --policy FILE, or write ./cudadiag.toml with `cudadiag init`".into(),
                ));
            }
            default
        }
    };
    let text = crate::system::read::read_to_string(&path, crate::system::read::POLICY)
        .map_err(|e| ToolError(format!("cannot read policy {}: {e}", path.display())))?;
    let policy = Policy::parse(&text, &path.display().to_string())?;
    let opts = InspectOptions::default();
    // Container images are opened and audited like wheels; everything else as it is.
    let (images, others): (Vec<PathBuf>, Vec<PathBuf>) = args
        .paths
        .iter()
        .cloned()
        .partition(|p| p.extension().is_none_or(|x| x != "whl") && crate::image::looks_like_image(p));
    let (mut binaries, mut wheels) =
        report::progress::while_running("inspecting…", "files", &opts.done, || {
            inspect::wheel::collect(&others, &opts)
        })?;
    for image in &images {
        crate::diagnose::image::audit::audit(image, &opts, &mut binaries, &mut wheels)?;
    }
    let matrix = crate::diagnose::targets::load_matrix(args.matrix.as_deref())?;
    let (facts, judgement) =
        crate::diagnose::release::judge(binaries, wheels, &policy, &matrix, policy::today())?;
    let report = Report::new(facts, judgement);
    super::outcome::render(&report, &args.output, paint, report::Detail::Short, out)
}

/// Writes the commented policy template.
pub fn init(args: &InitArgs, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    if args.output.exists() && !args.force {
        return Err(ToolError(format!(
            "{} exists; pass --force to overwrite it",
            args.output.display()
        )));
    }
    std::fs::write(&args.output, policy::TEMPLATE)
        .map_err(|e| ToolError(format!("cannot write {}: {e}", args.output.display())))?;
    report::text(
        out,
        &format!(
            "wrote {}: edit [targets] for your release, then run `cudadiag audit`\n",
            args.output.display()
        ),
    )?;
    Ok(Outcome::Clean)
}
