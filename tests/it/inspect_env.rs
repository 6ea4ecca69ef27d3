//! `cudadiag inspect DIR` of a Python environment (a venv, a conda environment, a `site-packages` directory)
//! and `doctor`'s lines for the active environment (issue 31): every framework installed judged alone, and
//! all together in one process when there are several. The environments are the small synthetic ones of
//! `python_import` (torch) and `python_cupy_ort` (ONNX Runtime), built under a `--root`.
//!
//! Before this, `inspect DIR` stopped at "is a directory, not a regular file" and `doctor` said nothing of
//! Python.

use crate::python_cupy_ort as ort;
use crate::python_import::{bare, driver_and_cache, interpreter_and_venv, torch, wheels, write};
use crate::support::cli::{self, slugs};
use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;

/// `cudadiag --color never ARGS --root ROOT --clear-env ENV…`: exit code, stdout, stderr.
fn cudadiag(root: &Path, args: &[&str], env: &[&str]) -> (i32, String, String) {
    cli::run(args.iter().map(OsString::from).chain(cli::on_root(root, env)))
}

/// [`cudadiag`] of a command that prints JSON: exit code and report.
fn cudadiag_json(root: &Path, args: &[&str], env: &[&str]) -> (i32, Value) {
    cli::run_json(args.iter().map(OsString::from).chain(cli::on_root(root, env)))
}

/// `inspect DIR --gpu 9.0 --driver 580.65.06 --format json` under `root`: the exit code and the report, which
/// the JSON contract's own checker accepts.
fn inspect_json(root: &Path, dir: &str) -> (i32, Value) {
    let args = [
        "inspect",
        dir,
        "--gpu",
        "9.0",
        "--driver",
        "580.65.06",
        "--format",
        "json",
    ];
    let (code, doc) = cudadiag_json(root, &args, &[]);
    cli::contract(&doc);
    (code, doc)
}

/// `(module, installed, alone's kind, together's kind)` of each framework.
fn verdicts(doc: &Value) -> Vec<(String, String, String, Option<String>)> {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    doc["python"]["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                s(&f["module"]),
                s(&f["installed"]),
                s(&f["alone"]["kind"]),
                f["together"]["kind"].as_str().map(String::from),
            )
        })
        .collect()
}

/// A root with `/venv` holding torch 2.15 and its NVIDIA wheels but `missing`, and the driver's libcuda.
fn torch_venv(t: &Path, missing: &[&str]) -> std::path::PathBuf {
    let root = t.join("root");
    let site = interpreter_and_venv(&root);
    torch(t, &site, "2.15.0");
    wheels(t, &site, missing);
    driver_and_cache(&root, &[]);
    root
}

#[test]
fn inspect_of_a_healthy_torch_venv_says_torch_will_use_the_gpu() {
    let t = tempfile::tempdir().unwrap();
    let root = torch_venv(t.path(), &[]);
    let (code, doc) = inspect_json(&root, "/venv");
    assert_eq!((code, slugs(&doc)), (0, vec![]), "{doc:#}");
    assert_eq!(
        verdicts(&doc),
        [("torch".into(), "torch 2.15.0".into(), "gpu".into(), None)]
    );
    assert_eq!(doc["python"]["kind"], "venv");
    assert_eq!(doc["python"]["runs"][0]["modules"], serde_json::json!(["torch"]));
    // The human report answers first, one line per framework; the root's path as given works too.
    let venv = root.join("venv");
    let args = [
        "inspect",
        venv.to_str().unwrap(),
        "--gpu",
        "9.0",
        "--driver",
        "580.65.06",
    ];
    let (code, out, err) = cudadiag(&root, &args, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().next(),
        Some("torch 2.15.0: will use the GPU"),
        "{out}"
    );
}

#[test]
fn inspect_of_a_venv_missing_the_cudnn_wheel_says_torch_fails_and_names_the_library() {
    let t = tempfile::tempdir().unwrap();
    let root = torch_venv(t.path(), &["libcudnn.so.9"]);
    let (code, doc) = inspect_json(&root, "/venv");
    assert_eq!(code, 1, "{doc:#}");
    let v = &doc["python"]["frameworks"][0]["alone"];
    assert_eq!(
        (v["kind"].as_str(), v["at"].as_str()),
        (Some("fails"), Some("import")),
        "{v:#}"
    );
    assert!(v["message"].as_str().unwrap().contains("libcudnn.so.9"), "{v:#}");
    let f = &doc["findings"][0];
    assert_eq!(f["slug"], "library-not-found");
    assert!(f["message"].as_str().unwrap().contains("libcudnn.so.9"), "{f:#}");
    // The evidence names the run and the environment.
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains("`import torch` alone, in the environment /venv"),
        "{evidence}"
    );
    // `--fail-on never`: the same report, exit 0.
    let args = [
        "inspect",
        "/venv",
        "--gpu",
        "9.0",
        "--driver",
        "580.65.06",
        "--fail-on",
        "never",
    ];
    let (code, out, _) = cudadiag(&root, &args, &[]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("torch 2.15.0: fails at import: ImportError: libcudnn.so.9"),
        "{out}"
    );
}

#[test]
fn inspect_of_a_site_packages_directory_uses_the_interpreter_of_its_prefix() {
    let t = tempfile::tempdir().unwrap();
    let root = torch_venv(t.path(), &[]);
    let (code, doc) = inspect_json(&root, "/venv/lib/python3.11/site-packages");
    assert_eq!((code, slugs(&doc)), (0, vec![]), "{doc:#}");
    assert_eq!(doc["python"]["kind"], "site-packages");
    assert_eq!(doc["python"]["executable"], "/venv/bin/python3");
    assert_eq!(verdicts(&doc)[0].2, "gpu");
    // A prefix that is no venv: `/usr/lib/python3.11/site-packages` is judged with `/usr/bin/python3.11`.
    let usr_site = root.join("usr/lib/python3.11/site-packages");
    torch(t.path(), &usr_site, "2.15.0");
    wheels(t.path(), &usr_site, &[]);
    let (code, doc) = inspect_json(&root, "/usr/lib/python3.11/site-packages");
    assert_eq!(
        (code, doc["python"]["executable"].as_str()),
        (0, Some("/usr/bin/python3.11")),
        "{doc:#}"
    );
    assert_eq!(verdicts(&doc)[0].2, "gpu");
    // A directory that is none of these says what inspect takes.
    let (code, _, err) = cudadiag(&root, &["inspect", "/usr/lib"], &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("a venv (with pyvenv.cfg), a conda environment (with conda-meta/)"),
        "{err}"
    );
}

#[test]
fn inspect_of_a_conda_environment_judges_its_frameworks() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let env = root.join("opt/conda/envs/ml");
    bare(&env.join("bin"), "python3.11", &[], &[]);
    std::os::unix::fs::symlink("python3.11", env.join("bin/python3")).unwrap();
    write(&env.join("lib/python3.11/os.py"), "");
    std::fs::create_dir_all(env.join("lib/python3.11/lib-dynload")).unwrap();
    write(&env.join("conda-meta/history"), "");
    let site = env.join("lib/python3.11/site-packages");
    torch(t.path(), &site, "2.15.0");
    wheels(t.path(), &site, &["libcudnn.so.9"]);
    driver_and_cache(&root, &[]);
    let (code, doc) = inspect_json(&root, "/opt/conda/envs/ml");
    assert_eq!(doc["python"]["kind"], "conda", "{doc:#}");
    assert_eq!((code, verdicts(&doc)[0].2.as_str()), (1, "fails"));
    assert_eq!(slugs(&doc), ["library-not-found"]);
}

/// A machine whose `/venv` holds ONNX Runtime's CUDA 13 build and torch 2.15 with its NVIDIA wheels but
/// `missing` (ONNX Runtime's wheels first: torch's, cuDNN with its sub-libraries, replace the same files);
/// `t` holds torch's scratch files.
fn torch_and_ort(t: &Path, missing: &[&str]) -> ort::Machine {
    let m = ort::Machine::new(true);
    let site = m.site();
    ort::ort(&m);
    ort::cuda13(&m, &[]);
    torch(t, &site, "2.15.0");
    wheels(t, &site, missing);
    m
}

/// torch and ONNX Runtime in one venv: each alone (ONNX Runtime without `preload_dlls()` falls back to the
/// CPU, torch uses the GPU), then both in one process in the stated order; the fall-back is one finding.
#[test]
fn inspect_of_a_venv_with_two_frameworks_judges_each_alone_and_both_in_one_process() {
    let t = tempfile::tempdir().unwrap();
    let m = torch_and_ort(t.path(), &[]);
    let (code, doc) = inspect_json(&m.root, "/venv");
    let got = verdicts(&doc);
    assert_eq!(
        got.iter()
            .map(|v| (v.0.as_str(), v.2.as_str()))
            .collect::<Vec<_>>(),
        [("torch", "gpu"), ("onnxruntime", "cpu")],
        "{doc:#}"
    );
    assert!(got.iter().all(|v| v.3.is_some()), "{got:?}");
    assert_eq!(
        doc["python"]["order"],
        serde_json::json!(["torch", "onnxruntime"])
    );
    let runs: Vec<&Value> = doc["python"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["modules"])
        .collect();
    assert_eq!(
        runs,
        [
            &serde_json::json!(["torch"]),
            &serde_json::json!(["onnxruntime"]),
            &serde_json::json!(["torch", "onnxruntime"])
        ]
    );
    assert_eq!(code, 1);
    // Alone, ONNX Runtime's provider misses cuBLASLt; after torch preloaded cuBLASLt it misses cuRAND, which
    // torch 2.15 no longer preloads: two findings, each naming its process.
    let fallbacks: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["slug"] == "framework-cpu-fallback")
        .collect();
    let said = |f: &Value| (f["message"].to_string(), f["evidence"].to_string());
    assert_eq!(fallbacks.len(), 2, "{doc:#}");
    let (alone, together) = (said(fallbacks[0]), said(fallbacks[1]));
    assert!(
        alone.0.contains("libcublasLt.so.13") && alone.1.contains("`import onnxruntime` alone"),
        "{alone:?}"
    );
    assert!(
        together.0.contains("libcurand.so.10")
            && together
                .1
                .contains("`import torch; import onnxruntime` in one process"),
        "{together:?}"
    );
    let (_, out, _) = cudadiag(
        &m.root,
        &["inspect", "/venv", "--gpu", "9.0", "--driver", "580.65.06"],
        &[],
    );
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("torch 2.15.0: will use the GPU"), "{out}");
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("onnxruntime-gpu 1.31.1: runs on the CPU: "),
        "{out}"
    );
    let line = lines.next().unwrap();
    assert!(
        line.starts_with(
            "  in one process with the others (import torch; import onnxruntime): runs on the CPU: "
        ) && line.contains("libcurand.so.10"),
        "{out}"
    );
}

/// The runs alone go side by side when the workers are three or more, each on a copy of what the run together
/// read, and torch's preloads are read ahead; else one after the other, each file read at its load: the same
/// frameworks, verdicts, runs and findings either way (CI's 2 cores take the second path on the command line).
#[test]
fn runs_alone_side_by_side_or_one_after_the_other_say_the_same() {
    use cudadiag::diagnose::{System, Target, frameworks};
    let t = tempfile::tempdir().unwrap();
    let m = torch_and_ort(t.path(), &["libcurand.so.10"]);
    let system = System {
        root: Some(m.root.clone()),
        env: Vec::new(),
        clear_env: true,
    };
    let target = Target {
        gpus: vec!["9.0".into()],
        driver: Some("580.65.06".into()),
    };
    let matrix = cudadiag::matrix::Matrix::bundled().unwrap();
    let (root, env) = (system.root(), system.env());
    let facts = frameworks::machine_facts(&system, &target, None, &matrix).unwrap();
    let (gpus, driver) = frameworks::machine_of(facts.host.as_ref(), None, &matrix);
    let q = frameworks::Question {
        root: &root,
        env: &env,
        machine: cudadiag::imports::Machine {
            gpus: &gpus,
            driver: driver.as_ref(),
            declared: true,
        },
        matrix: &matrix,
    };
    let judged = |threads: usize| {
        let (chosen, kind) = frameworks::locate(&root, Path::new("/venv")).unwrap();
        let read = frameworks::read_env(&root, &env, chosen, kind, false).unwrap();
        let files = cudadiag::loader::Files::with_threads(threads);
        let (fw, findings) = frameworks::judge_read_on(&q, read, files).unwrap();
        serde_json::to_value((fw, findings)).unwrap()
    };
    let (apart, after) = (judged(4), judged(1));
    assert_eq!(apart, after);
    // Three runs, two frameworks, a finding of each run alone and of the run together.
    assert_eq!(apart[0]["runs"].as_array().map(Vec::len), Some(3), "{apart:#}");
    let slugs: Vec<&str> = apart[1]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["slug"].as_str())
        .collect();
    assert!(slugs.len() >= 2, "{apart:#}");
}

#[test]
fn doctor_with_virtual_env_lists_its_frameworks_and_their_findings() {
    let t = tempfile::tempdir().unwrap();
    let root = torch_venv(t.path(), &["libcudnn.so.9"]);
    let (code, doc) = cudadiag_json(&root, &["doctor", "--format", "json"], &["VIRTUAL_ENV=/venv"]);
    cli::contract(&doc);
    assert_eq!(code, 1);
    assert_eq!(
        doc["python"]["python"]["because"], "VIRTUAL_ENV",
        "{:#}",
        doc["python"]
    );
    assert_eq!(verdicts(&doc)[0].0, "torch");
    assert_eq!(verdicts(&doc)[0].2, "fails");
    assert!(
        doc["python"].get("runs").is_none(),
        "doctor leaves the processes out"
    );
    let f = cli::finding(&doc, "library-not-found");
    assert!(
        f["evidence"]
            .to_string()
            .contains("in the environment /venv (VIRTUAL_ENV)"),
        "{f:#}"
    );
    let (code, out, _) = cudadiag(&root, &["doctor"], &["VIRTUAL_ENV=/venv"]);
    // The first line agrees with the findings and the exit status: a machine whose environment's torch
    // fails at import is not "no error found" (it was, while the exit status was 1).
    // The first line counts every error, the framework's too (it counted the machine's alone).
    let errors = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .count();
    let headline = out.lines().next().unwrap_or_default();
    assert!(
        code == 1
            && headline.contains("will fail")
            && headline.contains(&format!("(and {} more errors)", errors - 1)),
        "{errors} errors: {out}"
    );
    assert!(
        out.contains("python    /venv/bin/python3 (Python 3.11, VIRTUAL_ENV): 1 framework"),
        "{out}"
    );
    assert!(
        out.contains("torch 2.15.0: fails at import: ImportError: libcudnn.so.9"),
        "{out}"
    );
}

#[test]
fn doctor_without_an_environment_or_a_framework_says_so_quietly() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    interpreter_and_venv(&root);
    // No VIRTUAL_ENV and no python3 on an empty PATH: a quiet line, no finding.
    let (_, doc) = cudadiag_json(&root, &["doctor", "--format", "json"], &[]);
    assert!(
        doc["python"]["problem"]
            .as_str()
            .unwrap()
            .contains("no Python interpreter"),
        "{doc:#}"
    );
    assert_eq!(slugs(&doc), ["no-driver"]);
    // A venv without a framework: listed, nothing judged.
    let (_, out, _) = cudadiag(&root, &["doctor"], &["VIRTUAL_ENV=/venv"]);
    assert!(
        out.contains(
            "python    /venv/bin/python3 (Python 3.11, VIRTUAL_ENV): no framework installed (0 distributions)"
        ),
        "{out}"
    );
    let (_, doc) = cudadiag_json(&root, &["doctor", "--format", "json"], &["VIRTUAL_ENV=/venv"]);
    assert_eq!(doc["python"]["frameworks"], serde_json::json!([]));
    assert_eq!(slugs(&doc), ["no-driver"]);
}
