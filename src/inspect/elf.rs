//! Host ELF files: loader facts, where the fatbins are, and how the CUDA runtime is linked.
//!
//! Loader facts (`DT_NEEDED`, `DT_RPATH` and `DT_RUNPATH` kept apart, `DF_1_NODEFLIB`, symbol versions) are
//! copied out of goblin into [`ElfFacts`] for the loader emulation. Fatbins are found three ways, as
//! `docs/fatbin-format.md` ("Sections") describes: the `.nv_fatbin` and `__nv_relfatbin` sections, the
//! `__fatBinC_Wrapper_t` records of `.nvFatBinSegment` (whose pointers may name containers elsewhere), and, only
//! when neither exists in a file that registers fatbins, a bounded scan of the other data sections for the
//! container magic.

use super::fatbin::{self, Region, WRAPPER_MAGIC};
use super::input::Input;
use crate::facts::{CudartFacts, CudartLinkage, DynSymbol, ElfClass, ElfFacts, VersionNeed};
use goblin::elf::Elf;
use goblin::elf::section_header::{SHT_NOBITS, SHT_PROGBITS};
use goblin::elf::sym::{
    STB_GLOBAL, STB_WEAK, STT_COMMON, STT_FUNC, STT_GNU_IFUNC, STT_NOTYPE, STT_OBJECT, STT_TLS,
};
use std::sync::Arc;

/// `DF_1_NODEFLIB`.
pub const DF_1_NODEFLIB: u64 = 0x800;
/// The fallback magic scan reads at most this many bytes of a file.
pub const SCAN_LIMIT: usize = 1 << 30;

/// Copies the loader-relevant facts out of a parsed ELF: [`loader_facts`] and [`symbol_facts`] (`file`: the
/// file `bytes` map from its start, for [`symbol_facts`]).
pub fn facts(elf: &Elf<'_>, bytes: &[u8], file: Option<&std::fs::File>) -> ElfFacts {
    let mut f = loader_facts(elf);
    let s = symbol_facts(elf, bytes, file);
    f.defined_count = s.defined_count;
    f.undefined_count = s.undefined_count;
    f.versioned_undefined = s.versioned_undefined.into();
    f
}

/// What the loader's walk needs of an ELF: its header, dynamic section and version tables, without a look at
/// its dynamic symbols (`defined_count`, `undefined_count` and `versioned_undefined` are left empty; a C++
/// library has tens of thousands of symbols, which the walk never needs: see [`symbol_facts`]).
pub fn loader_facts(elf: &Elf<'_>) -> ElfFacts {
    let flags_1 = elf.dynamic.as_ref().map_or(0, |d| d.info.flags_1);
    let split =
        |v: &[&str]| -> Vec<String> { v.iter().flat_map(|s| s.split(':')).map(str::to_string).collect() };
    let mut version_needs = Vec::new();
    if let Some(verneed) = &elf.verneed {
        for need in verneed.iter() {
            let file = super::elfparse::dynstr(elf, need.vn_file)
                .unwrap_or("")
                .to_string();
            let versions = need
                .iter()
                .map(|aux| {
                    super::elfparse::dynstr(elf, aux.vna_name)
                        .unwrap_or("")
                        .to_string()
                })
                .collect();
            version_needs.push(VersionNeed { file, versions });
        }
    }
    let version_defs = super::elfparse::verdef_names(elf)
        .into_iter()
        .map(|(_, name)| name.to_string())
        .collect();
    ElfFacts {
        class: if elf.is_64 {
            ElfClass::Elf64
        } else {
            ElfClass::Elf32
        },
        machine: elf.header.e_machine,
        machine_name: machine_name(elf.header.e_machine),
        elf_type: goblin::elf::header::et_to_str(elf.header.e_type)
            .trim_start_matches("ET_")
            .to_ascii_lowercase(),
        os_abi: elf.header.e_ident[goblin::elf::header::EI_OSABI],
        interpreter: elf.interpreter.map(str::to_string),
        soname: elf.soname.map(str::to_string),
        needed: elf.libraries.iter().map(|s| s.to_string()).collect(),
        rpath: split(&elf.rpaths),
        runpath: split(&elf.runpaths),
        flags_1,
        nodeflib: flags_1 & DF_1_NODEFLIB != 0,
        version_needs,
        version_defs,
        defined_count: 0,
        undefined_count: 0,
        versioned_undefined: Default::default(),
        has_symtab: super::elfparse::has_symtab(elf),
    }
}

/// The dynamic-symbol part of [`ElfFacts`].
#[derive(Debug, Clone, Default)]
pub struct SymbolFacts {
    /// Defined, exported dynamic symbols.
    pub defined_count: usize,
    /// Undefined dynamic symbols.
    pub undefined_count: usize,
    /// The undefined dynamic symbols that carry a version.
    pub versioned_undefined: Vec<DynSymbol>,
}

/// Version names by `.gnu.version` index (indexes are small: one per version needed or defined).
fn version_names(elf: &Elf<'_>) -> Vec<Option<Arc<str>>> {
    fn name_version(names: &mut Vec<Option<Arc<str>>>, ndx: u16, name: &str) {
        let i = usize::from(ndx & 0x7fff);
        if names.len() <= i {
            names.resize(i + 1, None);
        }
        names[i] = Some(name.into());
    }
    let mut version_names: Vec<Option<Arc<str>>> = Vec::new();
    if let Some(verneed) = &elf.verneed {
        for need in verneed.iter() {
            for aux in need.iter() {
                let name = super::elfparse::dynstr(elf, aux.vna_name).unwrap_or("");
                name_version(&mut version_names, aux.vna_other, name);
            }
        }
    }
    for (ndx, name) in super::elfparse::verdef_names(elf) {
        name_version(&mut version_names, ndx, name);
    }
    version_names
}

/// Is this dynamic symbol one that binds across objects (global, weak or unique; a function, object, TLS or
/// untyped symbol)?
fn binds(sym: super::elfparse::RawSym) -> bool {
    let bind = sym.bind();
    (bind == STB_GLOBAL || bind == STB_WEAK || bind == goblin::elf::sym::STB_GNU_UNIQUE)
        && matches!(
            sym.kind(),
            STT_FUNC | STT_OBJECT | STT_NOTYPE | STT_GNU_IFUNC | STT_TLS | STT_COMMON
        )
}

/// Only [`SymbolFacts::versioned_undefined`]: the version table is read first, so the symbols without a
/// version (most of a C++ library's) are never decoded. `file`, the open file `bytes` maps, has the names of a
/// large `.dynstr` read by positioned reads rather than through the map ([`super::elfparse::strings_read_at`]).
pub fn versioned_undefined(elf: &Elf<'_>, bytes: &[u8], file: Option<&std::fs::File>) -> Vec<DynSymbol> {
    let syms = super::elfparse::RawDynsyms::new(elf, bytes);
    let mut wanted = Vec::new();
    for i in 0..syms.len() {
        let Some(v) = syms.version(i).filter(|v| v & 0x7fff > 1) else {
            continue;
        };
        let Some(sym) = syms.get(i) else { break };
        if sym.name == 0 || sym.shndx != 0 || !binds(sym) {
            continue;
        }
        wanted.push((sym, v));
    }
    named_imports(elf, bytes, file, wanted)
}

/// The imports `wanted` (each with its `.gnu.version` value), named; their names read by positioned reads
/// ([`super::elfparse::strings_read_at`]) from a large `.dynstr` when the file is at hand (`file` maps as
/// `bytes`, from its start), else through the map.
fn named_imports(
    elf: &Elf<'_>,
    bytes: &[u8],
    file: Option<&std::fs::File>,
    wanted: Vec<(super::elfparse::RawSym, u16)>,
) -> Vec<DynSymbol> {
    let version_names = version_names(elf);
    if let Some(file) = file
        && let Some(table) = super::elfparse::dynstr_table(elf, bytes).filter(|t| t.len() >= READ_NAMES_FROM)
    {
        let offsets: Vec<u32> = wanted.iter().map(|(sym, _)| sym.name).collect();
        if let Some(names) = super::elfparse::strings_read_at(file, bytes, table, &offsets) {
            return wanted
                .into_iter()
                .zip(names)
                .filter_map(|((sym, v), name)| Some(named(name?, &version_names, sym, v)))
                .collect();
        }
    }
    wanted
        .into_iter()
        .filter_map(|(sym, v)| import(elf, bytes, &version_names, sym, v))
        .collect()
}

/// A `.dynstr` this large has its imports' names read by positioned reads when the file is at hand: about the
/// size past which the pages touched through the map (whole page-cache folios) outweigh the copies.
const READ_NAMES_FROM: usize = 1 << 20;

/// The undefined symbol `sym` with its `.gnu.version` value `v`, named (`None`: its name is unreadable).
fn import(
    elf: &Elf<'_>,
    bytes: &[u8],
    version_names: &[Option<Arc<str>>],
    sym: super::elfparse::RawSym,
    v: u16,
) -> Option<DynSymbol> {
    let name = super::elfparse::dynstr_at(elf, bytes, sym.name as usize)?;
    Some(named(name.to_string(), version_names, sym, v))
}

/// The undefined symbol `sym` named `name`, with its `.gnu.version` value `v`.
fn named(
    name: String,
    version_names: &[Option<Arc<str>>],
    sym: super::elfparse::RawSym,
    v: u16,
) -> DynSymbol {
    DynSymbol {
        name,
        // Each version's name is made once and shared by its symbols (glibc's few names, thousands of imports).
        version: version_names.get(usize::from(v & 0x7fff)).cloned().flatten(),
        hidden: v & 0x8000 != 0,
        weak: sym.bind() == STB_WEAK,
    }
}

/// Counts the dynamic symbols and names the undefined ones that carry a version. Every symbol is counted; only
/// the versioned undefined ones are named (the version is read first, from `.gnu.version`, so a C++ library's
/// hundred thousand unversioned imports cost no string reads).
pub fn symbol_facts(elf: &Elf<'_>, bytes: &[u8], file: Option<&std::fs::File>) -> SymbolFacts {
    let mut out = SymbolFacts::default();
    let mut wanted = Vec::new();
    let syms = super::elfparse::RawDynsyms::new(elf, bytes);
    for (i, sym) in syms.iter().enumerate() {
        if sym.name == 0 {
            continue;
        }
        if !binds(sym) {
            continue;
        }
        if sym.shndx != 0 {
            // What an object defines is asked of its hash table when something needs it
            // (`inspect::exports::Exports`), not copied out here.
            out.defined_count += 1;
            continue;
        }
        out.undefined_count += 1;
        let Some(v) = syms.version(i).filter(|v| v & 0x7fff > 1) else {
            continue;
        };
        wanted.push((sym, v));
    }
    out.versioned_undefined = named_imports(elf, bytes, file, wanted);
    out
}

/// A short name for `e_machine`, as `readelf` spells the common ones.
pub fn machine_name(machine: u16) -> String {
    use goblin::elf::header::*;
    match machine {
        EM_X86_64 => "x86_64".into(),
        EM_386 => "i386".into(),
        EM_AARCH64 => "aarch64".into(),
        EM_ARM => "arm".into(),
        EM_PPC64 => "ppc64".into(),
        EM_RISCV => "riscv".into(),
        EM_S390 => "s390".into(),
        190 => "cuda".into(),
        other => machine_to_str(other)
            .trim_start_matches("EM_")
            .to_ascii_lowercase(),
    }
}

pub(super) fn section_name<'a>(elf: &'a Elf<'_>, sh: &goblin::elf::SectionHeader) -> &'a str {
    elf.shdr_strtab.get_at(sh.sh_name).unwrap_or("")
}

fn file_range(sh: &goblin::elf::SectionHeader, len: usize) -> Option<(usize, usize)> {
    if sh.sh_type == SHT_NOBITS {
        return None;
    }
    let start = usize::try_from(sh.sh_offset).ok()?;
    let end = start.checked_add(usize::try_from(sh.sh_size).ok()?)?;
    (end <= len).then_some((start, end))
}

/// File offset of a virtual address, through the section that holds it.
fn vaddr_to_offset(elf: &Elf<'_>, data_len: usize, vaddr: u64) -> Option<usize> {
    elf.section_headers.iter().find_map(|sh| {
        let (start, end) = file_range(sh, data_len)?;
        (sh.sh_addr != 0 && vaddr >= sh.sh_addr && vaddr < sh.sh_addr + sh.sh_size)
            .then(|| start + (vaddr - sh.sh_addr) as usize)
            .filter(|&o| o < end)
    })
}

/// Where the fatbin containers of this ELF are. Problems found on the way (a wrapper pointing nowhere) are
/// returned as messages with offsets.
pub fn fatbin_regions(elf: &Elf<'_>, input: &Input<'_>) -> (Vec<Region>, Vec<(usize, String)>) {
    let data = input.as_slice();
    let mut regions = Vec::new();
    let mut problems = Vec::new();
    for sh in &elf.section_headers {
        let name = section_name(elf, sh);
        if name == ".nv_fatbin" || name == "__nv_relfatbin" {
            match file_range(sh, data.len()) {
                Some((start, end)) => regions.push(Region {
                    section: Some(name.to_string()),
                    start,
                    end,
                    relocatable: name == "__nv_relfatbin",
                    found_by_scan: false,
                }),
                None => problems.push((
                    sh.sh_offset as usize,
                    format!(
                        "section {name} lies outside the file (offset 0x{:x}, {} bytes)",
                        sh.sh_offset, sh.sh_size
                    ),
                )),
            }
        }
    }
    let covered = |off: usize, regions: &[Region]| regions.iter().any(|r| off >= r.start && off < r.end);
    // Wrappers: each points at a container. A container outside the known sections is read on its own.
    for sh in &elf.section_headers {
        if section_name(elf, sh) != ".nvFatBinSegment" {
            continue;
        }
        let Some((start, end)) = file_range(sh, data.len()) else {
            continue;
        };
        let mut off = start;
        while off + 24 <= end {
            let rec = &data[off..off + 24];
            let magic = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
            if magic == WRAPPER_MAGIC {
                let ptr = u64::from_le_bytes(rec[8..16].try_into().unwrap_or([0; 8]));
                // In relocatable objects the pointer is 0 and a relocation supplies it: nothing to follow.
                if ptr != 0 {
                    match vaddr_to_offset(elf, data.len(), ptr) {
                        Some(target) if covered(target, &regions) => {}
                        Some(target) if fatbin::container_at(input, target) => {
                            let size = input.u64_at(target + 8).unwrap_or(0);
                            let end = (target as u64 + 16 + size).min(data.len() as u64) as usize;
                            regions.push(Region {
                                section: elf
                                    .section_headers
                                    .iter()
                                    .find(|s| file_range(s, data.len()).is_some_and(|(a, b)| target >= a && target < b))
                                    .map(|s| section_name(elf, s).to_string()),
                                start: target,
                                end,
                                relocatable: false,
                                found_by_scan: false,
                            });
                        }
                        _ => problems.push((
                            off,
                            format!("fatbin wrapper at 0x{off:x} points at 0x{ptr:x}, where no fatbin container is"),
                        )),
                    }
                }
            }
            off += 24;
        }
    }
    // Unusual layouts: look for the container magic in the other data sections, within a bound, but only in
    // files that show they register fatbins: a `__cudaRegisterFatBinary*` symbol (what nvcc's host stubs call)
    // or one of the sections nvcc writes. Linking the runtime is no such sign: `libtorch_cpu.so` needs
    // `libcudart.so` and carries no fatbin, and scanning its 67 MB for a magic number was a quarter of a
    // default `inspect` of PyTorch. A file without section headers has no sections to scan.
    let cuda_evidence = || {
        elf.section_headers.iter().any(|sh| {
            matches!(
                section_name(elf, sh),
                ".nvFatBinSegment" | ".nv_fatbin" | "__nv_relfatbin"
            )
        }) || registers_fatbins(elf, input)
    };
    if regions.is_empty() && cuda_evidence() {
        let mut budget = SCAN_LIMIT;
        for sh in &elf.section_headers {
            if sh.sh_type != SHT_PROGBITS || budget == 0 {
                continue;
            }
            let name = section_name(elf, sh);
            if name.starts_with(".text") || name.starts_with(".debug") {
                continue;
            }
            let Some((start, end)) = file_range(sh, data.len()) else {
                continue;
            };
            let end = end.min(start + budget);
            budget -= end - start;
            for hit in fatbin::scan(input, start, end) {
                if covered(hit, &regions) {
                    continue;
                }
                let size = input.u64_at(hit + 8).unwrap_or(0);
                let c_end = (hit as u64)
                    .saturating_add(16)
                    .saturating_add(size)
                    .min(end as u64) as usize;
                regions.push(Region {
                    section: Some(name.to_string()),
                    start: hit,
                    end: c_end,
                    relocatable: false,
                    found_by_scan: true,
                });
            }
        }
    }
    regions.sort_by_key(|r| r.start);
    (regions, problems)
}

/// Does a dynamic symbol of this ELF start with `__cudaRegisterFatBinary` (nvcc's host code calls it for every
/// fatbin)? The dynamic string table is first searched for the name with positioned reads: a C++ library's
/// (5 MB for `libtorch_cpu.so`) would otherwise become resident through the map, a page at a time, only to
/// say no.
fn registers_fatbins(elf: &Elf<'_>, input: &Input<'_>) -> bool {
    const NAME: &str = "__cudaRegisterFatBinary";
    let data = input.as_slice();
    let dynstr = elf
        .section_headers
        .iter()
        .find(|sh| section_name(elf, sh) == ".dynstr")
        .and_then(|sh| file_range(sh, data.len()));
    if let Some((start, end)) = dynstr {
        let finder = memchr::memmem::Finder::new(NAME);
        if input
            .chunks(start, end, super::input::CHUNK, NAME.len(), |_, c| {
                finder.find(c).map(|_| ())
            })
            .is_none()
        {
            return false;
        }
    }
    let syms = super::elfparse::RawDynsyms::new(elf, data);
    (0..syms.len())
        .filter_map(|i| syms.get(i))
        .any(|s| super::elfparse::dynstr_starts_with(elf, data, s.name as usize, NAME))
}

/// How the binary links the CUDA runtime and, where it can be read, which version.
pub fn cudart(elf: &Elf<'_>, facts: &ElfFacts, input: &Input<'_>, has_device_code: bool) -> CudartFacts {
    let data = input.as_slice();
    if let Some(soname) = facts.needed.iter().find(|n| n.starts_with("libcudart.so")) {
        return CudartFacts {
            linkage: CudartLinkage::Dynamic,
            version: None,
            soname: Some(soname.clone()),
            evidence: vec![format!("DT_NEEDED {soname}")],
        };
    }
    // The static runtime defines its API in the binary itself.
    // Exported symbols are cheap to check; the full .symtab is searched only when the binary carries device
    // code (reading a 70 MB string table for every host library would cost more than all the rest).
    let defined = |name: &str| -> Option<(u64, u64)> {
        super::elfparse::dynsym_lookup(elf, data, name)
            .map(|s| (s.st_value, s.st_size))
            .or_else(|| {
                has_device_code
                    .then(|| super::elfparse::symtab_lookup(elf, input, name))
                    .flatten()
            })
    };
    let mut evidence = Vec::new();
    let get_version = defined("cudaRuntimeGetVersion");
    if get_version.is_some() {
        evidence.push("defines cudaRuntimeGetVersion".to_string());
    } else if defined("__cudaRegisterFatBinary").is_some() {
        evidence.push("defines __cudaRegisterFatBinary".to_string());
    } else if has_device_code && rodata_contains(elf, input, b"cudaErrorCudartUnloading") {
        evidence.push("contains the CUDA runtime's error-name table (stripped static cudart)".to_string());
    }
    if evidence.is_empty() {
        return CudartFacts::default();
    }
    let found = match get_version {
        Some((addr, size)) => version_from_function(elf, data, addr, size),
        None => version_from_accessor_pattern(elf, input),
    };
    let version = found.map(|(v, off)| {
        evidence.push(format!(
            "the runtime stores version {v} for cudaRuntimeGetVersion (file offset 0x{off:x})"
        ));
        format!("{}.{}", v / 1000, (v % 1000) / 10)
    });
    CudartFacts {
        linkage: CudartLinkage::Static,
        version,
        soname: None,
        evidence,
    }
}

/// The runtime version (`12.4`) a CUDA runtime library reports, read from its `cudaRuntimeGetVersion` (exported
/// or, in a vendored copy, only in `.symtab`). For the library catalogue, which already knows the file is a
/// libcudart.
pub fn library_runtime_version(data: &[u8]) -> Option<String> {
    let (elf, _) = super::elfparse::parse(data).ok()?;
    let input = Input::bytes(data);
    let (addr, size) = super::elfparse::dynsym_lookup(&elf, data, "cudaRuntimeGetVersion")
        .map(|s| (s.st_value, s.st_size))
        .or_else(|| super::elfparse::symtab_lookup(&elf, &input, "cudaRuntimeGetVersion"))?;
    let (v, _) = version_from_function(&elf, data, addr, size)?;
    Some(format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// The version `cudaRuntimeGetVersion` reports, read from its code: the function stores the constant itself
/// or, as in CUDA 13's static runtime, tail-calls a small accessor that does
/// (`test rdi,rdi; je …; mov dword [rdi], 13000; xor eax,eax; ret`). Direct calls and jumps are followed one
/// level. AArch64 code is read by [`super::a64`]. Returns the constant and its file offset.
pub fn version_from_function(elf: &Elf<'_>, data: &[u8], addr: u64, size: u64) -> Option<(u32, usize)> {
    let off = vaddr_to_offset(elf, data.len(), addr)?;
    let len = (size as usize).clamp(16, 512);
    let code = data.get(off..(off + len).min(data.len()))?;
    if elf.header.e_machine == goblin::elf::header::EM_AARCH64 {
        return a64_version(elf, data, code, addr, off);
    }
    if let Some((v, at)) = runtime_version_constant(code) {
        return Some((v, off + at));
    }
    for i in 0..code.len().saturating_sub(5) {
        if code[i] != 0xE8 && code[i] != 0xE9 {
            continue;
        }
        let rel = i32::from_le_bytes([code[i + 1], code[i + 2], code[i + 3], code[i + 4]]);
        let target = (addr as i64 + i as i64 + 5 + i64::from(rel)) as u64;
        let Some(t) = vaddr_to_offset(elf, data.len(), target) else {
            continue;
        };
        let Some(callee) = data.get(t..(t + 32).min(data.len())) else {
            continue;
        };
        if let Some((v, at)) = runtime_version_constant(callee) {
            return Some((v, t + at));
        }
    }
    None
}

/// [`version_from_function`] for AArch64 code ([`super::a64`]): the constant stored in the function itself
/// or, as in CUDA 12.9's runtime, in a callee (`bl` or `b` targets, followed one level, 64 bytes each).
fn a64_version(elf: &Elf<'_>, data: &[u8], code: &[u8], addr: u64, off: usize) -> Option<(u32, usize)> {
    // A literal pool word is read only where the file holds it.
    let literal = |a: u64| -> Option<u32> {
        let o = vaddr_to_offset(elf, data.len(), a)?;
        let b = data.get(o..o.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (found, branches) = super::a64::stored_version(code, addr, &literal);
    if let Some((v, at)) = found {
        return Some((v, off + at));
    }
    // Bounded: a function of 512 bytes has at most 128 branches, each read once.
    branches.into_iter().find_map(|target| {
        let t = vaddr_to_offset(elf, data.len(), target)?;
        let callee = data.get(t..(t + 64).min(data.len()))?;
        let (v, at) = super::a64::stored_version(callee, target, &literal).0?;
        Some((v, t + at))
    })
}

/// For stripped binaries: the static runtime's version accessor has a fixed shape
/// (`48 85 FF 74 xx C7 07 imm32 31 C0 C3`; AArch64's in [`super::a64::accessor_in`]); find it in the
/// executable sections.
fn version_from_accessor_pattern(elf: &Elf<'_>, input: &Input<'_>) -> Option<(u32, usize)> {
    let aarch64 = elf.header.e_machine == goblin::elf::header::EM_AARCH64;
    elf.section_headers.iter().find_map(|sh| {
        if sh.sh_flags & u64::from(goblin::elf::section_header::SHF_EXECINSTR) == 0 {
            return None;
        }
        let (start, end) = file_range(sh, input.len())?;
        if aarch64 {
            // Instructions are 4-byte aligned in the section: chunks overlapping by 64 bytes stay aligned.
            return input.chunks(start, end, super::input::CHUNK, 64, |at, text| {
                super::a64::accessor_in(text).map(|(v, i)| (v, at + i))
            });
        }
        input.chunks(start, end, super::input::CHUNK, 16, |at, text| {
            memchr::memmem::find_iter(text, &[0x48, 0x85, 0xFF, 0x74]).find_map(|i| {
                let w = text.get(i + 5..i + 16)?;
                let v = u32::from_le_bytes([w[2], w[3], w[4], w[5]]);
                (w[0] == 0xC7
                    && w[1] == 0x07
                    && w[6..9] == [0x31, 0xC0, 0xC3]
                    && (9000..=99_990).contains(&v)
                    && v.is_multiple_of(10))
                .then_some((v, at + i + 7))
            })
        })
    })
}

/// Whether `needle` occurs in the read-only data (`.rodata*`), read in chunks, not through the map. The
/// runtime's tables are there; the rest of a large library (its device code above all) is not read.
fn rodata_contains(elf: &Elf<'_>, input: &Input<'_>, needle: &[u8]) -> bool {
    let finder = memchr::memmem::Finder::new(needle);
    elf.section_headers.iter().any(|sh| {
        let Some((start, end)) = file_range(sh, input.len()) else {
            return false;
        };
        section_name(elf, sh).starts_with(".rodata")
            && input
                .chunks(start, end, super::input::CHUNK, needle.len(), |_, c| {
                    finder.find(c).map(|_| ())
                })
                .is_some()
    })
}

/// The version constant `cudaRuntimeGetVersion` stores (`13000` for 13.0): the first x86-64
/// `mov dword [mem], imm32` (opcode C7 /0) in the function whose immediate looks like a CUDA version.
pub fn runtime_version_constant(code: &[u8]) -> Option<(u32, usize)> {
    let plausible = |v: u32| (9000..=99_990).contains(&v) && v.is_multiple_of(10);
    for i in 0..code.len().saturating_sub(6) {
        if code[i] != 0xC7 {
            continue;
        }
        let modrm = code[i + 1];
        let (md, reg, rm) = (modrm >> 6, (modrm >> 3) & 7, modrm & 7);
        if reg != 0 || md == 3 {
            continue;
        }
        let sib = usize::from(rm == 4);
        let disp = match (md, rm) {
            (0, 5) => 4,
            (0, _) => 0,
            (1, _) => 1,
            _ => 4,
        };
        let at = i + 2 + sib + disp;
        let Some(b) = code.get(at..at + 4) else {
            continue;
        };
        let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if plausible(v) {
            return Some((v, at));
        }
    }
    None
}

#[cfg(test)]
#[path = "../../tests/it/support/tiny_runtime.rs"]
mod shared_builder;

/// The first answer `find` gives for the bytes of a `.rodata` section of the ELF file `data` (a constant
/// string a tool prints: NCCL's version, ptxas's banner), without reading anything else; none for a file this
/// parser refuses or without such a section header.
pub fn find_in_rodata<T>(data: &[u8], find: impl Fn(&[u8]) -> Option<T>) -> Option<T> {
    let (parsed, _) = super::elfparse::parse(data).ok()?;
    parsed
        .section_headers
        .iter()
        .filter(|sh| section_name(&parsed, sh) == ".rodata")
        .find_map(|sh| {
            let start = usize::try_from(sh.sh_offset).ok()?;
            let end = start.checked_add(usize::try_from(sh.sh_size).ok()?)?;
            find(data.get(start..end)?)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_constant_forms() {
        // mov dword [rdi], 13000
        assert_eq!(
            runtime_version_constant(&[0x90, 0xC7, 0x07, 0xC8, 0x32, 0, 0, 0xC3]),
            Some((13000, 3))
        );
        // mov dword [rdi+8], 12040
        assert_eq!(
            runtime_version_constant(&[0xC7, 0x47, 0x08, 0x08, 0x2F, 0, 0]),
            Some((12040, 3))
        );
        // mov dword [rsp+4], 11080 (SIB)
        assert_eq!(
            runtime_version_constant(&[0xC7, 0x44, 0x24, 0x04, 0x48, 0x2B, 0, 0]),
            Some((11080, 4))
        );
        // an implausible constant is ignored
        assert_eq!(runtime_version_constant(&[0xC7, 0x07, 0x01, 0, 0, 0, 0xC3]), None);
    }

    /// The shared test builder (`tests/it/support/tiny_runtime.rs`) with `func` words (the symbol's size),
    /// then `rest` (an accessor, a literal pool), all in `.text`, for `machine`.
    fn tiny_runtime(machine: u16, func: &[u32], rest: &[u32]) -> Vec<u8> {
        let text: Vec<u8> = func.iter().chain(rest).flat_map(|w| w.to_le_bytes()).collect();
        shared_builder::tiny_runtime(machine, &text, 4 * func.len() as u64)
    }

    const EM_AARCH64: u16 = 183;

    /// CUDA 12.9's aarch64 `cudaRuntimeGetVersion` hands the pointer to an accessor (`mov x0, x20; bl …`),
    /// which stores 12090: the call is followed. Words as in `libcudart.so.12` of the aarch64
    /// `nvidia-cuda-runtime-cu12` 12.9.79 wheel.
    #[test]
    fn aarch64_runtime_version_through_its_accessor() {
        let func = [
            0xa9b27bfd, // stp x29, x30, [sp, #-224]!
            0xaa0003f4, // mov x20, x0
            0xaa1403e0, // mov x0, x20
            0x94000003, // bl +12 (the accessor, just after the function)
            0xa8ce7bfd, // ldp x29, x30, [sp], #224
            0xd65f03c0, // ret
        ];
        let accessor = [
            0xaa0003e1, 0xb40000a0, 0x5285e742, 0x52800000, 0xb9000022, 0xd65f03c0,
        ];
        let elf = tiny_runtime(EM_AARCH64, &func, &accessor);
        assert_eq!(library_runtime_version(&elf).as_deref(), Some("12.9"));
        // The same words read as x86-64 code hold no `mov dword [mem], imm32` of a version.
        assert_eq!(library_runtime_version(&tiny_runtime(62, &func, &accessor)), None);
        // A call that leads out of the file is no version, and no panic.
        let far = [0xaa0003f4, 0x95ffffff, 0xd65f03c0];
        assert_eq!(
            library_runtime_version(&tiny_runtime(EM_AARCH64, &far, &[])),
            None
        );
    }

    /// A constant loaded from a literal pool (`ldr w1, =13000`) and `movz`+`movk` both give the version.
    #[test]
    fn aarch64_runtime_version_from_a_literal_and_movk() {
        // ldr w1, #16 ; str w1, [x0] ; mov w0, #0 ; ret ; .word 13000
        let lit = [0x18000081, 0xb9000001, 0x52800000, 0xd65f03c0];
        assert_eq!(
            library_runtime_version(&tiny_runtime(EM_AARCH64, &lit, &[13000])).as_deref(),
            Some("13.0")
        );
        // A literal pool past the end of `.text` is not read: no version.
        let out = [0x18700061, 0xb9000001, 0xd65f03c0];
        assert_eq!(
            library_runtime_version(&tiny_runtime(EM_AARCH64, &out, &[])),
            None
        );
        // movz w3, #0 ; movk w3, #13000 ; str w3, [x0, #8] ; ret
        let k = [0x52800003, 0x72865903, 0xb9000803, 0xd65f03c0];
        assert_eq!(
            library_runtime_version(&tiny_runtime(EM_AARCH64, &k, &[])).as_deref(),
            Some("13.0")
        );
    }

    /// The loader's fast read of versioned imports gives exactly what the full symbol facts list, on the
    /// machine's libraries (x86-64 CI: libc, libstdc++, libm, …).
    #[test]
    fn versioned_undefined_agrees_with_symbol_facts() {
        let mut checked = 0;
        for path in &crate::inspect::sample_libraries(40) {
            let Ok(bytes) = std::fs::read(path) else { continue };
            let Ok((elf, _)) = super::super::elfparse::parse(&bytes) else {
                continue;
            };
            let full = symbol_facts(&elf, &bytes, None).versioned_undefined;
            assert_eq!(
                versioned_undefined(&elf, &bytes, None),
                full,
                "{}",
                path.display()
            );
            // With the file at hand (a large `.dynstr`'s names read by positioned reads), the same.
            let file = std::fs::File::open(path).unwrap();
            assert_eq!(
                symbol_facts(&elf, &bytes, Some(&file)).versioned_undefined,
                full,
                "{}",
                path.display()
            );
            assert_eq!(
                versioned_undefined(&elf, &bytes, Some(&file)),
                full,
                "{}",
                path.display()
            );
            checked += full.len();
        }
        if std::path::Path::new("/lib/x86_64-linux-gnu").exists() {
            assert!(checked > 100, "only {checked} imports compared");
        }
    }
}
