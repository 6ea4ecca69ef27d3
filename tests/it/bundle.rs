//! `snapshot --redact` and `snapshot --format labels` on a machine tree built from the host fixtures: a user
//! (`alice`, uid 1000 in `/etc/passwd`), her home with a Python environment and a `libcuda.so.1` on
//! `LD_LIBRARY_PATH`, a host name, and environment values on and off the allow-list.

use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::support::cli::{copy_tree, json, output};

const HOST: &str = "gpu-node-17.corp.example";
const SECRET: &str = "nvapi-s3cr3t-t0ken";

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hosts")
        .join(case)
        .join("root")
}

/// The conda/pip/toolkit machine, its venv moved into alice's home, a host name, a passwd entry, and alice's
/// own `libcuda.so.1` first on `LD_LIBRARY_PATH`; the program runs as her.
fn alices_machine(dir: &Path) -> (PathBuf, Vec<String>) {
    let root = dir.join("root");
    copy_tree(&fixture("conda-pip-toolkit"), &root);
    std::fs::create_dir_all(root.join("home/alice")).unwrap();
    std::fs::rename(root.join("root/.venv"), root.join("home/alice/.venv")).unwrap();
    let libs = root.join("home/alice/cuda-libs");
    std::fs::create_dir_all(&libs).unwrap();
    // An older driver's library she copied: `driver-library-mismatch`, its evidence a path in her home.
    std::fs::write(
        libs.join("libcuda.so.545.23.08"),
        "alice's copy of a driver library\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("libcuda.so.545.23.08", libs.join("libcuda.so.1")).unwrap();
    // The program runs as alice, who cannot open the device nodes (`device-permission-denied`).
    let status = std::fs::read_to_string(root.join("proc/self/status")).unwrap();
    let status = status.replace("Uid:\t0\t0\t0\t0", "Uid:\t1000\t1000\t1000\t1000");
    std::fs::write(root.join("proc/self/status"), status).unwrap();
    std::fs::write(root.join("etc/hostname"), format!("{HOST}\n")).unwrap();
    std::fs::write(
        root.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice Liddell:/home/alice:/bin/bash\n",
    )
    .unwrap();
    let env = [
        "PATH=/home/alice/.venv/bin:/usr/local/cuda/bin:/usr/bin:/bin".to_string(),
        "HOME=/home/alice".into(),
        "USER=alice".into(),
        "VIRTUAL_ENV=/home/alice/.venv".into(),
        "CONDA_PREFIX=/opt/conda/envs/ml".into(),
        "LD_LIBRARY_PATH=/home/alice/cuda-libs:/usr/local/cuda/lib64".into(),
        format!("CUDA_CACHE_PATH=/scratch/alice/{HOST}/nv-cache"),
        "CUDA_VISIBLE_DEVICES=0".into(),
        format!("NVIDIA_API_KEY={SECRET}"),
    ];
    let mut args = vec![
        "--root".to_string(),
        root.display().to_string(),
        "--clear-env".into(),
    ];
    for e in env {
        args.extend(["--env".into(), e]);
    }
    (root, args)
}

fn cudadiag(args: &[String]) -> std::process::Output {
    output(args)
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// What a report's findings are, without their wording: code, slug, severity.
fn judged(report: &Value) -> Vec<(String, String, String)> {
    let mut f: Vec<_> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            (s("code"), s("slug"), s("severity"))
        })
        .collect();
    f.sort();
    f
}

fn snapshot(machine: &[String], out: &Path, extra: &[&str]) {
    let mut args = strs(&["snapshot", "-o"]);
    args.push(out.display().to_string());
    args.extend(strs(extra));
    args.extend(machine.iter().cloned());
    let o = cudadiag(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_redacted_snapshot_names_nobody_and_judges_the_same() {
    let t = tempfile::tempdir().unwrap();
    let (_root, machine) = alices_machine(t.path());
    let (plain, redacted) = (t.path().join("plain.json"), t.path().join("redacted.json"));
    snapshot(&machine, &plain, &[]);
    snapshot(&machine, &redacted, &["--redact"]);

    // The plain snapshot carries the names (else the test below proves nothing) and the host name.
    let plain_text = std::fs::read_to_string(&plain).unwrap();
    for name in ["alice", "/home/alice", HOST, "gpu-node-17", SECRET] {
        assert!(plain_text.contains(name), "the plain snapshot lacks {name}");
    }
    let p: Value = serde_json::from_str(&plain_text).unwrap();
    assert_eq!(p["facts"]["host"]["hostname"]["name"], HOST);
    assert_eq!(p["facts"]["host"]["hostname"]["source"], "/etc/hostname");
    assert!(p.get("redactions").is_none());

    // Not one byte of a name survives redaction.
    let bytes = std::fs::read(&redacted).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    for name in ["alice", "Alice", HOST, "gpu-node-17", "corp.example", SECRET] {
        assert!(!text.contains(name), "{name} survives redaction");
    }
    let r: Value = serde_json::from_str(&text).unwrap();
    let host = &r["facts"]["host"];
    assert_eq!(host["hostname"]["name"], "host-1");
    assert_eq!(host["env"]["vars"]["HOME"], "/home/user-1");
    assert_eq!(
        host["env"]["vars"]["LD_LIBRARY_PATH"],
        "/home/user-1/cuda-libs:/usr/local/cuda/lib64"
    );
    assert_eq!(
        host["env"]["vars"]["CUDA_CACHE_PATH"],
        "/scratch/user-1/host-1/nv-cache"
    );
    assert_eq!(host["env"]["vars"]["CUDA_VISIBLE_DEVICES"], "0");
    assert_eq!(host["env"]["vars"]["CONDA_PREFIX"], "/opt/conda/envs/ml");
    assert_eq!(host["env"]["vars"]["NVIDIA_API_KEY"], "redacted-1");
    assert_eq!(host["libcuda"][0]["path"], "/home/user-1/cuda-libs/libcuda.so.1");
    assert!(
        host["libraries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["path"].as_str().unwrap().starts_with("/home/user-1/.venv/"))
    );
    // What was replaced, by kind and count, never the originals.
    let kinds = &r["redactions"]["kinds"];
    for kind in [
        "host-names",
        "home-directories",
        "user-names",
        "environment-values",
    ] {
        assert!(
            kinds[kind]["occurrences"].as_u64().unwrap() > 0,
            "{kind}: {kinds}"
        );
    }
    assert_eq!(kinds["host-names"]["distinct"], 1);
    assert_eq!(kinds["user-names"]["distinct"], 1);
    assert_eq!(
        r["redactions"]["variables"],
        serde_json::json!(["NVIDIA_API_KEY"])
    );

    // doctor: the machine itself, and its redacted snapshot, give the same findings.
    let mut live_args = strs(&["doctor", "--format", "json"]);
    live_args.extend(machine.iter().cloned());
    let live = json(&live_args);
    let replay = json(strs(&[
        "doctor",
        "--format",
        "json",
        "--facts",
        redacted.to_str().unwrap(),
    ]));
    let slugs: Vec<String> = judged(&live).into_iter().map(|(_, s, _)| s).collect();
    assert!(
        slugs.contains(&"driver-library-mismatch".to_string()),
        "{slugs:?}"
    );
    assert_eq!(judged(&live), judged(&replay));

    // inspect: a binary judged against the plain and the redacted snapshot gives the same findings.
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/compress_all");
    let inspect = |snap: &Path| {
        json(strs(&[
            "inspect",
            "--format",
            "json",
            "--facts",
            snap.to_str().unwrap(),
            bin.to_str().unwrap(),
        ]))
    };
    assert_eq!(judged(&inspect(&plain)), judged(&inspect(&redacted)));
}

#[test]
fn an_old_snapshot_without_the_new_sections_still_loads() {
    let t = tempfile::tempdir().unwrap();
    let (_root, machine) = alices_machine(t.path());
    let snap = t.path().join("s.json");
    snapshot(&machine, &snap, &["--redact"]);
    let mut v: Value = serde_json::from_slice(&std::fs::read(&snap).unwrap()).unwrap();
    let full = json(strs(&[
        "doctor",
        "--format",
        "json",
        "--facts",
        snap.to_str().unwrap(),
    ]));
    v.as_object_mut().unwrap().remove("redactions");
    v["facts"]["host"].as_object_mut().unwrap().remove("hostname");
    std::fs::write(&snap, serde_json::to_vec(&v).unwrap()).unwrap();
    let old = json(strs(&[
        "doctor",
        "--format",
        "json",
        "--facts",
        snap.to_str().unwrap(),
    ]));
    assert_eq!(judged(&full), judged(&old));
}

#[test]
fn labels_of_a_fixture_machine_and_of_one_without_a_gpu() {
    let out = cudadiag(&strs(&[
        "snapshot",
        "--format",
        "labels",
        "-o",
        "-",
        "--root",
        fixture("healthy").to_str().unwrap(),
        "--clear-env",
    ]));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted, "labels are sorted");
    for want in [
        "CONDA_OVERRIDE_CUDA=12.4",
        "CONDA_OVERRIDE_CUDA_ARCH=9.0",
        "nvidia.com/cuda.driver.major=550",
        "nvidia.com/cuda.driver.minor=90",
        "nvidia.com/cuda.driver.rev=07",
        "nvidia.com/cuda.runtime.major=12",
        "nvidia.com/cuda.runtime.minor=4",
        "nvidia.com/gpu.compute.major=9",
        "nvidia.com/gpu.compute.minor=0",
        "nvidia.com/gpu.count=2",
        "nvidia.com/gpu.family=hopper",
        "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3",
    ] {
        assert!(lines.contains(&want), "{want} not in\n{text}");
    }
    assert!(lines.iter().all(|l| l.split_once('=').is_some()));

    // Labels describe the machine: a binary given with them is a usage error, not silently ignored.
    let out = cudadiag(&strs(&["snapshot", "--format", "labels", "-o", "-", "./app"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("./app: --format labels describes the machine alone")
    );

    // A machine with no NVIDIA driver or GPU: no fake values, nothing at all.
    let t = tempfile::tempdir().unwrap();
    let out = cudadiag(&strs(&[
        "snapshot",
        "--format",
        "labels",
        "-o",
        "-",
        "--root",
        t.path().to_str().unwrap(),
        "--clear-env",
    ]));
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "");
}

/// A tree with 300 GPU device nodes: the snapshot keeps 256 of them (the control and UVM nodes first), says so
/// in `truncated`, and still gives the tree's findings.
#[test]
fn a_capped_snapshot_says_what_it_cut_and_judges_the_same() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    copy_tree(&fixture("healthy"), &root);
    for i in 2..300 {
        std::fs::write(root.join(format!("dev/nvidia{i}")), "").unwrap();
    }
    let machine = strs(&["--root", root.to_str().unwrap(), "--clear-env"]);
    let snap = t.path().join("s.json");
    snapshot(&machine, &snap, &[]);
    let v: Value = serde_json::from_slice(&std::fs::read(&snap).unwrap()).unwrap();
    assert_eq!(
        v["truncated"],
        serde_json::json!([{"list": "host.device_nodes", "kept": 256, "more": 48}])
    );
    let nodes = v["facts"]["host"]["device_nodes"].as_array().unwrap();
    assert!(nodes.iter().any(|n| n["path"] == "/dev/nvidiactl"));
    let mut live_args = strs(&["doctor", "--format", "json"]);
    live_args.extend(machine);
    let replay = json(strs(&[
        "doctor",
        "--format",
        "json",
        "--facts",
        snap.to_str().unwrap(),
    ]));
    assert_eq!(judged(&json(&live_args)), judged(&replay));
}

/// Every word of a snapshot (its keys, enum values and the words of its strings), and names in other
/// scripts.
fn words_of(snapshot: &Value) -> Vec<String> {
    fn add(s: &str, out: &mut std::collections::BTreeSet<String>) {
        for w in s.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            out.insert(w.to_string());
            out.extend(w.split('_').map(str::to_string));
        }
    }
    fn walk(v: &Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::String(s) => add(s, out),
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            Value::Object(o) => {
                for (k, v) in o {
                    add(k, out);
                    walk(v, out);
                }
            }
            _ => {}
        }
    }
    let mut set = std::collections::BTreeSet::new();
    walk(&snapshot["facts"], &mut set);
    set.into_iter()
        .filter(|w| w.chars().count() >= 2 && w.chars().any(char::is_alphabetic))
        .collect()
}

/// Issue 33, class 4: a host or user name that is also a word of the snapshot's structure (`open`, `host`,
/// `version`, `uvm`, …) broke the redacted bundle (unknown variant, missing field) or changed its findings, and
/// non-ASCII names were left in. Each word of the snapshot is tried as the host name and as the user name:
/// the redacted bundle must read back, and `doctor --facts` and `inspect --facts` give the findings the plain
/// snapshot gives.
#[test]
fn redaction_breaks_the_bundle_or_leaks() {
    let t = tempfile::tempdir().unwrap();
    let (base_root, machine) = alices_machine(t.path());
    let plain = t.path().join("plain.json");
    snapshot(&machine, &plain, &[]);
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/compress_all");
    let replay = |snap: &Path| -> Result<(Vec<_>, Vec<_>), String> {
        let mut out = Vec::new();
        for extra in [None, Some(&bin)] {
            let mut args = strs(&["--format", "json", "--facts", snap.to_str().unwrap()]);
            args.insert(0, if extra.is_some() { "inspect" } else { "doctor" }.into());
            args.extend(extra.map(|b| b.display().to_string()));
            let o = cudadiag(&args);
            let v: Value = serde_json::from_slice(&o.stdout).map_err(|_| {
                format!(
                    "exit {:?}: {}",
                    o.status.code(),
                    String::from_utf8_lossy(&o.stderr)
                )
            })?;
            out.push(judged(&v));
        }
        Ok((out.remove(0), out.remove(0)))
    };
    let expected = replay(&plain).unwrap();
    let mut words = words_of(&serde_json::from_slice(&std::fs::read(&plain).unwrap()).unwrap());
    assert!(words.len() > 100, "{} words: {words:?}", words.len());
    let foreign = ["jürgen", "Jürgen", "李雷", "Ωmega", "søren-ø"];
    words.extend(foreign.iter().map(|s| s.to_string()));
    // Word i is the host name and word i+1 the user name of run i (each word is tried in both roles).
    let runs: Vec<(usize, &String, &String)> = (0..words.len())
        .map(|i| (i, &words[i], &words[(i + 1) % words.len()]))
        .collect();
    let one = |&(i, host, user): &(usize, &String, &String), root: &Path| -> Vec<String> {
        let mut problems = Vec::new();
        std::fs::write(root.join("etc/hostname"), format!("{host}\n")).unwrap();
        let mut machine = machine.clone();
        machine[1] = root.display().to_string();
        let at = machine.iter().position(|a| a == "USER=alice").unwrap();
        machine[at] = format!("USER={user}");
        machine.extend(["--env".into(), format!("JOB_{}_ID=1", user.to_uppercase())]);
        machine.extend([
            "--env".into(),
            format!("GIT_AUTHOR_EMAIL={user}@mail.corp.example"),
        ]);
        let redacted = t.path().join(format!("r{i}.json"));
        snapshot(&machine, &redacted, &["--redact"]);
        let who = format!("host {host:?}, user {user:?}");
        match replay(&redacted) {
            Ok(got) if got == expected => {}
            Ok(got) => problems.push(format!("{who}: findings {got:?}")),
            Err(e) => problems.push(format!("{who}: {e}")),
        }
        let text = std::fs::read_to_string(&redacted).unwrap();
        for w in [host, user].into_iter().filter(|w| foreign.contains(&w.as_str())) {
            let left = text.matches(w.as_str()).count() + text.matches(&w.to_uppercase()).count();
            if left > 0 {
                problems.push(format!("{who}: leak: {left} occurrences of {w:?} left"));
            }
        }
        if text.contains("mail.corp.example") {
            problems.push(format!("{who}: leak: the domain of {user}@mail.corp.example"));
        }
        problems
    };
    // Two workers: each run is two or three processes.
    let (even, odd): (Vec<_>, Vec<_>) = runs.iter().partition(|r| r.0 % 2 == 0);
    let second = t.path().join("root2");
    copy_tree(&base_root, &second);
    let broke: Vec<String> = std::thread::scope(|s| {
        let a = s.spawn(|| even.iter().flat_map(|r| one(r, &base_root)).collect::<Vec<_>>());
        let mut b: Vec<String> = odd.iter().flat_map(|r| one(r, &second)).collect();
        b.extend(a.join().unwrap());
        b
    });
    let tried = runs.len();
    assert!(
        broke.is_empty(),
        "{} problems in {tried} redacted bundles:\n{}",
        broke.len(),
        broke.join("\n")
    );
}
