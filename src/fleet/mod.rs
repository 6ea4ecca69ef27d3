//! `cudadiag fleet`: many nodes' reports read at once and grouped the way a cluster operator asks about them.
//!
//! Each node ran `cudadiag doctor --format json` (or `inspect --format json`, or `snapshot`) through the
//! scheduler the cluster already has (see `deploy/`); `fleet` reads the files, in parallel, and groups the
//! nodes by finding, driver version, GPU model and verdict: "which nodes have `driver-library-mismatch`", "who
//! still runs 550", "which nodes fail". With an artefact (`--artifact app`), it also predicts for each node
//! whether the artefact will run there ([`judge`]), from the node's recorded facts, as `inspect --facts` does
//! for one; with an image (`--image`), whether its program will, as `inspect --image --facts` does.
//!
//! Stages: the command's reader (`commands::fleet::read`: files, I/O, decoding) turns paths into [`Node`]s
//! (and the files it could not use, with why), [`group`] turns nodes into a [`Fleet`]; `report::fleet`
//! renders it. Nothing here reads a file or prints.

pub mod head;
pub mod judge;
pub mod skim;

use crate::findings::Severity;
use judge::{ImageJudged, Outcome};
use serde::Serialize;
use std::collections::BTreeMap;

/// Where a node's facts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// A JSON report (`doctor`/`inspect --format json`): its findings are the ones the node gave.
    Report,
    /// A snapshot (`cudadiag snapshot`): its findings are the rules run here over its facts, as
    /// `doctor --facts` gives them.
    Snapshot,
}

/// One finding of a node (each slug once per node, at its worst severity).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeFinding {
    /// The stable slug (`driver-library-mismatch`).
    pub slug: String,
    /// The code (`CD300`).
    pub code: String,
    /// The severity the node's report gave it.
    pub severity: Severity,
}

/// A node's standing, from its own findings: the worst severity among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// An error: CUDA programs fail there.
    Fails,
    /// Warnings, no error.
    Warnings,
    /// No finding above a note.
    Ok,
}

impl Standing {
    /// The standing of a node with these findings.
    pub fn of(findings: &[NodeFinding]) -> Standing {
        match findings.iter().map(|f| f.severity).max() {
            Some(Severity::Error) => Standing::Fails,
            Some(Severity::Warning) => Standing::Warnings,
            _ => Standing::Ok,
        }
    }

    /// The name used in every output.
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Fails => "fails",
            Standing::Warnings => "warnings",
            Standing::Ok => "ok",
        }
    }
}

/// One node, as read from its file.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    /// Its host name (when the file carries one), else the file's name without `.json`; made unique with the
    /// file's path when two files give the same name.
    pub name: String,
    /// The file it was read from.
    pub file: String,
    /// Report or snapshot.
    pub kind: SourceKind,
    /// The loaded kernel driver's version, when the node has one.
    pub driver: Option<String>,
    /// Each GPU model and how many of it the node has, in the order first seen.
    pub gpus: Vec<GpuCount>,
    /// Its findings, each slug once, most severe first.
    pub findings: Vec<NodeFinding>,
    /// Its standing.
    pub verdict: Standing,
    /// The artefact's predicted outcome on this node (`--artifact`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prediction: Option<judge::Prediction>,
    /// The host name the file carries, when it does (`name` may be the file name).
    #[serde(skip)]
    pub hostname: Option<String>,
}

/// A GPU model and how many of it a node has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuCount {
    /// The model name (`NVIDIA H200`).
    pub model: String,
    /// How many.
    pub count: usize,
}

/// Why a file gave no node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipKind {
    /// Its text is not JSON (a log, a truncated write).
    NotJson,
    /// JSON, but neither a cudadiag report nor a snapshot (or a newer snapshot format).
    NotCudadiag,
    /// It could not be read (permission, too large, not a regular file).
    Unreadable,
}

/// A file that gave no node, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The file.
    pub path: String,
    /// The kind of reason.
    pub kind: SkipKind,
    /// The reason, one line.
    pub reason: String,
}

/// Nodes sharing one value (a finding, a driver version, a GPU model, a verdict), names in natural order.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// The value.
    pub key: String,
    /// The nodes.
    pub nodes: Vec<String>,
}

/// The nodes of one finding.
#[derive(Debug, Clone, Serialize)]
pub struct FindingGroup {
    /// The slug.
    pub slug: String,
    /// Its code.
    pub code: String,
    /// The worst severity any node gave it.
    pub severity: Severity,
    /// The nodes that have it.
    pub nodes: Vec<String>,
}

/// What was read, for the counts at the top and the list of files not used.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Files {
    /// Files read as node reports or snapshots (whether or not they gave a node).
    pub read: usize,
    /// Files in the walked directories not named `*.json` (Slurm logs, …): not read.
    pub other: usize,
    /// Files that gave no node, with why.
    pub skipped: Vec<Skipped>,
    /// Why the walk stopped early, when it did (too many files, too deep).
    pub truncated: Option<String>,
}

/// The fleet: every node and the groups an operator reads.
#[derive(Debug, Clone, Default)]
pub struct Fleet {
    /// Every node, in natural order of name.
    pub nodes: Vec<Node>,
    /// Nodes per finding: errors first, then by how many nodes have it.
    pub findings: Vec<FindingGroup>,
    /// Nodes per driver version, newest first.
    pub drivers: Vec<Group>,
    /// Nodes without a loaded driver.
    pub without_driver: Vec<String>,
    /// Nodes per GPU model, most common first.
    pub gpus: Vec<Group>,
    /// Nodes without a GPU in their facts.
    pub without_gpu: Vec<String>,
    /// Nodes per standing: fails, warnings, ok (each present when not empty).
    pub verdicts: Vec<(Standing, Vec<String>)>,
    /// The artefact's predictions, grouped (`--artifact`).
    pub artefact: Option<Predictions>,
    /// The files.
    pub files: Files,
}

impl Fleet {
    /// Does any node fail the artefact (with `--artifact`), or have a finding at or above `threshold`
    /// (without)?
    pub fn fails(&self, threshold: Option<Severity>) -> bool {
        let Some(t) = threshold else { return false };
        match &self.artefact {
            Some(a) => a.fails > 0,
            None => self
                .nodes
                .iter()
                .any(|n| n.findings.iter().any(|f| f.severity >= t)),
        }
    }
}

/// Groups `nodes` (names already unique) into a [`Fleet`]; `artefact` names what was judged, when something
/// was.
pub fn group(mut nodes: Vec<Node>, files: Files, artefact: Option<Vec<String>>) -> Fleet {
    nodes.sort_by(|a, b| natural_cmp(&a.name, &b.name));
    let mut findings: BTreeMap<&str, FindingGroup> = BTreeMap::new();
    let mut drivers: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut gpus: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut fleet = Fleet::default();
    for n in &nodes {
        for f in &n.findings {
            let g = findings.entry(&f.slug).or_insert_with(|| FindingGroup {
                slug: f.slug.clone(),
                code: f.code.clone(),
                severity: f.severity,
                nodes: Vec::new(),
            });
            g.severity = g.severity.max(f.severity);
            g.nodes.push(n.name.clone());
        }
        match &n.driver {
            Some(d) => drivers.entry(d).or_default().push(n.name.clone()),
            None => fleet.without_driver.push(n.name.clone()),
        }
        for g in &n.gpus {
            gpus.entry(&g.model).or_default().push(n.name.clone());
        }
        if n.gpus.is_empty() {
            fleet.without_gpu.push(n.name.clone());
        }
    }
    fleet.findings = findings.into_values().collect();
    fleet.findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(b.nodes.len().cmp(&a.nodes.len()))
            .then(a.slug.cmp(&b.slug))
    });
    fleet.drivers = drivers
        .into_iter()
        .map(|(key, nodes)| Group {
            key: key.to_string(),
            nodes,
        })
        .collect();
    fleet.drivers.sort_by(|a, b| natural_cmp(&b.key, &a.key));
    fleet.gpus = gpus
        .into_iter()
        .map(|(key, nodes)| Group {
            key: key.to_string(),
            nodes,
        })
        .collect();
    fleet
        .gpus
        .sort_by(|a, b| b.nodes.len().cmp(&a.nodes.len()).then(a.key.cmp(&b.key)));
    for s in [Standing::Fails, Standing::Warnings, Standing::Ok] {
        let names: Vec<String> = nodes
            .iter()
            .filter(|n| n.verdict == s)
            .map(|n| n.name.clone())
            .collect();
        if !names.is_empty() {
            fleet.verdicts.push((s, names));
        }
    }
    fleet.artefact = artefact.map(|paths| Predictions::of(paths, &nodes));
    fleet.nodes = nodes;
    fleet.files = files;
    fleet
}

/// The nodes of one outcome and leading reason.
#[derive(Debug, Clone, Serialize)]
pub struct PredictionGroup {
    /// The outcome.
    pub outcome: Outcome,
    /// The leading finding's slug (for a failure), else none.
    pub code: Option<String>,
    /// The reason on the first node of the group (reasons name node-specific versions).
    pub example: String,
    /// The nodes.
    pub nodes: Vec<String>,
}

/// The artefact's predictions over the fleet.
#[derive(Debug, Clone, Serialize)]
pub struct Predictions {
    /// The artefact's paths (with `--image`, the image's).
    pub paths: Vec<String>,
    /// With `--image`: the image and the program of it that was judged.
    pub image: Option<ImageJudged>,
    /// How many nodes it fails on.
    pub fails: usize,
    /// Nodes per outcome (`runs`, `fails`, …).
    pub outcomes: Vec<Group>,
    /// Nodes per outcome and leading reason, failures first.
    pub groups: Vec<PredictionGroup>,
}

impl Predictions {
    /// Groups the nodes' predictions (nodes in the order given).
    pub fn of(paths: Vec<String>, nodes: &[Node]) -> Predictions {
        let mut groups: Vec<PredictionGroup> = Vec::new();
        for n in nodes {
            let Some(p) = &n.prediction else { continue };
            let code = (p.outcome == Outcome::Fails)
                .then(|| p.codes.first().cloned())
                .flatten();
            match groups
                .iter_mut()
                .find(|g| g.outcome == p.outcome && g.code == code)
            {
                Some(g) => g.nodes.push(n.name.clone()),
                None => groups.push(PredictionGroup {
                    outcome: p.outcome,
                    code,
                    example: p.reason.clone(),
                    nodes: vec![n.name.clone()],
                }),
            }
        }
        groups.sort_by(|a, b| {
            a.outcome
                .cmp(&b.outcome)
                .then(b.nodes.len().cmp(&a.nodes.len()))
                .then(a.code.cmp(&b.code))
        });
        let mut outcomes: Vec<Group> = Vec::new();
        for g in &groups {
            match outcomes.iter_mut().find(|o| o.key == g.outcome.as_str()) {
                Some(o) => o.nodes.extend(g.nodes.iter().cloned()),
                None => outcomes.push(Group {
                    key: g.outcome.as_str().to_string(),
                    nodes: g.nodes.clone(),
                }),
            }
        }
        for o in &mut outcomes {
            o.nodes.sort_by(|a, b| natural_cmp(a, b));
        }
        let fails = outcomes
            .iter()
            .find(|o| o.key == Outcome::Fails.as_str())
            .map_or(0, |o| o.nodes.len());
        Predictions {
            paths,
            image: None,
            fails,
            outcomes,
            groups,
        }
    }
}

/// Gives every node a unique name: nodes whose names clash (two snapshots of one host, `a/n1.json` and
/// `b/n1.json`) are named by their file instead.
pub fn unique_names(nodes: &mut [Node]) {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for n in nodes.iter() {
        *count.entry(n.name.clone()).or_default() += 1;
    }
    for n in nodes.iter_mut() {
        if count.get(&n.name).copied().unwrap_or(0) > 1 {
            n.name = match &n.hostname {
                Some(h) => format!("{h} ({})", n.file),
                None => n.file.clone(),
            };
        }
    }
}

/// Orders names as people count them: `node2` before `node10` (runs of digits compared as numbers).
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (na, nb) = (&a[..da], &b[..db]);
                // Compare the numbers without parsing them (any length): leading zeros aside, longer is larger.
                let ta = trim_zeros(na);
                let tb = trim_zeros(nb);
                let o = ta.len().cmp(&tb.len()).then(ta.cmp(tb)).then(da.cmp(&db));
                if o != Ordering::Equal {
                    return o;
                }
                a = &a[da..];
                b = &b[db..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let z = d.iter().take_while(|&&c| c == b'0').count();
    &d[z..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_ordered_as_people_count() {
        let mut v = vec!["node10", "node2", "node1", "gpu-a10", "gpu-a9", "node02"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["gpu-a9", "gpu-a10", "node1", "node2", "node02", "node10"]);
        assert_eq!(
            natural_cmp("580.159.04", "580.65.06"),
            std::cmp::Ordering::Greater
        );
        assert_eq!(natural_cmp("", ""), std::cmp::Ordering::Equal);
    }

    fn node(name: &str, file: &str, host: Option<&str>) -> Node {
        Node {
            name: name.into(),
            file: file.into(),
            kind: SourceKind::Report,
            driver: None,
            gpus: Vec::new(),
            findings: Vec::new(),
            verdict: Standing::Ok,
            prediction: None,
            hostname: host.map(str::to_string),
        }
    }

    #[test]
    fn clashing_names_are_made_unique_by_file() {
        let mut v = vec![
            node("n1", "a/n1.json", None),
            node("n1", "b/n1.json", None),
            node("h", "x.json", Some("h")),
            node("h", "y.json", Some("h")),
            node("n2", "n2.json", None),
        ];
        unique_names(&mut v);
        let names: Vec<&str> = v.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            ["a/n1.json", "b/n1.json", "h (x.json)", "h (y.json)", "n2"]
        );
    }
}
