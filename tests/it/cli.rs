//! The binary end to end: exit codes, the JSON contract on every real fixture, colour handling, and snapshots
//! of the human report and of the code list (codes are API: any change to the list must show up here).

use std::path::{Path, PathBuf};

use crate::support::cli::cudadiag;
use crate::support::golden;

fn fixtures() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in ["fixtures/cuda13", "fixtures/old"] {
        for e in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if !(name.ends_with(".txt") || name.ends_with(".log")) {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

/// `../shared/contract/check_report.py`, which CI provides beside the checkout.
fn contract_checker() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/contract/check_report.py");
    assert!(
        p.exists(),
        "the JSON contract checker is expected at {} (CI has ../shared)",
        p.display()
    );
    p
}

#[test]
fn every_fixture_report_honours_the_json_contract() {
    let checker = contract_checker();
    let all = fixtures();
    assert!(all.len() > 40);
    // One report over every fixture, plus one per kind of input, through the real checker.
    let mut runs: Vec<Vec<PathBuf>> = vec![all.clone()];
    for name in [
        "multi",
        "kern.ptx",
        "kern.fatbin",
        "kern.cubin",
        "libkern.a",
        "rdc_a.o",
        "dlto",
    ] {
        runs.push(vec![
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/cuda13")
                .join(name),
        ]);
    }
    for paths in runs {
        let out = cudadiag()
            .arg("inspect")
            .arg("--format")
            .arg("json")
            .args(&paths)
            .output()
            .unwrap();
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "{out:?}"
        );
        let report = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(report.path(), &out.stdout).unwrap();
        let check = std::process::Command::new("python3")
            .arg(&checker)
            .arg(report.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&check.stdout).trim(),
            "ok",
            "contract violated for {paths:?}: {}",
            String::from_utf8_lossy(&check.stdout)
        );
    }
}

#[test]
fn json_fields_read_back() {
    let out = cudadiag()
        .args(["inspect", "--format", "json", "fixtures/cuda13/multi"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["tool"]["name"], "cudadiag");
    assert_eq!(v["tool"]["version"], env!("CARGO_PKG_VERSION"));
    // Additive: which build wrote the report, and which matrix it carries (the same as `--version`).
    let long = version_fields();
    assert_eq!(v["tool"]["commit"], long["commit"].as_str());
    assert_eq!(v["tool"]["target"], long["target"].as_str());
    let matrix = v["tool"]["matrix"].as_object().unwrap();
    assert_eq!(
        long["matrix"],
        format!(
            "{} ({}, data/compat.toml)",
            matrix["version"].as_str().unwrap(),
            matrix["date"].as_str().unwrap()
        )
    );
    let b = &v["binaries"][0];
    assert_eq!(b["format"], "elf");
    assert_eq!(b["cudart"]["linkage"], "static");
    assert_eq!(b["cudart"]["version"], "13.0");
    let code = b["device_code"].as_array().unwrap();
    let archs: Vec<&str> = code.iter().map(|e| e["arch"].as_str().unwrap()).collect();
    assert_eq!(
        archs,
        ["sm_75", "sm_80", "sm_90", "sm_75", "sm_80", "compute_90", "sm_90"]
    );
    let ptx = &code[5];
    assert_eq!(ptx["kind"], "ptx");
    assert_eq!(ptx["ptx_isa"], "9.0");
    assert_eq!(ptx["compression"], "zstd");
    assert_eq!(ptx["toolkit"], "13.0.88");
    assert!(ptx["size"].as_u64().unwrap() > 0);
    assert_eq!(code[0]["toolkit"], "13.0.88");
    assert_eq!(code[0]["relocatable"], false);
    assert_eq!(v["summary"]["errors"], 0);
}

#[test]
fn relocatable_entries_are_marked() {
    let out = cudadiag()
        .args(["inspect", "--format", "json", "fixtures/cuda13/rdc"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let code = v["binaries"][0]["device_code"].as_array().unwrap();
    assert!(code.iter().any(|e| e["relocatable"] == true));
    assert!(code.iter().any(|e| e["relocatable"] == false));
}

#[test]
fn human_summary_line_snapshot() {
    // One summary line per binary, among the details after the headlines and the findings. (cudart_shared needs
    // libcudart.so.13, which a CI machine without CUDA lacks: its library-not-found is checked in the loader
    // tests.)
    let out = cudadiag()
        .args([
            "inspect",
            "--color",
            "never",
            "fixtures/cuda13/multi",
            "fixtures/cuda13/cudart_shared",
            "fixtures/cuda13/sm90a",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let summary: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("fixtures/") && l.contains("  "))
        .collect();
    assert_eq!(
        summary,
        [
            "fixtures/cuda13/multi  SASS sm_75 sm_80 sm_90 · PTX compute_90 (ISA 9.0) · CUDA 13.0.88 · 1 zstd-compressed · cudart static 13.0",
            "fixtures/cuda13/cudart_shared  SASS sm_75 · PTX compute_75 (ISA 9.0) · CUDA 13.0.88 · 1 zstd-compressed · cudart shared (libcudart.so.13)",
            "fixtures/cuda13/sm90a  SASS sm_90a · CUDA 13.0.88 · cudart static 13.0",
        ]
    );
    assert!(text.contains("3 binaries: "), "{text}");
    // Static binaries whose libraries are all on the machine: no findings, exit 0 (judged alone: the test
    // machine may or may not have a GPU).
    let out = cudadiag()
        .args([
            "inspect",
            "--no-host",
            "--color",
            "never",
            "fixtures/cuda13/multi",
            "fixtures/cuda13/sm90a",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("2 binaries: 0 errors, 0 warnings, 0 notes\n"));
}

#[test]
fn verbose_lists_every_entry() {
    let out = cudadiag()
        .args(["inspect", "-v", "--color", "never", "fixtures/cuda13/family"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sm_100f"), "{text}");
    assert!(text.contains("compute_100f"), "{text}");
    assert!(text.contains("fatbin      #0"), "{text}");
}

#[test]
fn exit_codes() {
    // 2: usage and I/O errors, with a message on stderr.
    let out = cudadiag().args(["inspect", "does/not/exist"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read does/not/exist"));
    assert_eq!(
        cudadiag().args(["inspect"]).output().unwrap().status.code(),
        Some(2)
    );
    assert_eq!(
        cudadiag()
            .args(["inspect", "--fail-on", "bogus", "x"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
    // 1: a finding at or above --fail-on. A damaged copy of a fixture gives an error finding.
    let dir = tempfile::tempdir().unwrap();
    let mut raw =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/kern.fatbin")).unwrap();
    let n = raw.len();
    raw.truncate(n - 100);
    let damaged = dir.path().join("damaged.fatbin");
    std::fs::write(&damaged, &raw).unwrap();
    let out = cudadiag().arg("inspect").arg(&damaged).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("malformed-device-code"));
    // ... and 0 when --fail-on is above it or never.
    assert_eq!(
        cudadiag()
            .args(["inspect", "--fail-on", "never"])
            .arg(&damaged)
            .output()
            .unwrap()
            .status
            .code(),
        Some(0)
    );
    // A note fails only with --fail-on note.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "just text").unwrap();
    assert_eq!(
        cudadiag()
            .arg("inspect")
            .arg(&text)
            .output()
            .unwrap()
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        cudadiag()
            .args(["inspect", "--fail-on", "warning"])
            .arg(&text)
            .output()
            .unwrap()
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn colour_follows_the_flag_and_no_color() {
    let esc = |out: &std::process::Output| out.stdout.contains(&0x1b);
    let damaged = "fixtures/cuda13/BUILD.log"; // an unrecognized input: a warning, coloured when allowed
    let always = cudadiag()
        .args(["inspect", "--color", "always", damaged])
        .output()
        .unwrap();
    assert!(esc(&always));
    let never = cudadiag()
        .args(["inspect", "--color", "never", damaged])
        .output()
        .unwrap();
    assert!(!esc(&never));
    // auto: not a terminal here, so no colour, and NO_COLOR is honoured too.
    let auto = cudadiag()
        .args(["inspect", damaged])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!esc(&auto));
}

#[test]
fn code_list_snapshot() {
    let out = cudadiag().arg("codes").output().unwrap();
    let expected =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots/codes.txt"))
            .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected,
        "the code list changed: codes are API; update tests/it/snapshots/codes.txt deliberately"
    );
    let json = cudadiag().args(["codes", "--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["codes"].as_array().unwrap().len(), expected.lines().count());
}

/// `cudadiag --version`'s lines after the first, as `key: value`.
fn version_fields() -> std::collections::BTreeMap<String, String> {
    let out = cudadiag().arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(concat!("cudadiag ", env!("CARGO_PKG_VERSION")))
    );
    lines
        .map(|l| {
            let (k, v) = l
                .split_once(": ")
                .unwrap_or_else(|| panic!("not key: value: {l}"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn version_names_commit_target_and_matrix() {
    let f = version_fields();
    assert_eq!(f.keys().collect::<Vec<_>>(), ["commit", "matrix", "target"]);
    let commit = f["commit"].strip_suffix("+dirty").unwrap_or(&f["commit"]);
    assert!(
        f["commit"] == "unknown" || commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "{f:?}"
    );
    assert!(f["target"].ends_with("-linux-gnu"), "{f:?}");
    let m = cudadiag::matrix::Matrix::bundled().unwrap();
    let want = format!("{} ({}, data/compat.toml)", m.version.unwrap(), m.date.unwrap());
    assert_eq!(f["matrix"], want);
    // -V stays one line.
    let short = cudadiag().arg("-V").output().unwrap();
    assert_eq!(
        String::from_utf8(short.stdout).unwrap(),
        concat!("cudadiag ", env!("CARGO_PKG_VERSION"), "\n")
    );
}

fn completions(shell: &str) -> String {
    let out = cudadiag().args(["completions", shell]).output().unwrap();
    assert!(
        out.status.success(),
        "completions {shell}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn completions_for_every_shell_name_the_commands_and_hide_the_internal_ones() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = completions(shell);
        for command in ["inspect", "doctor", "audit", "explain", "matrix", "completions"] {
            assert!(script.contains(command), "{shell} completions lack {command}");
        }
        assert!(
            script.contains("no-device-code"),
            "{shell} completions lack inspect's options"
        );
        // `__probe` and `__man` are internal: never offered (bash spells a subcommand `…__subcmd__NAME`).
        let words = script.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        for w in words {
            assert!(
                !(w == "__man" || w == "__probe" || w.ends_with("____man") || w.ends_with("____probe")),
                "{shell} completions offer {w}"
            );
        }
    }
    assert!(
        cudadiag()
            .args(["completions", "tcsh"])
            .assert()
            .get_output()
            .status
            .code()
            == Some(2)
    );
}

/// Each script is valid in its shell (where the shell is installed; bash is on every CI machine).
#[test]
fn completion_scripts_parse_in_their_shells() {
    for (shell, check) in [
        ("bash", ["bash", "-n"]),
        ("zsh", ["zsh", "-n"]),
        ("fish", ["fish", "-n"]),
    ] {
        let exists = std::process::Command::new(check[0])
            .arg("-c")
            .arg("true")
            .output()
            .is_ok();
        if !exists {
            assert_ne!(shell, "bash", "bash is needed to check the bash completions");
            continue;
        }
        let t = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(t.path(), completions(shell)).unwrap();
        let out = std::process::Command::new(check[0])
            .arg(check[1])
            .arg(t.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{shell} -n: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn man_pages_cover_every_visible_command() {
    let out = cudadiag().arg("__man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH cudadiag 1"), "{page}");
    for section in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH DESCRIPTION",
        ".SH OPTIONS",
        ".SH SUBCOMMANDS",
    ] {
        assert!(page.contains(section), "cudadiag.1 lacks {section}");
    }
    assert!(page.contains("cudadiag\\-inspect(1)") && !page.contains("__probe"));
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("man1");
    cudadiag().args(["__man", "--dir"]).arg(&dir).assert().success();
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    pages.sort();
    for name in [
        "cudadiag.1",
        "cudadiag-inspect.1",
        "cudadiag-audit.1",
        "cudadiag-completions.1",
    ] {
        assert!(pages.contains(&name.to_string()), "{name} not in {pages:?}");
    }
    assert!(pages.iter().all(|p| !p.contains("__")), "{pages:?}");
    let inspect = std::fs::read_to_string(dir.join("cudadiag-inspect.1")).unwrap();
    assert!(
        inspect.contains("no\\-device\\-code"),
        "the inspect page lacks its options"
    );
    // `cudadiag --help` points at both.
    let help = cudadiag().arg("--help").output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("completions"));
}

#[test]
fn help_teaches() {
    let out = cudadiag().args(["inspect", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["Examples:", "--format", "--deep", "--fail-on", "--root", "--env"] {
        assert!(text.contains(needle), "inspect --help lacks {needle}");
    }
}

/// The libraries a binary loads carry their own kernels: `uses_libkern` has no device code of its own, but the
/// `libkern.so` its RUNPATH ($ORIGIN) finds has sm_75 SASS and compute_75 PTX, so a CC 7.0 GPU fails (209) and a
/// CC 7.5 GPU runs it.
#[test]
fn device_code_of_loaded_libraries_decides_the_verdict() {
    let run = |gpu: &str| {
        cudadiag()
            .args([
                "inspect",
                "--color",
                "never",
                "--gpu",
                gpu,
                "fixtures/cuda13/uses_libkern",
            ])
            .output()
            .unwrap()
    };
    let out = run("7.0");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("no-kernel-image") && text.contains("libkern.so: no kernel image for CC 7.0"),
        "{text}"
    );
    assert!(
        text.contains("is loaded by fixtures/cuda13/uses_libkern"),
        "{text}"
    );
    assert!(text.contains("uses_libkern on CC 7.0 GPU: will fail"), "{text}");
    let out = run("7.5");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("uses_libkern on CC 7.5 GPU: will run"), "{text}");
}

/// `--no-libraries` reads the binaries alone: no loader resolution, so no library findings.
#[test]
fn no_libraries_skips_the_loader() {
    let out = cudadiag()
        .args([
            "inspect",
            "--format",
            "json",
            "--no-libraries",
            "fixtures/cuda13/cudart_shared",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["libraries"].as_array().map(Vec::len), Some(0));
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["slug"] != "library-not-found")
    );
    assert_eq!(v["binaries"][0]["device_code"].as_array().map(Vec::len), Some(3));
    let with = cudadiag()
        .args(["inspect", "--format", "json", "fixtures/cuda13/cudart_shared"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&with.stdout).unwrap();
    assert!(!v["libraries"].as_array().unwrap().is_empty());
}

/// `inspect` judges the binary for the machine it runs on (read through `--root`), with no `--facts`: the
/// developer's "why does it fail here?". A machine without any NVIDIA GPU or driver is not judged, and says so.
#[test]
fn inspect_judges_for_this_machine_unless_it_has_no_nvidia_gpu() {
    let case = std::path::Path::new("fixtures/hosts/healthy");
    let mut args: Vec<String> = [
        "inspect",
        "--no-libraries",
        "--color",
        "never",
        "--clear-env",
        "--root",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(case.join("root").display().to_string());
    for line in std::fs::read_to_string(case.join("env")).unwrap().lines() {
        if !line.trim().is_empty() {
            args.extend(["--env".to_string(), line.to_string()]);
        }
    }
    args.push("fixtures/cuda13/sm80".into());
    let out = cudadiag().args(&args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("error[CD100] no-kernel-image"), "{text}");
    assert!(
        text.contains("on NVIDIA H100 80GB HBM3 (CC 9.0): will fail"),
        "{text}"
    );
    // --no-host: the binary alone, nothing about the machine.
    let i = args.iter().position(|a| a == "--no-libraries").unwrap();
    args.insert(i, "--no-host".into());
    let out = cudadiag().args(&args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("H100"), "{text}");
    // An empty machine: judged alone, with the reason on the summary.
    let empty = tempfile::tempdir().unwrap();
    let out = cudadiag()
        .args([
            "inspect",
            "--no-libraries",
            "--color",
            "never",
            "--clear-env",
            "--root",
        ])
        .arg(empty.path())
        .arg("fixtures/cuda13/sm80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("no NVIDIA GPU or driver on this machine"), "{text}");
}

/// `--no-device-code` reads no fatbin: the report says the device code was not read, never that there is none,
/// and gives no verdict on kernels it did not look at.
#[test]
fn no_device_code_flag_does_not_claim_the_binary_has_none() {
    let args = [
        "inspect",
        "--gpu",
        "9.0",
        "--driver",
        "580.65.06",
        "--color",
        "never",
    ];
    let out = cudadiag()
        .args(args)
        .args(["--no-device-code", "fixtures/cuda13/sm80"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("device code not read"), "{text}");
    assert!(!text.contains("no-device-code"), "{text}");
    assert!(!text.contains("no device code"), "{text}");
    assert!(!text.contains("verdict"), "{text}");
    let out = cudadiag()
        .args(args)
        .args(["--no-device-code", "--format", "json", "fixtures/cuda13/sm80"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["binaries"][0]["device_code_skipped"], true);
    assert!(
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["slug"] != "no-device-code")
    );
    // Read, the same binary is judged: no kernel image for CC 9.0.
    let out = cudadiag()
        .args(args)
        .arg("fixtures/cuda13/sm80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("SASS sm_80"), "{text}");
    assert!(text.contains("will fail"), "{text}");
}

/// Bytes that must never reach a terminal from data: ESC, BEL, and the 8-bit CSI (U+009B).
fn raw_escapes(bytes: &[u8]) -> bool {
    bytes.contains(&0x1b) || bytes.contains(&0x07) || String::from_utf8_lossy(bytes).contains('\u{9b}')
}

const EVIL: &str = "lib\x1b]0;pwned\x07\x1b[2Jevil.so";
const EVIL_SHOWN: &str = "lib\\e]0;pwned\\x07\\e[2Jevil.so";

fn cc(args: &[&std::ffi::OsStr]) {
    let st = std::process::Command::new("cc").args(args).status().unwrap();
    assert!(st.success(), "cc {args:?}");
}

/// Issue 19, case 2: a SONAME and NEEDED of `lib ESC]0;pwned BEL ESC[2J evil.so` retitled and cleared the
/// terminal of whoever inspected the binary; file names carried escapes the same way.
#[test]
fn hostile_soname_needed_and_file_name_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("e.c"), "int evil(void) { return 1; }\n").unwrap();
    std::fs::write(
        d.join("m.c"),
        "int evil(void);\nint main(void) { return evil(); }\n",
    )
    .unwrap();
    let lib = d.join(EVIL);
    let soname = format!("-Wl,-soname,{EVIL}");
    let rpath = format!("-Wl,-rpath,{}", d.display());
    cc(&[
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        "-o".as_ref(),
        lib.as_os_str(),
        soname.as_ref(),
        d.join("e.c").as_os_str(),
    ]);
    let app = d.join("app\x1b[31m\u{9b}1m\u{202e}");
    cc(&[
        "-o".as_ref(),
        app.as_os_str(),
        d.join("m.c").as_os_str(),
        lib.as_os_str(),
        rpath.as_ref(),
    ]);
    for format in ["human", "github"] {
        for input in [&app, &lib] {
            let out = cudadiag()
                .args([
                    "inspect",
                    "-v",
                    "--no-host",
                    "--color",
                    "never",
                    "--fail-on",
                    "never",
                    "--format",
                    format,
                ])
                .arg(input)
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(!raw_escapes(&out.stdout), "{format}: {text:?}");
            if format == "human" {
                assert!(text.contains(EVIL_SHOWN), "{format}: {text}");
            }
            if input == &app && format == "human" {
                assert!(text.contains("app\\e[31m\\u{9b}1m\\u{202e}"), "{text}");
            }
        }
    }
    // Coloured, the report's own colour sequences remain; the data's do not.
    let out = cudadiag()
        .args([
            "inspect",
            "-v",
            "--no-host",
            "--color",
            "always",
            "--fail-on",
            "never",
        ])
        .arg(&app)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\x1b[1m") && !text.contains("\x1b]") && !text.contains("\x1b[2J"),
        "{text:?}"
    );
    assert!(!text.contains("\x1b[31m\u{9b}"), "{text:?}");
    // A tool error names the path escaped on stderr.
    let out = cudadiag()
        .arg("inspect")
        .arg(d.join("missing\x1b]0;x\x07"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !raw_escapes(&out.stderr),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing\\e]0;x\\x07"));
}

/// Issue 19, case 11: `explain` echoed escape bytes and a 5.5 MB query back on stderr.
#[test]
fn explain_echoes_a_hostile_or_huge_query_escaped_and_short() {
    let out = cudadiag()
        .args(["explain", "zz\x1b]0;pwned\x07\x1b[2J"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !raw_escapes(&out.stderr),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("zz\\e]0;pwned\\x07\\e[2J"));
    // One argument may not exceed 128 KiB: the query is its words joined by spaces.
    let word = "q".repeat(9_999);
    let out = cudadiag().arg("explain").args(vec![&word; 20]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.len() < 2_000 && err.contains("… (199999 bytes)"),
        "{} bytes",
        err.len()
    );
}

/// Issue 19, case 11: on a closed standard output `codes` exited 0 and `inspect` 2 with "Broken pipe". Every
/// command now stops writing quietly and exits with what it found.
#[test]
fn a_closed_stdout_is_quiet_and_keeps_the_outcome() {
    use std::process::Stdio;
    let run = |args: &[&str]| {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("cudadiag"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader is gone before the first byte is written
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    assert_eq!(run(&["codes"]), (Some(0), String::new()));
    // A report far longer than the output buffer (every fixture, about 150 KB): the pipe breaks while the
    // report is written, not at the flush.
    let mut args = vec!["inspect", "-v", "--no-host", "--fail-on", "never"];
    let all: Vec<String> = fixtures().iter().map(|p| p.display().to_string()).collect();
    args.extend(all.iter().map(String::as_str));
    let (code, err) = run(&args);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    let (code, err) = run(&[
        "inspect",
        "--no-host",
        "fixtures/cuda13/BUILD.log",
        "--fail-on",
        "warning",
    ]);
    assert_eq!((code, err.as_str()), (Some(1), ""));
    let (code, err) = run(&["explain", "no-kernel-image"]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
}

/// Case 1 of issue 19: `inspect FIFO` hung and `inspect /dev/zero` grew until the kernel killed it; the same
/// for `--policy`, `--matrix` and `--facts`. Each is now refused at once, naming what the file is.
#[test]
fn inputs_that_are_not_regular_files_are_refused_not_read() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fifo = fifo.to_str().unwrap();
    let sm80 = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/sm80");
    let sm80 = sm80.to_str().unwrap();
    let said = "is a FIFO (named pipe), not a regular file";
    for (args, expect) in [
        (vec!["inspect", fifo], said),
        (
            vec!["inspect", "/dev/zero"],
            "is a character device, not a regular file",
        ),
        (vec!["audit", "--policy", fifo, sm80], said),
        (vec!["inspect", "--matrix", fifo, sm80], said),
        (vec!["doctor", "--facts", fifo], said),
    ] {
        let out = cudadiag()
            .args(&args)
            .timeout(std::time::Duration::from_secs(20))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
    // Past its size: a sparse 17 MiB policy is refused, the near miss (a real one) is read.
    let big = t.path().join("big.toml");
    std::fs::File::create(&big).unwrap().set_len(17 << 20).unwrap();
    let out = cudadiag()
        .args(["audit", "--policy", big.to_str().unwrap(), sm80])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("is 17 MiB, more than the 16 MiB a policy file can be: not read"),
        "{stderr}"
    );
    let ok = t.path().join("ok.toml");
    std::fs::write(&ok, "[targets]\nsass = [\"sm_80\"]\n").unwrap();
    cudadiag()
        .args(["audit", "--policy", ok.to_str().unwrap(), sm80])
        .assert()
        .success();
}

/// Case 8 of issue 19: `inspect` died of SIGBUS (exit 135) when its input was rewritten while mapped (a linker
/// rewriting the library a job audits). While another thread rewrites the input as `cp` does (truncate, then
/// write), every run ends with an exit code, never a signal; a run that saw the file shrink says so. (The
/// release binary before the change died in about 8% of such runs; 150 runs make a miss unlikely.)
#[test]
fn an_input_rewritten_while_read_never_kills_inspect() {
    use std::os::unix::process::ExitStatusExt;
    let t = tempfile::tempdir().unwrap();
    let src = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/multi")).unwrap();
    let victim = t.path().join("victim");
    std::fs::write(&victim, &src).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, victim) = (stop.clone(), victim.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::write(&victim, &src);
            }
        })
    };
    let mut changed = 0;
    for _ in 0..150 {
        let out = cudadiag()
            .args(["inspect", "--no-host"])
            .arg(&victim)
            .output()
            .unwrap();
        assert_eq!(
            out.status.signal(),
            None,
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if String::from_utf8_lossy(&out.stderr).contains("changed (shrank) while it was being read") {
            changed += 1;
            assert_eq!(out.status.code(), Some(2));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    // Not asserted: how often the race was hit (it depends on the machine's load).
    let _ = changed;
}

/// Golden: `inspect` of a fixture alone (`--no-host`), and against what-if machines: an H200 with a CUDA 13
/// driver (runs), a V100 (no kernel image), and an old driver (the runtime is too new for it).
#[test]
fn golden_inspect_fixture() {
    let run = |args: &[&str]| {
        let out = cudadiag()
            .args(["--color", "never", "inspect"])
            .args(args)
            .arg("fixtures/cuda13/multi")
            .output()
            .unwrap();
        golden::transcript(&out, &[])
    };
    insta::assert_snapshot!("inspect_multi_no_host", run(&["--no-host"]));
    insta::assert_snapshot!(
        "inspect_multi_h200",
        run(&["--gpu", "NVIDIA H200", "--driver", "580.159.04"])
    );
    insta::assert_snapshot!(
        "inspect_multi_v100_old_driver",
        run(&["--gpu", "7.0", "--driver", "535.104.05"])
    );
}

/// Issue 30: `--help` said nothing is loaded, while `--probe` loads the driver's libcuda: both help texts
/// that say so now name the exception.
#[test]
fn help_that_says_nothing_is_loaded_names_the_probe() {
    for args in [&["--help"][..], &["inspect", "--help"][..]] {
        let out = crate::support::cli::output(args);
        let text = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            text.contains("--probe") && text.contains("loads the driver's libcuda.so.1"),
            "{args:?}: {text}"
        );
    }
}
