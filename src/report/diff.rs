//! `cudadiag diff`'s output: a short ranked list for people, and the JSON wire format.
//!
//! JSON (`diff_version` 1; additive fields keep the version, anything else bumps it):
//!
//! - `diff_version`: 1.
//! - `tool`: the build, as the report's `tool` object.
//! - `a`, `b`: each side's `file`, `kind` (`snapshot` or `report`) and `node` (its host name, else the file's
//!   name).
//! - `differences`: most important first; each has `kind` (`module-vs-libraries`, `driver-version`,
//!   `driver-flavour`, `kernel-modules`, `driver-cuda`, `gpus`, `mig`, `device-nodes`, `libcuda`, `nvml`,
//!   `ld-cache`, `cuda-libraries`, `glibc`, `environment`, `finding`), `what` (for people), `a` and `b` (the values; `null` where absent or
//!   unknown) and `why` (one sentence).
//! - `summary`: `differences` (the count) and `findings_only_a`, `findings_only_b` (how many of them are
//!   findings present on one side only).

use super::paint::Paint;
use crate::diff::{Difference, Node};
use serde::Serialize;
use std::io::{self, Write};

/// The diff wire format's version.
pub const DIFF_VERSION: u32 = 1;

#[derive(Serialize)]
struct Wire<'a> {
    diff_version: u32,
    tool: crate::build_info::BuildInfo,
    a: Side<'a>,
    b: Side<'a>,
    differences: &'a [Difference],
    summary: Summary,
}

#[derive(Serialize)]
struct Side<'a> {
    file: &'a str,
    kind: &'a str,
    node: &'a str,
}

#[derive(Serialize)]
struct Summary {
    differences: usize,
    findings_only_a: usize,
    findings_only_b: usize,
}

fn side(n: &Node) -> Side<'_> {
    Side {
        file: &n.file,
        kind: n.kind,
        node: &n.name,
    }
}

/// Writes the JSON document.
pub fn json(a: &Node, b: &Node, diffs: &[Difference], out: &mut dyn Write) -> io::Result<()> {
    let only = |on_a: bool| {
        diffs
            .iter()
            .filter(|d| d.kind == "finding" && (if on_a { d.b.is_none() } else { d.a.is_none() }))
            .count()
    };
    let wire = Wire {
        diff_version: DIFF_VERSION,
        tool: crate::build_info::BuildInfo::current(),
        a: side(a),
        b: side(b),
        differences: diffs,
        summary: Summary {
            differences: diffs.len(),
            findings_only_a: only(true),
            findings_only_b: only(false),
        },
    };
    serde_json::to_writer_pretty(&mut *out, &wire).map_err(io::Error::other)?;
    writeln!(out)
}

/// Writes the ranked list: one line "what · A · B" per difference and its why beneath.
pub fn human(a: &Node, b: &Node, diffs: &[Difference], paint: Paint, out: &mut dyn Write) -> io::Result<()> {
    let out = &mut super::sane::Guard::new(out, paint.enabled());
    for (tag, n) in [("A", a), ("B", b)] {
        writeln!(
            out,
            "{}  {}  ({}, {})",
            paint.bold(tag),
            super::sane::escape(&n.name),
            super::sane::escape(&n.file),
            n.kind
        )?;
    }
    writeln!(out)?;
    let width = diffs.len().to_string().len();
    for (i, d) in diffs.iter().enumerate() {
        let value = |v: &Option<String>| {
            v.as_deref()
                .map_or_else(|| "—".to_string(), |s| super::sane::escape(s).into_owned())
        };
        writeln!(
            out,
            "{:>width$}. {} · {} · {}",
            i + 1,
            paint.bold(&d.what),
            value(&d.a),
            value(&d.b)
        )?;
        writeln!(out, "{:>width$}  {}", "", paint.dim(&d.why))?;
    }
    if !diffs.is_empty() {
        writeln!(out)?;
    }
    match diffs.len() {
        0 => writeln!(out, "{}", paint.good("no differences that matter")),
        1 => writeln!(out, "1 difference that matters"),
        n => writeln!(out, "{n} differences that matter"),
    }
}
