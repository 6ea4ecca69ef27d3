//! The node's host name: what names it in a fleet, a support case or a diff.
//!
//! Read from files like everything else, through the root: `/proc/sys/kernel/hostname` is the kernel's own
//! (what `hostname` and `uname -n` print, per UTS namespace; proc(5), "/proc/sys/kernel/hostname"), and
//! `/etc/hostname` is what the system sets at boot (hostname(5)). The kernel's wins on a live machine; a
//! mounted disk or an unpacked image has no live procfs, and its `/etc/hostname` is the name it boots with.

pub use crate::facts::host::HostName;
use crate::system::{Root, read};
use std::path::Path;

/// Where a host name may be read, in order of preference.
pub const SOURCES: &[&str] = &["/proc/sys/kernel/hostname", "/etc/hostname"];

/// The longest name accepted: a fully qualified domain name is at most 253 characters (RFC 1035, 2.3.4).
const MAX_LEN: usize = 253;

/// The first of [`SOURCES`] that holds a plausible name. Comments and blank lines of `/etc/hostname` are
/// skipped (hostname(5) allows them); a value with spaces, control characters or over 253 bytes is not a host
/// name and is not taken.
pub fn collect(root: &Root) -> Option<HostName> {
    SOURCES.iter().find_map(|src| {
        let text = root.read_to_string(Path::new(src), read::CONFIG_TEXT).ok()?;
        let name = parse(&text)?;
        Some(HostName {
            name,
            source: (*src).to_string(),
        })
    })
}

/// The host name a file's text holds.
fn parse(text: &str) -> Option<String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let plausible = line.len() <= MAX_LEN
        && line
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    plausible.then(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_first_name_line() {
        assert_eq!(
            parse("# set by cloud-init\n\n  gpu-17.example.org \n").as_deref(),
            Some("gpu-17.example.org")
        );
        assert_eq!(parse(""), None);
        assert_eq!(parse("two words\n"), None);
        assert_eq!(parse(&"a".repeat(254)), None);
    }

    #[test]
    fn prefers_the_kernels_name() {
        let t = tempfile::tempdir().unwrap();
        crate::system::put(t.path(), "etc/hostname", b"booted-name\n");
        let root = Root::at(t.path());
        assert_eq!(collect(&root).unwrap().source, "/etc/hostname");
        crate::system::put(t.path(), "proc/sys/kernel/hostname", b"kernel-name\n");
        let h = collect(&root).unwrap();
        assert_eq!(
            (h.name.as_str(), h.source.as_str()),
            ("kernel-name", "/proc/sys/kernel/hostname")
        );
    }
}
