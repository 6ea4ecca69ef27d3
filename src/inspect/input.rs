//! Random access to an input's bytes, without touching what is not needed.
//!
//! A host ELF is memory-mapped for goblin, which needs one slice; but fatbin headers and payloads are read with
//! positioned reads (`pread`) when the input is a file. Touching a 300 MB `.nv_fatbin` through the map would
//! fault in (and, with the kernel's fault-around, count against our resident memory) 64 KB around every entry
//! header; a positioned read of 64 bytes costs one syscall and no resident memory. In-memory inputs (archive
//! members, tests) are read from the slice.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Bytes of one input.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    bytes: &'a [u8],
    file: Option<(&'a File, u64)>,
}

impl<'a> Input<'a> {
    /// An input held in memory.
    pub fn bytes(bytes: &'a [u8]) -> Input<'a> {
        Input { bytes, file: None }
    }

    /// An input whose bytes are also reachable through `file` at offset `base`: reads go to the file.
    pub fn file(bytes: &'a [u8], file: &'a File, base: u64) -> Input<'a> {
        Input {
            bytes,
            file: Some((file, base)),
        }
    }

    /// The same input restricted to `start..start+len` (an archive member).
    pub fn slice(&self, start: usize, len: usize) -> Option<Input<'a>> {
        let bytes = self.bytes.get(start..start.checked_add(len)?)?;
        Some(Input {
            bytes,
            file: self.file.map(|(f, base)| (f, base + start as u64)),
        })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the input is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The whole input as a slice (for parsers that need one; touches the pages they read).
    pub fn as_slice(&self) -> &'a [u8] {
        self.bytes
    }

    /// Exactly `len` bytes at `off`, or `None` when they are not all there.
    pub fn read(&self, off: usize, len: usize) -> Option<Cow<'a, [u8]>> {
        let end = off.checked_add(len)?;
        if end > self.bytes.len() {
            return None;
        }
        match self.file {
            None => Some(Cow::Borrowed(&self.bytes[off..end])),
            Some((file, base)) => {
                let mut buf = vec![0u8; len];
                match file.read_exact_at(&mut buf, base + off as u64) {
                    Ok(()) => Some(Cow::Owned(buf)),
                    // The file changed under us: fall back to the map's view.
                    Err(_) => Some(Cow::Borrowed(&self.bytes[off..end])),
                }
            }
        }
    }

    /// Up to `len` bytes at `off` (fewer at the end of the input).
    pub fn read_upto(&self, off: usize, len: usize) -> Cow<'a, [u8]> {
        let end = off.saturating_add(len).min(self.bytes.len());
        let off = off.min(end);
        self.read(off, end - off).unwrap_or(Cow::Borrowed(&[]))
    }

    /// Little-endian integers.
    pub fn u16_at(&self, off: usize) -> Option<u16> {
        self.read(off, 2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    /// Little-endian `u32`.
    pub fn u32_at(&self, off: usize) -> Option<u32> {
        self.read(off, 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Little-endian `u64`.
    pub fn u64_at(&self, off: usize) -> Option<u64> {
        self.read(off, 8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// Calls `f(chunk_offset, chunk)` over `start..end` in chunks of at most `chunk` bytes, each chunk
    /// overlapping the previous by `overlap` bytes so a pattern across a boundary is seen; stops when `f`
    /// returns `Some`.
    pub fn chunks<T>(
        &self,
        start: usize,
        end: usize,
        chunk: usize,
        overlap: usize,
        mut f: impl FnMut(usize, &[u8]) -> Option<T>,
    ) -> Option<T> {
        let end = end.min(self.bytes.len());
        let mut off = start;
        while off < end {
            let len = chunk.min(end - off);
            let data = self.read_upto(off, len);
            if let Some(t) = f(off, &data) {
                return Some(t);
            }
            if off + len >= end {
                break;
            }
            off += len.saturating_sub(overlap).max(1);
        }
        None
    }

    /// Offset of the first non-zero byte in `start..end`.
    pub fn first_nonzero(&self, start: usize, end: usize) -> Option<usize> {
        self.chunks(start, end, 1 << 16, 0, |at, c| {
            c.iter().position(|&b| b != 0).map(|i| at + i)
        })
    }
}
