//! Hostile images, by class of issue 33: temporary trees left by signals (1), layers that a tar reader lists
//! differently (2), memory from a small file (3), `fleet --image`'s unpacks (5), and silent drops (8). Each
//! test is named after its class and failed on the build the issue was filed against.

use crate::support::cli::{cudadiag, slugs};
use crate::support::image::{Ent, Image, Layer, Pack, archive, system_layer, tar_of};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Says on stderr why a test could not run here (a silent pass would be a lie).
fn skip(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(root().join("fixtures/cuda13").join(name)).unwrap()
}

/// Runs cudadiag with `TMPDIR` set; returns exit code, stdout and stderr.
fn run_in(tmp: &Path, args: &[&str]) -> (i32, String, String) {
    let out = cudadiag()
        .env("TMPDIR", tmp)
        .args(["--color", "never"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json_in(tmp: &Path, args: &[&str]) -> (i32, serde_json::Value) {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let (code, out, err) = run_in(tmp, &a);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v)
}

/// The names left in a directory.
fn left_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn policy(dir: &Path) -> PathBuf {
    let p = dir.join("cudadiag.toml");
    std::fs::write(&p, "[targets]\nsass = [\"sm_90\"]\n").unwrap();
    p
}

/// An sm_80-only program as `/usr/local/bin/app` in one layer built from raw tar bytes.
fn raw_layer_image(layer: Vec<u8>) -> Vec<(String, Vec<u8>)> {
    let mut img = Image::new(vec![Layer::new()]).cmd(&["app"]);
    img.layers.clear();
    let mut members = img.docker_members();
    members.retain(|(n, _)| !n.ends_with("layer.tar"));
    members.push(("layer0/layer.tar".into(), layer));
    let manifest = members.iter_mut().find(|(n, _)| n == "manifest.json").unwrap();
    let mut m: serde_json::Value = serde_json::from_slice(&manifest.1).unwrap();
    m[0]["Layers"] = serde_json::json!(["layer0/layer.tar"]);
    manifest.1 = serde_json::to_vec(&m).unwrap();
    members
}

/// A tar header block: ustar (`posix`) or v7, its checksum set.
fn header(name: &str, size: u64, kind: u8, posix: bool) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..107].copy_from_slice(b"0000755");
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = kind;
    if posix {
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
    }
    set_checksum(&mut h);
    h
}

fn set_checksum(h: &mut [u8; 512]) {
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
}

/// `data` and its padding to a block.
fn padded(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
}

/// A PAX extended header (`x`) holding `records`.
fn pax(out: &mut Vec<u8>, records: &[(&str, &str)]) {
    let mut body = Vec::new();
    for (k, v) in records {
        let rest = format!(" {k}={v}\n");
        let mut len = rest.len() + 1;
        while format!("{len}").len() + rest.len() != len {
            len += 1;
        }
        body.extend_from_slice(format!("{len}{rest}").as_bytes());
    }
    out.extend_from_slice(&header("PaxHeaders/x", body.len() as u64, b'x', true));
    padded(out, &body);
}

// Class 1: temporary trees.

/// An image whose unpack takes a while even in a debug build: 40,000 small ELF-looking files, written whole.
fn slow_image(dir: &Path) -> PathBuf {
    let mut elf = b"\x7fELF".to_vec();
    elf.resize(1024, 7);
    let entries: Vec<Ent> = (0..40_000)
        .map(|i| Ent::File(format!("usr/lib/many/d{}/lib{i}.so", i % 100), elf.clone(), 0o755))
        .collect();
    let layer = tar_of(&entries);
    let members = raw_layer_image(layer);
    let p = dir.join("slow.tar");
    std::fs::write(&p, archive(&members)).unwrap();
    p
}

/// Starts `args` with a private `TMPDIR`, waits until its tree holds files (it is unpacking), sends `signal`;
/// returns the exit code and the time from the signal to the exit.
fn kill_mid_unpack(tmp: &Path, args: &[&str], signal: &str) -> (Option<i32>, Duration, bool) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cudadiag"))
        .env("TMPDIR", tmp)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut mid = false;
    while start.elapsed() < Duration::from_secs(60) {
        let unpacking = std::fs::read_dir(tmp).unwrap().flatten().any(|e| {
            let usr = e.path().join("root/usr/lib/many");
            e.file_name().to_string_lossy().starts_with("cudadiag-image-")
                && std::fs::read_dir(&usr).is_ok_and(|d| d.count() > 5)
        });
        if unpacking {
            mid = true;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let sent = Instant::now();
    let exit = child.wait().unwrap();
    (exit.code(), sent.elapsed(), mid)
}

#[test]
fn class1_a_signal_mid_unpack_removes_the_tree_and_exits_128_plus_n() {
    let work = tempfile::tempdir().unwrap();
    let img = slow_image(work.path());
    let img = img.to_str().unwrap();
    let pol = policy(work.path());
    let nodes = work.path().join("nodes");
    std::fs::create_dir(&nodes).unwrap();
    std::fs::write(nodes.join("n.json"), b"{}").unwrap();
    let commands: [Vec<&str>; 3] = [
        vec!["inspect", "--image", img, "--no-host"],
        vec!["audit", "--policy", pol.to_str().unwrap(), img],
        vec!["fleet", "--image", img, nodes.to_str().unwrap()],
    ];
    for args in &commands {
        for (signal, n) in [("INT", 2), ("TERM", 15), ("HUP", 1)] {
            let tmp = tempfile::tempdir().unwrap();
            let (code, took, mid) = kill_mid_unpack(tmp.path(), args, signal);
            assert!(
                mid,
                "{args:?}: the signal did not come mid-unpack (the unpack ended first)"
            );
            assert_eq!(code, Some(128 + n), "{args:?} SIG{signal}");
            assert!(took < Duration::from_secs(10), "{args:?} SIG{signal}: {took:?}");
            assert_eq!(left_in(tmp.path()), Vec::<String>::new(), "{args:?} SIG{signal}");
        }
    }
}

/// This process's PID namespace, as the tree names record it.
fn pid_namespace() -> Option<u64> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    link.to_str()?
        .strip_prefix("pid:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[test]
fn class1_a_stale_tree_of_a_killed_run_is_removed_by_the_next() {
    let Some(ns) = pid_namespace() else {
        skip("/proc/self/ns/pid is not readable here");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // A run that is gone: a finished child's PID, with a start time no process has.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let stale = tmp.path().join(format!("cudadiag-image-{ns}.{pid}.1-AbCdEf"));
    std::fs::create_dir_all(stale.join("root/usr/lib")).unwrap();
    std::fs::write(stale.join("root/usr/lib/libx.so"), vec![0u8; 4096]).unwrap();
    // A link with a stale tree's name, to a directory that must survive.
    let keep = work.path().join("keep");
    std::fs::create_dir(&keep).unwrap();
    std::fs::write(keep.join("file"), b"k").unwrap();
    let link = tmp.path().join(format!("cudadiag-image-{ns}.{pid}.1-LiNkEd"));
    std::os::unix::fs::symlink(&keep, &link).unwrap();
    // The tree of a live process (this test's) stays.
    let me = std::process::id();
    let start: u64 = {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 1..];
        after.split_whitespace().nth(19).unwrap().parse().unwrap()
    };
    let live = tmp
        .path()
        .join(format!("cudadiag-image-{ns}.{me}.{start}-LiVeOn"));
    std::fs::create_dir(&live).unwrap();

    let img = work.path().join("app.tar");
    Image::new(vec![Layer::new().exe("usr/local/bin/app", &fixture("sm80"))])
        .cmd(&["app"])
        .docker_save(&img, Pack::None);
    let (code, _, err) = run_in(
        tmp.path(),
        &["inspect", "--image", img.to_str().unwrap(), "--no-host"],
    );
    assert!(code == 0 || code == 1, "{err}");
    assert!(!stale.exists(), "the killed run's tree is removed");
    assert!(
        std::fs::symlink_metadata(&link).is_ok(),
        "a link is never taken for a tree"
    );
    assert!(keep.join("file").exists(), "nor followed");
    assert!(live.exists(), "a live run's tree stays");
    let mut left = left_in(tmp.path());
    left.sort();
    assert_eq!(left.len(), 2, "{left:?}");
}

// Class 2: what a tar reader lists.

#[test]
fn class2_a_pax_size_record_is_applied_and_audit_sees_the_file() {
    let app = fixture("sm80");
    let mut layer = Vec::new();
    pax(&mut layer, &[("size", &app.len().to_string())]);
    // The header says 0 bytes; the PAX record says how many follow, as every tar reader applies it.
    layer.extend_from_slice(&header("usr/local/bin/app", 0, b'0', true));
    padded(&mut layer, &app);
    layer.extend_from_slice(&[0u8; 1024]);
    let work = tempfile::tempdir().unwrap();
    let img = work.path().join("pax.tar");
    std::fs::write(&img, archive(&raw_layer_image(layer))).unwrap();
    let pol = policy(work.path());
    let tmp = tempfile::tempdir().unwrap();
    let (code, v) = json_in(
        tmp.path(),
        &["audit", "--policy", pol.to_str().unwrap(), img.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{v}");
    assert!(slugs(&v).contains(&"policy-missing-arch".to_string()), "{v}");
}

#[test]
fn class2_a_v7_tar_image_is_recognised_by_audit() {
    let work = tempfile::tempdir().unwrap();
    let img = Image::new(vec![Layer::new().exe("usr/local/bin/app", &fixture("sm80"))]).cmd(&["app"]);
    // The outer archive in the old v7 format: no magic, names in the 100-byte field.
    let mut v7 = Vec::new();
    for (name, bytes) in img.docker_members() {
        v7.extend_from_slice(&header(&name, bytes.len() as u64, b'0', false));
        padded(&mut v7, &bytes);
    }
    v7.extend_from_slice(&[0u8; 1024]);
    let p = work.path().join("v7.tar");
    std::fs::write(&p, v7).unwrap();
    let pol = policy(work.path());
    let tmp = tempfile::tempdir().unwrap();
    let (code, v) = json_in(
        tmp.path(),
        &["audit", "--policy", pol.to_str().unwrap(), p.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{v}");
    assert!(slugs(&v).contains(&"policy-missing-arch".to_string()), "{v}");
}

#[test]
fn class2_a_wheel_inside_an_image_is_audited() {
    let mut whl = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut whl);
        let o = zip::write::SimpleFileOptions::default();
        z.start_file("kern/libkern.so", o).unwrap();
        std::io::Write::write_all(&mut z, &fixture("sm80")).unwrap();
        z.start_file("kern-1.0.dist-info/METADATA", o).unwrap();
        std::io::Write::write_all(&mut z, b"Metadata-Version: 2.1\nName: kern\nVersion: 1.0\n").unwrap();
        z.start_file("kern-1.0.dist-info/WHEEL", o).unwrap();
        std::io::Write::write_all(
            &mut z,
            b"Wheel-Version: 1.0\nTag: py3-none-manylinux2014_x86_64\n",
        )
        .unwrap();
        z.finish().unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let img = work.path().join("wheel.tar");
    Image::new(vec![Layer::new().file(
        "opt/wheels/kern-1.0-py3-none-manylinux2014_x86_64.whl",
        whl.get_ref(),
    )])
    .docker_save(&img, Pack::Gzip);
    let pol = policy(work.path());
    let tmp = tempfile::tempdir().unwrap();
    let (code, v) = json_in(
        tmp.path(),
        &["audit", "--policy", pol.to_str().unwrap(), img.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{v}");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["slug"] == "policy-missing-arch")
        .unwrap_or_else(|| panic!("{v}"));
    assert!(f["message"].as_str().unwrap().contains("libkern.so"), "{f}");
}

// Class 8 (the layer part): a truncated layer, GNU sparse files.

#[test]
fn class8_a_plain_layer_cut_4_gib_short_is_refused() {
    // The program is there (the image is otherwise fine), then a file whose data is missing.
    let mut layer = tar_of(&[
        Ent::File("etc/hostname".into(), b"box\n".to_vec(), 0o644),
        Ent::File("usr/local/bin/app".into(), fixture("sm80"), 0o755),
    ]);
    layer.truncate(layer.len() - 1024);
    // A data file of 5 GiB (skipped by seeking: nothing reads it) whose bytes are not there.
    let mut h = header("usr/share/big.dat", 5 << 30, b'0', true);
    h[100..107].copy_from_slice(b"0000644");
    set_checksum(&mut h);
    layer.extend_from_slice(&h);
    layer.extend_from_slice(&[0u8; 4096]);
    let work = tempfile::tempdir().unwrap();
    let img = work.path().join("cut.tar");
    std::fs::write(&img, archive(&raw_layer_image(layer))).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) = run_in(
        tmp.path(),
        &["inspect", "--image", img.to_str().unwrap(), "--no-host"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ends") && err.contains("before"), "{err}");
    assert_eq!(left_in(tmp.path()), Vec::<String>::new());
}

/// The hole left in the sparse file (the fixtures' zero runs are 1 KiB, at block boundaries).
const HOLE: usize = 1024;

/// The fixture with a 1 KiB run of zeros, block-aligned, that a sparse map can leave as a hole.
fn hole_in(elf: &[u8]) -> Option<usize> {
    (512..elf.len().saturating_sub(HOLE))
        .step_by(512)
        .find(|&o| elf[o..o + HOLE].iter().all(|&b| b == 0))
}

/// `elf` as a sparse file in each format: its data around the hole at `hole`, the hole not stored.
fn sparse_layers(elf: &[u8], hole: usize) -> Vec<(&'static str, Vec<u8>)> {
    let (a, b) = (&elf[..hole], &elf[hole + HOLE..]);
    let stored: Vec<u8> = [a, b].concat();
    let name = "usr/local/bin/app";
    let mut out = Vec::new();
    // Old GNU (`S`): the map in the header.
    {
        let mut h = header(name, stored.len() as u64, b'S', false);
        h[257..265].copy_from_slice(b"ustar  \0");
        let entry = |h: &mut [u8; 512], i: usize, off: usize, len: usize| {
            let at = 386 + i * 24;
            h[at..at + 11].copy_from_slice(format!("{off:011o}").as_bytes());
            h[at + 12..at + 23].copy_from_slice(format!("{len:011o}").as_bytes());
        };
        entry(&mut h, 0, 0, a.len());
        entry(&mut h, 1, hole + HOLE, b.len());
        h[483..494].copy_from_slice(format!("{:011o}", elf.len()).as_bytes());
        set_checksum(&mut h);
        let mut l = h.to_vec();
        padded(&mut l, &stored);
        out.push(("old GNU", l));
    }
    let map = format!("0,{},{},{}", a.len(), hole + HOLE, b.len());
    let real = elf.len().to_string();
    // PAX 0.1: the map in one record.
    {
        let mut l = Vec::new();
        pax(
            &mut l,
            &[
                ("GNU.sparse.size", &real),
                ("GNU.sparse.map", &map),
                ("GNU.sparse.name", name),
            ],
        );
        l.extend_from_slice(&header("GNUSparseFile.0/app", stored.len() as u64, b'0', true));
        padded(&mut l, &stored);
        out.push(("PAX 0.1", l));
    }
    // PAX 0.0: offset/numbytes pairs.
    {
        let mut l = Vec::new();
        let (o2, n1, n2) = (
            (hole + HOLE).to_string(),
            a.len().to_string(),
            b.len().to_string(),
        );
        pax(
            &mut l,
            &[
                ("GNU.sparse.size", &real),
                ("GNU.sparse.numblocks", "2"),
                ("GNU.sparse.offset", "0"),
                ("GNU.sparse.numbytes", &n1),
                ("GNU.sparse.offset", &o2),
                ("GNU.sparse.numbytes", &n2),
                ("path", name),
            ],
        );
        l.extend_from_slice(&header("GNUSparseFile.0/app", stored.len() as u64, b'0', true));
        padded(&mut l, &stored);
        out.push(("PAX 0.0", l));
    }
    // PAX 1.0: the map at the start of the data, padded to a block.
    {
        let mut data = format!("2\n0\n{}\n{}\n{}\n", a.len(), hole + HOLE, b.len()).into_bytes();
        data.resize(512, 0);
        data.extend_from_slice(&stored);
        let mut l = Vec::new();
        pax(
            &mut l,
            &[
                ("GNU.sparse.major", "1"),
                ("GNU.sparse.minor", "0"),
                ("GNU.sparse.name", name),
                ("GNU.sparse.realsize", &real),
            ],
        );
        l.extend_from_slice(&header("GNUSparseFile.0/app", data.len() as u64, b'0', true));
        padded(&mut l, &data);
        out.push(("PAX 1.0", l));
    }
    for (_, l) in &mut out {
        l.extend_from_slice(&[0u8; 1024]);
    }
    out
}

#[test]
fn class8_gnu_sparse_files_keep_their_holes() {
    let elf = fixture("sm80");
    let Some(hole) = hole_in(&elf) else {
        skip("the fixture has no 1 KiB block-aligned run of zeros to leave as a hole");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    for (format, layer) in sparse_layers(&elf, hole) {
        let img = work.path().join("sparse.tar");
        std::fs::write(&img, archive(&raw_layer_image(layer))).unwrap();
        let opened = cudadiag::image::open(&img, None, &cudadiag::image::Limits::default())
            .unwrap_or_else(|e| panic!("{format}: {e}"));
        let got = std::fs::read(opened.dir().join("usr/local/bin/app")).unwrap();
        assert!(
            got == elf,
            "{format}: the file differs from the original ({} bytes, {} expected)",
            got.len(),
            elf.len()
        );
    }
}

// Class 3: memory from a small file.

/// Peak RSS in KiB of `cudadiag ARGS` (GNU time's `%M`); `None` where /usr/bin/time is not there.
fn peak_kib(tmp: &Path, args: &[&str]) -> Option<(u64, i32)> {
    if !Path::new("/usr/bin/time").exists() {
        return None;
    }
    let out = std::process::Command::new("/usr/bin/time")
        .arg("-f")
        .arg("PEAK %M")
        .arg(env!("CARGO_BIN_EXE_cudadiag"))
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let peak = err
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("PEAK "))?
        .trim()
        .parse()
        .ok()?;
    Some((peak, out.status.code().unwrap_or(-1)))
}

/// A config of about 16 MiB (a long `Env`).
fn big_config() -> Vec<u8> {
    let env: Vec<String> = (0..190_000)
        .map(|i| format!("V{i}=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"))
        .collect();
    let c =
        serde_json::json!({"architecture": "amd64", "os": "linux", "config": {"Env": env, "Cmd": ["app"]}});
    let v = serde_json::to_vec(&c).unwrap();
    assert!(v.len() < 16 << 20 && v.len() > 14 << 20, "{}", v.len());
    v
}

#[test]
fn class3_one_config_named_many_times_is_read_once() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let layer = tar_of(&[Ent::File("usr/local/bin/app".into(), fixture("sm80"), 0o755)]);
    // `docker save`: manifest.json naming one 16 MiB config eight times.
    let entry = serde_json::json!({"Config": "c.json", "RepoTags": ["a:1"], "Layers": ["l/layer.tar"]});
    let manifest = serde_json::to_vec(&vec![entry; 8]).unwrap();
    let docker = work.path().join("docker.tar");
    std::fs::write(
        &docker,
        archive(&[
            ("manifest.json".into(), manifest),
            ("c.json".into(), big_config()),
            ("l/layer.tar".into(), layer.clone()),
        ]),
    )
    .unwrap();
    // OCI: an index naming one manifest 32 times, and one naming 4,096 manifests that share that config.
    let blob = |n: u64| format!("{n:064x}");
    let oci = |copies: u64, distinct: bool| {
        let dir = work.path().join(format!("oci-{copies}"));
        let blobs = dir.join("blobs/sha256");
        std::fs::create_dir_all(&blobs).unwrap();
        std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        std::fs::write(blobs.join(blob(1)), big_config()).unwrap();
        std::fs::write(blobs.join(blob(2)), &layer).unwrap();
        let manifest = serde_json::json!({"config": {"digest": format!("sha256:{}", blob(1))},
            "layers": [{"digest": format!("sha256:{}", blob(2))}]});
        let mut descriptors = Vec::new();
        for i in 0..copies {
            let id = if distinct { 100 + i } else { 100 };
            if i == 0 || distinct {
                std::fs::write(blobs.join(blob(id)), serde_json::to_vec(&manifest).unwrap()).unwrap();
            }
            descriptors.push(serde_json::json!({"mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": format!("sha256:{}", blob(id)), "platform": {"os": "linux", "architecture": "amd64"}}));
        }
        std::fs::write(
            dir.join("index.json"),
            serde_json::to_vec(&serde_json::json!({"manifests": descriptors})).unwrap(),
        )
        .unwrap();
        dir
    };
    for img in [docker, oci(32, false), oci(4096, true)] {
        let shown = img.display().to_string();
        let args = [
            "inspect",
            "--image",
            shown.as_str(),
            "--no-host",
            "--format",
            "json",
        ];
        let Some((peak, code)) = peak_kib(tmp.path(), &args) else {
            skip("no /usr/bin/time to measure peak memory");
            return;
        };
        assert!(code == 0 || code == 1, "{shown}: exit {code}");
        // One 16 MiB config decoded (its Env kept) and the reading's buffers: far below the 1.2 GB of old.
        assert!(peak < 400 * 1024, "{shown}: peak RSS {peak} KiB");
        assert_eq!(left_in(tmp.path()), Vec::<String>::new());
    }
}

// Class 5: fleet --image.

#[test]
fn class5_fleet_image_unpacks_once_and_bounds_the_sets_of_mounts() {
    let work = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let img = work.path().join("app.tar");
    Image::new(vec![
        system_layer(),
        Layer::new().exe("usr/local/bin/app", &fixture("multi")),
    ])
    .cuda13()
    .cmd(&["app"])
    .docker_save(&img, Pack::Gzip);
    let base = work.path().join("base.json");
    let r = root().join("fixtures/hosts/h200-nix-open-580/root");
    let (code, _, err) = run_in(
        tmp.path(),
        &[
            "snapshot",
            "--root",
            r.to_str().unwrap(),
            "--clear-env",
            "-o",
            base.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let base: serde_json::Value = serde_json::from_slice(&std::fs::read(&base).unwrap()).unwrap();
    let nodes = work.path().join("nodes");
    std::fs::create_dir(&nodes).unwrap();
    // 80 nodes, each on a driver version of its own: more sets of mounts than the cap.
    for i in 0..80 {
        let mut n = base.clone();
        n["facts"]["host"]["driver"]["version"] = format!("580.{}.01", 10 + i).into();
        std::fs::write(
            nodes.join(format!("node{i}.json")),
            serde_json::to_vec(&n).unwrap(),
        )
        .unwrap();
    }
    let (_, v) = json_in(
        tmp.path(),
        &["fleet", "--image", img.to_str().unwrap(), nodes.to_str().unwrap()],
    );
    let judged = &v["artifact"]["image"];
    assert_eq!(judged["unpacked"], 1, "{judged}");
    assert_eq!(judged["mount_sets"], 64, "{judged}");
    let per_node = v["per_node"].as_array().unwrap();
    let not_judged = per_node
        .iter()
        .filter(|n| {
            n["prediction"]["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("not judged"))
        })
        .count();
    assert_eq!(not_judged, 16, "{v}");
    let judged = per_node
        .iter()
        .filter(|n| {
            n["prediction"]["outcome"].is_string()
                && !n["prediction"]["reason"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("not judged")
        })
        .count();
    assert_eq!(judged, 64, "{v}");
    assert_eq!(left_in(tmp.path()), Vec::<String>::new());
}

// Class 8: silent drops.

fn user_image(user: &str, passwd: &[u8]) -> Image {
    let mut img = Image::new(vec![
        Layer::new()
            .file("etc/passwd", passwd)
            .file("etc/group", b"root:x:0:\n")
            .exe("usr/local/bin/app", &fixture("sm80")),
    ])
    .cmd(&["app"]);
    img.user = user.into();
    img
}

#[test]
fn class8_an_image_user_absent_from_its_passwd_is_reported() {
    let work = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let passwd = b"root:x:0:0::/root:/bin/sh\n";
    let img = work.path().join("user.tar");
    user_image("app", passwd).docker_save(&img, Pack::None);
    let (code, v) = json_in(
        tmp.path(),
        &["inspect", "--image", img.to_str().unwrap(), "--no-host"],
    );
    assert_eq!(code, 1, "{v}");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["slug"] == "container-user-unknown")
        .unwrap_or_else(|| panic!("{v}"));
    assert!(f["message"].as_str().unwrap().contains("\"app\""), "{f}");
    // A passwd under the cap is read whole: the near miss of container-user-unchecked.
    assert!(
        !slugs(&v).contains(&"container-user-unchecked".to_string()),
        "{v}"
    );
    // The near miss: a numeric User needs no entry.
    user_image("1000:1000", passwd).docker_save(&img, Pack::None);
    let (_, v) = json_in(
        tmp.path(),
        &["inspect", "--image", img.to_str().unwrap(), "--no-host"],
    );
    assert!(!slugs(&v).iter().any(|s| s.starts_with("container-user")), "{v}");
}

#[test]
fn class8_a_passwd_over_the_cap_gives_a_note() {
    let work = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut passwd = b"root:x:0:0::/root:/bin/sh\napp:x:1000:1000::/app:/bin/sh\n".to_vec();
    for i in 0..40_000 {
        passwd.extend_from_slice(format!("user{i}:x:{}:100::/home/user{i}:/bin/sh\n", 2000 + i).as_bytes());
    }
    assert!(passwd.len() > 1 << 20);
    let img = work.path().join("big.tar");
    user_image("app", &passwd).docker_save(&img, Pack::None);
    let (_, v) = json_in(
        tmp.path(),
        &["inspect", "--image", img.to_str().unwrap(), "--no-host"],
    );
    assert!(slugs(&v).contains(&"container-user-unchecked".to_string()), "{v}");
    assert!(!slugs(&v).contains(&"container-user-unknown".to_string()), "{v}");
}

#[test]
fn class8_fleet_artifact_refuses_an_image_with_a_pointer_to_image() {
    let work = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let img = work.path().join("app.tar");
    user_image("", b"root:x:0:0::/root:/bin/sh\n").docker_save(&img, Pack::Gzip);
    let nodes = work.path().join("nodes");
    std::fs::create_dir(&nodes).unwrap();
    std::fs::write(nodes.join("n.json"), b"{}").unwrap();
    let (code, _, err) = run_in(
        tmp.path(),
        &[
            "fleet",
            "--artifact",
            img.to_str().unwrap(),
            nodes.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--image"), "{err}");
}
