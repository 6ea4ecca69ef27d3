//! Rules on what the node runs beside the driver: the container toolkit, Fabric Manager on NVSwitch
//! baseboards, and the driver's own error reports in the kernel log. Each is a cause users meet as a pasted
//! message (`explain`) that the machine's files also show, so `doctor` and `inspect` name it before anything
//! runs. The facts are `host::container_toolkit`, `host::fabric` and `host::kernel_log`'s.

pub mod container_toolkit;
pub mod fabric;
pub mod xid;

use crate::facts::HostFacts;
use crate::findings::Finding;

/// Every finding of this module for the machine.
pub fn evaluate(h: &HostFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(container_toolkit::container_toolkit_missing(h));
    out.extend(fabric::fabric_manager_not_running(h));
    out.extend(xid::gpu_fallen_off_bus(h));
    out.extend(xid::gpu_xid_reported(h));
    out
}
