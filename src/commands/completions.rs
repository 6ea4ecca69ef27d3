//! `cudadiag completions SHELL` and the hidden `cudadiag __man`: the shell completion scripts (clap_complete)
//! and the manual pages (clap_mangen), both generated from the same clap definition as `--help`, so they
//! cannot drift from it. The release tarball ships their output (`scripts/dist.sh`).

use super::outcome::Outcome;
use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::diagnose::ToolError;
use clap::CommandFactory;
use std::io::Write;

/// The command line a user sees: `Cli` without its hidden commands (`__probe`, `__man`), which clap_complete
/// would otherwise offer as completions. clap cannot remove a subcommand, so the top level is rebuilt from
/// the same arguments and the visible subcommands.
fn visible() -> clap::Command {
    let full = Cli::command();
    let mut cmd = clap::Command::new("cudadiag")
        .version(crate::build_info::VERSION)
        .long_version(crate::build_info::LONG_VERSION)
        .subcommand_required(true);
    if let Some(about) = full.get_about() {
        cmd = cmd.about(about.clone());
    }
    if let Some(about) = full.get_long_about() {
        cmd = cmd.long_about(about.clone());
    }
    for arg in full
        .get_arguments()
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
    {
        cmd = cmd.arg(arg.clone());
    }
    for sub in full.get_subcommands().filter(|s| !s.is_hide_set()) {
        cmd = cmd.subcommand(sub.clone());
    }
    cmd
}

/// Prints the completion script for the shell.
pub fn run(args: &CompletionsArgs, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let mut cmd = visible();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "cudadiag", &mut script);
    crate::report::text(out, &String::from_utf8_lossy(&script))?;
    Ok(Outcome::Clean)
}

/// Prints `cudadiag.1`, or writes it and one page per visible command into `--dir`.
pub fn man(args: &ManArgs, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let cmd = visible();
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| ToolError(format!("cannot create {}: {e}", dir.display())))?;
            clap_mangen::generate_to(cmd, dir)
                .map_err(|e| ToolError(format!("cannot write manual pages into {}: {e}", dir.display())))?;
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut page)
                .map_err(|e| ToolError(format!("cannot render the manual page: {e}")))?;
            crate::report::text(out, &String::from_utf8_lossy(&page))?;
        }
    }
    Ok(Outcome::Clean)
}
