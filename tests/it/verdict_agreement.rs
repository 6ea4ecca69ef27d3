//! No report says "will run" (or "no error found", "no verdict") above an error that stops the program (issue
//! 29): the first line, the JSON outcome, the findings and the exit status come from one judgement. Checked on
//! every golden human report (`tests/it/snapshots`), every JSON report kept under `fixtures/`, fresh reports of
//! every fixture program on a set of targets, and of fixture programs on every host fixture root.
//!
//! An error stops a program when it is about the program or an object its process maps (the report's
//! `libraries` say which), or about the machine (no path), and, when it holds for one GPU only, on that GPU. A
//! release policy's own checks (`policy-missing-arch`, …) gate a release and stop nothing.

use crate::support::cli::{cudadiag, machine_args};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Error codes that gate a release without stopping the program.
const GATES: &[&str] = &[
    "policy-missing-arch",
    "policy-missing-ptx",
    "policy-forbidden-library",
    "waiver-unused",
    "waiver-expired",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The standings that say nothing stops the program.
fn well(standing: &str) -> bool {
    matches!(
        standing,
        "runs" | "runs-after-jit" | "no-error" | "no-device-code"
    )
}

/// Every error of a JSON report that stops a program, paired with a headline (or, in a report without
/// headlines, a verdict) that says nothing stops it.
fn json_violations(name: &str, report: &Value) -> Vec<String> {
    let empty = Vec::new();
    let libraries = report["libraries"].as_array().unwrap_or(&empty);
    let findings = report["findings"].as_array().unwrap_or(&empty);
    // (subject, gpu, standing): the headlines, else the verdicts of a report written before them.
    let outcomes: Vec<(String, Option<String>, String)> = match report["headlines"].as_array() {
        Some(hs) => hs
            .iter()
            .filter_map(|h| {
                Some((
                    h["subject"].as_str()?.to_string(),
                    h["gpu"].as_str().map(str::to_string),
                    h["standing"].as_str()?.to_string(),
                ))
            })
            .collect(),
        None => report["verdicts"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter_map(|v| {
                Some((
                    v["binary"].as_str()?.to_string(),
                    v["gpu"].as_str().map(str::to_string),
                    v["outcome"].as_str()?.to_string(),
                ))
            })
            .collect(),
    };
    let mut out = Vec::new();
    for (subject, gpu, standing) in outcomes.iter().filter(|o| well(&o.2)) {
        let mut scope: BTreeSet<&str> = BTreeSet::from([subject.as_str()]);
        for l in libraries.iter().filter(|l| l["binary"] == subject.as_str()) {
            scope.extend(l["path"].as_str());
            scope.extend(l["realpath"].as_str());
        }
        for f in findings {
            if f["severity"] != "error" || GATES.contains(&f["slug"].as_str().unwrap_or("")) {
                continue;
            }
            let about = f["path"].as_str().is_none_or(|p| scope.contains(p));
            let here = match (f["gpu"].as_str(), gpu) {
                (Some(fg), Some(g)) => fg == g,
                _ => true,
            };
            if about && here {
                out.push(format!(
                    "{name}: {subject} on {gpu:?} is `{standing}` above error {}: {}",
                    f["slug"], f["message"]
                ));
            }
        }
    }
    out
}

/// A human headline: (subject, GPU, what it says).
fn headline(line: &str) -> Option<(String, Option<String>, &'static str)> {
    const WORDS: &[(&str, &str)] = &[
        (": will run after JIT", "runs-after-jit"),
        (": will run", "runs"),
        (": will fail", "fails"),
        (": CUDA programs will fail", "fails"),
        (": no error found", "no-error"),
        (": no verdict", "no-device-code"),
    ];
    let (at, standing) = WORDS.iter().find_map(|(w, s)| line.find(w).map(|i| (i, *s)))?;
    let head = &line[..at];
    match head.split_once(" on ") {
        Some((subject, gpu)) => Some((subject.to_string(), Some(gpu.to_string()), standing)),
        None => Some((head.to_string(), None, standing)),
    }
}

/// The same check on a human report: its headlines (the first block) against its `error[…]` lines. An error
/// is another program's when its message starts with that program; one that starts with a path no headline
/// names is about a library, whose process the human text does not say, and counts only in a report of one
/// program; an error for another GPU of the report is not about this one.
fn human_violations(name: &str, text: &str) -> Vec<String> {
    let stdout = text.split("--- stdout\n").nth(1).unwrap_or(text);
    let stdout = stdout.split("--- stderr").next().unwrap_or(stdout);
    let heads: Vec<(String, Option<String>, &str)> = stdout
        .lines()
        .take_while(|l| !l.is_empty())
        .map_while(headline)
        .collect();
    let subjects: BTreeSet<&str> = heads.iter().map(|h| h.0.as_str()).collect();
    let gpus: BTreeSet<&str> = heads.iter().filter_map(|h| h.1.as_deref()).collect();
    let re = regex::Regex::new(r"^error\[CD\d+\] ([a-z0-9-]+): (.*)$").unwrap();
    let errors: Vec<(&str, &str)> = stdout
        .lines()
        .filter_map(|l| re.captures(l))
        .map(|c| (c.get(1).unwrap().as_str(), c.get(2).unwrap().as_str()))
        .filter(|(slug, _)| !GATES.contains(slug))
        .collect();
    let mut out = Vec::new();
    for (subject, gpu, standing) in heads.iter().filter(|h| well(h.2)) {
        for (slug, message) in &errors {
            let owner = subjects.iter().find(|s| message.starts_with(&format!("{s}: ")));
            let about = match owner {
                Some(s) => s == subject,
                None => subjects.len() == 1 || !message.split(": ").next().unwrap_or("").contains('/'),
            };
            let other_gpu = gpus
                .iter()
                .any(|g| Some(*g) != gpu.as_deref() && message.contains(&format!(" {g}")));
            if about && !other_gpu {
                out.push(format!(
                    "{name}: {subject} on {gpu:?} says `{standing}` above error {slug}: {message}"
                ));
            }
        }
    }
    out
}

/// Every file under `dir` (recursively) whose name passes `keep`.
fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file() && keep(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_golden_report_says_will_run_above_an_error_that_stops_it() {
    let mut checked = 0;
    let mut bad = Vec::new();
    for p in files(&repo().join("tests/it/snapshots"), &|p| {
        p.extension().is_some_and(|x| x == "snap" || x == "txt")
    }) {
        let text = std::fs::read_to_string(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        checked += 1;
        bad.extend(human_violations(&name, &text));
    }
    for p in files(&repo().join("fixtures"), &|p| {
        p.extension().is_some_and(|x| x == "json")
    }) {
        let Ok(report) = serde_json::from_str::<Value>(&std::fs::read_to_string(&p).unwrap()) else {
            continue;
        };
        if report.get("findings").is_some() {
            checked += 1;
            bad.extend(json_violations(&p.display().to_string(), &report));
        }
    }
    assert!(checked >= 15, "only {checked} golden reports found");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every program of `fixtures/cuda13` (and the raw device-code files), in one report per target.
fn fixture_programs() -> Vec<String> {
    let dir = repo().join("fixtures/cuda13");
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            !n.ends_with(".txt") && !n.ends_with(".log")
        })
        .map(|p| format!("fixtures/cuda13/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    out.sort();
    out
}

fn report_of(args: &[String]) -> (Value, String, Option<i32>) {
    let json = cudadiag().args(args).args(["--format", "json"]).output().unwrap();
    let human = cudadiag().args(["--color", "never"]).args(args).output().unwrap();
    let report: Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&json.stderr)));
    // The exit status agrees with the outcome: a failing program fails the run.
    let fails = report["headlines"]
        .as_array()
        .is_some_and(|hs| hs.iter().any(|h| h["standing"] == "fails"));
    if fails {
        assert_eq!(json.status.code(), Some(1), "{args:?}");
    }
    (
        report,
        String::from_utf8_lossy(&human.stdout).into_owned(),
        json.status.code(),
    )
}

#[test]
fn no_fixture_report_says_will_run_above_an_error_that_stops_it() {
    let programs = fixture_programs();
    assert!(programs.len() >= 20, "{programs:?}");
    let targets: &[&[&str]] = &[
        &["--gpu", "9.0", "--driver", "535.104.05"],
        &["--gpu", "9.0", "--driver", "580.159.04"],
        &["--gpu", "7.5", "--driver", "535.104.05"],
        &["--gpu", "8.0", "--gpu", "10.0", "--driver", "575.57.08"],
        &["--no-host"],
    ];
    let mut bad = Vec::new();
    let mut judged = 0;
    for t in targets {
        let mut args: Vec<String> = vec!["inspect".into()];
        args.extend(t.iter().map(|s| s.to_string()));
        args.extend(programs.iter().cloned());
        let (report, human, _) = report_of(&args);
        judged += report["headlines"]
            .as_array()
            .or(report["verdicts"].as_array())
            .map_or(0, Vec::len);
        bad.extend(json_violations(&format!("{t:?} (json)"), &report));
        bad.extend(human_violations(&format!("{t:?} (human)"), &human));
    }
    assert!(judged >= 100, "only {judged} outcomes");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn no_host_root_report_says_will_run_above_an_error_that_stops_it() {
    let hosts = repo().join("fixtures/hosts");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&hosts)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("root").is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 10, "{cases:?}");
    let mut bad = Vec::new();
    for d in &cases {
        let mut args: Vec<String> = vec!["inspect".into()];
        args.extend(machine_args(&d.join("root"), &d.join("env"), &[]));
        args.extend(
            [
                "multi",
                "uses_libkern",
                "cudart_shared",
                "sm80",
                "ptx_only",
                "hostonly",
            ]
            .iter()
            .map(|p| format!("fixtures/cuda13/{p}")),
        );
        let (report, human, _) = report_of(&args);
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        bad.extend(json_violations(&format!("{name} (json)"), &report));
        bad.extend(human_violations(&format!("{name} (human)"), &human));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
