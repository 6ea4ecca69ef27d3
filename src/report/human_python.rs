//! The lines of a Python environment's frameworks that every human report shares: one per framework with
//! its verdict (`inspect` of an environment puts them first), and `doctor`'s `python` rows in its machine
//! section. Apart from `human` and `env`, which both use them.

use super::paint::Paint;
use super::sane::Sane;
use crate::diagnose::frameworks::{Frameworks, Judged, Verdict};
use std::io::{self, Write};

/// `torch 2.15.0: will use the GPU`, and beneath it its verdict in the shared process when that differs.
pub(super) fn framework_line(
    j: &Judged,
    order: &[String],
    p: Paint,
    indent: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let name = j.installed.as_deref().unwrap_or(&j.module);
    writeln!(
        out,
        "{indent}{}: {}",
        p.bold(&Sane(name).to_string()),
        verdict(&j.alone, p)
    )?;
    if let Some(t) = j.together.as_ref().filter(|t| **t != j.alone) {
        let process: Vec<String> = order.iter().map(|m| format!("import {m}")).collect();
        writeln!(
            out,
            "{indent}  in one process with the others ({}): {}",
            Sane(&process.join("; ")),
            verdict(t, p)
        )?;
    }
    Ok(())
}

/// `will use the GPU`, `runs on the CPU: why`, `fails at import: ImportError: …`.
fn verdict(v: &Verdict, p: Paint) -> String {
    match v {
        Verdict::Gpu => p.good("will use the GPU"),
        Verdict::Cpu { because } => format!("{}: {}", p.error("runs on the CPU"), Sane(because)),
        Verdict::Fails { at, message } => {
            format!("{}: {}", p.error(&format!("fails at {at}")), Sane(message))
        }
    }
}

/// `doctor`'s lines for the active environment, in its machine section: the interpreter, then one line per
/// framework; a quiet line when there is no environment or no framework.
pub fn machine_lines(py: &Frameworks, p: Paint, out: &mut dyn Write) -> io::Result<()> {
    let label = p.dim(&format!("{:<10}", "python"));
    let because = Sane(&py.python.because);
    if let Some(problem) = &py.problem {
        return writeln!(out, "{label}no environment: {} ({because})", Sane(problem));
    }
    let exe = py.executable.as_deref().unwrap_or_default();
    let version = py
        .version
        .as_deref()
        .map(|v| format!("Python {v}, "))
        .unwrap_or_default();
    let what = match py.frameworks.len() {
        0 => format!("no framework installed ({} distributions)", py.distributions),
        1 => "1 framework".to_string(),
        n => format!("{n} frameworks"),
    };
    writeln!(out, "{label}{} ({version}{because}): {what}", Sane(exe))?;
    for j in &py.frameworks {
        framework_line(j, &py.order, p, "            ", out)?;
    }
    Ok(())
}
