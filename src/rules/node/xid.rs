//! `gpu-fallen-off-bus` and `gpu-xid-reported`: the NVIDIA driver's Xid reports in the kernel log since the
//! last boot. Xid 79 means the GPU is gone from the PCIe bus until the machine is reset; the others are read
//! with NVIDIA's catalogue ("Xid Errors" and "Analyzing Xid Errors with the Xid Catalog",
//! docs.nvidia.com/deploy/xid-errors), whose meaning of a number does not change between driver versions.
//! Docs: `data/codes/gpu-fallen-off-bus.md`, `data/codes/gpu-xid-reported.md`.

use crate::facts::HostFacts;
use crate::facts::host::kernel_log::{KernelLogFacts, XidReport};
use crate::findings::{Code, Finding, count};

/// What an Xid says, and whose it usually is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidMeaning {
    /// The Xid number.
    pub xid: u32,
    /// Its description in NVIDIA's catalogue.
    pub description: &'static str,
    /// Whether NVIDIA's guidance points at the application first (a bad address, a killed process) rather
    /// than at the GPU, its memory or its links.
    pub application: bool,
}

/// The Xids a CUDA user meets, with their catalogue descriptions (NVIDIA, "Xid Errors", the Xid table; and
/// the Xid catalogue for Ampere and newer GPUs).
pub const MEANINGS: &[XidMeaning] = &[
    XidMeaning {
        xid: 8,
        description: "GPU stopped processing",
        application: true,
    },
    XidMeaning {
        xid: 13,
        description: "Graphics Engine Exception",
        application: true,
    },
    XidMeaning {
        xid: 31,
        description: "GPU memory page fault",
        application: true,
    },
    XidMeaning {
        xid: 32,
        description: "Invalid or corrupted push buffer stream",
        application: false,
    },
    XidMeaning {
        xid: 38,
        description: "Driver firmware error",
        application: false,
    },
    XidMeaning {
        xid: 43,
        description: "GPU stopped processing",
        application: true,
    },
    XidMeaning {
        xid: 45,
        description: "Preemptive cleanup, due to previous errors",
        application: true,
    },
    XidMeaning {
        xid: 48,
        description: "Double Bit ECC Error",
        application: false,
    },
    XidMeaning {
        xid: 61,
        description: "Internal micro-controller breakpoint/warning",
        application: false,
    },
    XidMeaning {
        xid: 62,
        description: "Internal micro-controller halt",
        application: false,
    },
    XidMeaning {
        xid: 63,
        description: "ECC page retirement or row remapping recording event",
        application: false,
    },
    XidMeaning {
        xid: 64,
        description: "ECC page retirement or row remapper recording failure",
        application: false,
    },
    XidMeaning {
        xid: 69,
        description: "Graphics Engine class error",
        application: false,
    },
    XidMeaning {
        xid: 74,
        description: "NVLink Error",
        application: false,
    },
    XidMeaning {
        xid: 79,
        description: "GPU has fallen off the bus",
        application: false,
    },
    XidMeaning {
        xid: 92,
        description: "High single-bit ECC error rate",
        application: false,
    },
    XidMeaning {
        xid: 94,
        description: "Contained ECC error",
        application: false,
    },
    XidMeaning {
        xid: 95,
        description: "Uncontained ECC error",
        application: false,
    },
    XidMeaning {
        xid: 109,
        description: "Context Switch Timeout Error",
        application: false,
    },
    XidMeaning {
        xid: 119,
        description: "GSP RPC Timeout",
        application: false,
    },
    XidMeaning {
        xid: 120,
        description: "GSP Error",
        application: false,
    },
    XidMeaning {
        xid: 154,
        description: "GPU Recovery Action Changed",
        application: false,
    },
];

/// The catalogue's entry of an Xid, when [`MEANINGS`] has it.
pub fn meaning(xid: u32) -> Option<&'static XidMeaning> {
    MEANINGS.iter().find(|m| m.xid == xid)
}

/// The Xid the bus lost a GPU with.
const FELL_OFF: u32 = 79;

fn log(h: &HostFacts) -> Option<&KernelLogFacts> {
    if !h.observed {
        return None;
    }
    h.kernel_log.as_ref().filter(|l| !l.xids.is_empty())
}

fn since(l: &KernelLogFacts) -> String {
    if l.boot_seen {
        format!("{} after the last boot it shows", l.source)
    } else {
        format!(
            "the last {} KiB of {}, which show no boot",
            l.bytes_read.div_ceil(1024),
            l.source
        )
    }
}

/// Xid 79 since the last boot: the GPU is gone until the machine (or the GPU) is reset.
pub fn gpu_fallen_off_bus(h: &HostFacts) -> Option<Finding> {
    let l = log(h)?;
    let lost: Vec<&XidReport> = l.xids.iter().filter(|r| r.xid == FELL_OFF).collect();
    let first = lost.first()?;
    let mut devices: Vec<&str> = lost.iter().map(|r| r.device.as_str()).collect();
    devices.dedup();
    Some(
        Finding::new(
            Code::GpuFallenOffBus,
            format!(
                "the GPU at {} fell off the bus (Xid 79) since the last boot: CUDA cannot use it until the \
                 machine is reset",
                devices.join(", ")
            ),
            "Reboot (or power-cycle) the machine to get the GPU back; `nvidia-smi -r` rarely recovers it. Then \
             look for the cause: power cables and the supply's headroom, cooling, the card's seating and riser, \
             PCIe power management (`pcie_aspm=off` on the kernel command line when it happens at idle). If it \
             recurs, collect `sudo nvidia-bug-report.sh` for the vendor.",
        )
        .because(format!("{}: {}", since(l), first.line)),
    )
}

/// Other Xids since the last boot, each with its catalogue meaning.
pub fn gpu_xid_reported(h: &HostFacts) -> Option<Finding> {
    let l = log(h)?;
    let others: Vec<&XidReport> = l.xids.iter().filter(|r| r.xid != FELL_OFF).collect();
    if others.is_empty() {
        return None;
    }
    let mut xids: Vec<u32> = others.iter().map(|r| r.xid).collect();
    xids.sort_unstable();
    xids.dedup();
    let named: Vec<String> = xids
        .iter()
        .map(|x| match meaning(*x) {
            Some(m) => format!("{x} ({})", m.description),
            None => x.to_string(),
        })
        .collect();
    let hardware = xids.iter().any(|x| meaning(*x).is_none_or(|m| !m.application));
    let help = if hardware {
        "Look each Xid up in NVIDIA's catalogue (docs.nvidia.com/deploy/xid-errors) for its immediate action: \
         ECC, NVLink and GSP errors usually need a GPU reset (`sudo nvidia-smi -r -i N` with no process on it) or \
         a reboot, and a GPU that repeats them needs `nvidia-smi -q -d ECC,ROW_REMAPPER` and the vendor \
         (`sudo nvidia-bug-report.sh`)."
    } else {
        "These Xids usually come from an application (an illegal address, a killed or crashed process), not from \
         the GPU: rerun the failing program with `CUDA_LAUNCH_BLOCKING=1` or under `compute-sanitizer`. NVIDIA's \
         catalogue (docs.nvidia.com/deploy/xid-errors) gives each one's checks."
    };
    let mut f = Finding::new(
        Code::GpuXidReported,
        format!(
            "the NVIDIA driver reported {} since the last boot: Xid {}",
            count(l.xid_count, "GPU error", "GPU errors"),
            named.join(", ")
        ),
        help,
    )
    .because(format!("{}:", since(l)));
    for x in &xids {
        if let Some(r) = others.iter().find(|r| r.xid == *x) {
            f = f.because(r.line.clone());
        }
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_is_sorted_and_has_no_duplicate() {
        assert!(MEANINGS.windows(2).all(|w| w[0].xid < w[1].xid));
        assert_eq!(
            meaning(79).map(|m| m.description),
            Some("GPU has fallen off the bus")
        );
        assert!(meaning(1000).is_none());
    }
}
