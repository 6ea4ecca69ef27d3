//! `cudadiag fleet`: the human summary and the JSON document of a [`Fleet`].
//!
//! Human: counts first (nodes, verdicts, files not used), then each group (findings, drivers, GPU models, the
//! artefact's outcomes) with its node names, a long list cut to one line and "and N more" (`-v`: every name,
//! and every file not used with why). JSON (`fleet_version` 1): `nodes` (the count), `verdicts`, `findings`,
//! `drivers` and `gpus` (each value → node names), `without_driver`, `without_gpu`, `artifact` (with
//! `--artifact` or `--image`), `per_node` (every node with what was read of it) and `unreadable` (every file not used, with
//! why). Every node name and file name is data from the nodes' files: escaped on a terminal.

use super::paint::Paint;
use super::sane::{Guard, Sane};
use crate::findings::Severity;
use crate::fleet::Predictions;
use crate::fleet::judge::Outcome;
use crate::fleet::{Fleet, Standing};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// The fleet JSON document's version: additive changes keep it.
pub const FLEET_VERSION: u32 = 1;

/// How wide a line of node names may grow before the rest is counted.
const WIDTH: usize = 100;

/// Writes the human summary.
pub fn human(fleet: &Fleet, paint: Paint, verbose: bool, out: &mut dyn Write) -> io::Result<()> {
    let out = &mut Guard::new(out, paint.enabled());
    let nodes = fleet.nodes.len();
    let mut head = format!("{} node{}", nodes, plural(nodes));
    let f = &fleet.files;
    let unused = f.skipped.len();
    let mut files = vec![format!("{} file{} read", f.read, plural(f.read))];
    if unused > 0 {
        files.push(format!("{unused} not used"));
    }
    if f.other > 0 {
        files.push(format!("{} other file{} skipped", f.other, plural(f.other)));
    }
    head.push_str(&format!(" ({})", files.join(", ")));
    writeln!(out, "{}", paint.bold(&head))?;
    let verdicts: Vec<String> = fleet
        .verdicts
        .iter()
        .map(|(s, names)| {
            let t = format!("{} {}", names.len(), s.as_str());
            match s {
                Standing::Fails => paint.error(&t),
                Standing::Warnings => paint.warning(&t),
                Standing::Ok => paint.good(&t),
            }
        })
        .collect();
    if !verdicts.is_empty() {
        writeln!(out, "verdicts: {}", verdicts.join(" · "))?;
    }
    if let Some(a) = &fleet.artefact {
        artefact(a, paint, verbose, out)?;
    }
    if !fleet.findings.is_empty() {
        writeln!(out, "\n{}", paint.bold("findings"))?;
        let key_width = fleet
            .findings
            .iter()
            .map(|g| g.slug.chars().count())
            .max()
            .unwrap_or(0);
        for g in &fleet.findings {
            let sev = match g.severity {
                Severity::Error => paint.error("error  "),
                Severity::Warning => paint.warning("warning"),
                Severity::Note => paint.note("note   "),
            };
            let lead = format!("  {sev} {:<key_width$}  ", Sane(&g.slug));
            group_line(out, &lead, &g.nodes, verbose)?;
        }
    }
    if !fleet.drivers.is_empty() || !fleet.without_driver.is_empty() {
        writeln!(out, "\n{}", paint.bold("drivers"))?;
        let mut rows: Vec<(String, &[String])> = fleet
            .drivers
            .iter()
            .map(|g| (g.key.clone(), g.nodes.as_slice()))
            .collect();
        if !fleet.without_driver.is_empty() {
            rows.push(("no driver".into(), &fleet.without_driver));
        }
        rows_of(out, &rows, verbose)?;
    }
    if !fleet.gpus.is_empty() || !fleet.without_gpu.is_empty() {
        writeln!(out, "\n{}", paint.bold("GPUs"))?;
        let mut rows: Vec<(String, &[String])> = fleet
            .gpus
            .iter()
            .map(|g| (g.key.clone(), g.nodes.as_slice()))
            .collect();
        if !fleet.without_gpu.is_empty() {
            rows.push(("no GPU".into(), &fleet.without_gpu));
        }
        rows_of(out, &rows, verbose)?;
    }
    if verbose && let Some((_, names)) = fleet.verdicts.iter().find(|(s, _)| *s == Standing::Fails) {
        writeln!(out, "\n{}", paint.bold("nodes that fail"))?;
        group_line(out, "  ", names, true)?;
    }
    unused_files(fleet, paint, verbose, out)
}

fn artefact(a: &Predictions, paint: Paint, verbose: bool, out: &mut dyn Write) -> io::Result<()> {
    let counts: Vec<String> = a
        .outcomes
        .iter()
        .map(|o| {
            let t = format!("{} {}", o.nodes.len(), o.key.replace('-', " "));
            if o.key == Outcome::Fails.as_str() {
                paint.error(&t)
            } else if o.key == Outcome::Runs.as_str() {
                paint.good(&t)
            } else {
                paint.warning(&t)
            }
        })
        .collect();
    let mut shown: Vec<String> = a.paths.iter().map(|p| Sane(p).to_string()).collect();
    if let Some(i) = &a.image {
        shown = vec![format!("{} ({})", Sane(&i.path), Sane(&i.program))];
    }
    writeln!(
        out,
        "\n{} {}",
        paint.bold(&shown.join(" ")),
        if counts.is_empty() {
            "judged on no node".to_string()
        } else {
            format!("on these nodes: {}", counts.join(" · "))
        }
    )?;
    let width = a
        .groups
        .iter()
        .map(|g| label(g.outcome, g.code.as_deref()).chars().count())
        .max()
        .unwrap_or(0);
    for g in &a.groups {
        let l = label(g.outcome, g.code.as_deref());
        let l = match g.outcome {
            Outcome::Fails => paint.error(&format!("{:<width$}", Sane(&l))),
            Outcome::Runs => paint.good(&format!("{l:<width$}")),
            _ => paint.warning(&format!("{l:<width$}")),
        };
        group_line(out, &format!("  {l}  "), &g.nodes, verbose)?;
        if !g.example.is_empty() && g.outcome != Outcome::Runs {
            let who = g.nodes.first().map_or("", String::as_str);
            let example = super::sane::truncated(&g.example, 300);
            writeln!(out, "      {}", paint.dim(&format!("{}: {example}", Sane(who))))?;
        }
    }
    Ok(())
}

fn label(outcome: Outcome, code: Option<&str>) -> String {
    match code {
        Some(c) => format!("{}: {c}", outcome.as_str()),
        None => outcome.as_str().to_string(),
    }
}

fn unused_files(fleet: &Fleet, paint: Paint, verbose: bool, out: &mut dyn Write) -> io::Result<()> {
    let f = &fleet.files;
    if let Some(t) = &f.truncated {
        writeln!(out, "\n{}: {}", paint.warning("walk cut short"), Sane(t))?;
    }
    if f.skipped.is_empty() {
        return Ok(());
    }
    let mut kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
    for s in &f.skipped {
        *kinds.entry(skip_text(s.kind)).or_default() += 1;
    }
    let counts: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    writeln!(
        out,
        "\n{} {}{}",
        paint.warning(&format!(
            "{} file{} not used:",
            f.skipped.len(),
            plural(f.skipped.len())
        )),
        counts.join(", "),
        if verbose { "" } else { " (-v lists them)" }
    )?;
    if verbose {
        for s in &f.skipped {
            writeln!(out, "  {}: {}", Sane(&s.path), Sane(&s.reason))?;
        }
    }
    Ok(())
}

fn skip_text(k: crate::fleet::SkipKind) -> &'static str {
    match k {
        crate::fleet::SkipKind::NotJson => "not JSON",
        crate::fleet::SkipKind::NotCudadiag => "not a cudadiag report or snapshot",
        crate::fleet::SkipKind::Unreadable => "unreadable",
    }
}

fn rows_of(out: &mut dyn Write, rows: &[(String, &[String])], verbose: bool) -> io::Result<()> {
    let width = rows.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    for (key, nodes) in rows {
        group_line(out, &format!("  {:<width$}  ", Sane(key)), nodes, verbose)?;
    }
    Ok(())
}

/// `lead` then `N nodes: a, b, c and 12 more` on one line of about [`WIDTH`] columns (every name with
/// `verbose`, wrapped).
fn group_line(out: &mut dyn Write, lead: &str, nodes: &[String], verbose: bool) -> io::Result<()> {
    let count = format!("{} node{}: ", nodes.len(), plural(nodes.len()));
    let lead_width = visible_width(lead) + count.len();
    let names: Vec<String> = nodes.iter().map(|n| Sane(n).to_string()).collect();
    if verbose {
        let mut line = String::new();
        let mut lines = Vec::new();
        for n in &names {
            if !line.is_empty() && lead_width + line.len() + n.len() + 2 > WIDTH {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push_str(", ");
            }
            line.push_str(n);
        }
        lines.push(line);
        let pad = " ".repeat(lead_width);
        return writeln!(out, "{lead}{count}{}", lines.join(&format!(",\n{pad}")));
    }
    let mut shown = String::new();
    let mut used = 0;
    for (i, n) in names.iter().enumerate() {
        let rest = names.len() - i - 1;
        let tail = if rest > 0 {
            format!(" and {rest} more")
        } else {
            String::new()
        };
        let add = if shown.is_empty() { n.len() } else { n.len() + 2 };
        if i > 0 && lead_width + shown.len() + add + tail.len() > WIDTH {
            break;
        }
        if !shown.is_empty() {
            shown.push_str(", ");
        }
        shown.push_str(n);
        used += 1;
    }
    let rest = names.len() - used;
    if rest > 0 {
        shown.push_str(&format!(" and {rest} more"));
    }
    writeln!(out, "{lead}{count}{shown}")
}

/// The width of `s` on a terminal, colour sequences left out.
fn visible_width(s: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[derive(Serialize)]
struct Wire<'a> {
    fleet_version: u32,
    tool: crate::build_info::BuildInfo,
    nodes: usize,
    verdicts: BTreeMap<&'static str, &'a [String]>,
    findings: BTreeMap<&'a str, &'a [String]>,
    drivers: BTreeMap<&'a str, &'a [String]>,
    gpus: BTreeMap<&'a str, &'a [String]>,
    without_driver: &'a [String],
    without_gpu: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    artifact: Option<Artefact<'a>>,
    per_node: &'a [crate::fleet::Node],
    unreadable: &'a [crate::fleet::Skipped],
    other_files: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated: Option<&'a str>,
}

#[derive(Serialize)]
struct Artefact<'a> {
    paths: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<&'a crate::fleet::judge::ImageJudged>,
    outcomes: BTreeMap<&'a str, &'a [String]>,
    groups: &'a [crate::fleet::PredictionGroup],
}

/// Writes the JSON document.
pub fn json(fleet: &Fleet, out: &mut dyn Write) -> io::Result<()> {
    let wire = Wire {
        fleet_version: FLEET_VERSION,
        tool: crate::build_info::BuildInfo::current(),
        nodes: fleet.nodes.len(),
        verdicts: fleet
            .verdicts
            .iter()
            .map(|(s, n)| (s.as_str(), n.as_slice()))
            .collect(),
        findings: fleet
            .findings
            .iter()
            .map(|g| (g.slug.as_str(), g.nodes.as_slice()))
            .collect(),
        drivers: fleet
            .drivers
            .iter()
            .map(|g| (g.key.as_str(), g.nodes.as_slice()))
            .collect(),
        gpus: fleet
            .gpus
            .iter()
            .map(|g| (g.key.as_str(), g.nodes.as_slice()))
            .collect(),
        without_driver: &fleet.without_driver,
        without_gpu: &fleet.without_gpu,
        artifact: fleet.artefact.as_ref().map(|a| Artefact {
            paths: &a.paths,
            image: a.image.as_ref(),
            outcomes: a
                .outcomes
                .iter()
                .map(|o| (o.key.as_str(), o.nodes.as_slice()))
                .collect(),
            groups: &a.groups,
        }),
        per_node: &fleet.nodes,
        unreadable: &fleet.files.skipped,
        other_files: fleet.files.other,
        truncated: fleet.files.truncated.as_deref(),
    };
    serde_json::to_writer_pretty(&mut *out, &wire).map_err(io::Error::other)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("node{i:04}")).collect()
    }

    #[test]
    fn a_long_list_is_cut_to_one_line_and_counted() {
        let mut out = Vec::new();
        group_line(&mut out, "  580.159.04  ", &names(100), false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(
            text.starts_with("  580.159.04  100 nodes: node0001, node0002, "),
            "{text}"
        );
        assert!(text.trim_end().ends_with("more"), "{text}");
        assert!(text.trim_end().len() <= WIDTH, "{} > {WIDTH}: {text}", text.len());
        let shown = text.matches("node0").count();
        assert!(text.contains(&format!(" and {} more", 100 - shown)), "{text}");
    }

    #[test]
    fn verbose_lists_every_name_wrapped() {
        let mut out = Vec::new();
        group_line(&mut out, "  x  ", &names(100), true).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("node0").count(), 100);
        assert!(!text.contains("more"));
        assert!(text.lines().all(|l| l.len() <= WIDTH), "{text}");
    }

    #[test]
    fn a_short_list_is_whole() {
        let mut out = Vec::new();
        group_line(&mut out, "  ", &names(2), false).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "  2 nodes: node0001, node0002\n");
    }
}
