//! Read-only memory maps of inputs.
//!
//! Mapping lets `inspect` read a 450 MB library by touching only the pages it needs (headers, not payloads),
//! which is what keeps its memory a small fraction of `cuobjdump`'s. This is the one place outside the probe
//! that needs `unsafe`: memmap2 cannot promise that another process will not truncate the file while it is
//! mapped.

use std::fs::File;
use std::ops::Deref;
use std::path::Path;

/// The bytes of an input: mapped, or read into memory when mapping is not possible (pipes, empty files).
pub enum Source {
    /// A read-only map of a regular file.
    Mapped(memmap2::Mmap),
    /// Bytes read into memory.
    Owned(Vec<u8>),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Mapped(m) => write!(f, "Mapped({} bytes)", m.len()),
            Source::Owned(v) => write!(f, "Owned({} bytes)", v.len()),
        }
    }
}

impl Deref for Source {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Source::Mapped(m) => m,
            Source::Owned(v) => v,
        }
    }
}

/// Opens `path` read-only and maps it; the open file comes back too, for positioned reads.
pub fn map(path: &Path) -> std::io::Result<(Option<File>, Source)> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    if !meta.is_file() || meta.len() == 0 {
        return std::fs::read(path).map(|v| (None, Source::Owned(v)));
    }
    let map = map_open(&file)?;
    Ok((Some(file), map))
}

/// Maps a regular file that is already open (a wheel member inflated to a temporary file).
pub fn map_open(file: &File) -> std::io::Result<Source> {
    if file.metadata()?.len() == 0 {
        return Ok(Source::Owned(Vec::new()));
    }
    // SAFETY: the map is read-only and private to this process. Another process truncating the file while we
    // read it could raise SIGBUS; cudadiag is a short-lived reader of files the user pointed it at, the same
    // trade-off ripgrep makes, and the alternative (reading 450 MB libraries whole) breaks the memory budget.
    // A temporary file of our own has no name, so no other process can reach it.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::Mmap::map(file) }?;
    // Pages are touched sparsely (headers here and there): no read-ahead.
    let _ = map.advise(memmap2::Advice::Random);
    Ok(Source::Mapped(map))
}
