//! Random access to an input's bytes, without touching what is not needed.
//!
//! A host ELF is memory-mapped for goblin, which needs one slice; but fatbin headers and payloads are read with
//! positioned reads (`pread`) when the input is a file. Touching a 300 MB `.nv_fatbin` through the map would
//! fault in (and, with the kernel's fault-around, count against our resident memory) 64 KB around every entry
//! header (measured on `libtorch_cuda.so`: 200 KB of resident memory per page touched, even with
//! `MADV_RANDOM`); a positioned read costs one syscall and no resident memory. The headers of one entry (the
//! container's, the entry's 64 bytes, its whole header with the identifier and options strings, the first
//! bytes of a zstd frame) are read a few fields at a time, so small reads go through a [`Window`]: one read of
//! [`WINDOW`] bytes serves them all, about one system call per entry instead of four. In-memory inputs
//! (archive members, tests) are read from the slice.

use super::pieces::Piece;
use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

/// Bytes read at once for a small read: an entry's fixed header, for most entries its strings and the first
/// bytes of its payload too (headers are 64 to about 1,100 bytes; a longer one is read on its own). Every byte
/// read is copied: 4 KB windows copied 11 MB out of the page cache for the 2,981 entries of PyTorch's
/// `libtorch_cuda.so`, 1 KB windows 3 MB, for 7% more reads (2,778 → 2,986); its listing went from 10.3 to
/// 9.5 ms (median of 25) on the GPU machine.
pub const WINDOW: usize = 1024;

/// Bytes a large scan ([`Input::chunks`]) reads at a time. Each thread reads into one buffer of this size kept
/// for the run: the 1 MiB buffers allocated per scan before cost a fresh map, 256 zeroed pages and a `munmap`
/// for each `.dynstr` searched (`libtorch_cpu.so`'s 5 MB for `__cudaRegisterFatBinary` at every `inspect`),
/// and 1 MiB of peak memory per thread scanning.
pub const CHUNK: usize = 64 << 10;

pub use crate::system::read::with_scan_buffer;

/// The last window read of a file: `bytes` from file offset `at`. Shared by the inputs of one file (an
/// archive's members too: offsets are the file's).
#[derive(Debug, Default)]
pub struct Window {
    last: Mutex<(u64, Vec<u8>)>,
}

impl Window {
    /// A new, empty window.
    pub fn new() -> Window {
        Window::default()
    }

    /// `len` bytes at file offset `at` (at most `room` readable from there): from the last window read when it
    /// holds them, else from a new one. `None` when the file could not give them (it shrank).
    fn read(&self, file: &File, at: u64, len: usize, room: usize) -> Option<Vec<u8>> {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (start, bytes) = &mut *last;
        let hit = at
            .checked_sub(*start)
            .and_then(|rel| usize::try_from(rel).ok())
            .and_then(|rel| bytes.get(rel..rel.checked_add(len)?));
        if let Some(hit) = hit {
            return Some(hit.to_vec());
        }
        bytes.resize(WINDOW.min(room).max(len), 0);
        if file.read_exact_at(bytes, at).is_err() {
            bytes.clear();
            return None;
        }
        *start = at;
        Some(bytes[..len].to_vec())
    }
}

/// Bytes of one input.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    bytes: &'a [u8],
    file: Option<(&'a File, u64)>,
    window: Option<&'a Window>,
    /// The whole file's ELF headers, read apart from the map ([`super::source::Source::elf_pieces`]).
    pieces: &'a [Piece],
}

impl<'a> Input<'a> {
    /// An input held in memory.
    pub fn bytes(bytes: &'a [u8]) -> Input<'a> {
        Input {
            bytes,
            file: None,
            window: None,
            pieces: &[],
        }
    }

    /// An input whose bytes are also reachable through `file` at offset `base`: reads go to the file, the small
    /// ones through `window`.
    pub fn file(bytes: &'a [u8], file: &'a File, base: u64, window: &'a Window) -> Input<'a> {
        Input {
            bytes,
            file: Some((file, base)),
            window: Some(window),
            pieces: &[],
        }
    }

    /// The same input, its ELF headers parsed from `pieces` where they hold them (a whole file's, from
    /// [`super::source::Source::elf_pieces`]).
    pub fn with_pieces(self, pieces: &'a [Piece]) -> Input<'a> {
        Input { pieces, ..self }
    }

    /// The file whose bytes these are from its start (`None` for an input in memory or an archive member).
    pub fn whole_file(&self) -> Option<&'a File> {
        self.file.filter(|&(_, base)| base == 0).map(|(f, _)| f)
    }

    /// The first `n` bytes (all of a shorter input), from the pieces where they hold them.
    pub fn prefix(&self, n: usize) -> &'a [u8] {
        super::pieces::prefix(self.bytes, self.pieces, n)
    }

    /// The whole file's headers read apart from its map (none for an input in memory or an archive member).
    pub fn pieces(&self) -> &'a [Piece] {
        self.pieces
    }

    /// The same input restricted to `start..start+len` (an archive member).
    pub fn slice(&self, start: usize, len: usize) -> Option<Input<'a>> {
        let bytes = self.bytes.get(start..start.checked_add(len)?)?;
        Some(Input {
            bytes,
            file: self.file.map(|(f, base)| (f, base + start as u64)),
            window: self.window,
            // The pieces are the whole file's, placed by its offsets.
            pieces: if start == 0 { self.pieces } else { &[] },
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
                let at = base + off as u64;
                let read = match self.window {
                    Some(window) if len <= WINDOW / 2 => window.read(file, at, len, self.bytes.len() - off),
                    _ => {
                        let mut buf = vec![0u8; len];
                        file.read_exact_at(&mut buf, at).ok().map(|()| buf)
                    }
                };
                match read {
                    Some(buf) => Some(Cow::Owned(buf)),
                    // The file changed under us: fall back to the map's view.
                    None => Some(Cow::Borrowed(&self.bytes[off..end])),
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
        // Grown to a chunk only when a read needs it: an input in memory reads none.
        with_scan_buffer(0, |buf| self.chunks_with(buf, start, end, chunk, overlap, &mut f))
    }

    fn chunks_with<T>(
        &self,
        buf: &mut Vec<u8>,
        start: usize,
        end: usize,
        chunk: usize,
        overlap: usize,
        f: &mut impl FnMut(usize, &[u8]) -> Option<T>,
    ) -> Option<T> {
        let mut off = start;
        while off < end {
            let len = chunk.min(end - off);
            let data = match self.file {
                Some((file, base)) if len > WINDOW / 2 => {
                    if buf.len() < len {
                        buf.resize(len, 0);
                    }
                    match file.read_exact_at(&mut buf[..len], base + off as u64) {
                        Ok(()) => Cow::Borrowed(&buf[..len]),
                        // The file changed under us: the map's view, as for any read.
                        Err(_) => Cow::Borrowed(&self.bytes[off..off + len]),
                    }
                }
                _ => self.read_upto(off, len),
            };
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

    /// Offset of the first non-zero byte in `start..end`. Padding is short (to the next 8-byte boundary), so
    /// the first bytes are looked at through the window before any large read.
    pub fn first_nonzero(&self, start: usize, end: usize) -> Option<usize> {
        let nonzero = |at: usize, c: &[u8]| c.iter().position(|&b| b != 0).map(|i| at + i);
        let head = end.min(start.saturating_add(WINDOW / 2));
        self.chunks(start, head, WINDOW / 2, 0, nonzero)
            .or_else(|| self.chunks(head, end, 1 << 16, 0, nonzero))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(len: usize) -> File {
        let mut f = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
        f.write_all(&bytes).unwrap();
        f
    }

    /// Small reads through the window, large ones around it, at its edges and at the end of the file: always
    /// the file's bytes, and never a byte past the input's end.
    #[test]
    fn window_reads_give_the_bytes_of_the_file() {
        let f = file_of(3 * WINDOW + 123);
        let map = super::super::source::map_open(&f).unwrap();
        let window = Window::new();
        let input = Input::file(&map, &f, 0, &window);
        let len = input.len();
        for off in [
            0,
            1,
            60,
            WINDOW - 3,
            WINDOW,
            2 * WINDOW + 7,
            len - 64,
            len - 8,
            len - 1,
        ] {
            for n in [1, 2, 4, 8, 64, 200, WINDOW / 2, WINDOW, 3 * WINDOW] {
                let want = map.get(off..off + n).map(<[u8]>::to_vec);
                assert_eq!(input.read(off, n).map(|c| c.to_vec()), want, "{off}+{n}");
            }
        }
        assert_eq!(
            input.u64_at(len - 8),
            map.get(len - 8..)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        );
        assert_eq!(input.first_nonzero(0, len), map.iter().position(|&b| b != 0));
        // An archive member's view: its own offsets, the file's bytes.
        let member = input.slice(WINDOW + 5, 100).unwrap();
        assert_eq!(
            member.read(0, 100).unwrap().to_vec(),
            map[WINDOW + 5..WINDOW + 105]
        );
        assert_eq!(member.read(1, 100), None);
    }

    /// A scan of a file-backed input in [`CHUNK`]s: every chunk holds the file's bytes at its offset, a pattern
    /// across each boundary is seen through the overlap, and a scan started inside another's callback (which
    /// cannot share the thread's buffer) reads the same bytes.
    #[test]
    fn chunks_of_a_file_are_its_bytes_with_their_overlap() {
        let f = file_of(3 * CHUNK + 777);
        let map = super::super::source::map_open(&f).unwrap();
        let window = Window::new();
        let input = Input::file(&map, &f, 0, &window);
        let (start, end) = (5, input.len() - 3);
        let mut seen = Vec::new();
        let mut nested_ok = true;
        input.chunks(start, end, CHUNK, 16, |at, chunk| {
            assert_eq!(chunk, &map[at..at + chunk.len()]);
            seen.push((at, chunk.len()));
            let inner = input.chunks(at, (at + 2 * CHUNK).min(end), CHUNK, 0, |i, c| {
                (c != &map[i..i + c.len()]).then_some(())
            });
            nested_ok &= inner.is_none();
            None::<()>
        });
        assert!(nested_ok);
        assert_eq!(seen.first(), Some(&(start, CHUNK)));
        for w in seen.windows(2) {
            // Each chunk starts 16 bytes before the previous one ends.
            assert_eq!(w[1].0, w[0].0 + w[0].1 - 16);
        }
        let (last, len) = *seen.last().unwrap();
        assert_eq!(last + len, end);
    }

    /// A file that shrinks after a window was read: a read past its new end comes from the guarded map (zeros,
    /// and the map flagged as truncated), as without the window.
    #[test]
    fn a_window_read_of_a_file_that_shrank_falls_back_to_the_guarded_map() {
        // Whole pages (a window may be smaller than one): a read past the end inside the last page is zeros
        // without a fault.
        let page = WINDOW.max(4096);
        let f = file_of(4 * page);
        let map = super::super::source::map_open(&f).unwrap();
        let window = Window::new();
        let input = Input::file(&map, &f, 0, &window);
        assert_eq!(input.read(8, 8).unwrap().to_vec(), map[8..16]);
        f.set_len(page as u64).unwrap();
        assert_eq!(input.u64_at(3 * page), Some(0));
        assert!(map.truncated());
        // What the window read before the cut is still served from it.
        assert_eq!(input.read(8, 8).map(|c| c.to_vec()).unwrap().len(), 8);
    }
}
