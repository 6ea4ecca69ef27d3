//! The snapshot format: the machine's facts (and the binaries' facts) in one JSON file, written by
//! `cudadiag snapshot` and read back by `--facts`, `diff` and `fleet`, each through the one version gate
//! ([`gate`]).
//!
//! The file is the serialised [`Facts`] model inside a small envelope that names the format version and the
//! cudadiag that wrote it: `tool` (`"cudadiag 0.1.0"`, a string, as format 1 always had it) and `tool_info`,
//! the same object as the JSON report's `tool` (commit, target, bundled matrix). Because rules are pure,
//! `doctor --facts FILE` and `inspect --facts FILE` give exactly the findings the machine gave (rules
//! read recorded facts only, never the machine).
//!
//! Two optional sections follow the facts: `redactions` (`--redact`: the kinds of names replaced and how
//! often, `bundle::redact`) and `truncated` (the lists cut to their cap, `bundle::bound`). Readers ignore
//! both, and a snapshot without them (an older one) reads the same. `--format labels` writes node labels
//! instead of a snapshot (`bundle::labels`).

use super::{Progress, System, ToolError, machine};
use crate::facts::{Facts, HostFacts};
use crate::inspect::{self, InspectOptions};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The snapshot format version; a reader refuses newer ones.
pub const SNAPSHOT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Envelope {
    snapshot_version: u32,
    tool: String,
    /// Absent from snapshots written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_info: Option<crate::build_info::BuildInfo>,
    facts: Facts,
    /// `--redact`: the kinds of names replaced and how often (never the originals). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redactions: Option<crate::bundle::redact::Redactions>,
    /// The lists cut to their cap (`bundle::bound`): which, how many kept, how many more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    truncated: Vec<crate::bundle::bound::Truncation>,
}

/// Reads a snapshot written by `cudadiag snapshot` (a bare serialised `Facts` is accepted too).
pub fn load(path: &Path) -> Result<Facts, ToolError> {
    let text = crate::system::read::read_to_string(path, crate::system::read::SNAPSHOT)
        .map_err(|e| ToolError(format!("cannot read {}: {e}", path.display())))?;
    parse(&text, &path.display().to_string())
}

/// The one field read before the facts: the format version, so that a newer format says "upgrade" rather than
/// failing to decode. Every other field is skipped unread ([`serde::de::IgnoredAny`] is what serde does with
/// unknown fields), so the text is never held as a JSON tree.
#[derive(Deserialize)]
struct Head {
    snapshot_version: Option<serde_json::Value>,
}

/// Decodes a snapshot's text straight into the facts; `origin` names it in errors.
///
/// The text is read twice, never into a `serde_json::Value` tree of the whole: a tree of a 64 MB snapshot took
/// 1 GB, and `diff` held two (issue 33). Once for its version ([`Head`]: a syntax check with no allocation
/// beyond the version itself), then into the typed [`Facts`].
pub fn parse(text: &str, origin: &str) -> Result<Facts, ToolError> {
    let bad = |e: serde_json::Error| ToolError(format!("{origin} is not a cudadiag snapshot: {e}"));
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map_err(|e| ToolError(format!("{origin} is not JSON: {e}")))?;
    let version = if text.trim_start().starts_with('{') {
        serde_json::from_str::<Head>(text).map_err(bad)?.snapshot_version
    } else {
        None
    };
    if let Some(version) = version {
        // The version first: a newer format's facts need not decode here, and "upgrade" is the useful answer.
        gate(&version).map_err(|e| match e {
            VersionError::NotNumber(_) => ToolError(format!("{origin} is {e}")),
            VersionError::Newer(_) => ToolError(format!("{origin}: {e}")),
        })?;
        let env: Envelope = serde_json::from_str(text).map_err(bad)?;
        Ok(env.facts)
    } else {
        serde_json::from_str(text).map_err(bad)
    }
}

/// Why a snapshot's version is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionError {
    /// `snapshot_version` is not a number (shown cut short: it is the file's, and may be long).
    NotNumber(String),
    /// A newer format than this cudadiag reads.
    Newer(u64),
}

impl std::fmt::Display for VersionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VersionError::NotNumber(shown) => write!(
                f,
                "not a cudadiag snapshot: snapshot_version is {shown}, not a number"
            ),
            VersionError::Newer(version) => write!(
                f,
                "snapshot version {version} is newer than this cudadiag understands (max {SNAPSHOT_VERSION}): \
                 upgrade cudadiag"
            ),
        }
    }
}

/// Characters of a `snapshot_version` that is not a number shown in the error.
const SHOWN_VERSION: usize = 40;

/// The one version gate of every snapshot reader (`--facts`, `diff`, `fleet`): the envelope's
/// `snapshot_version` must be a number no newer than [`SNAPSHOT_VERSION`].
pub fn gate(version: &serde_json::Value) -> Result<(), VersionError> {
    let Some(version) = version.as_u64() else {
        let text = version.to_string();
        let shown = match text.char_indices().nth(SHOWN_VERSION) {
            Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
            None => text,
        };
        return Err(VersionError::NotNumber(shown));
    };
    if version > u64::from(SNAPSHOT_VERSION) {
        return Err(VersionError::Newer(version));
    }
    Ok(())
}

/// The host facts of a snapshot, or a tool error when it holds none.
pub fn load_host(path: &Path) -> Result<HostFacts, ToolError> {
    load(path)?
        .host
        .ok_or_else(|| ToolError(format!("{} holds no host facts", path.display())))
}

/// A snapshot of the machine `system` names, with the facts of the binaries at `paths`, as the text of the
/// file (`redact`: every name replaced, `bundle::redact`). `no_catalog` leaves the library catalogue out (the
/// only slow part, which `progress` shows).
pub fn take(
    system: &System,
    paths: &[PathBuf],
    no_catalog: bool,
    redact: bool,
    progress: &dyn Progress,
) -> Result<String, ToolError> {
    let root = machine::checked_root(system)?;
    let env = system.env();
    let mut host = machine::collect(&root, &env, no_catalog, progress);
    let truncated = crate::bundle::bound::bound(&mut host);
    let mut facts = Facts {
        host: Some(host),
        ..Facts::default()
    };
    for p in paths {
        let b = inspect::path(p, &InspectOptions::default())?;
        facts.binaries.extend(b);
    }
    let envelope = Envelope {
        snapshot_version: SNAPSHOT_VERSION,
        tool: format!("cudadiag {}", env!("CARGO_PKG_VERSION")),
        tool_info: Some(crate::build_info::BuildInfo::current()),
        facts,
        redactions: None,
        truncated,
    };
    let text = if redact {
        redacted(envelope, &env, &root)?
    } else {
        serde_json::to_string_pretty(&envelope)?
    };
    Ok(format!("{text}\n"))
}

/// The node labels of the machine `system` names (`bundle::labels`), one `key=value` a line: the machine
/// alone, without the library catalogue.
pub fn labels(system: &System) -> Result<String, ToolError> {
    let root = machine::checked_root(system)?;
    let mut host = machine::collect(&root, &system.env(), true, &super::Quiet);
    let matrix = crate::matrix::Matrix::bundled()
        .map_err(|e| ToolError(format!("invalid compatibility matrix: {e}")))?;
    crate::host::enrich::with_matrix(&mut host, &matrix);
    Ok(crate::bundle::labels::labels(&host)
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect())
}

/// The snapshot with every name replaced (`bundle::redact`) and its `redactions` section.
fn redacted(
    envelope: Envelope,
    env: &crate::system::Env,
    root: &crate::system::Root,
) -> Result<String, ToolError> {
    let mut envelope = envelope;
    let facts = std::mem::take(&mut envelope.facts);
    let names = {
        let plain = serde_json::to_value(&facts)?;
        crate::bundle::names(&plain, facts.host.as_ref(), env, root)
    };
    let mut r = crate::bundle::redact::Redactor::new(&names);
    let value = r.facts(facts)?;
    let mut whole = serde_json::to_value(Envelope {
        redactions: Some(r.report()),
        ..envelope
    })?;
    whole["facts"] = value;
    Ok(serde_json::to_string_pretty(&whole)?)
}
