//! `inspect`: bytes in, owned [`BinaryFacts`] out.
//!
//! The file is memory-mapped and only the parts a question needs are touched: ELF headers, the dynamic
//! section, fatbin container and entry headers, and payloads only when [`Depth`] asks for them. Nothing here
//! executes or loads the inspected file. Damage is never an error: it becomes a [`Problem`] in the facts and
//! the rest of the file is still reported. Only failing to open or read the file is an [`InspectError`].

pub mod cubin;
pub mod decompress;
pub mod elf;
pub mod elfparse;
pub mod fatbin;
pub mod input;
pub mod ptx;
mod source;
pub mod wheel;

use crate::facts::{BinaryFacts, CodeKind, Compression, DeviceCode, Format, Problem, ProblemKind};
use input::Input;
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
    let (file, map) = source::map(path).map_err(|error| InspectError {
        path: display.clone(),
        error,
    })?;
    let input = match &file {
        Some(f) => Input::file(&map, f, 0),
        None => Input::bytes(&map),
    };
    Ok(inspect_input(&display, &input, opts))
}

/// Inspects a file already open (a wheel member inflated to a temporary file), named `name` in the facts.
pub fn open_file(
    name: &str,
    file: &std::fs::File,
    opts: &InspectOptions,
) -> std::io::Result<Vec<BinaryFacts>> {
    let map = source::map_open(file)?;
    Ok(inspect_input(name, &Input::file(&map, file, 0), opts))
}

/// Inspects bytes already in memory, named `name` in the facts.
pub fn bytes(name: &str, data: &[u8], opts: &InspectOptions) -> Vec<BinaryFacts> {
    inspect_input(name, &Input::bytes(data), opts)
}

fn inspect_input(name: &str, input: &Input<'_>, opts: &InspectOptions) -> Vec<BinaryFacts> {
    if input.as_slice().starts_with(b"!<arch>\n") {
        return archive(name, input, opts);
    }
    vec![single(name, input, opts)]
}

fn archive(name: &str, input: &Input<'_>, opts: &InspectOptions) -> Vec<BinaryFacts> {
    let data = input.as_slice();
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
        match input.slice(start, member.size()) {
            Some(member) => out.push(single(&label, &member, opts)),
            None => {
                let mut facts = BinaryFacts {
                    path: label,
                    ..BinaryFacts::default()
                };
                facts.problems.push(Problem {
                    kind: ProblemKind::Binary,
                    message: format!("archive member {member_name} extends past the end of the archive"),
                    offset: Some(start as u64),
                });
                out.push(facts);
            }
        }
    }
    out
}

fn single(name: &str, input: &Input<'_>, opts: &InspectOptions) -> BinaryFacts {
    let data = input.as_slice();
    let mut facts = BinaryFacts {
        path: name.to_string(),
        size: data.len() as u64,
        ..BinaryFacts::default()
    };
    if data.starts_with(b"\x7fELF") {
        if data.len() > 19 && u16::from_le_bytes([data[18], data[19]]) == cubin::EM_CUDA {
            raw_cubin(data, &mut facts);
        } else {
            host_elf(input, &mut facts, opts);
        }
    } else if fatbin::container_at(input, 0) {
        facts.format = Some(Format::Fatbin);
        let region = fatbin::Region {
            section: None,
            start: 0,
            end: data.len(),
            relocatable: false,
            found_by_scan: false,
        };
        let mut pending = Vec::new();
        fatbin::walk(input, &region, &mut facts, opts, &mut pending);
        fatbin::finish(input, &pending, &mut facts, opts);
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

fn host_elf(input: &Input<'_>, facts: &mut BinaryFacts, opts: &InspectOptions) {
    let data = input.as_slice();
    facts.format = Some(Format::Elf);
    let elf = match elfparse::parse(data) {
        Ok((elf, damage)) => {
            for d in damage {
                facts.problems.push(Problem {
                    kind: ProblemKind::Binary,
                    message: format!("ELF structure is damaged ({d}); read what could be read"),
                    offset: None,
                });
            }
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
    };
    let elf_facts = elf::facts(&elf);
    let (regions, wrapper_problems) = elf::fatbin_regions(&elf, input);
    for (offset, message) in wrapper_problems {
        facts.problems.push(Problem {
            kind: ProblemKind::DeviceCode,
            message,
            offset: Some(offset as u64),
        });
    }
    let mut pending = Vec::new();
    for region in &regions {
        fatbin::walk(input, region, facts, opts, &mut pending);
    }
    fatbin::finish(input, &pending, facts, opts);
    facts.cudart = elf::cudart(&elf, &elf_facts, input, !regions.is_empty());
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
                arch: format!("sm_{}{}", c.sm, suffix.map(String::from).unwrap_or_default()),
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
    let Ok(text) = std::str::from_utf8(head).or_else(|e| std::str::from_utf8(&head[..e.valid_up_to()]))
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
        arch: format!("compute_{sm}{}", suffix.map(String::from).unwrap_or_default()),
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
    let (_file, map) = source::map(path)?;
    let data: &[u8] = &map;
    let Some((elf, _damage)) = elfparse::parse(data).ok() else {
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
