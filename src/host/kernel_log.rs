//! The NVIDIA driver's Xid reports in the kernel log, when a plain-text log is readable under the root.
//!
//! The driver reports a GPU error to the kernel log as `NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen
//! off the bus.`: the device, then the Xid number (NVIDIA, "Xid Errors", docs.nvidia.com/deploy/xid-errors,
//! "Viewing Xid Messages"; the catalogue of Xid numbers, "Analyzing Xid Errors with the Xid Catalog"). rsyslog
//! writes the kernel's messages to `/var/log/kern.log` and `/var/log/syslog` (Debian, Ubuntu) or
//! `/var/log/messages` (Red Hat, SUSE); journald's own files are binary and not read. Only the end of the
//! file is read ([`TAIL`]), and only the reports after the last boot count: a GPU that fell off the bus
//! before a reboot is back. Nothing is executed (no `dmesg`, no `journalctl`).

use crate::facts::host::kernel_log::{KernelLogFacts, XidReport};
use crate::system::Root;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The plain-text logs that hold the kernel's messages, the most specific first.
const LOGS: &[&str] = &["/var/log/kern.log", "/var/log/syslog", "/var/log/messages"];

/// How much of a log's end is read: some days of a busy machine's kernel messages, and a bound on the time
/// and memory a log of gigabytes could cost.
pub const TAIL: u64 = 8 << 20;

/// The longest line kept in a report.
const LINE: usize = 300;

/// The Xid reports of the first readable log; `None` when none of [`LOGS`] is a readable regular file.
pub fn collect(root: &Root) -> Option<KernelLogFacts> {
    LOGS.iter().find_map(|p| read_tail(root, p))
}

fn read_tail(root: &Root, path: &str) -> Option<KernelLogFacts> {
    let mut file = root.open(Path::new(path)).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let start = meta.len().saturating_sub(TAIL);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.take(TAIL).read_to_end(&mut bytes).ok()?;
    // A tail that starts inside a line drops that line's end.
    let text = String::from_utf8_lossy(&bytes);
    let text = if start > 0 {
        text.split_once('\n').map(|(_, rest)| rest).unwrap_or("")
    } else {
        &text
    };
    let mut facts = scan(text);
    facts.source = path.to_string();
    facts.bytes_read = bytes.len() as u64;
    Some(facts)
}

/// The Xid reports of a log's text after its last boot.
pub fn scan(text: &str) -> KernelLogFacts {
    let mut f = KernelLogFacts::default();
    for line in text.lines() {
        if is_boot(line) {
            f.boot_seen = true;
            f.xids.clear();
            f.xid_count = 0;
        } else if let Some(r) = xid(line) {
            f.xid_count += 1;
            if f.xids.len() < KernelLogFacts::KEPT {
                f.xids.push(r);
            }
        }
    }
    f
}

/// The kernel's first message of a boot, as syslog writes it: `… kernel: [    0.000000] Linux version 6.8.0-31-generic (…)`.
fn is_boot(line: &str) -> bool {
    let Some((_, msg)) = line.split_once("kernel: ") else {
        return false;
    };
    let msg = match msg.strip_prefix('[') {
        Some(rest) => rest.split_once("] ").map(|(_, m)| m).unwrap_or(rest),
        None => msg,
    };
    msg.starts_with("Linux version ")
}

/// One `NVRM: Xid (DEVICE): N, …` line.
pub fn xid(line: &str) -> Option<XidReport> {
    let at = line.find("NVRM: Xid (")?;
    let from = &line[at..];
    let rest = &from["NVRM: Xid (".len()..];
    let (device, rest) = rest.split_once("): ")?;
    if device.is_empty() || device.len() > 32 || device.contains(char::is_whitespace) {
        return None;
    }
    let digits: &str = &rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())];
    if digits.is_empty() || digits.len() > 4 {
        return None;
    }
    let xid = digits.parse().ok()?;
    let mut cut = from.len().min(LINE);
    while !from.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(XidReport {
        xid,
        device: device.to_string(),
        line: from[..cut].trim_end().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xid_lines_of_the_driver() {
        let r =
            xid("May 18 19:02:39 host kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.")
                .unwrap();
        assert_eq!((r.xid, r.device.as_str()), (79, "PCI:0000:2b:00"));
        assert!(r.line.starts_with("NVRM: Xid (PCI:0000:2b:00): 79"));
        // Older drivers omit `PCI:`.
        let old = xid("[ 269.517039] NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007").unwrap();
        assert_eq!((old.xid, old.device.as_str()), (3, "0000:01:00"));
        assert!(xid("NVRM: Xid (PCI:0000:2b:00): , nothing").is_none());
        assert!(xid("NVRM: GPU at PCI:0000:2b:00: GPU-0b11d014").is_none());
        let long = format!("NVRM: Xid (PCI:0000:2b:00): 13, {}", "é".repeat(400));
        assert!(xid(&long).unwrap().line.len() <= LINE);
    }

    #[test]
    fn only_the_reports_after_the_last_boot_count() {
        let log = "Dec  1 10:00:00 h kernel: [ 5.1] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n\
                   Dec  1 11:00:00 h kernel: [    0.000000] Linux version 6.8.0-31-generic (buildd@lcy02)\n\
                   Dec  1 11:05:00 h kernel: [ 300.2] NVRM: Xid (PCI:0000:19:00): 48, pid=1, DBE\n";
        let f = scan(log);
        assert!(f.boot_seen);
        assert_eq!(f.xids.iter().map(|r| r.xid).collect::<Vec<_>>(), [48]);
        let journal = "2026-12-01T11:00:00.000+00:00 h kernel: Linux version 6.8.0 (x)\n";
        assert!(scan(journal).boot_seen);
        assert!(!scan("h kernel: [1.0] Booting Linux on physical CPU 0x0\n").boot_seen);
    }

    #[test]
    fn a_flood_of_reports_is_counted_not_kept() {
        let log = "k: NVRM: Xid (PCI:0000:3b:00): 31, fault\n".repeat(1000);
        let f = scan(&log);
        assert_eq!((f.xids.len(), f.xid_count), (KernelLogFacts::KEPT, 1000));
    }
}
