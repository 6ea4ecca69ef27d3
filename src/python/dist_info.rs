//! Which pip distribution installed a file, read from pip's own record wherever the files are.
//!
//! An installed distribution is a `<name>-<version>.dist-info` directory beside the files it installed, and
//! its `RECORD` lists each of them by its path relative to that directory's parent (the Python packaging
//! "Recording installed projects" specification, formerly PEP 376/627; `docs/pip-ownership.md`). That parent
//! is a `site-packages` for a plain install, but just as well a `pip install --target DIR`, a `PYTHONPATH`
//! entry, a Bazel `rules_python` repository or a Spack prefix: the directory's name says nothing, the `RECORD`
//! says everything. So the owner of a file is found by walking up from it to the first directory whose
//! `*.dist-info/RECORD` lists it by that relative path.
//!
//! Lazy and bounded: nothing is read until a question names a file; each directory is listed once and each
//! `RECORD` read once per [`Records`] (torch's lists some twelve thousand files, and many of torch's objects
//! ask); at most [`MAX_LEVELS`] directories up from a file; the distributions whose names match the file's
//! path are read first (`torch/lib/x.so` → `torch-*.dist-info`, `nvidia/cudnn/lib/x.so` →
//! `nvidia_cudnn_cu13-*.dist-info`), and at most [`MAX_RECORDS`] `RECORD`s and [`MAX_RECORD_BYTES`] in all. Every read goes through
//! the root (`crate::system::read`'s cap for package metadata).

use crate::inspect::pep508::normalise;
use crate::system::{Root, read};
use foldhash::HashMap;
use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Directories walked up from a file (`site-packages/nvidia/cu13/lib/x.so` is four up).
pub const MAX_LEVELS: usize = 8;

/// `RECORD` files read at most by one [`Records`], so a directory of thousands of distributions, none of
/// which owns the file, cannot turn one question into thousands of reads.
pub const MAX_RECORDS: usize = 64;

/// Bytes of `RECORD`s read at most by one [`Records`] (torch 2.15's, the largest of a CUDA venv, is 1.3 MB):
/// what a hostile tree of 64 huge `RECORD`s could make it hold or read.
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// `.dist-info` directories kept per directory listed: a directory of a million entries costs its listing,
/// not its memory.
pub const MAX_INFOS: usize = 10_000;

/// A file's owning distribution, as its `RECORD` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    /// The directory the distribution was installed into (the `.dist-info`'s parent: a `site-packages`,
    /// a `--target` directory, a `PYTHONPATH` entry).
    pub dir: PathBuf,
    /// Its `.dist-info` directory.
    pub info: PathBuf,
}

/// The `.dist-info` directories met and the `RECORD`s read, for one run of questions.
#[derive(Debug, Default)]
pub struct Records {
    /// Directory → its `.dist-info` entries (empty for most directories), each with its distribution's name.
    infos: HashMap<PathBuf, Arc<[Info]>>,
    /// `.dist-info` → what was read of its `RECORD`.
    records: HashMap<PathBuf, Record>,
    /// Bytes of `RECORD`s read so far.
    bytes: u64,
    /// File → its owner, once asked.
    owners: HashMap<PathBuf, Option<Owned>>,
}

impl Records {
    /// The distribution whose `RECORD` lists `path` (a machine path, as opened or real), looking in at most
    /// [`MAX_LEVELS`] directories above it.
    pub fn owner(&mut self, root: &Root, path: &Path) -> Option<Owned> {
        if let Some(known) = self.owners.get(path) {
            return known.clone();
        }
        let found = self.find(root, path);
        self.owners.insert(path.to_path_buf(), found.clone());
        found
    }

    /// The owner of an object the loader mapped: by its real path first (where a symlink farm's files
    /// really are, and their `RECORD`), then by the path it was opened as.
    pub fn owner_of(&mut self, root: &Root, real: &str, opened: &str) -> Option<Owned> {
        self.owner(root, Path::new(real)).or_else(|| {
            (opened != real)
                .then(|| self.owner(root, Path::new(opened)))
                .flatten()
        })
    }

    fn find(&mut self, root: &Root, path: &Path) -> Option<Owned> {
        let mut dir = path.parent();
        for _ in 0..MAX_LEVELS {
            let d = dir?;
            let rel = path.strip_prefix(d).ok()?.to_string_lossy().into_owned();
            let infos = self.infos_of(root, d);
            if !infos.is_empty() {
                let words = words_of(&rel);
                // Most matching first; a distribution sharing no word with the path comes last, ties in
                // directory order. Each name scored once, from its name normalised when the directory was listed.
                let mut order: Vec<_> = infos
                    .iter()
                    .enumerate()
                    .map(|(k, i)| (std::cmp::Reverse(normalised_score(&i.name, &words)), k))
                    .collect();
                order.sort_unstable();
                for (_, k) in order {
                    let info = &infos[k].path;
                    if !self.records.contains_key(info)
                        && (self.records.len() >= MAX_RECORDS || self.bytes >= MAX_RECORD_BYTES)
                    {
                        break;
                    }
                    if self.lists(root, info, &rel) {
                        return Some(Owned {
                            dir: d.to_path_buf(),
                            info: info.clone(),
                        });
                    }
                }
            }
            dir = d.parent();
        }
        None
    }

    /// The `.dist-info` directories in `dir`, listed once, each with its distribution's name normalised: once
    /// for the run by a remembering root, whose every question of the origins (one per object, each with a
    /// `Records` of its own) lists the same `site-packages`.
    fn infos_of(&mut self, root: &Root, dir: &Path) -> Arc<[Info]> {
        self.infos
            .entry(dir.to_path_buf())
            .or_insert_with(|| {
                let listed = root.remember(dir, || {
                    let infos: Arc<[Info]> = dist_infos(root, dir)
                        .into_iter()
                        .map(|path| Info {
                            name: key_of(&path),
                            path,
                        })
                        .collect();
                    let held = infos
                        .iter()
                        .map(|i| (i.path.as_os_str().len() + i.name.len()) as u64 + 48)
                        .sum();
                    (infos, held)
                });
                Arc::clone(&listed)
            })
            .clone()
    }

    fn lists(&mut self, root: &Root, info: &Path, rel: &str) -> bool {
        let bytes = &mut self.bytes;
        let record = self.records.entry(info.to_path_buf()).or_default();
        if rel.contains(".so") {
            let libraries = record.libraries.get_or_insert_with(|| {
                let libraries = Libraries::of(root, &info.join("RECORD"));
                *bytes += libraries.bytes;
                libraries
            });
            return libraries.lists(rel);
        }
        record
            .text
            .get_or_insert_with(|| {
                let text = root
                    .read_text(&info.join("RECORD"), read::PACKAGE_METADATA)
                    .ok()?;
                *bytes += text.len() as u64;
                Some(text)
            })
            .as_deref()
            .is_some_and(|text| record_lists(text, rel))
    }
}

/// A `.dist-info` directory and its distribution's name from the directory's name, normalised
/// (`nvidia_cublas-13.1.0.3.dist-info` → `nvidia-cublas`): what [`Records`] scores against a file's path.
#[derive(Debug)]
struct Info {
    path: PathBuf,
    name: String,
}

/// The distribution's name in a `.dist-info` directory's name, normalised (`Nvidia_CUDNN_cu13-9.19.0.56.dist-info`
/// → `nvidia-cudnn-cu13`): the text before the first `-`, `.dist-info` aside, as `importlib.metadata`'s `Lookup`
/// takes it. Empty for a directory named `-….dist-info`.
pub fn key_of(info: &Path) -> String {
    let name = info.file_name().unwrap_or_default().to_string_lossy();
    let stem = name.strip_suffix(".dist-info").unwrap_or(&name);
    normalise(stem.split('-').next().unwrap_or_default())
}

/// What one [`Records`] read of a `RECORD`: what it lists of shared objects (the question asked of it nearly
/// always: who installed this library?), and its text when asked of another file.
#[derive(Debug, Default)]
struct Record {
    libraries: Option<Arc<Libraries>>,
    /// The text, `None` when it could not be read ([`record_lists`] searches it).
    text: Option<Option<Arc<String>>>,
}

/// The paths a `RECORD` lists ([`record_paths`]) that hold `.so`, sorted: all that the owner of a shared object
/// needs of it, read a piece at a time and shared by the run through the root's memo. Torch's `RECORD` is 1.3
/// MB of twelve thousand lines, of which fourteen name a `.so`: read whole, it cost a 1.3 MB allocation zeroed
/// and kept for the run, and a tenth of the loader tree's time.
#[derive(Debug)]
struct Libraries {
    /// `None` when the `RECORD` could not be read, or is not UTF-8 text (as [`Root::read_text`] fails).
    paths: Option<Vec<Box<str>>>,
    /// Bytes of the `RECORD` read.
    bytes: u64,
}

/// The paths the `RECORD` at `record` lists that hold `.so` (as [`record_paths`] takes them, sorted) given to
/// `f`; `None` when it cannot be read or is not UTF-8. Read once per run by a remembering root, for every part
/// that asks: the host's owners of its libraries and the import models' owners of what they load read
/// torch's 1.3 MB `RECORD` once between them.
pub fn with_record_libraries<R>(root: &Root, record: &Path, f: impl FnOnce(&[Box<str>]) -> R) -> Option<R> {
    Libraries::of(root, record).paths.as_deref().map(f)
}

impl Libraries {
    fn of(root: &Root, record: &Path) -> Arc<Libraries> {
        root.remember(record, || {
            let mut paths = Vec::new();
            let mut text = true;
            let read = root.read_lines(record, read::PACKAGE_METADATA, |block| {
                text = text && library_paths(block, &mut paths);
            });
            let (paths, bytes, held) = match read {
                Ok(bytes) if text => {
                    paths.sort_unstable();
                    paths.dedup();
                    let held = paths.iter().map(|p| p.len() as u64 + 16).sum();
                    (Some(paths), bytes, held)
                }
                Ok(bytes) => (None, bytes, 0),
                Err(_) => (None, 0, 0),
            };
            (Libraries { paths, bytes }, held)
        })
    }

    /// Does the `RECORD` list `rel`, a path that holds `.so`? The answer of [`record_lists`].
    fn lists(&self, rel: &str) -> bool {
        self.paths
            .as_ref()
            .is_some_and(|p| p.binary_search_by(|x| (**x).cmp(rel)).is_ok())
    }
}

/// Adds to `out` the paths of the `RECORD` lines of `block` (whole lines, as [`read::lines_in`] gives them)
/// that hold `.so`, as [`record_paths`] takes them; `false` when `block` is not UTF-8. Only the lines around a
/// `.so` are looked at: taking `.` and `..` out of a path, or the quotes off a field, never makes a `.so`.
fn library_paths(block: &[u8], out: &mut Vec<Box<str>>) -> bool {
    let Ok(text) = std::str::from_utf8(block) else {
        return false;
    };
    let bytes = text.as_bytes();
    let mut done = 0;
    for at in memchr::memmem::find_iter(bytes, b".so") {
        if at < done {
            continue;
        }
        let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
        let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
        done = end + 1;
        // As `str::lines`: a `\r` before the `\n` ends the line with it; one at the very end stays.
        let line = &text[start..end];
        let line = match end < bytes.len() {
            true => line.strip_suffix('\r').unwrap_or(line),
            false => line,
        };
        if let Some(path) = first_field(line).and_then(record_path)
            && path.contains(".so")
        {
            out.push(path.into_boxed_str());
        }
    }
    true
}

/// The lower-case words of a path inside an install directory, for matching distribution names:
/// `nvidia/cu13/lib/libcublasLt.so.13` → nvidia, cu13, lib, cublaslt.
pub fn words_of(rel: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for part in rel.split('/') {
        let stem = part.split(".so").next().unwrap_or(part);
        let stem = stem.strip_prefix("lib").filter(|s| !s.is_empty()).unwrap_or(stem);
        words.extend(normalise(stem).split('-').map(str::to_string));
    }
    words
}

/// Words that name no particular distribution (`nvidia_cublas`, `nvidia_cudnn_cu13`, `nvidia/cu13/lib`).
const GENERIC: &[&str] = &["nvidia", "cu11", "cu12", "cu13", "lib", "libs", "py3", "python"];

/// How well the distribution name `name` matches the words of a path relative to its install directory:
/// the longest particular word of the name that begins a word of the path, then the words shared. Higher is
/// likelier to be the path's owner.
pub fn name_score(name: &str, rel: &str) -> (usize, usize) {
    words_score(name, &words_of(rel))
}

/// [`name_score`] of a path already taken apart ([`words_of`]), for a caller that scores many names against one.
pub fn words_score(name: &str, words: &[String]) -> (usize, usize) {
    normalised_score(&normalise(name), words)
}

/// How well a distribution's name, normalised ([`normalise`]), matches a path's words ([`words_of`]): first the
/// longest particular word of the name that begins a word of the path (`nvidia_cuda_runtime` for
/// `libcudart.so.13`: cuda, 4; `nvidia_cublas` for `libcublasLt.so.13`: cublas, 6; `nvidia_cudnn_cu13` for
/// `nvidia/cudnn/lib/libcudnn.so.9`: cudnn, 5), then how many of its words the path has.
pub fn normalised_score(dist: &str, words: &[String]) -> (usize, usize) {
    let mut longest = 0;
    let mut shared = 0;
    for w in dist.split('-') {
        if words.iter().any(|p| p == w) {
            shared += 1;
        }
        if !GENERIC.contains(&w) && words.iter().any(|p| p.starts_with(w)) {
            longest = longest.max(w.len());
        }
    }
    (longest, shared)
}

/// The paths a `RECORD`'s text lists inside its install directory, `/`-separated and relative to it: each
/// line's first CSV field, quoted when it holds a comma or a quote; a path through `.` or `..` is taken
/// lexically (scripts and data files installed elsewhere, `../../../bin/x`, stay outside and are left out).
pub fn record_paths(text: &str) -> HashSet<String> {
    // Sized once (torch's RECORD has twelve thousand lines: growing the set rehashed them all, again and again).
    let mut paths = HashSet::with_capacity(memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1);
    paths.extend(text.lines().filter_map(first_field).filter_map(record_path));
    paths
}

/// A `RECORD` line's first field as a path inside the install directory (`None`: it leads outside).
fn record_path(f: std::borrow::Cow<'_, str>) -> Option<String> {
    // Only a path with a `.` component (which begins the path or follows a `/`) is taken apart.
    let dotted = (f.starts_with('.') || f.contains("/.")) && f.split('/').any(|c| c == ".." || c == ".");
    if dotted {
        Some(normal(&f)).filter(|n| !n.starts_with(".."))
    } else {
        Some(f.into_owned())
    }
}

/// [`record_paths`], sorted: a sort and a pass for duplicates, no hashing (for the whole list of a
/// distribution's files; torch's hashed and then sorted cost 20 M instructions of `cudadiag import torch`).
pub fn record_paths_sorted(text: &str) -> Vec<String> {
    let mut paths: Vec<String> = text
        .lines()
        .filter_map(first_field)
        .filter_map(record_path)
        .collect();
    paths.sort_unstable();
    paths.dedup();
    paths
}

/// Does a `RECORD`'s text list `rel` (a `/`-separated path relative to the install directory)? The same
/// answer as `record_paths(text).contains(rel)`, by one search of the text for a line that begins with `rel`
/// (torch's `RECORD` has twelve thousand lines, and hashing each was most of the loader's reading of it); only
/// the lines a plain search cannot judge (quoted fields, paths through `.` or `..`) are parsed.
pub fn record_lists(text: &str, rel: &str) -> bool {
    // `record_paths` holds no path with a `.` or `..` component (but leading `..`s, which it leaves out).
    if rel.split('/').any(|c| c == "." || c == "..") {
        return false;
    }
    let bytes = text.as_bytes();
    let ends_field = |at: usize| match bytes.get(at) {
        None | Some(b',' | b'\n') => true,
        Some(b'\r') => bytes.get(at + 1) == Some(&b'\n'),
        _ => false,
    };
    // A name with a comma or a line break, or one that begins with a quote (never a real file's), is left to
    // the parse of every line.
    if rel.is_empty() || rel.contains([',', '\n', '\r']) || rel.starts_with('"') {
        return record_paths(text).contains(rel);
    }
    for at in memchr::memmem::find_iter(bytes, rel.as_bytes()) {
        if (at == 0 || bytes[at - 1] == b'\n') && ends_field(at + rel.len()) {
            return true;
        }
    }
    // Most RECORDs have no line the plain search cannot judge: one pass over the text says so.
    let odd = |l: &str| l.starts_with('"') || l.starts_with('.') || l.contains("/.");
    if !(odd(text) || text.contains("\n\"") || text.contains("\n.") || text.contains("/.")) {
        return false;
    }
    text.lines().filter(|l| odd(l)).filter_map(first_field).any(|f| {
        if f.split('/').any(|c| c == ".." || c == ".") {
            normal(&f) == rel
        } else {
            f == rel
        }
    })
}

/// The first field of a CSV line (RFC 4180 quoting, as Python's `csv` module writes it).
fn first_field(line: &str) -> Option<std::borrow::Cow<'_, str>> {
    let Some(rest) = line.strip_prefix('"') else {
        let end = memchr::memchr(b',', line.as_bytes()).unwrap_or(line.len());
        return Some(line[..end].into());
    };
    let mut out = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' {
            if chars.peek() == Some(&'"') {
                chars.next();
                out.push('"');
            } else {
                return Some(out.into());
            }
        } else {
            out.push(c);
        }
    }
    None
}

/// A relative path with `.` and `..` taken away lexically (`a/../b` → `b`); a path that climbs out of its
/// directory keeps its leading `..`s, so it never equals a path inside it.
fn normal(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in Path::new(p).components() {
        match c {
            Component::Normal(n) => parts.push(n.to_str().unwrap_or_default()),
            Component::ParentDir if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            Component::ParentDir => parts.push(".."),
            _ => {}
        }
    }
    parts.join("/")
}

/// The tool that installed a distribution (`pip`, `uv`, `conda`), from its `INSTALLER` file.
pub fn installer(root: &Root, info: &Path) -> String {
    root.read_to_string(&info.join("INSTALLER"), read::PACKAGE_METADATA)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The `.dist-info` entries of `dir` inside the root, sorted, at most [`MAX_INFOS`] of them. A remembering
/// root lists `dir` once for the run (the owner of each library, the origins, the environment and the sites
/// all ask for a `site-packages`).
pub fn dist_infos(root: &Root, dir: &Path) -> Vec<PathBuf> {
    let dist_info = |n: &std::ffi::OsStr| n.as_encoded_bytes().ends_with(b".dist-info");
    let Ok(names) = root.read_dir_names_within(dir, MAX_INFOS, dist_info) else {
        return Vec::new();
    };
    names.into_iter().map(|n| dir.join(n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.dist-info` directory names its distribution as `importlib.metadata` reads it: the text before the
    /// first `-`, without the suffix, normalised.
    #[test]
    fn a_dist_info_directory_names_its_distribution() {
        let k = |s: &str| key_of(Path::new(s));
        assert_eq!(k("/s/Nvidia_CUDNN_cu13-9.19.0.56.dist-info"), "nvidia-cudnn-cu13");
        assert_eq!(k("/s/jax.cuda12.plugin-0.4.35.dist-info"), "jax-cuda12-plugin");
        assert_eq!(k("/s/torch.dist-info"), "torch");
        assert_eq!(k("/s/-1.0.dist-info"), "");
    }

    /// The libraries read a piece at a time are [`record_paths`] that hold `.so`, whatever the pieces; a
    /// `RECORD` that is not UTF-8 lists nothing, as when it is read whole.
    #[test]
    fn a_records_libraries_are_its_paths_that_hold_so() {
        let text = "torch/lib/libc10.so,sha256=x,1\r\ntorch/lib/libc10.so.1,,\nx/libonly.so\n\
                    \"odd,name/libx.so\",,\n\"quoted/plain.so\",,\n./dot/lib.so,,\na/./b/../libq.so,,\n\
                    ../../../bin/tool,,\n../up/lib.so,,\nlone/cr.so\r,,\ntorch/lib/libc10.soX,,\n  torch/lib/sp.so,,\n\
                    .hidden/lib.so,,\nx.so/y.so,,\nnot/a/library.py,,\n\"q\"\".so\",,\nlast/no_newline.so\r";
        let mut want: Vec<String> = record_paths(text)
            .into_iter()
            .filter(|p| p.contains(".so"))
            .collect();
        want.sort();
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("RECORD");
        std::fs::write(&path, text).unwrap();
        for size in [0, 5, 17, 64, 1 << 16] {
            let mut got = Vec::new();
            let (file, meta) = read::open_regular(&path).unwrap();
            read::lines_in(file, &meta, read::PACKAGE_METADATA, &mut vec![0; size], |b| {
                assert!(library_paths(b, &mut got));
            })
            .unwrap();
            got.sort();
            got.dedup();
            let got: Vec<String> = got.into_iter().map(String::from).collect();
            assert_eq!(got, want, "buffer of {size}");
        }
        // Through a root, remembered: the same answers as the search of the text, for every path asked.
        crate::system::put(t.path(), "/s/d-1.dist-info/RECORD", text.as_bytes());
        let root = Root::at(t.path()).remembering();
        let record = Path::new("/s/d-1.dist-info/RECORD");
        let libraries = Libraries::of(&root, record);
        assert!(std::sync::Arc::ptr_eq(&libraries, &Libraries::of(&root, record)));
        assert_eq!(libraries.bytes, text.len() as u64);
        let mut asked: Vec<&str> = want.iter().map(String::as_str).collect();
        asked.extend([
            "lib/libc10.so",
            "torch/lib/libc10.sox",
            "a/./libq.so",
            "up/lib.so",
            "lone/cr.so\r",
        ]);
        for rel in asked {
            assert_eq!(libraries.lists(rel), record_lists(text, rel), "{rel:?}");
        }
        crate::system::put(t.path(), "/s/bad-1.dist-info/RECORD", b"ok.so,,\n\xff.so,,\n");
        let bad = Libraries::of(&root, Path::new("/s/bad-1.dist-info/RECORD"));
        assert!(bad.paths.is_none() && !bad.lists("ok.so"));
    }

    #[test]
    fn record_lists_answers_as_the_set_of_record_paths() {
        let text = "torch/lib/libc10.so,sha256=x,1\r\ntorch/lib/libc10.so.1,,\nx/libonly.so\n\
                    \"odd,name/libx.so\",,\n\"quoted/plain.so\",,\n./dot/lib.so,,\na/./b/../libq.so,,\n\
                    ../../../bin/tool,,\nlone/cr.so\r,,\ntorch/lib/libc10.soX,,\n  torch/lib/sp.so,,\n\
                    .hidden/lib.so,,\nlast/no_newline.so\r";
        let paths = record_paths(text);
        let mut asked: Vec<String> = paths.iter().cloned().collect();
        for line in text.lines() {
            asked.push(line.to_string());
            asked.extend(line.split(',').map(str::to_string));
        }
        asked.extend(
            [
                "torch/lib",
                "torch/lib/libc10",
                "lib/libc10.so",
                "bin/tool",
                "../../../bin/tool",
                "a/./libq.so",
            ]
            .map(String::from),
        );
        asked.extend(
            [
                "dot/lib.so",
                "a/libq.so",
                "quoted/plain.so",
                "lone/cr.so",
                "last/no_newline.so",
                "",
            ]
            .map(String::from),
        );
        let with_empty_line = format!("{text}\n\nz.so,,\n");
        assert_eq!(
            record_lists(&with_empty_line, ""),
            record_paths(&with_empty_line).contains("")
        );
        for rel in &asked {
            assert_eq!(record_lists(text, rel), paths.contains(rel.as_str()), "{rel:?}");
        }
        // A path listed twice is one path.
        let twice = format!("{text}\ntorch/lib/libc10.so,,\n");
        let mut sorted: Vec<String> = record_paths(&twice).into_iter().collect();
        sorted.sort();
        assert_eq!(record_paths_sorted(&twice), sorted);
    }

    #[test]
    fn record_fields_quoted_and_relative() {
        let text = "torch/lib/libc10.so,sha256=x,1\n\"odd,name/libx.so\",,\n../../../bin/tool,,\n\
                    nvidia/cu13/lib/libcublas.so.13,sha256=y,2\n";
        assert!(record_lists(text, "torch/lib/libc10.so"));
        assert!(record_lists(text, "odd,name/libx.so"));
        assert!(record_lists(text, "nvidia/cu13/lib/libcublas.so.13"));
        assert!(!record_lists(text, "nvidia/cu13/lib/libcublasLt.so.13"));
        assert!(!record_lists(text, "lib/libc10.so"), "a suffix is not the path");
        assert!(!record_lists(text, "bin/tool"), "outside the install directory");
        assert!(record_lists("a/./b/../libq.so,,\n", "a/libq.so"));
        assert_eq!(first_field("\"a\"\"b\",x").as_deref(), Some("a\"b"));
        assert_eq!(first_field("\"unterminated"), None);
    }

    #[test]
    fn names_matching_the_path_come_first() {
        let rank = |rel: &str, dists: &[&str]| {
            let w = words_of(rel);
            let mut d: Vec<PathBuf> = dists.iter().map(|n| Path::new("/s").join(n)).collect();
            d.sort_by_key(|i| std::cmp::Reverse(normalised_score(&key_of(i), &w)));
            d[0].file_name().unwrap().to_string_lossy().into_owned()
        };
        let site = [
            "filelock-4.3.2.dist-info",
            "nvidia_cublas-13.4.1.3.dist-info",
            "nvidia_cuda_runtime-13.2.86.dist-info",
            "nvidia_cudnn_cu13-9.26.0.51.dist-info",
            "nvidia_cusparse-12.7.10.12.dist-info",
            "nvidia_cusparselt_cu13-0.8.1.dist-info",
            "torch-2.15.0.dist-info",
        ];
        for (rel, first) in [
            (
                "nvidia/cudnn/lib/libcudnn.so.9",
                "nvidia_cudnn_cu13-9.26.0.51.dist-info",
            ),
            (
                "nvidia/cu13/lib/libcublasLt.so.13",
                "nvidia_cublas-13.4.1.3.dist-info",
            ),
            (
                "nvidia/cu13/lib/libcudart.so.13",
                "nvidia_cuda_runtime-13.2.86.dist-info",
            ),
            (
                "nvidia/cusparselt/lib/libcusparseLt.so.0",
                "nvidia_cusparselt_cu13-0.8.1.dist-info",
            ),
            ("torch/lib/libtorch_cuda.so", "torch-2.15.0.dist-info"),
        ] {
            assert_eq!(rank(rel, &site), first, "{rel}");
        }
    }

    /// `pip install --target`: no `site-packages` anywhere, and the RECORD still names the owner; a file no
    /// RECORD lists has none.
    #[test]
    fn owners_wherever_pip_installed() {
        let t = tempfile::tempdir().unwrap();
        let put = |p: &str, b: &str| crate::system::put(t.path(), p, b.as_bytes());
        put("/deps/nvidia/cu13/lib/libcublas.so.13", "");
        put("/deps/nvidia/cu13/lib/stray.so", "");
        put(
            "/deps/nvidia_cublas-13.4.1.3.dist-info/RECORD",
            "nvidia/cu13/lib/libcublas.so.13,sha256=x,0\n",
        );
        put(
            "/deps/nvidia_cuda_runtime-13.2.86.dist-info/RECORD",
            "nvidia/cu13/lib/libcudart.so.13,,\n",
        );
        let root = Root::at(t.path());
        let mut r = Records::default();
        let o = r
            .owner(&root, Path::new("/deps/nvidia/cu13/lib/libcublas.so.13"))
            .unwrap();
        assert_eq!(o.dir, Path::new("/deps"));
        assert_eq!(o.info, Path::new("/deps/nvidia_cublas-13.4.1.3.dist-info"));
        assert!(
            r.owner(&root, Path::new("/deps/nvidia/cu13/lib/stray.so"))
                .is_none()
        );
        assert!(r.owner(&root, Path::new("/elsewhere/libx.so")).is_none());
    }

    /// Each question of the origins has a `Records` of its own: on a remembering root they share one listing
    /// of a directory's distributions, names normalised, and still answer alike.
    #[test]
    fn records_of_one_remembering_root_share_a_directorys_listing() {
        let t = tempfile::tempdir().unwrap();
        let put = |p: &str, b: &str| crate::system::put(t.path(), p, b.as_bytes());
        put("/s/nvidia/cu13/lib/libcublas.so.13", "");
        put(
            "/s/nvidia_cublas-13.4.1.3.dist-info/RECORD",
            "nvidia/cu13/lib/libcublas.so.13,sha256=x,0\n",
        );
        put("/s/Torch-2.15.0.dist-info/RECORD", "torch/__init__.py,,\n");
        let lib = Path::new("/s/nvidia/cu13/lib/libcublas.so.13");
        let root = Root::at(t.path()).remembering();
        let (mut a, mut b) = (Records::default(), Records::default());
        let (la, lb) = (
            a.infos_of(&root, Path::new("/s")),
            b.infos_of(&root, Path::new("/s")),
        );
        assert!(Arc::ptr_eq(&la, &lb));
        let names: Vec<&str> = la.iter().map(|i| i.name.as_str()).collect();
        // In the order of the directory's names (`Torch-…` before `nvidia_…`), normalised.
        assert_eq!(names, ["torch", "nvidia-cublas"]);
        let (oa, ob) = (a.owner(&root, lib).unwrap(), b.owner(&root, lib).unwrap());
        assert_eq!(oa.info, ob.info);
        assert_eq!(oa.info, Path::new("/s/nvidia_cublas-13.4.1.3.dist-info"));
        // A root that does not remember lists the directory for each.
        let plain = Root::at(t.path());
        let (mut c, mut d) = (Records::default(), Records::default());
        assert!(!Arc::ptr_eq(
            &c.infos_of(&plain, Path::new("/s")),
            &d.infos_of(&plain, Path::new("/s"))
        ));
    }

    /// A directory of many distributions, none of which owns the file: at most [`MAX_RECORDS`] `RECORD`s are
    /// read, once each, however often the question is asked.
    #[test]
    fn many_distributions_are_read_within_the_bound() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..100 {
            crate::system::put(
                t.path(),
                &format!("/s/pkg{i}-1.0.dist-info/RECORD"),
                b"pkg/x.py,,\n",
            );
        }
        crate::system::put(t.path(), "/s/nvidia/cu13/lib/libcublas.so.13", b"");
        let root = Root::at(t.path());
        let mut r = Records::default();
        for _ in 0..3 {
            assert!(
                r.owner(&root, Path::new("/s/nvidia/cu13/lib/libcublas.so.13"))
                    .is_none()
            );
            assert!(r.owner(&root, Path::new("/s/nvidia/cu13/lib/other.so")).is_none());
        }
        assert_eq!(r.records.len(), MAX_RECORDS);
    }

    /// A Spack view or a Bazel runfiles tree: the file is opened through a link farm that holds no
    /// `.dist-info`; its real path is in the store beside its `RECORD`.
    #[test]
    fn a_link_farms_file_is_owned_by_its_real_paths_record() {
        let t = tempfile::tempdir().unwrap();
        crate::system::put(t.path(), "/store/nccl/site/nvidia/nccl/lib/libnccl.so.2", b"");
        crate::system::put(
            t.path(),
            "/store/nccl/site/nvidia_nccl_cu13-2.30.7.dist-info/RECORD",
            b"nvidia/nccl/lib/libnccl.so.2,,\n",
        );
        std::fs::create_dir_all(t.path().join("view/nvidia/nccl/lib")).unwrap();
        std::os::unix::fs::symlink(
            "/store/nccl/site/nvidia/nccl/lib/libnccl.so.2",
            t.path().join("view/nvidia/nccl/lib/libnccl.so.2"),
        )
        .unwrap();
        let root = Root::at(t.path());
        let mut r = Records::default();
        let o = r
            .owner_of(
                &root,
                "/store/nccl/site/nvidia/nccl/lib/libnccl.so.2",
                "/view/nvidia/nccl/lib/libnccl.so.2",
            )
            .unwrap();
        assert_eq!(o.dir, Path::new("/store/nccl/site"));
        assert!(
            r.owner(&root, Path::new("/view/nvidia/nccl/lib/libnccl.so.2"))
                .is_none()
        );
    }
}
