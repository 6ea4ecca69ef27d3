//! `inspect`: bytes in, owned [`BinaryFacts`] out.
//!
//! The file is memory-mapped and only the parts a question needs are touched: ELF headers, the dynamic
//! section, fatbin container and entry headers, and payloads only when [`Depth`] asks for them. Nothing here
//! executes or loads the inspected file. Damage is never an error: it becomes a [`Problem`] in the facts and
//! the rest of the file is still reported. Only failing to open or read the file is an [`InspectError`].

pub mod a64;
pub mod budget;
pub mod cubin;
pub mod decompress;
pub mod elf;
pub mod elfparse;
pub mod exports;
pub mod fatbin;
pub mod guard;
pub mod input;
pub mod nccl;
mod options;
pub mod pep508;
pub mod pieces;
pub mod ptx;
pub mod ptxas;
pub(crate) mod source;
pub mod wheel;

use crate::facts::{BinaryFacts, CodeKind, Compression, DeviceCode, Format, Problem, ProblemKind};
use input::Input;
pub use options::{Depth, InspectOptions};
use std::path::Path;

/// Failure to read an input at all.
#[derive(Debug)]
pub struct InspectError {
    /// The input.
    pub path: String,
    /// What went wrong.
    pub error: std::io::Error,
}

impl std::fmt::Display for InspectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot read {}: {}", self.path, self.error)
    }
}

impl std::error::Error for InspectError {}

/// Inspects one file. A static archive gives one [`BinaryFacts`] per member.
pub fn path(path: &Path, opts: &InspectOptions) -> Result<Vec<BinaryFacts>, InspectError> {
    path_if(path, opts, |_| true).map(Option::unwrap_or_default)
}

/// [`path`] for a file that is wanted only if it holds device code (the libraries a program loads): an ELF
/// file whose sections and dynamic symbols show no fatbin gives `None` once its section headers are read,
/// without the symbol counts and runtime search of a full inspection (3.8 ms of `libtorch_cpu.so`'s 6.5).
/// Anything else (a fatbin, an archive, damage the full reading would report) is inspected in full.
pub fn path_with_device_code(
    path: &Path,
    opts: &InspectOptions,
) -> Result<Option<Vec<BinaryFacts>>, InspectError> {
    path_if(path, opts, may_hold_device_code)
}

/// Maps the file at `path` and inspects it if `wanted` says so of its input (`None` when not).
fn path_if(
    path: &Path,
    opts: &InspectOptions,
    wanted: impl FnOnce(&Input<'_>) -> bool,
) -> Result<Option<Vec<BinaryFacts>>, InspectError> {
    let display = path.display().to_string();
    let (file, map) = source::map(path).map_err(|error| InspectError {
        path: display.clone(),
        error,
    })?;
    inspect_source(display, file.as_ref(), &map, opts, wanted)
}

/// False only for a readable host ELF file in which [`elf::fatbin_regions`] finds no fatbin.
fn may_hold_device_code(input: &Input<'_>) -> bool {
    let head = input.prefix(64);
    let host_elf = head.starts_with(b"\x7fELF") && elf_machine(head).is_some_and(|m| m != cubin::EM_CUDA);
    if !host_elf {
        return true;
    }
    match elfparse::parse_with(input.as_slice(), input.pieces()) {
        Ok((elf, _)) => !elf::fatbin_regions(&elf, input).0.is_empty(),
        Err(_) => true,
    }
}

/// Inspects a mapped input if `wanted` says so of it, and refuses the facts when the file shrank while it was
/// read (what was read past its new end were zeros the guard put there, not the file).
fn inspect_source(
    display: String,
    file: Option<&std::fs::File>,
    map: &source::Source,
    opts: &InspectOptions,
    wanted: impl FnOnce(&Input<'_>) -> bool,
) -> Result<Option<Vec<BinaryFacts>>, InspectError> {
    let window = input::Window::new();
    let input = match file {
        Some(f) => Input::file(map, f, 0, &window).with_pieces(map.elf_pieces()),
        None => Input::bytes(map),
    };
    let facts = wanted(&input).then(|| inspect_input(&display, &input, opts));
    if map.truncated() {
        return Err(InspectError {
            path: display,
            error: std::io::Error::other(
                "the file changed (shrank) while it was being read; run again once whatever writes it is done",
            ),
        });
    }
    Ok(facts)
}

/// Inspects a file already open (a wheel member inflated to a temporary file), named `name` in the facts.
pub fn open_file(
    name: &str,
    file: &std::fs::File,
    opts: &InspectOptions,
) -> std::io::Result<Vec<BinaryFacts>> {
    let map = source::map_open(file)?;
    let window = input::Window::new();
    Ok(inspect_input(name, &Input::file(&map, file, 0, &window), opts))
}

/// Inspects bytes already in memory, named `name` in the facts.
pub fn bytes(name: &str, data: &[u8], opts: &InspectOptions) -> Vec<BinaryFacts> {
    inspect_input(name, &Input::bytes(data), opts)
}

fn inspect_input(name: &str, input: &Input<'_>, opts: &InspectOptions) -> Vec<BinaryFacts> {
    if input.as_slice().starts_with(b"!<arch>\n") {
        return archive(name, input, opts);
    }
    vec![single(name, input, opts)]
}

fn archive(name: &str, input: &Input<'_>, opts: &InspectOptions) -> Vec<BinaryFacts> {
    let data = input.as_slice();
    let ar = match goblin::archive::Archive::parse(data) {
        Ok(ar) => ar,
        Err(e) => {
            let mut facts = BinaryFacts {
                path: name.to_string(),
                size: data.len() as u64,
                ..BinaryFacts::default()
            };
            facts.problems.push(Problem {
                kind: ProblemKind::Binary,
                message: format!("static archive is damaged: {e}"),
                offset: None,
            });
            return vec![facts];
        }
    };
    let mut out = Vec::new();
    for i in 0..ar.len() {
        let Some(member) = ar.get_at(i) else { continue };
        let member_name = member.extended_name();
        let start = member.offset as usize;
        let label = format!("{name}({member_name})");
        match input.slice(start, member.size()) {
            Some(member) => out.push(single(&label, &member, opts)),
            None => {
                let mut facts = BinaryFacts {
                    path: label,
                    ..BinaryFacts::default()
                };
                facts.problems.push(Problem {
                    kind: ProblemKind::Binary,
                    message: format!("archive member {member_name} extends past the end of the archive"),
                    offset: Some(start as u64),
                });
                out.push(facts);
            }
        }
    }
    out
}

/// `e_machine` of the ELF header `data` begins with, read little-endian as the inspection reads it (`None`
/// when the header is too short to hold it): what tells a cubin (`EM_CUDA`) from a host file.
fn elf_machine(data: &[u8]) -> Option<u16> {
    data.get(18..20).map(|m| u16::from_le_bytes([m[0], m[1]]))
}

fn single(name: &str, input: &Input<'_>, opts: &InspectOptions) -> BinaryFacts {
    let data = input.as_slice();
    let mut facts = BinaryFacts {
        path: name.to_string(),
        size: data.len() as u64,
        ..BinaryFacts::default()
    };
    let head = input.prefix(64);
    if head.starts_with(b"\x7fELF") {
        if elf_machine(head) == Some(cubin::EM_CUDA) {
            raw_cubin(data, &mut facts);
        } else {
            host_elf(input, &mut facts, opts);
        }
    } else if fatbin::container_at(input, 0) {
        facts.format = Some(Format::Fatbin);
        let region = fatbin::Region {
            section: None,
            start: 0,
            end: data.len(),
            relocatable: false,
            found_by_scan: false,
        };
        let mut pending = Vec::new();
        fatbin::walk(input, &region, &mut facts, opts, &mut pending);
        fatbin::finish(input, &pending, &mut facts, opts);
    } else if looks_like_ptx(data) {
        raw_ptx(data, &mut facts);
    } else {
        facts.format = Some(Format::Unknown);
        facts.problems.push(Problem {
            kind: ProblemKind::Unrecognized,
            message: "not an ELF file, static archive, fatbin, cubin or PTX text".into(),
            offset: None,
        });
    }
    facts
}

fn host_elf(input: &Input<'_>, facts: &mut BinaryFacts, opts: &InspectOptions) {
    let data = input.as_slice();
    facts.format = Some(Format::Elf);
    let elf = match elfparse::parse_with(data, input.pieces()) {
        Ok((elf, damage)) => {
            for d in damage {
                facts.problems.push(Problem {
                    kind: ProblemKind::Binary,
                    message: format!("ELF structure is damaged ({d}); read what could be read"),
                    offset: None,
                });
            }
            elf
        }
        Err(e) => {
            facts.problems.push(Problem {
                kind: ProblemKind::Binary,
                message: format!("ELF structure is damaged: {e}"),
                offset: None,
            });
            return;
        }
    };
    let elf_facts = elf::facts(&elf, data, input.whole_file());
    if opts.depth == Depth::NoDeviceCode {
        facts.device_code_skipped = true;
        facts.cudart = elf::cudart(&elf, &elf_facts, input, false);
        facts.elf = Some(elf_facts);
        return;
    }
    let (regions, wrapper_problems) = elf::fatbin_regions(&elf, input);
    for (offset, message) in wrapper_problems {
        facts.problems.push(Problem {
            kind: ProblemKind::DeviceCode,
            message,
            offset: Some(offset as u64),
        });
    }
    let mut pending = Vec::new();
    for region in &regions {
        fatbin::walk(input, region, facts, opts, &mut pending);
    }
    fatbin::finish(input, &pending, facts, opts);
    facts.cudart = elf::cudart(&elf, &elf_facts, input, !regions.is_empty());
    facts.elf = Some(elf_facts);
}

fn raw_cubin(data: &[u8], facts: &mut BinaryFacts) {
    facts.format = Some(Format::Cubin);
    match cubin::parse(data) {
        Ok(c) => {
            let toolkit = cubin::toolkit(&c);
            let suffix = c.arch_specific.then_some('a');
            facts.device_code.push(DeviceCode {
                kind: CodeKind::Sass,
                arch: format!("sm_{}{}", c.sm, suffix.map(String::from).unwrap_or_default()),
                sm: c.sm,
                suffix,
                ptx_isa: None,
                code_version: [0, 0],
                compression: Compression::None,
                size: data.len() as u64,
                stored_size: data.len() as u64,
                flags: 0,
                debug: false,
                bits64: true,
                host: None,
                identifier: None,
                options: None,
                toolkit: toolkit.as_ref().map(|t| t.0.clone()),
                toolkit_source: toolkit.map(|t| t.1.to_string()),
                unread: None,
                relocatable: c.elf_type == "rel",
                container: 0,
                offset: 0,
                cubin: Some(Box::new(c)),
                ptx: None,
            });
        }
        Err(e) => facts.problems.push(Problem {
            kind: ProblemKind::DeviceCode,
            message: e.0,
            offset: Some(0),
        }),
    }
}

/// PTX text starts (after comments and blank lines) with a directive; `.version` appears near the top.
fn looks_like_ptx(data: &[u8]) -> bool {
    let head = &data[..data.len().min(64 << 10)];
    let Ok(text) = std::str::from_utf8(head).or_else(|e| std::str::from_utf8(&head[..e.valid_up_to()]))
    else {
        return false;
    };
    text.lines().any(|l| l.trim_start().starts_with(".version")) && text.contains(".target")
}

fn raw_ptx(data: &[u8], facts: &mut BinaryFacts) {
    facts.format = Some(Format::Ptx);
    let p = ptx::parse(data);
    let target = ptx::target_arch(&p).unwrap_or("");
    let digits: String = target
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let sm = digits.parse().unwrap_or(0);
    let suffix = target.chars().last().filter(|c| *c == 'a' || *c == 'f');
    let (major, minor) = p
        .version
        .as_deref()
        .and_then(|v| v.split_once('.'))
        .map(|(a, b)| (a.parse().unwrap_or(0), b.parse().unwrap_or(0)))
        .unwrap_or((0, 0));
    if p.version.is_none() || sm == 0 {
        facts.problems.push(Problem {
            kind: ProblemKind::DeviceCode,
            message: "PTX text has no `.version` or no `.target sm_XX` directive".into(),
            offset: Some(0),
        });
    }
    facts.device_code.push(DeviceCode {
        kind: CodeKind::Ptx,
        arch: format!("compute_{sm}{}", suffix.map(String::from).unwrap_or_default()),
        sm,
        suffix,
        ptx_isa: p.version.clone(),
        code_version: [major, minor],
        compression: Compression::None,
        size: data.len() as u64,
        stored_size: data.len() as u64,
        flags: 0,
        debug: p.target.iter().any(|t| t == "debug"),
        bits64: p.address_size == Some(64),
        host: None,
        identifier: None,
        options: None,
        toolkit: None,
        toolkit_source: None,
        unread: None,
        relocatable: false,
        container: 0,
        offset: 0,
        cubin: None,
        ptx: Some(Box::new(p)),
    });
}

/// What the loader emulation needs from one ELF file: its loader facts, and where to look for the names of
/// the libraries it passes to `dlopen`.
#[derive(Debug, Clone)]
pub struct LoaderView {
    /// The file's bytes, mapped once for the whole run: the symbol reads that come later
    /// ([`versioned_imports`], [`exports::Exports`]) share the map instead of mapping the file again (in a
    /// process with threads, each unmap costs every core a TLB flush).
    pub data: std::sync::Arc<source::Source>,
    /// Loader facts ([`elf::loader_facts`]: no symbol counts), `None` when the file is not a host ELF that
    /// goblin can read.
    pub elf: Option<crate::facts::ElfFacts>,
    /// The file ranges of `.rodata` to search for `dlopen` names (empty: the object is not searched).
    pub rodata: Vec<(u64, u64)>,
}

/// Names of libraries that make an object part of a CUDA stack: an object that needs one of them, or is one,
/// may `dlopen` other CUDA libraries. Prefixes of sonames.
pub const CUDA_LIBRARY_PREFIXES: &[&str] = &[
    "libcuda.so",
    "libcudart",
    "libcublas",
    "libcufft",
    "libcurand",
    "libcusolver",
    "libcusparse",
    "libcufile",
    "libcudnn",
    "libcupti",
    "libnvrtc",
    "libnvJitLink",
    "libnvidia-ml",
    "libnccl",
    "libnvshmem",
    "libnpp",
    "libnvjpeg",
    "libnvToolsExt",
    "libnvblas",
    "libcutensor",
];

/// Is `soname` (or a file name) one of the CUDA libraries of [`CUDA_LIBRARY_PREFIXES`]?
pub fn is_cuda_library(soname: &str) -> bool {
    CUDA_LIBRARY_PREFIXES.iter().any(|p| soname.starts_with(p))
}

/// Which objects [`loader_view`] searches for `dlopen` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RodataScan {
    /// Every object (the inspected binary itself: whatever it is, its own strings are worth reading).
    Always,
    /// Only objects of a CUDA stack: ones that carry device code, need a CUDA library or are one. A system or
    /// framework library with no tie to CUDA does not load CUDA libraries, and reading the `.rodata` of every
    /// library in a tree (hundreds of MB for PyTorch's) would cost more than resolving the tree. The driver's
    /// libraries are not searched either: what they load is the driver's own.
    CudaObjects,
}

/// Reads only the parts of an ELF file the loader's walk needs: the dynamic section, the version tables and,
/// for the objects `scan` selects, where their `.rodata` lies ([`rodata_strings`] searches it). Neither fatbins
/// nor dynamic symbols are touched ([`versioned_imports`] reads those), so resolving a large tree stays fast.
pub fn loader_view(path: &Path, scan: RodataScan) -> std::io::Result<LoaderView> {
    let (_file, map) = source::map(path)?;
    Ok(loader_view_of(std::sync::Arc::new(map), scan))
}

/// [`loader_view`] of a file already read.
pub fn loader_view_of(map: std::sync::Arc<source::Source>, scan: RodataScan) -> LoaderView {
    let data: &[u8] = &map;
    let Some((elf, _damage)) = map.parse_elf().ok() else {
        return LoaderView {
            elf: None,
            rodata: Vec::new(),
            data: map.clone(),
        };
    };
    let section = |sh| elf::section_name(&elf, sh);
    // The driver's own libraries (libcuda, NVML and the rest of libnvidia-*) load only driver components,
    // none of which the needles name: their large read-only data is not searched.
    let driver = elf
        .soname
        .is_some_and(|n| n.starts_with("libcuda.so") || n.starts_with("libnvidia-"));
    let wanted = scan == RodataScan::Always
        || (!driver && elf.libraries.iter().any(|n| is_cuda_library(n)))
        || (!driver && elf.soname.is_some_and(is_cuda_library))
        || (!driver
            && elf
                .section_headers
                .iter()
                .any(|sh| matches!(section(sh), ".nv_fatbin" | ".nvFatBinSegment")));
    let rodata = if wanted {
        elf.section_headers
            .iter()
            .filter(|sh| section(sh) == ".rodata")
            .filter(|sh| {
                sh.sh_offset
                    .checked_add(sh.sh_size)
                    .is_some_and(|e| e <= data.len() as u64)
            })
            .map(|sh| (sh.sh_offset, sh.sh_size))
            .collect()
    } else {
        Vec::new()
    };
    LoaderView {
        elf: Some(elf::loader_facts(&elf)),
        rodata,
        data: map,
    }
}

/// The undefined dynamic symbols of the ELF file `data` that carry a version (what ld.so checks by version
/// when it binds them; [`exports::Exports`] answers for the providers), read apart from [`loader_view`]: the
/// loader's walk does not wait for them. `None` when the bytes cannot be read as ELF.
pub fn versioned_imports(data: &source::Source) -> Option<std::sync::Arc<[crate::facts::DynSymbol]>> {
    let (elf, _) = data.parse_elf().ok()?;
    Some(elf::versioned_undefined(&elf, data, data.file()).into())
}

/// [`libc_release`] of the file at `path` (a host path), mapped rather than read: only its headers, version
/// tables and `.rodata` are touched.
pub fn libc_release_at(path: &Path) -> Option<(Option<crate::glibc::Banner>, Vec<String>)> {
    let (_file, map) = source::map(path).ok()?;
    libc_release(&map)
}

/// glibc's banner ([`crate::glibc::banner`]) in the `.rodata` of the ELF file `data` (a `libc.so.6`), with its
/// offset in the file, and the version names the file defines (DT_VERDEF). The whole file is searched when it
/// has no `.rodata` section header. `None` when the bytes cannot be read as ELF.
pub fn libc_release(data: &[u8]) -> Option<(Option<crate::glibc::Banner>, Vec<String>)> {
    let (elf, _) = elfparse::parse(data).ok()?;
    let ranges: Vec<(usize, usize)> = elf
        .section_headers
        .iter()
        .filter(|sh| elf::section_name(&elf, sh) == ".rodata")
        .filter_map(|sh| {
            let start = usize::try_from(sh.sh_offset).ok()?;
            let end = start.checked_add(usize::try_from(sh.sh_size).ok()?)?;
            (end <= data.len()).then_some((start, end))
        })
        .collect();
    let ranges = if ranges.is_empty() {
        vec![(0, data.len())]
    } else {
        ranges
    };
    let banner = ranges.iter().find_map(|&(start, end)| {
        crate::glibc::banner(&data[start..end]).map(|mut b| {
            b.offset += start as u64;
            b
        })
    });
    Some((banner, elf::loader_facts(&elf).version_defs))
}

/// Longest string [`rodata_strings`] keeps (library names are short; longer strings are messages).
pub const RODATA_STRING_MAX: usize = 256;

/// One part of a `.rodata` search: the bytes `start..end` are read; a part that is not the first of its
/// section (`from_start` false) skips hits in its first [`RODATA_STRING_MAX`] bytes and one that is not the
/// last (`to_end` false) leaves hits in its last ones, so that parts overlapping by that much together see
/// every string whole and exactly once per part boundary. [`rodata_parts`] cuts a section so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RodataPart {
    /// First byte read (file offset).
    pub start: u64,
    /// End of the bytes read (file offset, exclusive).
    pub end: u64,
    /// The part begins its section: hits from its first byte count.
    pub from_start: bool,
    /// The part ends its section: hits up to its last byte count.
    pub to_end: bool,
}

/// Cuts the section `start..start + size` into parts of about `piece` bytes, for several threads.
pub fn rodata_parts(start: u64, size: u64, piece: u64) -> Vec<RodataPart> {
    let max = RODATA_STRING_MAX as u64;
    let end = start.saturating_add(size);
    let piece = piece.max(8 * max);
    let mut parts = Vec::new();
    let mut at = start;
    while at < end {
        let next = if end - at <= piece + piece / 2 {
            end
        } else {
            at + piece
        };
        parts.push(RodataPart {
            start: if at == start { at } else { at - max },
            end: if next == end { end } else { next + max },
            from_start: at == start,
            to_end: next == end,
        });
        at = next;
    }
    parts
}

/// Bytes [`rodata_strings`] reads at a time: small enough that the copy stays in the core's cache for the
/// search that follows, and that the buffer every thread of the pool keeps for the run costs little (128 KB
/// buffers were 2 MB of the peak memory on 16 cores; with 32 KB, the default `inspect` of `libtorch_cuda.so`
/// peaked 0.7 MiB lower and `doctor` 1.1 MiB lower on the H100, in the same time). The buffer is the thread's
/// one for every positioned-read scan ([`input::with_scan_buffer`]), at most [`input::CHUNK`] long.
pub const RODATA_CHUNK: usize = 32 << 10;

/// The NUL-terminated strings in `part` of `file` that contain one of `needles` (library names passed to
/// `dlopen`), with their file offsets. Read with positioned reads in [`RODATA_CHUNK`]s: one pass over
/// a large `.rodata` that way costs no more than mapping it (measured: the page-table work of a populated map
/// matches the copy).
pub fn rodata_strings(file: &std::fs::File, part: RodataPart, needles: &[&[u8]]) -> Vec<(String, u64)> {
    const MAX: usize = RODATA_STRING_MAX;
    let mut strings: Vec<(String, u64)> = Vec::new();
    if part.end <= part.start {
        return strings;
    }
    // Every library name holds ".so", a pair of bytes rare enough in read-only data for a vectorised search;
    // the string around each hit is then checked for the needles.
    let finder = memchr::memmem::Finder::new(b".so");
    // The thread's scan buffer, for all its parts: no allocation, and no zeroed pages, per part.
    let size = RODATA_CHUNK + 2 * MAX;
    input::with_scan_buffer(size, |buf| {
        let (start, end) = (part.start, part.end);
        let mut off = start;
        while off < end {
            let len = (size as u64).min(end - off) as usize;
            let Ok(()) = std::os::unix::fs::FileExt::read_exact_at(file, &mut buf[..len], off) else {
                break;
            };
            let chunk = &buf[..len];
            let last = off + len as u64 >= end;
            // Chunks overlap by 2 * MAX bytes. A chunk takes the hits in `first..stop`: each of those has its
            // whole string inside the chunk; the next chunk starts with the hits from `stop` on, MAX into it.
            let first = if off == start && part.from_start { 0 } else { MAX };
            let stop = if last && part.to_end {
                len
            } else {
                len.saturating_sub(MAX)
            };
            let mut at = first;
            while at < stop
                && let Some(i) = finder.find(&chunk[at..stop])
            {
                let hit = at + i;
                at = hit + 1;
                let lo = hit.saturating_sub(MAX);
                let from = memchr::memrchr(0, &chunk[lo..hit]).map_or(lo, |p| lo + p + 1);
                let hi = (hit + MAX).min(len);
                let to = memchr::memchr(0, &chunk[hit..hi]).map_or(hi, |p| hit + p);
                at = at.max(to.min(stop));
                let string = &chunk[from..to];
                if string.len() >= MAX || !needles.iter().any(|n| memchr::memmem::find(string, n).is_some()) {
                    continue;
                }
                let s = String::from_utf8_lossy(string).into_owned();
                if !strings.iter().any(|(x, _)| *x == s) {
                    strings.push((s, off + from as u64));
                }
            }
            if last {
                break;
            }
            off += (len - 2 * MAX) as u64;
        }
    });
    strings
}

/// For tests that compare readers against each other on real files: this machine's shared libraries (x86-64
/// CI: libc, libm, libstdc++, libgcc_s and libz first, then up to `per_dir` others per library directory, in
/// name order), none over 16 MB.
#[cfg(test)]
pub(crate) fn sample_libraries(per_dir: usize) -> Vec<std::path::PathBuf> {
    const COMMON: &[&str] = &[
        "libc.so.6",
        "libm.so.6",
        "libstdc++.so.6",
        "libgcc_s.so.1",
        "libz.so.1",
    ];
    let mut out = Vec::new();
    for dir in [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/usr/lib",
    ] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut names: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        names.sort();
        let common = names
            .iter()
            .filter(|p| p.file_name().is_some_and(|n| COMMON.iter().any(|c| n == *c)));
        let rest = names
            .iter()
            .filter(|p| p.to_string_lossy().contains(".so"))
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < 16 << 20))
            .take(per_dir);
        out.extend(common.chain(rest).cloned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Case 8 of issue 19: an input truncated between its map and its parse (a linker rewriting it) is
    /// reported as changed, and the process does not die of SIGBUS.
    #[test]
    fn an_input_shrinking_while_read_is_an_error_not_sigbus() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("libgrowing.so");
        std::fs::write(&p, vec![0x7fu8; 1 << 20]).unwrap();
        let (file, map) = source::map(&p).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(0)
            .unwrap();
        let e = inspect_source(
            p.display().to_string(),
            file.as_ref(),
            &map,
            &InspectOptions::default(),
            |_| true,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("changed (shrank) while it was being read"),
            "{e}"
        );
        // The near miss: the same file left alone reads.
        std::fs::write(&p, vec![0x7fu8; 1 << 20]).unwrap();
        let (file, map) = source::map(&p).unwrap();
        assert!(
            inspect_source(
                p.display().to_string(),
                file.as_ref(),
                &map,
                &InspectOptions::default(),
                |_| true,
            )
            .is_ok()
        );
    }

    /// Names placed across chunk and part boundaries are each found whole, once, at their offset; fragments
    /// and long strings are not; a section is read from its first byte.
    #[test]
    fn rodata_strings_sees_every_name_across_boundaries() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("rodata");
        let mut data = vec![b'x'; 3 << 20];
        // Names drifting across the chunk edges and every 64 KiB (parts below are 64 KiB).
        let mut placed = Vec::new();
        let mut at = 100usize;
        let mut k = 0;
        while at + 64 < data.len() {
            let name = format!("libcuda.so.{k}");
            data[at - 1] = 0;
            data[at..at + name.len()].copy_from_slice(name.as_bytes());
            data[at + name.len()] = 0;
            placed.push((name, at as u64));
            k += 1;
            at += if k % 2 == 0 { 65_531 } else { RODATA_CHUNK } - 700 + k;
        }
        // A name at the very start and one at the very end of the range.
        data[0] = b'l';
        let head = b"libnvrtc.so.13\0";
        data[..head.len()].copy_from_slice(head);
        let n = data.len();
        let tail = b"\0libnvidia-ml.so.1";
        data[n - tail.len()..].copy_from_slice(tail);
        // Too long to be a name, and a name with no needle.
        data[2_000_000] = 0;
        data[2_000_001..2_000_400].fill(b'y');
        data[2_000_400..2_000_412].copy_from_slice(b"libcuda.so.9");
        data[2_000_412] = 0;
        // The section starts 4,219 bytes into the file, after bytes that are not NUL.
        const AT: u64 = 4_219;
        let mut bytes = vec![b'z'; AT as usize];
        bytes.extend_from_slice(&data);
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let mut want: Vec<(String, u64)> = placed.into_iter().map(|(s, o)| (s, o + AT)).collect();
        want.push(("libnvrtc.so.13".into(), AT));
        want.push(("libnvidia-ml.so.1".into(), AT + (n - tail.len() + 1) as u64));
        want.sort_by_key(|w| w.1);
        for piece in [64 << 10, 1 << 20, 16 << 20] {
            let mut got: Vec<(String, u64)> = rodata_parts(AT, n as u64, piece)
                .into_iter()
                .flat_map(|p| rodata_strings(&file, p, &[b"libcuda.so", b"libnvrtc", b"libnvidia-ml.so"]))
                .collect();
            got.sort_by_key(|g| g.1);
            got.dedup();
            assert_eq!(got, want, "parts of {piece} bytes");
        }
    }
}
