//! `cudadiag inspect` (without `--image`: the dispatcher sends that to `commands::image`).

use super::outcome::{Outcome, Terminal};
use crate::cli::InspectArgs;
use crate::diagnose::ToolError;
use crate::diagnose::{read, targets};
use crate::report::{Detail, Paint};
use std::io::Write;
use std::path::{Path, PathBuf};

pub fn run(args: &InspectArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    if let Some(dir) = environment_dir(args)? {
        return environment(args, &dir, paint, out);
    }
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

/// The directory given, as a path inside the root, when the one path given is a directory: a Python
/// environment to judge (`diagnose::frameworks`), or an error that says what `inspect` accepts.
fn environment_dir(args: &InspectArgs) -> Result<Option<PathBuf>, ToolError> {
    let system = args.system.lower();
    let root = system.root();
    let inside = |p: &Path| -> PathBuf {
        match &system.root {
            Some(dir) => match p.strip_prefix(dir) {
                Ok(rest) => Path::new("/").join(rest),
                Err(_) => p.to_path_buf(),
            },
            None => std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()),
        }
        // `venv/` and `venv` name one environment: the report shows it without the slash.
        .components()
        .collect()
    };
    let dirs: Vec<PathBuf> = args
        .paths
        .iter()
        .map(|p| inside(p))
        .filter(|p| root.is_dir(p))
        .collect();
    match (dirs.as_slice(), args.paths.len()) {
        ([], _) => Ok(None),
        ([dir], 1) if args.probe || args.no_host => Err(ToolError(format!(
            "{}: a Python environment is judged by modelling its imports for a machine: --probe and --no-host \
             do not apply",
            dir.display()
        ))),
        ([dir], 1) => Ok(Some(dir.clone())),
        ([dir, ..], _) => Err(ToolError(format!(
            "{}: a directory: inspect takes one Python environment (a venv, a conda environment or a \
             site-packages directory) alone, without other paths",
            dir.display()
        ))),
    }
}

/// `inspect DIR` of a Python environment: every framework in it judged on the machine (this one, `--facts`,
/// or `--gpu`/`--driver`), rendered as the report of findings it is.
fn environment(
    args: &InspectArgs,
    dir: &Path,
    paint: Paint,
    out: &mut dyn Write,
) -> Result<Outcome, ToolError> {
    use crate::diagnose::frameworks;
    let matrix = targets::load_matrix(args.target.matrix.as_deref())?;
    let (system, target) = (args.system.lower(), args.target.lower());
    let (root, env) = (system.root(), system.env());
    let (chosen, kind) = frameworks::locate(&root, dir)?;
    let facts = frameworks::machine_facts(&system, &target, args.facts.as_deref(), &matrix)?;
    let (gpus, driver) =
        frameworks::machine_of(facts.host.as_ref(), env.get("CUDA_VISIBLE_DEVICES"), &matrix);
    let question = frameworks::Question {
        root: &root,
        env: &env,
        machine: crate::imports::Machine {
            gpus: &gpus,
            driver: driver.as_ref(),
            declared: args.facts.is_some() || target.what_if(),
        },
        matrix: &matrix,
    };
    let (python, findings) = frameworks::judge(&question, chosen, kind, false)?;
    let report = crate::report::Report {
        facts,
        findings,
        python: Some(python),
        ..crate::report::Report::default()
    };
    let options = crate::report::RenderOptions {
        format: args.output.format,
        paint,
        detail: detail(args),
    };
    crate::report::env::render(&report, &options, out)?;
    Ok(if report.fails(args.output.fail_on.threshold()) {
        Outcome::Failed
    } else {
        Outcome::Clean
    })
}
