//! The container engines installed on the machine and the NVIDIA Container Toolkit beside them
//! (`host::container_toolkit`).

use serde::{Deserialize, Serialize};

/// What the machine has for running GPU containers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerToolkitFacts {
    /// The container engines whose programs are installed (`dockerd`, `containerd`, `podman`, `crio`), each
    /// with the path it was found at.
    pub engines: Vec<Installed>,
    /// The files of the NVIDIA Container Toolkit found: its programs (`nvidia-ctk`,
    /// `nvidia-container-runtime-hook`, `nvidia-container-runtime`, `nvidia-container-cli`) and
    /// `libnvidia-container.so.1`. Empty: the toolkit is not installed where its packages put it.
    pub toolkit: Vec<Installed>,
    /// Whether `/etc/docker/daemon.json` names a runtime `nvidia` (`None`: no such file was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker_nvidia_runtime: Option<bool>,
    /// The directories searched, so that a report can say where the toolkit was not.
    pub searched: Vec<String>,
}

/// One program or library found on the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    /// Its name (`dockerd`, `nvidia-ctk`).
    pub name: String,
    /// Where it was found, as a machine path.
    pub path: String,
}
