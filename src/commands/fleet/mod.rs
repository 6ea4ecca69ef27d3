//! `cudadiag fleet`: many nodes' reports and snapshots, grouped; an artefact or an image judged on each
//! (`fleet` module).

mod read;

use super::outcome::Outcome;
use crate::cli::FleetArgs;
use crate::diagnose::ToolError;
use crate::diagnose::env_fleet::EnvArtefact;
use crate::diagnose::image::fleet as image;
use crate::fleet::judge::{Artefact, ImageJudged};
use crate::fleet::{self, Files};
use crate::report::{DocFormat, Paint};
use std::io::Write;

pub fn run(args: &FleetArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let found = read::find(&args.paths).map_err(ToolError)?;
    // The artefact (or the image) is read once, while the matrix loads; then every node is judged against its
    // facts.
    let platform = args.platform.as_deref();
    // A Python environment as the artefact: its frameworks' imports are judged on each node.
    let env = EnvArtefact::detect(&args.artifact)
        .transpose()
        .map_err(ToolError)?;
    let (matrix, artefact, opened) = std::thread::scope(|s| {
        let artefact =
            (!args.artifact.is_empty() && env.is_none()).then(|| s.spawn(|| Artefact::read(&args.artifact)));
        let opened = args
            .image
            .as_ref()
            .map(|p| s.spawn(move || image::open(p, platform)));
        let matrix = crate::diagnose::targets::load_matrix(args.matrix.as_deref());
        (
            matrix,
            artefact.map(crate::parallel::join),
            opened.map(crate::parallel::join),
        )
    });
    let matrix = matrix?;
    let artefact = artefact.transpose().map_err(ToolError)?;
    let opened = opened.transpose()?;
    let judge = match (&artefact, &opened, &env) {
        (Some(a), _, _) => read::Judge::Artefact(a),
        (None, _, Some(e)) => read::Judge::Env(e),
        (None, Some(o), None) => read::Judge::Image(&o.program),
        (None, None, None) => read::Judge::Nothing,
    };
    let done = std::sync::atomic::AtomicUsize::new(0);
    let read = crate::report::progress::while_running("reading node reports…", "files", &done, || {
        read::read_all(&found.files, &matrix, judge, &done)
    });
    let mut files = Files {
        read: found.files.len(),
        other: found.other,
        skipped: found.skipped,
        truncated: found.truncated,
    };
    let mut nodes = Vec::with_capacity(read.len());
    let mut staged = Vec::new();
    for r in read {
        match r {
            Ok((n, s)) => {
                nodes.push(n);
                staged.push(s);
            }
            Err(s) => files.skipped.push(s),
        }
    }
    if nodes.is_empty() {
        let why = match files.skipped.first() {
            Some(s) => format!(
                " ({} file{} not used; the first, {}: {})",
                files.skipped.len(),
                if files.skipped.len() == 1 { "" } else { "s" },
                s.path,
                s.reason
            ),
            None if files.other > 0 => format!(
                " ({} file{} not named *.json skipped)",
                files.other,
                if files.other == 1 { "" } else { "s" }
            ),
            None => String::new(),
        };
        return Err(ToolError(format!("no node report or snapshot found{why}")));
    }
    let mut judged_image = None;
    if let (Some(opened), Some(path)) = (opened, &args.image) {
        let program = opened.program.programs.first().map(|p| p.display().to_string());
        let done = std::sync::atomic::AtomicUsize::new(0);
        let (unpacked, mount_sets) = crate::report::progress::while_running(
            "judging the image on each node…",
            "nodes",
            &done,
            || image::judge_all(opened, &mut nodes, &staged, &matrix, &done),
        )?;
        judged_image = Some(ImageJudged {
            path: path.display().to_string(),
            program: program.unwrap_or_default(),
            unpacked,
            mount_sets,
        });
    }
    drop(staged);
    fleet::unique_names(&mut nodes);
    let paths = match &judged_image {
        Some(i) => Some(vec![i.path.clone()]),
        None => artefact
            .map(|a| a.paths)
            .or_else(|| env.as_ref().map(|e| vec![e.path.display().to_string()])),
    };
    let mut fleet = fleet::group(nodes, files, paths);
    if let Some(a) = &mut fleet.artefact {
        a.image = judged_image;
    }
    match args.format {
        DocFormat::Human => crate::report::fleet::human(&fleet, paint, args.verbose, out)?,
        DocFormat::Json => crate::report::fleet::json(&fleet, out)?,
    }
    let outcome = if fleet.fails(args.fail_on.threshold()) {
        Outcome::Failed
    } else {
        Outcome::Clean
    };
    crate::parallel::discard(fleet);
    crate::parallel::discard(matrix);
    Ok(outcome)
}
