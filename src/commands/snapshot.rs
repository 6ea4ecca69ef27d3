//! `cudadiag snapshot`: the machine's facts (and the binaries' facts) in one JSON file, and reading it back.
//!
//! The file is the serialised [`Facts`] model inside a small envelope that names the format version and the
//! cudadiag that wrote it: `tool` (`"cudadiag 0.1.0"`, a string, as format 1 always had it) and `tool_info`,
//! the same object as the JSON report's `tool` (commit, target, bundled matrix). Because rules are pure,
//! `doctor --facts FILE` and `inspect --facts FILE` give exactly the findings the machine gave (rules
//! read recorded facts only, never the machine).

use super::{Outcome, ToolError};
use crate::cli::SnapshotArgs;
use crate::facts::{Facts, HostFacts};
use crate::inspect::{self, InspectOptions};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

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
}

/// Reads a snapshot written by `cudadiag snapshot` (a bare serialised `Facts` is accepted too).
pub fn load(path: &Path) -> Result<Facts, ToolError> {
    let text = crate::system::read::read_to_string(path, crate::system::read::SNAPSHOT)
        .map_err(|e| ToolError(format!("cannot read {}: {e}", path.display())))?;
    parse(&text, &path.display().to_string())
}

/// Decodes a snapshot's text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Facts, ToolError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ToolError(format!("{origin} is not JSON: {e}")))?;
    let bad = |e: serde_json::Error| ToolError(format!("{origin} is not a cudadiag snapshot: {e}"));
    if let Some(version) = value.get("snapshot_version") {
        // The version first: a newer format's facts need not decode here, and "upgrade" is the useful answer.
        let version = version.as_u64().ok_or_else(|| {
            ToolError(format!(
                "{origin} is not a cudadiag snapshot: snapshot_version is {version}, not a number"
            ))
        })?;
        if version > u64::from(SNAPSHOT_VERSION) {
            return Err(ToolError(format!(
                "{origin}: snapshot version {version} is newer than this cudadiag understands (max {SNAPSHOT_VERSION}): \
                 upgrade cudadiag"
            )));
        }
        let env: Envelope = serde_json::from_value(value).map_err(bad)?;
        Ok(env.facts)
    } else {
        serde_json::from_value(value).map_err(bad)
    }
}

/// The host facts of a snapshot, or a tool error when it holds none.
pub fn load_host(path: &Path) -> Result<HostFacts, ToolError> {
    load(path)?
        .host
        .ok_or_else(|| ToolError(format!("{} holds no host facts", path.display())))
}

pub fn run(args: &SnapshotArgs, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let root = super::doctor::checked_root(&args.system)?;
    let host = super::doctor::collect(&root, &args.system.env(), args.no_catalog);
    let mut facts = Facts {
        host: Some(host),
        ..Facts::default()
    };
    for p in &args.paths {
        let b = inspect::path(p, &InspectOptions::default()).map_err(|e| ToolError(e.to_string()))?;
        facts.binaries.extend(b);
    }
    let env = Envelope {
        snapshot_version: SNAPSHOT_VERSION,
        tool: format!("cudadiag {}", env!("CARGO_PKG_VERSION")),
        tool_info: Some(crate::build_info::BuildInfo::current()),
        facts,
    };
    let text = serde_json::to_string_pretty(&env).map_err(|e| ToolError(e.to_string()))?;
    if args.output.as_os_str() == "-" {
        crate::report::text(out, &format!("{text}\n"))?;
    } else {
        std::fs::write(&args.output, format!("{text}\n"))
            .map_err(|e| ToolError(format!("cannot write {}: {e}", args.output.display())))?;
    }
    Ok(Outcome::Clean)
}
