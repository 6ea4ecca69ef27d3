//! `cudadiag import`'s report: the interpreter and its `sys.path`, each import's outcome (and its first GPU
//! use), every library of the process with how and from where it came in, the findings. Human text and JSON;
//! every string a file gave is sanitised on a terminal ([`super::sane::Guard`]).

use super::model::{Detail, DocFormat, OutputFormat, RenderOptions};
use super::paint::Paint;
use super::sane::Sane;
use crate::imports::{ImportReport, Imported};
use crate::python::frameworks::{Loaded, LoadedHow, Outcome, Step};
use serde::Serialize;
use std::io::{self, Write};

/// Renders `r` as `format`.
pub fn render(
    r: &ImportReport,
    format: DocFormat,
    paint: Paint,
    detail: Detail,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        DocFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &Wire::of(r)).map_err(io::Error::other)?;
            writeln!(out)
        }
        DocFormat::Human => human(
            r,
            paint,
            detail,
            &mut super::sane::Guard::new(out, paint.enabled()),
        ),
    }
}

/// The JSON form: the distributions without their file lists (torch's `RECORD` alone is twelve thousand).
#[derive(Serialize)]
struct Wire<'a> {
    python: &'a crate::python::frameworks::env::Chosen,
    executable: String,
    sys_path: &'a [crate::python::syspath::Entry],
    not_modelled: &'a [crate::python::syspath::NotModelled],
    distributions: Vec<WireDist<'a>>,
    imports: &'a [Imported],
    loaded: &'a [Loaded],
    findings: &'a [crate::findings::Finding],
}

#[derive(Serialize)]
struct WireDist<'a> {
    name: &'a str,
    version: &'a str,
    site: String,
    files: usize,
    requires: &'a [String],
}

impl<'a> Wire<'a> {
    fn of(r: &'a ImportReport) -> Wire<'a> {
        Wire {
            python: &r.python,
            executable: r.env.syspath.executable.to_string_lossy().into_owned(),
            sys_path: &r.env.syspath.entries,
            not_modelled: &r.env.syspath.not_modelled,
            distributions: r
                .env
                .dists()
                .map(|d| WireDist {
                    name: d.name(),
                    version: d.version(),
                    site: d.site.to_string_lossy().into_owned(),
                    files: d.files().len(),
                    requires: d.requires(),
                })
                .collect(),
            imports: &r.imports,
            loaded: &r.loaded,
            findings: &r.findings,
        }
    }
}

fn human(r: &ImportReport, p: Paint, detail: Detail, out: &mut dyn Write) -> io::Result<()> {
    let sp = &r.env.syspath;
    let version = sp
        .version
        .as_ref()
        .map(|v| format!(" (Python {}.{})", v.major, v.minor))
        .unwrap_or_default();
    writeln!(
        out,
        "{}{version}, chosen by {}: {} sys.path entries, {} distributions",
        p.bold(&sp.executable.to_string_lossy()),
        Sane(&r.python.because),
        sp.entries.len(),
        r.env.dists().count()
    )?;
    if detail.verbose() {
        for (i, e) in sp.entries.iter().enumerate() {
            writeln!(out, "  sys.path[{i}] {}", Sane(&e.path.to_string_lossy()))?;
        }
    }
    let mut shown: Vec<String> = Vec::new();
    for n in &sp.not_modelled {
        let line = not_modelled(n);
        if !shown.contains(&line) {
            writeln!(out, "  {}: {}", p.dim("not modelled"), Sane(&line))?;
            shown.push(line);
        }
    }
    for i in &r.imports {
        imported(i, p, out)?;
    }
    writeln!(out, "\n{} objects in the process:", r.loaded.len())?;
    for l in &r.loaded {
        if !detail.verbose() && matches!(l.how, LoadedHow::Start) {
            continue;
        }
        writeln!(out, "  {} {}", p.dim(&format!("[{}]", how(l))), Sane(&l.path))?;
    }
    if r.findings.is_empty() {
        return writeln!(out, "\n{}", p.good("no finding"));
    }
    writeln!(out)?;
    let opts = RenderOptions {
        format: OutputFormat::Human,
        paint: p,
        detail,
    };
    for f in &r.findings {
        super::human::finding(f, &opts, out)?;
    }
    Ok(())
}

pub(super) fn imported(i: &Imported, p: Paint, out: &mut dyn Write) -> io::Result<()> {
    let installed = i.installed.as_deref().unwrap_or("not installed");
    writeln!(out, "\nimport {} ({})", p.bold(&i.module), Sane(installed))?;
    if let Some(about) = &i.model_about {
        writeln!(out, "  model: {}", Sane(about))?;
    }
    if let Some(near) = i.model.as_ref().and_then(|m| m.nearest.as_deref()) {
        writeln!(out, "  {}", p.warning(&Sane(near).to_string()))?;
    }
    step("import", &i.import, p, out)?;
    if let Some(s) = &i.first_use {
        step("first GPU use", s, p, out)?;
    }
    Ok(())
}

fn step(what: &str, s: &Step, p: Paint, out: &mut dyn Write) -> io::Result<()> {
    let word = match &s.outcome {
        Outcome::Gpu => p.good("works"),
        Outcome::CpuFallback { because, .. } => format!("{}: {}", p.error("runs on the CPU"), Sane(because)),
        Outcome::Fails { message, .. } => format!("{}: {}", p.error("fails"), Sane(message)),
    };
    writeln!(out, "  {what}: {word}")?;
    for n in &s.notes {
        writeln!(out, "    {} {}", p.dim("note:"), Sane(n))?;
    }
    Ok(())
}

/// `preloaded by torch: sys.path[3] …`, `needed by libtorch_cuda.so, rpath`, `opened by name by libcudart.so.13`.
pub(super) fn how(l: &Loaded) -> String {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let at = match l.when {
        crate::python::frameworks::When::Import => "",
        crate::python::frameworks::When::FirstUse => ", at first GPU use",
    };
    match &l.how {
        LoadedHow::Start => "interpreter start".into(),
        LoadedHow::Preloaded { by, search, global } => {
            let g = if *global { ", RTLD_GLOBAL" } else { "" };
            format!("preloaded by {by}{g}: {search}")
        }
        LoadedHow::Extension { module } => format!("extension module {module}"),
        LoadedHow::Needed {
            needed_by,
            found,
            via,
        } => {
            let via = via
                .as_deref()
                .map(|v| format!(" of {}", base(v)))
                .unwrap_or_default();
            format!("needed by {}, {}{via}{at}", base(needed_by), found.as_str())
        }
        LoadedHow::Opened { name, caller, found } => {
            format!("dlopen({name}) by {}, {}{at}", base(caller), found.as_str())
        }
    }
}

/// One thing CPython would run at start-up, in words.
pub(super) fn not_modelled(n: &crate::python::syspath::NotModelled) -> String {
    use crate::python::syspath::NotModelled as N;
    match n {
        N::PthImport { pth, line, .. } => {
            format!("{}:{line} runs code at start-up (an import line)", pth.display())
        }
        N::PthUnreadable { pth, error } => format!("{}: unreadable ({error})", pth.display()),
        N::SiteCustomize { path } => format!("{}: sitecustomize runs at start-up", path.display()),
        N::UserCustomize { path } => format!("{}: usercustomize runs at start-up", path.display()),
        N::UserHomeUnknown => "HOME is unset and the user unknown: the user site is left out".into(),
        N::PyvenvUnreadable { path, error } => format!("{}: unreadable ({error})", path.display()),
    }
}
