//! `cudadiag explain`: what a finding means, or which findings a pasted error message points to.
//!
//! The explanations are `data/codes/<slug>.md`, one per catalogue entry, compiled in (ruff's `ruff rule`
//! model: the text lives in one fixed template, What it means / Why it happens / How to check / How to fix /
//! Facts used). Error texts are matched against the matrix: every `cudaGetErrorString` message it knows, the
//! CUDA error names and numbers, and the loader, NVML and container-runtime messages (`[[message]]`).

use super::{Outcome, ToolError};
use crate::cli::ExplainArgs;
use crate::findings::{self, CATALOGUE, CodeInfo, Finding, Needs};
use crate::matrix::Matrix;
use crate::report::{self, DocFormat, Paint};
use serde::Serialize;
use std::io::Write;

mod library;
mod ranked;

/// The explanation of a slug: its catalogue entry's document.
pub fn doc(slug: &str) -> Option<&'static str> {
    findings::lookup(slug).map(|c| c.doc)
}

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
    // The errors as `explain::read` reads them, in every form a tool prints them, strongest first.
    for e in crate::explain::read::read(query, m).errors {
        let Some(row) = m.errors.iter().find(|r| r.value == e.value) else {
            continue;
        };
        out.push(Match::CudaError {
            value: row.value,
            name: &row.name,
            driver_name: row.driver_name.as_deref(),
            message: row.message.as_deref(),
            meaning: row.meaning.as_deref(),
            findings: &row.findings,
            source: row.row.cite(m),
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
    /// The findings that fired, whole: every line of their evidence (a loader's search trail, step by step).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    findings: Vec<Finding>,
}

/// Reads the `--check` binaries as `inspect` does (their loader trees through the root and the environment;
/// this machine, unless a what-if target or `--no-host` says otherwise), evaluates the rules, and sorts the
/// predicted findings into confirmed, ruled out and not checked.
fn check(
    args: &ExplainArgs,
    codes: &[&'static CodeInfo],
    named: &[String],
    m: &Matrix,
) -> Result<Vec<Checked>, ToolError> {
    let opts = crate::inspect::InspectOptions::default();
    let reading = super::inspect::Reading {
        paths: &args.check,
        opts: &opts,
        system: &args.system,
        target: &args.target,
        libraries: true,
        device_code: true,
        host: !args.no_host,
        snapshot: None,
    };
    let (facts, _) = super::inspect::read(&reading, || Ok(m))?;
    let fired = crate::rules::evaluate(&facts, m);
    let what_if = args.target.what_if();
    let host = facts.host.as_ref().filter(|h| h.observed);
    let has_gpu = facts.host.as_ref().is_some_and(|h| !h.gpus.is_empty());
    let has_driver = facts.host.as_ref().is_some_and(|h| h.driver.is_some());
    let no_host = || -> String {
        if what_if {
            "this machine is not read with --gpu/--driver".into()
        } else if args.no_host {
            "this machine is not read with --no-host".into()
        } else if facts.host_note.is_some() {
            "this machine shows no NVIDIA GPU or driver, so its driver checks do not apply (`cudadiag doctor` \
             explains it)"
                .into()
        } else {
            "this machine's facts could not be read".into()
        }
    };
    let mut out = Vec::new();
    for c in codes {
        let hits: Vec<Finding> = fired.iter().filter(|f| f.slug == c.slug).cloned().collect();
        if !hits.is_empty() {
            let mut details: Vec<String> = hits.iter().map(|f| f.message.clone()).collect();
            // "libcudart.so.12: cannot open…" pasted, and the program misses another library: say so, lest
            // the confirmation read as being about the library the message names.
            let missing: Vec<&String> = hits.iter().flat_map(|f| &f.sonames).collect();
            if !missing.is_empty() {
                let absent: Vec<&String> = named.iter().filter(|n| !missing.contains(n)).collect();
                if !absent.is_empty() {
                    details.push(format!(
                        "missing here: {}; not {}, which the message names",
                        join(&missing),
                        join(&absent)
                    ));
                }
            }
            out.push(Checked {
                slug: c.slug,
                status: "confirmed",
                details,
                findings: hits,
            });
            continue;
        }
        let unchecked: Option<String> = match c.needs {
            Needs::Probe => {
                Some("checked by the live probe (`cudadiag inspect --probe`), not by explain".into())
            }
            Needs::Policy => {
                Some("checked against a policy (`cudadiag audit --policy`), not by explain".into())
            }
            Needs::Image => Some(
                "checked against an image's environment and a node (`cudadiag inspect --image IMAGE`), not by explain"
                    .into(),
            ),
            Needs::Binaries => None,
            Needs::Target { gpu, driver } => {
                if gpu && !has_gpu {
                    Some("needs --gpu (no GPU was read)".into())
                } else if driver && !has_driver {
                    Some("needs --driver (no driver was read)".into())
                } else {
                    None
                }
            }
            Needs::Loader | Needs::Glibc if facts.libraries.is_empty() => {
                Some("no loader tree: none of the checked files is an ELF program or library".into())
            }
            Needs::Loader => None,
            Needs::Glibc => facts.glibc().is_none().then(|| {
                format!(
                    "needs the machine's glibc ({})",
                    if what_if || args.no_host {
                        no_host()
                    } else {
                        "not found under the root".into()
                    }
                )
            }),
            Needs::Host => host.is_none().then(no_host),
            Needs::HostAndGpu => {
                if host.is_none() {
                    Some(no_host())
                } else if !has_gpu {
                    Some("needs a GPU (this machine shows none)".into())
                } else {
                    None
                }
            }
        };
        out.push(Checked {
            slug: c.slug,
            status: if unchecked.is_some() {
                "not-checked"
            } else {
                "ruled-out"
            },
            details: unchecked.into_iter().collect(),
            findings: Vec::new(),
        });
    }
    crate::parallel::discard(facts);
    Ok(out)
}

fn join(names: &[&String]) -> String {
    names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
}

/// Characters of a query that matched nothing echoed back in the error.
const ECHOED_QUERY: usize = 200;

/// Runs `cudadiag explain`.
pub fn run(args: &ExplainArgs, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let m = super::targets::load_matrix(args.target.matrix.as_deref())?;
    let query = args.query.join(" ");
    if findings::lookup(&query).is_none()
        && let Some(cause) = crate::explain::causes::lookup(&query)
    {
        return ranked::explain_cause(args, cause, out);
    }
    let ms = matches(&query, &m);
    let dx = if ms.iter().any(|x| matches!(x, Match::Code { .. })) {
        crate::explain::Diagnosis::default()
    } else {
        crate::explain::diagnose(&query, &m)
    };
    let codes = ranked(&dx.candidates, &ms);
    let root = super::doctor::checked_root(&args.system)?;
    let libraries = library::lookup(&query, &dx.read.implied_sonames(), &root);
    if ms.is_empty() && libraries.is_empty() && dx.candidates.is_empty() {
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
        Some(check(args, &codes, &library::sonames(&query), &m)?)
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
                "candidates": ranked::candidates_json(&dx.candidates, &ms),
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
                    // A confirmed finding is printed whole below: its message is not repeated here, a note is.
                    let details = if c.status == "confirmed" {
                        &c.details[c.findings.len().min(c.details.len())..]
                    } else {
                        &c.details[..]
                    };
                    let details = if details.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", details.join("; "))
                    };
                    s.push_str(&format!("  {:<12} {}{details}\n", c.status, c.slug));
                }
                s.push('\n');
                report::text(out, &s)?;
                s.clear();
                // Every line of the evidence, the loader's whole search trail included: the question was
                // "why", so nothing is shown in short.
                for f in cs.iter().flat_map(|c| &c.findings) {
                    report::finding_whole(f, paint, out)?;
                }
            }
            s.push_str(&library::human(&libraries, &root));
            s.push_str(&human(&ms, &codes, &dx.candidates));
            report::text(out, &s)?;
        }
    }
    Ok(if confirmed_error {
        Outcome::Failed
    } else {
        Outcome::Clean
    })
}

/// The findings of the catalogue the query points at: the ranked candidates' first, then those the matrix's
/// rows name (a finding a CUDA error predicts that no recogniser ranked).
fn ranked(cands: &[crate::explain::Candidate], ms: &[Match<'_>]) -> Vec<&'static CodeInfo> {
    let mut out: Vec<&'static CodeInfo> = cands
        .iter()
        .filter_map(|c| c.code.and_then(findings::lookup))
        .collect();
    for c in predicted(ms) {
        if !out.iter().any(|o| o.code == c.code) {
            out.push(c);
        }
    }
    out
}

fn human(ms: &[Match<'_>], codes: &[&'static CodeInfo], cands: &[crate::explain::Candidate]) -> String {
    let first = cands.first();
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
    // What the message is (above), then what causes it, most likely first.
    s.push_str(&ranked::human(cands));
    if let Some(c) = first
        && c.code.is_none()
        && let Some(cause) = crate::explain::causes::lookup(c.slug)
    {
        // The most likely cause is one no rule observes: its document is the explanation.
        s.push_str(cause.doc);
        return s;
    }
    if codes.is_empty() {
        if first.is_none() {
            s.push_str("No cudadiag finding predicts this error; it happens while the program runs.\n");
        }
        return s;
    }
    if ms.iter().any(|m| !matches!(m, Match::Code { .. })) {
        // An error of the container toolkit is checked on the image against the node, not on a program.
        let how = if codes.iter().any(|c| c.needs == crate::findings::Needs::Image) {
            "run `cudadiag inspect --image IMAGE` on the node, or with `--facts node.json`, to check which applies"
        } else {
            "run `cudadiag inspect` on the program to check which applies"
        };
        s.push_str(&format!("Findings that predict it ({how}):\n"));
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

    #[test]
    fn a_toolkit_error_says_to_check_the_image_on_the_node() {
        let m = Matrix::bundled().unwrap();
        let text = |q: &str| {
            let ms = matches(q, &m);
            human(&ms, &predicted(&ms), &[])
        };
        let toolkit = text("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=13.0");
        assert!(
            toolkit.contains("`cudadiag inspect --image IMAGE` on the node"),
            "{toolkit}"
        );
        // Near miss: an error of the program is checked on the program.
        let program = text("no kernel image is available for execution on the device");
        assert!(
            program.contains("run `cudadiag inspect` on the program"),
            "{program}"
        );
        assert!(!program.contains("--image"), "{program}");
    }

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
        assert_eq!(
            slugs_for(
                "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=13.0, please update your \
                 driver to a newer version, or use an earlier cuda container"
            )[0],
            "container-requirement-unmet"
        );
        assert_eq!(
            slugs_for("nvidia-container-cli: requirement error: unsatisfied condition: driver>=550"),
            ["container-requirement-unmet"]
        );
        assert_eq!(
            slugs_for("nvidia-container-cli: device error: 3: unknown device: unknown"),
            ["container-unknown-device"]
        );
        assert_eq!(
            slugs_for("nvidia-container-cli: requirement error: invalid expression"),
            ["container-config-invalid"]
        );
        assert_eq!(slugs_for("CD102"), ["ptx-too-new"]);
    }

    /// The loader, driver and device findings are all checked by `--check` (given the facts they need); only
    /// the probe's and the policy's are left to other commands.
    #[test]
    fn needs_covers_every_finding_explain_can_check() {
        for c in CATALOGUE {
            let area = &c.code[2..3];
            // The container findings need an image's environment, which `--check` does not read; whether the
            // toolkit is installed is the machine's.
            let image = c.slug.starts_with("container-") && c.slug != "container-toolkit-missing";
            assert_eq!(
                !matches!(c.needs, Needs::Probe | Needs::Policy | Needs::Image),
                matches!(area, "1" | "2" | "3" | "4") && !image,
                "{} {}",
                c.code,
                c.slug
            );
        }
        let needs = |slug| findings::lookup(slug).map(|c| c.needs);
        assert_eq!(needs("library-not-found"), Some(Needs::Loader));
        assert_eq!(needs("glibc-too-old"), Some(Needs::Glibc));
        assert_eq!(needs("libcuda-not-found"), Some(Needs::Host));
    }

    #[test]
    fn unrelated_text_matches_nothing() {
        let m = Matrix::bundled().unwrap();
        assert!(matches("the weather is fine today", &m).is_empty());
        assert!(predicted(&matches("out of memory", &m)).is_empty());
    }
}
