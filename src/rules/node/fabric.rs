//! `fabric-manager-not-running`: the machine has NVSwitches, a driver is loaded, and no Fabric Manager
//! process runs, so the fabric is never set up and CUDA fails with 802 (`system not yet initialized`).
//! Docs: `data/codes/fabric-manager-not-running.md`.

use crate::facts::HostFacts;
use crate::findings::{Code, Finding};

/// The finding, when NVSwitches show, the driver is loaded, `/proc` was read and no `nv-fabricmanager`
/// process is in it. Not judged inside a container, whose `/proc` shows only its own processes.
pub fn fabric_manager_not_running(h: &HostFacts) -> Option<Finding> {
    if !h.observed || h.platform.container.is_some() || h.driver.is_none() {
        return None;
    }
    let fm = h.fabric.as_ref()?;
    if fm.nvswitches.is_empty() || fm.running.is_some() || fm.processes_seen == 0 {
        return None;
    }
    let driver = h.driver.as_ref().map(|d| d.version.as_str()).unwrap_or("");
    let (message, help) = if fm.installed.is_empty() {
        (
            "this machine has NVSwitches but NVIDIA Fabric Manager is not installed: CUDA fails to initialise \
             with 802 (system not yet initialized)"
                .to_string(),
            format!(
                "Install the Fabric Manager of the driver's exact version ({driver}): the \
                 `nvidia-fabricmanager-<branch>` package from NVIDIA's CUDA repository (Ubuntu: `sudo apt-get \
                 install nvidia-fabricmanager-<branch>`, the branch being the driver's first number), then `sudo \
                 systemctl enable --now nvidia-fabricmanager`. H100/H200 and later baseboards also need the NVLink \
                 Subnet Manager (`nvlsm`) it starts."
            ),
        )
    } else {
        (
            "this machine has NVSwitches and NVIDIA Fabric Manager is installed but not running: CUDA fails to \
             initialise with 802 (system not yet initialized)"
                .to_string(),
            format!(
                "Start it and see why it stopped: `sudo systemctl start nvidia-fabricmanager`, then `systemctl \
                 status nvidia-fabricmanager` and `/var/log/fabricmanager.log`. Its version must equal the \
                 driver's ({driver}); a mismatch makes it exit at start."
            ),
        )
    };
    let mut f = Finding::new(Code::FabricManagerNotRunning, message, help);
    for s in &fm.nvswitches {
        f = f.because(s.clone());
    }
    for i in &fm.installed {
        f = f.because(format!("{i} exists"));
    }
    Some(f.because(format!(
        "no nv-fabricmanager among the {} processes /proc shows",
        fm.processes_seen
    )))
}
