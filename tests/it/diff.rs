//! `cudadiag diff` on the host fixtures: a healthy node against one whose driver was upgraded without a
//! reboot (module 550.54.14, libraries 550.90.07), as snapshots and as `doctor --format json` reports.

use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::support::cli::{machine_args, output};
use crate::support::golden;

fn machine(case: &str) -> Vec<String> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hosts")
        .join(case);
    machine_args(&d.join("root"), &d.join("env"), &[])
}

fn cudadiag(args: &[&str]) -> std::process::Output {
    output(args)
}

/// Writes `case`'s snapshot and its doctor report into `dir`.
fn files(dir: &Path, case: &str) -> (PathBuf, PathBuf) {
    let (snap, report) = (
        dir.join(format!("{case}.json")),
        dir.join(format!("{case}.report.json")),
    );
    let m = machine(case);
    let m: Vec<&str> = m.iter().map(String::as_str).collect();
    let out = cudadiag(&[&["snapshot", "-o", snap.to_str().unwrap()][..], &m].concat());
    assert!(out.status.success());
    let out = cudadiag(&[&["doctor", "--format", "json"][..], &m].concat());
    std::fs::write(&report, out.stdout).unwrap();
    (snap, report)
}

fn diff_json(a: &Path, b: &Path) -> (i32, Value) {
    let out = cudadiag(&[
        "diff",
        "--format",
        "json",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    (out.status.code().unwrap(), v)
}

#[test]
fn an_upgraded_without_reboot_node_is_the_module_library_mismatch_first() {
    let t = tempfile::tempdir().unwrap();
    let (good_snap, good_report) = files(t.path(), "healthy");
    let (bad_snap, bad_report) = files(t.path(), "driver-upgraded-no-reboot");
    // Snapshots, reports, and one of each: the same answer.
    for (a, b) in [
        (&good_snap, &bad_snap),
        (&good_report, &bad_report),
        (&good_snap, &bad_report),
    ] {
        let (code, v) = diff_json(a, b);
        assert_eq!(code, 1, "{v}");
        let d = v["differences"].as_array().unwrap();
        assert_eq!(d[0]["kind"], "module-vs-libraries", "{v}");
        assert_eq!(d[0]["a"], "module 550.90.07 = libraries 550.90.07");
        assert_eq!(d[0]["b"], "module 550.54.14 ≠ libraries 550.90.07");
        assert_eq!(d[1]["kind"], "driver-version");
        assert_eq!(
            (d[1]["a"].as_str(), d[1]["b"].as_str()),
            (Some("550.90.07"), Some("550.54.14"))
        );
        // The finding only B has comes after the facts.
        let last = d.last().unwrap();
        assert_eq!(
            (last["kind"].as_str(), last["what"].as_str()),
            (Some("finding"), Some("finding CD304"))
        );
        assert_eq!(last["a"], Value::Null);
        assert_eq!(last["b"], "error driver-library-mismatch");
        assert_eq!(v["summary"]["differences"], d.len());
        assert_eq!(v["summary"]["findings_only_b"], 1);
        assert_eq!(v["summary"]["findings_only_a"], 0);
        assert_eq!(v["diff_version"], 1);
        assert_eq!(v["b"]["node"], b.file_name().unwrap().to_str().unwrap());
    }
    assert_eq!(diff_json(&good_snap, &bad_report).1["b"]["kind"], "report");

    // Human: the first ranked line names the mismatch.
    let out = cudadiag(&[
        "diff",
        "--color",
        "never",
        good_snap.to_str().unwrap(),
        bad_snap.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().find(|l| l.starts_with("1. ")).unwrap();
    assert_eq!(
        first,
        "1. driver module vs libraries · module 550.90.07 = libraries 550.90.07 · module 550.54.14 ≠ libraries 550.90.07"
    );
}

#[test]
fn the_same_machine_twice_is_no_difference() {
    let t = tempfile::tempdir().unwrap();
    let (snap, report) = files(t.path(), "healthy");
    let (code, v) = diff_json(&snap, &report);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["differences"], serde_json::json!([]));
    let out = cudadiag(&[
        "diff",
        "--color",
        "never",
        snap.to_str().unwrap(),
        snap.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .ends_with("no differences that matter\n")
    );
}

#[test]
fn a_node_is_named_by_its_host_name() {
    let t = tempfile::tempdir().unwrap();
    let (good, _) = files(t.path(), "healthy");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&good).unwrap()).unwrap();
    v["facts"]["host"]["hostname"] = serde_json::json!({"name": "gpu-a1", "source": "/etc/hostname"});
    let named = t.path().join("named.json");
    std::fs::write(&named, serde_json::to_vec(&v).unwrap()).unwrap();
    let (_, d) = diff_json(&named, &good);
    assert_eq!(d["a"]["node"], "gpu-a1");
    assert_eq!(d["b"]["node"], "healthy.json");
}

#[test]
fn wrong_files_are_errors_that_say_what_was_expected() {
    let t = tempfile::tempdir().unwrap();
    let (good, _) = files(t.path(), "healthy");
    let sarif = t.path().join("x.sarif");
    std::fs::write(&sarif, r#"{"version": "2.1.0", "runs": []}"#).unwrap();
    let other = t.path().join("other.json");
    std::fs::write(&other, r#"{"name": "not ours"}"#).unwrap();
    let toml = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let missing = t.path().join("missing.json");
    for (bad, says) in [
        (&sarif, "is a SARIF log"),
        (&other, "has neither `snapshot_version` nor `schema_version`"),
        (&toml, "is not JSON"),
        (&missing, "cannot read"),
    ] {
        let out = cudadiag(&["diff", good.to_str().unwrap(), bad.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(bad.to_str().unwrap()) && err.contains(says), "{err}");
        assert!(out.stdout.is_empty());
    }
}

/// The human list as a support engineer reads it.
#[test]
fn human_diff_transcript() {
    let t = tempfile::tempdir().unwrap();
    let (good, _) = files(t.path(), "healthy");
    let (bad, _) = files(t.path(), "driver-upgraded-no-reboot");
    let out = cudadiag(&[
        "diff",
        "--color",
        "never",
        good.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]);
    let dir = t.path().to_str().unwrap();
    insta::assert_snapshot!(
        "diff_healthy_vs_upgraded",
        golden::transcript(&out, &[(dir, "[TMP]")])
    );
}

/// A snapshot of about `mb` megabytes: `case`'s library catalogue repeated, each copy under its own directory
/// (what `scripts/big-snapshot.py` writes for the benchmark).
fn big_snapshot(dir: &Path, case: &str, mb: usize) -> PathBuf {
    let (snap, _) = files(dir, case);
    let mut v: Value = serde_json::from_slice(&std::fs::read(&snap).unwrap()).unwrap();
    let libs = v["facts"]["host"]["libraries"].as_array().unwrap().clone();
    assert!(!libs.is_empty(), "{case} has no catalogue to repeat");
    let one = serde_json::to_vec(&libs).unwrap().len();
    let mut grown = Vec::new();
    for i in 0..(mb << 20) / one + 1 {
        for lib in &libs {
            let mut lib = lib.clone();
            for key in ["path", "real_path"] {
                if let Some(p) = lib[key].as_str() {
                    lib[key] = Value::String(format!("/srv/copy{i}{p}"));
                }
            }
            grown.push(lib);
        }
    }
    v["facts"]["host"]["libraries"] = Value::Array(grown);
    let out = dir.join(format!("big-{case}.json"));
    std::fs::write(&out, serde_json::to_vec(&v).unwrap()).unwrap();
    out
}

/// Issue 33, class 3 (`diff`): each side was parsed into a JSON tree, then parsed again into another one by
/// the snapshot reader: 2.1 GB for two 64 MB snapshots, where `fleet` reads the same file in 69 MB. Decoded
/// once into the typed facts, the peak stays within a few times the input.
#[test]
fn memory_from_a_small_file_diff() {
    let Some(time) = ["/usr/bin/time"].into_iter().find(|p| Path::new(p).exists()) else {
        // A test that cannot run says why (shown with --nocapture).
        #[allow(clippy::disallowed_macros)]
        {
            println!("skipped: no /usr/bin/time to measure the peak memory of a child with");
        }
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let big = big_snapshot(t.path(), "conda-pip-toolkit", 8);
    let size = std::fs::metadata(&big).unwrap().len();
    let out = std::process::Command::new(time)
        .args(["-f", "peak-kb %M"])
        .arg(env!("CARGO_BIN_EXE_cudadiag"))
        .args(["diff", "--format", "json"])
        .args([&big, &big])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let peak_kb: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("peak-kb "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak in {err}"));
    let peak = peak_kb * 1024;
    // Both files' text and both sides' typed facts, plus the program itself: about 3.5 bytes per byte of one
    // file (279 MB for two 79 MB files, release build); two JSON trees per side took about 10 (805 MB).
    let bound = 6 * size + (32 << 20);
    #[allow(clippy::disallowed_macros)]
    {
        println!("diff of two {size}-byte snapshots: peak {peak} bytes (bound {bound})");
    }
    assert!(
        peak < bound,
        "peak {peak} bytes for two {size}-byte snapshots (bound {bound})"
    );
}
