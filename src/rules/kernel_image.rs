//! Which kernel image the driver loads for a GPU, and the findings when it loads none (`no-kernel-image`,
//! CUDA error 209), must JIT PTX first (`ptx-jit-required`), or cannot JIT the PTX (`ptx-too-new`, 222).
//!
//! Selection follows the CUDA C++ Programming Guide, "Binary Compatibility" / "PTX Compatibility" /
//! "Application Compatibility" (source PG), and the PTX ISA `.target` rules for `a` and `f` targets (PTX-TGT):
//! - SASS for `sm_XY` runs on CC X.Z with Z ≥ Y, same major only; desktop only: on Tegra (`[tegra]`) and
//!   between desktop and Tegra a cubin runs only on exactly its own compute capability;
//! - `sm_XYa` runs only on exactly X.Y; `sm_XYf` on X.Y and later members of its family (`[[family]]`);
//! - otherwise the driver JIT-compiles the highest PTX whose `compute_XY` is not above the GPU's CC, with the
//!   same `a`/`f` limits, if it understands the PTX's ISA version (`[[ptx_isa]]`).
//!
//! NVVM IR is never loaded at run time. Relocatable entries (`__nv_relfatbin`) are not loaded either, with one
//! observed exception: in a program nvcc device-linked (`-rdc=true`), when the device-linked image does not fit
//! the GPU, the CUDA runtime JIT-compiles and links the relocatable PTX instead. `fixtures/cuda13/rdc` (only
//! sm_75 SASS device-linked, relocatable compute_75 PTX) ran correctly on an H200 (CC 9.0, driver 580.159.04)
//! with `CUDA_CACHE_DISABLE=1`, and failed with error 223 ("PTX JIT compilation was disabled") once
//! `CUDA_DISABLE_PTX_JIT=1` was added, so it is a JIT path; `rdc_multi` (device-linked sm_90) ran either way.
//! NVIDIA documents no such fallback, so it is used only as the last resort and the finding says it was
//! observed, not documented.

use super::target::{Driver, Target};
use crate::facts::{BinaryFacts, CodeKind, DeviceCode};
use crate::findings::{Code, Finding};
use crate::matrix::{Cc, CudaVersion, Matrix};

/// The image the driver would use.
#[derive(Debug, Clone, Copy)]
pub enum Image<'a> {
    /// A cubin that runs as is.
    Sass(&'a DeviceCode),
    /// PTX the driver must JIT-compile.
    Ptx(&'a DeviceCode),
    /// Relocatable PTX the runtime must JIT-compile and link (device-linked programs only).
    LinkedPtx(&'a DeviceCode),
    /// Nothing usable.
    None,
}

fn entry_cc(e: &DeviceCode) -> Option<Cc> {
    Cc::from_sm(e.sm)
}

fn in_family(m: &Matrix, built: Cc, gpu: Cc) -> bool {
    built <= gpu && m.family(built).is_some_and(|f| f.members.contains(&gpu))
}

/// Whether a cubin for `e` runs on `gpu`.
pub fn sass_runs(e: &DeviceCode, gpu: Cc, m: &Matrix) -> bool {
    let Some(built) = entry_cc(e) else {
        return false;
    };
    match e.suffix {
        None if built != gpu && (m.tegra.ccs.contains(&gpu) || m.tegra.ccs.contains(&built)) => false,
        None => built.major == gpu.major && built.minor <= gpu.minor,
        Some('a') => built == gpu,
        Some('f') => in_family(m, built, gpu),
        Some(_) => false,
    }
}

/// Whether PTX for `e` can be JIT-compiled for `gpu` (ignoring the ISA version).
pub fn ptx_runs(e: &DeviceCode, gpu: Cc, m: &Matrix) -> bool {
    let Some(built) = entry_cc(e) else {
        return false;
    };
    match e.suffix {
        None => built <= gpu,
        Some('a') => built == gpu,
        Some('f') => in_family(m, built, gpu),
        Some(_) => false,
    }
}

fn loadable(b: &BinaryFacts, kind: CodeKind) -> impl Iterator<Item = &DeviceCode> {
    b.device_code
        .iter()
        .filter(move |e| e.kind == kind && !e.relocatable)
}

/// Picks the image as the driver does: the best SASS, else the highest PTX not above the GPU.
pub fn select<'a>(b: &'a BinaryFacts, gpu: Cc, m: &Matrix) -> Image<'a> {
    let rank = |e: &DeviceCode| (e.sm, matches!(e.suffix, Some('a')), matches!(e.suffix, Some('f')));
    if let Some(s) = loadable(b, CodeKind::Sass)
        .filter(|e| sass_runs(e, gpu, m))
        .max_by_key(|e| rank(e))
    {
        return Image::Sass(s);
    }
    if let Some(p) = loadable(b, CodeKind::Ptx)
        .filter(|e| ptx_runs(e, gpu, m))
        .max_by_key(|e| rank(e))
    {
        return Image::Ptx(p);
    }
    let device_linked = b
        .device_code
        .iter()
        .any(|e| !e.relocatable && e.kind != CodeKind::Nvvm);
    match b
        .device_code
        .iter()
        .filter(|e| device_linked && e.relocatable && e.kind == CodeKind::Ptx)
        .filter(|e| ptx_runs(e, gpu, m))
        .max_by_key(|e| rank(e))
    {
        Some(p) => Image::LinkedPtx(p),
        None => Image::None,
    }
}

/// The PTX ISA version of an entry (`.version`, else the fatbin header's).
pub fn ptx_isa(e: &DeviceCode) -> Option<CudaVersion> {
    e.ptx_isa.as_deref().and_then(CudaVersion::parse).or_else(|| {
        let [maj, min] = e.code_version;
        (maj > 0).then_some(CudaVersion {
            major: u32::from(maj),
            minor: u32::from(min),
        })
    })
}

/// Why one entry does not run on the GPU, for the "because" lines.
fn why_not(e: &DeviceCode, gpu: Cc, m: &Matrix) -> String {
    let Some(built) = entry_cc(e) else {
        return format!("{} names no SM number", e.arch);
    };
    let kind = if e.kind == CodeKind::Sass { "SASS" } else { "PTX" };
    match (e.kind, e.suffix) {
        (_, Some('a')) => format!("{kind} {} is arch-specific: it runs only on CC {built}", e.arch),
        (_, Some('f')) => format!(
            "{kind} {} is family-specific: it runs on CC {built} and later members of its family, not on {gpu}",
            e.arch
        ),
        (CodeKind::Sass, _)
            if built != gpu && (m.tegra.ccs.contains(&gpu) || m.tegra.ccs.contains(&built)) =>
        {
            format!(
                "SASS {} is not for CC {gpu} exactly, and binary compatibility does not extend to or from Tegra GPUs [matrix {}]",
                e.arch,
                m.tegra.row.cite(m)
            )
        }
        (CodeKind::Sass, _) if built.major != gpu.major => {
            let range = if built.minor == 0 {
                format!("{}.x", built.major)
            } else {
                format!("{built} to {}.9", built.major)
            };
            format!(
                "SASS {} runs only on CC {range}; a cubin never crosses a major version",
                e.arch
            )
        }
        (CodeKind::Sass, _) => format!(
            "SASS {} needs CC {}.{} or a later {}.x; CC {gpu} is older",
            e.arch, built.major, built.minor, built.major
        ),
        _ => format!("PTX {} needs CC ≥ {built}", e.arch),
    }
}

fn suggestion(gpu: Cc) -> String {
    format!(
        "Rebuild with SASS for this GPU (nvcc -gencode arch=compute_{sm},code=sm_{sm}) and keep PTX for newer GPUs \
         (-gencode arch=compute_{sm},code=compute_{sm}), or run on a GPU the binary was built for.",
        sm = gpu.sm()
    )
}

/// `no-kernel-image`, `ptx-jit-required` and `ptx-too-new` for one binary on one GPU.
pub fn check(b: &BinaryFacts, t: &Target, drv: Option<&Driver>, m: &Matrix) -> Vec<Finding> {
    let entries: Vec<&DeviceCode> = loadable(b, CodeKind::Sass)
        .chain(loadable(b, CodeKind::Ptx))
        .collect();
    if entries.is_empty() {
        return Vec::new();
    }
    let pg = m.source_text("PG").unwrap_or("CUDA C++ Programming Guide");
    match select(b, t.cc, m) {
        Image::Sass(_) => Vec::new(),
        Image::None => {
            let mut f = Finding::new(
                Code::NoKernelImage,
                format!(
                    "{}: no kernel image for {}; kernels fail with CUDA error 209 (no kernel image is available for execution on the device)",
                    b.path, t.label
                ),
                suggestion(t.cc),
            );
            let mut seen = Vec::new();
            for e in &entries {
                let line = why_not(e, t.cc, m);
                if !seen.contains(&line) {
                    seen.push(line);
                }
            }
            if !entries.iter().any(|e| e.kind == CodeKind::Ptx) {
                seen.push("no PTX to JIT-compile for a newer GPU".into());
            }
            for l in seen {
                f = f.because(format!("{}: {l}", b.path));
            }
            for ev in &t.evidence {
                f = f.because(ev.clone());
            }
            for e in entries.iter().filter(|e| e.suffix == Some('f')) {
                if let Some(fam) = entry_cc(e).and_then(|c| m.family(c)) {
                    let line = format!(
                        "family {} has members {} [matrix {}]",
                        fam.name,
                        fam.members
                            .iter()
                            .map(|c| c.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        fam.row.cite(m)
                    );
                    // A GPU of the family's major that is not a listed member (Rubin, 10.7): the sources do
                    // not say whether family code runs there, and the finding must say so.
                    let line = match (&fam.row.note, fam.members.first()) {
                        (Some(note), Some(first)) if first.major == t.cc.major => format!("{line}; {note}"),
                        _ => line,
                    };
                    if !f.evidence.contains(&line) {
                        f = f.because(line);
                    }
                }
            }
            vec![
                f.because(format!("binary compatibility rules: PG ({pg})"))
                    .at(&b.path),
            ]
        }
        Image::Ptx(p) | Image::LinkedPtx(p) => {
            let linked = matches!(select(b, t.cc, m), Image::LinkedPtx(_));
            let mut out = vec![jit_required(b, p, t, linked)];
            if let Some(f) = too_new(b, p, t, drv, m) {
                out.push(f);
            }
            out
        }
    }
}

fn jit_required(b: &BinaryFacts, p: &DeviceCode, t: &Target, linked: bool) -> Finding {
    let what = if linked {
        format!(
            "{}: no device-linked image for {}; the CUDA runtime must JIT-compile and link the relocatable PTX {} at first launch",
            b.path, t.label, p.arch
        )
    } else {
        format!(
            "{}: no SASS for {}; the driver must JIT-compile PTX {} at first launch",
            b.path, t.label, p.arch
        )
    };
    let mut f = Finding::new(
        Code::PtxJitRequired,
        what,
        format!(
            "It runs, but the first launch is slower (the JIT cache in ~/.nv/ComputeCache helps later runs), it needs \
             the driver's JIT (libnvidia-ptxjitcompiler; CUDA_DISABLE_PTX_JIT unset), PTX newer than the driver \
             cannot be JIT-compiled under minor-version compatibility, and code JIT-compiled from older PTX does not \
             use newer hardware features. Add SASS: nvcc -gencode arch=compute_{sm},code=sm_{sm}.",
            sm = t.cc.sm()
        ),
    );
    let sass: Vec<&str> = b
        .device_code
        .iter()
        .filter(|e| e.kind == CodeKind::Sass && !e.relocatable)
        .map(|e| e.arch.as_str())
        .collect();
    f = f.because(if sass.is_empty() {
        format!("{} carries no SASS, only PTX", b.path)
    } else {
        format!(
            "{}: SASS {} does not run on CC {}",
            b.path,
            dedup(&sass).join(" "),
            t.cc
        )
    });
    if linked {
        f = f.because(format!(
            "{}: the PTX is relocatable (__nv_relfatbin); the runtime JIT-links it (observed with an nvcc 13.0 -rdc=true program of sm_75 SASS on an H200: error 223 once JIT is disabled), not documented by NVIDIA",
            b.path
        ));
    }
    f = f.because(format!(
        "{}: PTX {}{} is the highest PTX not above CC {}",
        b.path,
        p.arch,
        p.ptx_isa
            .as_deref()
            .map(|v| format!(" (ISA {v})"))
            .unwrap_or_default(),
        t.cc
    ));
    for ev in &t.evidence {
        f = f.because(ev.clone());
    }
    f.at(&b.path)
}

fn dedup<'a>(v: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for s in v {
        if !out.contains(s) {
            out.push(s);
        }
    }
    out
}

/// `ptx-too-new` with no GPU known: a binary without SASS must JIT its PTX on every GPU, so if even its oldest
/// PTX is newer than the driver's JIT, it fails everywhere.
pub fn ptx_only_too_new(b: &BinaryFacts, drv: Option<&Driver>, m: &Matrix) -> Option<Finding> {
    if loadable(b, CodeKind::Sass).next().is_some() {
        return None;
    }
    let p = loadable(b, CodeKind::Ptx).min_by_key(|e| ptx_isa(e))?;
    let cc = entry_cc(p)?;
    let any = Target {
        label: "any GPU".to_string(),
        cc,
        evidence: vec![format!(
            "{} carries no SASS: every GPU must JIT-compile its PTX",
            b.path
        )],
    };
    too_new(b, p, &any, drv, m)
}

fn too_new(b: &BinaryFacts, p: &DeviceCode, t: &Target, drv: Option<&Driver>, m: &Matrix) -> Option<Finding> {
    let drv = drv?;
    let isa = ptx_isa(p)?;
    let dc = m.driver_cuda(&drv.version)?;
    if m.driver_beyond_table(&drv.version) {
        return None;
    }
    let (needs, cite) = match m.ptx_isa(isa) {
        Some(row) => (row.cuda, row.row.cite(m)),
        None => {
            let last = m.ptx.last()?;
            if isa < last.isa {
                return None;
            }
            (
                last.cuda,
                format!(
                    "ISA {isa} is newer than every ISA the matrix knows (newest: {} from CUDA {}); {}",
                    last.isa,
                    last.cuda,
                    last.row.cite(m)
                ),
            )
        }
    };
    if needs <= dc.cuda {
        return None;
    }
    let max = m.max_ptx_isa(dc.cuda);
    let need_branch = m.branches.iter().find(|r| r.cuda >= needs);
    let mut f = Finding::new(
        Code::PtxTooNew,
        format!(
            "{}: PTX {} has ISA {isa} (CUDA {needs}), newer than driver {} can JIT-compile for {}; it fails with CUDA error 222 (the provided PTX was compiled with an unsupported toolchain)",
            b.path, p.arch, drv.version, t.label
        ),
        format!(
            "Upgrade the driver to R{} or later (CUDA {needs}), or rebuild with SASS for CC {} so no JIT is needed, or build the PTX with an older toolkit.",
            need_branch.map_or_else(|| "?".to_string(), |r| r.branch.to_string()),
            t.cc
        ),
    );
    f = f.because(format!("{}: PTX {} declares .version {isa}", b.path, p.arch));
    f = f.because(format!(
        "driver {} (from {}) supports CUDA {} [matrix {}]",
        drv.version,
        drv.source,
        dc.cuda,
        dc.row.row.cite(m)
    ));
    if let Some(mx) = max {
        f = f.because(format!(
            "CUDA {} drivers JIT PTX ISA up to {} [matrix {}]",
            dc.cuda,
            mx.isa,
            mx.row.cite(m)
        ));
    }
    f = f.because(format!("PTX ISA {isa} came with CUDA {needs} [matrix {cite}]"));
    Some(f.at(&b.path))
}
