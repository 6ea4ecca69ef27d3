//! The `cudadiag` binary: parse, run, render, exit 0/1/2.

use clap::Parser;
use cudadiag::cli::Cli;
use cudadiag::commands::{self, Outcome};
use cudadiag::report::{self, Paint};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    // One command, then exit: what the run built up is left to the exit (`parallel::discard`).
    cudadiag::parallel::exit_soon();
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = commands::run(&cli, &mut out);
    let flushed = out.flush();
    match (result, flushed) {
        (Ok(Outcome::Clean), Ok(())) => ExitCode::SUCCESS,
        (Ok(Outcome::Failed), Ok(())) => ExitCode::from(1),
        (Err(e), _) => {
            let paint = Paint::new(
                cli.color,
                std::io::stderr().is_terminal(),
                std::env::var_os("NO_COLOR").is_some(),
            );
            let _ = report::error_line(&mut std::io::stderr(), paint, &e.0);
            ExitCode::from(2)
        }
        (Ok(_), Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        (Ok(_), Err(e)) => {
            let _ = report::error_line(
                &mut std::io::stderr(),
                Paint::plain(),
                &format!("cannot write output: {e}"),
            );
            ExitCode::from(2)
        }
    }
}
