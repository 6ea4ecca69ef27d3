//! `snapshot --format labels`: the node labels NVIDIA GPU feature discovery (GFD) would set, and the values of
//! conda's CUDA virtual packages, from the facts cudadiag read from files.
//!
//! The names, value formats and the architecture families follow GFD's source and documentation, and the conda
//! values follow conda's and CEP 46's; `docs/node-labels.md` lists each with its source. Only what the facts
//! know is written: a machine without a driver gets no driver labels, one without a GPU no GPU labels, and
//! labels GFD reads from NVML that files do not show (`gpu.memory`, `mig.capable` when no MIG instance is
//! configured) are left out rather than guessed.

use crate::facts::HostFacts;

/// GFD's architecture family of a compute capability (k8s-device-plugin `internal/lm/resource.go`,
/// `getArchFamily`); `None` where GFD writes `undefined`.
pub fn family(major: u32, minor: u32) -> Option<&'static str> {
    Some(match (major, minor) {
        (1, _) => "tesla",
        (2, _) => "fermi",
        (3, _) => "kepler",
        (5, _) => "maxwell",
        (6, _) => "pascal",
        (7, m) if m < 5 => "volta",
        (7, _) => "turing",
        (8, m) if m < 9 => "ampere",
        (8, _) => "ada-lovelace",
        (9, _) => "hopper",
        (10 | 12, _) => "blackwell",
        (13, _) => "rubin",
        _ => return None,
    })
}

/// A label value as Kubernetes accepts it (at most 63 characters of `[A-Za-z0-9._-]`, beginning and ending
/// with a letter or digit; kubernetes.io, "Labels and Selectors", "Syntax and character set"), made the way
/// GFD makes its product label: other characters dropped, runs of spaces become one `-`.
pub fn sanitise(value: &str) -> String {
    let kept: String = value
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ' '))
        .collect();
    let joined = kept.split_whitespace().collect::<Vec<_>>().join("-");
    let cut: String = joined.chars().take(63).collect();
    cut.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
}

/// `major.minor` of a version string (`12.4`, `9.0`), as numbers.
fn major_minor(v: &str) -> Option<(u32, u32)> {
    let mut it = v.trim().split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next().unwrap_or("0").parse().ok()?;
    Some((major, minor))
}

/// The labels and conda values `h` supports (enriched with the matrix: compute capabilities and the driver's
/// CUDA), sorted by key.
pub fn labels(h: &HostFacts) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| {
        let v = sanitise(&v);
        if !v.is_empty() {
            out.push((k.to_string(), v));
        }
    };
    if let Some(d) = &h.driver {
        let parts: Vec<&str> = d.version.trim().split('.').collect();
        if (2..=3).contains(&parts.len()) && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit())) {
            for (old, new, v) in [
                ("major", "major", parts.first()),
                ("minor", "minor", parts.get(1)),
                ("rev", "revision", parts.get(2)),
            ] {
                if let Some(v) = v {
                    put(&format!("nvidia.com/cuda.driver.{old}"), (*v).to_string());
                    put(&format!("nvidia.com/cuda.driver-version.{new}"), (*v).to_string());
                }
            }
            put(
                "nvidia.com/cuda.driver-version.full",
                d.version.trim().to_string(),
            );
        }
    }
    if let Some((major, minor)) = h.driver_cuda.as_deref().and_then(major_minor) {
        put("nvidia.com/cuda.runtime.major", major.to_string());
        put("nvidia.com/cuda.runtime.minor", minor.to_string());
        put("nvidia.com/cuda.runtime-version.major", major.to_string());
        put("nvidia.com/cuda.runtime-version.minor", minor.to_string());
        put("nvidia.com/cuda.runtime-version.full", format!("{major}.{minor}"));
        // conda's `__cuda`: the newest CUDA the driver supports, `major.minor` (conda docs, "Managing virtual
        // packages"); CONDA_OVERRIDE_CUDA sets it on a machine without the driver.
        put("CONDA_OVERRIDE_CUDA", format!("{major}.{minor}"));
    }
    if let Some(first) = h.gpus.first() {
        put("nvidia.com/gpu.count", h.gpus.len().to_string());
        put("nvidia.com/gpu.product", first.name.clone());
        if let Some((major, minor)) = first.cc.as_deref().and_then(major_minor) {
            put("nvidia.com/gpu.compute.major", major.to_string());
            put("nvidia.com/gpu.compute.minor", minor.to_string());
            if let Some(f) = family(major, minor) {
                put("nvidia.com/gpu.family", f.to_string());
            }
        }
        // `__cuda_arch` (CEP 46): the lowest compute capability of all devices, present only with `__cuda`.
        let ccs: Option<Vec<(u32, u32)>> = h
            .gpus
            .iter()
            .map(|g| g.cc.as_deref().and_then(major_minor))
            .collect();
        if let (Some(min), true) = (ccs.and_then(|c| c.into_iter().min()), h.driver_cuda.is_some()) {
            put("CONDA_OVERRIDE_CUDA_ARCH", format!("{}.{}", min.0, min.1));
        }
    }
    // MIG instances configured prove the GPU MIG-capable; their absence proves nothing (NVML would know).
    if !h.mig.is_empty() {
        put("nvidia.com/mig.capable", "true".to_string());
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{DriverFacts, GpuFacts};

    fn gpu(name: &str, cc: Option<&str>) -> GpuFacts {
        GpuFacts {
            name: name.into(),
            cc: cc.map(Into::into),
            ..GpuFacts::default()
        }
    }

    #[test]
    fn an_h200_node() {
        let h = HostFacts {
            driver: Some(DriverFacts {
                version: "580.159.04".into(),
                source: "/proc/driver/nvidia/version".into(),
            }),
            driver_cuda: Some("13.0".into()),
            gpus: vec![gpu("NVIDIA H200", Some("9.0")), gpu("NVIDIA H200", Some("9.0"))],
            ..HostFacts::default()
        };
        let got: Vec<String> = labels(&h).iter().map(|(k, v)| format!("{k}={v}")).collect();
        for want in [
            "CONDA_OVERRIDE_CUDA=13.0",
            "CONDA_OVERRIDE_CUDA_ARCH=9.0",
            "nvidia.com/cuda.driver.major=580",
            "nvidia.com/cuda.driver.rev=04",
            "nvidia.com/cuda.driver-version.full=580.159.04",
            "nvidia.com/cuda.runtime.major=13",
            "nvidia.com/cuda.runtime.minor=0",
            "nvidia.com/gpu.compute.major=9",
            "nvidia.com/gpu.count=2",
            "nvidia.com/gpu.family=hopper",
            "nvidia.com/gpu.product=NVIDIA-H200",
        ] {
            assert!(got.contains(&want.to_string()), "{want} not in {got:?}");
        }
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(got, sorted);
        assert!(
            !got.iter()
                .any(|l| l.starts_with("nvidia.com/mig.") || l.contains("memory"))
        );
    }

    #[test]
    fn no_gpu_no_gpu_labels_and_unknown_cc_no_arch() {
        assert!(labels(&HostFacts::default()).is_empty());
        let h = HostFacts {
            driver_cuda: Some("12.4".into()),
            gpus: vec![gpu("NVIDIA H100", Some("9.0")), gpu("Mystery GPU", None)],
            ..HostFacts::default()
        };
        let keys: Vec<String> = labels(&h).into_iter().map(|(k, _)| k).collect();
        assert!(!keys.contains(&"CONDA_OVERRIDE_CUDA_ARCH".to_string()));
        assert!(keys.contains(&"CONDA_OVERRIDE_CUDA".to_string()));
    }

    #[test]
    fn values_are_label_syntax() {
        assert_eq!(
            sanitise("NVIDIA GeForce RTX 4090 (rev a1)"),
            "NVIDIA-GeForce-RTX-4090-rev-a1"
        );
        assert_eq!(sanitise("-x-"), "x");
        assert_eq!(sanitise(&"a".repeat(80)).len(), 63);
        assert_eq!(family(8, 9), Some("ada-lovelace"));
        assert_eq!(family(11, 0), None);
    }
}
