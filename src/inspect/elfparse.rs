//! A parse of the host ELF that reads only what cudadiag asks of it.
//!
//! goblin's `Elf::parse` also splits `.strtab` into a vector of strings and walks every relocation; for a
//! 500 MB `libtorch_cuda.so` that is a 73 MB string table touched and 16 MB allocated, most of cudadiag's time
//! and memory, for symbols nobody asked about. Here the ELF header, program and section headers, the dynamic
//! section, `.dynstr`/`.dynsym` and the symbol-version sections are parsed with goblin's own parsers, and
//! nothing else; the full symbol table is searched on demand ([`symtab_lookup`]) with positioned reads.
//! Damage to an optional part is recorded and the rest still read (goblin's "permissive" spirit).

use super::input::Input;
use super::pieces::{Piece, held, locate};
use goblin::container::Ctx;
use goblin::elf::dynamic::{DT_NEEDED, DT_RPATH, DT_RUNPATH, Dynamic};
use goblin::elf::section_header::{SHT_DYNSYM, SHT_GNU_VERDEF, SHT_GNU_VERNEED, SHT_SYMTAB, SectionHeader};
use goblin::elf::{Elf, ProgramHeader, Symtab, program_header, symver};
use goblin::strtab::Strtab;
use std::borrow::Cow;

/// Parses the parts of a host ELF that cudadiag uses; returns the ELF and the damage met on the way.
pub fn parse(bytes: &[u8]) -> goblin::error::Result<(Elf<'_>, Vec<String>)> {
    parse_with(bytes, &[])
}

/// [`parse`], reading the ELF header, the program and section headers, the section names and the dynamic
/// section from `pieces` where they hold them ([`read_pieces`]) rather than from `bytes`, the file's map. The
/// result is the same: what a piece holds is what the map would give.
pub fn parse_with<'a>(bytes: &'a [u8], pieces: &'a [Piece]) -> goblin::error::Result<(Elf<'a>, Vec<String>)> {
    let (head, rel) = locate(bytes, pieces, 0, EHDR64);
    let header = Elf::parse_header(&head[rel..])?;
    let mut elf = Elf::lazy_parse(header)?;
    let mut damage = Vec::new();
    let ctx = Ctx::new(header.container()?, header.endianness()?);
    match program_headers(bytes, pieces, &header, ctx) {
        Ok(ph) => elf.program_headers = ph,
        Err(e) => damage.push(format!("program headers: {e}")),
    }
    for ph in &elf.program_headers {
        if ph.p_type == program_header::PT_INTERP && ph.p_filesz != 0 {
            let (at, start) = locate(bytes, pieces, ph.p_offset as usize, ph.p_filesz as usize);
            let end = start.saturating_add(ph.p_filesz as usize - 1);
            elf.interpreter = at.get(start..end).and_then(|b| std::str::from_utf8(b).ok());
        }
    }
    if header.e_shnum > 0 {
        match section_headers(bytes, pieces, &header, ctx) {
            Ok(sh) => elf.section_headers = sh,
            Err(e) => damage.push(format!("section headers: {e}")),
        }
    }
    if let Some(sh) = elf.section_headers.get(header.e_shstrndx as usize) {
        let (at, rel) = locate(bytes, pieces, sh.sh_offset as usize, sh.sh_size as usize);
        match Strtab::parse(at, rel, sh.sh_size as usize, 0) {
            Ok(t) => elf.shdr_strtab = t,
            Err(e) => damage.push(format!("section name table: {e}")),
        }
    }
    let dynamic = match dynamic_with(bytes, pieces, &elf.program_headers, ctx) {
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
        let whole = info
            .strtab
            .checked_add(info.strsz)
            .and_then(|end| bytes.get(info.strtab..end));
        match whole {
            Some(table) => elf.dynstrtab = Strtab::new(table, 0),
            None => damage.push(format!(
                "dynamic string table: {} bytes at 0x{:x} do not fit in the file",
                info.strsz, info.strtab
            )),
        }
        // The names the dynamic section gives, from a piece where one holds them.
        let table = Strtab::new(whole.unwrap_or_default(), 0);
        #[allow(deprecated)] // As [`dynstr`] reads.
        let name = |off: usize| {
            // Only from a table that fits in the file, as the map's.
            whole
                .and_then(|_| piece_string(pieces, info.strtab, info.strsz, off))
                .unwrap_or_else(|| table.get(off)?.ok())
        };
        if info.soname != 0 {
            elf.soname = name(info.soname);
        }
        for d in &dynamic.dyns {
            if !matches!(d.d_tag, DT_NEEDED | DT_RPATH | DT_RUNPATH) {
                continue;
            }
            let Some(s) = name(d.d_val as usize) else {
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
    let (at, shdrs) = section_with(bytes, pieces, &elf.section_headers, SHT_GNU_VERDEF);
    match symver::VerdefSection::parse(at, &shdrs, ctx) {
        Ok(v) => elf.verdef = v,
        Err(e) => damage.push(format!("version definitions: {e}")),
    }
    let (at, shdrs) = section_with(bytes, pieces, &elf.section_headers, SHT_GNU_VERNEED);
    match symver::VerneedSection::parse(at, &shdrs, ctx) {
        Ok(v) => elf.verneed = v,
        Err(e) => damage.push(format!("version needs: {e}")),
    }
    Ok((elf, damage))
}

/// The program headers `header` places, parsed from a piece that holds them, else from `bytes`.
fn program_headers(
    bytes: &[u8],
    pieces: &[Piece],
    header: &goblin::elf::Header,
    ctx: Ctx,
) -> goblin::error::Result<Vec<ProgramHeader>> {
    let (at, n) = (header.e_phoff, header.e_phnum);
    headers(
        bytes,
        pieces,
        (at, n, ProgramHeader::size(ctx)),
        ProgramHeader::parse,
        ctx,
    )
}

/// The section headers `header` places, as [`program_headers`].
fn section_headers(
    bytes: &[u8],
    pieces: &[Piece],
    header: &goblin::elf::Header,
    ctx: Ctx,
) -> goblin::error::Result<Vec<SectionHeader>> {
    let (at, n) = (header.e_shoff, header.e_shnum);
    headers(
        bytes,
        pieces,
        (at, n, SectionHeader::size(ctx)),
        SectionHeader::parse,
        ctx,
    )
}

/// goblin's parser of a table of headers: (bytes, offset, count, context).
type ParseTable<T> = fn(&[u8], usize, usize, Ctx) -> goblin::error::Result<Vec<T>>;

/// A table of `n` headers of `size` bytes at file offset `at`, parsed by goblin's `parse`.
fn headers<T>(
    bytes: &[u8],
    pieces: &[Piece],
    (at, n, size): (u64, u16, usize),
    parse: ParseTable<T>,
    ctx: Ctx,
) -> goblin::error::Result<Vec<T>> {
    let n = usize::from(n);
    let (bytes, rel) = locate(bytes, pieces, at as usize, n.saturating_mul(size));
    parse(bytes, rel, n, ctx)
}

/// goblin's `Dynamic::parse`, reading the first `PT_DYNAMIC`'s bytes from a piece that holds them.
fn dynamic_with(
    bytes: &[u8],
    pieces: &[Piece],
    phdrs: &[ProgramHeader],
    ctx: Ctx,
) -> goblin::error::Result<Option<Dynamic>> {
    let Some(i) = phdrs
        .iter()
        .position(|ph| ph.p_type == program_header::PT_DYNAMIC)
    else {
        return Ok(None);
    };
    // The other headers place the dynamic entries' addresses in the file, as before.
    let (at, phdrs) = relocated(bytes, pieces, phdrs, i, |ph| (&mut ph.p_offset, ph.p_filesz));
    Dynamic::parse(at, &phdrs, ctx)
}

/// Where goblin's parser of the first section of type `sh_type` finds it: the bytes and section headers to
/// give it, the section's offset made a piece's where one holds the section.
fn section_with<'a, 'h>(
    bytes: &'a [u8],
    pieces: &'a [Piece],
    shdrs: &'h [SectionHeader],
    sh_type: u32,
) -> (&'a [u8], Cow<'h, [SectionHeader]>) {
    match shdrs.iter().position(|sh| sh.sh_type == sh_type) {
        Some(i) => relocated(bytes, pieces, shdrs, i, |sh| (&mut sh.sh_offset, sh.sh_size)),
        None => (bytes, shdrs.into()),
    }
}

/// The bytes and headers to give a goblin parser that reads header `i`'s part of the file (`place`: that
/// header's file offset, to move, and its size): `bytes` and `headers` as they are, or the piece that holds
/// the part and a copy of `headers` whose `i`th offset is made the piece's.
fn relocated<'a, 'h, H: Clone>(
    bytes: &'a [u8],
    pieces: &'a [Piece],
    headers: &'h [H],
    i: usize,
    place: impl Fn(&mut H) -> (&mut u64, u64),
) -> (&'a [u8], Cow<'h, [H]>) {
    let mut header = headers[i].clone();
    let (offset, size) = place(&mut header);
    let (at, rel) = locate(bytes, pieces, *offset as usize, size as usize);
    if std::ptr::eq(at, bytes) {
        return (bytes, headers.into());
    }
    *offset = rel as u64;
    let mut moved = headers.to_vec();
    moved[i] = header;
    (at, moved.into())
}

/// The size of an ELF64 header (an ELF32 header, 52 bytes, fits in it).
const EHDR64: usize = goblin::elf::header::header64::SIZEOF_EHDR;

/// The string at `off` of the string table of `size` bytes at file offset `table`, as [`dynstr`] reads it,
/// from a piece that holds it and its NUL; `None` when none does (the map is read instead).
fn piece_string(pieces: &[Piece], table: usize, size: usize, off: usize) -> Option<Option<&str>> {
    if off >= size {
        return None;
    }
    let at = table.checked_add(off)?;
    pieces.iter().find_map(|p| {
        let rel = at.checked_sub(p.at)?;
        let rest = p.bytes.get(rel..)?;
        // Within the table: past its end, goblin's reading would not stop at a NUL the piece holds.
        let rest = &rest[..rest.len().min(size - off)];
        let end = memchr::memchr(0, rest)?;
        Some(std::str::from_utf8(&rest[..end]).ok())
    })
}

/// The most a header piece may hold ([`read_pieces`]): more is left to the map (a hostile count, or a file of
/// thousands of sections).
const MOST_PIECE: usize = 256 << 10;

/// The most all the pieces of a file may hold.
const MOST_PIECES: usize = 1 << 20;

/// The most pieces a file is read in (an ordinary library needs four to eight).
const MOST_READS: usize = 16;

/// The bytes [`parse_with`] reads of a file of `len` bytes (the ELF header, the program headers, the section
/// headers with the section names, the dynamic section and the names it gives, the version definitions and
/// needs) and the notes (the build ID), copied out by positioned reads, four to eight of them. Read through a
/// map, each of these touches would keep a whole page-cache folio resident (the section headers at the end of a
/// 500 MB library, behind 70 MB of `.strtab`, kept 2 MB): a piece keeps only its bytes.
/// What cannot be read (a short file, a count past [`MOST_PIECE`]) is not copied, and is read from the map.
pub fn read_pieces(file: &std::fs::File, len: usize) -> Vec<Piece> {
    // A hostile file's thousands of notes are not all read.
    let (left, reads) = (std::cell::Cell::new(MOST_PIECES), std::cell::Cell::new(0));
    let read = |at: usize, n: usize| -> Option<Piece> {
        use std::os::unix::fs::FileExt;
        if n == 0 || n > MOST_PIECE || n > left.get() || reads.get() == MOST_READS || at.checked_add(n)? > len
        {
            return None;
        }
        left.set(left.get() - n);
        reads.set(reads.get() + 1);
        let mut bytes = vec![0u8; n];
        file.read_exact_at(&mut bytes, at as u64).ok()?;
        Some(Piece { at, bytes })
    };
    let mut pieces = Vec::new();
    // The ELF header and, in every linker's layout, the program headers behind it.
    let Some(head) = read(0, len.min(4096)) else {
        return pieces;
    };
    let Ok(header) = Elf::parse_header(&head.bytes) else {
        return pieces;
    };
    pieces.push(head);
    let Ok(ctx) = header
        .container()
        .and_then(|c| Ok(Ctx::new(c, header.endianness()?)))
    else {
        return pieces;
    };
    let ph_at = header.e_phoff as usize;
    let ph_len = (header.e_phnum as usize).saturating_mul(ProgramHeader::size(ctx));
    if !held(&pieces, ph_at, ph_len)
        && let Some(p) = read(ph_at, ph_len)
    {
        pieces.push(p);
    }
    // The section headers, and the 4 KiB before them: the section names lie there in GNU ld's layout, and
    // are read again below where they do not.
    let sh_at = header.e_shoff as usize;
    let sh_len = (header.e_shnum as usize).saturating_mul(SectionHeader::size(ctx));
    if sh_len > 0 {
        let before = sh_at.min(4096);
        if let Some(p) = read(sh_at - before, sh_len + before) {
            pieces.push(p);
        }
    }
    let shdrs = section_headers(&[], &pieces, &header, ctx);
    if let Ok(shdrs) = &shdrs
        && let Some(names) = shdrs.get(header.e_shstrndx as usize)
    {
        let (n_at, n_len) = (names.sh_offset as usize, names.sh_size as usize);
        if !held(&pieces, n_at, n_len)
            && let Some(p) = read(n_at, n_len)
        {
            pieces.push(p);
        }
    }
    if let Ok(shdrs) = &shdrs {
        // The version tables, a few hundred bytes each, lie amid the symbols or the relocations.
        for sh_type in [SHT_GNU_VERDEF, SHT_GNU_VERNEED] {
            if let Some(sh) = shdrs.iter().find(|sh| sh.sh_type == sh_type)
                && sh.sh_size <= 64 << 10
                && !held(&pieces, sh.sh_offset as usize, sh.sh_size as usize)
                && let Some(p) = read(sh.sh_offset as usize, sh.sh_size as usize)
            {
                pieces.push(p);
            }
        }
    }
    if let Ok(phdrs) = program_headers(&[], &pieces, &header, ctx) {
        // The dynamic section (the first, as goblin reads), and the notes (the build ID) where they are small.
        let dynamic = phdrs
            .iter()
            .position(|ph| ph.p_type == program_header::PT_DYNAMIC);
        for (i, ph) in phdrs.iter().enumerate() {
            let (p_at, p_len) = (ph.p_offset as usize, ph.p_filesz as usize);
            let wanted = match ph.p_type {
                program_header::PT_DYNAMIC => Some(i) == dynamic,
                program_header::PT_NOTE => p_len <= 4096,
                _ => false,
            };
            if wanted
                && !held(&pieces, p_at, p_len)
                && let Some(p) = read(p_at, p_len)
            {
                pieces.push(p);
            }
        }
        // The names the dynamic section gives (needed libraries, SONAME, search paths): one read from the
        // first to the last, when they lie within 64 KiB of each other, with room for the last.
        if let Ok(Some(dynamic)) = dynamic_with(&[], &pieces, &phdrs, ctx) {
            let info = &dynamic.info;
            let offsets = dynamic
                .dyns
                .iter()
                .filter(|d| matches!(d.d_tag, DT_NEEDED | DT_RPATH | DT_RUNPATH))
                .map(|d| d.d_val as usize)
                .chain((info.soname != 0).then_some(info.soname))
                .filter(|&o| o < info.strsz);
            if let (Some(first), Some(last)) = (offsets.clone().min(), offsets.max())
                && last - first <= 64 << 10
                && let Some(at) = info.strtab.checked_add(first)
            {
                let n = (last - first + 4096).min(info.strsz - first);
                if let Some(p) = read(at, n) {
                    pieces.push(p);
                }
            }
        }
    }
    pieces
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
    crate::system::read::with_scan_buffer(crate::system::read::LINES_CHUNK, |buf| {
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
    let h = gnu_hash(name);
    let mut walk = || -> Option<()> {
        let (nbuckets, symoffset, bloom, shift) = (
            word(off)?,
            word(off.checked_add(4)?)?,
            word(off.checked_add(8)?)?,
            word(off.checked_add(12)?)?,
        );
        if nbuckets == 0 {
            return Some(());
        }
        let bloom_at = off.checked_add(16)?;
        if !maybe_in_bloom(data, bloom_at, bloom, shift, is_64, h)? {
            return Some(());
        }
        let buckets = bloom_at.checked_add((bloom as usize).checked_mul(if is_64 { 8 } else { 4 })?)?;
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

/// glibc's `dl_new_hash` of a symbol name: the hash `DT_GNU_HASH` tables are built with.
fn gnu_hash(name: &str) -> u32 {
    name.bytes()
        .fold(5381u32, |h, c| h.wrapping_mul(33).wrapping_add(u32::from(c)))
}

/// The `DT_GNU_HASH` Bloom filter's answer for the hash `h`, as `do_lookup_x` asks it before the buckets: two
/// bits of one word (of `words` at `at`, each the class's width), chosen by `h` and by `h >> shift`; a name
/// whose two bits are not both set is not in the table. `None` when the word is outside `data`. glibc takes
/// the word index modulo `words` with a mask, so it requires a power of two (`_dl_setup_hash` asserts it); for
/// any other count, or a shift as wide as the hash (which C leaves undefined), the filter is not read, and
/// every name may be there.
fn maybe_in_bloom(data: &[u8], at: usize, words: u32, shift: u32, is_64: bool, h: u32) -> Option<bool> {
    if !words.is_power_of_two() || shift >= 32 {
        return Some(true);
    }
    let (bits, width) = if is_64 { (64u32, 8usize) } else { (32, 4) };
    let index = ((h / bits) & (words - 1)) as usize;
    let start = at.checked_add(index.checked_mul(width)?)?;
    let b = data.get(start..start.checked_add(width)?)?;
    let word = if is_64 {
        u64::from_le_bytes(b.try_into().ok()?)
    } else {
        u64::from(u32::from_le_bytes(b.try_into().ok()?))
    };
    let (bit1, bit2) = (h % bits, (h >> shift) % bits);
    Some((word >> bit1) & (word >> bit2) & 1 != 0)
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

    /// A 64-bit `DT_GNU_HASH` of one bucket whose chain holds `name` at index 1, with `words` Bloom words of
    /// which the first is `bloom` (shift 6), and the indexes the walk offers for `name`.
    fn offered(name: &str, words: u32, bloom: u64, truncate: bool) -> (bool, Vec<usize>) {
        offered_in(true, name, words, bloom, truncate)
    }

    /// [`offered`] in a table of the class `is_64`: a 32-bit one has 32-bit Bloom words (the low half of
    /// `bloom`).
    fn offered_in(is_64: bool, name: &str, words: u32, bloom: u64, truncate: bool) -> (bool, Vec<usize>) {
        let h = gnu_hash(name);
        let mut t = Vec::new();
        for w in [1u32, 1, words, 6] {
            t.extend_from_slice(&w.to_le_bytes());
        }
        for i in 0..words {
            let word = if i == 0 { bloom } else { 0 };
            if is_64 {
                t.extend_from_slice(&word.to_le_bytes());
            } else {
                t.extend_from_slice(&(word as u32).to_le_bytes());
            }
        }
        t.extend_from_slice(&1u32.to_le_bytes()); // the bucket: symbol 1
        t.extend_from_slice(&(h | 1).to_le_bytes()); // its chain, ended
        if truncate {
            t.truncate(20);
        }
        let mut seen = Vec::new();
        let readable = gnu_hash_chain(&t, 0, is_64, 2, name, |i| {
            seen.push(i);
            false
        });
        (readable, seen)
    }

    /// The Bloom filter turns a name away before its bucket is read, as glibc's `do_lookup_x` does: with both
    /// of its bits set the chain is walked, with either clear it is not; a filter glibc would not accept (a
    /// word count not a power of two) is not read; one cut short makes the table unreadable.
    #[test]
    fn gnu_hash_bloom_filter_as_glibc_reads_it() {
        let name = "cudaMalloc";
        let h = gnu_hash(name);
        let both = (1u64 << (h % 64)) | (1u64 << ((h >> 6) % 64));
        assert_eq!(offered(name, 1, both, false), (true, vec![1]));
        assert_eq!(offered(name, 1, 0, false), (true, vec![]));
        assert_eq!(offered(name, 1, 1u64 << (h % 64), false).1, Vec::<usize>::new());
        assert_eq!(offered(name, 3, 0, false), (true, vec![1]));
        assert!(!offered(name, 1, both, true).0);
        // A 32-bit table: 32-bit words, bits chosen modulo 32. `cudaFree`'s 64-bit bits (36 and 55) are not
        // its 32-bit ones (4 and 23).
        let name = "cudaFree";
        let h = gnu_hash(name);
        let both32 = (1u64 << (h % 32)) | (1u64 << ((h >> 6) % 32));
        let both64 = (1u64 << (h % 64)) | (1u64 << ((h >> 6) % 64));
        assert_eq!(offered_in(false, name, 1, both32, false), (true, vec![1]));
        assert_eq!(
            offered_in(false, name, 1, 1u64 << (h % 32), false).1,
            Vec::<usize>::new()
        );
        assert_eq!(offered_in(false, name, 1, both64, false).1, Vec::<usize>::new());
        assert_eq!(offered_in(true, name, 1, both64, false).1, vec![1]);
    }

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

    /// What [`parse_with`] reads of an ELF, printed: the same from the pieces as from the map.
    fn parsed(result: goblin::error::Result<(Elf<'_>, Vec<String>)>) -> String {
        let Ok((elf, damage)) = result else {
            return format!(
                "error: {}",
                result.err().map(|e| e.to_string()).unwrap_or_default()
            );
        };
        let names: Vec<_> = elf
            .section_headers
            .iter()
            .map(|sh| elf.shdr_strtab.get_at(sh.sh_name))
            .collect();
        format!(
            "{:?}\n{:?}\n{:?}\n{names:?}\n{:?}\n{:?} {:?} {:?} {:?} {:?}\n{} {}\n{:?}\n{:?}\n{damage:?}",
            elf.header,
            elf.program_headers,
            elf.section_headers,
            elf.dynamic,
            elf.interpreter,
            elf.soname,
            elf.libraries,
            elf.rpaths,
            elf.runpaths,
            elf.dynsyms.len(),
            elf.versym.is_some(),
            verdef_names(&elf),
            elf.verneed
                .iter()
                .flat_map(|n| n.iter())
                .map(|n| {
                    let aux: Vec<_> = n
                        .iter()
                        .map(|a| (a.vna_hash, a.vna_other, dynstr(&elf, a.vna_name)))
                        .collect();
                    (dynstr(&elf, n.vn_file), aux)
                })
                .collect::<Vec<_>>(),
        )
    }

    /// The pieces a file's headers are read from hold the ELF header, the program headers, the section
    /// headers, the section names, the dynamic section and the version tables of every library sampled (each read apart from the
    /// map, or the map is touched as before), and the parse from them is the parse from the map.
    #[test]
    fn parse_with_pieces_is_the_maps_parse() {
        let mut checked = 0;
        for path in &crate::inspect::sample_libraries(40) {
            let Ok(bytes) = std::fs::read(path) else { continue };
            let Ok(file) = std::fs::File::open(path) else {
                continue;
            };
            let pieces = read_pieces(&file, bytes.len());
            assert_eq!(
                parsed(parse_with(&bytes, &pieces)),
                parsed(parse(&bytes)),
                "{}",
                path.display()
            );
            let Ok((elf, _)) = parse(&bytes) else { continue };
            let h = &elf.header;
            let dynamic = elf
                .program_headers
                .iter()
                .find(|p| p.p_type == program_header::PT_DYNAMIC);
            let names = elf.section_headers.get(usize::from(h.e_shstrndx));
            let section = |t| elf.section_headers.iter().find(|sh| sh.sh_type == t);
            let (verdef, verneed) = (section(SHT_GNU_VERDEF), section(SHT_GNU_VERNEED));
            for (what, at, len) in [
                ("ELF header", 0, usize::from(h.e_ehsize)),
                (
                    "program headers",
                    h.e_phoff,
                    usize::from(h.e_phnum) * usize::from(h.e_phentsize),
                ),
                (
                    "section headers",
                    h.e_shoff,
                    usize::from(h.e_shnum) * usize::from(h.e_shentsize),
                ),
                (
                    "section names",
                    names.map_or(0, |n| n.sh_offset),
                    names.map_or(0, |n| n.sh_size as usize),
                ),
                (
                    "dynamic section",
                    dynamic.map_or(0, |d| d.p_offset),
                    dynamic.map_or(0, |d| d.p_filesz as usize),
                ),
                (
                    "version definitions",
                    verdef.map_or(0, |v| v.sh_offset),
                    verdef.map_or(0, |v| v.sh_size as usize),
                ),
                (
                    "version needs",
                    verneed.map_or(0, |v| v.sh_offset),
                    verneed.map_or(0, |v| v.sh_size as usize),
                ),
            ] {
                assert!(
                    len == 0 || held(&pieces, at as usize, len),
                    "{what} of {}",
                    path.display()
                );
            }
            // The names the dynamic section gives, and the build ID, from the pieces too.
            if let Some(d) = &elf.dynamic {
                for off in d
                    .dyns
                    .iter()
                    .filter(|d| d.d_tag == DT_NEEDED)
                    .map(|d| d.d_val as usize)
                {
                    let got = piece_string(&pieces, d.info.strtab, d.info.strsz, off);
                    assert_eq!(got, Some(dynstr(&elf, off)), "needed name in {}", path.display());
                }
            }
            assert_eq!(
                crate::loader::dlopen_table::build_id_in(&[], &pieces),
                crate::loader::dlopen_table::build_id(&bytes),
                "build ID of {}",
                path.display()
            );
            checked += 1;
        }
        if std::path::Path::new("/lib/x86_64-linux-gnu").exists() {
            assert!(checked > 20, "only {checked} libraries read");
        }
    }

    /// Headers that claim too much, or a file shorter than its map: no piece past [`MOST_PIECE`] or the file's
    /// end, and the parse (its damage too) is the map's.
    #[test]
    fn hostile_headers_are_parsed_as_from_the_map() {
        let path = crate::inspect::sample_libraries(1)
            .into_iter()
            .next()
            .unwrap_or_else(|| std::env::current_exe().unwrap());
        let original = std::fs::read(&path).unwrap();
        let t = tempfile::tempdir().unwrap();
        let lib = t.path().join("lib.so");
        let patches: [(usize, &[u8]); 6] = [
            (0x3c, &[0xff, 0xff]),                         // e_shnum: 65,535 section headers
            (0x28, &[0xf0, 0xff, 0xff, 0xff, 0, 0, 0, 0]), // e_shoff past the end
            (0x38, &[0xff, 0xff]),                         // e_phnum: 65,535 program headers
            (0x20, &[0x10, 0, 0, 0, 0, 0, 0, 0]),          // e_phoff inside the header
            (0x3e, &[0xfe, 0xff]),                         // e_shstrndx out of range
            (0x04, &[1]),                                  // ELFCLASS32 of a 64-bit file
        ];
        for (at, patch) in patches {
            let mut bytes = original.clone();
            bytes[at..at + patch.len()].copy_from_slice(patch);
            std::fs::write(&lib, &bytes).unwrap();
            let file = std::fs::File::open(&lib).unwrap();
            let pieces = read_pieces(&file, bytes.len());
            assert!(
                pieces.iter().all(|p| p.bytes.len() <= MOST_PIECE.max(4096)),
                "at 0x{at:x}"
            );
            assert!(pieces.len() <= MOST_READS, "at 0x{at:x}");
            assert!(
                pieces.iter().all(|p| p.at + p.bytes.len() <= bytes.len()),
                "at 0x{at:x}"
            );
            assert_eq!(
                parsed(parse_with(&bytes, &pieces)),
                parsed(parse(&bytes)),
                "at 0x{at:x}"
            );
        }
        // The file shrank after it was mapped: what it no longer holds is not a piece.
        std::fs::write(&lib, &original[..original.len() / 2]).unwrap();
        let file = std::fs::File::open(&lib).unwrap();
        let pieces = read_pieces(&file, original.len());
        assert!(pieces.iter().all(|p| p.at + p.bytes.len() <= original.len() / 2));
        assert_eq!(parsed(parse_with(&original, &pieces)), parsed(parse(&original)));
    }

    /// Thousands of notes: a few are read, the rest are left to the map, and the parse is the map's.
    #[test]
    fn thousands_of_notes_are_not_all_read() {
        // Within one piece's reach, the table is read whole; each note lies apart.
        let (phnum, phentsize) = (4000u16, 56u16);
        let notes = 64 + u64::from(phnum) * 56;
        let mut bytes = vec![0u8; 64];
        bytes[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
        bytes[16] = 3; // ET_DYN
        bytes[18] = 62; // EM_X86_64
        bytes[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        bytes[0x34..0x36].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        bytes[0x36..0x38].copy_from_slice(&phentsize.to_le_bytes());
        bytes[0x38..0x3a].copy_from_slice(&phnum.to_le_bytes());
        for i in 0..u64::from(phnum) {
            let mut ph = [0u8; 56];
            ph[..4].copy_from_slice(&4u32.to_le_bytes()); // PT_NOTE
            ph[8..16].copy_from_slice(&(notes + i * 16).to_le_bytes()); // p_offset
            ph[32..40].copy_from_slice(&8u64.to_le_bytes()); // p_filesz
            bytes.extend_from_slice(&ph);
        }
        bytes.resize(bytes.len() + usize::from(phnum) * 16, 0);
        let t = tempfile::tempdir().unwrap();
        let lib = t.path().join("notes.so");
        std::fs::write(&lib, &bytes).unwrap();
        let pieces = read_pieces(&std::fs::File::open(&lib).unwrap(), bytes.len());
        assert_eq!(pieces.len(), MOST_READS);
        assert_eq!(parsed(parse_with(&bytes, &pieces)), parsed(parse(&bytes)));
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
