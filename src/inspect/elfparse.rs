//! A parse of the host ELF that reads only what cudadiag asks of it.
//!
//! goblin's `Elf::parse` also splits `.strtab` into a vector of strings and walks every relocation; for a
//! 500 MB `libtorch_cuda.so` that is a 73 MB string table touched and 16 MB allocated, most of cudadiag's time
//! and memory, for symbols nobody asked about. Here the ELF header, program and section headers, the dynamic
//! section, `.dynstr`/`.dynsym` and the symbol-version sections are parsed with goblin's own parsers, and
//! nothing else; the full symbol table is searched on demand ([`symtab_lookup`]) with positioned reads.
//! Damage to an optional part is recorded and the rest still read (goblin's "permissive" spirit).

use super::input::Input;
use goblin::container::{Container, Ctx, Endian};
use goblin::elf::dynamic::{DT_RPATH, DT_RUNPATH, Dynamic};
use goblin::elf::section_header::{SHT_DYNSYM, SHT_SYMTAB, SectionHeader};
use goblin::elf::{Elf, ProgramHeader, Symtab, program_header, symver};
use goblin::strtab::Strtab;

/// Parses the parts of a host ELF that cudadiag uses; returns the ELF and the damage met on the way.
pub fn parse(bytes: &[u8]) -> goblin::error::Result<(Elf<'_>, Vec<String>)> {
    let header = Elf::parse_header(bytes)?;
    let mut elf = Elf::lazy_parse(header)?;
    let mut damage = Vec::new();
    let ctx = Ctx::new(
        if elf.is_64 {
            Container::Big
        } else {
            Container::Little
        },
        if elf.little_endian {
            Endian::Little
        } else {
            Endian::Big
        },
    );
    match ProgramHeader::parse(bytes, header.e_phoff as usize, header.e_phnum as usize, ctx) {
        Ok(ph) => elf.program_headers = ph,
        Err(e) => damage.push(format!("program headers: {e}")),
    }
    for ph in &elf.program_headers {
        if ph.p_type == program_header::PT_INTERP && ph.p_filesz != 0 {
            let start = ph.p_offset as usize;
            let end = start.saturating_add(ph.p_filesz as usize - 1);
            elf.interpreter = bytes.get(start..end).and_then(|b| std::str::from_utf8(b).ok());
        }
    }
    if header.e_shnum > 0 {
        match SectionHeader::parse(bytes, header.e_shoff as usize, header.e_shnum as usize, ctx) {
            Ok(sh) => elf.section_headers = sh,
            Err(e) => damage.push(format!("section headers: {e}")),
        }
    }
    if let Some(sh) = elf.section_headers.get(header.e_shstrndx as usize) {
        match Strtab::parse(bytes, sh.sh_offset as usize, sh.sh_size as usize, 0) {
            Ok(t) => elf.shdr_strtab = t,
            Err(e) => damage.push(format!("section name table: {e}")),
        }
    }
    let dynamic = match Dynamic::parse(bytes, &elf.program_headers, ctx) {
        Ok(d) => d,
        Err(e) => {
            damage.push(format!("dynamic section: {e}"));
            None
        }
    };
    if let Some(dynamic) = &dynamic {
        let info = &dynamic.info;
        match Strtab::parse(bytes, info.strtab, info.strsz, 0) {
            Ok(t) => elf.dynstrtab = t,
            Err(e) => damage.push(format!("dynamic string table: {e}")),
        }
        if info.soname != 0 {
            elf.soname = elf.dynstrtab.get_at(info.soname);
        }
        if info.needed_count > 0 {
            elf.libraries = dynamic.get_libraries(&elf.dynstrtab);
        }
        for d in &dynamic.dyns {
            let list = match d.d_tag {
                DT_RPATH => &mut elf.rpaths,
                DT_RUNPATH => &mut elf.runpaths,
                _ => continue,
            };
            if let Some(path) = elf.dynstrtab.get_at(d.d_val as usize) {
                list.push(path);
            }
        }
        // The symbol count comes from the .dynsym section header (goblin would derive it from the hash
        // tables; a file without section headers simply yields no symbols here).
        if let Some(sh) = elf.section_headers.iter().find(|s| s.sh_type == SHT_DYNSYM) {
            let count = sh.sh_size.checked_div(sh.sh_entsize).unwrap_or(0) as usize;
            match Symtab::parse(bytes, info.symtab, count, ctx) {
                Ok(s) => elf.dynsyms = s,
                Err(e) => damage.push(format!("dynamic symbol table: {e}")),
            }
        }
    }
    elf.dynamic = dynamic;
    match symver::VersymSection::parse(bytes, &elf.section_headers, ctx) {
        Ok(v) => elf.versym = v,
        Err(e) => damage.push(format!("symbol versions: {e}")),
    }
    match symver::VerdefSection::parse(bytes, &elf.section_headers, ctx) {
        Ok(v) => elf.verdef = v,
        Err(e) => damage.push(format!("version definitions: {e}")),
    }
    match symver::VerneedSection::parse(bytes, &elf.section_headers, ctx) {
        Ok(v) => elf.verneed = v,
        Err(e) => damage.push(format!("version needs: {e}")),
    }
    Ok((elf, damage))
}

/// Whether the file has a full symbol table (is not stripped).
pub fn has_symtab(elf: &Elf<'_>) -> bool {
    elf.section_headers
        .iter()
        .any(|s| s.sh_type == SHT_SYMTAB && s.sh_size > 0)
}

/// Finds a defined symbol by name in `.symtab`, reading the tables with positioned reads: the name is located
/// in the string table first, then the one symbol whose `st_name` points at it. Returns `(st_value, st_size)`.
pub fn symtab_lookup(elf: &Elf<'_>, input: &Input<'_>, name: &str) -> Option<(u64, u64)> {
    let symtab = elf.section_headers.iter().find(|s| s.sh_type == SHT_SYMTAB)?;
    let strtab = elf.section_headers.get(symtab.sh_link as usize)?;
    let (str_start, str_len) = (strtab.sh_offset as usize, strtab.sh_size as usize);
    let mut needle = Vec::with_capacity(name.len() + 2);
    needle.push(0);
    needle.extend_from_slice(name.as_bytes());
    needle.push(0);
    let finder = memchr::memmem::Finder::new(&needle);
    let str_end = str_start.checked_add(str_len)?;
    let name_offsets: Vec<u64> = {
        let mut v = Vec::new();
        input.chunks(str_start, str_end, 1 << 20, needle.len(), |at, chunk| {
            for i in finder.find_iter(chunk) {
                let off = (at + i + 1 - str_start) as u64;
                if !v.contains(&off) {
                    v.push(off);
                }
            }
            None::<()>
        });
        v
    };
    if name_offsets.is_empty() {
        return None;
    }
    let entsize = if elf.is_64 { 24 } else { 16 };
    let (sym_start, sym_end) = (
        symtab.sh_offset as usize,
        (symtab.sh_offset as usize).checked_add(symtab.sh_size as usize)?,
    );
    input.chunks(
        sym_start,
        sym_end,
        (1 << 20) / entsize * entsize,
        0,
        |_, chunk| {
            chunk.chunks_exact(entsize).find_map(|s| {
                let st_name = u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
                if !name_offsets.contains(&st_name) {
                    return None;
                }
                let (shndx, value, size) = if elf.is_64 {
                    (
                        u16::from_le_bytes([s[6], s[7]]),
                        u64::from_le_bytes(s[8..16].try_into().ok()?),
                        u64::from_le_bytes(s[16..24].try_into().ok()?),
                    )
                } else {
                    (
                        u16::from_le_bytes([s[14], s[15]]),
                        u64::from(u32::from_le_bytes(s[4..8].try_into().ok()?)),
                        u64::from(u32::from_le_bytes(s[8..12].try_into().ok()?)),
                    )
                };
                (shndx != 0 && value != 0).then_some((value, size))
            })
        },
    )
}
