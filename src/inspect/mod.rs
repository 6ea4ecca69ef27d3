//! `inspect`: bytes in, owned [`BinaryFacts`] out.
//!
//! The file is memory-mapped and only the parts a question needs are touched: ELF headers, the dynamic
//! section, fatbin container and entry headers, and payloads only when [`Depth`] asks for them. Nothing here
//! executes or loads the inspected file. Damage is never an error: it becomes a [`Problem`] in the facts and
//! the rest of the file is still reported. Only failing to open or read the file is an [`InspectError`].

pub mod cubin;
pub mod decompress;
pub mod elf;
pub mod fatbin;
pub mod ptx;
mod source;

use crate::facts::{BinaryFacts, CodeKind, Compression, DeviceCode, Format, Problem, ProblemKind};
use goblin::elf::Elf;
use std::path::Path;

/// How much of each device-code payload to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Depth {
    /// Headers everywhere; uncompressed payloads; one compressed cubin per container for the toolkit.
    #[default]
    Headers,
    /// Decompress and parse every payload (kernel names, PTX directives, every toolkit note).
    Full,
}

/// Knobs for [`path`] and [`bytes`].
#[derive(Debug, Clone, Copy)]
pub struct InspectOptions {
    /// How much of each payload to read.
    pub depth: Depth,
    /// Largest uncompressed size accepted for one entry; larger declarations are reported as damage.
    pub max_decompressed: u64,
}

impl Default for InspectOptions {
    fn default() -> Self {
        InspectOptions {
            depth: Depth::Headers,
            max_decompressed: 256 << 20,
        }
    }
}

/// Failure to read an input at all.
#[derive(Debug)]
pub struct InspectError {
    /// The input.
    pub path: String,
    /// What went wrong.
    pub error: std::io::Error,
}

impl std::fmt::Display for InspectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot read {}: {}", self.path, self.error)
    }
}

impl std::error::Error for InspectError {}

/// Inspects one file. A static archive gives one [`BinaryFacts`] per member.
pub fn path(path: &Path, opts: &InspectOptions) -> Result<Vec<BinaryFacts>, InspectError> {
    let display = path.display().to_string();
    let map = source::map(path).map_err(|error| InspectError {
        path: display.clone(),
        error,
    })?;
    Ok(bytes(&display, &map, opts))
}

/// Inspects bytes already in memory, named `name` in the facts.
pub fn bytes(name: &str, data: &[u8], opts: &InspectOptions) -> Vec<BinaryFacts> {
    if data.starts_with(b"!<arch>\n") {
        return archive(name, data, opts);
    }
    vec![single(name, data, opts)]
}

fn archive(name: &str, data: &[u8], opts: &InspectOptions) -> Vec<BinaryFacts> {
    let ar = match goblin::archive::Archive::parse(data) {
        Ok(ar) => ar,
        Err(e) => {
            let mut facts = BinaryFacts {
                path: name.to_string(),
                size: data.len() as u64,
                ..BinaryFacts::default()
            };
            facts.problems.push(Problem {
                kind: ProblemKind::Binary,
                message: format!("static archive is damaged: {e}"),
                offset: None,
            });
            return vec![facts];
        }
    };
    let mut out = Vec::new();
    for i in 0..ar.len() {
        let Some(member) = ar.get_at(i) else { continue };
        let member_name = member.extended_name();
        let start = member.offset as usize;
        let label = format!("{name}({member_name})");
        match data.get(start..start.saturating_add(member.size())) {
            Some(bytes) => out.push(single(&label, bytes, opts)),
            None => {
                let mut facts = BinaryFacts {
                    path: label,
                    ..BinaryFacts::default()
                };
                facts.problems.push(Problem {
                    kind: ProblemKind::Binary,
                    message: format!(
                        "archive member {member_name} extends past the end of the archive"
                    ),
                    offset: Some(start as u64),
                });
                out.push(facts);
            }
        }
    }
    out
}

fn single(name: &str, data: &[u8], opts: &InspectOptions) -> BinaryFacts {
    let mut facts = BinaryFacts {
        path: name.to_string(),
        size: data.len() as u64,
        ..BinaryFacts::default()
    };
    if data.starts_with(b"\x7fELF") {
        if data.len() > 19 && u16::from_le_bytes([data[18], data[19]]) == cubin::EM_CUDA {
            raw_cubin(data, &mut facts);
        } else {
            host_elf(data, &mut facts, opts);
        }
    } else if fatbin::container_at(data, 0) {
        facts.format = Some(Format::Fatbin);
        let region = fatbin::Region {
            section: None,
            start: 0,
            end: data.len(),
            relocatable: false,
            found_by_scan: false,
        };
        fatbin::walk(data, &region, &mut facts, opts);
    } else if looks_like_ptx(data) {
        raw_ptx(data, &mut facts);
    } else {
        facts.format = Some(Format::Unknown);
        facts.problems.push(Problem {
            kind: ProblemKind::Unrecognized,
            message: "not an ELF file, static archive, fatbin, cubin or PTX text".into(),
            offset: None,
        });
    }
    facts
}

fn host_elf(data: &[u8], facts: &mut BinaryFacts, opts: &InspectOptions) {
    facts.format = Some(Format::Elf);
    let elf = match Elf::parse(data) {
        Ok(elf) => elf,
        Err(strict) => {
            let permissive = goblin::options::ParseOptions::default()
                .with_parse_mode(goblin::options::ParseMode::Permissive);
            match Elf::parse_with_opts(data, &permissive) {
                Ok(elf) => {
                    facts.problems.push(Problem {
                        kind: ProblemKind::Binary,
                        message: format!(
                            "ELF structure is damaged ({strict}); read what could be read"
                        ),
                        offset: None,
                    });
                    elf
                }
                Err(e) => {
                    facts.problems.push(Problem {
                        kind: ProblemKind::Binary,
                        message: format!("ELF structure is damaged: {e}"),
                        offset: None,
                    });
                    return;
                }
            }
        }
    };
    let elf_facts = elf::facts(&elf);
    let (regions, wrapper_problems) = elf::fatbin_regions(&elf, data);
    for (offset, message) in wrapper_problems {
        facts.problems.push(Problem {
            kind: ProblemKind::DeviceCode,
            message,
            offset: Some(offset as u64),
        });
    }
    for region in &regions {
        fatbin::walk(data, region, facts, opts);
    }
    facts.cudart = elf::cudart(&elf, &elf_facts, data, !regions.is_empty());
    facts.elf = Some(elf_facts);
}

fn raw_cubin(data: &[u8], facts: &mut BinaryFacts) {
    facts.format = Some(Format::Cubin);
    match cubin::parse(data) {
        Ok(c) => {
            let toolkit = cubin::toolkit(&c);
            let suffix = c.arch_specific.then_some('a');
            facts.device_code.push(DeviceCode {
                kind: CodeKind::Sass,
                arch: format!(
                    "sm_{}{}",
                    c.sm,
                    suffix.map(String::from).unwrap_or_default()
                ),
                sm: c.sm,
                suffix,
                ptx_isa: None,
                code_version: [0, 0],
                compression: Compression::None,
                size: data.len() as u64,
                stored_size: data.len() as u64,
                flags: 0,
                debug: false,
                bits64: true,
                host: None,
                identifier: None,
                options: None,
                toolkit: toolkit.as_ref().map(|t| t.0.clone()),
                toolkit_source: toolkit.map(|t| t.1.to_string()),
                relocatable: c.elf_type == "rel",
                container: 0,
                offset: 0,
                cubin: Some(c),
                ptx: None,
            });
        }
        Err(e) => facts.problems.push(Problem {
            kind: ProblemKind::DeviceCode,
            message: e.0,
            offset: Some(0),
        }),
    }
}

/// PTX text starts (after comments and blank lines) with a directive; `.version` appears near the top.
fn looks_like_ptx(data: &[u8]) -> bool {
    let head = &data[..data.len().min(64 << 10)];
    let Ok(text) =
        std::str::from_utf8(head).or_else(|e| std::str::from_utf8(&head[..e.valid_up_to()]))
    else {
        return false;
    };
    text.lines().any(|l| l.trim_start().starts_with(".version")) && text.contains(".target")
}

fn raw_ptx(data: &[u8], facts: &mut BinaryFacts) {
    facts.format = Some(Format::Ptx);
    let p = ptx::parse(data);
    let target = ptx::target_arch(&p).unwrap_or("");
    let digits: String = target
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let sm = digits.parse().unwrap_or(0);
    let suffix = target.chars().last().filter(|c| *c == 'a' || *c == 'f');
    let (major, minor) = p
        .version
        .as_deref()
        .and_then(|v| v.split_once('.'))
        .map(|(a, b)| (a.parse().unwrap_or(0), b.parse().unwrap_or(0)))
        .unwrap_or((0, 0));
    if p.version.is_none() || sm == 0 {
        facts.problems.push(Problem {
            kind: ProblemKind::DeviceCode,
            message: "PTX text has no `.version` or no `.target sm_XX` directive".into(),
            offset: Some(0),
        });
    }
    facts.device_code.push(DeviceCode {
        kind: CodeKind::Ptx,
        arch: format!(
            "compute_{sm}{}",
            suffix.map(String::from).unwrap_or_default()
        ),
        sm,
        suffix,
        ptx_isa: p.version.clone(),
        code_version: [major, minor],
        compression: Compression::None,
        size: data.len() as u64,
        stored_size: data.len() as u64,
        flags: 0,
        debug: p.target.iter().any(|t| t == "debug"),
        bits64: p.address_size == Some(64),
        host: None,
        identifier: None,
        options: None,
        toolkit: None,
        toolkit_source: None,
        relocatable: false,
        container: 0,
        offset: 0,
        cubin: None,
        ptx: Some(p),
    });
}

/// What the loader emulation needs from one ELF file: its loader facts, and the NUL-terminated strings of its
/// read-only data that contain one of `needles` (library names passed to `dlopen`), with their file offsets.
#[derive(Debug, Clone)]
pub struct LoaderView {
    /// Loader facts, `None` when the file is not a host ELF that goblin can read.
    pub elf: Option<crate::facts::ElfFacts>,
    /// Strings of `.rodata` holding a needle, with their file offsets.
    pub strings: Vec<(String, u64)>,
}

/// Reads only the parts of an ELF file the loader needs: the dynamic section, symbol versions and, for
/// `needles`, the matching strings of `.rodata`. Fatbins are not touched, so resolving a large tree stays fast.
pub fn loader_view(path: &Path, needles: &[&[u8]]) -> std::io::Result<LoaderView> {
    let map = source::map(path)?;
    let data: &[u8] = &map;
    let Some(elf) = dynamic_only(data) else {
        return Ok(LoaderView {
            elf: None,
            strings: Vec::new(),
        });
    };
    let mut strings = Vec::new();
    if !needles.is_empty() {
        for sh in &elf.section_headers {
            if elf.shdr_strtab.get_at(sh.sh_name) != Some(".rodata") {
                continue;
            }
            let start = sh.sh_offset as usize;
            let Some(section) = data.get(start..start.saturating_add(sh.sh_size as usize)) else {
                continue;
            };
            for needle in needles {
                for hit in memchr::memmem::find_iter(section, needle) {
                    let from = memchr::memrchr(0, &section[..hit]).map_or(0, |p| p + 1);
                    let to = memchr::memchr(0, &section[hit..]).map_or(section.len(), |p| hit + p);
                    if to - from > 256 {
                        continue;
                    }
                    let s = String::from_utf8_lossy(&section[from..to]).into_owned();
                    if !strings.iter().any(|(x, _)| *x == s) {
                        strings.push((s, (start + from) as u64));
                    }
                }
            }
        }
    }
    Ok(LoaderView {
        elf: Some(elf::facts(&elf)),
        strings,
    })
}

/// Parses only what the loader reads (program and section headers, the dynamic section, `.dynstr`, `.dynsym`
/// and the symbol-version sections), skipping `.symtab`/`.strtab` and the relocations that `Elf::parse` also
/// reads: on a large unstripped library those are most of the work.
fn dynamic_only(data: &[u8]) -> Option<Elf<'_>> {
    use goblin::container::{Container, Ctx};
    use goblin::elf::{Dynamic, ProgramHeader, SectionHeader, Symtab, program_header::PT_INTERP};
    use goblin::strtab::Strtab;
    let header = Elf::parse_header(data).ok()?;
    let mut elf = Elf::lazy_parse(header).ok()?;
    let container = if elf.is_64 {
        Container::Big
    } else {
        Container::Little
    };
    let endian = if elf.little_endian {
        goblin::container::Endian::Little
    } else {
        goblin::container::Endian::Big
    };
    let ctx = Ctx::new(container, endian);
    elf.program_headers =
        ProgramHeader::parse(data, header.e_phoff as usize, header.e_phnum as usize, ctx).ok()?;
    for ph in &elf.program_headers {
        if ph.p_type == PT_INTERP && ph.p_filesz != 0 {
            let (start, len) = (ph.p_offset as usize, ph.p_filesz as usize - 1);
            elf.interpreter = data
                .get(start..start.saturating_add(len))
                .and_then(|b| std::str::from_utf8(b).ok());
        }
    }
    elf.section_headers =
        SectionHeader::parse(data, header.e_shoff as usize, header.e_shnum as usize, ctx)
            .unwrap_or_default();
    let table = |off: u64, size: u64| -> Option<Strtab<'_>> {
        let (off, size) = (usize::try_from(off).ok()?, usize::try_from(size).ok()?);
        data.get(off..off.checked_add(size)?)?;
        Strtab::parse(data, off, size, 0).ok()
    };
    if let Some(sh) = elf.section_headers.get(header.e_shstrndx as usize) {
        elf.shdr_strtab = table(sh.sh_offset, sh.sh_size).unwrap_or_default();
    }
    elf.dynamic = Dynamic::parse(data, &elf.program_headers, ctx)
        .ok()
        .flatten();
    if let Some(dynamic) = &elf.dynamic {
        let info = &dynamic.info;
        elf.dynstrtab = table(info.strtab as u64, info.strsz as u64).unwrap_or_default();
        if info.soname != 0 {
            elf.soname = elf.dynstrtab.get_at(info.soname);
        }
        elf.libraries = dynamic.get_libraries(&elf.dynstrtab);
        for d in &dynamic.dyns {
            let value = elf.dynstrtab.get_at(d.d_val as usize);
            match (d.d_tag, value) {
                (goblin::elf::dynamic::DT_RPATH, Some(v)) => elf.rpaths.push(v),
                (goblin::elf::dynamic::DT_RUNPATH, Some(v)) => elf.runpaths.push(v),
                _ => {}
            }
        }
        let count = match (info.gnu_hash, info.hash) {
            (Some(g), _) => gnu_hash_len(data, g as usize, elf.is_64, elf.little_endian),
            (None, Some(h)) => data
                .get(h as usize + 4..h as usize + 8)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize),
            _ => None,
        }
        .unwrap_or(0);
        let entsize = if elf.is_64 { 24 } else { 16 };
        let fits = info
            .symtab
            .checked_add(count.saturating_mul(entsize))
            .is_some_and(|end| end <= data.len());
        if fits {
            elf.dynsyms = Symtab::parse(data, info.symtab, count, ctx).unwrap_or_default();
        }
    }
    elf.versym = goblin::elf::VersymSection::parse(data, &elf.section_headers, ctx)
        .ok()
        .flatten();
    elf.verdef = goblin::elf::VerdefSection::parse(data, &elf.section_headers, ctx)
        .ok()
        .flatten();
    elf.verneed = goblin::elf::VerneedSection::parse(data, &elf.section_headers, ctx)
        .ok()
        .flatten();
    Some(elf)
}

/// Number of `.dynsym` entries from `DT_GNU_HASH` (the table does not store it: the last chain ends it).
fn gnu_hash_len(data: &[u8], off: usize, is_64: bool, little: bool) -> Option<usize> {
    if !little {
        return None;
    }
    let word = |at: usize| -> Option<usize> {
        let b = data.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let (nbuckets, symoffset, bloom) = (word(off)?, word(off + 4)?, word(off + 8)?);
    let buckets = off
        .checked_add(16)?
        .checked_add(bloom.checked_mul(if is_64 { 8 } else { 4 })?)?;
    let mut last = 0;
    for b in 0..nbuckets.min(1 << 24) {
        last = last.max(word(buckets.checked_add(b.checked_mul(4)?)?)?);
    }
    if last < symoffset {
        return Some(symoffset);
    }
    let chains = buckets.checked_add(nbuckets.checked_mul(4)?)?;
    let mut at = chains.checked_add((last - symoffset).checked_mul(4)?)?;
    loop {
        let h = word(at)?;
        last += 1;
        at += 4;
        if h & 1 != 0 {
            return Some(last);
        }
    }
}
