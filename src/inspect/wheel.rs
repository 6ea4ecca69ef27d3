//! Python wheels and directories: every binary inside, for `audit`.
//!
//! A wheel is a zip archive. Its ELF members (and raw cubins/fatbins) are inflated one at a time, never more
//! than [`MAX_MEMBER`] bytes each, and inspected under the name `x.whl!path/in/wheel.so`. Small members are
//! inflated into memory; one larger than [`SPILL_OVER`] (libtorch_cuda.so inflates to about 1 GB) goes to an
//! anonymous temporary file (`O_TMPFILE` in `$TMPDIR`: it never has a name and vanishes when closed), which
//! is then mapped and read like any file, so that only the pages inspection touches count against memory.
//! Where no temporary file can be made, the member is inflated into memory as before. The wheel's
//! `*.dist-info/METADATA` gives its name, version and declared dependencies (`Requires-Dist`), which say what
//! pip installs beside it (`nvidia-cuda-runtime-cu12`, …): context for the audit. Each is parsed as PEP 508
//! says ([`super::pep508`]), and its environment marker is evaluated for Linux and the wheel's own tags (the CPU and Python of its
//! file name): a dependency is installed always, only with an extra (`extra == "ctk"`), or never there. What
//! the tags do not say (a `py3-none-any` wheel's Python) is taken as true: cudadiag would rather assume a
//! dependency is installed than report a library missing that is not. Directories are walked without following
//! links; only files that look like binaries are inspected.

use super::pep508::{Env, requirement};
use super::{InspectOptions, bytes, path as inspect_path};
use crate::facts::{BinaryFacts, Problem, ProblemKind, WheelFacts};
use std::io::Read;
use std::path::Path;

/// Largest wheel member inspected (libtorch_cuda.so is about 1 GB).
pub const MAX_MEMBER: u64 = 4 << 30;

/// Members larger than this are inflated to a temporary file rather than into memory.
pub const SPILL_OVER: u64 = 32 << 20;

/// Whether the first bytes (or the name) say this is something `inspect` reads.
pub fn looks_binary(head: &[u8], name: &str) -> bool {
    head.starts_with(b"\x7fELF")
        || head.starts_with(b"!<arch>\n")
        || head.starts_with(&0xBA55_ED50u32.to_le_bytes())
        || name.ends_with(".cubin")
        || name.ends_with(".fatbin")
        || name.ends_with(".ptx")
}

/// Everything under `paths`: files as given, directories walked, wheels opened. Unreadable entries become
/// problems on a placeholder binary so that nothing is silently skipped.
pub fn collect(
    paths: &[std::path::PathBuf],
    opts: &InspectOptions,
) -> Result<(Vec<BinaryFacts>, Vec<WheelFacts>), super::InspectError> {
    let mut binaries = Vec::new();
    let mut wheels = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|error| super::InspectError {
            path: p.display().to_string(),
            error,
        })?;
        if meta.is_dir() {
            let mut walker: Vec<_> = walkdir::WalkDir::new(p)
                .follow_links(false)
                .sort_by_file_name()
                .into_iter()
                .collect();
            for entry in walker.drain(..) {
                match entry {
                    Ok(e) if e.file_type().is_file() => {
                        opts.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let file = e.path();
                        let shown = file.display().to_string();
                        if file.extension().is_some_and(|x| x == "whl") {
                            wheel(file, opts, &mut binaries, &mut wheels);
                        } else {
                            match head_looks_binary(file) {
                                Ok(true) => match inspect_path(file, opts) {
                                    Ok(b) => binaries.extend(b),
                                    Err(e) => binaries.push(cannot_read(&shown, &e.error)),
                                },
                                Ok(false) => {}
                                Err(e) => binaries.push(cannot_read(&shown, &e)),
                            }
                        }
                    }
                    Ok(e) => {
                        if let Some(why) = not_checked(e.path(), e.file_type()) {
                            binaries.push(cannot_read_because(&e.path().display().to_string(), &why));
                        }
                    }
                    Err(e) => {
                        let where_ = e
                            .path()
                            .map_or_else(|| p.display().to_string(), |x| x.display().to_string());
                        binaries.push(cannot_read_because(&where_, &e.to_string()));
                    }
                }
            }
        } else if p.extension().is_some_and(|x| x == "whl") {
            wheel(p, opts, &mut binaries, &mut wheels);
        } else {
            // A path that exists but cannot be read is a finding: the gate fails on what it could not check.
            match inspect_path(p, opts) {
                Ok(b) => binaries.extend(b),
                Err(e) => binaries.push(cannot_read(&e.path, &e.error)),
            }
        }
    }
    Ok((binaries, wheels))
}

/// Whether the first bytes (or the name) say `file` is a binary; an error when it cannot be opened or read.
fn head_looks_binary(file: &Path) -> std::io::Result<bool> {
    let mut head = [0u8; 8];
    let mut f = std::fs::File::open(file)?;
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(looks_binary(&head[..n], &file.to_string_lossy()))
}

/// Why a directory entry that is neither a regular file nor a directory could not be checked: a link whose
/// target is missing, or a FIFO, socket or device (which may block, or never end, when read). A link to a
/// file or directory is not followed (its target is audited where it lies), so it gives nothing.
fn not_checked(path: &Path, kind: std::fs::FileType) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        return None;
    }
    if kind.is_symlink() {
        return match std::fs::metadata(path) {
            Ok(_) => None,
            Err(e) => {
                let to = std::fs::read_link(path)
                    .map(|t| format!(" to {}", t.display()))
                    .unwrap_or_default();
                Some(format!(
                    "cannot be read: symbolic link{to} cannot be followed: {e}"
                ))
            }
        };
    }
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    };
    Some(format!("cannot be read: {what}, not a regular file"))
}

/// A placeholder for an input that could not be read (`input-unreadable`), with the operating system's error.
fn cannot_read(path: &str, error: &std::io::Error) -> BinaryFacts {
    cannot_read_because(path, &format!("cannot be read: {error}"))
}

fn cannot_read_because(path: &str, why: &str) -> BinaryFacts {
    BinaryFacts {
        path: path.to_string(),
        problems: vec![Problem {
            kind: ProblemKind::Unreadable,
            message: why.to_string(),
            offset: None,
        }],
        ..BinaryFacts::default()
    }
}

fn unreadable(path: &str, why: &str) -> BinaryFacts {
    BinaryFacts {
        path: path.to_string(),
        problems: vec![Problem {
            kind: ProblemKind::Binary,
            message: format!("cannot be read: {why}"),
            offset: None,
        }],
        ..BinaryFacts::default()
    }
}

/// Opens one wheel: its binaries into `binaries`, its metadata into `wheels`.
pub fn wheel(
    file: &Path,
    opts: &InspectOptions,
    binaries: &mut Vec<BinaryFacts>,
    wheels: &mut Vec<WheelFacts>,
) {
    let name = file.display().to_string();
    let mut facts = WheelFacts {
        path: name.clone(),
        ..WheelFacts::default()
    };
    // Opened without blocking and refused unless a regular file: a FIFO named `x.whl` must not hang the run.
    let archive = match crate::system::read::open_regular(file) {
        Ok((f, _)) => zip::ZipArchive::new(f).map_err(|e| e.to_string()),
        Err(e) => {
            binaries.push(cannot_read(&name, &e.into()));
            wheels.push(facts);
            return;
        }
    };
    let mut archive = match archive {
        Ok(a) => a,
        Err(e) => {
            binaries.push(unreadable(&name, &format!("not a readable wheel (zip): {e}")));
            wheels.push(facts);
            return;
        }
    };
    let shared = shared_data(&mut archive);
    if let Some(report) = &shared.report {
        binaries.push(BinaryFacts {
            path: name.clone(),
            problems: vec![Problem {
                kind: ProblemKind::Binary,
                message: report.clone(),
                offset: None,
            }],
            ..BinaryFacts::default()
        });
    }
    for i in 0..archive.len() {
        if shared.skip.contains(&i) {
            continue;
        }
        let mut member = match archive.by_index(i) {
            Ok(m) => m,
            Err(e) => {
                binaries.push(unreadable(&format!("{name}!#{i}"), &e.to_string()));
                continue;
            }
        };
        if member.is_dir() {
            continue;
        }
        let member_name = match member.name() {
            Ok(n) => n.to_string(),
            Err(e) => {
                binaries.push(unreadable(&format!("{name}!#{i}"), &format!("member name: {e}")));
                continue;
            }
        };
        let label = format!("{name}!{member_name}");
        if member_name.ends_with(".dist-info/METADATA") {
            let mut text = String::new();
            if member.by_ref().take(1 << 20).read_to_string(&mut text).is_ok() {
                read_metadata(&text, &mut facts);
                let env = Env::of_wheel(file);
                facts.requirements = facts
                    .requires
                    .iter()
                    .filter_map(|r| requirement(r, &env))
                    .collect();
            }
            continue;
        }
        let mut head = [0u8; 8];
        let n = member.read(&mut head).unwrap_or(0);
        if !looks_binary(&head[..n], &member_name) {
            continue;
        }
        if member.size() > MAX_MEMBER {
            binaries.push(unreadable(
                &label,
                &format!(
                    "{} bytes uncompressed, over the {MAX_MEMBER}-byte limit",
                    member.size()
                ),
            ));
            continue;
        }
        // Every byte inflated counts against the run's budget (memory or `$TMPDIR`, which may be RAM too).
        if let Err(why) = opts.budget.reserve(member.size()) {
            binaries.push(cannot_read_because(&label, &why));
            continue;
        }
        if member.size() > SPILL_OVER {
            match spill(&mut member, &head[..n]) {
                Ok(tmp) => {
                    match super::open_file(&label, &tmp, opts) {
                        Ok(b) => binaries.extend(b),
                        Err(e) => binaries.push(unreadable(&label, &format!("inflated, then: {e}"))),
                    }
                    continue;
                }
                Err(Spill::Inflate(e)) => {
                    binaries.push(unreadable(&label, &format!("cannot be inflated: {e}")));
                    continue;
                }
                Err(Spill::Write(e)) => {
                    binaries.push(unreadable(
                        &label,
                        &format!("cannot be inflated to a temporary file: {e}"),
                    ));
                    continue;
                }
                Err(Spill::NoTemp) => {} // inflate into memory below
            }
        }
        let mut data = Vec::with_capacity(member.size() as usize);
        data.extend_from_slice(&head[..n]);
        match member.by_ref().take(MAX_MEMBER).read_to_end(&mut data) {
            Ok(_) => binaries.extend(bytes(&label, &data, opts)),
            Err(e) => binaries.push(unreadable(&label, &format!("cannot be inflated: {e}"))),
        }
    }
    wheels.push(facts);
}

/// Central-directory entries whose data is another entry's, in whole or in part.
#[derive(Debug, Default)]
struct Shared {
    /// Entries not to read: their data range starts inside one already kept.
    skip: std::collections::BTreeSet<usize>,
    /// One sentence for the wheel's `malformed-binary` finding, when any entry was skipped.
    report: Option<String>,
}

/// Finds entries that share or overlap another member's data. `pip` never writes such a wheel; a zip bomb
/// does (40 entries pointing at one 1 GiB member inflate 40 GiB), so the wheel is reported and each distinct
/// data range is read once. An entry's extent is taken as its 30-byte local header plus its compressed data
/// (the name and extra field only lengthen it), so overlaps found are certain.
fn shared_data<R: std::io::Read + std::io::Seek>(archive: &mut zip::ZipArchive<R>) -> Shared {
    let mut extents = Vec::new();
    for i in 0..archive.len() {
        if let Ok(m) = archive.by_index_raw(i)
            && !m.is_dir()
        {
            let start = m.header_start();
            extents.push((
                start,
                start.saturating_add(30).saturating_add(m.compressed_size()),
                i,
            ));
        }
    }
    extents.sort_unstable();
    let mut out = Shared::default();
    let mut kept: Option<(u64, u64, usize)> = None;
    let mut example = None;
    for e in extents {
        match kept {
            Some(k) if e.0 < k.1 => {
                out.skip.insert(e.2);
                example.get_or_insert((k, e));
            }
            _ => kept = Some(e),
        }
    }
    if let Some((k, e)) = example {
        let n = out.skip.len();
        out.report = Some(format!(
            "{n} zip entr{} share or overlap another member's data (entries #{} and #{} at offsets 0x{:x} and \
             0x{:x}): a zip-bomb pattern; each distinct data range was read once",
            if n == 1 { "y" } else { "ies" },
            k.2,
            e.2,
            k.0,
            e.0
        ));
    }
    out
}

/// Why a member could not be inflated to a temporary file.
enum Spill {
    /// No temporary file could be created (read-only or missing `$TMPDIR`).
    NoTemp,
    /// The member's compressed data is damaged.
    Inflate(std::io::Error),
    /// Writing the temporary file failed (disk full).
    Write(std::io::Error),
}

/// Inflates the rest of `member` (after the `head` already read) into an anonymous temporary file.
fn spill(member: &mut impl Read, head: &[u8]) -> Result<std::fs::File, Spill> {
    use std::io::Write;
    let mut file = tempfile::tempfile().map_err(|_| Spill::NoTemp)?;
    file.write_all(head).map_err(Spill::Write)?;
    let mut member = member.take(MAX_MEMBER.saturating_sub(head.len() as u64));
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match member.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Spill::Inflate(e)),
        };
        file.write_all(&buf[..n]).map_err(Spill::Write)?;
    }
    Ok(file)
}

fn read_metadata(text: &str, facts: &mut WheelFacts) {
    for line in text.lines() {
        if line.is_empty() {
            break; // headers end at the first blank line; the description follows
        }
        if let Some(v) = line.strip_prefix("Name: ") {
            facts.name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Version: ") {
            facts.version = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Requires-Dist: ") {
            facts.requires.push(v.trim().to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 19, case 5: members are inflated within the run's budget; the one past it is not read, and says
    /// so as an unreadable input rather than vanishing.
    #[test]
    fn wheel_members_inflate_within_the_run_budget() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pkg-1.0-py3-none-any.whl");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let elf = |fill: u8| {
            let mut v = b"\x7fELF".to_vec();
            v.resize(600 << 10, fill);
            v
        };
        for (n, fill) in [("a.so", 1u8), ("b.so", 2), ("c.so", 3)] {
            zip.start_file(n, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(&elf(fill)).unwrap();
        }
        zip.finish().unwrap();
        let opts = InspectOptions {
            budget: std::sync::Arc::new(super::super::budget::Budget::new(
                1300 << 10,
                std::time::Duration::from_secs(60),
            )),
            ..InspectOptions::default()
        };
        let (mut binaries, mut wheels) = (Vec::new(), Vec::new());
        wheel(&path, &opts, &mut binaries, &mut wheels);
        assert_eq!(opts.budget.stats().inflations, 2);
        assert_eq!(opts.budget.stats().bytes, 1200 << 10);
        let refused: Vec<_> = binaries
            .iter()
            .filter(|b| b.problems.iter().any(|p| p.kind == ProblemKind::Unreadable))
            .map(|b| b.path.as_str())
            .collect();
        assert_eq!(refused.len(), 1, "{binaries:?}");
        assert!(refused[0].ends_with("!c.so"));
    }

    /// Tests run as root, who is never refused: the permission error is injected.
    #[test]
    fn permission_denied_is_an_unreadable_input() {
        let e = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let b = cannot_read("dist/libbad.so", &e);
        assert_eq!(b.problems[0].kind, ProblemKind::Unreadable);
        assert_eq!(b.problems[0].message, "cannot be read: permission denied");
        let facts = crate::facts::Facts {
            binaries: vec![b],
            ..crate::facts::Facts::default()
        };
        let findings = crate::rules::evaluate(&facts, &crate::matrix::Matrix::bundled().unwrap());
        let slugs: Vec<&str> = findings.iter().map(|f| f.slug.as_str()).collect();
        assert_eq!(slugs, ["input-unreadable"]);
        assert!(
            findings[0]
                .message
                .contains("dist/libbad.so: cannot be read: permission denied")
        );
        assert_eq!(
            findings[0].evidence,
            ["dist/libbad.so, opened for reading as the user running cudadiag: permission denied"]
        );
    }

    #[test]
    fn metadata_headers_only() {
        let mut f = WheelFacts::default();
        read_metadata(
            "Metadata-Version: 2.1\nName: cupy-cuda12x\nVersion: 14.2.0\nRequires-Dist: numpy\nRequires-Dist: nvidia-cuda-runtime-cu12==12.9.*; extra == \"ctk\"\n\nRequires-Dist: not-a-header\n",
            &mut f,
        );
        assert_eq!(f.name.as_deref(), Some("cupy-cuda12x"));
        assert_eq!(f.version.as_deref(), Some("14.2.0"));
        assert_eq!(f.requires.len(), 2);
    }

    #[test]
    fn spilled_members_read_back_whole() {
        use std::io::{Read, Seek};
        let rest: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut f = match spill(&mut rest.as_slice(), b"HEAD") {
            Ok(f) => f,
            Err(_) => panic!("no temporary file"),
        };
        f.rewind().unwrap();
        let mut back = Vec::new();
        f.read_to_end(&mut back).unwrap();
        assert_eq!(&back[..4], b"HEAD");
        assert!(back[4..] == rest[..]);
    }
}
