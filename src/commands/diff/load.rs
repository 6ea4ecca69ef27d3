//! Reading one side of a diff: a snapshot (`cudadiag snapshot`) or a JSON report (`doctor`/`inspect
//! --format json`), told apart by their version field, and anything else refused with what was expected.
//!
//! A snapshot holds facts only: its findings are the rules' over those facts with the bundled matrix, as
//! `doctor --facts` gives them. A report holds its findings and (under `host.facts`) the facts they rest on.

use crate::diagnose::ToolError;
use crate::diff::{Node, NodeFinding};
use crate::matrix::Matrix;
use serde::de::IgnoredAny;
use serde_json::Value;
use std::path::Path;

/// The report contract version this cudadiag reads (`report::json::SCHEMA_VERSION`).
const REPORT_VERSION: u64 = crate::report::json::SCHEMA_VERSION as u64;

/// Reads `path` as one side of a diff.
pub fn node(path: &Path, matrix: &Matrix) -> Result<Node, ToolError> {
    let origin = path.display().to_string();
    let text = crate::system::read::read_to_string(path, crate::system::read::SNAPSHOT)
        .map_err(|e| ToolError(format!("cannot read {origin}: {e}")))?;
    parse(&text, &origin, file_name(path), matrix)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The top-level fields that say what a file is; every other field is skipped unread.
#[derive(serde::Deserialize)]
struct Head {
    snapshot_version: Option<IgnoredAny>,
    schema_version: Option<Value>,
    runs: Option<IgnoredAny>,
}

/// What a diff reads of a JSON report: its host facts and its findings, decoded straight into their types.
#[derive(serde::Deserialize)]
struct Report {
    #[serde(default)]
    host: Option<ReportHost>,
    #[serde(default)]
    findings: Vec<NodeFinding>,
}

#[derive(serde::Deserialize)]
struct ReportHost {
    #[serde(default)]
    facts: Option<crate::facts::HostFacts>,
}

/// Decodes one side's text; `origin` names it in errors, `fallback_name` names the node when its facts carry
/// no host name.
///
/// The text is decoded into the typed facts, never into a `serde_json::Value` tree of the whole: two trees of
/// a 64 MB snapshot took 2.1 GB (issue 33). It is scanned for its kind first ([`Head`], skipping every value
/// it does not need), then decoded once.
pub fn parse(text: &str, origin: &str, fallback_name: String, matrix: &Matrix) -> Result<Node, ToolError> {
    let expected = "expected a snapshot (`cudadiag snapshot -o FILE`) or a JSON report (`cudadiag doctor \
                    --format json`)";
    serde_json::from_str::<IgnoredAny>(text)
        .map_err(|e| ToolError(format!("{origin} is not JSON ({e}): {expected}")))?;
    if !text.trim_start().starts_with('{') {
        return Err(ToolError(format!(
            "{origin} is JSON but not an object: {expected}"
        )));
    }
    let head: Head = serde_json::from_str(text)
        .map_err(|e| ToolError(format!("{origin} is not JSON ({e}): {expected}")))?;
    let (kind, host, findings) = if head.snapshot_version.is_some() {
        let mut facts = crate::diagnose::snapshot::parse(text, origin)?;
        if let Some(h) = facts.host.as_mut() {
            crate::host::enrich::with_matrix(h, matrix);
        }
        let findings = crate::diagnose::evaluate(&facts, matrix)
            .into_iter()
            .map(|f| NodeFinding {
                code: f.code.info().code.to_string(),
                slug: f.slug,
                severity: f.severity.as_str().to_string(),
                message: f.message,
            })
            .collect();
        ("snapshot", facts.host, findings)
    } else if let Some(version) = head.schema_version {
        let version = version.as_u64().ok_or_else(|| {
            ToolError(format!(
                "{origin}: schema_version is {}, not a number: {expected}",
                crate::report::truncated(&version.to_string(), 40)
            ))
        })?;
        if version > REPORT_VERSION {
            return Err(ToolError(format!(
                "{origin}: report schema version {version} is newer than this cudadiag understands (max \
                 {REPORT_VERSION}): upgrade cudadiag"
            )));
        }
        let report: Report = serde_json::from_str(text)
            .map_err(|e| ToolError(format!("{origin}: its host facts or findings do not decode: {e}")))?;
        ("report", report.host.and_then(|h| h.facts), report.findings)
    } else if head.runs.is_some() {
        return Err(ToolError(format!("{origin} is a SARIF log: {expected}")));
    } else {
        return Err(ToolError(format!(
            "{origin} has neither `snapshot_version` nor `schema_version`: {expected}"
        )));
    };
    let name = host
        .as_ref()
        .and_then(|h: &crate::facts::HostFacts| h.hostname.as_ref())
        .map_or(fallback_name, |h| h.name.clone());
    Ok(Node {
        file: origin.to_string(),
        kind,
        name,
        host,
        findings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_err(text: &str) -> String {
        let m = Matrix::bundled().unwrap();
        parse(text, "x.json", "x.json".into(), &m).unwrap_err().0
    }

    #[test]
    fn wrong_kinds_say_what_was_expected() {
        assert!(parse_err("not json").starts_with("x.json is not JSON"));
        assert!(parse_err("[1]").contains("not an object"));
        assert!(parse_err(r#"{"runs": []}"#).contains("SARIF"));
        assert!(parse_err(r#"{"a": 1}"#).contains("neither `snapshot_version` nor `schema_version`"));
        assert!(parse_err(r#"{"schema_version": 99}"#).contains("upgrade cudadiag"));
    }

    #[test]
    fn a_report_without_host_facts_is_its_findings() {
        let m = Matrix::bundled().unwrap();
        let n = parse(
            r#"{"schema_version": 1, "host": {"collected": false}, "findings": [
                {"code": "CD100", "slug": "no-kernel-image", "severity": "error", "message": "m", "evidence": []}]}"#,
            "r.json",
            "r.json".into(),
            &m,
        )
        .unwrap();
        assert_eq!(
            (n.kind, n.name.as_str(), n.host.is_none()),
            ("report", "r.json", true)
        );
        assert_eq!(n.findings[0].slug, "no-kernel-image");
    }
}
