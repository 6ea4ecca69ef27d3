//! Reading node files: directories walked (bounded), files read in parallel, each decoded only as far as the
//! grouping needs.
//!
//! A real node's `doctor --format json` report is about 160 KB, most of it the catalogue of CUDA libraries
//! under `host.facts`; the grouping needs a few hundred bytes of it (driver, GPU models, finding slugs, host
//! name). So a report's head is decoded into borrowed structs and every other value stepped over without
//! being built (`fleet::head`): no `serde_json::Value`, no owned strings for what is not kept. Only a
//! snapshot (which holds facts, not findings) or a node an artefact is judged against is decoded whole, into
//! the facts model. Each thread reads its files into one buffer (`system::read::read_into`: one `read` of the
//! size `fstat` states).
//!
//! Bounds: at most [`MAX_FILES`] files and [`MAX_DEPTH`] directory levels per walk, links not followed inside a
//! directory, each file at most [`NODE_FILE`] bytes (read through `system::read`, which refuses FIFOs and
//! devices without blocking), a thread's buffer kept only up to [`KEPT_BUFFER`], and memory per node of what
//! is kept, not of the file.

use crate::diagnose::image::program::{Program, Staged};
use crate::facts::HostFacts;
use crate::findings::Severity;
use crate::fleet::head::Head;
use crate::fleet::judge::{Artefact, Prediction};
use crate::fleet::{GpuCount, Node, NodeFinding, SkipKind, Skipped, SourceKind, Standing};
use crate::matrix::Matrix;
use crate::system::read::Limit;
use serde::Deserialize;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// The largest node file read: a report of `inspect` on a framework library with every search trail is a few
/// MiB, a node's `doctor` report 130 KiB.
pub const NODE_FILE: Limit = Limit {
    bytes: 64 << 20,
    what: "a node report",
};

/// The most files one `fleet` run reads (a walk stops there and says so).
pub const MAX_FILES: usize = 1_000_000;

/// The most directory entries one `fleet` run walks (files of every name, directories): a tree of logs
/// around the reports is walked, a whole file system is not.
pub const MAX_ENTRIES: usize = 4_000_000;

/// The deepest directory level a walk descends to.
pub const MAX_DEPTH: usize = 16;

/// The files to read, and what the walks counted on the way.
#[derive(Debug, Default)]
pub struct Found {
    /// Files to read, as given or found (sorted by name within a directory).
    pub files: Vec<PathBuf>,
    /// Files in the directories not named `*.json`.
    pub other: usize,
    /// Entries of the walks that could not be read (permission, a link not followed).
    pub skipped: Vec<Skipped>,
    /// Why a walk stopped early.
    pub truncated: Option<String>,
}

/// The files under `paths`: a file as given (whatever its name), a directory walked for `*.json` files. A
/// path that does not exist is an error: the command line named it.
pub fn find(paths: &[PathBuf]) -> Result<Found, String> {
    let mut found = Found::default();
    let mut walked = 0usize;
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        if !meta.is_dir() {
            found.files.push(p.clone());
            continue;
        }
        let walk = walkdir::WalkDir::new(p)
            .follow_links(false)
            .max_depth(MAX_DEPTH)
            .sort_by_file_name();
        for entry in walk {
            walked += 1;
            if found.files.len() >= MAX_FILES || walked > MAX_ENTRIES {
                found.truncated = Some(format!(
                    "stopped after {} files and {walked} directory entries (at most {MAX_FILES} and {MAX_ENTRIES}): \
                     name the directories that hold the reports",
                    found.files.len()
                ));
                return Ok(found);
            }
            match entry {
                Ok(e) if e.file_type().is_file() => {
                    if e.file_name().to_string_lossy().ends_with(".json") {
                        found.files.push(e.into_path());
                    } else {
                        found.other += 1;
                    }
                }
                Ok(e) if e.file_type().is_symlink() => {
                    if e.file_name().to_string_lossy().ends_with(".json") {
                        found.skipped.push(Skipped {
                            path: e.path().display().to_string(),
                            kind: SkipKind::Unreadable,
                            reason:
                                "a symbolic link: links are not followed inside a directory (name the file)"
                                    .into(),
                        });
                    } else {
                        found.other += 1;
                    }
                }
                Ok(e) if !e.file_type().is_dir() => {
                    // A FIFO, socket or device: never opened in a walk (reading one could block or never end).
                    if e.file_name().to_string_lossy().ends_with(".json") {
                        found.skipped.push(Skipped {
                            path: e.path().display().to_string(),
                            kind: SkipKind::Unreadable,
                            reason: format!("is {}, not a regular file", special_kind(e.file_type())),
                        });
                    } else {
                        found.other += 1;
                    }
                }
                Ok(e) => {
                    if e.depth() == MAX_DEPTH && e.file_type().is_dir() {
                        found.truncated = Some(format!(
                            "directories deeper than {MAX_DEPTH} levels under {} were not read",
                            p.display()
                        ));
                    }
                }
                Err(e) => found.skipped.push(Skipped {
                    path: e
                        .path()
                        .map_or_else(|| p.display().to_string(), |x| x.display().to_string()),
                    kind: SkipKind::Unreadable,
                    reason: e.io_error().map_or_else(|| e.to_string(), |io| io.to_string()),
                }),
            }
        }
    }
    Ok(found)
}

/// What a special file is, as `system::read` names it.
fn special_kind(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

/// What a node file gave: the node, and with `--image` the node as a container of the image sees it (judged
/// once every file is read: nodes are judged per unpacked tree).
pub type Read = Result<(Node, Option<Staged>), Skipped>;

/// What is judged on each node as it is read.
#[derive(Clone, Copy)]
pub enum Judge<'a> {
    /// Nothing: the nodes are grouped only.
    Nothing,
    /// An artefact (`--artifact`): predicted on each node as soon as its facts are decoded, so that no node's
    /// whole facts are kept.
    Artefact(&'a Artefact),
    /// A Python environment (`--artifact ENV`): its frameworks' imports predicted on each node as soon as its
    /// facts are decoded (nodes with the same driver and GPUs share one judgement).
    Env(&'a crate::diagnose::env_fleet::EnvArtefact),
    /// An image's program (`--image`): each node staged ([`Program::stage`]), keeping of its facts only what
    /// the container shares.
    Image(&'a Program),
}

/// The largest read buffer a thread keeps for the next file (a node's report is about 160 KiB).
const KEPT_BUFFER: usize = 4 << 20;

/// A thread's scratch for judging: a copy of the artefact's facts (its host replaced per node).
type Scratch = Option<crate::facts::Facts>;

/// Reads every file in parallel, judging each node as [`Judge`] says.
/// `done` counts the files read, for a progress line.
pub fn read_all(
    files: &[PathBuf],
    matrix: &Matrix,
    judge: Judge<'_>,
    done: &std::sync::atomic::AtomicUsize,
) -> Vec<Read> {
    crate::parallel::map_with(
        files,
        usize::MAX,
        || {
            let scratch = match judge {
                Judge::Artefact(a) => Some(a.judge_facts()),
                _ => None,
            };
            (scratch, Vec::new())
        },
        |(scratch, buffer), path| {
            let r = read_node(path, buffer, matrix, judge, scratch);
            if buffer.len() > KEPT_BUFFER {
                // One large file does not keep its size of memory for the rest of the run.
                *buffer = Vec::new();
            }
            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            r
        },
    )
}

/// Judges the node whose host facts are `host` (none when its file holds none) as `judge` says.
fn judge_node(
    judge: Judge<'_>,
    scratch: &mut Scratch,
    host: Option<HostFacts>,
    matrix: &Matrix,
    node: &mut Node,
) -> Option<Staged> {
    match (judge, scratch) {
        (Judge::Artefact(a), Some(facts)) => {
            node.prediction = Some(a.predict(host, facts, matrix));
            None
        }
        (Judge::Env(e), _) => {
            node.prediction = Some(e.predict(host, matrix));
            None
        }
        (Judge::Image(program), _) => match host {
            Some(mut host) => {
                crate::host::enrich::with_matrix(&mut host, matrix);
                Some(program.stage(host, matrix))
            }
            None => {
                node.prediction = Some(Prediction::no_host());
                None
            }
        },
        _ => None,
    }
}

/// A snapshot's host facts, decoded whole (its other facts, binaries', skipped).
#[derive(Deserialize)]
struct SnapshotFile {
    #[serde(default)]
    facts: Option<SnapshotFacts>,
}

#[derive(Deserialize)]
struct SnapshotFacts {
    #[serde(default)]
    host: Option<HostFacts>,
}

/// A report's host facts, decoded whole (only for judging an artefact).
#[derive(Deserialize)]
struct ReportFacts {
    #[serde(default)]
    host: Option<ReportHostFacts>,
}

#[derive(Deserialize)]
struct ReportHostFacts {
    #[serde(default)]
    facts: Option<HostFacts>,
}

fn skipped(path: &Path, kind: SkipKind, reason: impl Into<String>) -> Skipped {
    Skipped {
        path: path.display().to_string(),
        kind,
        reason: reason.into(),
    }
}

/// Reads one node file: a report's node from its head alone, a snapshot's from its facts with the rules run
/// over them; with an artefact, its predicted outcome too.
/// `buffer` is the thread's, reused from one file to the next.
fn read_node(
    path: &Path,
    buffer: &mut Vec<u8>,
    matrix: &Matrix,
    judge: Judge<'_>,
    scratch: &mut Scratch,
) -> Read {
    let bytes = crate::system::read::read_into(path, NODE_FILE, buffer)
        .map_err(|e| skipped(path, SkipKind::Unreadable, e.to_string()))?;
    let text = std::str::from_utf8(bytes)
        .map_err(|_| skipped(path, SkipKind::NotJson, "not JSON: not UTF-8 text"))?;
    let head = crate::fleet::head::decode(text).map_err(|e| {
        // A syntax error is "not JSON"; JSON of the wrong shape is not a cudadiag file.
        let kind = if e.is_data() {
            SkipKind::NotCudadiag
        } else {
            SkipKind::NotJson
        };
        let what = if e.is_data() {
            "not a cudadiag report or snapshot"
        } else {
            "not JSON"
        };
        skipped(path, kind, format!("{what}: {e}"))
    })?;
    if head.schema_version.is_some() && head.snapshot_version.is_none() {
        return report_node(path, text, head, matrix, judge, scratch);
    }
    snapshot_node(path, text, head.snapshot_version.as_ref(), matrix, judge, scratch)
}

/// A report's node, from its head (its findings are the ones the node gave); with an artefact, the report's
/// host facts are decoded whole to judge it.
fn report_node(
    path: &Path,
    text: &str,
    head: Head<'_>,
    matrix: &Matrix,
    judge: Judge<'_>,
    scratch: &mut Scratch,
) -> Read {
    let origin = path.display().to_string();
    let file_name = node_name_from_file(path);
    let Some(host) = head.host else {
        return Err(skipped(
            path,
            SkipKind::NotCudadiag,
            "a JSON report without a `host` object: not a cudadiag report",
        ));
    };
    let mut findings: Vec<NodeFinding> = Vec::new();
    for f in head.findings.unwrap_or_default() {
        add_finding(&mut findings, &f.slug, &f.code, f.severity);
    }
    let hostname = host
        .hostname
        .as_ref()
        .or(host.facts.as_ref().and_then(|f| f.hostname.as_ref()))
        .map(|h| h.name().to_string());
    let mut node = node(
        file_name,
        hostname,
        &origin,
        SourceKind::Report,
        host.driver.and_then(|d| d.version).map(Cow::into_owned),
        host.gpus.iter().map(|g| g.name.as_ref()),
        findings,
    );
    if matches!(judge, Judge::Nothing) {
        return Ok((node, None));
    }
    {
        let decoded: ReportFacts = serde_json::from_str(text).map_err(|e| {
            skipped(
                path,
                SkipKind::NotCudadiag,
                format!("its host facts do not decode: {e}"),
            )
        })?;
        let host = decoded.host.and_then(|h| h.facts);
        let staged = judge_node(judge, scratch, host, matrix, &mut node);
        Ok((node, staged))
    }
}

/// A snapshot's node (or a bare serialised `Facts`'s): its host facts decoded, its findings the rules run
/// over them here, as `doctor --facts` gives them; with an artefact, its prediction on them.
fn snapshot_node(
    path: &Path,
    text: &str,
    snapshot_version: Option<&serde_json::Value>,
    matrix: &Matrix,
    judge: Judge<'_>,
    scratch: &mut Scratch,
) -> Read {
    let origin = path.display().to_string();
    let file_name = node_name_from_file(path);
    let host = match snapshot_version {
        // The envelope `cudadiag snapshot` writes: decoded straight into the host facts (no JSON tree first),
        // after the version check `--facts` makes.
        Some(v) => {
            crate::diagnose::snapshot::gate(v)
                .map_err(|e| skipped(path, SkipKind::NotCudadiag, e.to_string()))?;
            let file: SnapshotFile = serde_json::from_str(text).map_err(|e| {
                skipped(
                    path,
                    SkipKind::NotCudadiag,
                    format!("not a cudadiag snapshot: {e}"),
                )
            })?;
            file.facts.and_then(|f| f.host)
        }
        // A bare serialised `Facts` (accepted by `--facts` too).
        None => {
            crate::diagnose::snapshot::parse(text, "this file")
                .map_err(|_| {
                    skipped(
                        path,
                        SkipKind::NotCudadiag,
                        "JSON, but neither a cudadiag report nor a snapshot",
                    )
                })?
                .host
        }
    };
    let Some(mut host) = host else {
        return Err(skipped(
            path,
            SkipKind::NotCudadiag,
            "a snapshot without host facts",
        ));
    };
    // `snapshot` records the node's name (`host::hostname`), unless `--redact` replaced it.
    let hostname = host.hostname.as_ref().map(|h| h.name.clone());
    crate::host::enrich::with_matrix(&mut host, matrix);
    let facts_of_node = crate::facts::Facts {
        host: Some(host),
        ..crate::facts::Facts::default()
    };
    let mut findings = Vec::new();
    for f in crate::diagnose::evaluate(&facts_of_node, matrix) {
        add_finding(&mut findings, &f.slug, f.code.as_str(), f.severity);
    }
    let host = facts_of_node.host;
    let h = host.as_ref();
    let mut node = node(
        file_name,
        hostname,
        &origin,
        SourceKind::Snapshot,
        h.and_then(|h| h.driver.as_ref()).map(|d| d.version.clone()),
        h.map(|h| h.gpus.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|g| g.name.as_str()),
        findings,
    );
    let staged = judge_node(judge, scratch, host, matrix, &mut node);
    Ok((node, staged))
}

/// Adds a finding, each slug once at its worst severity.
fn add_finding(findings: &mut Vec<NodeFinding>, slug: &str, code: &str, severity: Severity) {
    match findings.iter_mut().find(|f| f.slug == slug) {
        Some(f) => f.severity = f.severity.max(severity),
        None => findings.push(NodeFinding {
            slug: slug.to_string(),
            code: code.to_string(),
            severity,
        }),
    }
}

fn node<'a>(
    file_name: String,
    hostname: Option<String>,
    origin: &str,
    kind: SourceKind,
    driver: Option<String>,
    gpus: impl Iterator<Item = &'a str>,
    mut findings: Vec<NodeFinding>,
) -> Node {
    let mut counts: Vec<GpuCount> = Vec::new();
    for g in gpus {
        match counts.iter_mut().find(|c| c.model == g) {
            Some(c) => c.count += 1,
            None => counts.push(GpuCount {
                model: g.to_string(),
                count: 1,
            }),
        }
    }
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.slug.cmp(&b.slug)));
    let hostname = hostname.filter(|h| !h.trim().is_empty());
    Node {
        name: hostname.clone().unwrap_or(file_name),
        file: origin.to_string(),
        kind,
        driver: driver.filter(|d| !d.is_empty()),
        gpus: counts,
        verdict: Standing::of(&findings),
        findings,
        prediction: None,
        hostname,
    }
}

/// A node's name from its file: the file name without `.json` (`%N.json` written by Slurm gives the node's
/// name).
fn node_name_from_file(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    match name.strip_suffix(".json") {
        Some(stem) if !stem.is_empty() => stem.to_string(),
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_named_by_its_file_without_json() {
        assert_eq!(node_name_from_file(Path::new("out/gpu-017.json")), "gpu-017");
        assert_eq!(node_name_from_file(Path::new("out/.json")), ".json");
        assert_eq!(node_name_from_file(Path::new("n1.report")), "n1.report");
    }

    #[test]
    fn a_finding_is_kept_once_at_its_worst_severity() {
        let mut f = Vec::new();
        add_finding(&mut f, "library-not-found", "CD200", Severity::Warning);
        add_finding(&mut f, "library-not-found", "CD200", Severity::Error);
        add_finding(&mut f, "library-not-found", "CD200", Severity::Note);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
    }
}
