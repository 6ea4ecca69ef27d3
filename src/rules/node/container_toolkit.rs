//! `container-toolkit-missing`: a container engine is installed on a machine with an NVIDIA GPU, and the
//! NVIDIA Container Toolkit is not, so `docker run --gpus all` fails with `could not select device driver ""
//! with capabilities: [[gpu]]` and `--runtime=nvidia` with `unknown or invalid runtime name: nvidia`.
//! Docs: `data/codes/container-toolkit-missing.md`.

use crate::facts::HostFacts;
use crate::findings::{Code, Finding};

/// The finding, when an engine is installed, a GPU shows, and none of the toolkit's files is where its
/// packages put them. Not judged inside a container (the toolkit belongs to the host that started it).
pub fn container_toolkit_missing(h: &HostFacts) -> Option<Finding> {
    if !h.observed || h.platform.container.is_some() || h.gpus.is_empty() {
        return None;
    }
    let ct = h.container_toolkit.as_ref()?;
    if ct.engines.is_empty() || !ct.toolkit.is_empty() {
        return None;
    }
    let engines: Vec<&str> = ct.engines.iter().map(|e| e.name.as_str()).collect();
    let mut f = Finding::new(
        Code::ContainerToolkitMissing,
        format!(
            "{} installed on a machine with an NVIDIA GPU, but the NVIDIA Container Toolkit is not: `docker run \
             --gpus all` fails with `could not select device driver \"\" with capabilities: [[gpu]]`",
            if engines.len() == 1 {
                format!("{} is", engines[0])
            } else {
                format!("{} are", engines.join(", "))
            }
        ),
        "Install the NVIDIA Container Toolkit from NVIDIA's repository (`sudo apt-get install -y \
         nvidia-container-toolkit`, or `dnf install nvidia-container-toolkit`), register its runtime (`sudo \
         nvidia-ctk runtime configure --runtime=docker`, or `--runtime=containerd` / `--runtime=crio`) and \
         restart the engine (`sudo systemctl restart docker`). Podman uses CDI: `sudo nvidia-ctk cdi generate \
         --output=/etc/cdi/nvidia.yaml`.",
    );
    for e in &ct.engines {
        f = f.because(format!("{} is installed: {}", e.name, e.path));
    }
    f = f.because(format!(
        "no nvidia-ctk, nvidia-container-runtime-hook, nvidia-container-runtime, nvidia-container-cli or \
         libnvidia-container.so.1 in {}",
        ct.searched.join(", ")
    ));
    if ct.docker_nvidia_runtime == Some(false) {
        f = f.because("/etc/docker/daemon.json declares no `nvidia` runtime");
    }
    Some(f.because(format!("{} NVIDIA GPU(s) on the machine", h.gpus.len())))
}
