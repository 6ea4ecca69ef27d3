//! The NVIDIA Container Toolkit's `ldconfig` run, replayed on an image's unpacked tree after the driver's
//! libraries are mounted into it (`container::ldcache` says what ldconfig does and cites it): the tree's
//! `/etc/ld.so.cache` becomes the one the container's loader reads, so that a library the toolkit mounted in
//! a directory the image's loader does not search by default (`/usr/lib64` under a Debian-built `ld.so`), or
//! one a stale cache points elsewhere for, is found as in the container.
//!
//! What is approximated (`docs/container-images.md`, "What is not modelled"): the trusted directories are
//! both families a 64-bit glibc is built with (the node's `ldconfig` runs, whose build cudadiag cannot see);
//! glibc-hwcaps and legacy hwcap subdirectories are not scanned; an existing SONAME link is kept as it is
//! (ldconfig would point it at the newest file), a missing one is made.

use crate::container::ldcache::{self, CacheEntry};
use crate::diagnose::ToolError;
use crate::image::Image;
use crate::system::Root;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Files looked at over all directories: an image's library directories hold a few thousand.
const MAX_FILES: usize = 100_000;
/// `include` nesting followed in `ld.so.conf`.
const MAX_INCLUDE_DEPTH: usize = 8;
/// Configuration files read in all (each once): a hostile `include` of its own directory cannot multiply.
const MAX_CONF_FILES: usize = 512;
/// Directories scanned: a real configuration names a few dozen.
const MAX_DIRS: usize = 4096;
/// `FLAG_ELF_LIBC6`: what ldconfig writes for a 32-bit library.
const FLAG_32: i32 = 0x0003;

/// Rewrites the tree's `/etc/ld.so.cache` as `ldconfig -f /etc/ld.so.conf -C /etc/ld.so.cache DIRS…` leaves it
/// in the container (`command_line`: the directories the toolkit mounted libraries into), making the SONAME
/// links it would make. `machine`: `x86_64` or `aarch64`; `flags`: the cache flags of a 64-bit library there.
/// Returns the number of entries written.
pub(crate) fn regenerate(
    img: &Image,
    command_line: &[String],
    machine: &str,
    flags: i32,
) -> Result<usize, ToolError> {
    let root = img.root();
    let mut configured = Vec::new();
    let mut read = Vec::new();
    conf_dirs(&root, Path::new("/etc/ld.so.conf"), 0, &mut read, &mut configured);
    let order = ldcache::directory_order(command_line, &configured, &ldcache::trusted_directories(machine));
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut entries = Vec::new();
    let mut links = Vec::new();
    let mut budget = MAX_FILES;
    for dir in order.iter().take(MAX_DIRS) {
        let dir = Path::new(dir);
        let Ok(real) = root.resolve(dir) else {
            continue;
        };
        if seen.contains(&real) || !root.is_dir(&real) {
            continue;
        }
        seen.push(real);
        scan(&root, dir, flags, &mut budget, &mut entries, &mut links);
    }
    for (at, to) in &links {
        img.mount(at, b"", Some(to))?;
    }
    img.mount(Path::new("/etc/ld.so.cache"), &ldcache::write(&entries), None)?;
    Ok(entries.len())
}

/// The directories `conf` names, its `include`s expanded in place (sorted, as glob sorts them). `read`: the
/// files read so far (their real paths), each read once.
fn conf_dirs(root: &Root, conf: &Path, depth: usize, read: &mut Vec<PathBuf>, out: &mut Vec<String>) {
    let Ok(real) = root.resolve(conf) else {
        return;
    };
    if read.contains(&real) || read.len() >= MAX_CONF_FILES {
        return;
    }
    read.push(real);
    let Ok(text) = root.read_to_string(conf, crate::system::read::CONFIG_TEXT) else {
        return;
    };
    let (dirs, includes) = ldcache::parse_conf(&text);
    let mut next = 0;
    for inc in includes {
        out.extend(dirs[next..inc.at.min(dirs.len())].iter().cloned());
        next = inc.at.min(dirs.len());
        if depth >= MAX_INCLUDE_DEPTH {
            continue;
        }
        let pattern = match Path::new(&inc.pattern) {
            p if p.is_absolute() => p.to_path_buf(),
            p => conf.parent().unwrap_or(Path::new("/")).join(p),
        };
        let (Some(parent), Some(glob)) = (pattern.parent(), pattern.file_name().and_then(|g| g.to_str()))
        else {
            continue;
        };
        for file in root.read_dir(parent).unwrap_or_default() {
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if ldcache::glob_match(glob, name) && root.is_file(&file) {
                conf_dirs(root, &file, depth + 1, read, out);
            }
        }
    }
    out.extend(dirs[next..].iter().cloned());
}

/// One directory as ldconfig's `search_dir` enters it: each `lib*.so*`/`ld-*.so*` ELF file under its SONAME
/// at `DIR/SONAME` (a link named after what it points to, `libcuda.so -> libcuda.so.1`, under its own name);
/// a SONAME without its link gets one (`links`), to the file ldconfig prefers: a file over a link, then the
/// newest name.
fn scan(
    root: &Root,
    dir: &Path,
    flags: i32,
    budget: &mut usize,
    entries: &mut Vec<CacheEntry>,
    links: &mut Vec<(PathBuf, String)>,
) {
    // (key, file chosen, is a link, 64-bit)
    let mut found: Vec<(String, String, bool, bool)> = Vec::new();
    for path in root.read_dir(dir).unwrap_or_default() {
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
            continue;
        };
        if !(name.starts_with("lib") || name.starts_with("ld-")) || !name.contains(".so") {
            continue;
        }
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Some((soname, wide)) = library(root, &path) else {
            continue;
        };
        let soname = soname.unwrap_or_else(|| name.clone());
        let link_target = root
            .link_of(&root.host_path(&path))
            .ok()
            .flatten()
            .and_then(|t| t.file_name().and_then(|n| n.to_str()).map(str::to_string));
        let is_link = link_target.is_some();
        let key = match &link_target {
            // `libfoo.so -> libfoo.so.1`: the development link, entered under its own name.
            Some(t) if *t == soname && name != soname => name.clone(),
            _ => soname,
        };
        match found.iter_mut().find(|f| f.0 == key) {
            Some(f) => {
                let newer = crate::loader::cache::libcmp(&f.1, &name) == std::cmp::Ordering::Less;
                if (!is_link && f.2) || (is_link == f.2 && newer) {
                    f.1 = name;
                    f.2 = is_link;
                }
            }
            None => found.push((key, name, is_link, wide)),
        }
    }
    for (key, file, _, wide) in found {
        let at = dir.join(&key);
        if root.symlink_metadata(&at).is_err() {
            links.push((at.clone(), file));
        }
        entries.push(CacheEntry {
            name: key,
            path: at.display().to_string(),
            flags: if wide { flags } else { FLAG_32 },
        });
    }
}

/// A shared library's SONAME and whether it is 64-bit, when `path` (links followed) is an ELF shared object.
fn library(root: &Root, path: &Path) -> Option<(Option<String>, bool)> {
    let real = root.resolve(path).ok()?;
    if !root.is_file(&real) {
        return None;
    }
    let mut head = [0u8; 18];
    root.open(&real).ok()?.read_exact(&mut head).ok()?;
    // ELF magic, then EI_CLASS (1: 32-bit, 2: 64-bit); e_type ET_DYN (3), little-endian.
    if &head[..4] != b"\x7fELF" || head[16] != 3 || head[17] != 0 {
        return None;
    }
    let wide = head[4] == 2;
    match crate::host::libfile::examine(root, &real).shape {
        crate::facts::host::LibShape::Elf { soname, .. } => Some((soname, wide)),
        _ => None,
    }
}
