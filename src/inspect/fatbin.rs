//! Fatbin containers and their entries.
//!
//! Layout (all little-endian; `docs/fatbin-format.md`, "Container header" and "Entry header", after NVIDIA's
//! `fatbinary.h`):
//! a container is a 16-byte header (`u32 magic 0xBA55ED50, u16 version, u16 header_size, u64 fat_size`)
//! followed by `fat_size` bytes of entries, back to back with no terminator. Each entry starts with a header of
//! at least 64 bytes (kind, header size, padded payload size, compressed size, options pair, ISA/code
//! version, arch, identifier, flags, uncompressed size) and its payload follows.
//!
//! The walker never trusts a size: every offset is checked against the container and the region, damage is
//! recorded as a [`Problem`] with the offset, and the walk resumes at the next 8-aligned container magic when it
//! can. Payloads are read only when a question needs them (see [`Depth`]), and decompressed with a hard bound.

use super::budget::{self, Decoded};
use super::input::Input;
use super::options::{Depth, InspectOptions};
use super::{cubin, decompress, ptx};
use crate::facts::{BinaryFacts, CodeKind, Compression, DeviceCode, FatbinContainer, Problem, ProblemKind};

/// Container magic (`FATBIN_MAGIC`).
pub const CONTAINER_MAGIC: u32 = 0xBA55_ED50;
/// `__fatBinC_Wrapper_t` magic, in `.nvFatBinSegment`.
pub const WRAPPER_MAGIC: u32 = 0x4662_43B1;
const CONTAINER_HEADER: usize = 16;
const ENTRY_HEADER: usize = 64;

const FLAG_64BIT: u64 = 0x1;
const FLAG_DEBUG: u64 = 0x2;
const FLAG_LINUX: u64 = 0x10;
const FLAG_MAC: u64 = 0x20;
const FLAG_WINDOWS: u64 = 0x40;
const FLAG_LZ4: u64 = 0x2000;
const FLAG_ZSTD: u64 = 0x8000;
/// Set on `-dlto` NVVM entries whose payload cuobjdump cannot read "without obfuscation key": the payload is
/// not a plain compressed frame, so only its declared sizes can be checked.
const FLAG_OBFUSCATED: u64 = 0x1_0000;
const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
const FLAG_FAMILY: u64 = 0x20_0000;

/// A byte range of the file that holds containers back to back.
#[derive(Debug, Clone)]
pub struct Region {
    /// ELF section name, or `None` for a raw fatbin file.
    pub section: Option<String>,
    /// First byte (file offset).
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// Entries here are relocatable device code (`__nv_relfatbin`).
    pub relocatable: bool,
    /// The region was found by the fallback magic scan.
    pub found_by_scan: bool,
}

fn get_u32(d: &[u8], off: usize) -> Option<u32> {
    d.get(off..off.checked_add(4)?)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}
/// The largest entry header accepted (observed: 64 to 128 bytes).
const MAX_ENTRY_HEADER: usize = 64 << 10;

/// Is there a plausible container header at `off`?
pub fn container_at(data: &Input<'_>, off: usize) -> bool {
    let Some(h) = data.read(off, 8) else { return false };
    u32::from_le_bytes([h[0], h[1], h[2], h[3]]) == CONTAINER_MAGIC
        && u16::from_le_bytes([h[4], h[5]]) == 1
        && usize::from(u16::from_le_bytes([h[6], h[7]])) >= CONTAINER_HEADER
}

/// Offsets of plausible container headers at 8-aligned file offsets in `start..end`.
pub fn scan(data: &Input<'_>, start: usize, end: usize) -> Vec<usize> {
    scan_from(data, start, end, usize::MAX)
}

/// Like [`scan`], stopping after `max` hits.
fn scan_from(data: &Input<'_>, start: usize, end: usize, max: usize) -> Vec<usize> {
    let magic = CONTAINER_MAGIC.to_le_bytes();
    let start = start.next_multiple_of(8);
    let mut found = Vec::new();
    data.chunks(start, end, super::input::CHUNK, 0, |at, chunk| {
        // `at` stays 8-aligned: chunks are `CHUNK` bytes (a multiple of 8) and start aligned.
        for i in memchr::memmem::find_iter(chunk, &magic) {
            let off = at + i;
            if off % 8 == 0 && off + CONTAINER_HEADER <= end && container_at(data, off) {
                found.push(off);
                if found.len() >= max {
                    return Some(());
                }
            }
        }
        None
    });
    found
}

fn problem(out: &mut BinaryFacts, offset: usize, message: String) {
    out.problems.push(Problem {
        kind: ProblemKind::DeviceCode,
        message,
        offset: Some(offset as u64),
    });
}

/// Walks every container in `region`, appending containers, entries and problems to `out`.
pub fn walk(
    data: &Input<'_>,
    region: &Region,
    out: &mut BinaryFacts,
    opts: &InspectOptions,
    pending: &mut Vec<Pending>,
) {
    let end = region.end.min(data.len());
    let mut p = region.start;
    while p < end {
        if end - p < CONTAINER_HEADER || data.u32_at(p) != Some(CONTAINER_MAGIC) {
            // Padding between containers is zeros up to the next 8-byte boundary; anything else is damage.
            let Some(q) = data.first_nonzero(p, end) else {
                break;
            };
            if q.next_multiple_of(8) == q && container_at(data, q) {
                p = q;
                continue;
            }
            let resume = scan_from(data, q + 1, end, 1).first().copied();
            problem(
                out,
                q,
                format!(
                    "unexpected bytes where a fatbin container should start{}{}",
                    region
                        .section
                        .as_deref()
                        .map(|s| format!(" in {s}"))
                        .unwrap_or_default(),
                    match resume {
                        Some(r) => format!("; resuming at the next container, 0x{r:x}"),
                        None => "; nothing after them could be read".to_string(),
                    }
                ),
            );
            match resume {
                Some(r) => {
                    p = r;
                    continue;
                }
                None => break,
            }
        }
        p = walk_container(data, p, end, region, out, opts, pending);
    }
}

/// Reads one container at `p`; returns where the next one may start.
fn walk_container(
    data: &Input<'_>,
    p: usize,
    region_end: usize,
    region: &Region,
    out: &mut BinaryFacts,
    opts: &InspectOptions,
    pending: &mut Vec<Pending>,
) -> usize {
    let version = data.u16_at(p + 4).unwrap_or(0);
    let header_size = usize::from(data.u16_at(p + 6).unwrap_or(0));
    let fat_size = data.u64_at(p + 8).unwrap_or(0);
    if version != 1 || header_size < CONTAINER_HEADER || header_size > region_end - p {
        problem(
            out,
            p,
            format!(
                "fatbin container at 0x{p:x} has version {version} and header size {header_size}; expected version 1 and 16"
            ),
        );
        return p + 8;
    }
    let declared_end = (p as u64)
        .saturating_add(header_size as u64)
        .saturating_add(fat_size);
    let end = if declared_end > region_end as u64 {
        problem(
            out,
            p,
            format!(
                "fatbin container at 0x{p:x} declares {fat_size} bytes of entries but only {} remain; it is truncated",
                region_end - p - header_size
            ),
        );
        region_end
    } else {
        declared_end as usize
    };
    let index = out.fatbins.len();
    out.fatbins.push(FatbinContainer {
        section: region.section.clone(),
        offset: p as u64,
        size: (end - p) as u64,
        entries: 0,
        found_by_scan: region.found_by_scan,
    });
    let first_entry = out.device_code.len();
    let mut q = p + header_size;
    while q < end {
        match read_entry(data, q..end, index, region, out, opts, pending) {
            Some(next) => q = next,
            None => break,
        }
    }
    out.fatbins[index].entries = out.device_code.len() - first_entry;
    end.max(p + 8)
}

/// Reads the entry at `span.start` in a container ending at `span.end`; returns the offset of the next one, or
/// `None` when the container cannot be walked further.
fn read_entry(
    data: &Input<'_>,
    span: std::ops::Range<usize>,
    container: usize,
    region: &Region,
    out: &mut BinaryFacts,
    opts: &InspectOptions,
    pending: &mut Vec<Pending>,
) -> Option<usize> {
    let (q, end) = (span.start, span.end);
    let h = EntryHeader::read(data, q, end, out)?;
    let (payload, truncated) = payload_span(&h, q, end, out);
    let next = if truncated { None } else { Some(payload.end) };
    if h.payload_size == 0 {
        problem(out, q, format!("entry at 0x{q:x} has an empty payload"));
        return next;
    }
    let kind = match h.kind {
        1 => CodeKind::Ptx,
        2 | 4 => CodeKind::Sass,
        8 => CodeKind::Nvvm,
        other => {
            problem(
                out,
                q,
                format!("entry at 0x{q:x} has unknown kind {other}; skipped"),
            );
            return next;
        }
    };
    let compression = h.compression();
    let (stored_size, payload_ok) = stored_payload(data, &h, q, payload.clone(), compression, opts, out);
    let payload_ok = payload_ok && !truncated;
    let header = data.read(q, h.header_size)?;
    let entry = h.device_code(
        &header,
        kind,
        compression,
        stored_size,
        region.relocatable,
        container,
        q,
    );
    let wanted = match kind {
        CodeKind::Sass | CodeKind::Ptx => compression == Compression::None || opts.depth == Depth::Full,
        CodeKind::Nvvm => false,
    };
    if wanted && payload_ok {
        pending.push(Pending {
            index: out.device_code.len(),
            start: payload.start,
            len: stored_size,
        });
    }
    out.device_code.push(entry);
    next
}

/// The fixed 64 bytes of an entry header (`fatbinary.h`'s `fatBinaryHeader` entry part).
struct EntryHeader {
    kind: u16,
    header_size: usize,
    payload_size: u64,
    compressed_size: u64,
    aux_offset: usize,
    minor: u16,
    major: u16,
    arch: u32,
    ident_off: usize,
    ident_len: usize,
    flags: u64,
    uncompressed_size: u64,
}

impl EntryHeader {
    /// The header of the entry at `q` in a container ending at `end`, or `None` (with the problem recorded
    /// when the bytes are not zero fill) when there is no entry there to read: too few bytes for a header, a
    /// zero header, or a header size out of bounds.
    fn read(data: &Input<'_>, q: usize, end: usize, out: &mut BinaryFacts) -> Option<Self> {
        if end - q < ENTRY_HEADER {
            if data.first_nonzero(q, end).is_some() {
                problem(
                    out,
                    q,
                    format!(
                        "truncated entry header at 0x{q:x}: {} bytes left in the container",
                        end - q
                    ),
                );
            }
            return None;
        }
        let base = data.read(q, ENTRY_HEADER)?;
        let h = Self::parse(&base);
        if h.kind == 0 && h.header_size == 0 && h.payload_size == 0 {
            // Zero fill to the end of the container.
            if data.first_nonzero(q, end).is_some() {
                problem(out, q, format!("entry at 0x{q:x} has a zero header"));
            }
            return None;
        }
        if !(ENTRY_HEADER..=MAX_ENTRY_HEADER).contains(&h.header_size) || h.header_size > end - q {
            problem(
                out,
                q,
                format!(
                    "entry at 0x{q:x} declares a header of {} bytes (at least 64, at most {} left)",
                    h.header_size,
                    end - q
                ),
            );
            return None;
        }
        Some(h)
    }

    /// The fields of the first [`ENTRY_HEADER`] bytes of `h`.
    fn parse(h: &[u8]) -> Self {
        let u16_at = |o: usize| u16::from_le_bytes([h[o], h[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | (u64::from(u32_at(o + 4)) << 32);
        EntryHeader {
            kind: u16_at(0),
            header_size: u32_at(4) as usize,
            payload_size: u64_at(8),
            compressed_size: u64::from(u32_at(0x10)),
            aux_offset: u32_at(0x14) as usize,
            minor: u16_at(0x18),
            major: u16_at(0x1a),
            arch: u32_at(0x1c),
            ident_off: u32_at(0x20) as usize,
            ident_len: u32_at(0x24) as usize,
            flags: u64_at(0x28),
            uncompressed_size: u64_at(0x38),
        }
    }

    fn compression(&self) -> Compression {
        if self.flags & FLAG_ZSTD != 0 {
            Compression::Zstd
        } else if self.flags & FLAG_LZ4 != 0 {
            Compression::Lz4
        } else {
            Compression::None
        }
    }

    /// The architecture suffix: `a` (arch-specific) or `f` (family).
    fn suffix(&self) -> Option<char> {
        if self.flags & FLAG_ARCH_SPECIFIC != 0 {
            Some('a')
        } else if self.flags & FLAG_FAMILY != 0 {
            Some('f')
        } else {
            None
        }
    }

    /// The host the entry was built for.
    fn host(&self) -> Option<&'static str> {
        if self.flags & FLAG_LINUX != 0 {
            Some("linux")
        } else if self.flags & FLAG_MAC != 0 {
            Some("mac")
        } else if self.flags & FLAG_WINDOWS != 0 {
            Some("windows")
        } else {
            None
        }
    }

    /// The entry's facts, from this header and its whole bytes `header` (for the identifier and options
    /// strings); the payload is read later, when a question needs it.
    #[allow(clippy::too_many_arguments)]
    fn device_code(
        &self,
        header: &[u8],
        kind: CodeKind,
        compression: Compression,
        stored_size: usize,
        relocatable: bool,
        container: usize,
        q: usize,
    ) -> DeviceCode {
        let (flags, arch, major, minor) = (self.flags, self.arch, self.major, self.minor);
        let suffix = self.suffix();
        let prefix = if kind == CodeKind::Sass { "sm" } else { "compute" };
        let identifier = header_string(header, self.ident_off, self.ident_len);
        let options = (self.aux_offset != 0)
            .then(|| {
                let off = get_u32(header, self.aux_offset)? as usize;
                let len = get_u32(header, self.aux_offset + 4)? as usize;
                header_string(header, off, len)
            })
            .flatten();
        DeviceCode {
            kind,
            arch: format!("{prefix}_{arch}{}", suffix.map(String::from).unwrap_or_default()),
            sm: arch,
            suffix,
            ptx_isa: (kind == CodeKind::Ptx).then(|| format!("{major}.{minor}")),
            code_version: [major, minor],
            compression,
            size: if compression == Compression::None {
                stored_size as u64
            } else {
                self.uncompressed_size
            },
            stored_size: stored_size as u64,
            flags,
            debug: flags & FLAG_DEBUG != 0,
            bits64: flags & FLAG_64BIT != 0,
            host: self.host().map(str::to_string),
            identifier,
            options,
            toolkit: None,
            toolkit_source: None,
            unread: None,
            relocatable,
            container,
            offset: q as u64,
            cubin: None,
            ptx: None,
        }
    }
}

/// Where the payload of the entry at `q` lies, cut at the container's `end` (recorded as a problem, and the
/// `true` of the pair: the container cannot be walked past it).
fn payload_span(
    h: &EntryHeader,
    q: usize,
    end: usize,
    out: &mut BinaryFacts,
) -> (std::ops::Range<usize>, bool) {
    let payload_start = q + h.header_size;
    let declared_end = (payload_start as u64).saturating_add(h.payload_size);
    if declared_end > end as u64 {
        problem(
            out,
            q,
            format!(
                "entry at 0x{q:x} declares a payload of {} bytes but only {} remain in its container",
                h.payload_size,
                end - payload_start
            ),
        );
        (payload_start..end, true)
    } else {
        (payload_start..declared_end as usize, false)
    }
}

/// The bytes the payload occupies in the file (its compressed size, for a compressed one), and whether they
/// can be read: a compressed payload is checked for what needs no decompression, its declared sizes and the
/// zstd frame header.
fn stored_payload(
    data: &Input<'_>,
    h: &EntryHeader,
    q: usize,
    payload: std::ops::Range<usize>,
    compression: Compression,
    opts: &InspectOptions,
    out: &mut BinaryFacts,
) -> (usize, bool) {
    let mut stored_size = payload.end - payload.start;
    if compression == Compression::None {
        return (stored_size, true);
    }
    let (compressed_size, payload_size) = (h.compressed_size, h.payload_size);
    let mut ok = true;
    if compressed_size == 0 || compressed_size > payload_size {
        problem(
            out,
            q,
            format!(
                "entry at 0x{q:x} is compressed but declares a compressed size of {compressed_size} for a payload of {payload_size} bytes"
            ),
        );
        ok = false;
    } else {
        stored_size = stored_size.min(compressed_size as usize);
    }
    // An obfuscated NVVM payload is not a plain frame: only its declared size can be checked.
    let frame = if h.flags & FLAG_OBFUSCATED != 0 {
        Compression::None
    } else {
        compression
    };
    if let Err(message) = check_compressed(
        frame,
        &data.read_upto(payload.start, stored_size.min(32)),
        h.uncompressed_size,
        opts.max_decompressed,
    ) {
        problem(out, q, format!("entry at 0x{q:x}: {message}"));
        ok = false;
    }
    (stored_size, ok)
}

/// Validates what can be validated without decompressing: the declared size against the limit and, for zstd,
/// the frame magic and the frame's own content size against the header's.
fn check_compressed(
    compression: Compression,
    stored: &[u8],
    declared: u64,
    limit: u64,
) -> Result<(), String> {
    if declared == 0 {
        return Err("compressed payload declares an uncompressed size of 0".into());
    }
    if declared > limit {
        return Err(format!(
            "declares {declared} bytes uncompressed, over the limit of {limit} bytes (a decompression bomb or damage)"
        ));
    }
    if compression != Compression::Zstd {
        // LZ4 blocks have no header to check; obfuscated payloads are passed as `None`.
        return Ok(());
    }
    if stored.get(..4) != Some(&[0x28, 0xB5, 0x2F, 0xFD][..]) {
        return Err("zstd payload does not start with a zstd frame magic".into());
    }
    if let Some(content) = zstd_content_size(stored)
        && content != declared
    {
        {
            return Err(format!(
                "zstd frame holds {content} bytes but the header declares {declared}"
            ));
        }
    }
    Ok(())
}

/// The `Frame_Content_Size` of a zstd frame header (RFC 8878 §3.1.1.1), when the frame records it.
fn zstd_content_size(frame: &[u8]) -> Option<u64> {
    let fhd = *frame.get(4)?;
    let single_segment = fhd & 0x20 != 0;
    let fcs_len = match fhd >> 6 {
        0 if single_segment => 1,
        0 => return None,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let did_len = [0usize, 1, 2, 4][usize::from(fhd & 3)];
    let at = 5 + usize::from(!single_segment) + did_len;
    let b = frame.get(at..at + fcs_len)?;
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate() {
        v |= u64::from(*byte) << (8 * i);
    }
    Some(if fcs_len == 2 { v + 256 } else { v })
}

/// A NUL-padded string inside the entry header.
fn header_string(header: &[u8], off: usize, len: usize) -> Option<String> {
    if off == 0 || len == 0 {
        return None;
    }
    let s = header.get(off..off.checked_add(len)?)?;
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    let s = String::from_utf8_lossy(&s[..end]).trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// A payload to read once the walk is done: entry index, file offset and stored length.
#[derive(Debug, Clone, Copy)]
pub struct Pending {
    index: usize,
    start: usize,
    len: usize,
}

/// Decompresses (bounded, within the run's budget, once per distinct payload) and parses one entry's
/// payload. Safe to call from several threads.
fn decode(stored: &[u8], entry: &DeviceCode, opts: &InspectOptions) -> Decoded {
    if entry.compression == Compression::None {
        return parse(stored, entry.kind);
    }
    let what = match (entry.kind, entry.compression) {
        (CodeKind::Sass, Compression::Lz4) => 0,
        (CodeKind::Sass, _) => 1,
        (CodeKind::Ptx, Compression::Lz4) => 2,
        (CodeKind::Ptx, _) => 3,
        (CodeKind::Nvvm, _) => 4,
    };
    opts.budget.decoded(stored, entry.size, what, || {
        // An entry over the per-entry limit is refused by `decompress` as damage, without taking budget.
        if entry.size <= opts.max_decompressed
            && let Err(why) = opts.budget.reserve(entry.size)
        {
            return Decoded::Unread(why);
        }
        let parsed = decompress::decompress_with(
            entry.compression,
            stored,
            entry.size,
            opts.max_decompressed,
            |bytes| parse(bytes, entry.kind),
        );
        parsed.unwrap_or_else(|e| Decoded::Damaged(e.0))
    })
}

fn parse(bytes: &[u8], kind: CodeKind) -> Decoded {
    match kind {
        CodeKind::Sass => match cubin::parse(bytes) {
            Ok(c) => Decoded::Cubin(c),
            Err(e) => Decoded::Damaged(e.0),
        },
        CodeKind::Ptx => Decoded::Ptx(ptx::parse(bytes)),
        CodeKind::Nvvm => Decoded::Nothing,
    }
}

/// Records what [`decode`] found on the entry (or as a problem).
fn apply(index: usize, decoded: Decoded, out: &mut BinaryFacts) {
    let entry = &mut out.device_code[index];
    let at = entry.offset as usize;
    let mut trouble = None;
    match decoded {
        Decoded::Cubin(c) => {
            if c.sm != entry.sm {
                trouble = Some(format!(
                    "entry at 0x{at:x} is labelled {} but its cubin's e_flags say sm_{}",
                    entry.arch, c.sm
                ));
            }
            if let Some((v, source)) = cubin::toolkit(&c) {
                entry.toolkit = Some(v);
                entry.toolkit_source = Some(source.to_string());
            }
            entry.cubin = Some(Box::new(c));
        }
        Decoded::Ptx(p) => entry.ptx = Some(Box::new(p)),
        Decoded::Nothing => {}
        Decoded::Unread(why) => entry.unread = Some(why),
        Decoded::Damaged(e) => trouble = Some(format!("{} entry at 0x{at:x}: {e}", entry.arch)),
    }
    if let Some(message) = trouble {
        problem(out, at, message);
    }
}

/// Reads the payloads the walk queued: on several threads when there are many (a `--deep` read of a
/// 2,800-entry library), each thread holding at most one decompressed entry at a time.
pub fn read_payloads(data: &Input<'_>, pending: &[Pending], out: &mut BinaryFacts, opts: &InspectOptions) {
    let code = &out.device_code;
    // A few payloads are not worth the threads.
    let threads = if pending.len() < 16 { 1 } else { 16 };
    // Largest first: the last job to start is then a small one, and no thread is left alone with a 15 MB cubin
    // while the others are idle.
    let mut jobs: Vec<&Pending> = pending.iter().collect();
    jobs.sort_by_key(|j| std::cmp::Reverse(j.len));
    // Each thread frees its buffer as soon as it has no entry left to read ([`decompress::Release`]).
    let mut results = crate::parallel::map_with(
        &jobs,
        threads,
        || decompress::Release,
        |_, j| {
            let decoded = match data.read(j.start, j.len) {
                Some(stored) => decode(&stored, &code[j.index], opts),
                None => Decoded::Damaged("payload could not be read".into()),
            };
            opts.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            (j.index, decoded)
        },
    );
    // In the file's order again: problems are reported in it.
    results.sort_by_key(|&(index, _)| index);
    for (index, decoded) in results {
        apply(index, decoded, out);
    }
}

/// After the walk: read the queued payloads, share each container's toolkit among its entries, and sample one
/// cubin when nothing named the toolkit.
pub fn finish(data: &Input<'_>, pending: &[Pending], out: &mut BinaryFacts, opts: &InspectOptions) {
    read_payloads(data, pending, out, opts);
    let mut start = 0;
    while start < out.device_code.len() {
        let container = out.device_code[start].container;
        let end = out.device_code[start..]
            .iter()
            .position(|e| e.container != container)
            .map_or(out.device_code.len(), |n| start + n);
        share_container_toolkit(start..end, out);
        start = end;
    }
    sample_toolkit(data, out, opts);
}

/// All entries of a container come from one `fatbinary` run, so a toolkit note read from one entry (for free:
/// it was stored uncompressed, or `--deep` read it) names the toolkit of all; give it to the siblings, saying
/// where it came from.
fn share_container_toolkit(range: std::ops::Range<usize>, out: &mut BinaryFacts) {
    let Some((toolkit, from)) = out.device_code[range.clone()]
        .iter()
        .find(|e| e.toolkit.is_some())
        .map(|e| (e.toolkit.clone(), e.offset))
    else {
        return;
    };
    for e in &mut out.device_code[range] {
        if e.toolkit.is_none() {
            e.toolkit = toolkit.clone();
            e.toolkit_source = Some(format!(
                "inferred from the entry at 0x{from:x} in the same container"
            ));
        }
    }
}

/// When no entry of a binary named its toolkit (every cubin compressed, default depth), read the smallest
/// compressed cubin, so that the report can still say which toolkit built the binary. Only that entry gets a
/// toolkit: other containers may come from other toolkits.
pub fn sample_toolkit(data: &Input<'_>, out: &mut BinaryFacts, opts: &InspectOptions) {
    // `--deep` has read every payload already: a second read would only repeat its damage.
    if opts.depth == Depth::Full || out.device_code.iter().any(|e| e.toolkit.is_some()) {
        return;
    }
    let Some(i) = (0..out.device_code.len())
        .filter(|&i| {
            let e = &out.device_code[i];
            e.kind == CodeKind::Sass && e.cubin.is_none() && e.compression != Compression::None
        })
        .min_by_key(|&i| out.device_code[i].size)
    else {
        return;
    };
    let entry = &out.device_code[i];
    // The toolkit note is in a section whose header is at the end of the cubin: all of it must be inflated.
    // Without `--deep`, not for a cubin that declares more than a small sample's worth.
    if opts.depth != Depth::Full && entry.size > budget::SAMPLE_MAX {
        out.device_code[i].unread = Some(format!(
            "toolkit not read: the smallest compressed cubin declares {} bytes uncompressed, over the {} MiB \
             read without --deep",
            out.device_code[i].size,
            budget::SAMPLE_MAX >> 20
        ));
        return;
    }
    let header = data
        .u32_at(entry.offset as usize + 4)
        .map_or(ENTRY_HEADER, |v| v as usize);
    let job = Pending {
        index: i,
        start: entry.offset as usize + header,
        len: entry.stored_size as usize,
    };
    read_payloads(data, &[job], out, opts);
    share_container_toolkit_of(i, out);
}

/// Shares the toolkit of entry `i` with the other entries of its container.
fn share_container_toolkit_of(i: usize, out: &mut BinaryFacts) {
    let container = out.device_code[i].container;
    let Some(first) = out.device_code.iter().position(|e| e.container == container) else {
        return;
    };
    let end = out.device_code[first..]
        .iter()
        .position(|e| e.container != container)
        .map_or(out.device_code.len(), |n| first + n);
    share_container_toolkit(first..end, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-byte entry header with the fields the readers look at.
    fn header(kind: u16, arch: u32, flags: u64) -> Vec<u8> {
        let mut h = vec![0u8; ENTRY_HEADER];
        h[0..2].copy_from_slice(&kind.to_le_bytes());
        h[4..8].copy_from_slice(&64u32.to_le_bytes());
        h[8..16].copy_from_slice(&512u64.to_le_bytes());
        h[0x10..0x14].copy_from_slice(&100u32.to_le_bytes());
        h[0x18..0x1a].copy_from_slice(&7u16.to_le_bytes());
        h[0x1a..0x1c].copy_from_slice(&9u16.to_le_bytes());
        h[0x1c..0x20].copy_from_slice(&arch.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&flags.to_le_bytes());
        h[0x38..0x40].copy_from_slice(&4096u64.to_le_bytes());
        h
    }

    #[test]
    fn an_entry_header_gives_its_sizes_version_and_flags() {
        let h = EntryHeader::parse(&header(
            1,
            90,
            FLAG_LINUX | FLAG_ARCH_SPECIFIC | FLAG_ZSTD | FLAG_64BIT,
        ));
        assert_eq!((h.kind, h.header_size, h.payload_size), (1, 64, 512));
        assert_eq!((h.compressed_size, h.uncompressed_size), (100, 4096));
        assert_eq!((h.major, h.minor, h.arch), (9, 7, 90));
        assert_eq!(
            (h.suffix(), h.host(), h.compression()),
            (Some('a'), Some("linux"), Compression::Zstd)
        );
        let code = h.device_code(
            &header(1, 90, h.flags),
            CodeKind::Ptx,
            h.compression(),
            100,
            false,
            0,
            0,
        );
        assert_eq!(code.arch, "compute_90a");
        assert_eq!(code.ptx_isa.as_deref(), Some("9.7"));
        assert_eq!((code.size, code.stored_size, code.bits64), (4096, 100, true));
    }

    #[test]
    fn an_entry_without_suffix_host_or_compression_flags_has_none() {
        let h = EntryHeader::parse(&header(2, 80, FLAG_FAMILY | FLAG_LZ4));
        assert_eq!(
            (h.suffix(), h.host(), h.compression()),
            (Some('f'), None, Compression::Lz4)
        );
        let plain = EntryHeader::parse(&header(2, 80, FLAG_MAC));
        assert_eq!(
            (plain.suffix(), plain.host(), plain.compression()),
            (None, Some("mac"), Compression::None)
        );
        let code = plain.device_code(
            &header(2, 80, FLAG_MAC),
            CodeKind::Sass,
            Compression::None,
            300,
            true,
            1,
            8,
        );
        assert_eq!(
            (code.arch.as_str(), code.ptx_isa, code.size),
            ("sm_80", None, 300)
        );
        assert_eq!((code.relocatable, code.container, code.offset), (true, 1, 8));
    }
}
