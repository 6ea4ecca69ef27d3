//! The one walk over a tar archive (an image file, a layer) that every command shares: what any tar reader
//! would list, with every record that changes it applied, each record within a small bound, and every byte an
//! entry declares checked to be there.
//!
//! Read here, header block by header block (POSIX.1-2001 `pax` "ustar Interchange Format" and "pax Interchange
//! Format"; GNU tar's manual, "Basic Tar Format" and "GNU Extensions to the Archive Format"):
//! - the v7, ustar (its `prefix` joined to the name) and GNU header layouts: a header is a 512-byte block whose
//!   checksum is right, whatever its magic (an old v7 archive has none); a v7 name ending in `/` is a directory;
//! - sizes in octal or in GNU's base-256;
//! - GNU long names and long link targets (`L`, `K`), and PAX extended headers (`x`): `path`, `linkpath` and
//!   `size`, which replaces the header's size, so that the next header is found where every tar reader finds
//!   it. Global PAX headers (`g`) carry nothing an image's tree needs and are passed over;
//! - sparse files, whose holes read as zeros: old GNU (`S`, its map in the header and extension blocks) and
//!   GNU's PAX formats 0.0 (`GNU.sparse.offset`/`numbytes` pairs), 0.1 (`GNU.sparse.map`) and 1.0 (the map at
//!   the start of the data), with `GNU.sparse.name` and `GNU.sparse.realsize`/`size`.
//!
//! The `tar` crate's own iterator applies PAX `size` and old GNU sparse maps, but reads every long name and PAX
//! record whole, with no bound (an 8 GiB `L` record is 8 GiB of memory), and knows no PAX sparse format; its raw
//! iterator bounds nothing either and ignores PAX `size`, so that a file every other reader lists is not seen.
//! Hence this walk.

use super::{ImageError, Limits};
use std::io::{self, Read, Seek, SeekFrom};

/// Largest PAX extended header or GNU long name (real ones are a few hundred bytes).
pub const MAX_RECORD: u64 = 1 << 20;
/// Segments of one sparse file's map (a real one has a few per hole).
const MAX_SEGMENTS: usize = 1 << 16;
const BLOCK: u64 = 512;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular (or contiguous, or sparse) file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A hard link to an earlier entry.
    Link,
    /// A character or block device, or a FIFO.
    Special,
    /// A type no filesystem entry comes from (volume labels, GNU dump directories, vendor types).
    Other,
}

/// One entry, its long names and PAX records applied.
#[derive(Debug, Clone)]
pub struct Item {
    /// Its name as written.
    pub name: Vec<u8>,
    /// A link's target.
    pub link: Option<Vec<u8>>,
    /// Its type.
    pub kind: Kind,
    /// Its data's size as a reader sees it (a sparse file's holes included).
    pub size: u64,
    /// Its mode bits.
    pub mode: u32,
    /// Where its stored data starts in the archive.
    pub offset: u64,
    /// Whether its data has holes (it cannot be read as one run of the archive's bytes).
    pub sparse: bool,
}

/// An archive being read: bytes in order, skipped by seeking where possible.
pub trait Source: Read {
    /// Skips `n` bytes; an error when the archive ends first (a seek past the end is checked, not trusted).
    fn skip(&mut self, n: u64) -> io::Result<()>;
    /// The offset of the next byte.
    fn position(&self) -> u64;
}

/// A file (or a part of one) of known length, skipped by seeking.
pub struct Seekable<R> {
    inner: R,
    pos: u64,
    len: u64,
}

impl<R: Read + Seek> Seekable<R> {
    /// Reads `inner` (`len` bytes long) from its start.
    pub fn new(mut inner: R, len: u64) -> io::Result<Seekable<R>> {
        inner.seek(SeekFrom::Start(0))?;
        Ok(Seekable { inner, pos: 0, len })
    }
}

impl<R: Read> Read for Seekable<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read + Seek> Source for Seekable<R> {
    fn skip(&mut self, n: u64) -> io::Result<()> {
        let to = self
            .pos
            .checked_add(n)
            .filter(|&t| t <= self.len)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the archive ends {} bytes before the data its entries declare",
                        self.pos.saturating_add(n).saturating_sub(self.len)
                    ),
                )
            })?;
        self.inner.seek(SeekFrom::Start(to))?;
        self.pos = to;
        Ok(())
    }

    fn position(&self) -> u64 {
        self.pos
    }
}

/// A stream (a decompressor), skipped by reading.
pub struct Streamed<R> {
    inner: R,
    pos: u64,
}

impl<R: Read> Streamed<R> {
    /// Reads `inner` from where it is.
    pub fn new(inner: R) -> Streamed<R> {
        Streamed { inner, pos: 0 }
    }

    /// The stream back.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read> Read for Streamed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read> Source for Streamed<R> {
    fn skip(&mut self, n: u64) -> io::Result<()> {
        let got = io::copy(&mut self.by_ref().take(n), &mut io::sink())?;
        if got != n {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the archive ends {} bytes before the data its entries declare",
                    n - got
                ),
            ));
        }
        Ok(())
    }

    fn position(&self) -> u64 {
        self.pos
    }
}

/// A run of a file's data: stored bytes, or a hole read as zeros.
#[derive(Debug, Clone, Copy)]
enum Seg {
    Data(u64),
    Hole(u64),
}

/// An entry's data as a reader sees it: the stored bytes, holes filled with zeros.
pub struct Data<'a, S> {
    src: &'a mut S,
    segs: Vec<Seg>,
    at: usize,
    /// Stored bytes not read yet (skipped after the entry).
    stored_left: u64,
}

impl<S: Source> Read for Data<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while let Some(seg) = self.segs.get_mut(self.at) {
            match seg {
                Seg::Data(0) | Seg::Hole(0) => self.at += 1,
                Seg::Hole(n) => {
                    let k = buf.len().min(usize::try_from(*n).unwrap_or(usize::MAX));
                    buf[..k].fill(0);
                    *n -= k as u64;
                    return Ok(k);
                }
                Seg::Data(n) => {
                    let k = buf.len().min(usize::try_from(*n).unwrap_or(usize::MAX));
                    let got = self.src.read(&mut buf[..k])?;
                    if got == 0 && k > 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the archive ends inside this entry's data",
                        ));
                    }
                    *n -= got as u64;
                    self.stored_left -= got as u64;
                    return Ok(got);
                }
            }
        }
        Ok(0)
    }
}

/// Walks the entries of a tar, calling `f` on each real entry with its data; `count` counts the blocks read
/// as headers against [`Limits::max_entries`]. The walk stops at the first all-zero header or at the end of
/// the archive (between entries); a damaged header, a record over [`MAX_RECORD`] or data that is not there
/// is an error. A signal received ([`crate::system::scratch`]) stops it.
pub fn walk<S: Source>(
    src: &mut S,
    what: &str,
    limits: &Limits,
    count: &mut u64,
    mut f: impl FnMut(&Item, &mut Data<'_, S>) -> Result<(), ImageError>,
) -> Result<(), ImageError> {
    let io_err = |e: io::Error| ImageError::from_io(what, e);
    let mut pending = Pending::default();
    loop {
        crate::system::scratch::check().map_err(io_err)?;
        let at = src.position();
        let Some(h) = read_header(src).map_err(io_err)? else {
            return Ok(());
        };
        if !checksum_ok(&h) {
            return Err(ImageError(format!(
                "{what}: the tar header at offset {at} is damaged (its checksum is wrong)"
            )));
        }
        *count += 1;
        if *count > limits.max_entries {
            return Err(ImageError::cap(
                what,
                "max-entries",
                format!("more than {} entries", limits.max_entries),
            ));
        }
        let stored = header_size(&h).ok_or_else(|| bad(what, at, "size"))?;
        match h[156] {
            b'L' => pending.name = Some(strip_nul(record(src, stored, what)?)),
            b'K' => pending.link = Some(strip_nul(record(src, stored, what)?)),
            b'x' => pending.pax = pax_records(&record(src, stored, what)?),
            b'g' => skip_padded(src, stored).map_err(io_err)?,
            t => {
                let p = std::mem::take(&mut pending);
                let (item, segs, stored) = entry(src, &h, t, stored, p, what, at)?;
                let mut data = Data {
                    src: &mut *src,
                    segs,
                    at: 0,
                    stored_left: stored,
                };
                f(&item, &mut data)?;
                let left = data.stored_left;
                skip_padded_from(src, left, stored).map_err(io_err)?;
            }
        }
    }
}

/// The records that apply to the next real entry.
#[derive(Default)]
struct Pending {
    name: Option<Vec<u8>>,
    link: Option<Vec<u8>>,
    pax: Vec<(String, Vec<u8>)>,
}

impl Pending {
    fn pax(&self, key: &str) -> Option<&[u8]> {
        self.pax
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }

    fn pax_number(&self, key: &str) -> Option<Option<u64>> {
        self.pax(key)
            .map(|v| std::str::from_utf8(v).ok().and_then(|s| s.trim().parse().ok()))
    }
}

/// The entry a header starts (its sparse map read when it has one): the item, its data's runs and how many
/// bytes of the archive its data takes.
fn entry<S: Source>(
    src: &mut S,
    h: &[u8; 512],
    t: u8,
    mut stored: u64,
    p: Pending,
    what: &str,
    at: u64,
) -> Result<(Item, Vec<Seg>, u64), ImageError> {
    if let Some(size) = p.pax_number("size") {
        stored = size.ok_or_else(|| bad(what, at, "PAX size"))?;
    }
    let gnu_sparse_name = p.pax("GNU.sparse.name").map(<[u8]>::to_vec);
    let mut name = p
        .name
        .clone()
        .or(gnu_sparse_name)
        .or_else(|| p.pax("path").map(<[u8]>::to_vec))
        .unwrap_or_else(|| header_name(h));
    let link = p
        .link
        .clone()
        .or_else(|| p.pax("linkpath").map(<[u8]>::to_vec))
        .or_else(|| Some(field(&h[157..257]).to_vec()).filter(|l| !l.is_empty()));
    let mut kind = match t {
        b'0' | 0 | b'7' | b'S' => Kind::File,
        b'1' => Kind::Link,
        b'2' => Kind::Symlink,
        b'3' | b'4' | b'6' => Kind::Special,
        b'5' => Kind::Dir,
        _ => Kind::Other,
    };
    // A v7 archive marks directories by the trailing `/` alone.
    if kind == Kind::File && t != b'S' && name.last() == Some(&b'/') {
        kind = Kind::Dir;
    }
    while name.last() == Some(&0) {
        name.pop();
    }
    let mode = octal(&h[100..108]).map_or(0o644, |m| (m & 0o7777) as u32);
    let (segs, size) = if t == b'S' {
        old_gnu_sparse(src, h, stored, what, at)?
    } else if kind == Kind::File
        && ["GNU.sparse.major", "GNU.sparse.map", "GNU.sparse.offset"]
            .iter()
            .any(|k| p.pax(k).is_some())
    {
        let (segs, size, map_bytes) = pax_sparse(src, &p, stored, what, at)?;
        stored -= map_bytes;
        (segs, size)
    } else {
        (vec![Seg::Data(stored)], stored)
    };
    let sparse = segs.len() != 1 || matches!(segs.first(), Some(Seg::Hole(_)));
    let item = Item {
        name,
        link,
        kind,
        size: if matches!(kind, Kind::File) { size } else { stored },
        mode,
        offset: src.position(),
        sparse,
    };
    Ok((item, segs, stored))
}

fn bad(what: &str, at: u64, field: &str) -> ImageError {
    ImageError(format!(
        "{what}: the tar entry at offset {at} has an unreadable {field}"
    ))
}

/// Old GNU sparse (`S`): up to 4 map entries in the header, then extension blocks of 21 while the flag says so.
fn old_gnu_sparse<S: Source>(
    src: &mut S,
    h: &[u8; 512],
    stored: u64,
    what: &str,
    at: u64,
) -> Result<(Vec<Seg>, u64), ImageError> {
    let mut map = Vec::new();
    let mut push = |e: &[u8]| -> Result<(), ImageError> {
        let (o, n) = (octal(&e[..12]), octal(&e[12..24]));
        match (o, n) {
            (Some(o), Some(n)) if !(o == 0 && n == 0 && field(&e[..12]).is_empty()) => map.push((o, n)),
            (Some(_), Some(_)) => {}
            _ => return Err(bad(what, at, "sparse map")),
        }
        if map.len() > MAX_SEGMENTS {
            return Err(bad(what, at, "sparse map (too many entries)"));
        }
        Ok(())
    };
    for e in h[386..482].chunks(24) {
        push(e)?;
    }
    let mut extended = h[482] != 0;
    while extended {
        let ext = read_header(src)
            .map_err(|e| ImageError::from_io(what, e))?
            .ok_or_else(|| bad(what, at, "sparse extension block"))?;
        for e in ext[..504].chunks(24) {
            push(e)?;
        }
        extended = ext[504] != 0;
    }
    let real = octal(&h[483..495]).ok_or_else(|| bad(what, at, "sparse real size"))?;
    let segs = segments(&map, real, stored).ok_or_else(|| bad(what, at, "sparse map"))?;
    Ok((segs, real))
}

/// GNU's PAX sparse formats: returns the runs, the real size, and the bytes of the data the map took (1.0).
fn pax_sparse<S: Source>(
    src: &mut S,
    p: &Pending,
    stored: u64,
    what: &str,
    at: u64,
) -> Result<(Vec<Seg>, u64, u64), ImageError> {
    let num = |k: &str| {
        p.pax_number(k)
            .map(|v| v.ok_or_else(|| bad(what, at, k)))
            .transpose()
    };
    let real = match num("GNU.sparse.realsize")? {
        Some(r) => r,
        None => num("GNU.sparse.size")?.ok_or_else(|| bad(what, at, "sparse real size"))?,
    };
    let mut map = Vec::new();
    let mut map_bytes = 0;
    if p.pax("GNU.sparse.major") == Some(b"1") {
        // 1.0: decimal numbers, one a line, at the start of the data (count, then offset/size pairs), padded
        // to a block.
        let mut r = Lines {
            src,
            read: 0,
            limit: stored,
        };
        let n = r.number().ok_or_else(|| bad(what, at, "sparse map"))?;
        if n > MAX_SEGMENTS as u64 {
            return Err(bad(what, at, "sparse map (too many entries)"));
        }
        for _ in 0..n {
            let o = r.number().ok_or_else(|| bad(what, at, "sparse map"))?;
            let l = r.number().ok_or_else(|| bad(what, at, "sparse map"))?;
            map.push((o, l));
        }
        let read = r.read;
        map_bytes = read.div_ceil(BLOCK) * BLOCK;
        if map_bytes > stored {
            return Err(bad(what, at, "sparse map"));
        }
        src.skip(map_bytes - read)
            .map_err(|e| ImageError::from_io(what, e))?;
    } else if let Some(m) = p.pax("GNU.sparse.map") {
        // 0.1: `offset,size,offset,size…`.
        let nums: Option<Vec<u64>> = std::str::from_utf8(m)
            .ok()
            .map(|s| s.split(',').map(|x| x.trim().parse().ok()).collect())
            .and_then(|v: Vec<Option<u64>>| v.into_iter().collect());
        let nums = nums
            .filter(|n| n.len() % 2 == 0)
            .ok_or_else(|| bad(what, at, "sparse map"))?;
        map.extend(nums.chunks(2).map(|c| (c[0], c[1])));
    } else {
        // 0.0: repeated `GNU.sparse.offset` and `GNU.sparse.numbytes` records, in order.
        let mut offset = None;
        for (k, v) in &p.pax {
            let v = std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok());
            match k.as_str() {
                "GNU.sparse.offset" => offset = Some(v.ok_or_else(|| bad(what, at, "sparse map"))?),
                "GNU.sparse.numbytes" => {
                    let o = offset.take().ok_or_else(|| bad(what, at, "sparse map"))?;
                    map.push((o, v.ok_or_else(|| bad(what, at, "sparse map"))?));
                }
                _ => {}
            }
        }
    }
    if map.len() > MAX_SEGMENTS {
        return Err(bad(what, at, "sparse map (too many entries)"));
    }
    let segs = segments(&map, real, stored - map_bytes).ok_or_else(|| bad(what, at, "sparse map"))?;
    Ok((segs, real, map_bytes))
}

/// Reads the decimal lines of a PAX 1.0 sparse map, within the entry's data.
struct Lines<'a, S> {
    src: &'a mut S,
    read: u64,
    limit: u64,
}

impl<S: Source> Lines<'_, S> {
    fn number(&mut self) -> Option<u64> {
        let mut n: u64 = 0;
        let mut digits = 0;
        loop {
            if self.read >= self.limit || digits > 20 {
                return None;
            }
            let mut b = [0u8; 1];
            self.src.read_exact(&mut b).ok()?;
            self.read += 1;
            match b[0] {
                b'\n' if digits > 0 => return Some(n),
                d @ b'0'..=b'9' => {
                    n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
                    digits += 1;
                }
                _ => return None,
            }
        }
    }
}

/// The runs of a sparse file from its map: in order, not overlapping, inside the real size, and exactly the
/// stored bytes.
fn segments(map: &[(u64, u64)], real: u64, stored: u64) -> Option<Vec<Seg>> {
    let mut segs = Vec::with_capacity(map.len() * 2 + 1);
    let (mut cur, mut total) = (0u64, 0u64);
    for &(off, len) in map {
        if off < cur {
            return None;
        }
        segs.push(Seg::Hole(off - cur));
        segs.push(Seg::Data(len));
        cur = off.checked_add(len)?;
        total = total.checked_add(len)?;
    }
    if cur > real || total != stored {
        return None;
    }
    segs.push(Seg::Hole(real - cur));
    segs.retain(|s| !matches!(s, Seg::Hole(0)));
    if segs.is_empty() {
        segs.push(Seg::Data(0));
    }
    Some(segs)
}

/// The next 512-byte block; `None` at the end of the archive (an all-zero block, or no more bytes).
fn read_header(src: &mut impl Read) -> io::Result<Option<[u8; 512]>> {
    let mut h = [0u8; 512];
    let mut got = 0;
    while got < h.len() {
        match src.read(&mut h[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e)
                if e.kind() == io::ErrorKind::Interrupted
                    && crate::system::scratch::signalled().is_none() => {}
            Err(e) => return Err(e),
        }
    }
    if got == 0 || h.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    if got < h.len() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the archive ends inside a header",
        ));
    }
    Ok(Some(h))
}

/// Is this block a tar header: is its checksum right (the unsigned sum of its bytes with the checksum field
/// read as spaces; some old writers summed signed bytes)? The magic is not required: v7 archives have none.
pub fn checksum_ok(h: &[u8]) -> bool {
    if h.len() < 512 || h[..512].iter().all(|&b| b == 0) {
        return false;
    }
    let Some(want) = octal(&h[148..156]) else {
        return false;
    };
    let (mut unsigned, mut signed) = (0u64, 0i64);
    for (i, &b) in h[..512].iter().enumerate() {
        let b = if (148..156).contains(&i) { b' ' } else { b };
        unsigned += u64::from(b);
        signed += i64::from(b as i8);
    }
    want == unsigned || i64::try_from(want).is_ok_and(|w| w == signed)
}

/// The header's size field: octal, or GNU's base-256 (a first byte of 0x80; negative sizes are refused).
fn header_size(h: &[u8; 512]) -> Option<u64> {
    let f = &h[124..136];
    if f[0] & 0x80 != 0 {
        if f[0] != 0x80 {
            return None;
        }
        return f[1..]
            .iter()
            .try_fold(0u64, |n, &b| n.checked_mul(256)?.checked_add(u64::from(b)));
    }
    octal(f)
}

/// An octal field: digits, surrounded by spaces or NULs; empty is 0.
fn octal(f: &[u8]) -> Option<u64> {
    let s = field(f);
    let s = s.trim_ascii();
    s.iter().try_fold(0u64, |n, &b| match b {
        b'0'..=b'7' => n.checked_mul(8)?.checked_add(u64::from(b - b'0')),
        _ => None,
    })
}

/// A NUL-terminated field's bytes.
fn field(f: &[u8]) -> &[u8] {
    &f[..f.iter().position(|&b| b == 0).unwrap_or(f.len())]
}

fn strip_nul(mut v: Vec<u8>) -> Vec<u8> {
    v.truncate(v.iter().position(|&b| b == 0).unwrap_or(v.len()));
    v
}

/// The header's name: ustar's `prefix/name`, or the name alone (v7; GNU uses the prefix's bytes for times).
fn header_name(h: &[u8; 512]) -> Vec<u8> {
    let name = field(&h[..100]);
    let posix = &h[257..263] == b"ustar\0";
    let prefix = field(&h[345..500]);
    if posix && !prefix.is_empty() {
        let mut out = prefix.to_vec();
        out.push(b'/');
        out.extend_from_slice(name);
        return out;
    }
    name.to_vec()
}

/// A long-name or PAX record's bytes (its padding skipped), refused past [`MAX_RECORD`].
fn record<S: Source>(src: &mut S, size: u64, what: &str) -> Result<Vec<u8>, ImageError> {
    if size > MAX_RECORD {
        return Err(ImageError(format!(
            "{what}: a PAX or long-name record of {size} bytes, more than {MAX_RECORD}: not a real tar"
        )));
    }
    let mut out = vec![0u8; size as usize];
    src.read_exact(&mut out)
        .map_err(|e| ImageError::from_io(what, e))?;
    skip_padded_from(src, 0, size).map_err(|e| ImageError::from_io(what, e))?;
    Ok(out)
}

/// Skips `size` bytes of data and their padding.
fn skip_padded<S: Source>(src: &mut S, size: u64) -> io::Result<()> {
    skip_padded_from(src, size, size)
}

/// Skips the `left` bytes not read of `size` bytes of data, and their padding to the next block.
fn skip_padded_from<S: Source>(src: &mut S, left: u64, size: u64) -> io::Result<()> {
    let pad = (BLOCK - size % BLOCK) % BLOCK;
    src.skip(left + pad)
}

/// PAX records: `LEN KEY=VALUE\n` each (POSIX.1-2001, `pax` "Extended Header"), in order.
pub fn pax_records(mut b: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let Some(sp) = b.iter().position(|&c| c == b' ') else {
            break;
        };
        let Some(len) = std::str::from_utf8(&b[..sp])
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
        else {
            break;
        };
        if len <= sp + 1 || len > b.len() {
            break;
        }
        let rec = &b[sp + 1..len];
        let rec = rec.strip_suffix(b"\n").unwrap_or(rec);
        if let Some(eq) = rec.iter().position(|&c| c == b'=') {
            out.push((
                String::from_utf8_lossy(&rec[..eq]).into_owned(),
                rec[eq + 1..].to_vec(),
            ));
        }
        b = &b[len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_records_parse() {
        // Each record's length counts itself: "31 path=usr/lib/a-long-name.so\n" is 31 bytes.
        let r = pax_records(b"31 path=usr/lib/a-long-name.so\n20 linkpath=/x/y/zz\n");
        assert_eq!(r[0], ("path".to_string(), b"usr/lib/a-long-name.so".to_vec()));
        assert_eq!(r[1], ("linkpath".to_string(), b"/x/y/zz".to_vec()));
        assert!(pax_records(b"999 path=x\n").is_empty());
    }

    #[test]
    fn sparse_maps_are_checked() {
        assert!(segments(&[(0, 10), (5, 10)], 100, 20).is_none(), "overlap");
        assert!(segments(&[(0, 10)], 5, 10).is_none(), "past the real size");
        assert!(segments(&[(0, 10)], 100, 11).is_none(), "stored bytes differ");
        let s = segments(&[(512, 4), (4096, 4)], 8192, 8).unwrap();
        assert_eq!(s.len(), 5);
    }

    #[test]
    fn sizes_octal_and_base_256() {
        let mut h = [0u8; 512];
        h[124..136].copy_from_slice(b"00000001000\0");
        assert_eq!(header_size(&h), Some(512));
        h[124] = 0x80;
        h[124..136].copy_from_slice(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]);
        assert_eq!(header_size(&h), Some(1 << 16));
        h[124] = 0xff;
        assert_eq!(header_size(&h), None);
    }
}
