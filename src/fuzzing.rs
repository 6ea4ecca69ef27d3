//! Entry points for the fuzz targets (`fuzz/`) and the mutation tests (`tests/it/loader_malformed.rs`): each runs
//! every parser the loader emulation applies to one kind of untrusted input, the way the loader applies it.
//! Not part of the stable interface.
//!
//! Every one of them must return, whatever the bytes: no panic, no unbounded allocation, no endless walk.

use crate::inspect::exports::Exports;
use crate::inspect::source::Source;
use crate::inspect::{self, RodataScan};
use crate::loader::cache::{self, LdCache};
use crate::loader::platform;
use goblin::elf::header::{EM_386, EM_AARCH64, EM_X86_64};
use std::sync::Arc;

/// One object's bytes as the loader reads a library it maps: its loader view (dynamic section, version
/// needs, where `.rodata` lies, cut into the parts the search reads), its versioned imports, and its exports,
/// asked for each of those imports and for names it may or may not define.
pub fn loader_object(data: &[u8]) {
    let map = Arc::new(Source::Owned(data.to_vec()));
    let view = inspect::loader_view_of(map.clone(), RodataScan::Always);
    for &(start, size) in &view.rodata {
        let _ = inspect::rodata_parts(start, size, 1 << 20);
    }
    let imports = inspect::versioned_imports(&map).unwrap_or_default();
    if let Some(exports) = Exports::of(map) {
        for s in imports.iter().take(4096) {
            if let Some(v) = &s.version {
                let _ = exports.defines(&s.name, v);
            }
        }
        for (name, version) in [("dlopen", "GLIBC_2.2.5"), ("cuInit", "libcuda.so.1"), ("", "")] {
            let _ = exports.defines(name, version);
        }
    }
}

/// An `/etc/ld.so.cache`: parsed, and the names of its first entries looked up as x86-64, i386 and AArch64
/// loaders with glibc-hwcaps subdirectories would.
pub fn ld_cache(data: &[u8]) {
    let Ok(cache) = LdCache::parse(data) else {
        return;
    };
    let hwcaps = ["x86-64-v3".to_string(), "x86-64-v2".to_string()];
    for e in cache.entries.iter().take(256) {
        for (machine, is_64) in [(EM_X86_64, true), (EM_386, false), (EM_AARCH64, true)] {
            if let Some(id) = cache::default_id(machine, is_64) {
                let _ = cache.lookup(&e.name, id, &hwcaps, 3);
            }
        }
    }
    let _ = cache.lookup("libcuda.so.1", 0x0303, &[], 1);
}

/// An interpreter's image, as the loader reads a `PT_INTERP` file: its default directories, both classes.
pub fn ld_so_image(data: &[u8]) {
    let _ = platform::system_dirs_in(data, true);
    let _ = platform::system_dirs_in(data, false);
}

/// Renders `facts` with their findings and verdicts in every format, into a sink: the renderers meet whatever
/// strings the facts hold (a snapshot's, a machine's).
fn judge_and_render(facts: crate::facts::Facts, matrix: &crate::matrix::Matrix) {
    use crate::report::{self, OutputFormat, Paint, RenderOptions, Report};
    let judgement = crate::rules::judge(&facts, matrix);
    let report = Report::new(facts, judgement);
    for format in [
        OutputFormat::Human,
        OutputFormat::Json,
        OutputFormat::Sarif,
        OutputFormat::Junit,
        OutputFormat::Github,
    ] {
        let opts = RenderOptions {
            format,
            paint: Paint::plain(),
            detail: crate::report::Detail::Everything,
        };
        let _ = report::render(&report, &opts, &mut std::io::sink());
    }
}

/// A snapshot file (`--facts`): decoded as `snapshot::load` decodes it, then judged and rendered. A snapshot
/// comes from a customer's machine: no field of it may make a rule or a renderer panic.
pub fn snapshot(text: &str) {
    let Ok(matrix) = crate::matrix::Matrix::bundled() else {
        return;
    };
    if let Ok(facts) = crate::diagnose::snapshot::parse(text, "fuzz") {
        judge_and_render(facts, &matrix);
    }
}

/// A node file's head as `fleet` decodes it (`fleet::head`, the skim) against `serde_json`'s whole decode:
/// where `serde_json` gives a head the skim gives the same one, and where the skim refuses the text
/// `serde_json` does too, with the same message. (The one chosen difference, damage inside a report's
/// library catalogue, only ever makes the skim accept.)
pub fn fleet_head(text: &str) {
    let whole = serde_json::from_str::<crate::fleet::head::Head<'_>>(text);
    match (crate::fleet::head::decode(text), whole) {
        (Ok(skim), Ok(whole)) => assert_eq!(skim, whole),
        (Err(skim), Err(whole)) => assert_eq!(skim.to_string(), whole.to_string()),
        (Err(skim), Ok(_)) => panic!("the skim refused what serde_json reads: {skim}"),
        (Ok(_), Err(_)) => {}
    }
}

/// `snapshot --redact` replayed: the input's first line is a host name, its second a user name, the rest a
/// snapshot. The snapshot is redacted as `snapshot --redact` does it (the names, the homes its strings
/// mention) and must read back as a snapshot: redaction rewrites data, never structure, whatever the names.
pub fn redact(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.splitn(3, '\n');
    let (Some(host), Some(user), Some(snapshot)) = (lines.next(), lines.next(), lines.next()) else {
        return;
    };
    let Ok(facts) = crate::diagnose::snapshot::parse(snapshot, "fuzz") else {
        return;
    };
    let Ok(plain) = serde_json::to_value(&facts) else {
        return;
    };
    let mut names = crate::bundle::redact::Names::default();
    names.host(host);
    names.user(user);
    names.home(&format!("/home/{user}"));
    names.homes_in(&plain);
    let mut r = crate::bundle::redact::Redactor::new(&names);
    let value = match r.facts(facts) {
        Ok(v) => v,
        Err(e) => panic!("the facts did not serialise once redacted: {e}"),
    };
    let bundle = serde_json::json!({"snapshot_version": 1, "tool": "fuzz", "facts": value,
        "redactions": r.report()});
    if let Err(e) = crate::diagnose::snapshot::parse(&bundle.to_string(), "redacted") {
        panic!(
            "host {host:?}, user {user:?}: the redacted snapshot does not read back: {}",
            e.0
        );
    }
}

/// Policy and data files: a `cudadiag.toml` policy, a compatibility matrix (`--matrix`, validated as it is
/// loaded), the pip package table, `Requires-Dist` lines with their environment markers, and a `RECORD`'s
/// paths.
pub fn config_text(text: &str) {
    let _ = crate::policy::Policy::parse(text, "fuzz");
    let _ = crate::python::dist_info::record_paths(text);
    let _ = crate::rules::wheel::Table::parse(text);
    let _ = crate::matrix::Matrix::parse(text, "fuzz");
    let env = crate::inspect::pep508::Env::of_wheel(std::path::Path::new(
        "x-1-cp311-cp311-manylinux2014_x86_64.whl",
    ));
    for line in text.lines().take(256) {
        let _ = crate::inspect::pep508::requirement(line, &env);
    }
}

/// The text files of a machine as `doctor --root` reads them (procfs, sysfs, ld.so.conf, dpkg, pip metadata,
/// the container and Jetson markers): the bytes are cut at NUL bytes into the files of a small machine tree in
/// a temporary directory, which is collected, judged and rendered.
pub fn host_root(data: &[u8]) {
    const FILES: &[&str] = &[
        "proc/driver/nvidia/version",
        "proc/driver/nvidia/gpus/0000:01:00.0/information",
        "etc/ld.so.conf",
        "etc/ld.so.conf.d/cuda.conf",
        "var/lib/dpkg/status",
        "var/lib/dpkg/info/libcudart12.list",
        "proc/self/status",
        "proc/modules",
        "proc/1/cgroup",
        "sys/module/nvidia/version",
        "etc/nv_tegra_release",
        "usr/local/cuda-12.4/version.json",
        "usr/lib/python3/dist-packages/nvidia_cuda_runtime_cu12-12.4.127.dist-info/RECORD",
        "usr/lib/python3/dist-packages/nvidia_cuda_runtime_cu12-12.4.127.dist-info/METADATA",
        "opt/conda/conda-meta/cuda-cudart-12.4.127-0.json",
        "etc/ld.so.preload",
        // Last, so that older corpus entries keep their meaning (a Jetson's SoC and board).
        "proc/device-tree/compatible",
        "proc/device-tree/model",
    ];
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    for (chunk, path) in data.split(|&b| b == 0).zip(FILES) {
        let file = dir.path().join(path);
        if let Some(parent) = file.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(file, chunk);
    }
    let Ok(matrix) = crate::matrix::Matrix::bundled() else {
        return;
    };
    let root = crate::system::Root::at(dir.path());
    let env = crate::system::Env::empty();
    let opts = crate::host::CollectOptions {
        skip_catalog: false,
        progress: None,
    };
    let host = crate::host::collect(&root, &env, &opts);
    judge_and_render(
        crate::facts::Facts {
            host: Some(host),
            ..Default::default()
        },
        &matrix,
    );
}

/// A Python wheel (a zip archive): opened and every member inspected as `audit` does, through a temporary
/// file since the wheel reader works on files.
pub fn wheel(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let file = dir.path().join("fuzz-1.0-py3-none-any.whl");
    if std::fs::write(&file, data).is_err() {
        return;
    }
    let opts = crate::inspect::InspectOptions {
        depth: crate::inspect::Depth::Full,
        max_decompressed: 16 << 20,
        // A small run budget: a wheel's members are inflated to temporary files, and a fuzzing run must not
        // fill the disk.
        budget: std::sync::Arc::new(crate::inspect::budget::Budget::new(
            256 << 20,
            std::time::Duration::from_secs(10),
        )),
        ..Default::default()
    };
    let (mut binaries, mut wheels) = (Vec::new(), Vec::new());
    crate::inspect::wheel::wheel(&file, &opts, &mut binaries, &mut wheels);
}

/// Any bytes as a container image file (`inspect --image`): opened, its layers applied under small bounds, and
/// its entrypoint looked for. Must never panic, hang, or write past the bounds or outside its temporary
/// directory.
pub fn image(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let file = dir.path().join("image.tar");
    if std::fs::write(&file, data).is_err() {
        return;
    }
    let limits = crate::image::Limits {
        max_layers: 16,
        max_entries: 10_000,
        max_extracted: 64 << 20,
        max_file: 16 << 20,
        max_unpacked: 64 << 20,
        ratio_floor: 1 << 20,
        ..Default::default()
    };
    if let Ok(img) = crate::image::open(&file, None, &limits) {
        let _ = crate::image::entry::program(&img.root(), &img.config, &crate::system::Env::empty());
    }
}

/// Any bytes as the documents of an OCI image layout (`inspect --image DIR`): the manifest or index chooser
/// alone. The bytes are cut at each `\n--\n` into up to 16 documents: the first is `index.json` (or
/// `manifest.json`, `docker save`'s, when it starts with `[`), the N-th next is the blob of digest
/// `sha256:` + N as 64 hex digits. Indexes are followed, a platform picked and its config read, within the
/// image's budget for documents. Must never panic, hang or hold more than the budget.
pub fn image_manifest(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let mut docs = split_docs(data);
    docs.truncate(17);
    let top = match docs.first() {
        Some(d) if d.first() == Some(&b'[') => "manifest.json",
        _ => "index.json",
    };
    let blobs = dir.path().join("blobs/sha256");
    if std::fs::create_dir_all(&blobs).is_err()
        || std::fs::write(
            dir.path().join("oci-layout"),
            br#"{"imageLayoutVersion":"1.0.0"}"#,
        )
        .is_err()
    {
        return;
    }
    for (i, d) in docs.iter().enumerate() {
        let path = match i {
            0 => dir.path().join(top),
            n => blobs.join(format!("{n:064x}")),
        };
        if std::fs::write(path, d).is_err() {
            return;
        }
    }
    for platform in [None, Some("linux/arm64"), Some("linux/amd64/v3")] {
        let _ = crate::image::choose_only(dir.path(), platform);
    }
}

fn split_docs(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(at) = memchr::memmem::find(rest, b"\n--\n") {
        out.push(&rest[..at]);
        rest = &rest[at + 4..];
    }
    out.push(rest);
    out
}
