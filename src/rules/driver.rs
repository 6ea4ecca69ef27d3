//! The driver against what the binary and the GPU need: `driver-insufficient` (CUDA error 35),
//! `minor-version-compatibility` (runs, with limits) and `gpu-unsupported-by-driver`.
//!
//! - A driver supports every CUDA version up to its branch's (`[[driver_branch]]`; backward compatibility).
//! - A newer runtime of the same major family runs on an older driver at or above the family's floor
//!   (`[[minor_compat]]`: 11.x ≥ 450.80.02, 12.x ≥ 525.60.13, 13.x ≥ 580.65.06), with limits: no PTX JIT of
//!   newer PTX, newer APIs fail with error 36 (CUDA Compatibility guide, "Minor Version Compatibility").
//! - Below that floor (or before CUDA 11, which had no minor-version compatibility) the runtime fails with
//!   error 35, "CUDA driver version is insufficient for CUDA runtime version" (some drivers give 3).
//! - zstd-compressed fatbin entries need a driver of CUDA 12.4 (R550) or later (`[[feature]] zstd-fatbin`).
//! - Drivers after R580 dropped Maxwell, Pascal and Volta, after R470 Kepler; a GPU newer than the driver is
//!   not supported either (`[[arch]]`, data-center driver docs).
//!
//! The runtime version comes, best first, from the cudart version read from the binary (static cudart's
//! version constant, or a versioned file name), from a dynamic `libcudart.so.N` name (major only), or from the
//! toolkit note of its device code (`.note.nv.tkinfo`), which is only a hint: the code was built by that
//! toolkit.

use super::compat::{Driver, Target};
use crate::facts::{BinaryFacts, CodeKind, Compression, CudartLinkage};
use crate::findings::{Code, Finding};
use crate::matrix::{CudaVersion, Matrix};

/// The CUDA runtime version a binary needs, and how it was learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    /// The version; `exact` false means only the major is known.
    pub version: CudaVersion,
    /// Whether the minor version is known.
    pub exact: bool,
    /// Where it was read.
    pub evidence: String,
}

impl Runtime {
    /// Whether a driver that supports CUDA `driver_cuda` runs this runtime: the whole version when it is
    /// known, else the major alone.
    pub fn fits(&self, driver_cuda: &CudaVersion) -> bool {
        if self.exact {
            self.version <= *driver_cuda
        } else {
            self.version.major <= driver_cuda.major
        }
    }

    /// The runtime as a finding names it: `13.0`, or `13.x` where only the major is known.
    pub fn wanted(&self) -> String {
        if self.exact {
            self.version.to_string()
        } else {
            format!("{}.x", self.version.major)
        }
    }
}

/// The runtime version of a binary, best source first.
pub fn runtime_of(b: &BinaryFacts) -> Option<Runtime> {
    let c = &b.cudart;
    if let Some(v) = c.version.as_deref().and_then(CudaVersion::parse) {
        let how = match c.linkage {
            CudartLinkage::Static => "statically linked cudart",
            CudartLinkage::Dynamic => "the shared cudart it names",
            CudartLinkage::None => "its cudart",
        };
        let mut ev = format!("{}: {how} is CUDA {v}", b.path);
        if let Some(first) = c
            .evidence
            .iter()
            .find(|e| e.contains("version"))
            .or(c.evidence.first())
        {
            ev.push_str(&format!(" ({first})"));
        }
        return Some(Runtime {
            version: v,
            exact: true,
            evidence: ev,
        });
    }
    if c.linkage == CudartLinkage::Dynamic
        && let Some(so) = &c.soname
        && let Some(major) = so.rsplit(".so.").next().and_then(|n| n.parse::<u32>().ok())
    {
        return Some(Runtime {
            version: CudaVersion { major, minor: 0 },
            exact: false,
            evidence: format!(
                "{}: needs {so}, a CUDA {major}.x runtime (minor version unknown)",
                b.path
            ),
        });
    }
    let toolkit = b
        .device_code
        .iter()
        .filter(|e| !e.relocatable && e.kind != CodeKind::Nvvm)
        .filter_map(|e| e.toolkit.as_deref().and_then(CudaVersion::parse).map(|v| (v, e)))
        .max_by_key(|(v, _)| *v)?;
    Some(Runtime {
        version: toolkit.0,
        exact: true,
        evidence: format!(
            "{}: device code {} was built by CUDA {} (toolkit note); no cudart version was read",
            b.path,
            toolkit.1.arch,
            toolkit.1.toolkit.as_deref().unwrap_or("?")
        ),
    })
}

/// `driver-insufficient` or `minor-version-compat` for the binary's runtime.
pub fn runtime(b: &BinaryFacts, drv: Option<&Driver>, m: &Matrix) -> Option<Finding> {
    let drv = drv?;
    let rt = runtime_of(b)?;
    let dc = m.driver_cuda(&drv.version)?;
    let driver_line = format!(
        "driver {} (from {}) supports CUDA {} [matrix {}]",
        drv.version,
        drv.source,
        dc.cuda,
        dc.row.row.cite(m)
    );
    if rt.fits(&dc.cuda) || m.driver_beyond_table(&drv.version) {
        return None;
    }
    let floor = m.minor_compat(rt.version.major);
    let ga = m.toolkit_min(rt.version);
    let ga_line = ga.map(|t| {
        format!(
            "CUDA {} ({}) needs Linux driver ≥ {} [matrix {}]",
            t.cuda,
            t.label,
            t.linux_min,
            t.row.cite(m)
        )
    });
    let want = rt.wanted();
    if let Some(floor) = floor
        && drv.version >= floor.linux_min
    {
        if !rt.exact {
            return None;
        }
        let limits = m.minor_compat_limits.join("; ");
        let mut f = Finding::new(
            Code::MinorVersionCompat,
            format!(
                "{}: CUDA {want} runtime on driver {} (CUDA {}) runs only through minor-version compatibility",
                b.path, drv.version, dc.cuda
            ),
            format!(
                "It starts, with limits ({}): {limits}. To lift them, upgrade the driver to ≥ {}.",
                m.minor_compat_limits_source,
                ga.map_or_else(|| format!("the CUDA {want} driver"), |t| t.linux_min.to_string())
            ),
        )
        .because(rt.evidence.clone())
        .because(driver_line)
        .because(format!(
            "CUDA {}.x runs on drivers ≥ {} through minor-version compatibility [matrix {}]",
            floor.major,
            floor.linux_min,
            floor.row.cite(m)
        ));
        if let Some(l) = ga_line {
            f = f.because(l);
        }
        return Some(f.at(&b.path));
    }
    let need = match (floor, ga) {
        (Some(fl), Some(t)) if rt.exact && t.linux_min <= fl.linux_min => {
            format!("≥ {} (CUDA {want})", t.linux_min)
        }
        (Some(fl), Some(t)) if rt.exact => format!(
            "≥ {} (CUDA {want}), or ≥ {} through minor-version compatibility",
            t.linux_min, fl.linux_min
        ),
        (Some(fl), _) => format!(
            "≥ {} (CUDA {}.x through minor-version compatibility)",
            fl.linux_min, fl.major
        ),
        (None, Some(t)) => format!(
            "≥ {} (CUDA {want}; no minor-version compatibility before CUDA 11)",
            t.linux_min
        ),
        (None, None) => format!("a driver for CUDA {want}"),
    };
    let mut f = Finding::new(
        Code::DriverInsufficient,
        format!(
            "{}: CUDA {want} runtime needs a newer driver than {} (CUDA {}); it fails with CUDA error 35 (CUDA driver version is insufficient for CUDA runtime version)",
            b.path, drv.version, dc.cuda
        ),
        format!(
            "Upgrade the driver to {need}; or, on a data-center GPU, install the cuda-compat package for CUDA {want} (forward compatibility); or use a build of the program for CUDA {} or older.",
            dc.cuda
        ),
    )
    .because(rt.evidence.clone())
    .because(driver_line);
    if let Some(fl) = floor {
        f = f.because(format!(
            "CUDA {}.x needs at least driver {} even through minor-version compatibility [matrix {}]",
            fl.major,
            fl.linux_min,
            fl.row.cite(m)
        ));
    }
    if let Some(l) = ga_line {
        f = f.because(l);
    }
    Some(f.at(&b.path))
}

/// `driver-insufficient` when zstd-compressed entries meet a driver older than CUDA 12.4's.
pub fn zstd(b: &BinaryFacts, drv: Option<&Driver>, m: &Matrix) -> Option<Finding> {
    let drv = drv?;
    let feature = m.feature("zstd-fatbin")?;
    let n = b
        .device_code
        .iter()
        .filter(|e| !e.relocatable && e.compression == Compression::Zstd)
        .count();
    if n == 0 {
        return None;
    }
    let dc = m.driver_cuda(&drv.version)?;
    if dc.cuda >= feature.min_cuda {
        return None;
    }
    let ga = m.toolkit_min(feature.min_cuda);
    Some(
        Finding::new(
            Code::DriverInsufficient,
            format!(
                "{}: {n} zstd-compressed device-code entries cannot be loaded by driver {} (CUDA {}); loading fails with CUDA error 200 (device kernel image is invalid)",
                b.path, drv.version, dc.cuda
            ),
            format!(
                "Upgrade the driver to ≥ {} (CUDA {}), or rebuild without compression (nvcc --no-compress, or -Xfatbin -compress-mode=none with older nvcc).",
                ga.map_or_else(|| format!("the CUDA {} driver", feature.min_cuda), |t| t.linux_min.to_string()),
                feature.min_cuda
            ),
        )
        .because(format!("{}: {n} entries use zstd (fatbin flag 0x8000)", b.path))
        .because(format!("driver {} (from {}) supports CUDA {} [matrix {}]", drv.version, drv.source, dc.cuda, dc.row.row.cite(m)))
        .because(format!("{} need a CUDA {} driver or newer [matrix {}]", feature.what, feature.min_cuda, feature.row.cite(m)))
        .at(&b.path),
    )
}

/// `gpu-unsupported-by-driver`: the driver branch dropped the GPU's architecture, or predates it.
pub fn gpu_unsupported(t: &Target, drv: Option<&Driver>, m: &Matrix) -> Vec<Finding> {
    let Some(drv) = drv else {
        return Vec::new();
    };
    let Some(arch) = m.arch(t.cc) else {
        return Vec::new();
    };
    let branch = drv.version.branch();
    let mut f = if let Some(last) = arch.last_branch.filter(|&l| branch > l) {
        Finding::new(
            Code::GpuUnsupportedByDriver,
            format!(
                "{}: driver {} (R{branch}) no longer supports {} GPUs (last supported branch R{last}); CUDA sees no device (error 100)",
                t.label, drv.version, arch.name
            ),
            format!(
                "Install an R{last} driver (the legacy branch for {}), or use a newer GPU. The exact error a dropped GPU gives is not documented (UNCONFIRMED); usually no CUDA device is found.",
                arch.name
            ),
        )
    } else {
        let Some(dc) = m.driver_cuda(&drv.version) else {
            return Vec::new();
        };
        if dc.cuda >= arch.first_cuda || m.driver_beyond_table(&drv.version) {
            return Vec::new();
        }
        let need = m.toolkit_min(arch.first_cuda);
        Finding::new(
            Code::GpuUnsupportedByDriver,
            format!(
                "{}: driver {} (CUDA {}) predates {} GPUs, first supported by CUDA {}",
                t.label, drv.version, dc.cuda, arch.name, arch.first_cuda
            ),
            format!(
                "Upgrade the driver to ≥ {}.",
                need.map_or_else(
                    || format!("a CUDA {} driver", arch.first_cuda),
                    |r| r.linux_min.to_string()
                )
            ),
        )
        .because(format!(
            "driver {} supports CUDA {} [matrix {}]",
            drv.version,
            dc.cuda,
            dc.row.row.cite(m)
        ))
    };
    for ev in &t.evidence {
        f = f.because(ev.clone());
    }
    f = f.because(format!(
        "{} is CC {} [matrix {}]",
        arch.name,
        arch.ccs
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        arch.row.cite(m)
    ));
    vec![f.because(format!("driver {} read from {}", drv.version, drv.source))]
}
