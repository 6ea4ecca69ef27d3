//! Caps on the lists of a snapshot that grow with the machine, so that a node's snapshot stays a few hundred
//! KiB whatever the node holds.
//!
//! Only lists whose length the machine decides are capped: the library catalogue (one entry per CUDA library
//! file on disk: a machine with a hundred conda environments has thousands), the problems met while reading,
//! the `nvcc`s on `PATH`, the CDI specs, the device nodes, the MIG instances, the `libcuda.so.1` and
//! `libnvidia-ml.so.1` candidates and the driver library files read. The caps sit far above what
//! a real node shows, so the findings of a capped
//! snapshot are the machine's; where a list was cut, [`Truncation`] says by how much, and the snapshot's
//! `truncated` section carries it ("and N more").

use crate::facts::HostFacts;
use serde::{Deserialize, Serialize};

/// `host.libraries`: catalogue entries kept.
pub const LIBRARIES: usize = 4096;
/// `host.problems`: collection problems kept.
pub const PROBLEMS: usize = 256;
/// `host.driver_files`: driver library files kept (a driver directory holds about forty; collection caps each
/// directory at 256, this caps the directories together).
pub const DRIVER_FILES: usize = 1024;
/// `host.env.nvcc`, `host.cdi`, `host.device_nodes`, `host.mig`, `host.libcuda`, `host.nvml`: entries kept of
/// each (the loader takes the first candidate; the rest are what it would fall back to).
pub const SMALL_LISTS: usize = 256;

/// A list that was cut: `list` kept its first `kept` entries, `more` were left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truncation {
    /// Where the list is (`host.libraries`).
    pub list: String,
    /// Entries kept (the cap).
    pub kept: usize,
    /// Entries left out: "and N more".
    pub more: usize,
}

/// Cuts every capped list of `h` to its cap and says what was cut.
pub fn bound(h: &mut HostFacts) -> Vec<Truncation> {
    let mut cut = Vec::new();
    cap(&mut h.libraries, LIBRARIES, "host.libraries", &mut cut);
    cap(&mut h.problems, PROBLEMS, "host.problems", &mut cut);
    cap(&mut h.env.nvcc, SMALL_LISTS, "host.env.nvcc", &mut cut);
    cap(&mut h.cdi, SMALL_LISTS, "host.cdi", &mut cut);
    if h.device_nodes.len() > SMALL_LISTS {
        // The control, UVM and modeset nodes decide findings; a tree with hundreds of `/dev/nvidiaN` loses
        // numbered ones first (a stable sort: their order is kept).
        h.device_nodes.sort_by_key(|n| numbered(&n.path));
    }
    cap(&mut h.device_nodes, SMALL_LISTS, "host.device_nodes", &mut cut);
    cap(&mut h.mig, SMALL_LISTS, "host.mig", &mut cut);
    cap(&mut h.libcuda, SMALL_LISTS, "host.libcuda", &mut cut);
    cap(&mut h.nvml, SMALL_LISTS, "host.nvml", &mut cut);
    cap(&mut h.driver_files, DRIVER_FILES, "host.driver_files", &mut cut);
    cut
}

/// `/dev/nvidiaN`: a per-GPU node, as opposed to `/dev/nvidiactl`, `/dev/nvidia-uvm`, `/dev/dxg`.
fn numbered(path: &str) -> bool {
    path.strip_prefix("/dev/nvidia")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn cap<T>(list: &mut Vec<T>, max: usize, name: &str, cut: &mut Vec<Truncation>) {
    if list.len() > max {
        cut.push(Truncation {
            list: name.to_string(),
            kept: max,
            more: list.len() - max,
        });
        list.truncate(max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_only_what_is_over_the_cap() {
        let mut h = HostFacts {
            problems: (0..PROBLEMS + 3).map(|i| i.to_string()).collect(),
            mig: vec!["gpu0/gi1".into()],
            ..HostFacts::default()
        };
        let cut = bound(&mut h);
        assert_eq!(
            cut,
            [Truncation {
                list: "host.problems".into(),
                kept: PROBLEMS,
                more: 3
            }]
        );
        assert_eq!(h.problems.len(), PROBLEMS);
        assert_eq!(h.mig.len(), 1);
    }

    #[test]
    fn numbered_device_nodes_go_first() {
        use crate::facts::host::DeviceNode;
        let node = |p: String| DeviceNode {
            path: p,
            ..DeviceNode::default()
        };
        let mut h = HostFacts {
            device_nodes: (0..SMALL_LISTS + 10)
                .map(|i| node(format!("/dev/nvidia{i}")))
                .chain(["/dev/nvidiactl", "/dev/nvidia-uvm"].map(|p| node(p.into())))
                .collect(),
            ..HostFacts::default()
        };
        let cut = bound(&mut h);
        assert_eq!(cut[0].more, 12);
        assert_eq!(h.device_nodes[0].path, "/dev/nvidiactl");
        assert_eq!(h.device_nodes[1].path, "/dev/nvidia-uvm");
        assert_eq!(h.device_nodes[2].path, "/dev/nvidia0");
    }
}
