//! A parse of the host ELF that reads only what cudadiag asks of it.
//!
//! goblin's `Elf::parse` also splits `.strtab` into a vector of strings and walks every relocation; for a
//! 500 MB `libtorch_cuda.so` that is a 73 MB string table touched and 16 MB allocated, most of cudadiag's time
//! and memory, for symbols nobody asked about. Here the ELF header, program and section headers, the dynamic
//! section, `.dynstr`/`.dynsym` and the symbol-version sections are parsed with goblin's own parsers, and
//! nothing else; the full symbol table is searched on demand ([`symtab_lookup`]) with positioned reads.
//! Damage to an optional part is recorded and the rest still read (goblin's "permissive" spirit).

use super::input::Input;
use goblin::container::Ctx;
use goblin::elf::dynamic::{DT_NEEDED, DT_RPATH, DT_RUNPATH, Dynamic};
use goblin::elf::section_header::{SHT_DYNSYM, SHT_SYMTAB, SectionHeader};
use goblin::elf::{Elf, ProgramHeader, Symtab, program_header, symver};
use goblin::strtab::Strtab;

/// Parses the parts of a host ELF that cudadiag uses; returns the ELF and the damage met on the way.
pub fn parse(bytes: &[u8]) -> goblin::error::Result<(Elf<'_>, Vec<String>)> {
    let header = Elf::parse_header(bytes)?;
    let mut elf = Elf::lazy_parse(header)?;
    let mut damage = Vec::new();
    let ctx = Ctx::new(header.container()?, header.endianness()?);
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
        // Unparsed: strings are read where they are asked for ([`dynstr`]). Splitting the whole table up
        // front (goblin's `Strtab::parse`) costs megabytes of work for a C++ library's mangled names.
        match info
            .strtab
            .checked_add(info.strsz)
            .and_then(|end| bytes.get(info.strtab..end))
        {
            Some(table) => elf.dynstrtab = Strtab::new(table, 0),
            None => damage.push(format!(
                "dynamic string table: {} bytes at 0x{:x} do not fit in the file",
                info.strsz, info.strtab
            )),
        }
        if info.soname != 0 {
            elf.soname = dynstr(&elf, info.soname);
        }
        for d in &dynamic.dyns {
            if !matches!(d.d_tag, DT_NEEDED | DT_RPATH | DT_RUNPATH) {
                continue;
            }
            let Some(s) = dynstr(&elf, d.d_val as usize) else {
                continue;
            };
            match d.d_tag {
                DT_NEEDED => elf.libraries.push(s),
                DT_RPATH => elf.rpaths.push(s),
                _ => elf.runpaths.push(s),
            }
        }
        // The symbol count comes from the .dynsym section header, or (no section headers, as ld.so sees a
        // file) from the hash tables, as goblin does.
        let count = match elf.section_headers.iter().find(|s| s.sh_type == SHT_DYNSYM) {
            Some(sh) => sh.sh_size.checked_div(sh.sh_entsize).map(|n| n as usize),
            None => match (info.gnu_hash, info.hash) {
                (Some(g), _) => gnu_hash_len(bytes, g as usize, elf.is_64, elf.little_endian),
                // nchain, the second word of the table; the address comes from the file, so it may be anything.
                (None, Some(h)) => usize::try_from(h)
                    .ok()
                    .and_then(|h| h.checked_add(4))
                    .and_then(|at| bytes.get(at..at.checked_add(4)?))
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize),
                _ => None,
            },
        }
        .unwrap_or(0);
        let entsize = if elf.is_64 { 24 } else { 16 };
        let fits = info
            .symtab
            .checked_add(count.saturating_mul(entsize))
            .is_some_and(|end| end <= bytes.len());
        if count > 0 && !fits {
            damage.push(format!(
                "dynamic symbol table: {count} symbols do not fit in the file"
            ));
        } else if count > 0 {
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

/// The string at `offset` of `.dynstr` (`None`: out of the table, or not UTF-8).
pub fn dynstr<'a>(elf: &Elf<'a>, offset: usize) -> Option<&'a str> {
    // goblin deprecates `get` in favour of `get_at`, which needs the table split up front; for the few strings
    // asked of a large table, reading one string where it lies is the cheaper way.
    #[allow(deprecated)]
    elf.dynstrtab.get(offset)?.ok()
}

/// `.dynstr` as bytes where they lie (no string split out, no UTF-8 check).
pub fn dynstr_table<'a>(elf: &Elf<'_>, data: &'a [u8]) -> Option<&'a [u8]> {
    let info = &elf.dynamic.as_ref()?.info;
    data.get(info.strtab..info.strtab.checked_add(info.strsz)?)
}

/// `.dynstr` from `offset` to the end of the table.
fn dynstr_from<'a>(elf: &Elf<'_>, data: &'a [u8], offset: usize) -> Option<&'a [u8]> {
    dynstr_table(elf, data)?.get(offset..)
}

/// [`dynstr`] read where it lies in `data` (a vectorised search for its NUL): for loops over many symbols.
pub fn dynstr_at<'a>(elf: &Elf<'_>, data: &'a [u8], offset: usize) -> Option<&'a str> {
    std::str::from_utf8(string_at(dynstr_table(elf, data)?, offset)?).ok()
}

/// The strings at `offsets` of the string table `table`, a part of `data`, which maps `file` from its start:
/// each as [`string_at`] and UTF-8 ([`dynstr_at`]) give it (`None`: past the table, not ended in it, or not
/// UTF-8), read by positioned reads through the thread's scan buffer rather than through the map: in order of
/// offset, one read for all the strings within a buffer's length. `None` when the file cannot give them (it
/// shrank): the caller reads the map, which says so.
pub fn strings_read_at(
    file: &std::fs::File,
    data: &[u8],
    table: &[u8],
    offsets: &[u32],
) -> Option<Vec<Option<String>>> {
    use std::os::unix::fs::FileExt;
    let base = (table.as_ptr() as usize).checked_sub(data.as_ptr() as usize)? as u64;
    let len = table.len();
    let mut order: Vec<usize> = (0..offsets.len()).collect();
    order.sort_unstable_by_key(|&i| offsets[i]);
    let mut out = vec![None; offsets.len()];
    crate::system::read::with_scan_buffer(|buf| {
        if buf.len() < crate::system::read::LINES_CHUNK {
            buf.resize(crate::system::read::LINES_CHUNK, 0);
        }
        // `buf[..filled]` holds `table[start..start + filled]`.
        let (mut start, mut filled) = (0usize, 0usize);
        for (k, &i) in order.iter().enumerate() {
            let off = offsets[i] as usize;
            if off >= len {
                continue;
            }
            loop {
                if off >= start && off < start + filled {
                    let rel = off - start;
                    if let Some(end) = memchr::memchr(0, &buf[rel..filled]) {
                        out[i] = std::str::from_utf8(&buf[rel..rel + end]).ok().map(str::to_string);
                        break;
                    }
                    if start + filled == len {
                        break;
                    }
                    if rel == 0 {
                        // One string longer than the buffer: a longer buffer (the table bounds it).
                        let longer = buf.len().saturating_mul(2);
                        buf.resize(longer, 0);
                    }
                }
                // A window from this string to the last of the next ones within the buffer's length, and
                // [`NAME_TAIL`] for that one: the names of a large table lie far apart, and each byte read is
                // copied.
                let most = buf.len().min(len - off);
                let reach = order[k..]
                    .iter()
                    .map(|&j| offsets[j] as usize)
                    .take_while(|&o| o < off + most)
                    .last()
                    .unwrap_or(off);
                let wanted = if start == off {
                    most
                } else {
                    reach - off + NAME_TAIL
                };
                start = off;
                filled = wanted.min(most);
                file.read_exact_at(&mut buf[..filled], base + off as u64).ok()?;
            }
        }
        Some(out)
    })
}

/// Bytes [`strings_read_at`] reads past the last string a window starts: most C++ names are shorter (a longer
/// one is read again, from its start).
const NAME_TAIL: usize = 512;

/// The NUL-terminated string at `offset` of a string table (without the NUL); `None` outside the table or
/// when it does not end.
pub fn string_at(table: &[u8], offset: impl TryInto<usize>) -> Option<&[u8]> {
    let rest = table.get(offset.try_into().ok()?..)?;
    memchr::memchr(0, rest).map(|end| &rest[..end])
}

/// Is the `.dynstr` string at `offset` exactly `name`?
fn dynstr_is(elf: &Elf<'_>, data: &[u8], offset: usize, name: &str) -> bool {
    dynstr_from(elf, data, offset)
        .is_some_and(|s| s.starts_with(name.as_bytes()) && s.get(name.len()) == Some(&0))
}

/// Does the `.dynstr` string at `offset` start with `prefix`?
pub fn dynstr_starts_with(elf: &Elf<'_>, data: &[u8], offset: usize, prefix: &str) -> bool {
    dynstr_from(elf, data, offset)
        .is_some_and(|s| s.starts_with(prefix.as_bytes()) && !s[..prefix.len()].contains(&0))
}

/// `DT_VERDEF`, in order: each version's index (as `.gnu.version` refers to it) and name (`""` when its
/// string is unreadable).
pub fn verdef_names<'a>(elf: &Elf<'a>) -> Vec<(u16, &'a str)> {
    let Some(verdef) = &elf.verdef else {
        return Vec::new();
    };
    verdef
        .iter()
        .filter_map(|def| {
            let aux = def.iter().next()?;
            Some((def.vd_ndx, dynstr(elf, aux.vda_name).unwrap_or("")))
        })
        .collect()
}

/// The exported (defined) dynamic symbol `name`, found as ld.so finds it: through `DT_GNU_HASH` when the file
/// has one (a few probes instead of a walk over every symbol), else by walking `.dynsym`.
pub fn dynsym_lookup(elf: &Elf<'_>, bytes: &[u8], name: &str) -> Option<goblin::elf::Sym> {
    let defined = |s: &goblin::elf::Sym| s.st_shndx != 0 && s.st_value != 0;
    let gnu_hash = elf.dynamic.as_ref().and_then(|d| d.info.gnu_hash);
    if let (Some(off), true) = (gnu_hash, elf.little_endian) {
        return gnu_hash_find(elf, bytes, off as usize, name).filter(defined);
    }
    elf.dynsyms
        .iter()
        .find(|s| defined(s) && dynstr(elf, s.st_name) == Some(name))
}

/// `DT_GNU_HASH` lookup (the layout of `dl_new_hash`/`do_lookup_x` in glibc): the bucket of the name's hash
/// gives the first symbol of a chain; chain words hold the hashes with bit 0 marking the chain's end.
fn gnu_hash_find(elf: &Elf<'_>, data: &[u8], off: usize, name: &str) -> Option<goblin::elf::Sym> {
    let mut found = None;
    gnu_hash_each(elf, data, off, name, |_, sym| {
        found = Some(sym);
        true
    });
    found
}

/// Calls `f(index, symbol)` for each `.dynsym` entry named `name` in the `DT_GNU_HASH` chain (a name may be
/// defined in several versions); stops when `f` returns true. Returns false when the table is unreadable.
pub fn gnu_hash_each(
    elf: &Elf<'_>,
    data: &[u8],
    off: usize,
    name: &str,
    mut f: impl FnMut(usize, goblin::elf::Sym) -> bool,
) -> bool {
    let mut readable = true;
    let walked = gnu_hash_chain(data, off, elf.is_64, elf.dynsyms.len(), name, |i| {
        let Some(sym) = elf.dynsyms.get(i) else {
            readable = false;
            return true;
        };
        dynstr_is(elf, data, sym.st_name, name) && f(i, sym)
    });
    walked && readable
}

/// The `DT_GNU_HASH` walk (the layout of `dl_new_hash`/`do_lookup_x` in glibc) over the raw table at `off` of
/// `data`, for a `.dynsym` of `count` entries: calls `f(index)` for each entry of `name`'s chain whose hash
/// matches (the caller compares the name itself); stops when `f` returns true. Returns false when the table
/// is unreadable.
pub fn gnu_hash_chain(
    data: &[u8],
    off: usize,
    is_64: bool,
    count: usize,
    name: &str,
    mut f: impl FnMut(usize) -> bool,
) -> bool {
    let word = |at: usize| -> Option<u32> {
        let b = data.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let h = name
        .bytes()
        .fold(5381u32, |h, c| h.wrapping_mul(33).wrapping_add(u32::from(c)));
    let mut walk = || -> Option<()> {
        let (nbuckets, symoffset, bloom) =
            (word(off)?, word(off.checked_add(4)?)?, word(off.checked_add(8)?)?);
        if nbuckets == 0 {
            return Some(());
        }
        let buckets = off
            .checked_add(16)?
            .checked_add((bloom as usize).checked_mul(if is_64 { 8 } else { 4 })?)?;
        let chains = buckets.checked_add((nbuckets as usize).checked_mul(4)?)?;
        let mut i = word(buckets.checked_add((h % nbuckets) as usize * 4)?)?;
        if i < symoffset {
            return Some(());
        }
        // A chain is as long as the symbol table at most.
        for _ in 0..count {
            let ch = word(chains.checked_add((i - symoffset) as usize * 4)?)?;
            if ch | 1 == h | 1 && f(i as usize) {
                return Some(());
            }
            if ch & 1 != 0 {
                return Some(());
            }
            i = i.checked_add(1)?;
        }
        Some(())
    };
    walk().is_some()
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
    let (nbuckets, symoffset, bloom) = (word(off)?, word(off.checked_add(4)?)?, word(off.checked_add(8)?)?);
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
        at = at.checked_add(4)?;
        if h & 1 != 0 {
            return Some(last);
        }
    }
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
        input.chunks(
            str_start,
            str_end,
            super::input::CHUNK,
            needle.len(),
            |at, chunk| {
                for i in finder.find_iter(chunk) {
                    let off = (at + i + 1 - str_start) as u64;
                    if !v.contains(&off) {
                        v.push(off);
                    }
                }
                None::<()>
            },
        );
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
        super::input::CHUNK / entsize * entsize,
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

/// `.dynsym` and its version table read in place: the fields cudadiag asks of every symbol, without building
/// a goblin `Sym` per entry (a C++ library exports a hundred thousand; parsing each was most of the time of
/// reading a large tree's ELF facts).
pub struct RawDynsyms<'a> {
    syms: &'a [u8],
    versym: &'a [u8],
    is_64: bool,
    little: bool,
}

/// One `.dynsym` entry's `st_name`, `st_info` and `st_shndx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawSym {
    /// Offset of the name in `.dynstr`.
    pub name: u32,
    /// Binding (high nibble) and type (low nibble).
    pub info: u8,
    /// Section index: 0 (`SHN_UNDEF`) for an import.
    pub shndx: u16,
}

impl RawSym {
    /// `STB_*`.
    pub fn bind(self) -> u8 {
        self.info >> 4
    }
    /// `STT_*`.
    pub fn kind(self) -> u8 {
        self.info & 0xf
    }
}

impl<'a> RawDynsyms<'a> {
    /// The table [`parse`] found (its size checked there), with `DT_VERSYM` (or, without it, the
    /// `SHT_GNU_VERSYM` section) when it fits in the file.
    pub fn new(elf: &Elf<'a>, bytes: &'a [u8]) -> Self {
        let entsize = if elf.is_64 { 24 } else { 16 };
        let count = elf.dynsyms.len();
        let slice = |off: usize, len: usize| off.checked_add(len).and_then(|end| bytes.get(off..end));
        let syms = match (&elf.dynamic, count) {
            (Some(d), 1..) => slice(d.info.symtab, count * entsize).unwrap_or(&[]),
            _ => &[],
        };
        let from_dynamic = elf
            .dynamic
            .as_ref()
            .map(|d| d.info.versym as usize)
            .filter(|&off| off != 0);
        let from_section = || {
            elf.section_headers
                .iter()
                .find(|s| s.sh_type == goblin::elf::section_header::SHT_GNU_VERSYM)
                .map(|s| s.sh_offset as usize)
        };
        let versym = from_dynamic
            .or_else(from_section)
            .and_then(|off| slice(off, syms.len() / entsize * 2))
            .unwrap_or(&[]);
        RawDynsyms {
            syms,
            versym,
            is_64: elf.is_64,
            little: elf.little_endian,
        }
    }

    /// The table's bytes.
    pub fn table(&self) -> &'a [u8] {
        self.syms
    }

    /// The `.gnu.version` bytes, one 16-bit entry per symbol (empty without a version table).
    pub fn versions(&self) -> &'a [u8] {
        self.versym
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.syms.len() / if self.is_64 { 24 } else { 16 }
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    fn u16_at(&self, b: &[u8], at: usize) -> Option<u16> {
        let b: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
        Some(if self.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    }

    /// Entry `i`.
    pub fn get(&self, i: usize) -> Option<RawSym> {
        let (size, info_at, shndx_at) = if self.is_64 { (24, 4, 6) } else { (16, 12, 14) };
        let e = self.syms.get(i.checked_mul(size)?..(i + 1).checked_mul(size)?)?;
        let name: [u8; 4] = e[..4].try_into().ok()?;
        Some(RawSym {
            name: if self.little {
                u32::from_le_bytes(name)
            } else {
                u32::from_be_bytes(name)
            },
            info: e[info_at],
            shndx: self.u16_at(e, shndx_at)?,
        })
    }

    /// Every entry, in order (what [`RawDynsyms::get`] gives for each index, read in one pass).
    pub fn iter(&self) -> impl Iterator<Item = RawSym> + '_ {
        let (size, info_at, shndx_at) = if self.is_64 { (24, 4, 6) } else { (16, 12, 14) };
        let little = self.little;
        self.syms.chunks_exact(size).map(move |e| {
            let name = [e[0], e[1], e[2], e[3]];
            let shndx = [e[shndx_at], e[shndx_at + 1]];
            RawSym {
                name: if little {
                    u32::from_le_bytes(name)
                } else {
                    u32::from_be_bytes(name)
                },
                info: e[info_at],
                shndx: if little {
                    u16::from_le_bytes(shndx)
                } else {
                    u16::from_be_bytes(shndx)
                },
            }
        })
    }

    /// Entry `i`'s `.gnu.version` value as stored (bit 15: hidden); `None` without a version table.
    pub fn version(&self, i: usize) -> Option<u16> {
        self.u16_at(self.versym, i.checked_mul(2)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read through a file in windows, the strings are those the table gives in place: across windows, longer
    /// than the buffer, unended at the table's end, past it, not UTF-8, asked twice and out of order.
    #[test]
    fn strings_read_at_are_the_tables_own() {
        let mut table = Vec::new();
        let mut offsets = Vec::new();
        for i in 0..9000u32 {
            offsets.push(table.len() as u32);
            table.extend_from_slice(format!("_ZN5torch{i}name{}", "x".repeat((i % 37) as usize)).as_bytes());
            table.push(0);
        }
        offsets.push(table.len() as u32);
        table.extend(std::iter::repeat_n(b'L', 150_000));
        table.push(0);
        offsets.push(table.len() as u32);
        table.extend_from_slice(b"bad\xff\0");
        offsets.extend([3, 70_000, 65_530, 0, table.len() as u32, u32::MAX]);
        offsets.push(table.len() as u32);
        table.extend_from_slice(b"unended");
        offsets.push(table.len() as u32 - 2);
        offsets.reverse();
        let mut data = b"header".to_vec();
        data.extend_from_slice(&table);
        data.extend_from_slice(b"\0after");
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("lib.so");
        std::fs::write(&path, &data).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let table = &data[6..6 + table.len()];
        let got = strings_read_at(&file, &data, table, &offsets).unwrap();
        for (off, got) in offsets.iter().zip(&got) {
            let want = string_at(table, *off).and_then(|s| std::str::from_utf8(s).ok());
            assert_eq!(got.as_deref(), want, "at {off}");
        }
        assert!(got.iter().filter(|g| g.is_some()).count() > 9000);
        // A file shorter than its map said: no answer, the map is read instead.
        std::fs::write(&path, b"short").unwrap();
        assert!(strings_read_at(&file, &data, table, &offsets).is_none());
    }

    /// The in-place reader agrees with goblin's parse on every symbol and version word of the shared
    /// libraries in this machine's library directories (x86-64 CI: libc, libstdc++, libm, …).
    #[test]
    fn raw_dynsyms_agree_with_goblin() {
        let mut checked = 0;
        for path in &crate::inspect::sample_libraries(40) {
            let Ok(bytes) = std::fs::read(path) else { continue };
            let Ok((elf, _)) = parse(&bytes) else { continue };
            let raw = RawDynsyms::new(&elf, &bytes);
            assert_eq!(raw.len(), elf.dynsyms.len(), "{}", path.display());
            let by_index: Vec<RawSym> = (0..raw.len()).map(|i| raw.get(i).unwrap()).collect();
            assert_eq!(raw.iter().collect::<Vec<_>>(), by_index, "{}", path.display());
            for (i, sym) in elf.dynsyms.iter().enumerate() {
                let r = raw.get(i).unwrap();
                assert_eq!(r.name as usize, sym.st_name, "{} symbol {i}", path.display());
                assert_eq!(r.info, sym.st_info, "{} symbol {i}", path.display());
                assert_eq!(
                    usize::from(r.shndx),
                    sym.st_shndx,
                    "{} symbol {i}",
                    path.display()
                );
                let goblin_version = elf.versym.as_ref().and_then(|v| v.get_at(i)).map(|v| v.vs_val);
                if let Some(v) = goblin_version {
                    assert_eq!(raw.version(i), Some(v), "{} symbol {i}", path.display());
                }
                if let Some(name) = dynstr(&elf, sym.st_name) {
                    assert!(dynstr_is(&elf, &bytes, sym.st_name, name));
                    assert!(dynstr_starts_with(&elf, &bytes, sym.st_name, name));
                    assert!(dynstr_starts_with(
                        &elf,
                        &bytes,
                        sym.st_name,
                        name.get(..name.len() / 2).unwrap_or("")
                    ));
                    assert!(!dynstr_is(&elf, &bytes, sym.st_name, &format!("{name}x")));
                    assert!(!dynstr_starts_with(
                        &elf,
                        &bytes,
                        sym.st_name,
                        &format!("{name}x")
                    ));
                }
            }
            checked += usize::from(!raw.is_empty());
        }
        assert!(checked > 0, "no shared library with a .dynsym found to compare");
    }
}
