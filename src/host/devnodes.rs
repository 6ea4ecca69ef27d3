//! Device nodes and the identity that opens them.
//!
//! CUDA opens `/dev/nvidiactl`, `/dev/nvidia<minor>` and `/dev/nvidia-uvm` read-write at `cuInit`; a missing
//! node gives error 100 (no device) or, for `nvidia-uvm`, 999 (`docs/compatibility.md`, "Failures on the
//! host"). In a container the nodes are cgroup-gated and bind-mounted by the NVIDIA runtime, so "procfs shows
//! the driver but there is no `/dev/nvidia0`" means the runtime was not applied.
//!
//! The identity is read from `/proc/self/status` (`Uid:`, `Gid:`, `Groups:`, proc(5)) through the root, never
//! from libc: on the live machine that is cudadiag's own process, under `--root` it is whatever the tree holds
//! (usually nothing, and then permissions are not judged).

use crate::facts::host::{DeviceNode, Identity};
use crate::system::Root;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// Every `/dev/nvidia*` node, `/dev/nvidia-caps/*` excluded, plus `/dev/dxg`.
pub fn nodes(root: &Root, problems: &mut Vec<String>) -> Vec<DeviceNode> {
    let entries = match root.read_dir(Path::new("/dev")) {
        Ok(e) => e,
        Err(e) => {
            if root.is_host() || root.exists(Path::new("/dev")) {
                problems.push(format!("/dev: {e}"));
            }
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for p in entries {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !(name.starts_with("nvidia") || name == "dxg") {
            continue;
        }
        match root.metadata(&p) {
            Ok(m) if !m.is_dir() => out.push(DeviceNode {
                path: p.display().to_string(),
                char_device: m.file_type().is_char_device(),
                mode: m.mode() & 0o7777,
                uid: m.uid(),
                gid: m.gid(),
            }),
            Ok(_) => {}
            Err(e) => problems.push(format!("{}: {e}", p.display())),
        }
    }
    out
}

/// Parses `/proc/self/status` for the effective uid, gid and the supplementary groups.
pub fn parse_status(text: &str, source: &str) -> Option<Identity> {
    let ids = |key: &str| -> Option<Vec<u32>> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        line[key.len()..]
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect()
    };
    let uid = *ids("Uid:")?.get(1)?;
    let gid = *ids("Gid:")?.get(1)?;
    Some(Identity {
        uid,
        gid,
        groups: ids("Groups:").unwrap_or_default(),
        source: source.to_string(),
    })
}

/// The identity of the process, from `/proc/self/status` under the root.
pub fn identity(root: &Root) -> Option<Identity> {
    let path = "/proc/self/status";
    parse_status(
        &root
            .read_to_string(Path::new(path), crate::system::read::KERNEL_TEXT)
            .ok()?,
        path,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        let s = "Name:\tcat\nUid:\t1000\t1001\t1001\t1001\nGid:\t100\t44\t44\t44\nGroups:\t4 24 44 \n";
        let id = parse_status(s, "x").unwrap();
        assert_eq!((id.uid, id.gid, id.groups), (1001, 44, vec![4, 24, 44]));
        assert!(parse_status("Name:\tcat\n", "x").is_none());
    }
}
