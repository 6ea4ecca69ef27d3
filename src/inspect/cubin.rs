//! Device ELF files (cubins): architecture, producing toolkit and kernel names.
//!
//! Two `e_flags` layouts exist (see `docs/fatbin-format.md`, "Cubin", after LLVM's `ELF.h`):
//! * ABI version 7 (CUDA ≤ 12.x, `EI_OSABI` 0x33): SM in bits 0–7, `0x800` = arch-specific (`a`), the virtual
//!   SM in bits 16–23; `e_version` holds the toolkit as major·10+minor.
//! * ABI version 8 (CUDA 12.8+ for sm_100+, every CUDA 13 cubin, `EI_OSABI` 0x41): SM in bits 8–15, bit 3 =
//!   arch-specific as ptxas 12.8 sets it. ptxas 13 leaves that bit clear and records `a` only in `.nv.compat`
//!   (attribute 9, value 1), which we read too. A family (`f`) target leaves no trace in a cubin at all.
//!
//! The toolkit comes from `.note.nv.tkinfo` ("Cuda compilation tools, release 13.0, V13.0.88") when present,
//! else from `.note.nv.cuinfo` (toolkit as major·10+minor), else from an ABI-7 `e_version`.

use super::elfparse::string_at;
use crate::facts::CubinFacts;
use goblin::container::Ctx;
use goblin::elf::section_header::{SHN_XINDEX, SHT_SYMTAB, SectionHeader};
use goblin::elf::sym::{STB_GLOBAL, STT_FUNC};
use goblin::elf::{Elf, Symtab};

/// `e_machine` of device ELF files.
pub const EM_CUDA: u16 = 190;
const NOTE_TKINFO: u32 = 2000;
const NOTE_CUINFO: u32 = 1000;
/// `st_other` bit marking a kernel entry (`STO_CUDA_ENTRY`).
const STO_CUDA_ENTRY: u8 = 0x10;

/// Why a cubin could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CubinError(pub String);

/// Reads a cubin. Damaged parts that are not needed (a note, the symbol table) are skipped silently.
///
/// Only the ELF header, the section headers, the section names and the symbol table are parsed, with goblin's
/// own parsers; names are looked up where they are asked for. goblin's whole-file `Elf::parse` also splits
/// every string table into a vector and parses every relocation section: a tenth of `--deep`'s CPU on
/// PyTorch's 2,981 cubins (5.4 GB inflated), for strings and relocations nobody reads.
pub fn parse(bytes: &[u8]) -> Result<CubinFacts, CubinError> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return Err(CubinError("payload is not an ELF file".into()));
    }
    let damaged = |e: goblin::error::Error| CubinError(format!("cubin ELF is damaged: {e}"));
    let header = Elf::parse_header(bytes).map_err(damaged)?;
    if header.e_machine != EM_CUDA {
        return Err(CubinError(format!(
            "payload is an ELF file for machine {}, not EM_CUDA (190)",
            header.e_machine
        )));
    }
    let os_abi = header.e_ident[goblin::elf::header::EI_OSABI];
    let abi_version = header.e_ident[goblin::elf::header::EI_ABIVERSION];
    let e_flags = header.e_flags;
    let mut facts = CubinFacts {
        elf_type: goblin::elf::header::et_to_str(header.e_type)
            .trim_start_matches("ET_")
            .to_ascii_lowercase(),
        os_abi,
        abi_version,
        e_flags,
        ..CubinFacts::default()
    };
    if abi_version >= 8 {
        facts.sm = (e_flags >> 8) & 0xff;
        facts.arch_specific = e_flags & 0x8 != 0;
    } else {
        facts.sm = e_flags & 0xff;
        facts.arch_specific = e_flags & 0x800 != 0;
        let virt = (e_flags >> 16) & 0xff;
        facts.virtual_sm = (virt != 0).then_some(virt);
        if os_abi == 0x33 && header.e_version >= 10 {
            let v = header.e_version;
            facts.cuinfo_toolkit = Some(format!("{}.{}", v / 10, v % 10));
        }
    }
    // `parse_header` has refused an unknown class or byte order already.
    let ctx = Ctx::new(
        header.container().map_err(damaged)?,
        header.endianness().map_err(damaged)?,
    );
    // Damaged section headers leave none: no notes, no kernels (as goblin's permissive parse did).
    let sections = SectionHeader::parse(bytes, header.e_shoff as usize, header.e_shnum as usize, ctx)
        .unwrap_or_default();
    let mut names_at = usize::from(header.e_shstrndx);
    if u32::from(header.e_shstrndx) == SHN_XINDEX {
        // More sections than the header's 16 bits hold: the index is in the first section header.
        names_at = sections.first().map_or(0, |sh| sh.sh_link as usize);
    }
    let names = sections
        .get(names_at)
        .and_then(|sh| section_bytes(bytes, sh))
        .unwrap_or_default();
    for sh in &sections {
        let Some(name) = string_at(names, sh.sh_name) else {
            continue;
        };
        let Some(data) = section_bytes(bytes, sh) else {
            continue;
        };
        match name {
            b".note.nv.tkinfo" | b".note.nv.cuinfo" => read_notes(data, &mut facts),
            b".nv.compat" if compat_arch_specific(data) => {
                facts.arch_specific = true;
            }
            _ => {}
        }
    }
    facts.kernels = kernels(bytes, &sections, ctx);
    Ok(facts)
}

/// The kernels: the entries of the (last) symbol table, named from the string table it links to. None when
/// the table is damaged.
fn kernels(bytes: &[u8], sections: &[SectionHeader], ctx: Ctx) -> std::sync::Arc<[String]> {
    let Some(table) = sections.iter().rfind(|sh| sh.sh_type == SHT_SYMTAB) else {
        return std::sync::Arc::default();
    };
    let count = table.sh_size.checked_div(table.sh_entsize).unwrap_or(0);
    let (Ok(offset), Ok(count)) = (usize::try_from(table.sh_offset), usize::try_from(count)) else {
        return std::sync::Arc::default();
    };
    let Ok(symbols) = Symtab::parse(bytes, offset, count, ctx) else {
        return std::sync::Arc::default();
    };
    let strings = sections
        .get(table.sh_link as usize)
        .and_then(|sh| section_bytes(bytes, sh))
        .unwrap_or_default();
    let named = symbols.iter().filter_map(|sym| {
        let entry =
            sym.st_type() == STT_FUNC && sym.st_bind() == STB_GLOBAL && sym.st_other & STO_CUDA_ENTRY != 0;
        let name = string_at(strings, sym.st_name as u64).filter(|_| entry)?;
        std::str::from_utf8(name).ok().map(str::to_string)
    });
    named.collect()
}

/// The toolkit version a cubin names, most exact first: `13.0.88` from tkinfo, else `13.0`.
pub fn toolkit(facts: &CubinFacts) -> Option<(String, &'static str)> {
    if let Some(v) = facts.tool_version.as_deref().and_then(version_from_tool_string) {
        return Some((v, ".note.nv.tkinfo"));
    }
    facts.cuinfo_toolkit.clone().map(|v| {
        let source = if facts.abi_version >= 8 {
            ".note.nv.cuinfo"
        } else {
            "cubin e_version"
        };
        (v, source)
    })
}

/// `Cuda compilation tools, release 13.0, V13.0.88` → `13.0.88`.
pub fn version_from_tool_string(s: &str) -> Option<String> {
    let v = s.rsplit(", V").next().filter(|v| v.len() < s.len())?;
    let v = v.trim();
    let ok = !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.') && v.contains('.');
    ok.then(|| v.to_string())
}

fn section_bytes<'a>(bytes: &'a [u8], sh: &goblin::elf::SectionHeader) -> Option<&'a [u8]> {
    if sh.sh_type == goblin::elf::section_header::SHT_NOBITS {
        return None;
    }
    let start = usize::try_from(sh.sh_offset).ok()?;
    let end = start.checked_add(usize::try_from(sh.sh_size).ok()?)?;
    bytes.get(start..end)
}

fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    d.get(off..off.checked_add(4)?)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    d.get(off..off.checked_add(2)?)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
}

fn align4(n: usize) -> Option<usize> {
    n.checked_add(3).map(|v| v & !3)
}

/// Walks SHT_NOTE records: `namesz, descsz, type, name (padded to 4), desc (padded to 4)`.
fn read_notes(data: &[u8], facts: &mut CubinFacts) {
    let mut off = 0usize;
    while let (Some(namesz), Some(descsz), Some(ntype)) =
        (u32_at(data, off), u32_at(data, off + 4), u32_at(data, off + 8))
    {
        let Some(desc_start) = align4(off + 12 + namesz as usize) else {
            return;
        };
        let Some(desc_end) = desc_start.checked_add(descsz as usize) else {
            return;
        };
        let Some(desc) = data.get(desc_start..desc_end) else {
            return;
        };
        match ntype {
            NOTE_TKINFO => read_tkinfo(desc, facts),
            NOTE_CUINFO => {
                if let (Some(virt), Some(tk)) = (u16_at(desc, 2), u32_at(desc, 4)) {
                    if virt != 0 {
                        facts.virtual_sm = Some(u32::from(virt));
                    }
                    if tk != 0 {
                        facts.cuinfo_toolkit = Some(format!("{}.{}", tk / 10, tk % 10));
                    }
                }
            }
            _ => {}
        }
        let Some(next) = align4(desc_end) else { return };
        if next <= off {
            return;
        }
        off = next;
    }
}

/// tkinfo desc: `u32 version`, five `u32` offsets (object, tool, tool version, branch, options) into the string
/// table that starts at desc+24.
fn read_tkinfo(desc: &[u8], facts: &mut CubinFacts) {
    let strings = desc.get(24..).unwrap_or(&[]);
    let string_at = |field: usize| -> Option<String> {
        let off = u32_at(desc, 4 + 4 * field)? as usize;
        let s = strings.get(off..)?;
        let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        let s = String::from_utf8_lossy(&s[..end]).trim().to_string();
        (!s.is_empty()).then_some(s)
    };
    facts.tool = string_at(1);
    facts.tool_version = string_at(2);
    facts.tool_options = string_at(4);
}

/// `.nv.compat` records: `{u8 format, u8 attribute, …}`, 4-byte aligned; format 2 holds a u8 value. Attribute
/// 9 with value 1 marks an arch-specific (`a`) cubin from ptxas 13.
fn compat_arch_specific(data: &[u8]) -> bool {
    let mut off = 0usize;
    while off + 2 <= data.len() {
        let (format, attr) = (data[off], data[off + 1]);
        match format {
            0 => off += 1,
            1 => off += 4,
            2 => {
                if attr == 9 && data.get(off + 2) == Some(&1) {
                    return true;
                }
                off += 4;
            }
            3 => off += 4,
            4 => {
                let Some(len) = u16_at(data, off + 2) else {
                    return false;
                };
                match align4(off + 4 + len as usize) {
                    Some(next) => off = next,
                    None => return false,
                }
            }
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_string_versions() {
        assert_eq!(
            version_from_tool_string("Cuda compilation tools, release 13.0, V13.0.88").as_deref(),
            Some("13.0.88")
        );
        assert_eq!(version_from_tool_string("ptxas"), None);
        assert_eq!(version_from_tool_string("x, V"), None);
    }

    #[test]
    fn compat_records() {
        assert!(compat_arch_specific(&[2, 9, 1, 0]));
        assert!(!compat_arch_specific(&[2, 9, 0, 0]));
        assert!(compat_arch_specific(&[
            3, 1, 5, 0, 4, 7, 2, 0, 0xaa, 0xbb, 0, 0, 2, 9, 1, 0
        ]));
        assert!(!compat_arch_specific(&[4, 7, 0xff, 0xff]));
    }

    /// The kernels as goblin's whole-file parse names them, for every cubin of the fixtures: the same list in
    /// the same order, and the notes read (every fixture cubin has a toolkit).
    #[test]
    fn kernels_and_notes_match_goblins_whole_file_parse_on_the_fixtures() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");
        let mut cubins = Vec::new();
        for sub in ["cuda13", "old"] {
            for e in std::fs::read_dir(format!("{dir}/{sub}")).unwrap() {
                let path = e.unwrap().path();
                if path.extension().is_some_and(|x| x == "cubin") {
                    cubins.push(path);
                }
            }
        }
        assert!(cubins.len() >= 10, "{cubins:?}");
        for path in cubins {
            let bytes = std::fs::read(&path).unwrap();
            let facts = parse(&bytes).unwrap();
            let elf = Elf::parse(&bytes).unwrap();
            let reference: Vec<&str> = elf
                .syms
                .iter()
                .filter(|s| {
                    s.st_type() == STT_FUNC && s.st_bind() == STB_GLOBAL && s.st_other & STO_CUDA_ENTRY != 0
                })
                .filter_map(|s| elf.strtab.get_at(s.st_name))
                .collect();
            assert!(!reference.is_empty(), "{}", path.display());
            assert_eq!(*facts.kernels, reference, "{}", path.display());
            assert!(toolkit(&facts).is_some(), "{}: {facts:?}", path.display());
        }
    }

    #[test]
    fn rejects_non_cuda() {
        assert!(parse(b"not an elf at all, not an elf at all, not an elf at all, not an elf!").is_err());
    }
}
