//! The NVIDIA driver's Xid reports in the machine's kernel log (`host::kernel_log`).

use serde::{Deserialize, Serialize};

/// What the tail of a readable kernel log says about the GPUs since the machine last booted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelLogFacts {
    /// The log file read, as a machine path (`/var/log/kern.log`).
    pub source: String,
    /// How many bytes of its end were read.
    pub bytes_read: u64,
    /// Whether a boot (the kernel's `Linux version` line) was seen in what was read: the reports before the
    /// last one are of an earlier boot and are dropped. `false`: the whole tail is of the running boot, or of
    /// a boot whose start was not in the tail.
    pub boot_seen: bool,
    /// The Xid reports after the last boot, oldest first, at most [`KernelLogFacts::KEPT`] of them.
    pub xids: Vec<XidReport>,
    /// How many Xid reports there were after the last boot (more than `xids` holds when it was cut).
    pub xid_count: usize,
}

impl KernelLogFacts {
    /// The most reports kept: a failing GPU repeats its Xid thousands of times.
    pub const KEPT: usize = 64;
}

/// One `NVRM: Xid (PCI:0000:3b:00): 79, …` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XidReport {
    /// The Xid number.
    pub xid: u32,
    /// The device as the driver names it (`PCI:0000:3b:00`).
    pub device: String,
    /// The line from `NVRM:` on, cut to a few hundred characters.
    pub line: String,
}
