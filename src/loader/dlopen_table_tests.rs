use super::*;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A little-endian ELF header with one `PT_NOTE` program header over `notes`.
fn elf_with_notes(is_64: bool, notes: &[u8]) -> Vec<u8> {
    let (ehsize, phentsize) = if is_64 { (64usize, 56usize) } else { (52, 32) };
    let mut d = vec![0u8; ehsize + phentsize];
    d[..4].copy_from_slice(b"\x7fELF");
    d[4] = if is_64 { 2 } else { 1 };
    d[5] = 1;
    let notes_at = (ehsize + phentsize) as u64;
    let put16 = |d: &mut Vec<u8>, o: usize, v: u16| d[o..o + 2].copy_from_slice(&v.to_le_bytes());
    let put32 = |d: &mut Vec<u8>, o: usize, v: u32| d[o..o + 4].copy_from_slice(&v.to_le_bytes());
    let put64 = |d: &mut Vec<u8>, o: usize, v: u64| d[o..o + 8].copy_from_slice(&v.to_le_bytes());
    let ph = ehsize;
    if is_64 {
        put64(&mut d, 0x20, ehsize as u64);
        put16(&mut d, 0x36, phentsize as u16);
        put16(&mut d, 0x38, 1);
        put32(&mut d, ph, 4);
        put64(&mut d, ph + 8, notes_at);
        put64(&mut d, ph + 32, notes.len() as u64);
    } else {
        put32(&mut d, 0x1c, ehsize as u32);
        put16(&mut d, 0x2a, phentsize as u16);
        put16(&mut d, 0x2c, 1);
        put32(&mut d, ph, 4);
        put32(&mut d, ph + 4, notes_at as u32);
        put32(&mut d, ph + 16, notes.len() as u32);
    }
    d.extend_from_slice(notes);
    d
}

fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
    let mut n = Vec::new();
    n.extend_from_slice(&(name.len() as u32).to_le_bytes());
    n.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    n.extend_from_slice(&kind.to_le_bytes());
    n.extend_from_slice(name);
    n.resize(n.len().next_multiple_of(4), 0);
    n.extend_from_slice(desc);
    n.resize(n.len().next_multiple_of(4), 0);
    n
}

#[test]
fn build_id_is_read_from_the_gnu_note_after_others() {
    // An ABI tag note first (as glibc's objects have), then the build ID.
    let mut notes = note(b"GNU\0", 1, &[0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
    notes.extend(note(b"GNU\0", 3, &[0xde, 0xad, 0xbe, 0xef, 0x01]));
    for is_64 in [true, false] {
        assert_eq!(
            build_id(&elf_with_notes(is_64, &notes)).as_deref(),
            Some("deadbeef01")
        );
    }
    // Another vendor's note of type 3 is not a build ID.
    assert_eq!(build_id(&elf_with_notes(true, &note(b"XYZ\0", 3, &[1, 2]))), None);
}

#[test]
fn build_id_of_damaged_headers_is_none_without_panicking() {
    let notes = note(b"GNU\0", 3, &[0xab; 20]);
    let whole = elf_with_notes(true, &notes);
    for len in 0..whole.len() {
        let _ = build_id(&whole[..len]);
    }
    assert!(build_id(&whole[..whole.len() - 1]).is_none());
    // A note whose sizes run past the segment.
    let mut bad = notes.clone();
    bad[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(build_id(&elf_with_notes(true, &bad)).is_none());
    // A program header table past the end of the file.
    let mut far = whole.clone();
    far[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(build_id(&far).is_none());
}

#[test]
fn the_bundled_table_is_for_todays_needles() {
    // A change of DLOPEN_NEEDLES makes the table unusable (every library is searched again) until
    // scripts/gen-dlopen-table writes it anew.
    assert!(
        TABLE.lines().any(|l| l == needles_line()),
        "data/dlopen_names.jsonl was made for other needles: run scripts/gen-dlopen-table"
    );
    let entries: Vec<Entry> = TABLE
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!entries.is_empty());
    let index = index().expect("the table is for today's needles");
    assert_eq!(index.len(), entries.len(), "one entry per build ID");
    for e in &entries {
        let found = lookup(TABLE, &e.build_id).unwrap();
        assert_eq!(
            (found.soname, found.strings),
            (e.soname.clone(), e.strings.clone())
        );
        let indexed: Entry = serde_json::from_str(index[e.build_id.as_str()]).unwrap();
        assert_eq!(
            (indexed.soname, indexed.strings),
            (e.soname.clone(), e.strings.clone())
        );
    }
}

#[test]
fn a_table_for_other_needles_is_not_used() {
    let line = r#"{"build_id":"ab","soname":"libx.so.1","from":"t","rodata":[[0,1]],"strings":[]}"#;
    assert!(lookup(&format!("{}\n{line}\n", needles_line()), "ab").is_some());
    assert!(lookup(&format!("# needles: libcuda.so\n{line}\n"), "ab").is_none());
    assert!(lookup(&format!("{}\n{line}\n", needles_line()), "abc").is_none());
}

/// Every shared library under `dirs` (links not followed; with `wheels`, only those of the wheels the table
/// covers: NVIDIA's, under a `nvidia/` directory, and PyTorch's, in `torch/lib/`), with its view and build ID.
fn libraries(dirs: &[PathBuf], wheels: bool) -> Vec<(PathBuf, LoaderView, String)> {
    let mut out = Vec::new();
    for dir in dirs {
        for e in walkdir::WalkDir::new(dir).into_iter().filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy();
            let covered = || {
                e.path().components().any(|c| c.as_os_str() == "nvidia")
                    || e.path().parent().is_some_and(|d| d.ends_with("torch/lib"))
            };
            if !e.file_type().is_file() || !name.contains(".so") || (wheels && !covered()) {
                continue;
            }
            let Ok(view) = crate::inspect::loader_view(e.path(), crate::inspect::RodataScan::Always) else {
                continue;
            };
            if let Some(id) = build_id(&view.data) {
                out.push((e.path().to_path_buf(), view, id));
            }
        }
    }
    out
}

/// The libraries the table is made from: NVIDIA's (under `nvidia/`) and PyTorch's (in `torch/lib/`), and with
/// `wheels` false every library with a build ID (what the check against the search walks).
#[test]
fn the_table_covers_nvidia_and_pytorch_libraries() {
    let Some(lib) = crate::inspect::sample_libraries(1).into_iter().find(|p| {
        crate::inspect::loader_view(p, crate::inspect::RodataScan::Always)
            .is_ok_and(|v| build_id(&v.data).is_some())
    }) else {
        // Every distribution CI runs on links its libraries with build IDs.
        panic!("no library with a build ID on this machine");
    };
    let t = tempfile::tempdir().unwrap();
    let site = t.path().join("site-packages");
    let at = |rel: &str| {
        let p = site.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(&lib, &p).unwrap();
        p
    };
    let nvidia = at("nvidia/cublas/lib/libx.so.13");
    let torch = at("torch/lib/libtorch_x.so");
    at("torch/libnot_in_lib.so");
    at("jaxlib/libother.so");
    let names = |wheels| {
        let mut v: Vec<PathBuf> = libraries(std::slice::from_ref(&site), wheels)
            .into_iter()
            .map(|(p, _, _)| p)
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(true), vec![nvidia, torch]);
    assert_eq!(names(false).len(), 4);
}

fn dirs_from(var: &str) -> Vec<PathBuf> {
    std::env::var_os(var)
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default()
}

/// The table against the search itself, on every library of the table found on this machine: under the
/// directories of `CUDADIAG_WHEEL_DIRS` (`:`-separated), else the active `VIRTUAL_ENV`.
#[test]
fn the_table_holds_what_the_search_finds() {
    let mut dirs = dirs_from("CUDADIAG_WHEEL_DIRS");
    if dirs.is_empty() {
        dirs = dirs_from("VIRTUAL_ENV");
    }
    let mut checked = 0;
    for (path, view, id) in libraries(&dirs, false) {
        let Some(entry) = lookup(TABLE, &id) else { continue };
        assert_eq!(
            view.elf.as_ref().and_then(|e| e.soname.clone()).as_deref(),
            Some(entry.soname.as_str())
        );
        assert_eq!(view.rodata, entry.rodata, "{}", path.display());
        assert_eq!(search_now(&view, &path), entry.strings, "{}", path.display());
        assert_eq!(known(&view), Some(entry.strings));
        checked += 1;
    }
    if checked == 0 {
        // Straight to stderr, past the harness's capture: shown whether the test passes or fails.
        let _ = writeln!(
            std::io::stderr(),
            "skipped the_table_holds_what_the_search_finds: none of the table's libraries under {dirs:?} \
             (set CUDADIAG_WHEEL_DIRS to site-packages directories with NVIDIA's wheels)"
        );
    }
}

/// `site-packages` wheel (dist-info name) that lists `path` in its RECORD, and the path in it.
fn wheel_of(path: &Path) -> String {
    let site = path.ancestors().find(|a| {
        a.file_name()
            .is_some_and(|n| n == "site-packages" || n == "dist-packages")
    });
    let Some(site) = site else {
        return path.display().to_string();
    };
    let rel = path
        .strip_prefix(site)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned();
    let mut infos: Vec<PathBuf> = std::fs::read_dir(site)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "dist-info"))
        .collect();
    infos.sort();
    for info in infos {
        let record = std::fs::read_to_string(info.join("RECORD")).unwrap_or_default();
        if record.lines().any(|l| l.split(',').next() == Some(rel.as_str())) {
            let name = info
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            return format!("{name}: {rel}");
        }
    }
    rel
}

/// The generator (`scripts/gen-dlopen-table`): the libraries of NVIDIA's wheels (files under a `nvidia/`
/// package directory) under the directories of `DLOPEN_TABLE_FROM`, searched, into `DLOPEN_TABLE_OUT`, with
/// the entries the file already has (when they were made for today's needles): tables made from the wheels
/// of several machines add up.
#[test]
#[ignore = "writes data/dlopen_names.jsonl: run through scripts/gen-dlopen-table"]
fn generate() {
    let dirs = dirs_from("DLOPEN_TABLE_FROM");
    let out = std::env::var_os("DLOPEN_TABLE_OUT").expect("DLOPEN_TABLE_OUT");
    let mut entries: std::collections::BTreeMap<(String, String), Entry> = Default::default();
    let old = std::fs::read_to_string(&out).unwrap_or_default();
    if old.lines().any(|l| l == needles_line()) {
        for line in old.lines().filter(|l| !l.starts_with('#')) {
            let e: Entry = serde_json::from_str(line).unwrap();
            entries.insert((e.soname.clone(), e.build_id.clone()), e);
        }
    }
    for (path, view, id) in libraries(&dirs, true) {
        let Some(soname) = view.elf.as_ref().and_then(|e| e.soname.clone()) else {
            continue;
        };
        if view.rodata.is_empty() || entries.contains_key(&(soname.clone(), id.clone())) {
            continue;
        }
        let strings = search_now(&view, &path);
        let from = wheel_of(&path);
        let entry = Entry {
            build_id: id.clone(),
            soname: soname.clone(),
            from,
            rodata: view.rodata.clone(),
            strings,
        };
        entries.insert((soname, id), entry);
    }
    let mut text = String::from(
        "# The dlopen names in the .rodata of NVIDIA's and PyTorch's libraries, by GNU build ID (src/loader/dlopen_table.rs).\n\
         # Written by scripts/gen-dlopen-table from the wheels' libraries; do not edit.\n",
    );
    text.push_str(&needles_line());
    text.push('\n');
    for e in entries.values() {
        text.push_str(&serde_json::to_string(e).unwrap());
        text.push('\n');
    }
    std::fs::write(out, text).unwrap();
}
