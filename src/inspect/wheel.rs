//! Python wheels and directories: every binary inside, for `audit`.
//!
//! A wheel is a zip archive. Its ELF members (and raw cubins/fatbins) are inflated one at a time into memory,
//! never more than [`MAX_MEMBER`] bytes each, and inspected under the name `x.whl!path/in/wheel.so`. The wheel's
//! `*.dist-info/METADATA` gives its name, version and declared dependencies (`Requires-Dist`), which say what
//! pip installs beside it (`nvidia-cuda-runtime-cu12`, …): context for the audit. Directories are walked
//! without following links; only files that look like binaries are inspected.

use super::{InspectOptions, bytes, path as inspect_path};
use crate::facts::{BinaryFacts, Problem, ProblemKind, WheelFacts};
use std::io::Read;
use std::path::Path;

/// Largest wheel member inflated into memory (libtorch_cuda.so is about 0.5 GB).
pub const MAX_MEMBER: u64 = 4 << 30;

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
                        let file = e.path();
                        if file.extension().is_some_and(|x| x == "whl") {
                            wheel(file, opts, &mut binaries, &mut wheels);
                        } else if head_looks_binary(file) {
                            match inspect_path(file, opts) {
                                Ok(b) => binaries.extend(b),
                                Err(e) => binaries
                                    .push(unreadable(&file.display().to_string(), &e.error.to_string())),
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        let where_ = e
                            .path()
                            .map_or_else(|| p.display().to_string(), |x| x.display().to_string());
                        binaries.push(unreadable(&where_, &e.to_string()));
                    }
                }
            }
        } else if p.extension().is_some_and(|x| x == "whl") {
            wheel(p, opts, &mut binaries, &mut wheels);
        } else {
            binaries.extend(inspect_path(p, opts)?);
        }
    }
    Ok((binaries, wheels))
}

fn head_looks_binary(file: &Path) -> bool {
    let mut head = [0u8; 8];
    let n = std::fs::File::open(file)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    looks_binary(&head[..n], &file.to_string_lossy())
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
    let archive = std::fs::File::open(file)
        .map_err(|e| e.to_string())
        .and_then(|f| zip::ZipArchive::new(f).map_err(|e| e.to_string()));
    let mut archive = match archive {
        Ok(a) => a,
        Err(e) => {
            binaries.push(unreadable(&name, &format!("not a readable wheel (zip): {e}")));
            wheels.push(facts);
            return;
        }
    };
    for i in 0..archive.len() {
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
        let mut data = Vec::with_capacity(member.size() as usize);
        data.extend_from_slice(&head[..n]);
        match member.by_ref().take(MAX_MEMBER).read_to_end(&mut data) {
            Ok(_) => binaries.extend(bytes(&label, &data, opts)),
            Err(e) => binaries.push(unreadable(&label, &format!("cannot be inflated: {e}"))),
        }
    }
    wheels.push(facts);
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
}
