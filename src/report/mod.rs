//! The report and its renderers.
//!
//! Every command builds one [`Report`] (facts + findings) and hands it to a renderer; renderers compute nothing
//! and never decide exit codes. All of cudadiag's standard output goes through this module (clippy bans
//! `println!` elsewhere).

pub mod diff;
pub mod env;
pub mod fleet;
mod github;
mod human;
mod human_host;
mod human_image;
mod human_python;
mod human_wheel;
pub mod import;
pub mod json;
mod junit;
mod model;
mod paint;
pub mod progress;
mod sane;
mod sarif;
mod tree;

use std::io::{self, Write};

pub use model::{Detail, DocFormat, Fixes, OutputFormat, RenderOptions, Report, Summary};
pub use paint::{ColorChoice, Paint};
pub use sane::{Sane, escape, truncated};

/// Renders `report` to `out`.
pub fn render(report: &Report, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
    match opts.format {
        OutputFormat::Human => human::render(report, opts, &mut sane::Guard::new(out, opts.paint.enabled())),
        OutputFormat::Json => json::render(report, out),
        OutputFormat::Sarif => sarif::render(report, out),
        OutputFormat::Junit => junit::render(report, out),
        OutputFormat::Github => github::render(report, &mut sane::Guard::new(out, false)),
    }
}

/// Writes one finding as the human report does, with every line of its evidence (no search trail in short):
/// `explain --check` shows the findings it confirms this way.
pub fn finding_whole(f: &crate::findings::Finding, paint: Paint, out: &mut dyn Write) -> io::Result<()> {
    let opts = RenderOptions {
        format: OutputFormat::Human,
        paint,
        detail: Detail::Everything,
    };
    human::finding(f, &opts, &mut sane::Guard::new(out, paint.enabled()))
}

/// Writes a message for people to `out` as one line: the one place tool errors reach stderr (the binary calls
/// it). Messages quote input data (a RepoTag, a layer name, an Entrypoint word, a path) and a newline in that
/// data would let it write a line of its own choosing, a GitHub workflow command (`::error …`,
/// `::add-mask::…`) under Actions included, which the runner reads on stderr as on stdout. So every control
/// character, newlines included, is shown escaped ([`sane::escape`]); the line starts with `error:`, so
/// it never starts with `::`.
pub fn error_line(out: &mut dyn Write, paint: Paint, message: &str) -> io::Result<()> {
    let message = sane::escape(message);
    writeln!(
        sane::Guard::new(out, paint.enabled()),
        "{}: {message}",
        paint.error("error")
    )
}

/// Writes raw text (used by commands whose output is a document, like `codes`).
pub fn text(out: &mut dyn Write, text: &str) -> io::Result<()> {
    out.write_all(text.as_bytes())
}
