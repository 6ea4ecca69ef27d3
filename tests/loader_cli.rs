//! `cudadiag inspect` end to end for the loader: the JSON `libraries` honour the contract
//! (`shared/contract/check_report.py`), and the human tree shows tags, the numbered trail and a fix.

#[path = "support/loader_build.rs"]
mod build;

use assert_cmd::Command;
use std::path::Path;

#[path = "support/golden.rs"]
mod golden;

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
    // Without -v the tree is left out; the finding carries the trail in short (its steps counted by kind) and
    // the fix.
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["--color", "never", "inspect", "--clear-env"])
        .arg(&main)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("    libkeep.so.1 [runpath]"), "{text}");
    assert!(!text.contains("because search 1. [runpath]"), "{text}");
    assert!(
        text.contains("places searched (runpath, ld.so.cache, default path ×"),
        "{text}"
    );
    assert!(text.contains("-v lists each step"), "{text}");
    // The JSON keeps every step.
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["inspect", "--format", "json", "--clear-env"])
        .arg(&main)
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let finding = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["slug"] == "library-not-found")
        .unwrap();
    assert!(
        finding["evidence"].as_array().unwrap().iter().any(|e| e
            == &serde_json::Value::String(format!(
                "search 1. [runpath] {}/libgone.so.1: not present",
                lib.display()
            ))),
        "{finding}"
    );
}

/// Runs `cudadiag ARGS` and returns the exit code and the JSON report.
fn json_of(args: &[&std::ffi::OsStr]) -> (Option<i32>, serde_json::Value) {
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), doc)
}

fn glibc_findings(doc: &serde_json::Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["slug"] == "glibc-too-old")
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect()
}

/// `inspect --root` of a machine with glibc 2.28: the JSON gives the binary's floor, its process's, the
/// machine's glibc read from its libc's banner, and one glibc-too-old; the same machine through a snapshot
/// (`--facts`) gives the same judgement; a glibc 2.36 machine gives none.
#[test]
fn glibc_floor_in_json_and_glibc_too_old_through_root_and_snapshot() {
    let (t, main) = build::glibc_scenario(&["2.2.5", "2.17", "2.28"], Some("2.28"));
    let os = |s: &str| std::ffi::OsString::from(s);
    let inspect = |root: &Path| {
        vec![
            os("inspect"),
            os("--format"),
            os("json"),
            os("--clear-env"),
            os("--root"),
            root.as_os_str().to_owned(),
            main.as_os_str().to_owned(),
        ]
    };
    let args = inspect(t.path());
    let (code, doc) = json_of(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
    assert_eq!(code, Some(1));
    let g = &doc["binaries"][0]["glibc"];
    assert_eq!(g["needs"], "2.34", "{g}");
    assert_eq!(g["from"], "libc.so.6");
    assert_eq!(g["tree"]["needs"], "2.36", "{g}");
    assert_eq!(g["tree"]["needed_by"], "/opt/lib/libarc.so.1");
    let h = &doc["host"]["glibc"];
    assert_eq!(
        (h["version"].as_str(), h["source"].as_str()),
        (Some("2.28"), Some("banner")),
        "{h}"
    );
    assert_eq!(h["path"], "/usr/lib64/libc.so.6");
    let found = glibc_findings(&doc);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("this machine's glibc is 2.28: version `GLIBC_2.36' not found"),
        "{found:?}"
    );
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["slug"] == "glibc-too-old")
        .unwrap();
    assert_eq!(f["code"], "CD204");
    assert!(
        f["evidence"].to_string().contains("stable release version 2.28."),
        "{f}"
    );
    assert!(!doc["findings"].to_string().contains("symbol-version-missing"));
    let checker = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/contract/check_report.py");
    if checker.exists() {
        let out = std::process::Command::new("python3")
            .arg(&checker)
            .arg("/dev/stdin")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(doc.to_string().as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    }

    // The human report: the floor on the binary's -v details, the finding with its evidence and help.
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["--color", "never", "inspect", "-v", "--clear-env", "--root"])
        .arg(t.path())
        .arg(&main)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "glibc       needs 2.34 (GLIBC_2.34 from libc.so.6); its process 2.36 (GLIBC_2.36 from libc.so.6, by \
             /opt/lib/libarc.so.1); the machine's 2.28"
        ),
        "{text}"
    );
    assert!(text.contains("error[CD204] glibc-too-old"), "{text}");
    assert!(
        text.contains("cargo zigbuild --target x86_64-unknown-linux-gnu.2.17"),
        "{text}"
    );

    // The machine as a snapshot: its glibc travels in the host facts and judges the binary anywhere.
    let snap = t.path().join("case.json");
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["snapshot", "--clear-env", "--root"])
        .arg(t.path())
        .arg("-o")
        .arg(&snap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (_, doc) = json_of(&[
        "inspect".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        "--facts".as_ref(),
        snap.as_os_str(),
        main.as_os_str(),
    ]);
    assert_eq!(doc["host"]["glibc"]["version"], "2.28", "{}", doc["host"]);
    let found = glibc_findings(&doc);
    assert!(
        found.iter().any(|m| m.contains("this machine's glibc is 2.28")),
        "{found:?}"
    );

    // A libc with no banner: its version definitions say at least 2.28.
    let (t, main) = build::glibc_scenario(&["2.2.5", "2.17", "2.28"], None);
    let mut args = inspect(t.path());
    *args.last_mut().unwrap() = main.as_os_str().to_owned();
    let (_, doc) = json_of(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
    let h = &doc["host"]["glibc"];
    assert_eq!(
        (h["version"].as_str(), h["source"].as_str()),
        (Some("2.28"), Some("verdef")),
        "{h}"
    );

    // Near miss: glibc 2.36.
    let (t, main) = build::glibc_scenario(&["2.2.5", "2.17", "2.28", "2.34", "2.36"], Some("2.36"));
    let mut args = inspect(t.path());
    *args.last_mut().unwrap() = main.as_os_str().to_owned();
    let (_, doc) = json_of(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
    assert_eq!(doc["host"]["glibc"]["version"], "2.36");
    assert!(glibc_findings(&doc).is_empty(), "{}", doc["findings"]);
}

/// Golden: a program whose library is gone, built here (the temporary directory is `[TMP]`): the answer
/// first, the search in short; `-v` shows every step of it.
#[test]
fn golden_missing_library() {
    let t = tempfile::tempdir().unwrap();
    let main = program_with_a_missing_library(t.path());
    let run = |verbose: bool| {
        let mut c = Command::cargo_bin("cudadiag").unwrap();
        c.env_remove("NO_COLOR")
            .args(["--color", "never", "inspect", "--no-host", "--clear-env"]);
        if verbose {
            c.arg("-v");
        }
        c.arg(&main).output().unwrap()
    };
    let out = run(false);
    assert_eq!(out.status.code(), Some(1));
    let tmp = t.path().display().to_string();
    insta::assert_snapshot!(
        "inspect_missing_library",
        golden::transcript(&out, &[(&tmp, "[TMP]")])
    );
    // Every step of the trail with -v, in the finding as in the tree.
    let text = String::from_utf8_lossy(&run(true).stdout).into_owned();
    let lib = t.path().join("lib").display().to_string();
    assert!(
        text.contains(&format!(
            "because search 1. [runpath] {lib}/libgone.so.1: not present"
        )),
        "{text}"
    );
    assert!(!text.contains("-v lists each step"), "{text}");
}
