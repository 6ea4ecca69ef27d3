//! SARIF 2.1.0 (OASIS), the format GitHub code scanning and most CI dashboards ingest.
//!
//! One run; the catalogue entries of the codes that occur are the rules (`id` = code, `name` = slug); each
//! finding is a result whose location is the audited file (a wheel member as `x.whl!path/in/wheel.so`), with
//! the evidence as related text and the help in the rule. Only what is in the report is written.

use super::Report;
use crate::findings::{self, Finding};
use serde_json::{Value, json};
use std::io::{self, Write};

fn level(f: &Finding) -> &'static str {
    f.severity.as_str()
}

/// Writes the report as a SARIF 2.1.0 log.
pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut rule_ids: Vec<&str> = Vec::new();
    for f in &report.findings {
        if !rule_ids.contains(&f.code.as_str()) {
            rule_ids.push(&f.code);
        }
    }
    let rules: Vec<Value> = rule_ids
        .iter()
        .map(|id| {
            let info = findings::lookup(id);
            json!({
                "id": id,
                "name": info.map_or("", |i| i.slug),
                "shortDescription": { "text": info.map_or("", |i| i.summary) },
                "defaultConfiguration": { "level": info.map_or("warning", |i| i.severity.as_str()) },
                "help": { "text": format!("Run `cudadiag explain {}` for what it means and how to fix it.", info.map_or(*id, |i| i.slug)) },
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            let mut text = f.message.clone();
            for e in &f.evidence {
                text.push_str("\nbecause ");
                text.push_str(e);
            }
            if !f.help.is_empty() {
                text.push_str("\nhelp: ");
                text.push_str(&f.help);
            }
            let mut r = json!({
                "ruleId": f.code,
                "ruleIndex": rule_ids.iter().position(|id| *id == f.code).unwrap_or(0),
                "level": level(f),
                "message": { "text": text },
            });
            if let Some(path) = &f.path {
                r["locations"] =
                    json!([{ "physicalLocation": { "artifactLocation": { "uri": uri(path) } } }]);
            }
            r
        })
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "cudadiag",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/cudadiag/cudadiag",
                "rules": rules,
            }},
            "results": results,
        }],
    });
    serde_json::to_writer_pretty(&mut *out, &log).map_err(io::Error::other)?;
    writeln!(out)
}

/// A relative URI reference for a path: `/` separators, `%` and spaces escaped, wheel members kept readable.
fn uri(path: &str) -> String {
    let mut s = String::with_capacity(path.len());
    for c in path.trim_start_matches("./").chars() {
        match c {
            '%' => s.push_str("%25"),
            ' ' => s.push_str("%20"),
            '#' => s.push_str("%23"),
            '?' => s.push_str("%3F"),
            _ => s.push(c),
        }
    }
    s
}
