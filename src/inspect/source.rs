//! Read-only memory maps of inputs.
//!
//! Mapping lets `inspect` read a 450 MB library by touching only the pages it needs (headers, not payloads),
//! which is what keeps its memory a small fraction of `cuobjdump`'s. Inputs are opened the one untrusted way
//! ([`crate::system::read::open_regular`]): without blocking, and only when they are regular files (a FIFO or
//! `/dev/zero` is refused with its type named, never read "whole"). Every map is guarded
//! ([`super::guard`]): a file truncated while it is read gives zeros and a flag ([`Source::truncated`]), not a
//! SIGBUS.

use super::elfparse;
use super::guard::{self, Registration};
use super::pieces::{self, Piece};
use crate::system::read::{self, ReadError};
use std::fs::File;
use std::ops::Deref;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A guarded read-only map. The registration is declared first so that it ends before the map is unmapped.
pub struct Mapped {
    guard: Registration,
    map: memmap2::Mmap,
    /// The open file, kept for a large one ([`Source::file`]).
    file: Option<Kept>,
    /// Its ELF headers, read apart from the map on first use ([`Source::elf_pieces`]).
    pieces: std::sync::OnceLock<Vec<Piece>>,
}

/// Files at least this large keep their descriptor beside their map ([`Source::file`]) and have their headers
/// read apart from it ([`Source::elf_pieces`]). Not only PyTorch's and NVIDIA's libraries of hundreds of MB:
/// a touched page of a 2.8 MB `libgfortran` that had been read whole kept 1.6 MB resident, since the page cache
/// is mapped a folio at a time. From 16 MiB down to 256 KiB, `inspect libtorch_cuda.so` in a venv with NumPy
/// peaked 2 MiB lower on 2 cores (21.6 MiB instead of 23.7), 1 MiB lower than from 1 MiB, for the same CPU
/// time. A smaller file cannot keep more than its size resident.
const KEEP_FILE_FROM: u64 = 256 << 10;

/// Descriptors kept at most at once, whatever the number of large files a run maps (a tree of thousands of
/// them must not run the process out of descriptors): past it, a map keeps none and is read through.
const MAX_KEPT: usize = 64;

/// Descriptors kept now.
static KEPT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A kept descriptor, counted in [`KEPT`] while it lives.
struct Kept(File);

impl Kept {
    /// A duplicate of `file`'s descriptor, if fewer than [`MAX_KEPT`] are kept.
    fn of(file: &File) -> Option<Kept> {
        use std::sync::atomic::Ordering;
        KEPT.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < MAX_KEPT).then_some(n + 1)
        })
        .ok()?;
        match file.try_clone() {
            Ok(f) => Some(Kept(f)),
            Err(_) => {
                KEPT.fetch_sub(1, Ordering::AcqRel);
                None
            }
        }
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        KEPT.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// The bytes of an input: mapped, or read into memory when mapping is not possible (empty files).
pub enum Source {
    /// A guarded read-only map of a regular file.
    Mapped(Mapped),
    /// Bytes read into memory.
    Owned(Vec<u8>),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Mapped(m) => write!(f, "Mapped({} bytes)", m.map.len()),
            Source::Owned(v) => write!(f, "Owned({} bytes)", v.len()),
        }
    }
}

impl Deref for Source {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Source::Mapped(m) => &m.map,
            Source::Owned(v) => v,
        }
    }
}

impl Source {
    /// Did the file shrink while it was read? What was read past its new end were zeros: the facts drawn from
    /// them must not be trusted.
    pub fn truncated(&self) -> bool {
        match self {
            Source::Mapped(m) => m.guard.truncated(),
            Source::Owned(_) => false,
        }
    }

    /// The mapped file, open, for positioned reads of what is read once and sparsely from a large file (its
    /// versioned imports' names): each page touched through the map stays resident for the run, and Linux maps
    /// the page cache's large folios whole (64 KiB and more per touch), so 831 names read from `libtorch_cpu.so`'s
    /// 5 MB `.dynstr` kept 2.7 MB resident. `None` for a small file, or past [`MAX_KEPT`] at once.
    pub fn file(&self) -> Option<&File> {
        match self {
            Source::Mapped(m) => m.file.as_ref().map(|k| &k.0),
            Source::Owned(_) => None,
        }
    }

    /// The ELF headers of a large file (one whose descriptor is kept: [`Source::file`]) read by positioned
    /// reads, once, for [`elfparse::parse_with`]: through the map, the section headers at the end of a 500 MB
    /// library and its dynamic section each kept a page-cache folio resident, up to 2 MB apiece, as many times
    /// as the library is parsed (the loader's view, its imports, its exports). Empty for another source.
    pub fn elf_pieces(&self) -> &[Piece] {
        match self {
            Source::Mapped(Mapped {
                map,
                file: Some(kept),
                pieces,
                ..
            }) => pieces.get_or_init(|| elfparse::read_pieces(&kept.0, map.len())),
            _ => &[],
        }
    }

    /// The first `n` bytes ([`pieces::prefix`]), from the [`Source::elf_pieces`] of a large file.
    pub fn prefix(&self, n: usize) -> &[u8] {
        pieces::prefix(self, self.elf_pieces(), n)
    }

    /// [`elfparse::parse_with`] of this source and its [`Source::elf_pieces`].
    pub fn parse_elf(&self) -> goblin::error::Result<(goblin::elf::Elf<'_>, Vec<String>)> {
        elfparse::parse_with(self, self.elf_pieces())
    }
}

/// Opens the regular file `path` read-only and maps it; the open file comes back too, for positioned reads.
/// Anything but a regular file is an error naming its type (an [`std::io::Error`] of kind `InvalidInput`
/// whose inner error is a [`ReadError`]).
pub fn map(path: &Path) -> std::io::Result<(Option<File>, Source)> {
    let (file, meta) = read::open_regular(path).map_err(std::io::Error::from)?;
    let map = map_open_with(&file, &meta)?;
    Ok((Some(file), map))
}

/// Maps a regular file that is already open (a wheel member inflated to a temporary file).
pub fn map_open(file: &File) -> std::io::Result<Source> {
    map_open_with(file, &file.metadata()?)
}

/// [`map_open`] of a file whose `fstat` the caller has. The loader's search opens each candidate once, and
/// asked the kernel for its size three times (at the `open`, here, and in `memmap2`): a `doctor` run in a venv
/// of 189 distributions made 672 `fstat`s, and makes 419 since.
pub fn map_open_with(file: &File, meta: &std::fs::Metadata) -> std::io::Result<Source> {
    if let Some(file_type) = read::FileKind::of(meta) {
        return Err(ReadError::NotRegular { file_type }.into());
    }
    if meta.len() == 0 {
        return Ok(Source::Owned(Vec::new()));
    }
    let len = usize::try_from(meta.len()).map_err(std::io::Error::other)?;
    // SAFETY: the map is read-only and private to this process. Another process truncating the file while it
    // is read would raise SIGBUS on a page past the new end: the map is registered with the guard before any
    // byte is read, which turns that into zeros and a flag, and is dropped before it (`Mapped`'s field order).
    // The length is the caller's `fstat`: a file that shrank since is that same case.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::MmapOptions::new().len(len).map(file) }?;
    let Some(guard) = guard::register(map.as_ptr(), map.len()) else {
        // No guard to be had: a copy in memory, never an unguarded map.
        drop(map);
        let mut bytes = vec![0u8; len];
        file.read_exact_at(&mut bytes, 0)?;
        return Ok(Source::Owned(bytes));
    };
    // Pages are touched sparsely (headers here and there): no read-ahead.
    let _ = map.advise(memmap2::Advice::Random);
    let file = (meta.len() >= KEEP_FILE_FROM).then(|| Kept::of(file)).flatten();
    Ok(Source::Mapped(Mapped {
        guard,
        map,
        file,
        pieces: std::sync::OnceLock::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test executable's own ELF image, cut or padded to `len` bytes (its headers are at its start; the
    /// section headers of a cut copy are past the end, which the parse must survive either way).
    fn elf_of_len(dir: &Path, len: u64) -> std::path::PathBuf {
        use std::io::Read;
        let mut head = Vec::new();
        File::open(std::env::current_exe().unwrap())
            .unwrap()
            .take(len)
            .read_to_end(&mut head)
            .unwrap();
        let path = dir.join(format!("elf-{len}"));
        std::fs::write(&path, &head).unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len)
            .unwrap();
        path
    }

    #[test]
    fn a_file_from_the_threshold_up_has_its_headers_copied_and_a_smaller_one_is_only_mapped() {
        let t = tempfile::tempdir().unwrap();
        let (_, small) = map(&elf_of_len(t.path(), KEEP_FILE_FROM - 1)).unwrap();
        assert!(small.file().is_none());
        assert!(small.elf_pieces().is_empty());
        let (_, large) = map(&elf_of_len(t.path(), KEEP_FILE_FROM)).unwrap();
        assert!(large.file().is_some());
        let pieces = large.elf_pieces();
        assert!(!pieces.is_empty());
        // The ELF header comes from the copies, and says what the map says.
        assert_eq!(large.prefix(64), &large[..64]);
        assert!(pieces.iter().map(|p| p.bytes.len()).sum::<usize>() < KEEP_FILE_FROM as usize);
    }
}
