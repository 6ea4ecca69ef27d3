//! The commands: each turns parsed arguments into the engine's options (`diagnose`), calls the engine, and
//! renders what it returns (`report`). This file only dispatches; what the commands share is in `outcome`.

mod audit;
mod codes;
mod completions;
mod diff;
mod doctor;
mod explain;
mod fleet;
mod image;
mod import;
mod inspect;
mod matrix;
mod outcome;
mod probe;
mod snapshot;

use crate::cli::{Cli, Command};
use crate::report::Paint;
use std::io::{IsTerminal, Write};

pub use explain::doc as explain_doc;

// What the commands hand to `parallel::discard`, which a process about to exit never drops: memory and
// read-only maps alone. Not `image::Image` (its `TempDir` removes the unpacked tree when dropped) nor anything holding one.
impl crate::parallel::Forgettable for crate::facts::Facts {}
impl crate::parallel::Forgettable for crate::matrix::Matrix {}
impl crate::parallel::Forgettable for crate::report::Report {}
impl crate::parallel::Forgettable for crate::loader::Files {}
impl crate::parallel::Forgettable for crate::fleet::Fleet {}

pub use crate::diagnose::ToolError;
pub use outcome::Outcome;

/// Runs the parsed command line, writing the report to `out`.
pub fn run(cli: &Cli, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let paint = Paint::from_env(cli.color, std::io::stdout().is_terminal());
    crate::report::progress::configure(Paint::from_env(cli.color, std::io::stderr().is_terminal()));
    match &cli.command {
        Command::Inspect(args) => match &args.image {
            Some(image) => image::run(args, image, paint, out),
            None => inspect::run(args, paint, out),
        },
        Command::Codes(args) => codes::run(args, out),
        Command::Doctor(args) => doctor::run(args, paint, out),
        Command::Import(args) => import::run(args, paint, out),
        Command::Snapshot(args) => snapshot::run(args, out),
        Command::Diff(args) => diff::run(args, paint, out),
        Command::Audit(args) => audit::run(args, paint, out),
        Command::Init(args) => audit::init(args, out),
        Command::Explain(args) => explain::run(args, paint, out),
        Command::Matrix(args) => matrix::run(args, out),
        Command::Probe(args) => probe::run(args, paint, out),
        Command::Fleet(args) => fleet::run(args, paint, out),
        Command::Completions(args) => completions::run(args, out),
        Command::Man(args) => completions::man(args, out),
        Command::ProbeChild => probe::child(out),
    }
}
