//! The JSON report: the wire types of the stable contract (README, "JSON").
//!
//! `schema_version` 1. Consumers may rely on every field documented in the design; additive fields keep the
//! version, anything else bumps it. The wire types live here, apart from the facts model, so that a refactor of
//! the facts cannot silently change the contract. `tests/` checks every fixture's report with the contract's
//! own checker, which CI provides beside the checkout.

use super::model::{Report, Summary};
use crate::facts::{BinaryFacts, CodeKind, DeviceCode, Format};
use crate::findings::Finding;
use serde::Serialize;
use std::io::{self, Write};

/// The contract version.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Wire<'a> {
    schema_version: u32,
    /// `name` and `version` (the contract), plus `commit`, `target` and the bundled `matrix` {`version`,
    /// `date`} (additive): which build wrote the report and which matrix it carries (`build_info`).
    tool: crate::build_info::BuildInfo,
    binaries: Vec<Binary<'a>>,
    libraries: Vec<Library<'a>>,
    host: Host<'a>,
    /// The live probe's facts (`probe`, `inspect --probe`); documented in `facts::probe`.
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<&'a crate::facts::probe::ProbeFacts>,
    findings: &'a [Finding],
    /// Python wheels read by `audit` (additive to the contract): name, version, `Requires-Dist` verbatim and
    /// parsed (`requirements`, with when pip installs each and what CUDA it brings), and `cuda_libraries`, where
    /// each CUDA library its binaries need comes from (`bundled`, `dependency`, `extra`, `missing`).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    wheels: &'a [crate::facts::WheelFacts],
    /// The container image inspected (`inspect --image`; additive to the contract): its file, format,
    /// platform, config digest, Entrypoint/Cmd and the program inspected for them (`image::ImageFacts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<&'a crate::image::ImageFacts>,
    /// The Python environment's frameworks (`inspect` of an environment, `doctor`; additive): the interpreter
    /// and why (`python`), `kind`, and per framework its `installed` version and verdicts (`alone`, and
    /// `together` in `order` when several), each `{"kind": "gpu" | "cpu" | "fails", …}`; `inspect` adds every
    /// modelled process (`runs`). `docs/python-frameworks.md`.
    #[serde(skip_serializing_if = "Option::is_none")]
    python: Option<&'a crate::diagnose::frameworks::Frameworks>,
    /// One verdict per binary and GPU (additive to the contract; empty when no GPU is known).
    verdicts: &'a [crate::diagnose::Verdict],
    /// The outcome of each inspected program, read from the same findings as the verdicts (additive): one per
    /// verdict, or, with no GPU known, whether an error stops it. `standing` is `runs`, `runs-after-jit`,
    /// `fails`, `no-device-code` or `no-error`; `subject` is null for the machine alone (`doctor`). The human
    /// report's first lines.
    headlines: &'a [crate::diagnose::Headline],
    summary: Summary,
}

/// One library request of one binary (`loader::Library`), flattened over the binaries.
#[derive(Serialize)]
struct Library<'a> {
    /// The inspected binary whose process this request belongs to.
    binary: &'a str,
    soname: &'a str,
    needed_by: &'a str,
    path: Option<&'a str>,
    how: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    via: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    realpath: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'a str>,
    dlopen: bool,
    preload: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    trail: &'a [crate::facts::loader::Step],
    #[serde(skip_serializing_if = "Option::is_none")]
    intended: Option<&'a crate::facts::loader::Intended>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    copies: &'a [crate::facts::loader::Copy],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    completions: &'a [String],
}

fn libraries(report: &Report) -> Vec<Library<'_>> {
    let mut out = Vec::new();
    for r in &report.facts.libraries {
        for l in &r.libraries {
            let obj = l.object.and_then(|i| r.objects.get(i));
            out.push(Library {
                binary: &r.binary,
                soname: &l.soname,
                needed_by: &l.needed_by,
                path: l.path.as_deref(),
                how: l.how.as_str(),
                via: l.via.as_deref(),
                realpath: obj.map(|o| o.realpath.as_str()),
                version: obj.and_then(|o| o.version.as_deref()),
                dlopen: l.dlopen,
                preload: l.preload,
                reason: l.reason.as_deref(),
                error: l.error.as_deref(),
                trail: &l.trail,
                intended: l.intended.as_ref(),
                copies: &l.copies,
                completions: &l.completions,
            });
        }
    }
    out
}

#[derive(Serialize)]
struct Host<'a> {
    /// False until host facts were collected for this report.
    collected: bool,
    driver: Driver<'a>,
    gpus: Vec<Gpu<'a>>,
    /// Everything collected about the machine (the `HostFacts` model), for consumers that want more than the
    /// stable summary above.
    #[serde(skip_serializing_if = "Option::is_none")]
    facts: Option<&'a crate::facts::HostFacts>,
    /// The machine's glibc (additive): `version` (`2.36`), `source` (`banner` or `verdef`), the `libc.so.6`
    /// its loader resolves (`path`, `real_path`) and what was read in it (`evidence`).
    #[serde(skip_serializing_if = "Option::is_none")]
    glibc: Option<&'a crate::facts::host::GlibcFacts>,
}

#[derive(Serialize)]
struct Driver<'a> {
    version: Option<&'a str>,
    /// The newest CUDA the driver supports (from the compatibility matrix).
    cuda: Option<&'a str>,
}

#[derive(Serialize)]
struct Gpu<'a> {
    name: &'a str,
    cc: Option<&'a str>,
    uuid: Option<&'a str>,
    pci_device_id: Option<String>,
    bus_id: Option<&'a str>,
}

fn host<'a>(
    h: Option<&'a crate::facts::HostFacts>,
    glibc: Option<&'a crate::facts::host::GlibcFacts>,
) -> Host<'a> {
    Host {
        collected: h.is_some(),
        driver: Driver {
            version: h.and_then(|h| h.driver.as_ref()).map(|d| d.version.as_str()),
            cuda: h.and_then(|h| h.driver_cuda.as_deref()),
        },
        gpus: h
            .map(|h| h.gpus.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|g| Gpu {
                name: &g.name,
                cc: g.cc.as_deref(),
                uuid: g.uuid.as_deref(),
                pci_device_id: g.pci_device_id.map(|d| format!("0x{d:04x}")),
                bus_id: g.bus_id.as_deref(),
            })
            .collect(),
        facts: h,
        glibc,
    }
}

#[derive(Serialize)]
struct Binary<'a> {
    path: &'a str,
    format: &'static str,
    size: u64,
    needed: &'a [String],
    rpath: &'a [String],
    runpath: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    elf: Option<Elf<'a>>,
    cudart: Cudart<'a>,
    device_code: Vec<Entry<'a>>,
    /// Present (true) when the device code was not read (`--no-device-code`): `device_code` is then empty.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    device_code_skipped: bool,
    /// NVVM IR entries (`-dlto`): not loadable by the driver, so not part of `device_code`.
    nvvm: Vec<Entry<'a>>,
    fatbins: &'a [crate::facts::FatbinContainer],
    problems: &'a [crate::facts::Problem],
    /// The glibc floor (additive; ELF files only): the highest `GLIBC_x.y` the file needs and, when its
    /// libraries were resolved, the highest of its whole process.
    #[serde(skip_serializing_if = "Option::is_none")]
    glibc: Option<Glibc<'a>>,
}

/// `binaries[].glibc`: `needs` (`"2.34"`, null when the file needs no glibc version), the version `name` and
/// the library it is needed `from`; `tree`, the same for every object the loader maps, with the object that
/// needs it (`needed_by`).
#[derive(Serialize)]
struct Glibc<'a> {
    needs: Option<String>,
    name: Option<String>,
    from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tree: Option<TreeGlibc<'a>>,
}

#[derive(Serialize)]
struct TreeGlibc<'a> {
    needs: Option<String>,
    name: Option<String>,
    from: Option<String>,
    needed_by: Option<&'a str>,
}

fn glibc<'a>(b: &'a BinaryFacts, floors: &'a crate::diagnose::GlibcFloors) -> Option<Glibc<'a>> {
    let own = crate::glibc::floor(&b.elf.as_ref()?.version_needs);
    let tree = floors.get(&b.path).map(|top| TreeGlibc {
        needed_by: top.as_ref().map(|(by, _)| by.as_str()),
        needs: top.as_ref().map(|(_, n)| n.version.clone()),
        name: top.as_ref().map(|(_, n)| n.name.clone()),
        from: top.as_ref().map(|(_, n)| n.from.clone()),
    });
    Some(Glibc {
        needs: own.as_ref().map(|n| n.version.clone()),
        name: own.as_ref().map(|n| n.name.clone()),
        from: own.map(|n| n.from),
        tree,
    })
}

#[derive(Serialize)]
struct Elf<'a> {
    class: crate::facts::ElfClass,
    machine: &'a str,
    #[serde(rename = "type")]
    elf_type: &'a str,
    interpreter: Option<&'a str>,
    soname: Option<&'a str>,
    flags_1: u64,
    nodeflib: bool,
    version_needs: &'a [crate::facts::VersionNeed],
    version_defs: &'a [String],
    defined_symbols: usize,
    undefined_symbols: usize,
    stripped: bool,
}

#[derive(Serialize)]
struct Cudart<'a> {
    linkage: &'static str,
    version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    soname: Option<&'a str>,
    evidence: &'a [String],
}

#[derive(Serialize)]
struct Entry<'a> {
    kind: &'static str,
    arch: &'a str,
    ptx_isa: Option<&'a str>,
    compression: &'static str,
    size: u64,
    stored_size: u64,
    toolkit: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    toolkit_source: Option<&'a str>,
    /// Why the payload was not read (additive): its toolkit and kernels are unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    unread: Option<&'a str>,
    relocatable: bool,
    code_version: String,
    flags: String,
    debug: bool,
    /// 64 or 32 (fatbin flag 0x1).
    compile_size: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    identifier: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    options: Option<&'a str>,
    container: usize,
    offset: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cubin: Option<&'a crate::facts::CubinFacts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ptx: Option<&'a crate::facts::PtxFacts>,
}

fn entry(e: &DeviceCode) -> Entry<'_> {
    Entry {
        kind: e.kind.as_str(),
        arch: &e.arch,
        ptx_isa: e.ptx_isa.as_deref(),
        compression: e.compression.as_str(),
        size: e.size,
        stored_size: e.stored_size,
        toolkit: e.toolkit.as_deref(),
        toolkit_source: e.toolkit_source.as_deref(),
        unread: e.unread.as_deref(),
        relocatable: e.relocatable,
        code_version: format!("{}.{}", e.code_version[0], e.code_version[1]),
        flags: format!("0x{:x}", e.flags),
        debug: e.debug,
        compile_size: if e.bits64 { 64 } else { 32 },
        identifier: e.identifier.as_deref(),
        options: e.options.as_deref(),
        container: e.container,
        offset: e.offset,
        cubin: e.cubin.as_deref(),
        ptx: e.ptx.as_deref(),
    }
}

fn binary<'a>(b: &'a BinaryFacts, floors: &'a crate::diagnose::GlibcFloors) -> Binary<'a> {
    let empty: &[String] = &[];
    let elf = b.elf.as_ref();
    Binary {
        path: &b.path,
        format: b.format.map_or("unknown", Format::as_str),
        size: b.size,
        needed: elf.map_or(empty, |e| &e.needed),
        rpath: elf.map_or(empty, |e| &e.rpath),
        runpath: elf.map_or(empty, |e| &e.runpath),
        elf: elf.map(|e| Elf {
            class: e.class,
            machine: &e.machine_name,
            elf_type: &e.elf_type,
            interpreter: e.interpreter.as_deref(),
            soname: e.soname.as_deref(),
            flags_1: e.flags_1,
            nodeflib: e.nodeflib,
            version_needs: &e.version_needs,
            version_defs: &e.version_defs,
            defined_symbols: e.defined_count,
            undefined_symbols: e.undefined_count,
            stripped: !e.has_symtab,
        }),
        cudart: Cudart {
            linkage: b.cudart.linkage.as_str(),
            version: b.cudart.version.as_deref(),
            soname: b.cudart.soname.as_deref(),
            evidence: &b.cudart.evidence,
        },
        device_code: b
            .device_code
            .iter()
            .filter(|e| e.kind != CodeKind::Nvvm)
            .map(entry)
            .collect(),
        device_code_skipped: b.device_code_skipped,
        nvvm: b
            .device_code
            .iter()
            .filter(|e| e.kind == CodeKind::Nvvm)
            .map(entry)
            .collect(),
        fatbins: &b.fatbins,
        problems: &b.problems,
        glibc: glibc(b, floors),
    }
}

/// Writes the report as one JSON document followed by a newline.
pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let wire = Wire {
        schema_version: SCHEMA_VERSION,
        tool: crate::build_info::BuildInfo::current(),
        binaries: report
            .facts
            .binaries
            .iter()
            .map(|b| binary(b, &report.glibc_floors))
            .collect(),
        libraries: libraries(report),
        host: host(report.facts.host.as_ref(), report.facts.glibc()),
        probe: report.facts.probe.as_ref(),
        findings: &report.findings,
        wheels: &report.facts.wheels,
        image: report.facts.image.as_ref(),
        python: report.python.as_ref(),
        verdicts: &report.verdicts,
        headlines: &report.headlines,
        summary: report.summary(),
    };
    serde_json::to_writer_pretty(&mut *out, &wire).map_err(io::Error::other)?;
    writeln!(out)
}
