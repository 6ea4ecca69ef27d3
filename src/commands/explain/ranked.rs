//! The ranked causes of a pasted message (`explain::diagnose`) as `explain` shows them: the JSON `candidates`,
//! the human list with each cause's reasons and check, and `explain SLUG` of a cause only `explain` knows.

use crate::cli::ExplainArgs;
use crate::commands::outcome::Outcome;
use crate::diagnose::ToolError;
use crate::explain::Candidate;
use crate::report::{self, DocFormat};
use serde::Serialize;
use std::io::Write;

/// One thing the query matched (`explain` shows the causes it ranks beside them).
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub(super) enum Match<'m> {
    /// A finding code or slug.
    Code { code: &'static str, slug: &'static str },
    /// A CUDA error (by number, name or message).
    CudaError {
        value: u32,
        name: &'m str,
        driver_name: Option<&'m str>,
        message: Option<&'m str>,
        meaning: Option<&'m str>,
        findings: &'m [String],
        source: String,
    },
    /// A loader, NVML or container message.
    Message {
        pattern: &'m str,
        meaning: &'m str,
        findings: &'m [String],
        source: String,
    },
}

/// `candidates` of the JSON: the ranked causes, or the finding a code or slug names.
pub(super) fn candidates_json(cands: &[Candidate], ms: &[Match<'_>]) -> serde_json::Value {
    if let Some(Match::Code { code, slug }) = ms.first() {
        return serde_json::json!([{
            "slug": slug, "code": code, "confidence": "high", "score": 100,
            "why": ["named by its code or slug"], "check": format!("`cudadiag explain {slug} --check PROGRAM`"),
        }]);
    }
    serde_json::to_value(cands).unwrap_or_default()
}

/// `explain SLUG` for a cause only `explain` knows: its document.
pub(super) fn explain_cause(
    args: &ExplainArgs,
    cause: &'static crate::explain::causes::Cause,
    out: &mut dyn Write,
) -> Result<Outcome, ToolError> {
    match args.format {
        DocFormat::Json => {
            let v = serde_json::json!({
                "schema_version": report::json::SCHEMA_VERSION,
                "query": cause.slug,
                "matches": [],
                "libraries": [],
                "findings": [],
                "candidates": [{
                    "slug": cause.slug, "code": null, "confidence": "high", "score": 100,
                    "why": ["named by its slug"], "check": "", "summary": cause.summary,
                }],
                "cause": {"slug": cause.slug, "summary": cause.summary, "cuda_error": cause.cuda_error, "doc": cause.doc},
                "checked": null,
            });
            let text = serde_json::to_string_pretty(&v).map_err(|e| ToolError(e.to_string()))?;
            report::text(out, &format!("{text}\n"))?;
        }
        DocFormat::Human => report::text(out, cause.doc)?,
    }
    Ok(Outcome::Clean)
}

/// The ranked causes, one block each: the slug, how sure, why, and the check that tells it apart.
pub(super) fn human(cands: &[Candidate]) -> String {
    if cands.is_empty() {
        return String::new();
    }
    let mut s = String::from("Likely causes, most likely first:\n");
    for (i, c) in cands.iter().take(5).enumerate() {
        let code = c.code.map(|c| format!("{c}, ")).unwrap_or_default();
        let conf = serde_json::to_value(c.confidence)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        s.push_str(&format!("  {}. {} ({code}{conf})\n", i + 1, c.slug));
        for w in &c.why {
            s.push_str(&format!("       because {}\n", report::escape(w)));
        }
        if !c.check.is_empty() {
            s.push_str(&format!("       check   {}\n", report::escape(&c.check)));
        }
    }
    s.push('\n');
    s
}
