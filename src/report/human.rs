//! The human report: one summary line per binary, the entry table with `-v`, then the findings with their
//! evidence ("because") and help, then the counts.

use super::model::{Detail, RenderOptions, Report};
use super::paint::Paint;
use super::sane::{self, Sane};
use crate::facts::{BinaryFacts, CodeKind, Compression, CudartLinkage, DeviceCode};
use crate::findings::{Finding, Severity};
use std::io::{self, Write};

/// Renders the report for people: the answer first (one line per binary, or for the machine), then the
/// findings, then the details (what each binary carries, the machine), the counts and the fixes.
pub fn render(report: &Report, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
    let p = opts.paint;
    let verbose = opts.detail.verbose();
    if let Some(i) = &report.facts.image {
        super::human_image::render(i, p, verbose, out)?;
    }
    headlines(report, opts, out)?;
    for f in &report.findings {
        finding(f, opts, out)?;
    }
    for b in &report.facts.binaries {
        writeln!(out, "{}  {}", p.bold(&b.path), Sane(&summary_line(b)))?;
        if verbose {
            details(b, opts, out)?;
            if let Some(line) = glibc_line(b, report, report.facts.glibc()) {
                writeln!(out, "    {}{line}", p.dim(&format!("{:<12}", "glibc")))?;
            }
            for r in report.facts.libraries.iter().filter(|r| r.binary == b.path) {
                super::tree::render(r, &report.fixes, p, out)?;
            }
        }
    }
    super::human_wheel::render(&report.facts.wheels, p, out)?;
    // The machine section is for machines read (doctor, --facts); what-if targets show in the verdicts.
    if let Some(h) = report.facts.host.as_ref().filter(|h| h.observed) {
        super::human_host::render(h, p, verbose, out)?;
    }
    if let Some(py) = &report.python {
        super::human_python::machine_lines(py, p, out)?;
    }
    if let Some(probe) = &report.facts.probe {
        probe_section(probe, verbose, p, out)?;
    }
    let s = report.summary();
    let n = report.facts.binaries.len();
    let subject = match (
        n,
        &report.facts.probe,
        report.facts.host.as_ref().is_some_and(|h| h.observed),
    ) {
        (0, Some(_), _) => "live probe".to_string(),
        (0, None, true) => "machine".to_string(),
        (1, _, _) => "1 binary".to_string(),
        _ => format!("{n} binaries"),
    };
    writeln!(
        out,
        "{}: {}, {}, {}",
        subject,
        count(s.errors, "error", p),
        count(s.warnings, "warning", p),
        count(s.notes, "note", p)
    )?;
    if let Some(note) = &report.facts.host_note {
        writeln!(out, "({})", Sane(note))?;
    }
    fixes(report, p, out)
}

/// How many headlines are shown before those that say all is well are counted instead (`audit` of a
/// directory of hundreds of libraries).
const HEADLINES_SHOWN: usize = 12;

/// The answer, one line per binary (and GPU): all of them when they are few or with `-v`; else every line that
/// says something is wrong, and a count of those that say all is well.
fn headlines(report: &Report, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
    use crate::diagnose::Standing;
    if report.headlines.is_empty() {
        return Ok(());
    }
    let fold = report.headlines.len() > HEADLINES_SHOWN && !opts.detail.verbose();
    let well = |h: &&crate::diagnose::Headline| {
        matches!(
            h.standing,
            Standing::Runs | Standing::NoError | Standing::NoDeviceCode
        )
    };
    let mut folded = 0;
    for h in &report.headlines {
        if fold && well(&h) {
            folded += 1;
        } else {
            headline(h, opts.paint, out)?;
        }
    }
    if folded > 0 {
        writeln!(
            out,
            "{}",
            opts.paint.good(&format!(
                "… and {} more with nothing wrong: will run, or no device code of their own (each in --format \
                 json)",
                thousands(folded)
            ))
        )?;
    }
    writeln!(out)
}

/// One line of the answer: `app on NVIDIA H200 (CC 9.0): will fail: why (and 2 more errors)`.
fn headline(h: &crate::diagnose::Headline, p: Paint, out: &mut dyn Write) -> io::Result<()> {
    use crate::diagnose::Standing;
    let subject = match (&h.subject, &h.gpu) {
        (Some(b), Some(g)) => format!("{} on {}", p.bold(b), Sane(g)),
        (Some(b), None) => p.bold(b),
        (None, _) => p.bold("this machine"),
    };
    let word = match (h.standing, h.subject.is_some()) {
        (Standing::Runs, _) => p.good("will run"),
        (Standing::RunsAfterJit, _) => p.warning("will run after JIT"),
        (Standing::Fails, true) => p.error("will fail"),
        (Standing::Fails, false) => p.error("CUDA programs will fail"),
        (Standing::NoDeviceCode, _) => p.dim("no verdict"),
        (Standing::NoError, _) => p.good("no error found"),
    };
    let mut why = h.why.clone();
    if h.standing == Standing::NoError && h.subject.is_some() {
        why = "no GPU known to judge its kernels on (--gpu or --driver names one)".into();
    }
    if h.more_errors > 0 {
        why.push_str(&format!(
            " (and {} more error{})",
            h.more_errors,
            if h.more_errors == 1 { "" } else { "s" }
        ));
    }
    if why.is_empty() {
        writeln!(out, "{subject}: {word}")
    } else {
        writeln!(out, "{subject}: {word}: {}", Sane(&why))
    }
}

/// The fixes, most important first (errors and warnings, each once).
fn fixes(report: &Report, p: Paint, out: &mut dyn Write) -> io::Result<()> {
    let mut fixes: Vec<(&str, &str)> = Vec::new();
    for f in &report.findings {
        if f.severity > Severity::Note && !f.help.is_empty() && !fixes.iter().any(|(_, h)| *h == f.help) {
            fixes.push((&f.slug, &f.help));
        }
    }
    if !fixes.is_empty() && !report.verdicts.is_empty() {
        writeln!(out, "\n{}", p.bold("fixes, most important first"))?;
        for (i, (slug, help)) in fixes.iter().enumerate() {
            writeln!(out, "  {}. [{}] {}", i + 1, Sane(slug), Sane(help))?;
        }
    }
    Ok(())
}

pub(super) fn count(n: usize, what: &str, p: Paint) -> String {
    let text = format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match (n, what) {
        (0, _) => text,
        (_, "error") => p.error(&text),
        (_, "warning") => p.warning(&text),
        _ => p.note(&text),
    }
}

fn push_unique(list: &mut Vec<String>, s: String) {
    if !list.contains(&s) {
        list.push(s);
    }
}

fn sorted_archs<'a>(entries: impl Iterator<Item = &'a DeviceCode>) -> Vec<&'a DeviceCode> {
    let mut v: Vec<&DeviceCode> = entries.collect();
    v.sort_by_key(|e| (e.sm, e.suffix));
    v.dedup_by(|a, b| a.arch == b.arch && a.ptx_isa == b.ptx_isa);
    v
}

fn arch_list(entries: &[&DeviceCode], with_isa: bool) -> String {
    entries
        .iter()
        .map(|e| match (&e.ptx_isa, with_isa) {
            (Some(isa), true) => format!("{} (ISA {isa})", e.arch),
            _ => e.arch.clone(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `SASS sm_75 sm_80 sm_90 · PTX compute_90 (ISA 9.0) · CUDA 13.0.88 · cudart static 13.0`
pub fn summary_line(b: &BinaryFacts) -> String {
    let mut parts = Vec::new();
    let code = |kind: CodeKind, rel: bool| {
        sorted_archs(
            b.device_code
                .iter()
                .filter(move |e| e.kind == kind && e.relocatable == rel),
        )
    };
    let sass = code(CodeKind::Sass, false);
    let ptx = code(CodeKind::Ptx, false);
    if !sass.is_empty() {
        parts.push(format!("SASS {}", arch_list(&sass, false)));
    }
    if !ptx.is_empty() {
        parts.push(format!("PTX {}", arch_list(&ptx, true)));
    }
    let (rsass, rptx) = (code(CodeKind::Sass, true), code(CodeKind::Ptx, true));
    if !rsass.is_empty() || !rptx.is_empty() {
        let mut s = vec!["relocatable".to_string()];
        if !rsass.is_empty() {
            s.push(format!("SASS {}", arch_list(&rsass, false)));
        }
        if !rptx.is_empty() {
            s.push(format!("PTX {}", arch_list(&rptx, true)));
        }
        parts.push(s.join(" "));
    }
    let nvvm = sorted_archs(b.device_code.iter().filter(|e| e.kind == CodeKind::Nvvm));
    if !nvvm.is_empty() {
        parts.push(format!("LTO-IR {}", arch_list(&nvvm, false)));
    }
    if b.device_code_skipped {
        parts.push("device code not read".to_string());
    } else if b.device_code.is_empty() && b.format == Some(crate::facts::Format::Elf) {
        parts.push("no device code".to_string());
    }
    let mut toolkits = Vec::new();
    for e in &b.device_code {
        if let Some(t) = &e.toolkit {
            push_unique(&mut toolkits, t.clone());
        }
    }
    if !toolkits.is_empty() {
        parts.push(format!("CUDA {}", toolkits.join(", ")));
    }
    for (c, name) in [(Compression::Zstd, "zstd"), (Compression::Lz4, "lz4")] {
        let n = b.device_code.iter().filter(|e| e.compression == c).count();
        if n > 0 {
            parts.push(format!("{n} {name}-compressed"));
        }
    }
    if b.device_code.iter().any(|e| e.debug) {
        parts.push("debug (-G)".to_string());
    }
    match b.cudart.linkage {
        CudartLinkage::Static => parts.push(format!(
            "cudart static{}",
            b.cudart
                .version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default()
        )),
        CudartLinkage::Dynamic => parts.push(format!(
            "cudart shared ({}){}",
            b.cudart.soname.as_deref().unwrap_or("libcudart.so"),
            b.cudart
                .version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default()
        )),
        CudartLinkage::None => {}
    }
    if parts.is_empty() {
        parts.push(
            b.format
                .map_or("unknown", crate::facts::Format::as_str)
                .to_string(),
        );
    }
    parts.join(" · ")
}

/// The glibc floor of a binary and of its process, for `-v`: "needs 2.34 (GLIBC_2.34 from libc.so.6); its
/// process 2.35 (GLIBC_2.35 from libc.so.6, by /opt/lib/libfoo.so); the machine's 2.36".
fn glibc_line(
    b: &BinaryFacts,
    report: &Report,
    machine: Option<&crate::facts::host::GlibcFacts>,
) -> Option<String> {
    let own = crate::glibc::floor(&b.elf.as_ref()?.version_needs);
    let mut line = match &own {
        Some(n) => format!("needs {} ({} from {})", n.version, n.name, n.from),
        None => "needs no glibc symbol version".to_string(),
    };
    let resolution = report.facts.libraries.iter().find(|r| r.binary == b.path);
    if let Some(Some((by, n))) = report.glibc_floors.get(&b.path)
        && *by != b.path
        && own
            .as_ref()
            .is_none_or(|own| crate::glibc::compare(&n.version, &own.version).is_gt())
    {
        line.push_str(&format!(
            "; its process {} ({} from {}, by {by})",
            n.version, n.name, n.from
        ));
    }
    // A binary of another architecture does not use this machine's glibc.
    if let Some(g) = machine.filter(|_| resolution.is_none_or(|r| r.foreign.is_none())) {
        line.push_str(&format!("; the machine's {}", g.version));
    }
    Some(line)
}

fn details(b: &BinaryFacts, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
    let p = opts.paint;
    if let Some(e) = &b.elf {
        let class = e.class.as_str();
        writeln!(
            out,
            "    {class} {} {}{}",
            Sane(&e.machine_name),
            Sane(&e.elf_type),
            if e.has_symtab { "" } else { ", stripped" }
        )?;
        let rows: [(&str, Vec<String>); 5] = [
            ("interpreter", e.interpreter.iter().cloned().collect()),
            ("soname", e.soname.iter().cloned().collect()),
            ("needed", e.needed.clone()),
            ("rpath", e.rpath.clone()),
            ("runpath", e.runpath.clone()),
        ];
        for (name, values) in rows {
            if !values.is_empty() {
                writeln!(
                    out,
                    "    {}{}",
                    p.dim(&format!("{:<12}", name)),
                    Sane(&values.join(" "))
                )?;
            }
        }
        if e.nodeflib {
            writeln!(out, "    {}DF_1_NODEFLIB", p.dim(&format!("{:<12}", "flags")))?;
        }
    }
    for ev in &b.cudart.evidence {
        writeln!(out, "    {}{}", p.dim(&format!("{:<12}", "cudart")), Sane(ev))?;
    }
    for (i, c) in b.fatbins.iter().enumerate() {
        writeln!(
            out,
            "    {}#{i} at 0x{:x}{}, {} bytes, {}{}",
            p.dim(&format!("{:<12}", "fatbin")),
            c.offset,
            c.section
                .as_deref()
                .map(|s| format!(" in {}", Sane(s)))
                .unwrap_or_default(),
            c.size,
            crate::findings::count(c.entries, "entry", "entries"),
            if c.found_by_scan {
                " (found by magic scan)"
            } else {
                ""
            }
        )?;
    }
    if !b.device_code.is_empty() {
        writeln!(
            out,
            "    {}",
            p.dim(&format!(
                "{:>3} {:>3}  {:<4}  {:<12} {:>5}  {:<5} {:>9} {:>9}  {:<10} {:<10} {}",
                "#", "fb", "kind", "arch", "ver", "comp", "size", "stored", "flags", "toolkit", "notes"
            ))
        )?;
        for (i, e) in b.device_code.iter().enumerate() {
            let kind = e.kind.as_str();
            let mut notes = Vec::new();
            if e.relocatable {
                notes.push("relocatable".to_string());
            }
            if e.debug {
                notes.push("debug".to_string());
            }
            if let Some(why) = &e.unread {
                notes.push(why.clone());
            }
            if let Some(id) = &e.identifier {
                notes.push(format!("id={id}"));
            }
            if let Some(tool) = e.cubin.as_ref().and_then(|c| c.tool.as_ref()) {
                notes.push(format!("by {tool}"));
            }
            let row = format!(
                "{:>3} {:>3}  {:<4}  {:<12} {:>5}  {:<5} {:>9} {:>9}  {:<10} {:<10} {}",
                i,
                e.container,
                kind,
                e.arch,
                format!("{}.{}", e.code_version[0], e.code_version[1]),
                e.compression.as_str(),
                e.size,
                e.stored_size,
                format!("0x{:x}", e.flags),
                e.toolkit.as_deref().unwrap_or("-"),
                notes.join("; ")
            );
            writeln!(out, "    {}", Sane(&row))?;
            if let Some(c) = &e.cubin {
                name_list("kernels", &c.kernels, opts, out)?;
            }
            if let Some(x) = &e.ptx {
                name_list("entries", &x.entries, opts, out)?;
            }
        }
    }
    Ok(())
}

pub(super) fn finding(f: &Finding, opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
    let p = opts.paint;
    let head = format!("{}[{}]", f.severity, f.code);
    let head = match f.severity {
        Severity::Error => p.error(&head),
        Severity::Warning => p.warning(&head),
        Severity::Note => p.note(&head),
    };
    writeln!(out, "{head} {}: {}", p.bold(&f.slug), Sane(&f.message))?;
    let mut i = 0;
    while i < f.evidence.len() {
        // A folded run (a search trail) is shown in short unless everything is asked for.
        let fold = f.folds.iter().find(|r| r.start == i && r.len > 0);
        if let Some(r) = fold.filter(|_| !opts.detail.verbose()) {
            for line in &r.short {
                writeln!(out, "  {} {}", p.dim("because"), Sane(line))?;
            }
            i += r.len;
            continue;
        }
        writeln!(out, "  {} {}", p.dim("because"), Sane(&f.evidence[i]))?;
        i += 1;
    }
    if !f.help.is_empty() {
        writeln!(out, "  {} {}", p.good("help"), Sane(&f.help))?;
    }
    writeln!(out)
}

/// How wide a wrapped list may run: readable in an 80- to 120-column terminal and in a CI log.
const LIST_WIDTH: usize = 100;
/// How many names of a long list `-v` shows.
const LIST_FIRST: usize = 5;

/// A list of names under a table row (`kernels: a, b, c … 1,234 more`), wrapped at [`LIST_WIDTH`]: the first
/// few with `-v`, all of them with `-v --deep`. A name longer than a line has a line of its own, whole (a
/// mangled C++ name is copied, not read).
fn name_list(label: &str, names: &[String], opts: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    let all = opts.detail == Detail::Everything || names.len() <= LIST_FIRST + 1;
    let shown = if all { names } else { &names[..LIST_FIRST] };
    let indent = "            ";
    let mut line = format!("{indent}{label} ({}): ", thousands(names.len()));
    let mut first_on_line = true;
    let mut pieces: Vec<String> = shown.iter().map(|n| sane::escape(n).into_owned()).collect();
    if !all {
        pieces.push(format!(
            "… {} more (all with --deep -v, or in --format json)",
            thousands(names.len() - shown.len())
        ));
    }
    let last = pieces.len() - 1;
    for (k, piece) in pieces.iter().enumerate() {
        let sep = if k < last && (all || k + 1 < last) {
            ","
        } else {
            ""
        };
        let piece = format!("{piece}{sep}");
        let width = line.chars().count() + 1 + piece.chars().count();
        if !first_on_line && width > LIST_WIDTH {
            writeln!(out, "{}", opts.paint.dim(line.trim_end()))?;
            line = format!("{indent}    ");
            first_on_line = true;
        }
        if !first_on_line {
            line.push(' ');
        }
        line.push_str(&piece);
        first_on_line = false;
    }
    writeln!(out, "{}", opts.paint.dim(&line))
}

/// `1234567` as `1,234,567`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The live probe: how it ended, the driver, each GPU and its self-test, the runtime, each module load; every
/// call with its time when verbose.
fn probe_section(
    pr: &crate::facts::probe::ProbeFacts,
    verbose: bool,
    p: Paint,
    out: &mut dyn Write,
) -> io::Result<()> {
    let outcome = pr.outcome.as_str();
    let outcome = if pr.outcome == crate::facts::probe::ProbeOutcome::Completed {
        p.good(outcome)
    } else {
        p.error(outcome)
    };
    writeln!(out, "{}  {outcome} in {} ms", p.bold("live probe"), pr.elapsed_ms)?;
    let row = |out: &mut dyn Write, k: &str, v: &str| {
        writeln!(out, "    {}{}", p.dim(&format!("{:<12}", k)), Sane(v))
    };
    if let Some(d) = &pr.detail {
        row(out, "detail", d)?;
    }
    if let Some(d) = &pr.during {
        row(out, "during", d)?;
    }
    for (k, v) in &pr.env {
        // NVIDIA_REQUIRE_CUDA and friends can run to kilobytes; the JSON keeps them whole.
        let shown: String = v.chars().take(100).collect();
        let more = if shown.len() < v.len() { "…" } else { "" };
        row(out, "env", &format!("{k}={shown}{more}"))?;
    }
    if let Some(d) = &pr.driver {
        let lib = match (&d.library.loaded_from, &d.library.error) {
            (Some(f), _) => f.clone(),
            (None, Some(e)) => format!("not loaded: {e}"),
            (None, None) => d.library.requested.clone(),
        };
        row(out, "libcuda", &lib)?;
        if let Some(init) = &d.init {
            row(out, "cuInit", &init.describe())?;
        }
        if let Some(v) = d.version {
            row(
                out,
                "driver",
                &format!("CUDA {}.{} ({v})", v / 1000, (v % 1000) / 10),
            )?;
        }
        for g in &d.devices {
            let mut parts = vec![format!("#{}", g.ordinal)];
            parts.extend(g.name.clone());
            parts.extend(g.cc.as_ref().map(|c| format!("cc {c}")));
            parts.extend(
                g.total_mem
                    .map(|m| format!("{:.1} GiB", m as f64 / f64::from(1u32 << 30))),
            );
            parts.extend(g.uuid.clone());
            parts.extend(g.bus_id.clone());
            parts.extend(
                g.compute_mode
                    .as_ref()
                    .filter(|m| *m != "default")
                    .map(|m| format!("compute mode {m}")),
            );
            parts.extend(g.mig_mode.as_ref().map(|m| format!("MIG {m}")));
            row(out, "gpu", &parts.join("  "))?;
        }
        for t in &d.selftests {
            let text = if t.passed {
                format!(
                    "device {}: context, allocation, {} kernel launched and checked",
                    t.device,
                    t.kernel.as_deref().unwrap_or("PTX")
                )
            } else if let Some(c) = &t.failed_call {
                format!("device {}: FAILED: {}", t.device, c.describe())
            } else {
                format!(
                    "device {}: FAILED: {}",
                    t.device,
                    t.mismatch.as_deref().unwrap_or("did not complete")
                )
            };
            row(out, "self-test", &text)?;
            for r in &t.rejected_kernels {
                row(out, "", &format!("rejected {r}"))?;
            }
        }
        if verbose {
            for c in &d.calls {
                row(
                    out,
                    "call",
                    &format!("{:>10.3} ms  {}", c.elapsed_us as f64 / 1000.0, c.describe()),
                )?;
            }
        }
    }
    if let Some(rt) = &pr.runtime {
        let lib = match (&rt.library.loaded_from, &rt.library.error) {
            (Some(f), _) => format!("{f} ({})", rt.library.source),
            (None, Some(e)) => format!("not loaded ({}): {e}", rt.library.source),
            (None, None) => rt.library.requested.clone(),
        };
        row(out, "libcudart", &lib)?;
        for c in &rt.calls {
            let value = match c.call.as_str() {
                "cudaRuntimeGetVersion" => rt.runtime_version,
                "cudaDriverGetVersion" => rt.driver_version,
                _ => rt.device_count,
            };
            let value = value.map(|v| format!(" = {v}")).unwrap_or_default();
            row(out, "runtime", &format!("{}{value}", c.describe()))?;
        }
    }
    for m in &pr.modules {
        let what = match m.container {
            Some(i) => format!("{} fatbin #{i} (0x{:x}, {} bytes)", m.binary, m.offset, m.size),
            None => format!("{} ({} bytes)", m.binary, m.size),
        };
        let result = match (&m.result, &m.error) {
            (Some(r), _) if r.code == 0 => p.good("loaded"),
            (Some(r), _) => p.error(&r.describe()),
            (None, Some(e)) => p.error(e),
            (None, None) => "not loaded".to_string(),
        };
        let note = if m.has_kernels == Some(false) {
            " (no kernels: not loaded by the runtime)"
        } else {
            ""
        };
        // The result is coloured: the data in the line is escaped piece by piece.
        writeln!(
            out,
            "    {}{} on device {}: {result}{note}",
            p.dim(&format!("{:<12}", "module")),
            Sane(&what),
            m.device
        )?;
        if let Some(log) = &m.jit_log {
            row(out, "", &format!("JIT log: {}", log.replace('\n', " | ")))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Detail, OutputFormat};

    fn list(n: usize, detail: Detail) -> String {
        let names: Vec<String> = (0..n).map(|i| format!("_Z6kernel{i}Pfi")).collect();
        let opts = RenderOptions {
            format: OutputFormat::Human,
            paint: Paint::plain(),
            detail,
        };
        let mut out = Vec::new();
        name_list("kernels", &names, &opts, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_long_list_shows_its_first_names_and_counts_the_rest() {
        let text = list(1234, Detail::Verbose);
        assert!(
            text.contains("kernels (1,234): _Z6kernel0Pfi, _Z6kernel1Pfi"),
            "{text}"
        );
        assert!(
            text.contains("_Z6kernel4Pfi … 1,229 more (all with --deep -v"),
            "{text}"
        );
        assert!(!text.contains("_Z6kernel5Pfi"), "{text}");
    }

    #[test]
    fn every_name_with_deep_verbose_and_no_line_past_the_width() {
        let text = list(1234, Detail::Everything);
        assert!(text.contains("_Z6kernel1233Pfi"), "{text}");
        assert!(!text.contains("more"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= LIST_WIDTH), "{text}");
        // Each name once, none cut.
        assert_eq!(text.matches("_Z6kernel").count(), 1234);
    }

    #[test]
    fn a_name_longer_than_a_line_is_kept_whole_on_a_line_of_its_own() {
        let long = "x".repeat(150);
        let opts = RenderOptions {
            format: OutputFormat::Human,
            paint: Paint::plain(),
            detail: Detail::Everything,
        };
        let mut out = Vec::new();
        name_list(
            "kernels",
            &["a".into(), long.clone(), "b".into()],
            &opts,
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.lines().any(|l| l.trim() == format!("{long},")), "{text}");
    }

    fn report_of(headlines: Vec<crate::diagnose::Headline>) -> Report {
        Report {
            headlines,
            ..Report::default()
        }
    }

    fn headline_of(name: &str, standing: crate::diagnose::Standing) -> crate::diagnose::Headline {
        crate::diagnose::Headline {
            subject: Some(name.into()),
            gpu: Some("CC 9.0".into()),
            standing,
            why: String::new(),
            more_errors: 0,
        }
    }

    fn shown(report: &Report, detail: Detail) -> String {
        let opts = RenderOptions {
            format: OutputFormat::Human,
            paint: Paint::plain(),
            detail,
        };
        let mut out = Vec::new();
        headlines(report, &opts, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn many_headlines_keep_what_is_wrong_and_count_the_rest() {
        use crate::diagnose::Standing;
        let mut list: Vec<_> = (0..20)
            .map(|i| headline_of(&format!("lib{i}.so"), Standing::Runs))
            .collect();
        list[7].standing = Standing::Fails;
        list[7].why = "no kernel image".into();
        let r = report_of(list);
        let text = shown(&r, Detail::Short);
        assert!(
            text.contains("lib7.so on CC 9.0: will fail: no kernel image"),
            "{text}"
        );
        assert!(!text.contains("lib8.so"), "{text}");
        assert!(text.contains("… and 19 more with nothing wrong"), "{text}");
        // With -v, every line.
        assert_eq!(shown(&r, Detail::Verbose).lines().count(), 21);
        // A few are never folded.
        let few = report_of(
            (0..3)
                .map(|i| headline_of(&format!("l{i}"), Standing::Runs))
                .collect(),
        );
        assert_eq!(shown(&few, Detail::Short).lines().count(), 4);
    }

    #[test]
    fn data_in_the_answer_and_in_name_lists_is_escaped() {
        let mut h = headline_of("app\x1b]0;pwned\x07", crate::diagnose::Standing::Fails);
        h.why = "libx\u{202e}.so missing".into();
        let text = shown(&report_of(vec![h]), Detail::Short);
        assert!(!text.contains('\x1b') && !text.contains('\u{202e}'), "{text:?}");
        assert!(text.contains("app\\e]0;pwned\\x07"), "{text:?}");
        let opts = RenderOptions {
            format: OutputFormat::Human,
            paint: Paint::new(crate::report::ColorChoice::Always, false, false),
            detail: Detail::Everything,
        };
        let mut out = Vec::new();
        name_list("kernels", &["k\x1b[2J".into()], &opts, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("k\\e[2J"), "{text:?}");
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
