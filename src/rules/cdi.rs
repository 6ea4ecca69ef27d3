//! `cdi-spec-stale`: a CDI spec of the NVIDIA Container Toolkit mounts driver libraries of another version than
//! the loaded kernel module (`host::cdi`; `docs/cdi.md`). Containers started through it (`--device
//! nvidia.com/gpu=all`, Kubernetes with CDI enabled) get those libraries: NVML's "Driver/library version
//! mismatch", CUDA error 803, or a container that does not start because the named files are gone.

use crate::facts::HostFacts;
use crate::findings::{Code, Finding};

/// One finding per spec whose libraries carry driver versions and none of them the loaded module's.
pub fn cdi_spec_stale(h: &HostFacts) -> Vec<Finding> {
    let Some(d) = &h.driver else {
        return Vec::new();
    };
    h.cdi
        .iter()
        .filter(|s| !s.driver_versions.is_empty() && !s.driver_versions.contains(&d.version))
        .map(|s| {
            let mut f = Finding::new(
                Code::CdiSpecStale,
                format!(
                    "CDI spec {} mounts driver {} libraries, but the loaded kernel module is {}: containers \
                     started with it get another driver's libraries (Driver/library version mismatch, CUDA \
                     error 803, or files that no longer exist)",
                    s.path,
                    s.driver_versions.join(", "),
                    d.version
                ),
                format!(
                    "Regenerate the spec for the installed driver: `sudo nvidia-ctk cdi generate --output={}` \
                     (with NVIDIA Container Toolkit 1.18 or later, `sudo systemctl restart nvidia-cdi-refresh` \
                     rewrites /var/run/cdi/nvidia.yaml), then restart the containers.",
                    s.path
                ),
            )
            .because(format!("{} shows kernel module {}", d.source, d.version));
            for l in &s.libraries {
                f = f.because(format!("{} mounts {l}", s.path));
            }
            f
        })
        .collect()
}
