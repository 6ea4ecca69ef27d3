//! The head of a node file: what `fleet` groups a report's node by (driver version, GPU names, host name,
//! finding slugs) and what tells a report from a snapshot, a few hundred bytes of a 160 KB report.
//!
//! [`decode`] walks the top object, `host` and `host.facts` with [`Skim`], decodes the few values it keeps
//! with `serde_json` (each from its own text), and steps over the rest: exactly ([`Skim::value`]), except
//! the library catalogue, `host.facts.libraries` (130 KB of the 160), which is stepped over by its brackets
//! alone ([`Skim::array_by_brackets`]). Where the skim cannot give the answer (the text is not JSON, a key is
//! repeated or escaped, a value has an unusual shape), `serde_json` decodes the whole text into the same
//! structs, and its answer or error message is the one used. So the head is the one `serde_json` gives,
//! with one difference, chosen: damage inside the library catalogue that leaves its brackets and strings
//! whole (a `]` that closes it is still needed) is not noticed, and the node is grouped.

use super::skim::Skim;
use crate::findings::Severity;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::borrow::Cow;

/// The host part of a report (`host`) or of a snapshot's facts (`facts.host`): both carry `driver.version`
/// and `gpus[].name`; the host name may be on either level (`host.hostname`, `host.facts.hostname`).
#[derive(Debug, PartialEq, Deserialize)]
pub struct HostHead<'a> {
    /// The host name at the top of the host object.
    #[serde(default)]
    pub hostname: Option<HostNameField>,
    /// The loaded driver.
    #[serde(borrow, default)]
    pub driver: Option<DriverHead<'a>>,
    /// The GPUs.
    #[serde(borrow, default)]
    pub gpus: Vec<GpuHead<'a>>,
    /// The host facts (of a report): only their host name.
    #[serde(default)]
    pub facts: Option<NameHead>,
}

/// A driver's version.
#[derive(Debug, PartialEq, Deserialize)]
pub struct DriverHead<'a> {
    /// `580.95.05`.
    #[serde(borrow, default)]
    pub version: Option<Cow<'a, str>>,
}

/// A GPU's model name.
#[derive(Debug, PartialEq, Deserialize)]
pub struct GpuHead<'a> {
    /// `NVIDIA H200`.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
}

/// The host name inside a report's host facts.
#[derive(Debug, PartialEq, Deserialize)]
pub struct NameHead {
    /// As a snapshot records it.
    #[serde(default)]
    pub hostname: Option<HostNameField>,
}

/// A host name as a snapshot records it (`{"name": "gpu-a1", "source": "/etc/hostname"}`), or a plain string.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum HostNameField {
    /// `{"name": …, "source": …}`.
    Named {
        /// The name.
        name: String,
    },
    /// A plain string.
    Plain(String),
}

impl HostNameField {
    /// The name.
    pub fn name(&self) -> &str {
        match self {
            HostNameField::Named { name } | HostNameField::Plain(name) => name,
        }
    }
}

/// A finding of a report.
#[derive(Debug, PartialEq, Deserialize)]
pub struct FindingHead<'a> {
    /// `CD300`.
    #[serde(borrow)]
    pub code: Cow<'a, str>,
    /// `driver-library-mismatch`.
    #[serde(borrow)]
    pub slug: Cow<'a, str>,
    /// As the report gave it.
    pub severity: Severity,
}

/// The top of any node file: enough to tell a report from a snapshot and to group a report's node.
#[derive(Debug, PartialEq, Deserialize)]
pub struct Head<'a> {
    /// A report's format version (present: a report).
    #[serde(default)]
    pub schema_version: Option<IgnoredAny>,
    /// A snapshot's format version (present: a snapshot, checked by the snapshot gate).
    #[serde(default)]
    pub snapshot_version: Option<serde_json::Value>,
    /// The host.
    #[serde(borrow, default)]
    pub host: Option<HostHead<'a>>,
    /// A report's findings.
    #[serde(borrow, default)]
    pub findings: Option<Vec<FindingHead<'a>>>,
}

/// The head of a node file's text, as `serde_json` decodes it into [`Head`] (the one chosen difference aside:
/// module documentation), without decoding the rest.
pub fn decode(text: &str) -> Result<Head<'_>, serde_json::Error> {
    match skimmed(text) {
        Some(head) => Ok(head),
        None => serde_json::from_str(text),
    }
}

/// The head by the skim, or `None` where `serde_json` must decide.
fn skimmed(text: &str) -> Option<Head<'_>> {
    let mut head = Head {
        schema_version: None,
        snapshot_version: None,
        host: None,
        findings: None,
    };
    let mut seen = Seen::default();
    let mut s = Skim::new(text);
    s.object(|key, s| {
        match key {
            "schema_version" => head.schema_version = seen.once(0, || kept(s))?,
            "snapshot_version" => head.snapshot_version = seen.once(1, || kept(s))?,
            "host" => head.host = seen.once(2, || host(s))?,
            "findings" => head.findings = seen.once(3, || kept(s))?,
            _ => {
                s.value()?;
            }
        }
        Some(())
    })?;
    s.at_end().then_some(head)
}

/// The members of one object already read: `serde_json` refuses a field given twice ("duplicate field"),
/// so a second one is left to it.
#[derive(Default)]
struct Seen(u8);

impl Seen {
    fn once<T>(&mut self, field: u8, read: impl FnOnce() -> Option<T>) -> Option<T> {
        if self.0 & (1 << field) != 0 {
            return None;
        }
        self.0 |= 1 << field;
        read()
    }
}

/// The value at the skim decoded by `serde_json` from its own text. A value nested deeper than a few levels
/// is left to the whole decode, whose recursion limit (128) counts the levels around it too.
fn kept<'a, T: Deserialize<'a>>(s: &mut Skim<'a>) -> Option<T> {
    let text = s.value()?;
    if depth(text) > 32 {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// How deeply the value `text` (valid JSON) nests arrays and objects.
fn depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &c in text.as_bytes() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// `host`: `null`, or an object walked for its driver, GPUs and host names.
fn host<'a>(s: &mut Skim<'a>) -> Option<Option<HostHead<'a>>> {
    if s.peek()? != b'{' {
        return kept::<Option<IgnoredAny>>(s)?.is_none().then_some(None);
    }
    let mut host = HostHead {
        hostname: None,
        driver: None,
        gpus: Vec::new(),
        facts: None,
    };
    let mut seen = Seen::default();
    s.object(|key, s| {
        match key {
            "hostname" => host.hostname = seen.once(0, || kept(s))?,
            "driver" => host.driver = seen.once(1, || kept(s))?,
            "gpus" => host.gpus = seen.once(2, || kept(s))?,
            "facts" => host.facts = seen.once(3, || facts(s))?,
            _ => {
                s.value()?;
            }
        }
        Some(())
    })?;
    Some(Some(host))
}

/// `host.facts`: `null`, or an object walked for its host name, its library catalogue stepped over by its
/// brackets.
fn facts(s: &mut Skim<'_>) -> Option<Option<NameHead>> {
    if s.peek()? != b'{' {
        return kept::<Option<IgnoredAny>>(s)?.is_none().then_some(None);
    }
    let mut hostname = None;
    let mut seen = Seen::default();
    s.object(|key, s| {
        match key {
            "hostname" => hostname = seen.once(0, || kept(s))?,
            "libraries" if s.peek()? == b'[' => {
                s.array_by_brackets()?;
            }
            _ => {
                s.value()?;
            }
        }
        Some(())
    })?;
    Some(Some(NameHead { hostname }))
}

#[cfg(test)]
mod tests;
