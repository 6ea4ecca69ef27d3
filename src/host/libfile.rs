//! What a driver library file holds, read through the root in a few bounded pieces: its size, whether it is
//! whole (headers and loadable segments inside the file), and the dynamic-section facts that tell the
//! toolkit's link stub from the driver's library.
//!
//! Why by content: the stub `libcuda.so` of a CUDA toolkit (`targets/<arch>/lib/stubs/`) is copied as
//! `libcuda.so.1` into application directories by Dockerfiles and conda recipes, where no `stubs` component
//! is left in its path; loaded, it makes every call return error 34 ("CUDA driver is a stub library"). The
//! CUDA 13.0 stub is 70,368 bytes, has the SONAME `libcuda.so.1`, no `DT_NEEDED` entry and no symbol versions
//! (no `DT_VERDEF`); the driver's libcuda (96 MB for 580.159.04, its version in its read-only data) needs libm,
//! libc, libdl, libpthread and librt. A real libcuda cannot work without libc, so "no `DT_NEEDED`" is what
//! decides; `docs/driver-libraries.md` gives the sources and what readelf showed.
//!
//! Why whole-file checks: an interrupted copy, a full disk during a driver install or a broken container layer
//! leaves `libnvidia-*.so` files empty or cut short. ld.so then stops with "file too short" or "ELF load
//! command past end of file" (glibc `elf/dl-load.c`), which users meet as a missing driver.
//!
//! Nothing here judges; [`LibFile::is_link_stub`] and [`LibFile::damage`] are what the facts say.

use crate::facts::host::{LibFile, LibShape};
use crate::system::Root;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The most bytes read from one file for program headers, the dynamic section, or one string.
const PIECE: u64 = 64 * 1024;

/// Reads the file at the machine path `real` (already resolved inside the root).
pub fn examine(root: &Root, real: &Path) -> LibFile {
    let path = real.display().to_string();
    let read = || -> std::io::Result<(u64, LibShape)> {
        let f = root.open(real)?;
        let size = f.metadata()?.len();
        Ok((size, shape(&f, size)))
    };
    match read() {
        Ok((size, shape)) => LibFile { path, size, shape },
        Err(e) => LibFile {
            path,
            size: 0,
            shape: LibShape::Unreadable {
                reason: e.to_string(),
            },
        },
    }
}

/// Reads up to `len` bytes (at most [`PIECE`]) at `off`; short at the end of the file.
fn piece(f: &impl FileExt, off: u64, len: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len.min(PIECE) as usize];
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], off + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    buf.truncate(got);
    buf
}

/// Little- or big-endian, 32- or 64-bit field reads.
struct Ctx {
    is64: bool,
    le: bool,
}

impl Ctx {
    fn u(&self, b: &[u8], off: usize, n: usize) -> Option<u64> {
        let s = b.get(off..off.checked_add(n)?)?;
        let mut v = 0u64;
        for i in 0..n {
            let byte = if self.le { s[n - 1 - i] } else { s[i] };
            v = (v << 8) | u64::from(byte);
        }
        Some(v)
    }
    /// A word: 8 bytes in ELF64, 4 in ELF32.
    fn w(&self, b: &[u8], off: usize) -> Option<u64> {
        self.u(b, off, if self.is64 { 8 } else { 4 })
    }
}

fn truncated(part: &str, end: u64) -> LibShape {
    LibShape::Truncated {
        part: part.into(),
        end,
    }
}

/// The shape of an open file of `size` bytes.
fn shape(f: &impl FileExt, size: u64) -> LibShape {
    if size == 0 {
        return LibShape::Empty;
    }
    let head = piece(f, 0, 64);
    if head.len() < 6 || &head[..4] != b"\x7fELF" || !matches!(head[4], 1 | 2) || !matches!(head[5], 1 | 2) {
        return LibShape::NotElf;
    }
    let c = Ctx {
        is64: head[4] == 2,
        le: head[5] == 1,
    };
    let ehsize: u64 = if c.is64 { 64 } else { 52 };
    if size < ehsize {
        return truncated("ELF header", ehsize);
    }
    let (phoff, shoff, rest) = if c.is64 { (32, 40, 54) } else { (28, 32, 42) };
    let field = |off, n| c.u(&head, off, n).unwrap_or(0);
    let (phoff, shoff) = (c.w(&head, phoff).unwrap_or(0), c.w(&head, shoff).unwrap_or(0));
    let (phentsize, phnum) = (field(rest, 2), field(rest + 2, 2));
    let (shentsize, shnum) = (field(rest + 4, 2), field(rest + 6, 2));
    let ph_end = phoff.saturating_add(phentsize.saturating_mul(phnum));
    if ph_end > size {
        return truncated("program headers", ph_end);
    }
    let sh_end = shoff.saturating_add(shentsize.saturating_mul(shnum));
    if shoff != 0 && sh_end > size {
        return truncated("section headers", sh_end);
    }
    let phdrs = piece(f, phoff, ph_end - phoff);
    let mut loads: Vec<(u64, u64, u64)> = Vec::new(); // (vaddr, offset, filesz)
    let mut dynamic = None;
    for i in 0..phnum as usize {
        let at = i * phentsize as usize;
        let Some(kind) = c.u(&phdrs, at, 4) else { break };
        let (off, vaddr, filesz) = if c.is64 {
            (c.w(&phdrs, at + 8), c.w(&phdrs, at + 16), c.w(&phdrs, at + 32))
        } else {
            (c.w(&phdrs, at + 4), c.w(&phdrs, at + 8), c.w(&phdrs, at + 16))
        };
        let (Some(off), Some(vaddr), Some(filesz)) = (off, vaddr, filesz) else {
            break;
        };
        let end = off.saturating_add(filesz);
        match kind {
            1 if end > size => return truncated(&format!("PT_LOAD segment {i}"), end),
            1 => loads.push((vaddr, off, filesz)),
            2 if end > size => return truncated("dynamic section", end),
            2 => dynamic = Some((off, filesz)),
            _ => {}
        }
    }
    let Some((off, len)) = dynamic else {
        return LibShape::Elf {
            soname: None,
            needed: Vec::new(),
            symbol_versions: false,
        };
    };
    dynamic_facts(f, &c, &piece(f, off, len), &loads)
}

/// `DT_SONAME`, `DT_NEEDED` and `DT_VERDEF` from the dynamic section's bytes; names are read from `DT_STRTAB`,
/// found in the file through the PT_LOAD segment that maps it.
fn dynamic_facts(f: &impl FileExt, c: &Ctx, dynamic: &[u8], loads: &[(u64, u64, u64)]) -> LibShape {
    const DT_NEEDED: u64 = 1;
    const DT_STRTAB: u64 = 5;
    const DT_SONAME: u64 = 14;
    const DT_VERDEF: u64 = 0x6fff_fffc;
    let entry = if c.is64 { 16 } else { 8 };
    let word = entry / 2;
    let (mut strtab, mut soname, mut needed, mut verdef) = (None, None, Vec::new(), false);
    for at in (0..dynamic.len()).step_by(entry) {
        let (Some(tag), Some(val)) = (c.w(dynamic, at), c.w(dynamic, at + word)) else {
            break;
        };
        match tag {
            0 => break,
            DT_NEEDED => needed.push(val),
            DT_STRTAB => strtab = Some(val),
            DT_SONAME => soname = Some(val),
            DT_VERDEF => verdef = true,
            _ => {}
        }
    }
    let file_off = strtab.and_then(|v| {
        loads
            .iter()
            .find(|(vaddr, _, filesz)| v >= *vaddr && v - vaddr < *filesz)
            .map(|(vaddr, off, _)| off + (v - vaddr))
    });
    let name = |o: u64| -> String {
        let Some(base) = file_off else {
            return format!("(string {o})");
        };
        let bytes = piece(f, base.saturating_add(o), 256);
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    };
    LibShape::Elf {
        soname: soname.map(name),
        needed: needed.into_iter().map(name).collect(),
        symbol_versions: verdef,
    }
}

/// The driver's library files in `dir`: `libcuda.so*` and `libnvidia-*.so*`, each real file once, at most
/// `limit` of them (a driver directory holds about forty).
pub fn driver_files_in(root: &Root, dir: &Path, limit: usize, out: &mut Vec<LibFile>) {
    let Ok(entries) = root.read_dir(dir) else {
        return;
    };
    let mut names: Vec<_> = entries
        .into_iter()
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                (n.starts_with("libcuda.so") || n.starts_with("libnvidia-")) && n.contains(".so")
            })
        })
        .collect();
    names.sort();
    for p in names.into_iter().take(limit) {
        let Ok(real) = root.resolve(&p) else { continue };
        if !root.is_file(&real) {
            continue;
        }
        let s = real.display().to_string();
        if !out.iter().any(|f| f.path == s) {
            out.push(examine(root, &real));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::put;

    fn shape_of(bytes: &[u8]) -> LibShape {
        let t = tempfile::tempdir().unwrap();
        put(t.path(), "/lib/x.so", bytes);
        examine(&Root::at(t.path()), Path::new("/lib/x.so")).shape
    }

    #[test]
    fn empty_text_and_cut_headers() {
        assert_eq!(shape_of(b""), LibShape::Empty);
        assert_eq!(shape_of(b"libcuda.so.550.90.07\n"), LibShape::NotElf);
        let mut h = vec![0u8; 64];
        h[..6].copy_from_slice(b"\x7fELF\x02\x01");
        assert_eq!(shape_of(&h[..40]), truncated("ELF header", 64));
        // 3 program headers of 56 bytes at 64: they end at 232, past a 64-byte file
        h[32] = 64;
        h[54] = 56;
        h[56] = 3;
        assert_eq!(shape_of(&h), truncated("program headers", 232));
    }
}
