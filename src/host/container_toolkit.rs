//! The container engines installed on the machine, and the NVIDIA Container Toolkit that gives their
//! containers GPUs: what tells "`docker run --gpus all` cannot work here" before anyone runs it.
//!
//! Docker's `--gpus` asks for a device driver of the `gpu` capability; the daemon provides one only when the
//! toolkit's `nvidia-container-runtime-hook` is on its `PATH` (the error otherwise: `could not select device
//! driver "" with capabilities: [[gpu]]`). `--runtime=nvidia`, containerd and CRI-O need the toolkit's
//! `nvidia-container-runtime` registered in their configuration, which `nvidia-ctk runtime configure` writes;
//! Podman uses the CDI specification that `nvidia-ctk cdi generate` writes. All of them need the toolkit's
//! programs and `libnvidia-container.so.1` (NVIDIA Container Toolkit, "Installing the NVIDIA Container Toolkit"
//! and "Architecture Overview", docs.nvidia.com/datacenter/cloud-native/container-toolkit). The packages put
//! the programs in `/usr/bin` and the library in the distribution's library directory; the GPU Operator puts
//! them under `/usr/local/nvidia/toolkit`. Only file names are looked up and `daemon.json` read: nothing is
//! executed.

use crate::facts::host::container_toolkit::{ContainerToolkitFacts, Installed};
use crate::system::Root;
use crate::system::read::CONFIG_TEXT;
use std::path::Path;

/// Where the engines' and the toolkit's programs are installed by packages and by hand.
const BIN_DIRS: &[&str] = &[
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/usr/local/nvidia/toolkit",
];

/// Where `libnvidia-container.so.1` is installed (Debian's and Red Hat's layouts, the GPU Operator's).
const LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/toolkit",
];

/// The daemons of the container engines that run GPU containers.
const ENGINES: &[&str] = &["dockerd", "containerd", "podman", "crio"];

/// The toolkit's programs, today's and those of older releases (`nvidia-container-toolkit` was the hook's
/// name before 1.11).
const TOOLKIT: &[&str] = &[
    "nvidia-ctk",
    "nvidia-container-runtime-hook",
    "nvidia-container-toolkit",
    "nvidia-container-runtime",
    "nvidia-container-cli",
];

/// The engines and the toolkit; `None` when no container engine is installed (nothing to judge).
pub fn collect(root: &Root) -> Option<ContainerToolkitFacts> {
    let engines = find(root, BIN_DIRS, ENGINES);
    if engines.is_empty() {
        return None;
    }
    let mut toolkit = find(root, BIN_DIRS, TOOLKIT);
    toolkit.extend(find(root, LIB_DIRS, &["libnvidia-container.so.1"]));
    let docker_nvidia_runtime = root
        .read_to_string(Path::new("/etc/docker/daemon.json"), CONFIG_TEXT)
        .ok()
        .map(|t| names_nvidia_runtime(&t));
    Some(ContainerToolkitFacts {
        engines,
        toolkit,
        docker_nvidia_runtime,
        searched: BIN_DIRS.iter().chain(LIB_DIRS).map(|d| d.to_string()).collect(),
    })
}

/// The first copy of each name found in the directories, in their order. A name found in two directories
/// (`/usr/sbin` a link to `/usr/bin`) is listed once.
fn find(root: &Root, dirs: &[&str], names: &[&str]) -> Vec<Installed> {
    let mut out = Vec::new();
    for name in names {
        let hit = dirs
            .iter()
            .map(|d| format!("{d}/{name}"))
            .find(|p| root.is_file(Path::new(p)));
        if let Some(path) = hit {
            out.push(Installed {
                name: (*name).to_string(),
                path,
            });
        }
    }
    out
}

/// Whether docker's `daemon.json` declares a runtime named `nvidia` (`"runtimes": {"nvidia": {…}}`), as
/// `nvidia-ctk runtime configure --runtime=docker` writes it. A file that is not JSON declares nothing.
pub fn names_nvidia_runtime(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("runtimes")?.as_object().map(|r| r.contains_key("nvidia")))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_json_names_the_nvidia_runtime() {
        let configured = r#"{"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}"#;
        assert!(names_nvidia_runtime(configured));
        assert!(!names_nvidia_runtime(r#"{"log-driver": "json-file"}"#));
        assert!(!names_nvidia_runtime(r#"{"runtimes": {"runc": {}}}"#));
        assert!(!names_nvidia_runtime("not json {"));
    }
}
