//! `cudadiag inspect` end to end for the loader: the JSON `libraries` honour the contract
//! (`shared/contract/check_report.py`), and the human tree shows tags, the numbered trail and a fix.

#[path = "support/loader_build.rs"]
mod build;

use assert_cmd::Command;
use std::path::Path;

fn program_with_a_missing_library(dir: &Path) -> std::path::PathBuf {
    let dep = build::lib(&dir.join("lib"), "libgone.so.1", "gone", &[], &[]);
    let keep = build::lib(&dir.join("lib"), "libkeep.so.1", "keep", &[], &[]);
    let flag = format!("-Wl,-rpath,{}", dir.join("lib").display());
    let main = build::exe(
        &dir.join("app"),
        &[&dep, &keep],
        &["-Wl,--enable-new-dtags", &flag],
    );
    std::fs::remove_file(&dep).unwrap();
    main
}

#[test]
fn json_libraries_follow_the_contract() {
    let t = tempfile::tempdir().unwrap();
    let main = program_with_a_missing_library(t.path());
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["inspect", "--format", "json", "--clear-env"])
        .arg(&main)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a missing library is an error");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let libs = doc["libraries"].as_array().unwrap();
    let gone = libs.iter().find(|l| l["soname"] == "libgone.so.1").unwrap();
    assert_eq!(gone["path"], serde_json::Value::Null);
    assert_eq!(gone["how"], "not_found");
    assert_eq!(gone["needed_by"], main.to_string_lossy().as_ref());
    assert!(
        gone["trail"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["how"] == "runpath")
    );
    let keep = libs.iter().find(|l| l["soname"] == "libkeep.so.1").unwrap();
    assert_eq!(keep["how"], "runpath");
    assert!(
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["slug"] == "library-not-found")
    );
    let checker = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/contract/check_report.py");
    if checker.exists() {
        let check = std::process::Command::new("python3")
            .arg(&checker)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(&out.stdout)?;
                c.wait_with_output()
            })
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "ok");
    }
}

#[test]
fn human_tree_explains_the_missing_library() {
    let t = tempfile::tempdir().unwrap();
    let main = program_with_a_missing_library(t.path());
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["--color", "never", "inspect", "-v", "--clear-env"])
        .arg(&main)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lib = t.path().join("lib");
    assert!(
        text.contains(&format!(
            "    libkeep.so.1 [runpath] {}/libkeep.so.1",
            lib.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("    libgone.so.1 not found: cannot open shared object file"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "        1. [runpath] {}/libgone.so.1: not present",
            lib.display()
        )),
        "{text}"
    );
    assert!(text.contains("[ld.so.cache] no entry"), "{text}");
    assert!(text.contains("        fix: "), "{text}");
    assert!(text.contains("error[CD200] library-not-found"), "{text}");
    // Without -v the tree is left out; the finding still carries the trail and the fix.
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["--color", "never", "inspect", "--clear-env"])
        .arg(&main)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("    libkeep.so.1 [runpath]"), "{text}");
    assert!(
        text.contains(&format!(
            "because search 1. [runpath] {}/libgone.so.1: not present",
            lib.display()
        )),
        "{text}"
    );
}
