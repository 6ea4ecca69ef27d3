//! Fatbin containers and their entries.
//!
//! Layout (all little-endian; `shared/research/fatbin.md` §2, after NVIDIA's `fatbinary.h`):
//! a container is a 16-byte header (`u32 magic 0xBA55ED50, u16 version, u16 header_size, u64 fat_size`)
//! followed by `fat_size` bytes of entries, back to back with no terminator. Each entry starts with a header of
//! at least 64 bytes (kind, header size, padded payload size, compressed size, options pair, ISA/code
//! version, arch, identifier, flags, uncompressed size) and its payload follows.
//!
//! The walker never trusts a size: every offset is checked against the container and the region, damage is
//! recorded as a [`Problem`] with the offset, and the walk resumes at the next 8-aligned container magic when it
//! can. Payloads are read only when a question needs them (see [`Depth`]), and decompressed with a hard bound.

use super::{Depth, InspectOptions, cubin, decompress, ptx};
use crate::facts::{
    BinaryFacts, CodeKind, Compression, DeviceCode, FatbinContainer, Problem, ProblemKind,
};

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

fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    d.get(off..off.checked_add(2)?)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
}
fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    d.get(off..off.checked_add(4)?)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}
fn u64_at(d: &[u8], off: usize) -> Option<u64> {
    d.get(off..off.checked_add(8)?)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
}

/// Is there a plausible container header at `off`?
pub fn container_at(data: &[u8], off: usize) -> bool {
    u32_at(data, off) == Some(CONTAINER_MAGIC)
        && u16_at(data, off + 4) == Some(1)
        && u16_at(data, off + 6).is_some_and(|h| h as usize >= CONTAINER_HEADER)
}

/// Offsets of plausible container headers at 8-aligned file offsets in `start..end`.
pub fn scan(data: &[u8], start: usize, end: usize) -> Vec<usize> {
    let end = end.min(data.len());
    let mut off = start.next_multiple_of(8);
    let mut found = Vec::new();
    while off + CONTAINER_HEADER <= end {
        if container_at(data, off) {
            found.push(off);
        }
        off += 8;
    }
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
pub fn walk(data: &[u8], region: &Region, out: &mut BinaryFacts, opts: &InspectOptions) {
    let end = region.end.min(data.len());
    let mut p = region.start;
    while p < end {
        if end - p < CONTAINER_HEADER || u32_at(data, p) != Some(CONTAINER_MAGIC) {
            // Padding between containers is zeros up to the next 8-byte boundary; anything else is damage.
            let next_nonzero = data[p..end].iter().position(|&b| b != 0).map(|i| p + i);
            let Some(q) = next_nonzero else { break };
            if q.next_multiple_of(8) == q && container_at(data, q) {
                p = q;
                continue;
            }
            let resume = scan(data, q + 1, end).first().copied();
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
        p = walk_container(data, p, end, region, out, opts);
    }
}

/// Reads one container at `p`; returns where the next one may start.
fn walk_container(
    data: &[u8],
    p: usize,
    region_end: usize,
    region: &Region,
    out: &mut BinaryFacts,
    opts: &InspectOptions,
) -> usize {
    let version = u16_at(data, p + 4).unwrap_or(0);
    let header_size = usize::from(u16_at(data, p + 6).unwrap_or(0));
    let fat_size = u64_at(data, p + 8).unwrap_or(0);
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
        match read_entry(data, q, end, index, region, out, opts) {
            Some(next) => q = next,
            None => break,
        }
    }
    out.fatbins[index].entries = out.device_code.len() - first_entry;
    infer_container_toolkit(data, first_entry, out, opts);
    end.max(p + 8)
}

/// Reads the entry at `q`; returns the offset of the next one, or `None` when the container cannot be walked
/// further.
fn read_entry(
    data: &[u8],
    q: usize,
    end: usize,
    container: usize,
    region: &Region,
    out: &mut BinaryFacts,
    opts: &InspectOptions,
) -> Option<usize> {
    if end - q < ENTRY_HEADER {
        if data[q..end].iter().any(|&b| b != 0) {
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
    let kind_raw = u16_at(data, q)?;
    let header_size = u32_at(data, q + 4)? as usize;
    let payload_size = u64_at(data, q + 8)?;
    let compressed_size = u64::from(u32_at(data, q + 0x10)?);
    let aux_offset = u32_at(data, q + 0x14)? as usize;
    let minor = u16_at(data, q + 0x18)?;
    let major = u16_at(data, q + 0x1a)?;
    let arch = u32_at(data, q + 0x1c)?;
    let ident_off = u32_at(data, q + 0x20)? as usize;
    let ident_len = u32_at(data, q + 0x24)? as usize;
    let flags = u64_at(data, q + 0x28)?;
    let uncompressed_size = u64_at(data, q + 0x38)?;
    if kind_raw == 0 && header_size == 0 && payload_size == 0 {
        // Zero fill to the end of the container.
        if data[q..end].iter().any(|&b| b != 0) {
            problem(out, q, format!("entry at 0x{q:x} has a zero header"));
        }
        return None;
    }
    if header_size < ENTRY_HEADER || header_size > end - q {
        problem(
            out,
            q,
            format!(
                "entry at 0x{q:x} declares a header of {header_size} bytes (at least 64, at most {} left)",
                end - q
            ),
        );
        return None;
    }
    let payload_start = q + header_size;
    let declared_end = (payload_start as u64).saturating_add(payload_size);
    let (payload_end, truncated) = if declared_end > end as u64 {
        problem(
            out,
            q,
            format!(
                "entry at 0x{q:x} declares a payload of {payload_size} bytes but only {} remain in its container",
                end - payload_start
            ),
        );
        (end, true)
    } else {
        (declared_end as usize, false)
    };
    let next = if truncated { None } else { Some(payload_end) };
    if payload_size == 0 {
        problem(out, q, format!("entry at 0x{q:x} has an empty payload"));
        return next;
    }
    let kind = match kind_raw {
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
    let compression = if flags & FLAG_ZSTD != 0 {
        Compression::Zstd
    } else if flags & FLAG_LZ4 != 0 {
        Compression::Lz4
    } else {
        Compression::None
    };
    let mut stored_size = payload_end - payload_start;
    if compression != Compression::None {
        if compressed_size == 0 || compressed_size > payload_size {
            problem(
                out,
                q,
                format!(
                    "entry at 0x{q:x} is compressed but declares a compressed size of {compressed_size} for a payload of {payload_size} bytes"
                ),
            );
        } else {
            stored_size = stored_size.min(compressed_size as usize);
        }
    }
    let suffix = if flags & FLAG_ARCH_SPECIFIC != 0 {
        Some('a')
    } else if flags & FLAG_FAMILY != 0 {
        Some('f')
    } else {
        None
    };
    let prefix = if kind == CodeKind::Sass {
        "sm"
    } else {
        "compute"
    };
    let header = &data[q..q + header_size];
    let identifier = header_string(header, ident_off, ident_len);
    let options = (aux_offset != 0)
        .then(|| {
            let off = u32_at(header, aux_offset)? as usize;
            let len = u32_at(header, aux_offset + 4)? as usize;
            header_string(header, off, len)
        })
        .flatten();
    let host = if flags & FLAG_LINUX != 0 {
        Some("linux")
    } else if flags & FLAG_MAC != 0 {
        Some("mac")
    } else if flags & FLAG_WINDOWS != 0 {
        Some("windows")
    } else {
        None
    };
    let mut entry = DeviceCode {
        kind,
        arch: format!(
            "{prefix}_{arch}{}",
            suffix.map(String::from).unwrap_or_default()
        ),
        sm: arch,
        suffix,
        ptx_isa: (kind == CodeKind::Ptx).then(|| format!("{major}.{minor}")),
        code_version: [major, minor],
        compression,
        size: if compression == Compression::None {
            stored_size as u64
        } else {
            uncompressed_size
        },
        stored_size: stored_size as u64,
        flags,
        debug: flags & FLAG_DEBUG != 0,
        bits64: flags & FLAG_64BIT != 0,
        host: host.map(str::to_string),
        identifier,
        options,
        toolkit: None,
        toolkit_source: None,
        relocatable: region.relocatable,
        container,
        offset: q as u64,
        cubin: None,
        ptx: None,
    };
    let wanted = match kind {
        CodeKind::Sass | CodeKind::Ptx => {
            compression == Compression::None || opts.depth == Depth::Full
        }
        CodeKind::Nvvm => false,
    };
    if wanted && !truncated {
        let stored = &data[payload_start..payload_start + stored_size];
        read_payload(stored, &mut entry, out, opts);
    }
    out.device_code.push(entry);
    next
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

/// Decompresses (bounded) and parses one entry's payload, filling its cubin or PTX facts and toolkit.
/// Returns false when the payload is damaged (a problem has then been recorded).
fn read_payload(
    stored: &[u8],
    entry: &mut DeviceCode,
    out: &mut BinaryFacts,
    opts: &InspectOptions,
) -> bool {
    let at = entry.offset as usize;
    let owned;
    let bytes = if entry.compression == Compression::None {
        stored
    } else {
        match decompress::decompress(entry.compression, stored, entry.size, opts.max_decompressed) {
            Ok(v) => {
                owned = v;
                &owned[..]
            }
            Err(e) => {
                problem(
                    out,
                    at,
                    format!("{} entry at 0x{at:x}: {}", entry.arch, e.0),
                );
                return false;
            }
        }
    };
    match entry.kind {
        CodeKind::Sass => match cubin::parse(bytes) {
            Ok(c) => {
                if c.sm != entry.sm {
                    problem(
                        out,
                        at,
                        format!(
                            "entry at 0x{at:x} is labelled {} but its cubin's e_flags say sm_{}",
                            entry.arch, c.sm
                        ),
                    );
                }
                if let Some((v, source)) = cubin::toolkit(&c) {
                    entry.toolkit = Some(v);
                    entry.toolkit_source = Some(source.to_string());
                }
                entry.cubin = Some(c);
                true
            }
            Err(e) => {
                problem(
                    out,
                    at,
                    format!("{} entry at 0x{at:x}: {}", entry.arch, e.0),
                );
                false
            }
        },
        CodeKind::Ptx => {
            entry.ptx = Some(ptx::parse(bytes));
            true
        }
        CodeKind::Nvvm => true,
    }
}

/// All entries of a container come from one `fatbinary` run, so one cubin's toolkit note names the toolkit of
/// all. When no entry of the container was read (all compressed, default depth), read the smallest compressed
/// cubin, then give its toolkit to its siblings, saying where it came from.
fn infer_container_toolkit(
    data: &[u8],
    first: usize,
    out: &mut BinaryFacts,
    opts: &InspectOptions,
) {
    let range = first..out.device_code.len();
    let has_known = out.device_code[range.clone()]
        .iter()
        .any(|e| e.toolkit.is_some());
    if !has_known {
        let candidate = range
            .clone()
            .filter(|&i| {
                let e = &out.device_code[i];
                e.kind == CodeKind::Sass && e.cubin.is_none() && e.compression != Compression::None
            })
            .min_by_key(|&i| out.device_code[i].size);
        if let Some(i) = candidate {
            let mut entry = out.device_code[i].clone();
            let start = entry.offset as usize + header_len(data, entry.offset as usize);
            if let Some(stored) = data.get(start..start + entry.stored_size as usize) {
                read_payload(stored, &mut entry, out, opts);
            }
            out.device_code[i] = entry;
        }
    }
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

fn header_len(data: &[u8], entry: usize) -> usize {
    u32_at(data, entry + 4).map_or(ENTRY_HEADER, |v| v as usize)
}
