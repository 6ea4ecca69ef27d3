//! `cudadiag inspect --image IMAGE [PATH…]`: will this image's program run on that node? The image is
//! unpacked here (with a progress line), judged by the engine (`diagnose::image`), and the report rendered.

use super::outcome::Outcome;
use crate::cli::InspectArgs;
use crate::container::Run;
use crate::diagnose::ToolError;
use crate::image::{self, Limits};
use crate::report::Paint;
use std::io::Write;
use std::path::Path;

/// Runs `inspect --image`.
pub fn run(args: &InspectArgs, path: &Path, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let limits = Limits::default();
    let layers = std::sync::atomic::AtomicUsize::new(0);
    let opened = crate::report::progress::while_running("unpacking image…", "layers", &layers, || {
        image::open_counting(path, args.platform.as_deref(), &limits, &layers)
    });
    let img = opened?;
    let matrix = crate::diagnose::targets::load_matrix(args.target.matrix.as_deref())?;
    // How the container is started: `--gpus`, `--runtime`, `--device nvidia.com/gpu=…`.
    let run = Run {
        gpus: args.run_gpus.clone(),
        runtime: args.runtime,
        cdi: args.cdi.clone(),
    };
    let (facts, judgement) =
        crate::diagnose::image::diagnose(&img, &super::inspect::reading(args), run, &args.imports, &matrix)?;
    let report = crate::report::Report::new(facts, judgement);
    let outcome = super::outcome::render(&report, &args.output, paint, super::inspect::detail(args), out);
    // The unpacked tree is removed here, before the exit (never handed to `parallel::discard`, which leaks).
    drop(img);
    outcome
}
