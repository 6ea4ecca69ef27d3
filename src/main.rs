//! The `cudadiag` binary: parse, run, render, exit 0/1/2.
//!
//! A closed standard output (`cudadiag codes | head -1`) is not a tool error: as ripgrep does, cudadiag stops
//! writing quietly, prints nothing on stderr and never exits 2 for it. Unlike ripgrep, the exit status still
//! says what was found (0 clean, 1 findings): a CI gate piped into `head` keeps its verdict. Every command
//! behaves the same, whether the pipe closed while the report was being written or when it was flushed.

use clap::Parser;
use cudadiag::cli::Cli;
use cudadiag::commands::{self, Outcome};
use cudadiag::report::{self, Paint};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

/// Standard output that swallows writes once the reader has gone (`EPIPE`), so that a command finishes and
/// reports its outcome instead of failing half-way through its report.
struct QuietPipe<W: Write> {
    inner: W,
    closed: bool,
}

impl<W: Write> QuietPipe<W> {
    fn check<T>(&mut self, r: std::io::Result<T>, ok: T) -> std::io::Result<T> {
        match r {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(ok)
            }
            r => r,
        }
    }
}

impl<W: Write> Write for QuietPipe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let r = self.inner.write(buf);
        self.check(r, buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let r = self.inner.flush();
        self.check(r, ())
    }
}

fn main() -> ExitCode {
    // One command, then exit: what the run built up is left to the exit (`parallel::discard`).
    cudadiag::parallel::exit_soon();
    // Before the first thread: glibc's arenas, one per core (never fewer than eight), and a descriptor table
    // large enough that opening files never waits for the kernel to retire a smaller one.
    cudadiag::parallel::cap_arenas();
    cudadiag::parallel::reserve_descriptors();
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(QuietPipe {
        inner: stdout.lock(),
        closed: false,
    });
    let result = commands::run(&cli, &mut out);
    let flushed = out.flush();
    match (result, flushed) {
        (Ok(Outcome::Clean), Ok(())) => ExitCode::SUCCESS,
        (Ok(Outcome::Failed), Ok(())) => ExitCode::from(1),
        (Err(e), _) => {
            let paint = Paint::from_env(cli.color, std::io::stderr().is_terminal());
            let _ = report::error_line(&mut std::io::stderr(), paint, &e.0);
            ExitCode::from(2)
        }
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
