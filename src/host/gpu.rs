//! GPUs, from the driver's procfs and from the PCI bus.
//!
//! Sources:
//! - `/proc/driver/nvidia/gpus/<bus>/information`: `Model:`, `GPU UUID:`, `Bus Location:` lines, written by
//!   the NVIDIA kernel module (NVIDIA/open-gpu-kernel-modules, `kernel-open/nvidia/nv-procfs.c`).
//! - `/sys/bus/pci/devices/<bus>/{vendor,class,device}`: every NVIDIA (vendor `0x10de`) display controller
//!   (class `0x03xxxx`), driver loaded or not; the device id keys the matrix (`docs/compatibility.md`,
//!   "Where the matrix rows come from": pci.ids).
//! - `/proc/driver/nvidia/capabilities/gpu<N>/mig/gi<M>`: the MIG GPU instances the driver exposes.
//!
//! Compute capability is not in any of these files. It comes from the compatibility matrix by name or PCI id;
//! [`assign_cc`] is the hook that fills it.

use crate::facts::GpuFacts;
use crate::facts::host::PciBus;
use crate::system::Root;
use std::path::Path;

const PROC_GPUS: &str = "/proc/driver/nvidia/gpus";
const PCI_DEVICES: &str = "/sys/bus/pci/devices";
const NVIDIA_VENDOR: u16 = 0x10de;

fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim()).filter(|v| !v.is_empty())
    })
}

fn hex_file(root: &Root, path: &Path) -> Option<u32> {
    let t = root.read_to_string(path, crate::system::read::KERNEL_TEXT).ok()?;
    u32::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok()
}

/// Parses one `information` file.
pub fn parse_information(text: &str, source: &str) -> Option<GpuFacts> {
    Some(GpuFacts {
        name: field(text, "Model")?.to_string(),
        cc: None,
        pci_device_id: None,
        uuid: field(text, "GPU UUID").map(str::to_string),
        bus_id: field(text, "Bus Location").map(|b| b.to_ascii_lowercase()),
        source: source.to_string(),
    })
}

/// Every NVIDIA GPU the driver lists, completed (and, where the driver is absent, supplied) from the PCI bus,
/// and whether the bus could be read at all.
pub fn gpus(root: &Root, problems: &mut Vec<String>) -> (Vec<GpuFacts>, PciBus) {
    let mut out: Vec<GpuFacts> = Vec::new();
    if let Ok(dirs) = root.read_dir(Path::new(PROC_GPUS)) {
        for d in dirs {
            let info = d.join("information");
            match root.read_to_string(&info, crate::system::read::KERNEL_TEXT) {
                Ok(text) => match parse_information(&text, &info.display().to_string()) {
                    Some(g) => out.push(g),
                    None => problems.push(format!("{}: no Model line", info.display())),
                },
                Err(e) => problems.push(format!("{}: {e}", info.display())),
            }
        }
    }
    let devices = match root.read_dir(Path::new(PCI_DEVICES)) {
        Ok(devices) => devices,
        Err(e) => {
            let reason = if e.kind() == std::io::ErrorKind::NotFound {
                format!("{PCI_DEVICES} does not exist")
            } else {
                format!("{PCI_DEVICES}: {e}")
            };
            return (out, PciBus::Unreadable { reason });
        }
    };
    let bus = PciBus::Read {
        devices: devices.len(),
    };
    for d in devices {
        if hex_file(root, &d.join("vendor")) != Some(u32::from(NVIDIA_VENDOR)) {
            continue;
        }
        let Some(class) = hex_file(root, &d.join("class")) else {
            continue;
        };
        if class >> 16 != 0x03 {
            continue; // audio functions, NVSwitch bridges
        }
        let Some(device) = hex_file(root, &d.join("device")).and_then(|v| u16::try_from(v).ok()) else {
            continue;
        };
        let bus = d
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if let Some(g) = out.iter_mut().find(|g| g.bus_id.as_deref() == Some(&bus)) {
            g.pci_device_id = Some(device);
        } else {
            out.push(GpuFacts {
                name: format!("NVIDIA GPU [10de:{device:04x}]"),
                cc: None,
                pci_device_id: Some(device),
                uuid: None,
                bus_id: Some(bus),
                source: d.display().to_string(),
            });
        }
    }
    (out, bus)
}

/// MIG GPU instances: `gpuN/mig/giM` under the driver's capabilities directory.
pub fn mig(root: &Root) -> Vec<String> {
    let base = Path::new("/proc/driver/nvidia/capabilities");
    let mut out = Vec::new();
    for gpu in root.read_dir(base).unwrap_or_default() {
        for gi in root.read_dir(&gpu.join("mig")).unwrap_or_default() {
            if gi
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("gi"))
            {
                out.push(gi.display().to_string());
            }
        }
    }
    out
}

/// Fills each GPU's compute capability from `lookup(name, pci_device_id)`, where it is not known yet. The
/// compatibility matrix provides `lookup`; with no matrix, pass a function returning `None`.
pub fn assign_cc(gpus: &mut [GpuFacts], lookup: impl Fn(&str, Option<u16>) -> Option<String>) {
    for g in gpus.iter_mut().filter(|g| g.cc.is_none()) {
        g.cc = lookup(&g.name, g.pci_device_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn information_file() {
        let text = "Model: \t\t NVIDIA H200\nIRQ:   \t\t 123\nGPU UUID: \t GPU-b4a13011-1c9e-7c5a-7f8e-0123456789ab\n\
                    Bus Location: \t 0000:19:00.0\nDevice Minor: \t 0\n";
        let g = parse_information(text, "x").unwrap();
        assert_eq!(g.name, "NVIDIA H200");
        assert_eq!(
            g.uuid.as_deref(),
            Some("GPU-b4a13011-1c9e-7c5a-7f8e-0123456789ab")
        );
        assert_eq!(g.bus_id.as_deref(), Some("0000:19:00.0"));
        assert!(parse_information("IRQ: 1\n", "x").is_none());
    }

    #[test]
    fn cc_hook_fills_only_unknown_ones() {
        let mut gpus = vec![
            GpuFacts {
                name: "NVIDIA H200".into(),
                pci_device_id: Some(0x2335),
                ..GpuFacts::default()
            },
            GpuFacts {
                name: "given".into(),
                cc: Some("8.6".into()),
                ..GpuFacts::default()
            },
        ];
        assign_cc(&mut gpus, |name, id| {
            (name == "NVIDIA H200" && id == Some(0x2335)).then(|| "9.0".to_string())
        });
        assert_eq!(gpus[0].cc.as_deref(), Some("9.0"));
        assert_eq!(gpus[1].cc.as_deref(), Some("8.6"));
    }
}
