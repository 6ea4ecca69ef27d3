//! Differential test against `cuobjdump` (CUDA 13.0), using the golden listings recorded next to each real
//! fixture by `fixtures/build.sh` on a machine with nvcc: `<name>.lelf-lptx.txt` (`--list-elf --list-ptx`),
//! `<name>.all.lelf-lptx.txt` (the same with `-all`, which adds `__nv_relfatbin`) and `<name>.headers.txt`
//! (plain `cuobjdump`: one header block per entry). cudadiag must list the same entries in the same order, with
//! the same kind, architecture, code version, host, compression, debug flag, identifier and ptxas options.

use cudadiag::facts::{BinaryFacts, CodeKind, Compression, DeviceCode};
use cudadiag::inspect::{self, InspectOptions};
use std::path::{Path, PathBuf};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13")
}

/// Every fixture input that has a golden listing.
fn fixtures() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixture_dir())
        .expect("fixtures/cuda13 exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            !name.ends_with(".txt") && p.with_file_name(format!("{name}.lelf-lptx.txt")).exists()
        })
        .collect();
    out.sort();
    out
}

fn inspect(path: &Path) -> Vec<BinaryFacts> {
    inspect::path(path, &InspectOptions::default()).expect("fixture readable")
}

/// `ELF file    1: multi.1.sm_90a.cubin` → (sass, sm_90a); `PTX file    1: multi.1.sm_100f.ptx` → (ptx,
/// compute_100f). Lines that are not listings (cuobjdump's "info" messages) are skipped.
fn parse_listing(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (kind, rest) = if let Some(r) = l.strip_prefix("ELF file") {
                ("sass", r)
            } else if let Some(r) = l.strip_prefix("PTX file") {
                ("ptx", r)
            } else {
                return None;
            };
            let name = rest.split(": ").nth(1)?.trim();
            let stem = name.rsplit_once('.')?.0; // drop .cubin/.ptx
            let arch = stem.rsplit('.').next()?; // sm_90a
            let arch = arch.strip_prefix("sm_")?;
            let arch = if kind == "sass" {
                format!("sm_{arch}")
            } else {
                format!("compute_{arch}")
            };
            Some((kind.to_string(), arch))
        })
        .collect()
}

/// cuobjdump's ELF listing drops the `f` suffix (fatbin.md §4); its PTX listing keeps it.
fn listing_arch(e: &DeviceCode) -> String {
    match (e.kind, e.suffix) {
        (CodeKind::Sass, Some('f')) => format!("sm_{}", e.sm),
        _ => e.arch.clone(),
    }
}

fn kind_name(k: CodeKind) -> &'static str {
    match k {
        CodeKind::Sass => "sass",
        CodeKind::Ptx => "ptx",
        CodeKind::Nvvm => "nvvm",
    }
}

/// The entries plain cuobjdump shows: everything in objects (their only fatbin is relocatable), but not
/// `__nv_relfatbin` in linked executables and libraries. NVVM entries are never listed by -lelf/-lptx.
fn shown(b: &BinaryFacts, all: bool) -> Vec<&DeviceCode> {
    let object = b.elf.as_ref().is_some_and(|e| e.elf_type == "rel");
    b.device_code
        .iter()
        .filter(|e| e.kind != CodeKind::Nvvm && (all || object || !e.relocatable))
        .collect()
}

#[test]
fn listings_match_cuobjdump_entry_by_entry() {
    let fixtures = fixtures();
    assert!(
        fixtures.len() >= 15,
        "expected the real fixtures, found {}",
        fixtures.len()
    );
    let mut compared = 0;
    for path in fixtures {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let binaries = inspect(&path);
        for (suffix, all) in [("lelf-lptx.txt", false), ("all.lelf-lptx.txt", true)] {
            let golden = path.with_file_name(format!("{name}.{suffix}"));
            let Ok(text) = std::fs::read_to_string(&golden) else {
                continue;
            };
            let expected = parse_listing(&text);
            if name.ends_with(".ptx") {
                // cuobjdump does not read raw PTX files ("does not contain device code").
                assert!(expected.is_empty());
                continue;
            }
            let ours: Vec<(String, String)> = binaries
                .iter()
                .flat_map(|b| shown(b, all))
                .map(|e| (kind_name(e.kind).to_string(), listing_arch(e)))
                .collect();
            assert_eq!(ours, expected, "{name}: cudadiag's listing differs from {suffix}");
            compared += expected.len();
        }
    }
    assert!(compared > 80, "only {compared} entries compared");
}

#[derive(Debug, Default, PartialEq)]
struct Header {
    kind: String,
    arch: String,
    code_version: String,
    host: String,
    bits64: bool,
    compressed: bool,
    debug: bool,
    identifier: Option<String>,
    options: Option<String>,
}

/// Plain `cuobjdump FILE`: blocks starting `Fatbin elf code:` / `Fatbin ptx code:`, `key = value` lines.
fn parse_headers(text: &str) -> Vec<Header> {
    let mut out = Vec::new();
    let mut cur: Option<Header> = None;
    for line in text.lines() {
        let kind = match line.trim() {
            "Fatbin elf code:" => Some("sass"),
            "Fatbin ptx code:" => Some("ptx"),
            "Fatbin nvvm code:" => Some("nvvm"),
            _ => None,
        };
        if let Some(kind) = kind {
            out.extend(cur.take());
            cur = Some(Header {
                kind: kind.into(),
                ..Header::default()
            });
            continue;
        }
        let Some(h) = cur.as_mut() else { continue };
        let l = line.trim_end();
        if let Some(v) = l.strip_prefix("arch = ") {
            h.arch = v.trim().to_string();
        } else if let Some(v) = l.strip_prefix("code version = ") {
            h.code_version = v.trim().trim_matches(|c| c == '[' || c == ']').replace(',', ".");
        } else if let Some(v) = l.strip_prefix("host = ") {
            h.host = v.trim().to_string();
        } else if l == "compile_size = 64bit" {
            h.bits64 = true;
        } else if l == "compressed" {
            h.compressed = true;
        } else if l == "has debug info" {
            h.debug = true;
        } else if let Some(v) = l.strip_prefix("identifier = ") {
            h.identifier = Some(v.trim().to_string()).filter(|s| !s.is_empty());
        } else if let Some(v) = l
            .strip_prefix("ptxasOptions = ")
            .or_else(|| l.strip_prefix("nvvmOptions = "))
        {
            h.options = Some(v.trim().to_string()).filter(|s| !s.is_empty());
        }
    }
    out.extend(cur);
    out
}

#[test]
fn entry_headers_match_cuobjdump() {
    let mut compared = 0;
    for path in fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let golden = path.with_file_name(format!("{name}.headers.txt"));
        let Ok(text) = std::fs::read_to_string(&golden) else {
            continue;
        };
        let expected = parse_headers(&text);
        if expected.is_empty() || name.ends_with(".cubin") {
            // Raw cubins have no fatbin header to compare.
            continue;
        }
        let binaries = inspect(&path);
        let ours: Vec<Header> = binaries
            .iter()
            .flat_map(|b| {
                let object = b.elf.as_ref().is_some_and(|e| e.elf_type == "rel");
                b.device_code.iter().filter(move |e| object || !e.relocatable)
            })
            .map(|e| Header {
                kind: kind_name(e.kind).to_string(),
                // cuobjdump names PTX arch as sm_XX in headers too.
                arch: e.arch.replace("compute_", "sm_"),
                code_version: format!("{}.{}", e.code_version[0], e.code_version[1]),
                host: e.host.clone().unwrap_or_default(),
                bits64: e.bits64,
                compressed: e.compression != Compression::None,
                debug: e.debug,
                identifier: e.identifier.clone(),
                options: e.options.clone(),
            })
            .collect();
        assert_eq!(
            ours.len(),
            expected.len(),
            "{name}: entry count differs from {name}.headers.txt"
        );
        for (i, (o, x)) in ours.iter().zip(&expected).enumerate() {
            assert_eq!(o, x, "{name}: entry {i} differs from cuobjdump's header");
        }
        compared += ours.len();
    }
    assert!(compared > 50, "only {compared} headers compared");
}

#[test]
fn listing_parser_reads_cuobjdump_names() {
    let got = parse_listing(
        "ELF file    1: multi.1.sm_90a.cubin\nPTX file    1: multi.1.sm_100f.ptx\nELF file    2: vadd.sm_75.cubin\ncuobjdump info    : x\n",
    );
    assert_eq!(
        got,
        vec![
            ("sass".to_string(), "sm_90a".to_string()),
            ("ptx".to_string(), "compute_100f".to_string()),
            ("sass".to_string(), "sm_75".to_string())
        ]
    );
}

/// Pre-CUDA-13 cubins (ptxas 11.8, 12.4, 12.8, 12.9; built by `fixtures/build-old-cubins.sh`) against
/// `cuobjdump -elf`'s header line: `64bit elf: type=2, abi=7, sm=90a, toolkit=124, flags = 0x5a0d5a`.
#[test]
fn old_cubins_match_cuobjdump_elf_header() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/old");
    let mut checked = 0;
    let mut abis = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("fixtures/old exists") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("cubin") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let golden = std::fs::read_to_string(path.with_file_name(format!("{name}.elf.txt"))).unwrap();
        let line = golden
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("64bit elf:") || l.starts_with("64-bit ELF:"))
            .unwrap_or_else(|| panic!("{name}: no ELF header line in golden"));
        // Two spellings: `64bit elf: type=2, abi=7, sm=90a, toolkit=124, flags = 0x5a0d5a` (cuobjdump 12.8 on
        // ABI 7) and `64-bit ELF: type=ET_EXEC, ABI=8, sm=100a, toolkit=12.8, flags=0x600640a`.
        let lower = line.to_ascii_lowercase();
        let field = |key: &str| -> String {
            lower
                .split([',', ':'])
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| k.trim() == key)
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_else(|| panic!("{name}: no {key} in {line}"))
        };
        let binaries = inspect(&path);
        let e = &binaries[0].device_code[0];
        let c = e.cubin.as_ref().expect("cubin facts");
        let sm = format!("{}{}", c.sm, if c.arch_specific { "a" } else { "" });
        assert_eq!(sm, field("sm"), "{name}: sm");
        assert_eq!(c.abi_version.to_string(), field("abi"), "{name}: abi");
        assert_eq!(format!("0x{:x}", c.e_flags), field("flags"), "{name}: flags");
        let tk = field("toolkit").replace('.', "");
        let ours = c.cuinfo_toolkit.as_deref().map(|t| t.replace('.', ""));
        if ours.is_some() {
            assert_eq!(ours.as_deref(), Some(tk.as_str()), "{name}: toolkit");
        }
        abis.insert(c.abi_version);
        checked += 1;
    }
    assert!(checked >= 12, "only {checked} old cubins checked");
    assert!(
        abis.contains(&7) && abis.contains(&8),
        "both e_flags layouts must be covered: {abis:?}"
    );
}
