//! Jetson boards: the Jetson Linux (L4T) release, the SoC and its integrated GPU, and the `nvgpu` driver.
//!
//! A Jetson's GPU is not a PCI device and, up to Jetson Linux R36 (Orin), its driver is `nvgpu`, not
//! `nvidia.ko`: there is no `/proc/driver/nvidia`, no `/dev/nvidia*`, and the CUDA driver (`libcuda.so`) comes
//! with Jetson Linux itself. So what elsewhere comes from procfs and the PCI bus comes here from:
//! - `/etc/nv_tegra_release`: `# R36 (release), REVISION: 4.3, GCID: …, BOARD: generic, EABI: aarch64, …`
//!   (release 36.4.3); the release decides the CUDA version of the driver (`[[jetpack]]` of the matrix).
//! - the device tree (`/proc/device-tree/compatible`, or `/sys/firmware/devicetree/base/compatible`): a
//!   NUL-separated list ending with the SoC, `nvidia,tegra234`; `model` names the board. The SoC gives the
//!   GPU's compute capability (`[[tegra_soc]]`).
//! - `/proc/modules` (or `/sys/module/nvgpu`): whether `nvgpu` is loaded.
//! - `/dev/nvmap` and `/dev/nvhost-ctrl-gpu`: the memory allocator and the GPU control node libcuda opens on
//!   nvgpu (the NVIDIA container runtime's Jetson CSV files mount them into containers).
//!
//! Facts in `docs/jetson.md`.

use crate::facts::host::TegraFacts;
use crate::system::{Root, read};
use std::path::Path;

/// The device-tree files, live procfs first.
const COMPATIBLE: [&str; 2] = [
    "/proc/device-tree/compatible",
    "/sys/firmware/devicetree/base/compatible",
];

pub use crate::facts::host::NVGPU_NODES;

/// Reads the Jetson facts, `None` when the root is no Jetson (no `/etc/nv_tegra_release` and no Tegra SoC in
/// the device tree).
pub fn collect(root: &Root) -> Option<TegraFacts> {
    let release_line = root
        .read_to_string(Path::new("/etc/nv_tegra_release"), read::CONFIG_TEXT)
        .ok()
        .and_then(|t| t.lines().next().map(|l| l.trim().to_string()));
    let mut soc = None;
    let mut soc_source = None;
    for path in COMPATIBLE {
        if let Ok(bytes) = root.read(Path::new(path), read::KERNEL_TEXT)
            && let Some(s) = soc_of(&bytes)
        {
            soc = Some(s);
            soc_source = Some(path.to_string());
            break;
        }
    }
    if release_line.is_none() && soc.is_none() {
        return None;
    }
    let model = ["/proc/device-tree/model", "/sys/firmware/devicetree/base/model"]
        .iter()
        .find_map(|p| root.read(Path::new(p), read::KERNEL_TEXT).ok())
        .map(|b| {
            String::from_utf8_lossy(&b)
                .trim_end_matches('\0')
                .trim()
                .to_string()
        })
        .filter(|m| !m.is_empty());
    Some(TegraFacts {
        l4t: release_line.as_deref().and_then(parse_release),
        release_line,
        soc,
        soc_source,
        model,
        nvgpu: nvgpu_loaded(root),
        nodes: NVGPU_NODES
            .iter()
            .filter(|n| root.exists(Path::new(n)))
            .map(|n| n.to_string())
            .collect(),
    })
}

/// `36.4.3` from `# R36 (release), REVISION: 4.3, …`.
pub fn parse_release(line: &str) -> Option<String> {
    let rest = line.trim_start_matches('#').trim_start();
    let major = rest
        .strip_prefix('R')?
        .split(|c: char| !c.is_ascii_digit())
        .next()?;
    if major.is_empty() {
        return None;
    }
    let revision = rest.split("REVISION:").nth(1)?.split(',').next()?.trim();
    let ok = !revision.is_empty()
        && revision
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    ok.then(|| format!("{major}.{revision}"))
}

/// The Tegra SoC among the device tree's `compatible` strings (`nvidia,tegra234` → `tegra234`).
pub fn soc_of(compatible: &[u8]) -> Option<String> {
    compatible
        .split(|&b| b == 0)
        .filter_map(|s| std::str::from_utf8(s).ok())
        .filter_map(|s| s.strip_prefix("nvidia,tegra"))
        .find(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .map(|n| format!("tegra{n}"))
}

/// Whether `nvgpu` is loaded: `Some(true|false)` from `/proc/modules` (or `/sys/module`), `None` when neither
/// can be read (an image, not a running machine).
fn nvgpu_loaded(root: &Root) -> Option<bool> {
    if let Ok(text) = root.read_to_string(Path::new("/proc/modules"), read::KERNEL_TEXT) {
        return Some(text.lines().any(|l| l.split_whitespace().next() == Some("nvgpu")));
    }
    if root.exists(Path::new("/sys/module/nvgpu")) {
        return Some(true);
    }
    root.exists(Path::new("/sys/module")).then_some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_lines_of_each_jetson_linux() {
        let r = |l: &str| parse_release(l);
        assert_eq!(
            r(
                "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025"
            ),
            Some("36.4.3".into())
        );
        assert_eq!(
            r(
                "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: Tue Aug  1 19:57:35 UTC 2023"
            ),
            Some("35.4.1".into())
        );
        assert_eq!(
            r("# R32 (release), REVISION: 7.1, GCID: 29818004, BOARD: t210ref"),
            Some("32.7.1".into())
        );
        assert_eq!(r("R36 without a revision"), None);
        assert_eq!(r("# R (release), REVISION: 4.0"), None);
        assert_eq!(r("# R36 (release), REVISION: x.0,"), None);
    }

    #[test]
    fn the_soc_is_the_tegra_compatible() {
        assert_eq!(
            soc_of(b"nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0"),
            Some("tegra234".into())
        );
        assert_eq!(
            soc_of(b"nvidia,p3509-0000+p3668-0001\0nvidia,tegra194\0"),
            Some("tegra194".into())
        );
        assert_eq!(soc_of(b"raspberrypi,4-model-b\0brcm,bcm2711\0"), None);
        assert_eq!(soc_of(b"nvidia,tegra\0nvidia,tegra-x\0"), None);
    }
}
