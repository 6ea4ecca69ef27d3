//! `cudadiag explain`: what a finding means, or which findings a pasted error message points to.
//!
//! The explanations are `data/codes/<slug>.md`, one per catalogue entry, compiled in (ruff's `ruff rule`
//! model: the text lives in one fixed template, What it means / Why it happens / How to check / How to fix /
//! Facts used). Error texts are matched against the matrix: every `cudaGetErrorString` message it knows, the
//! CUDA error names and numbers, and the loader, NVML and container-runtime messages (`[[message]]`).

use super::{Outcome, ToolError};
use crate::cli::ExplainArgs;
use crate::findings::{self, CATALOGUE, CodeInfo};
use crate::matrix::Matrix;
use crate::report::{self, DocFormat};
use serde::Serialize;
use std::io::Write;

mod docs;
mod library;

pub use docs::doc;

/// One thing the query matched.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Match<'m> {
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

#[derive(Serialize)]
struct Explained {
    code: &'static str,
    slug: &'static str,
    severity: &'static str,
    summary: &'static str,
    cuda_error: Option<u32>,
    doc: &'static str,
}

fn trim_msg(s: &str) -> String {
    s.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Everything in the matrix and the catalogue that `query` names or quotes.
fn matches<'m>(query: &str, m: &'m Matrix) -> Vec<Match<'m>> {
    let mut out = Vec::new();
    if let Some(c) = findings::lookup(query) {
        out.push(Match::Code {
            code: c.code,
            slug: c.slug,
        });
        return out;
    }
    let q = trim_msg(query);
    let words: Vec<&str> = q
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut hits: Vec<(usize, &crate::matrix::CudaErrorRow)> = Vec::new();
    for e in &m.errors {
        let by_name = words.iter().any(|w| {
            w.eq_ignore_ascii_case(&e.name)
                || e.driver_name
                    .as_deref()
                    .is_some_and(|d| w.eq_ignore_ascii_case(d))
        });
        let by_msg = e
            .message
            .as_deref()
            .map(trim_msg)
            .filter(|msg| msg.len() >= 8 && q.contains(msg.as_str()));
        let by_number = q.trim() == e.value.to_string()
            || words.windows(2).any(|w| {
                matches!(w[0], "error" | "returned" | "code" | "err") && w[1] == e.value.to_string()
            });
        let weight = if by_name {
            1000
        } else if let Some(msg) = &by_msg {
            msg.len()
        } else if by_number {
            1
        } else {
            continue;
        };
        if e.value != 0 || by_name || by_number {
            hits.push((weight, e));
        }
    }
    hits.sort_by_key(|(w, _)| std::cmp::Reverse(*w));
    // A short message inside a longer matched one ("initialization error" within an NVML line) is noise.
    let longest = hits.first().map(|(w, _)| *w).unwrap_or(0);
    for (w, e) in hits {
        if w < 1000 && w > 1 && longest >= 1000 && w * 3 < longest {
            continue;
        }
        out.push(Match::CudaError {
            value: e.value,
            name: &e.name,
            driver_name: e.driver_name.as_deref(),
            message: e.message.as_deref(),
            meaning: e.meaning.as_deref(),
            findings: &e.findings,
            source: e.row.cite(m),
        });
    }
    let said: Vec<&crate::matrix::MessageRow> = m
        .messages
        .iter()
        .filter(|msg| q.contains(&msg.pattern.to_ascii_lowercase()))
        .collect();
    for msg in &said {
        // The most specific message wins: "version `GLIBC_" (glibc-too-old) over "version `" alone.
        let lower = msg.pattern.to_ascii_lowercase();
        let within_longer = said.iter().any(|o| {
            let other = o.pattern.to_ascii_lowercase();
            other.len() > lower.len() && other.contains(&lower)
        });
        if !within_longer {
            out.push(Match::Message {
                pattern: &msg.pattern,
                meaning: &msg.meaning,
                findings: &msg.findings,
                source: msg.row.cite(m),
            });
        }
    }
    out
}

fn predicted(ms: &[Match<'_>]) -> Vec<&'static CodeInfo> {
    let mut out: Vec<&'static CodeInfo> = Vec::new();
    for m in ms {
        let slugs: Vec<&str> = match m {
            Match::Code { slug, .. } => vec![slug],
            Match::CudaError { findings, .. } | Match::Message { findings, .. } => {
                findings.iter().map(String::as_str).collect()
            }
        };
        for s in slugs {
            if let Some(c) = CATALOGUE.iter().find(|c| c.slug == s)
                && !out.iter().any(|o| o.code == c.code)
            {
                out.push(c);
            }
        }
    }
    out
}

/// What `--check` found for one predicted finding.
#[derive(Debug, Serialize)]
struct Checked {
    slug: &'static str,
    /// `confirmed`, `ruled-out` or `not-checked`.
    status: &'static str,
    /// The findings that fired (confirmed), or why it could not be checked.
    details: Vec<String>,
}

/// Which facts a finding's rule needs: (needs a GPU, needs a driver). `None`: no rule in this command checks it.
fn needs(slug: &str) -> Option<(bool, bool)> {
    match slug {
        "no-kernel-image" | "ptx-jit-required" => Some((true, false)),
        "ptx-too-new" | "gpu-unsupported-by-driver" => Some((true, true)),
        "driver-insufficient" | "minor-version-compat" => Some((false, true)),
        "malformed-device-code" | "malformed-binary" | "no-device-code" => Some((false, false)),
        _ => None,
    }
}

/// Inspects `--check` binaries against the what-if targets and sorts the predicted findings into confirmed,
/// ruled out and not checked.
fn check(args: &ExplainArgs, codes: &[&'static CodeInfo], m: &Matrix) -> Result<Vec<Checked>, ToolError> {
    let mut facts = crate::facts::Facts::default();
    for p in &args.check {
        let bins = crate::inspect::path(p, &crate::inspect::InspectOptions::default())
            .map_err(|e| ToolError(e.to_string()))?;
        facts.binaries.extend(bins);
    }
    super::targets::apply(&args.target, &mut facts, m)?;
    let fired = crate::rules::evaluate(&facts, m);
    let has_gpu = facts.host.as_ref().is_some_and(|h| !h.gpus.is_empty());
    let has_driver = facts.host.as_ref().is_some_and(|h| h.driver.is_some());
    let mut out = Vec::new();
    for c in codes {
        let hits: Vec<String> = fired
            .iter()
            .filter(|f| f.slug == c.slug)
            .map(|f| f.message.clone())
            .collect();
        let (status, details) = if !hits.is_empty() {
            ("confirmed", hits)
        } else {
            match needs(c.slug) {
                Some((gpu, drv)) if (!gpu || has_gpu) && (!drv || has_driver) => ("ruled-out", Vec::new()),
                Some((gpu, _)) => {
                    let missing = if gpu && !has_gpu { "--gpu" } else { "--driver" };
                    ("not-checked", vec![format!("needs {missing}")])
                }
                None => (
                    "not-checked",
                    vec!["checked by the loader and host checks, not by explain".into()],
                ),
            }
        };
        out.push(Checked {
            slug: c.slug,
            status,
            details,
        });
    }
    Ok(out)
}

/// Characters of a query that matched nothing echoed back in the error.
const ECHOED_QUERY: usize = 200;

/// Runs `cudadiag explain`.
pub fn run(args: &ExplainArgs, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let m = super::targets::load_matrix(args.target.matrix.as_deref())?;
    let query = args.query.join(" ");
    let ms = matches(&query, &m);
    let codes = predicted(&ms);
    let root = args
        .root
        .as_ref()
        .map_or_else(crate::system::Root::host, crate::system::Root::at);
    if !root.is_host() && !root.dir().is_dir() {
        return Err(ToolError(format!(
            "--root {}: not a directory",
            root.dir().display()
        )));
    }
    let libraries = library::lookup(&query, &root);
    if ms.is_empty() && libraries.is_empty() {
        // The query is echoed escaped and cut short: it may be a pasted log of megabytes, or hostile.
        return Err(ToolError(format!(
            "nothing known matches \"{}\": give a code (CD100), a slug (no-kernel-image), a CUDA error \
             number or name, or an error message as printed; `cudadiag codes` lists the codes",
            report::truncated(&query, ECHOED_QUERY)
        )));
    }
    let checked = if args.check.is_empty() {
        None
    } else {
        Some(check(args, &codes, &m)?)
    };
    let confirmed_error = checked.iter().flatten().any(|c| {
        c.status == "confirmed"
            && findings::lookup(c.slug).is_some_and(|i| i.severity == crate::findings::Severity::Error)
    });
    match args.format {
        DocFormat::Json => {
            let explained: Vec<Explained> = codes
                .iter()
                .map(|c| Explained {
                    code: c.code,
                    slug: c.slug,
                    severity: c.severity.as_str(),
                    summary: c.summary,
                    cuda_error: c.cuda_error,
                    doc: doc(c.slug).unwrap_or(""),
                })
                .collect();
            let docjson = serde_json::json!({
                "schema_version": report::json::SCHEMA_VERSION,
                "query": query,
                "matches": ms,
                "libraries": libraries,
                "findings": explained,
                "checked": checked,
            });
            let text = serde_json::to_string_pretty(&docjson).map_err(|e| ToolError(e.to_string()))?;
            report::text(out, &format!("{text}\n"))?;
        }
        DocFormat::Human => {
            let mut s = String::new();
            if let Some(cs) = &checked {
                s.push_str(&format!(
                    "Checked {}:\n",
                    args.check
                        .iter()
                        .map(|p| report::escape(&p.display().to_string()).into_owned())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                for c in cs {
                    s.push_str(&format!(
                        "  {:<12} {}{}\n",
                        c.status,
                        c.slug,
                        if c.details.is_empty() {
                            String::new()
                        } else {
                            format!(": {}", c.details.join("; "))
                        }
                    ));
                }
                s.push('\n');
            }
            s.push_str(&library::human(&libraries, &root));
            s.push_str(&human(&ms, &codes));
            report::text(out, &s)?;
        }
    }
    Ok(if confirmed_error {
        Outcome::Failed
    } else {
        Outcome::Clean
    })
}

fn human(ms: &[Match<'_>], codes: &[&'static CodeInfo]) -> String {
    let mut s = String::new();
    for m in ms {
        match m {
            Match::Code { .. } => {}
            Match::CudaError {
                value,
                name,
                driver_name,
                message,
                meaning,
                source,
                ..
            } => {
                s.push_str(&format!(
                    "CUDA error {value}: {name}{}\n",
                    driver_name.map(|d| format!(" / {d}")).unwrap_or_default()
                ));
                if let Some(msg) = message {
                    s.push_str(&format!("  message  \"{msg}\"\n"));
                }
                if let Some(mn) = meaning {
                    s.push_str(&format!("  meaning  {mn}\n"));
                }
                s.push_str(&format!("  source   {source}\n\n"));
            }
            Match::Message {
                pattern,
                meaning,
                source,
                ..
            } => {
                s.push_str(&format!(
                    "message: \"{pattern}\"\n  meaning  {meaning}\n  source   {source}\n\n"
                ));
            }
        }
    }
    if codes.is_empty() {
        s.push_str("No cudadiag finding predicts this error; it happens while the program runs.\n");
        return s;
    }
    if ms.iter().any(|m| !matches!(m, Match::Code { .. })) {
        s.push_str(
            "Findings that predict it (run `cudadiag inspect` on the program to check which applies):\n",
        );
        for c in codes {
            s.push_str(&format!("  {:<6} {:<28} {}\n", c.code, c.slug, c.summary));
        }
        s.push('\n');
    }
    if let Some(first) = codes.first() {
        s.push_str(&format!(
            "{} {} ({})\n\n",
            first.code,
            first.slug,
            first.severity.as_str()
        ));
        s.push_str(doc(first.slug).unwrap_or("(no explanation written)\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slugs_for(q: &str) -> Vec<&'static str> {
        let m = Matrix::bundled().unwrap();
        predicted(&matches(q, &m)).iter().map(|c| c.slug).collect()
    }

    #[test]
    fn exact_runtime_messages_map_to_findings() {
        assert_eq!(
            slugs_for("no kernel image is available for execution on the device"),
            ["no-kernel-image"]
        );
        assert_eq!(
            slugs_for(
                "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain."
            ),
            ["ptx-too-new"]
        );
        assert_eq!(
            slugs_for(
                "cudaGetDeviceCount returned 35\n-> CUDA driver version is insufficient for CUDA runtime version"
            )[0],
            "driver-insufficient"
        );
        assert_eq!(
            slugs_for("Failed to initialize NVML: Driver/library version mismatch"),
            ["driver-library-mismatch"]
        );
        assert!(slugs_for("./app: error while loading shared libraries: libcudart.so.12: cannot open shared object file: No such file or directory").contains(&"library-not-found"));
        assert!(slugs_for("CUDA_ERROR_NO_BINARY_FOR_GPU").contains(&"no-kernel-image"));
        assert_eq!(slugs_for("CD102"), ["ptx-too-new"]);
    }

    #[test]
    fn unrelated_text_matches_nothing() {
        let m = Matrix::bundled().unwrap();
        assert!(matches("the weather is fine today", &m).is_empty());
        assert!(predicted(&matches("out of memory", &m)).is_empty());
    }
}
