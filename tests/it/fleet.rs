//! `cudadiag fleet`: node reports and snapshots of the host fixture roots (`fixtures/hosts/`), grouped with
//! known answers; `--artifact` judged on nodes with different drivers and GPUs; the JSON document's shape.

use crate::support::cli::cudadiag;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn case_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hosts")
        .join(case)
}

/// `--root`, `--clear-env` and the case's environment.
fn machine_args(case: &str) -> Vec<String> {
    let d = case_dir(case);
    let mut args = vec![
        "--root".to_string(),
        d.join("root").display().to_string(),
        "--clear-env".into(),
    ];
    for l in std::fs::read_to_string(d.join("env")).unwrap().lines() {
        if !l.is_empty() {
            args.extend(["--env".into(), l.to_string()]);
        }
    }
    args
}

/// The case's `doctor --format json` report.
fn doctor_report(case: &str) -> Value {
    let out = cudadiag()
        .args(["doctor", "--format", "json", "--no-catalog"])
        .args(machine_args(case))
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The case's snapshot.
pub(crate) fn snapshot(case: &str) -> Value {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("s.json");
    cudadiag()
        .args(["snapshot", "--no-catalog", "-o"])
        .arg(&file)
        .args(machine_args(case))
        .assert()
        .success();
    serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap()
}

fn write(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(v).unwrap()).unwrap();
}

fn fleet(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let out = cudadiag()
        .env("NO_COLOR", "1")
        .arg("fleet")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fleet_json(args: &[&std::ffi::OsStr]) -> (Option<i32>, Value) {
    let mut all: Vec<&std::ffi::OsStr> = vec!["--format".as_ref(), "json".as_ref()];
    all.extend_from_slice(args);
    let (code, out, err) = fleet(&all);
    let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, doc)
}

fn names(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}

/// Four nodes, three reports and one snapshot, in a directory tree with files that are not reports:
/// - `healthy.json`: driver 550.90.07, two H100s, no finding;
/// - `upgraded.json`: driver-upgraded-no-reboot (module 550.54.14), its `driver-library-mismatch` written twice
///   (once as a warning): counted once, as an error;
/// - `rack2/uvm.json` (found by the walk): `nvidia-uvm-missing`;
/// - `rack2/deep/s.json`: a snapshot of `h200-nix-open-580` carrying the host name `gpu-h200-01` (as
///   `snapshot` records it, with where it was read); its findings come from the rules run over its facts;
/// - `broken.json` (not JSON), `other.json` (JSON, not cudadiag's), `slurm-42.out` (not `*.json`).
fn corpus(dir: &Path) {
    write(&dir.join("healthy.json"), &doctor_report("healthy"));
    let mut upgraded = doctor_report("driver-upgraded-no-reboot");
    let findings = upgraded["findings"].as_array_mut().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    let mut again = findings[0].clone();
    again["severity"] = json!("warning");
    findings.push(again);
    write(&dir.join("upgraded.json"), &upgraded);
    write(&dir.join("rack2/uvm.json"), &doctor_report("uvm-missing"));
    let mut snap = snapshot("h200-nix-open-580");
    snap["facts"]["host"]["hostname"] = json!({"name": "gpu-h200-01", "source": "/etc/hostname"});
    write(&dir.join("rack2/deep/s.json"), &snap);
    std::fs::write(dir.join("broken.json"), "{\"schema_version\": 1, \"host\": ").unwrap();
    std::fs::write(dir.join("other.json"), "{\"name\": \"not a report\"}").unwrap();
    std::fs::write(dir.join("slurm-42.out"), "srun: error: node down\n").unwrap();
}

#[test]
fn groups_a_small_corpus_with_known_answers() {
    let t = tempfile::tempdir().unwrap();
    corpus(t.path());
    let (code, doc) = fleet_json(&[t.path().as_os_str()]);
    assert_eq!(
        code,
        Some(1),
        "errors on two nodes fail at the default --fail-on error"
    );
    assert_eq!(doc["fleet_version"], 1);
    assert_eq!(doc["nodes"], 4);
    assert_eq!(
        doc["findings"],
        json!({"driver-library-mismatch": ["upgraded"], "nvidia-uvm-missing": ["uvm"]})
    );
    assert_eq!(
        doc["drivers"],
        json!({"550.54.14": ["upgraded"], "550.90.07": ["healthy", "uvm"], "580.159.04": ["gpu-h200-01"]})
    );
    assert_eq!(
        doc["gpus"],
        json!({"NVIDIA H100 80GB HBM3": ["healthy", "upgraded", "uvm"], "NVIDIA H200": ["gpu-h200-01"]})
    );
    assert_eq!(
        doc["verdicts"],
        json!({"fails": ["upgraded", "uvm"], "ok": ["gpu-h200-01", "healthy"]})
    );
    assert_eq!(doc["without_driver"], json!([]));
    assert_eq!(doc["without_gpu"], json!([]));
    assert_eq!(doc["other_files"], 1, "slurm-42.out is skipped by name");
    let unreadable: Vec<(&str, &str)> = doc["unreadable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let path = u["path"].as_str().unwrap();
            (&path[path.rfind('/').unwrap() + 1..], u["kind"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        unreadable,
        [("broken.json", "not-json"), ("other.json", "not-cudadiag")]
    );
    for u in doc["unreadable"].as_array().unwrap() {
        assert!(!u["reason"].as_str().unwrap().is_empty(), "{u}");
    }
    // Each node, with what was read of it.
    let per_node = doc["per_node"].as_array().unwrap();
    assert_eq!(per_node.len(), 4);
    let upgraded = per_node.iter().find(|n| n["name"] == "upgraded").unwrap();
    assert_eq!(upgraded["kind"], "report");
    assert_eq!(upgraded["verdict"], "fails");
    assert_eq!(
        upgraded["findings"],
        json!([{"slug": "driver-library-mismatch", "code": upgraded["findings"][0]["code"], "severity": "error"}])
    );
    assert_eq!(
        upgraded["gpus"],
        json!([{"model": "NVIDIA H100 80GB HBM3", "count": 2}])
    );
    let h200 = per_node.iter().find(|n| n["name"] == "gpu-h200-01").unwrap();
    assert_eq!(h200["kind"], "snapshot");
    assert!(
        h200["file"].as_str().unwrap().ends_with("rack2/deep/s.json"),
        "{h200}"
    );
    assert!(h200.get("prediction").is_none());

    // The same corpus, for people: counts first, then each group with its nodes.
    let (code, out, _) = fleet(&[t.path().as_os_str()]);
    assert_eq!(code, Some(1));
    let first: Vec<&str> = out.lines().take(2).collect();
    assert_eq!(
        first,
        [
            "4 nodes (6 files read, 2 not used, 1 other file skipped)",
            "verdicts: 2 fails · 2 ok"
        ],
        "{out}"
    );
    assert!(
        out.contains("  error   driver-library-mismatch  1 node: upgraded\n"),
        "{out}"
    );
    assert!(out.contains("  550.90.07   2 nodes: healthy, uvm\n"), "{out}");
    assert!(
        out.contains("2 files not used: 1 not JSON, 1 not a cudadiag report or snapshot (-v lists them)"),
        "{out}"
    );
    let (_, verbose, _) = fleet(&["-v".as_ref(), t.path().as_os_str()]);
    assert!(verbose.contains("broken.json: not JSON: "), "{verbose}");

    // --fail-on never: the same report, exit 0; a directory of healthy nodes alone: 0.
    let (code, _, _) = fleet(&["--fail-on".as_ref(), "never".as_ref(), t.path().as_os_str()]);
    assert_eq!(code, Some(0));
    let (code, _, _) = fleet(&[t.path().join("healthy.json").as_os_str()]);
    assert_eq!(code, Some(0));
}

#[test]
fn long_groups_are_cut_and_v_shows_every_node() {
    let t = tempfile::tempdir().unwrap();
    let report = doctor_report("healthy");
    for i in 1..=40 {
        write(&t.path().join(format!("node{i}.json")), &report);
    }
    let (code, out, _) = fleet(&[t.path().as_os_str()]);
    assert_eq!(code, Some(0));
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("550.90.07"))
        .unwrap();
    assert!(
        line.starts_with("  550.90.07  40 nodes: node1, node2, node3, "),
        "{line}"
    );
    assert!(line.ends_with(" more"), "{line}");
    assert!(line.len() <= 100, "{line}");
    let (_, out, _) = fleet(&["-v".as_ref(), t.path().as_os_str()]);
    assert!(!out.contains(" more"), "{out}");
    for i in 1..=40 {
        assert!(
            out.contains(&format!("node{i},")) || out.contains(&format!("node{i}\n")),
            "node{i}: {out}"
        );
    }
}

#[test]
fn files_naming_one_node_twice_are_told_apart() {
    let t = tempfile::tempdir().unwrap();
    let report = doctor_report("healthy");
    write(&t.path().join("a/n1.json"), &report);
    write(&t.path().join("b/n1.json"), &report);
    let (_, doc) = fleet_json(&[t.path().as_os_str()]);
    let got = names(&doc["drivers"]["550.90.07"]);
    assert_eq!(got.len(), 2);
    assert!(
        got[0].ends_with("a/n1.json") && got[1].ends_with("b/n1.json"),
        "{got:?}"
    );
}

#[test]
fn no_node_and_a_missing_path_are_tool_errors() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("x.json"), "not json").unwrap();
    let (code, _, err) = fleet(&[t.path().as_os_str()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no node report or snapshot found"), "{err}");
    assert!(err.contains("x.json: not JSON"), "{err}");
    let (code, _, err) = fleet(&[t.path().join("absent").as_os_str()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("cannot read"), "{err}");
}

/// `fixtures/cuda13/multi` (CUDA 13.0 static runtime; SASS sm_75, sm_80, sm_90 and PTX compute_90) on four
/// nodes: driver 550.90.07 (CUDA 12.4) fails with driver-insufficient; 580.159.04 on an H200 and on an RTX 4090
/// (CC 8.9 runs the sm_80 SASS) runs; 580.159.04 on a CC 7.0 GPU has no kernel image it can load. The artefact
/// is read once; each node judged as `inspect --facts` judges it.
#[test]
fn artifact_is_judged_on_each_node() {
    let t = tempfile::tempdir().unwrap();
    let nodes = t.path().join("nodes");
    write(&nodes.join("old-driver.json"), &doctor_report("healthy"));
    let h200 = snapshot("h200-nix-open-580");
    write(&nodes.join("h200.json"), &h200);
    let mut ada = h200.clone();
    ada["facts"]["host"]["gpus"][0]["name"] = json!("NVIDIA GeForce RTX 4090");
    ada["facts"]["host"]["gpus"][0]["pci_device_id"] = json!(0x2684);
    write(&nodes.join("ada.json"), &ada);
    let mut volta = h200.clone();
    volta["facts"]["host"]["gpus"][0]["name"] = json!("Tesla V100-SXM2-32GB");
    volta["facts"]["host"]["gpus"][0]["pci_device_id"] = json!(0x1db5);
    write(&nodes.join("volta.json"), &volta);
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/multi");

    let (code, doc) = fleet_json(&["--artifact".as_ref(), app.as_os_str(), nodes.as_os_str()]);
    assert_eq!(code, Some(1), "it fails on some nodes: {doc}");
    let a = &doc["artifact"];
    assert_eq!(names(&a["outcomes"]["runs"]), ["ada", "h200"], "{a}");
    assert_eq!(names(&a["outcomes"]["fails"]), ["old-driver", "volta"], "{a}");
    let node = |n: &str| {
        doc["per_node"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == n)
            .unwrap()["prediction"]
            .clone()
    };
    let old = node("old-driver");
    assert_eq!(old["codes"][0], "driver-insufficient", "{old}");
    assert!(old["reason"].as_str().unwrap().contains("550.90.07"), "{old}");
    let volta = node("volta");
    assert_eq!(volta["outcome"], "fails", "{volta}");
    assert!(
        volta["codes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "no-kernel-image" || c == "gpu-unsupported-by-driver"),
        "{volta}"
    );
    assert_eq!(
        node("h200"),
        json!({"outcome": "runs", "reason": "", "codes": []})
    );
    // Groups: failures first, each with the reason on its first node.
    let groups = a["groups"].as_array().unwrap();
    assert_eq!(groups[0]["outcome"], "fails");
    assert_eq!(groups.last().unwrap()["outcome"], "runs");

    // The same, for people.
    let (code, out, _) = fleet(&["--artifact".as_ref(), app.as_os_str(), nodes.as_os_str()]);
    assert_eq!(code, Some(1));
    assert!(out.contains("on these nodes: 2 fails · 2 runs"), "{out}");
    assert!(out.contains("fails: driver-insufficient"), "{out}");
    assert!(out.contains("old-driver: "), "{out}");

    // On the nodes where it runs, the exit status is 0; --fail-on never keeps it 0 anywhere.
    let (code, _) = fleet_json(&[
        "--artifact".as_ref(),
        app.as_os_str(),
        nodes.join("h200.json").as_os_str(),
        nodes.join("ada.json").as_os_str(),
    ]);
    assert_eq!(code, Some(0));
    let (code, _) = fleet_json(&[
        "--fail-on".as_ref(),
        "never".as_ref(),
        "--artifact".as_ref(),
        app.as_os_str(),
        nodes.as_os_str(),
    ]);
    assert_eq!(code, Some(0));

    // The prediction is the judgement of `inspect --facts` on the same node.
    let out = cudadiag()
        .args(["inspect", "--no-libraries", "--format", "json", "--facts"])
        .arg(nodes.join("volta.json"))
        .arg(&app)
        .output()
        .unwrap();
    let inspect: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(inspect["verdicts"][0]["outcome"], "fails");
    assert_eq!(inspect["verdicts"][0]["reason"], volta["reason"]);
}

#[test]
fn an_artifact_without_binaries_is_a_tool_error() {
    let t = tempfile::tempdir().unwrap();
    write(&t.path().join("n.json"), &doctor_report("healthy"));
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, _, err) = fleet(&[
        "--artifact".as_ref(),
        empty.as_os_str(),
        t.path().join("n.json").as_os_str(),
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no program, library or device code found"), "{err}");
}

/// The host name as `snapshot` records it (`{"name", "source"}`) or as a plain string, in a report's host
/// facts or at the top of its host object, names the node; without one, the file does.
#[test]
fn a_node_is_named_by_the_host_name_its_file_carries() {
    let t = tempfile::tempdir().unwrap();
    let mut a = doctor_report("healthy");
    a["host"]["facts"]["hostname"] = json!({"name": "gpu-a1", "source": "/etc/hostname"});
    write(&t.path().join("a.json"), &a);
    let mut b = doctor_report("healthy");
    b["host"]["hostname"] = json!("gpu-b2");
    write(&t.path().join("b.json"), &b);
    write(&t.path().join("c.json"), &doctor_report("healthy"));
    let (_, doc) = fleet_json(&[t.path().as_os_str()]);
    assert_eq!(names(&doc["drivers"]["550.90.07"]), ["c", "gpu-a1", "gpu-b2"]);
}

/// A FIFO named like a report (in a walked directory, and named on the command line) is refused at once, never
/// waited on; the nodes beside it are read.
#[test]
fn a_fifo_among_the_reports_does_not_block() {
    let t = tempfile::tempdir().unwrap();
    write(&t.path().join("n1.json"), &doctor_report("healthy"));
    let fifo = t.path().join("pipe.json");
    // coreutils' mkfifo, as `tests/it/cli.rs` makes FIFOs for --policy and --facts.
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for args in [
        vec![t.path().as_os_str()],
        vec![fifo.as_os_str(), t.path().join("n1.json").as_os_str()],
    ] {
        let out = cudadiag()
            .args(["fleet", "--format", "json"])
            .args(&args)
            .timeout(std::time::Duration::from_secs(20))
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["nodes"], 1);
        let u = &doc["unreadable"][0];
        assert!(u["path"].as_str().unwrap().ends_with("pipe.json"), "{u}");
        assert_eq!(u["kind"], "unreadable");
        assert!(u["reason"].as_str().unwrap().contains("FIFO"), "{u}");
    }
}

/// A snapshot of a newer format is refused as `--facts` refuses it (upgrade cudadiag), and one without host
/// facts gives no node: both listed, the other nodes read.
#[test]
fn snapshots_fleet_cannot_judge_are_listed_with_why() {
    let t = tempfile::tempdir().unwrap();
    write(&t.path().join("n1.json"), &doctor_report("healthy"));
    let mut newer = snapshot("healthy");
    newer["snapshot_version"] = json!(99);
    write(&t.path().join("newer.json"), &newer);
    let mut hostless = snapshot("healthy");
    hostless["facts"]["host"] = Value::Null;
    write(&t.path().join("hostless.json"), &hostless);
    let (_, doc) = fleet_json(&[t.path().as_os_str()]);
    assert_eq!(doc["nodes"], 1);
    let why: Vec<String> = doc["unreadable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(why.len(), 2, "{why:?}");
    assert_eq!(why[0], "a snapshot without host facts", "{why:?}");
    assert!(
        why[1].contains("snapshot version 99 is newer") && why[1].contains("upgrade cudadiag"),
        "{why:?}"
    );
}

/// The human summary as an operator reads it (colour off), with `-v` and an artefact: every group, every
/// node, every file not used with why.
#[test]
fn human_fleet_snapshot() {
    let t = tempfile::tempdir().unwrap();
    corpus(t.path());
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/multi");
    let out = cudadiag()
        .env("NO_COLOR", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["fleet", "-v", "--artifact", "fixtures/cuda13/multi"])
        .arg(t.path())
        .output()
        .unwrap();
    assert!(app.exists());
    let dir = t.path().display().to_string();
    insta::assert_snapshot!(
        "fleet_corpus_verbose",
        crate::support::golden::transcript(&out, &[(&dir, "[TMP]")])
    );
}
