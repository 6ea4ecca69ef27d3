//! NVSwitches and NVIDIA Fabric Manager on the machine (`host::fabric`).

use serde::{Deserialize, Serialize};

/// The NVSwitches of an HGX/DGX baseboard and the Fabric Manager that must set up their fabric.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricFacts {
    /// What shows NVSwitches: their PCI functions (`/sys/bus/pci/devices/…`, NVIDIA bridges), the
    /// `nvidia-nvswitch` driver's `/proc/driver/nvidia-nvswitch`, or its `/dev/nvidia-nvswitch*` nodes.
    pub nvswitches: Vec<String>,
    /// The Fabric Manager files found: its daemon `nv-fabricmanager` and its systemd unit.
    pub installed: Vec<String>,
    /// The process of the daemon, when one runs (`/proc/PID/comm` reads `nv-fabricmanage`, the kernel's
    /// 15-character cut of its name). `None`: no such process among those `/proc` shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<String>,
    /// How many processes `/proc` showed (0: it was not readable, so "not running" was not observed).
    pub processes_seen: usize,
}
