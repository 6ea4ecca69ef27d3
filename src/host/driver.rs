//! The kernel driver and the platform around it, from procfs and a few marker files.
//!
//! Sources:
//! - `/proc/driver/nvidia/version`: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  …" for the
//!   proprietary module and "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  …" for the
//!   open one (NVIDIA/open-gpu-kernel-modules prints the flavour in that line). procfs shows it inside a
//!   container even when the container got no GPU (`docs/compatibility.md`, "Failures on the host").
//! - `/sys/module/nvidia/version`: the same version from sysfs.
//! - `/proc/modules` (or `/sys/module/<name>` when procfs lists no modules): `nvidia_uvm` missing makes
//!   `cuInit` fail with 999 while `nvidia-smi` works; `nouveau` holding the GPU keeps `nvidia` from binding
//!   (peers.md items 11 and 12).
//! - WSL2: `/dev/dxg` and `/usr/lib/wsl/lib` (microsoft/WSL#5548, #5663).
//! - Containers: `/.dockerenv` (Docker), `/run/.containerenv` (Podman), `/proc/1/cgroup`, and the
//!   `NVIDIA_REQUIRE_CUDA` constraint the NVIDIA container runtime enforces (`docs/compatibility.md`,
//!   "Forward compatibility: 803 and 804").
//! - Jetson: `/etc/nv_tegra_release` ("# R36 (release), REVISION: 4.0, …").

use crate::facts::DriverFacts;
use crate::facts::host::{Condition, ContainerFacts, Flavour, KernelFacts, PlatformFacts, WslFacts};
use crate::system::{Env, Root, read};
use std::path::Path;

/// Where procfs states the loaded module's version.
pub const PROC_VERSION: &str = "/proc/driver/nvidia/version";

/// Modules cudadiag reports on.
const MODULES: &[&str] = &["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nouveau"];

/// Parses the NVRM line: the version and the flavour.
pub fn parse_nvrm(text: &str) -> Option<(String, Flavour, String)> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    let flavour = if line.contains("Open Kernel Module") {
        Flavour::Open
    } else {
        Flavour::Proprietary
    };
    let after = line.split("Kernel Module").nth(1)?;
    let version = after
        .split_whitespace()
        .find(|w| is_driver_version(w))?
        .to_string();
    Some((version, flavour, line.trim().to_string()))
}

/// A Linux driver version: two or three dot-separated numbers, the first of at least three digits
/// (`550.90.07`, `570.26`).
pub fn is_driver_version(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && parts[0].len() >= 3
}

/// Reads the driver version and the kernel facts.
pub fn kernel(root: &Root) -> (Option<DriverFacts>, KernelFacts) {
    let mut k = KernelFacts::default();
    let mut driver = None;
    match root.read_to_string(Path::new(PROC_VERSION), read::KERNEL_TEXT) {
        Ok(text) => {
            if let Some((version, flavour, line)) = parse_nvrm(&text) {
                driver = Some(DriverFacts {
                    version,
                    source: PROC_VERSION.to_string(),
                });
                k.flavour = Some(flavour);
                k.nvrm_line = Some(line);
            }
        }
        // Absent is the ordinary "no driver loaded"; anything else (a device, a FIFO, 8 GiB, permission
        // denied) is said as what it is.
        Err(e) if e.is_not_found() => {}
        Err(e) => k.version_unreadable = Some(e.to_string()),
    }
    if let Ok(v) = root.read_to_string(Path::new("/sys/module/nvidia/version"), read::KERNEL_TEXT) {
        let v = v.trim();
        if !v.is_empty() {
            k.sys_module_version = Some(v.to_string());
        }
    }
    if let Ok(text) = root.read_to_string(Path::new("/proc/modules"), read::KERNEL_TEXT) {
        k.modules_source = Some("/proc/modules".to_string());
        for line in text.lines() {
            if let Some(name) = line.split_whitespace().next()
                && MODULES.contains(&name)
            {
                k.modules.push(name.to_string());
            }
        }
    } else if root.exists(Path::new("/sys/module")) {
        k.modules_source = Some("/sys/module".to_string());
        for m in MODULES {
            if root.exists(&Path::new("/sys/module").join(m)) {
                k.modules.push((*m).to_string());
            }
        }
    }
    (driver, k)
}

/// Reads the platform: WSL2, container, Jetson, `NVIDIA_REQUIRE_CUDA`.
pub fn platform(root: &Root, env: &Env) -> PlatformFacts {
    let mut p = PlatformFacts::default();
    let dxg = root.exists(Path::new("/dev/dxg"));
    let lib_dir = root.exists(Path::new("/usr/lib/wsl/lib"));
    if dxg || lib_dir {
        p.wsl = Some(WslFacts { dxg, lib_dir });
    }
    let mut evidence = Vec::new();
    let mut engine = None;
    if root.exists(Path::new("/.dockerenv")) {
        evidence.push("/.dockerenv exists".to_string());
        engine = Some("docker");
    }
    if root.exists(Path::new("/run/.containerenv")) {
        evidence.push("/run/.containerenv exists".to_string());
        engine = engine.or(Some("podman"));
    }
    if let Ok(cg) = root.read_to_string(Path::new("/proc/1/cgroup"), read::KERNEL_TEXT) {
        for (needle, name) in [
            ("kubepods", "kubernetes"),
            ("docker", "docker"),
            ("libpod", "podman"),
            ("containerd", "containerd"),
            ("lxc", "lxc"),
        ] {
            if cg.contains(needle) {
                evidence.push(format!("/proc/1/cgroup mentions {needle}"));
                engine = engine.or(Some(name));
                break;
            }
        }
    }
    if env.get("container").is_some() {
        evidence.push(format!(
            "container={} is set",
            env.get("container").unwrap_or_default()
        ));
    }
    if !evidence.is_empty() {
        p.container = Some(ContainerFacts {
            engine: engine.unwrap_or("unknown").to_string(),
            evidence,
        });
    }
    if let Ok(t) = root.read_to_string(Path::new("/etc/nv_tegra_release"), read::CONFIG_TEXT) {
        p.jetson = t.lines().next().map(|l| l.trim().to_string());
    }
    p.tegra = super::jetson::collect(root);
    if let Some(req) = env.get("NVIDIA_REQUIRE_CUDA") {
        p.require_cuda = parse_require(req);
    }
    p
}

/// Parses `NVIDIA_REQUIRE_CUDA` (`cuda>=12.8 brand=tesla,driver>=470,driver<471 …`).
pub fn parse_require(s: &str) -> Vec<Vec<Condition>> {
    s.split_whitespace()
        .map(|req| {
            req.split(',')
                .filter_map(|c| {
                    let at = c.find(['<', '>', '=', '!'])?;
                    let (key, rest) = c.split_at(at);
                    let op_len = rest
                        .bytes()
                        .take_while(|b| matches!(b, b'<' | b'>' | b'=' | b'!'))
                        .count();
                    let (op, value) = rest.split_at(op_len);
                    Some(Condition {
                        key: key.to_string(),
                        op: op.to_string(),
                        value: value.to_string(),
                    })
                })
                .collect::<Vec<_>>()
        })
        .filter(|r| !r.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvrm_lines_of_both_flavours() {
        let closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024\n\
                      GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n";
        let (v, f, _) = parse_nvrm(closed).unwrap();
        assert_eq!((v.as_str(), f), ("550.54.14", Flavour::Proprietary));
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  \
                    (dvs-builder@U16-I3-B03-4-3)  Tue Jul 15 22:38:39 UTC 2025\n";
        let (v, f, _) = parse_nvrm(open).unwrap();
        assert_eq!((v.as_str(), f), ("580.65.06", Flavour::Open));
        // As the open module built by Nix prints it (seen on an H200 host).
        let nix = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n\
                   GCC version:  gcc version 15.3.0 (GCC) \n";
        let (v, f, _) = parse_nvrm(nix).unwrap();
        assert_eq!((v.as_str(), f), ("580.159.04", Flavour::Open));
        assert!(parse_nvrm("garbage").is_none());
        assert!(parse_nvrm("NVRM version: NVIDIA UNIX x86_64 Kernel Module  \n").is_none());
    }

    #[test]
    fn driver_versions() {
        assert!(is_driver_version("550.90.07"));
        assert!(is_driver_version("570.26"));
        assert!(!is_driver_version("1.1"));
        assert!(!is_driver_version("12.4.127.5"));
        assert!(!is_driver_version("550.x"));
    }

    #[test]
    fn require_cuda_parses() {
        let r = parse_require("cuda>=12.8 brand=tesla,driver>=470,driver<471");
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0][0],
            Condition {
                key: "cuda".into(),
                op: ">=".into(),
                value: "12.8".into()
            }
        );
        assert_eq!(r[1].len(), 3);
        assert_eq!(r[1][2].op, "<");
        assert_eq!(r[1][2].value, "471");
    }
}
