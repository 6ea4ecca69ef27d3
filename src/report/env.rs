//! A Python environment's frameworks, each judged (`diagnose::frameworks`): the report of `inspect` of a venv,
//! a conda environment or a `site-packages` directory (`doctor`'s lines are `human_python`'s).
//!
//! `inspect` of an environment answers first, one line per framework ("torch 2.15.0: will use the GPU"), then
//! the findings, then the environment and (`-v`) every modelled process as `cudadiag import` shows it. JSON,
//! SARIF, JUnit and GitHub are the ordinary report's, with the frameworks under `python` in JSON.

use super::model::{OutputFormat, RenderOptions, Report};
use super::paint::Paint;
use super::sane::Sane;
use crate::diagnose::frameworks::Frameworks;
use std::io::{self, Write};

/// Renders the report of `inspect` of an environment.
pub fn render(report: &Report, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
    match (opts.format, &report.python) {
        (OutputFormat::Human, Some(py)) => human(
            report,
            py,
            opts,
            &mut super::sane::Guard::new(out, opts.paint.enabled()),
        ),
        _ => super::render(report, opts, out),
    }
}

fn human(report: &Report, py: &Frameworks, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
    let p = opts.paint;
    if py.frameworks.is_empty() {
        let names: Vec<&str> = crate::imports::known().iter().map(|f| f.module()).collect();
        writeln!(
            out,
            "{}: {} (modelled: {})",
            p.bold(&Sane(&py.python.path.to_string_lossy()).to_string()),
            p.dim("no framework installed"),
            names.join(", ")
        )?;
    }
    for j in &py.frameworks {
        super::human_python::framework_line(j, &py.order, p, "", out)?;
    }
    writeln!(out)?;
    for f in &report.findings {
        super::human::finding(f, opts, out)?;
    }
    environment(py, p, out)?;
    if opts.detail.verbose() {
        runs(py, p, out)?;
    }
    if let Some(h) = report.facts.host.as_ref().filter(|h| h.observed) {
        super::human_host::render(h, p, opts.detail.verbose(), out)?;
    }
    let s = report.summary();
    writeln!(
        out,
        "environment: {}, {}, {}",
        super::human::count(s.errors, "error", p),
        super::human::count(s.warnings, "warning", p),
        super::human::count(s.notes, "note", p)
    )
}

/// The environment in one line, and what CPython would run at start-up that was not modelled.
fn environment(py: &Frameworks, p: Paint, out: &mut dyn Write) -> io::Result<()> {
    let exe = py.executable.as_deref().unwrap_or("no interpreter");
    let version = py
        .version
        .as_deref()
        .map(|v| format!(" (Python {v})"))
        .unwrap_or_default();
    writeln!(
        out,
        "{}{}, {}: {}{version}, {} distributions, {}",
        p.dim(&format!("{:<13}", "environment")),
        Sane(&py.python.path.to_string_lossy()),
        py.kind.words(),
        Sane(exe),
        py.distributions,
        match py.frameworks.len() {
            1 => "1 framework".to_string(),
            n => format!("{n} frameworks"),
        }
    )?;
    let Some(env) = &py.env else { return Ok(()) };
    let mut shown: Vec<String> = Vec::new();
    for n in &env.syspath.not_modelled {
        let line = super::import::not_modelled(n);
        if !shown.contains(&line) {
            writeln!(out, "  {}: {}", p.dim("not modelled"), Sane(&line))?;
            shown.push(line);
        }
    }
    Ok(())
}

/// `-v`: every modelled process, its imports and its objects, as `cudadiag import` shows them.
fn runs(py: &Frameworks, p: Paint, out: &mut dyn Write) -> io::Result<()> {
    for r in &py.runs {
        let process: Vec<String> = r.modules.iter().map(|m| format!("import {m}")).collect();
        writeln!(out, "\n{} {}", p.bold("process:"), Sane(&process.join("; ")))?;
        for i in &r.imports {
            super::import::imported(i, p, out)?;
        }
        writeln!(out, "  {} objects:", r.loaded.len())?;
        for l in r
            .loaded
            .iter()
            .filter(|l| !matches!(l.how, crate::python::frameworks::LoadedHow::Start))
        {
            writeln!(
                out,
                "    {} {}",
                p.dim(&format!("[{}]", super::import::how(l))),
                Sane(&l.path)
            )?;
        }
    }
    writeln!(out)
}
