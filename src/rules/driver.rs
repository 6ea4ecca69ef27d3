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
//! The driver is judged against the process (`docs/verdict.md`): every runtime it maps (the binary's static
//! cudart; the `libcudart.so.N` the loader finds for it, whose exact version is the constant its
//! `cudaRuntimeGetVersion` stores or the version in its file name; the static cudart of each library with device
//! code it loads) and the zstd-compressed code of every object. One driver is one cause: one
//! `driver-insufficient` per process, led by the need with the newest floor. Only without any of those does the
//! version come from a dynamic `libcudart.so.N` name (major only) or the toolkit note of the binary's device
//! code (`.note.nv.tkinfo`), which is only a hint: the code was built by that toolkit.

use super::process::Process;
use super::target::{Driver, Target};
use crate::facts::loader::LoadedObject;
use crate::facts::{BinaryFacts, CodeKind, Compression, CudartLinkage};
use crate::findings::{Code, Finding};
use crate::matrix::{CudaVersion, DriverVersion, Matrix};

/// The CUDA runtime version a binary needs, and how it was learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    /// The version; `exact` false means only the major is known.
    pub version: CudaVersion,
    /// Whether the minor version is known.
    pub exact: bool,
    /// Where it was read.
    pub evidence: String,
    /// The runtime as a finding's message names it: `the CUDA 13.0 runtime it links statically`, `the CUDA 13.2
    /// runtime the process loads (…/libcudart.so.13)`.
    pub subject: String,
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
        let (how, subject) = match c.linkage {
            CudartLinkage::Static => (
                "statically linked cudart",
                format!("the CUDA {v} runtime it links statically"),
            ),
            CudartLinkage::Dynamic => (
                "the shared cudart it names",
                format!("the CUDA {v} runtime it names"),
            ),
            CudartLinkage::None => ("its cudart", format!("its CUDA {v} runtime")),
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
            subject,
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
                "{}: needs {so}, a CUDA {major}.x runtime (minor version unknown: no file of it was read)",
                b.path
            ),
            subject: format!("the CUDA {major}.x runtime it names ({so})"),
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
        subject: format!("the CUDA {} runtime its device code was built with", toolkit.0),
    })
}

/// The runtime of a `libcudart.so.N` a process maps: the version its `cudaRuntimeGetVersion` stores, else the
/// version in its file name (`libcudart.so.12.4.127`), else the major of its name.
fn loaded_runtime(process: &str, rt: &BinaryFacts, o: &LoadedObject) -> Option<Runtime> {
    let read = rt
        .cudart
        .version
        .as_deref()
        .and_then(CudaVersion::parse)
        .map(|v| {
            let how = rt
                .cudart
                .evidence
                .iter()
                .find(|e| e.contains("version"))
                .cloned()
                .unwrap_or_else(|| "its cudaRuntimeGetVersion".into());
            (v, how)
        });
    let named = || {
        o.version
            .as_deref()
            .and_then(|n| CudaVersion::parse(n).map(|v| (v, format!("its file name {}", o.realpath))))
    };
    let (version, exact, how) = match read.or_else(named) {
        Some((v, how)) => (v, true, how),
        None => {
            let name = o.soname.as_deref().unwrap_or(&o.path);
            let major = name.rsplit(".so.").next()?.split('.').next()?.parse().ok()?;
            (
                CudaVersion { major, minor: 0 },
                false,
                format!("its name {name}; its version was not read"),
            )
        }
    };
    let want = if exact {
        version.to_string()
    } else {
        format!("{}.x", version.major)
    };
    Some(Runtime {
        version,
        exact,
        evidence: format!("{process} loads {} (CUDA runtime {want}: {how})", o.path),
        subject: format!("the CUDA {want} runtime the process loads ({})", o.path),
    })
}

/// Every CUDA runtime a process maps: the binary's own (static, or the shared one it names, as the loader
/// found it), every `libcudart` the process loads, and the runtime each library with device code links
/// statically. Without any, the toolkit note of the binary's device code.
pub fn process_runtimes(p: &Process<'_>) -> Vec<Runtime> {
    let b = p.binary;
    let mut out = Vec::new();
    if b.cudart.linkage == CudartLinkage::Static {
        out.extend(runtime_of(b));
    }
    for (rt, o) in &p.runtimes {
        out.extend(loaded_runtime(&b.path, rt, o));
    }
    for l in &p.libraries {
        if l.cudart.linkage == CudartLinkage::Static
            && let Some(mut rt) = runtime_of(l)
        {
            rt.subject = format!("the CUDA {} runtime {} links statically", rt.wanted(), l.path);
            out.push(rt);
        }
    }
    if out.is_empty() {
        out.extend(runtime_of(b));
    }
    out
}

/// Something in a process the driver must serve, and the oldest driver that does.
struct Need {
    /// The oldest driver that serves it (`None`: the matrix does not say).
    floor: Option<DriverVersion>,
    /// The finding's message when this is the cause that decides.
    message: String,
    /// Its "because" lines.
    evidence: Vec<String>,
    /// The fix.
    help: String,
    /// One line for the finding when another cause decides.
    also: String,
}

/// What a runtime the driver does not serve, even through minor-version compatibility, needs.
fn runtime_need(process: &str, rt: &Runtime, drv: &Driver, dc: CudaVersion, m: &Matrix) -> Need {
    let floor = m.minor_compat(rt.version.major);
    let ga = m.toolkit_min(rt.version);
    let want = rt.wanted();
    let (need, lowest) = match (floor, ga) {
        (Some(fl), Some(t)) if rt.exact && t.linux_min <= fl.linux_min => (
            format!("≥ {} (CUDA {want})", t.linux_min),
            Some(t.linux_min.clone()),
        ),
        (Some(fl), Some(t)) if rt.exact => (
            format!(
                "≥ {} (CUDA {want}), or ≥ {} through minor-version compatibility",
                t.linux_min, fl.linux_min
            ),
            Some(fl.linux_min.clone()),
        ),
        (Some(fl), _) => (
            format!(
                "≥ {} (CUDA {}.x through minor-version compatibility)",
                fl.linux_min, fl.major
            ),
            Some(fl.linux_min.clone()),
        ),
        (None, Some(t)) => (
            format!(
                "≥ {} (CUDA {want}; no minor-version compatibility before CUDA 11)",
                t.linux_min
            ),
            Some(t.linux_min.clone()),
        ),
        (None, None) => (format!("a driver for CUDA {want}"), None),
    };
    let mut evidence = vec![rt.evidence.clone()];
    if let Some(fl) = floor {
        evidence.push(format!(
            "CUDA {}.x needs at least driver {} even through minor-version compatibility [matrix {}]",
            fl.major,
            fl.linux_min,
            fl.row.cite(m)
        ));
    }
    if let Some(t) = ga {
        evidence.push(format!(
            "CUDA {} ({}) needs Linux driver ≥ {} [matrix {}]",
            t.cuda,
            t.label,
            t.linux_min,
            t.row.cite(m)
        ));
    }
    Need {
        floor: lowest,
        message: format!(
            "{process}: {} needs driver {need}; driver {} supports CUDA {dc}, so it fails with CUDA error 35 (CUDA \
             driver version is insufficient for CUDA runtime version)",
            rt.subject, drv.version
        ),
        evidence,
        help: format!(
            "Upgrade the driver to {need}; or, on a data-center GPU, install the cuda-compat package for CUDA {want} \
             (forward compatibility); or use a build of the program for CUDA {dc} or older."
        ),
        also: format!("{} needs driver {need} as well", rt.subject),
    }
}

/// The zstd-compressed entries of each object of a process with any: (path, count).
fn zstd_entries<'a>(p: &Process<'a>) -> Vec<(&'a str, usize)> {
    std::iter::once(p.binary)
        .chain(p.libraries.iter().copied())
        .map(|b| {
            let n = b
                .device_code
                .iter()
                .filter(|e| !e.relocatable && e.compression == Compression::Zstd)
                .count();
            (b.path.as_str(), n)
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// What zstd-compressed entries need from a driver older than CUDA 12.4's (`None` when it has that).
fn zstd_need(p: &Process<'_>, drv: &Driver, dc: CudaVersion, m: &Matrix) -> Option<Need> {
    let feature = m.feature("zstd-fatbin")?;
    let objects = zstd_entries(p);
    if objects.is_empty() || dc >= feature.min_cuda {
        return None;
    }
    let ga = m.toolkit_min(feature.min_cuda);
    let need = ga.map_or_else(
        || format!("the CUDA {} driver", feature.min_cuda),
        |t| t.linux_min.to_string(),
    );
    let n: usize = objects.iter().map(|(_, n)| n).sum();
    let mut evidence: Vec<String> = objects
        .iter()
        .map(|(path, n)| {
            let (entries, verb) = if *n == 1 {
                ("entry", "uses")
            } else {
                ("entries", "use")
            };
            format!("{path}: {n} {entries} {verb} zstd (fatbin flag 0x8000)")
        })
        .collect();
    evidence.push(format!(
        "{} need a CUDA {} driver or newer [matrix {}]",
        feature.what,
        feature.min_cuda,
        feature.row.cite(m)
    ));
    let whose = match objects.as_slice() {
        [(only, _)] if *only == p.binary.path => String::new(),
        [(only, _)] => format!(" (in {only})"),
        _ => format!(" (in {} of its objects)", objects.len()),
    };
    let entries = crate::findings::count(
        n,
        "zstd-compressed device-code entry",
        "zstd-compressed device-code entries",
    );
    Some(Need {
        floor: ga.map(|t| t.linux_min.clone()),
        message: format!(
            "{}: {entries}{whose} cannot be loaded by driver {} (CUDA {dc}); loading \
             fails with CUDA error 200 (device kernel image is invalid)",
            p.binary.path, drv.version
        ),
        evidence,
        help: format!(
            "Upgrade the driver to ≥ {need} (CUDA {}), or rebuild without compression (nvcc --no-compress, or \
             -Xfatbin -compress-mode=none with older nvcc).",
            feature.min_cuda
        ),
        also: format!(
            "{entries}{whose} {} driver ≥ {need} as well",
            if n == 1 { "needs" } else { "need" }
        ),
    })
}

/// The driver against everything in a process that needs it: one `driver-insufficient` for the driver, whatever
/// needs it (every runtime the process maps, zstd-compressed device code), led by the need whose oldest
/// sufficient driver is newest, since upgrading to it serves the others too; else `minor-version-compat` for
/// the newest runtime that runs only through minor-version compatibility.
pub fn process(p: &Process<'_>, drv: Option<&Driver>, m: &Matrix) -> Option<Finding> {
    let drv = drv?;
    let dc = m.driver_cuda(&drv.version)?;
    let driver_line = format!(
        "driver {} (from {}) supports CUDA {} [matrix {}]",
        drv.version,
        drv.source,
        dc.cuda,
        dc.row.row.cite(m)
    );
    let path = p.binary.path.as_str();
    let mut needs: Vec<Need> = Vec::new();
    let mut minor: Option<Runtime> = None;
    if !m.driver_beyond_table(&drv.version) {
        for rt in process_runtimes(p) {
            if rt.fits(&dc.cuda) || needs.iter().any(|n| n.evidence[0] == rt.evidence) {
                continue;
            }
            let floor = m.minor_compat(rt.version.major);
            if floor.is_some_and(|fl| drv.version >= fl.linux_min) {
                if rt.exact && minor.as_ref().is_none_or(|mv| rt.version > mv.version) {
                    minor = Some(rt);
                }
                continue;
            }
            needs.push(runtime_need(path, &rt, drv, dc.cuda, m));
        }
    }
    needs.extend(zstd_need(p, drv, dc.cuda, m));
    // The need with the newest floor decides (the first of equals: a runtime before compressed code).
    let Some(lead) = (0..needs.len()).rev().max_by_key(|&i| needs[i].floor.clone()) else {
        return minor.and_then(|rt| minor_version_compat(path, &rt, drv, dc.cuda, &driver_line, m));
    };
    let lead = needs.remove(lead);
    let mut f = Finding::new(Code::DriverInsufficient, lead.message, lead.help);
    let mut evidence = lead.evidence.into_iter();
    if let Some(first) = evidence.next() {
        f = f.because(first);
    }
    f = f.because(driver_line);
    for e in evidence {
        f = f.because(e);
    }
    for other in needs {
        f = f.because(other.also);
        for e in other.evidence {
            f = f.because(e);
        }
    }
    Some(f.at(path))
}

/// `minor-version-compat`: the runtime starts on an older driver of its major family, with limits.
fn minor_version_compat(
    path: &str,
    rt: &Runtime,
    drv: &Driver,
    dc: CudaVersion,
    driver_line: &str,
    m: &Matrix,
) -> Option<Finding> {
    let floor = m.minor_compat(rt.version.major)?;
    let ga = m.toolkit_min(rt.version);
    let want = rt.wanted();
    let limits = m.minor_compat_limits.join("; ");
    let mut f = Finding::new(
        Code::MinorVersionCompat,
        format!(
            "{path}: {} on driver {} (CUDA {dc}) runs only through minor-version compatibility",
            rt.subject, drv.version
        ),
        format!(
            "It starts, with limits ({}): {limits}. To lift them, upgrade the driver to ≥ {}.",
            m.minor_compat_limits_source,
            ga.map_or_else(|| format!("the CUDA {want} driver"), |t| t.linux_min.to_string())
        ),
    )
    .because(rt.evidence.clone())
    .because(driver_line.to_string())
    .because(format!(
        "CUDA {}.x runs on drivers ≥ {} through minor-version compatibility [matrix {}]",
        floor.major,
        floor.linux_min,
        floor.row.cite(m)
    ));
    if let Some(t) = ga {
        f = f.because(format!(
            "CUDA {} ({}) needs Linux driver ≥ {} [matrix {}]",
            t.cuda,
            t.label,
            t.linux_min,
            t.row.cite(m)
        ));
    }
    Some(f.at(path))
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
