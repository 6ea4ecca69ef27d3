//! NVSwitches and NVIDIA Fabric Manager: on an HGX or DGX baseboard the GPUs are joined by NVSwitches, and
//! CUDA does not initialise (`cudaErrorSystemNotReady`, 802: "system not yet initialized") until Fabric Manager
//! has trained the NVLinks and programmed the switches (NVIDIA Fabric Manager User Guide,
//! docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide: "NVSwitch and NVLink Initialization", "Managing
//! the Fabric Manager Service"; CUDA Runtime API, `cudaErrorSystemNotReady`).
//!
//! NVSwitches show as NVIDIA PCI functions of class "other bridge" (0x0680), beside the GPUs' display class
//! (0x03); the `nvidia-nvswitch` driver of the first three generations adds `/proc/driver/nvidia-nvswitch` and
//! `/dev/nvidia-nvswitch*`. Fabric Manager is the daemon `nv-fabricmanager`, installed as
//! `/usr/bin/nv-fabricmanager` with the systemd unit `nvidia-fabricmanager.service` by the
//! `nvidia-fabricmanager` packages. Whether it runs is read from `/proc/PID/comm`; nothing is executed.

use crate::facts::host::fabric::FabricFacts;
use crate::system::Root;
use crate::system::read::KERNEL_TEXT;
use std::path::Path;

const PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// The kernel keeps 15 bytes of a process's name in `comm`: `nv-fabricmanager` reads `nv-fabricmanage`.
const COMM: &str = "nv-fabricmanage";

/// The daemon and its unit, where the packages put them.
const INSTALLED: &[&str] = &[
    "/usr/bin/nv-fabricmanager",
    "/usr/sbin/nv-fabricmanager",
    "/usr/lib/systemd/system/nvidia-fabricmanager.service",
    "/lib/systemd/system/nvidia-fabricmanager.service",
    "/etc/systemd/system/nvidia-fabricmanager.service",
];

/// The most `/proc` entries looked at: a bound on the work on a machine of very many processes.
const MAX_PROCESSES: usize = 1 << 16;

/// NVSwitches and Fabric Manager; `None` when the machine shows no NVSwitch (nothing to judge).
pub fn collect(root: &Root) -> Option<FabricFacts> {
    let nvswitches = nvswitches(root);
    if nvswitches.is_empty() {
        return None;
    }
    let installed = INSTALLED
        .iter()
        .filter(|p| root.is_file(Path::new(p)))
        .map(|p| p.to_string())
        .collect();
    let (running, processes_seen) = daemon(root);
    Some(FabricFacts {
        nvswitches,
        installed,
        running,
        processes_seen,
    })
}

/// What shows NVSwitches on the machine, one line each.
fn nvswitches(root: &Root) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(devices) = root.read_dir(Path::new(PCI_DEVICES)) {
        let bridges = devices
            .iter()
            .filter(|d| hex(root, &d.join("vendor")) == Some(0x10de))
            .filter(|d| hex(root, &d.join("class")).is_some_and(|c| c >> 8 == 0x0680))
            .count();
        if bridges > 0 {
            out.push(format!(
                "{PCI_DEVICES}: {bridges} NVIDIA bridge function(s) (class 0x0680, NVSwitch)"
            ));
        }
    }
    if root.exists(Path::new("/proc/driver/nvidia-nvswitch")) {
        out.push("/proc/driver/nvidia-nvswitch exists (the nvidia-nvswitch driver)".to_string());
    }
    if let Ok(dev) = root.read_dir(Path::new("/dev")) {
        let nodes = dev
            .iter()
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("nvidia-nvswitch"))
            })
            .count();
        if nodes > 0 {
            out.push(format!("/dev: {nodes} nvidia-nvswitch device node(s)"));
        }
    }
    out
}

/// The Fabric Manager process, if `/proc` shows one, and how many processes it showed.
fn daemon(root: &Root) -> (Option<String>, usize) {
    let Ok(entries) = root.read_dir(Path::new("/proc")) else {
        return (None, 0);
    };
    let mut seen = 0;
    for p in entries.iter().take(MAX_PROCESSES) {
        let is_pid = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !is_pid {
            continue;
        }
        seen += 1;
        let comm = p.join("comm");
        if let Ok(name) = root.read_to_string(&comm, KERNEL_TEXT)
            && name.trim_end() == COMM
        {
            return (Some(format!("{} reads {COMM}", comm.display())), seen);
        }
    }
    (None, seen)
}

/// A sysfs file of one hexadecimal number (`0x10de`).
fn hex(root: &Root, path: &Path) -> Option<u32> {
    let text = root.read_to_string(path, KERNEL_TEXT).ok()?;
    let t = text.trim();
    u32::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
}
