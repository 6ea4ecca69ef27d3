//! The one way cudadiag reads a file it does not trust: every input, every file of a `--root`, every policy,
//! matrix and snapshot.
//!
//! What can go wrong with a path a user (or a customer's filesystem) hands over, and what this module does:
//! - It names a FIFO: a plain `open` blocks until a writer appears (forever). Files are opened with
//!   `O_NONBLOCK`, so the open returns at once, and the *opened* descriptor is examined with `fstat` before a
//!   byte is read: there is no window between a `stat` and the `open` in which the file could be swapped.
//! - It names a character device (`/dev/zero`, `/dev/urandom`): reading it "whole" never ends. Anything but
//!   a regular file is refused with its type named ([`ReadError::NotRegular`]).
//! - It is a regular file of 8 GiB where a 1 KiB one is expected: each kind of file has a [`Limit`], a size
//!   past which it is not read ([`ReadError::TooLarge`]).
//! - It lives in procfs or sysfs: those are regular files whose `stat` size is 0 (the kernel makes the text
//!   on `read`), so the size is never trusted: at most `limit + 1` bytes are read, and one byte too many is
//!   enough to refuse the file.
//!
//! `O_NOCTTY` is set too, so that opening a terminal device never makes it cudadiag's controlling terminal.
//! A socket cannot be opened at all (`ENXIO`); its type is named from its metadata.
//!
//! Large inputs (450 MB libraries) are not read here but mapped (`inspect::source`), after the same open and
//! the same regular-file check ([`open_regular`]).

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// How large one kind of file may be before cudadiag refuses to read it, and what that kind is called in the
/// message ("more than the 1 MiB a /proc or /sys text file can be").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// The most bytes read.
    pub bytes: u64,
    /// The kind of file, with its article: "a /proc or /sys text file".
    pub what: &'static str,
}

/// Text the kernel makes (`/proc/driver/nvidia/version`, `/proc/modules`, `/sys/module/*/version`,
/// `/proc/cpuinfo`, `/proc/driver/nvidia/gpus/*/information`): a few KiB at most; `/proc/cpuinfo` of a
/// 512-thread machine is about 700 KiB.
pub const KERNEL_TEXT: Limit = Limit {
    bytes: MIB,
    what: "a /proc or /sys text file",
};

/// Small configuration files of the machine: `ld.so.conf` and its includes, `ld.so.preload`,
/// `nv_tegra_release`, a toolkit's `version.json`. Real ones are under a few KiB.
pub const CONFIG_TEXT: Limit = Limit {
    bytes: MIB,
    what: "a configuration file",
};

/// `/etc/ld.so.cache`: a few hundred KiB with thousands of libraries; its decoder bounds every count anyway.
pub const LD_SO_CACHE: Limit = Limit {
    bytes: 64 * MIB,
    what: "an ld.so.cache",
};

/// Package metadata: a wheel's `METADATA`/`RECORD`, a dpkg `.list`, a conda-meta JSON. PyTorch's RECORD is
/// under 1 MiB; a conda-meta file of a large package a few MiB.
pub const PACKAGE_METADATA: Limit = Limit {
    bytes: 64 * MIB,
    what: "a package metadata file",
};

/// `/var/lib/dpkg/status`: about 3 MiB on a full desktop install.
pub const DPKG_STATUS: Limit = Limit {
    bytes: 256 * MIB,
    what: "a dpkg status file",
};

/// A shared library read whole to find a constant in its code (libcudart is under 1 MiB; 256 MiB leaves
/// room for anything that could be a runtime library and refuses what cannot).
pub const LIBRARY: Limit = Limit {
    bytes: 256 * MIB,
    what: "a CUDA runtime library read whole",
};

/// `--policy`: the template is 4 KiB; a policy with thousands of waivers is still under 1 MiB.
pub const POLICY: Limit = Limit {
    bytes: 16 * MIB,
    what: "a policy file",
};

/// `--matrix`: the bundled matrix is about 100 KiB.
pub const MATRIX: Limit = Limit {
    bytes: 16 * MIB,
    what: "a compatibility matrix",
};

/// `--facts`: a node's snapshot is about 130 KiB, one with many binaries' facts a few MiB.
pub const SNAPSHOT: Limit = Limit {
    bytes: 256 * MIB,
    what: "a snapshot",
};

/// What a path is when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A FIFO (named pipe).
    Fifo,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// A Unix socket.
    Socket,
    /// A symbolic link (only seen when links are not followed).
    Symlink,
    /// Anything else the kernel reports.
    Other,
}

impl FileKind {
    /// The kind of `meta`, `None` for a regular file.
    pub fn of(meta: &Metadata) -> Option<FileKind> {
        let t = meta.file_type();
        Some(if t.is_file() {
            return None;
        } else if t.is_dir() {
            FileKind::Directory
        } else if t.is_fifo() {
            FileKind::Fifo
        } else if t.is_char_device() {
            FileKind::CharDevice
        } else if t.is_block_device() {
            FileKind::BlockDevice
        } else if t.is_socket() {
            FileKind::Socket
        } else if t.is_symlink() {
            FileKind::Symlink
        } else {
            FileKind::Other
        })
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Symlink => "a symbolic link",
            FileKind::Other => "not a file cudadiag knows",
        })
    }
}

/// Why an untrusted file was not read. The message reads after the path: "`PATH`: is a FIFO (named pipe),
/// not a regular file".
#[derive(Debug)]
pub enum ReadError {
    /// It is not a regular file; nothing was read.
    NotRegular {
        /// What it is.
        file_type: FileKind,
    },
    /// It is larger than its kind of file can be; nothing was kept.
    TooLarge {
        /// Its size, when the file states one (procfs and sysfs files say 0: then only "more than").
        size: Option<u64>,
        /// The limit it passed.
        limit: Limit,
    },
    /// The system refused (missing, permission denied, I/O error, not UTF-8 where text was wanted).
    Io(io::Error),
}

impl ReadError {
    /// Is this "the file does not exist" (as opposed to existing but unreadable)?
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotRegular { file_type } => write!(f, "is {file_type}, not a regular file"),
            ReadError::TooLarge {
                size: Some(size),
                limit,
            } => write!(
                f,
                "is {}, more than the {} {} can be: not read",
                size_text(*size),
                size_text(limit.bytes),
                limit.what
            ),
            ReadError::TooLarge { size: None, limit } => write!(
                f,
                "is more than the {} {} can be: not read",
                size_text(limit.bytes),
                limit.what
            ),
            ReadError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

impl From<ReadError> for io::Error {
    /// An I/O error keeps its own kind; the others are `InvalidInput` carrying the [`ReadError`] (which
    /// [`io::Error::get_ref`] gives back).
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Io(e) => e,
            other => io::Error::new(io::ErrorKind::InvalidInput, other),
        }
    }
}

/// A size as people read it: "512 bytes", "1 MiB", "8.0 GiB" (one decimal unless exact).
pub fn size_text(n: u64) -> String {
    let (unit, div) = match n {
        n if n >= 1 << 30 => ("GiB", 1u64 << 30),
        n if n >= MIB => ("MiB", MIB),
        n if n >= KIB => ("KiB", KIB),
        n => return format!("{n} byte{}", if n == 1 { "" } else { "s" }),
    };
    if n.is_multiple_of(div) {
        format!("{} {unit}", n / div)
    } else {
        format!("{:.1} {unit}", n as f64 / div as f64)
    }
}

/// Opens `path` for reading without blocking (a FIFO opens at once) and returns it with the metadata of the
/// opened descriptor, whatever its type. For callers that decide themselves what a device or pipe means
/// (the loader reads the first bytes of anything, as `open_verify` does).
pub fn open(path: &Path) -> Result<(File, Metadata), ReadError> {
    open_with(path, 0)
}

/// [`open`] with more `open(2)` flags.
fn open_with(path: &Path, flags: libc::c_int) -> Result<(File, Metadata), ReadError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | flags)
        .open(path)
        .map_err(|e| {
            // A socket cannot be opened (ENXIO): say what it is rather than "No such device or address".
            if e.raw_os_error() == Some(libc::ENXIO)
                && let Ok(meta) = std::fs::metadata(path)
                && let Some(file_type) = FileKind::of(&meta)
            {
                return ReadError::NotRegular { file_type };
            }
            ReadError::Io(e)
        })?;
    let meta = file.metadata()?;
    Ok((file, meta))
}

/// [`open`], refusing anything that is not a regular file before a byte is read.
pub fn open_regular(path: &Path) -> Result<(File, Metadata), ReadError> {
    regular(open(path)?)
}

/// An opened file, refused when it is not a regular file.
fn regular((file, meta): (File, Metadata)) -> Result<(File, Metadata), ReadError> {
    match FileKind::of(&meta) {
        Some(file_type) => Err(ReadError::NotRegular { file_type }),
        None => Ok((file, meta)),
    }
}

/// Reads the regular file `path` whole, refusing one larger than `limit`.
pub fn read(path: &Path, limit: Limit) -> Result<Vec<u8>, ReadError> {
    let (file, meta) = open_regular(path)?;
    read_open(file, &meta, limit)
}

/// [`read`] into `buffer`, which a caller reading many files (`fleet`'s thousands of node reports) reuses from
/// one to the next: no new allocation per file, and a file of the size `fstat` states is read in one `read`
/// (of that size and one byte more), where [`read`] reads on until a `read` returns nothing. A read that
/// returns fewer bytes than asked, once the stated size is there, is the end of a regular file; a file that
/// states no size (procfs) or is still short is read on until a `read` returns nothing, at most `limit + 1`
/// bytes as [`read`]. The text is the start of `buffer`, which keeps its size for the next file.
pub fn read_into<'b>(path: &Path, limit: Limit, buffer: &'b mut Vec<u8>) -> Result<&'b [u8], ReadError> {
    let (file, meta) = open_regular(path)?;
    fill(file, &meta, limit, buffer)
}

/// [`read_into`] of a file opened already.
fn fill<'b>(
    mut file: File,
    meta: &Metadata,
    limit: Limit,
    buffer: &'b mut Vec<u8>,
) -> Result<&'b [u8], ReadError> {
    if meta.len() > limit.bytes {
        return Err(ReadError::TooLarge {
            size: Some(meta.len()),
            limit,
        });
    }
    let most = usize::try_from(limit.bytes.saturating_add(1)).unwrap_or(usize::MAX);
    let stated = usize::try_from(meta.len()).unwrap_or(0);
    if buffer.len() < stated + 1 {
        buffer.resize(stated + 1, 0);
    }
    let mut n = 0;
    loop {
        if n == buffer.len() {
            if n >= most {
                return Err(ReadError::TooLarge { size: None, limit });
            }
            buffer.resize(n.saturating_mul(2).max(8 << 10).min(most), 0);
        }
        let asked = buffer.len() - n;
        let got = match file.read(&mut buffer[n..]) {
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        n += got;
        if got == 0 || (stated > 0 && n >= stated && got < asked) {
            break;
        }
    }
    if n as u64 > limit.bytes {
        return Err(ReadError::TooLarge { size: None, limit });
    }
    Ok(&buffer[..n])
}

/// [`read`], as UTF-8 text.
pub fn read_to_string(path: &Path, limit: Limit) -> Result<String, ReadError> {
    text(read(path, limit)?)
}

/// [`read_to_string`] of `path` itself: a symbolic link there is not followed but refused, with the `ELOOP`
/// of `O_NOFOLLOW` ([`crate::system::Root`] resolves only then the link inside its root).
pub fn read_to_string_unlinked(path: &Path, limit: Limit) -> Result<String, ReadError> {
    let (file, meta) = regular(open_with(path, libc::O_NOFOLLOW)?)?;
    text(read_open(file, &meta, limit)?)
}

/// `bytes` as UTF-8 text.
fn text(bytes: Vec<u8>) -> Result<String, ReadError> {
    String::from_utf8(bytes).map_err(|_| {
        ReadError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })
}

/// Runs `f` with this thread's buffer for reading a large file a piece at a time ([`lines_in`], the inspector's
/// positioned-read scans), at least `at_least` bytes long: one per thread for the run, so that a scan costs no
/// allocation and no zeroed pages. It keeps its length between uses; a user that needs more grows it. A scan
/// started while the buffer is lent (from inside another scan's callback: none does today) gets a buffer of its
/// own.
pub fn with_scan_buffer<R>(at_least: usize, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUF.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < at_least {
                buf.resize(at_least, 0);
            }
            f(&mut buf)
        }
        Err(_) => f(&mut vec![0; at_least]),
    })
}

/// Bytes [`lines_in`] reads at a time (more when one line is longer).
pub const LINES_CHUNK: usize = 64 << 10;

/// Reads the opened regular text file `file` within `limit` a piece at a time through `buffer` (this thread's
/// scan buffer, [`with_scan_buffer`], at least [`LINES_CHUNK`] long), giving `each` its lines in runs of whole lines: every run but the file's
/// last ends with `\n`, and no line is split between two runs (a line longer than the buffer grows it). The
/// file is never held whole: pip's 1.3 MB `RECORD` of torch costs 64 KiB, where reading it whole cost a 1.3 MB
/// allocation zeroed, faulted in and kept. Returns the bytes read; a file larger than `limit` is refused as
/// [`read`] refuses it, though some of its lines may have been given already.
pub fn lines_in(
    mut file: File,
    meta: &Metadata,
    limit: Limit,
    buffer: &mut Vec<u8>,
    mut each: impl FnMut(&[u8]),
) -> Result<u64, ReadError> {
    if meta.len() > limit.bytes {
        return Err(ReadError::TooLarge {
            size: Some(meta.len()),
            limit,
        });
    }
    // `kept`: the bytes of an unfinished line at the start of the buffer, carried to the next read.
    let (mut kept, mut total) = (0usize, 0u64);
    loop {
        if kept == buffer.len() {
            // One line fills the buffer: double it (bounded, as the bytes read are, by `limit`).
            buffer.resize(buffer.len().saturating_mul(2).max(64), 0);
        }
        let got = match file.read(&mut buffer[kept..]) {
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        total += got as u64;
        if total > limit.bytes {
            return Err(ReadError::TooLarge { size: None, limit });
        }
        if got == 0 {
            if kept > 0 {
                each(&buffer[..kept]);
            }
            return Ok(total);
        }
        let end = kept + got;
        match memchr::memrchr(b'\n', &buffer[kept..end]) {
            Some(last) => {
                let whole = kept + last + 1;
                each(&buffer[..whole]);
                buffer.copy_within(whole..end, 0);
                kept = end - whole;
            }
            None => kept = end,
        }
    }
}

/// Opens the regular file `path` itself for [`lines_in`]: a symbolic link there is refused with the `ELOOP` of
/// `O_NOFOLLOW`, as [`read_to_string_unlinked`] refuses it.
pub fn open_regular_unlinked(path: &Path) -> Result<(File, Metadata), ReadError> {
    regular(open_with(path, libc::O_NOFOLLOW)?)
}

/// Reads an opened regular file whole within `limit`. The stated size is a hint only: procfs and sysfs say 0,
/// and a file can grow while it is read, so at most `limit + 1` bytes are read. A file of the size it states
/// takes one `read` ([`read_into`]), not a second that returns nothing (a Python environment's two hundred
/// `METADATA` files at every run).
fn read_open(file: File, meta: &Metadata, limit: Limit) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::new();
    let n = fill(file, meta, limit, &mut out)?.len();
    out.truncate(n);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    const TINY: Limit = Limit {
        bytes: 16,
        what: "a test file",
    };

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("f");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(rc, 0);
        let start = Instant::now();
        let e = read(&fifo, TINY).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(e.to_string(), "is a FIFO (named pipe), not a regular file");
    }

    #[test]
    fn devices_and_directories_are_named() {
        let e = read(Path::new("/dev/zero"), TINY).unwrap_err();
        assert_eq!(e.to_string(), "is a character device, not a regular file");
        let t = tempfile::tempdir().unwrap();
        let e = read(t.path(), TINY).unwrap_err();
        assert_eq!(e.to_string(), "is a directory, not a regular file");
    }

    #[test]
    fn a_socket_is_named() {
        let t = tempfile::tempdir().unwrap();
        let s = t.path().join("s");
        let _listener = std::os::unix::net::UnixListener::bind(&s).unwrap();
        let e = read(&s, TINY).unwrap_err();
        assert_eq!(e.to_string(), "is a socket, not a regular file");
    }

    #[test]
    fn sizes_past_the_limit_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("big");
        let file = File::create(&f).unwrap();
        file.set_len(8 << 30).unwrap(); // sparse: costs no disk
        let e = read(&f, KERNEL_TEXT).unwrap_err();
        assert_eq!(
            e.to_string(),
            "is 8 GiB, more than the 1 MiB a /proc or /sys text file can be: not read"
        );
        std::fs::write(&f, [b'x'; 16]).unwrap();
        assert_eq!(read(&f, TINY).unwrap().len(), 16);
        std::fs::write(&f, [b'x'; 17]).unwrap();
        assert!(matches!(
            read(&f, TINY),
            Err(ReadError::TooLarge { size: Some(17), .. })
        ));
    }

    /// procfs files state a size of 0: the limit holds on what is read.
    #[test]
    fn procfs_sizes_are_not_trusted() {
        let p = Path::new("/proc/self/status");
        let small = Limit {
            bytes: 8,
            what: "a test file",
        };
        assert!(matches!(
            read(p, small),
            Err(ReadError::TooLarge { size: None, .. })
        ));
        assert!(read_to_string(p, KERNEL_TEXT).unwrap().contains("Name:"));
    }

    #[test]
    fn missing_is_told_from_unreadable() {
        let e = read(Path::new("/nonexistent/x"), TINY).unwrap_err();
        assert!(e.is_not_found());
        assert!(
            !ReadError::NotRegular {
                file_type: FileKind::Fifo
            }
            .is_not_found()
        );
    }

    #[test]
    fn read_into_reuses_its_buffer_and_keeps_the_limits() {
        let dir = tempfile::tempdir().unwrap();
        let (big, small) = (dir.path().join("big"), dir.path().join("small"));
        std::fs::write(&big, [b'x'; 40]).unwrap();
        std::fs::write(&small, b"0123456789").unwrap();
        let mut buffer = Vec::new();
        let limit = Limit {
            bytes: 64,
            what: "a test file",
        };
        assert_eq!(read_into(&big, limit, &mut buffer).unwrap(), &[b'x'; 40][..]);
        assert_eq!(read_into(&small, limit, &mut buffer).unwrap(), b"0123456789");
        assert!(buffer.len() >= 41, "kept for the next file");
        assert!(matches!(
            read_into(&big, TINY, &mut buffer),
            Err(ReadError::TooLarge { size: Some(40), .. })
        ));
        // procfs states no size: read on to the end, within the limit.
        if Path::new("/proc/self/status").exists() {
            let text = read_into(Path::new("/proc/self/status"), KERNEL_TEXT, &mut buffer).unwrap();
            assert!(text.ends_with(b"\n") && text.len() > 100, "{}", text.len());
            assert!(matches!(
                read_into(Path::new("/proc/self/status"), TINY, &mut buffer),
                Err(ReadError::TooLarge { size: None, .. })
            ));
        }
        assert!(matches!(
            read_into(dir.path(), limit, &mut buffer),
            Err(ReadError::NotRegular { .. })
        ));
    }

    /// Every byte once, in order, in runs of whole lines, whatever the buffer's size; the limit kept.
    #[test]
    fn lines_in_gives_whole_lines_in_order() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("f");
        let text = "a,1\nbb,2\r\n\nlong line of some length,3\nlast\r";
        std::fs::write(&path, text).unwrap();
        for size in [0, 1, 3, 7, 64, 1 << 16] {
            let mut buffer = vec![0; size];
            let mut runs: Vec<Vec<u8>> = Vec::new();
            let (file, meta) = open_regular(&path).unwrap();
            let n = lines_in(file, &meta, TINY_LINES, &mut buffer, |run| {
                runs.push(run.to_vec())
            })
            .unwrap();
            assert_eq!(n, text.len() as u64);
            assert_eq!(runs.concat(), text.as_bytes(), "buffer of {size}");
            let (last, whole) = runs.split_last().unwrap();
            assert!(whole.iter().all(|r| r.ends_with(b"\n")), "{runs:?}");
            assert!(!last.is_empty());
        }
        let (file, meta) = open_regular(&path).unwrap();
        let e = lines_in(file, &meta, TINY, &mut Vec::new(), |_| {}).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { .. }), "{e}");
    }

    const TINY_LINES: Limit = Limit {
        bytes: 64,
        what: "a test file",
    };

    #[test]
    fn sizes_read_well() {
        assert_eq!(size_text(1), "1 byte");
        assert_eq!(size_text(512), "512 bytes");
        assert_eq!(size_text(MIB), "1 MiB");
        assert_eq!(size_text(3 * MIB / 2), "1.5 MiB");
    }
}
