//! SARIF 2.1.0 (OASIS), the format GitHub code scanning and most CI dashboards ingest.
//!
//! One run; the catalogue entries of the codes that occur are the rules (`id` = code, `name` = slug); each
//! finding is a result whose location is the audited file (a wheel member as `x.whl!path/in/wheel.so`), with
//! the evidence as related text and the help in the rule. Only what is in the report is written.
//!
//! `tests/it/audit.rs` validates this output against the OASIS schema (`tests/data/sarif-schema-2.1.0.json`, the
//! Errata 01 revision that `$schema` names) and checks every location is an RFC 3986 URI reference.

use super::model::Report;
use crate::findings::{self, Finding};
use serde_json::{Value, json};
use std::io::{self, Write};

/// The schema the log conforms to: SARIF 2.1.0 with Errata 01, where OASIS publishes it.
pub const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn level(f: &Finding) -> &'static str {
    f.severity.as_str()
}

/// Writes the report as a SARIF 2.1.0 log.
pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut rule_ids: Vec<&str> = Vec::new();
    for f in &report.findings {
        if !rule_ids.contains(&f.code.as_str()) {
            rule_ids.push(f.code.as_str());
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
            let text = f.plain_text("", str::to_string);
            let mut r = json!({
                "ruleId": f.code,
                "ruleIndex": rule_ids.iter().position(|id| *id == f.code.as_str()).unwrap_or(0),
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
        "$schema": SCHEMA,
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

/// A relative URI reference (RFC 3986) for a path: `/` separators kept, wheel members kept readable (`!` is a
/// sub-delimiter, allowed in a path); every byte outside the unreserved and path characters is percent-encoded
/// (UTF-8 for non-ASCII), and a `:` in the first segment too, where it would read as a scheme (§4.2).
fn uri(path: &str) -> String {
    let path = path.trim_start_matches("./");
    let first_slash = path.find('/').unwrap_or(path.len());
    let mut s = String::with_capacity(path.len());
    for (i, b) in path.bytes().enumerate() {
        let keep =
            b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=@/".contains(&b) || (b == b':' && i > first_slash);
        if keep {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::uri;

    #[test]
    fn uris_are_rfc3986_references() {
        assert_eq!(uri("./dist/a b.whl!pkg/x.so"), "dist/a%20b.whl!pkg/x.so");
        assert_eq!(uri("/abs/50%/é#?"), "/abs/50%25/%C3%A9%23%3F");
        assert_eq!(uri("x:y.so"), "x%3Ay.so");
        assert_eq!(uri("dir/x:y.so"), "dir/x:y.so");
        assert_eq!(uri("a\\b|c<d>"), "a%5Cb%7Cc%3Cd%3E");
    }
}
