//! `inspect` of a file that belongs to a Python framework's distribution (issue 31): judged in the process the
//! framework's import builds, after what its Python code loads first, with a `loaded-by-framework` note. The
//! environments are the small synthetic ones of `python_import` (torch) and `python_cupy_ort` (ONNX Runtime),
//! built with their own builders.
//!
//! Before, `inspect` resolved the file's DT_NEEDED tree alone: on the H200, `torch/_C*.so` was warned about a
//! system CUDA library that the real process never maps, because torch preloads its wheels before `_C`.

use crate::python_cupy_ort::{Machine, cuda13, ort};
use crate::python_import::{bare, dist_info, driver_and_cache, interpreter_and_venv, torch, wheels};

use crate::support::cli;
use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;

const C: &str = "/venv/lib/python3.11/site-packages/torch/_C.cpython-311-x86_64-linux-gnu.so";
const WHEEL_LT: &str = "/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublasLt.so.13";

/// `cudadiag inspect --root ROOT --clear-env --gpu 9.0 --driver 580.65.06 --format json FILE` with `env`
/// (`KEY=VALUE`): the report, checked against the JSON contract.
fn inspect(root: &Path, env: &[&str], file: &str) -> Value {
    let args = [
        "inspect",
        "--gpu",
        "9.0",
        "--driver",
        "580.65.06",
        "--format",
        "json",
    ];
    let (_, doc) = cli::run_json(
        args.iter()
            .map(OsString::from)
            .chain(cli::on_root(root, env))
            .chain([OsString::from(file)]),
    );
    cli::contract(&doc);
    doc
}

/// The findings' slugs, sorted, each once, without `no-device-code` (the tiny libraries carry no kernels).
fn slugs(doc: &Value) -> Vec<String> {
    let mut s: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["slug"].as_str().unwrap_or_default().to_string())
        .filter(|s| s != "no-device-code")
        .collect();
    s.sort();
    s.dedup();
    s
}

fn finding<'d>(doc: &'d Value, slug: &str) -> Option<&'d Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["slug"] == slug)
}

/// The paths every request for `soname` got (`null` for a missing one).
fn paths_of(doc: &Value, soname: &str) -> Vec<String> {
    doc["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["soname"] == soname)
        .map(|l| l["path"].as_str().unwrap_or("null").to_string())
        .collect()
}

/// torch 2.15 with its wheels, and an older CUDA toolkit's `libcublasLt.so.13` in `LD_LIBRARY_PATH`
/// (`/usr/local/cuda/lib64`, as on a CUDA devel image). Alone, `_C`'s tree takes cuBLAS from the wheel (DT_RPATH)
/// and cuBLAS's `libcublasLt.so.13` from `LD_LIBRARY_PATH` (searched before cuBLAS's RUNPATH): a
/// `library-shadowed` warning. But torch preloads cuBLASLt from its wheel first (2.11 and later), so the process
/// maps only the wheel's. Returns the temporary directory and the root.
fn torch_with_an_older_toolkit_in_ld_library_path() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    torch(t.path(), &site, "2.15.0");
    wheels(t.path(), &site, &[]);
    bare(&root.join("usr/local/cuda/lib64"), "libcublasLt.so.13", &[], &[]);
    driver_and_cache(&root, &[]);
    (t, root)
}

const OLD_TOOLKIT: &str = "LD_LIBRARY_PATH=/usr/local/cuda/lib64";

/// Issue 31: the H200's `library-shadowed` on `torch/_C*.so` for a library torch preloads from its wheel.
#[test]
fn a_torch_extension_is_judged_with_the_wheels_torch_preloads() {
    let (_t, root) = torch_with_an_older_toolkit_in_ld_library_path();
    let doc = inspect(&root, &[OLD_TOOLKIT], C);
    assert_eq!(slugs(&doc), ["loaded-by-framework"], "{doc:#}");
    let lt = paths_of(&doc, "libcublasLt.so.13");
    assert!(!lt.is_empty() && lt.iter().all(|p| p == WHEEL_LT), "{lt:#?}");
    let note = finding(&doc, "loaded-by-framework").unwrap();
    assert_eq!(note["severity"], "note");
    let message = note["message"].as_str().unwrap();
    assert!(
        message.contains(
            "judged as `import torch` loads it (torch 2.15.0: every CUDA wheel preloaded from sys.path"
        ) && message.ends_with("): docs/python-frameworks.md"),
        "{message}"
    );
    let evidence = note["evidence"].to_string();
    assert!(evidence.contains(WHEEL_LT), "{evidence}");
    // The preloads are requests of the process, each with why it is there.
    let preloaded = doc["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == WHEEL_LT)
        .unwrap();
    assert_eq!(
        (&preloaded["preload"], &preloaded["how"]),
        (&Value::Bool(true), &Value::from("path"))
    );
    assert!(
        preloaded["reason"]
            .as_str()
            .unwrap()
            .starts_with("torch loads it by path before _C.cpython-311-x86_64-linux-gnu.so"),
        "{preloaded:#}"
    );

    // The near miss: torch 2.10 preloads cuBLAS before cuBLASLt, so cuBLAS's own request finds the
    // toolkit's copy first in the real process too, and the warning stays.
    let site = root.join("venv/lib/python3.11/site-packages");
    std::fs::remove_dir_all(site.join("torch-2.15.0.dist-info")).unwrap();
    dist_info(&site, "torch", "2.10.0", &[], &["torch/__init__.py".into()]);
    let doc = inspect(&root, &[OLD_TOOLKIT], C);
    assert!(slugs(&doc).contains(&"library-shadowed".to_string()), "{doc:#}");
    assert!(
        paths_of(&doc, "libcublasLt.so.13").contains(&"/usr/local/cuda/lib64/libcublasLt.so.13".to_string()),
        "{doc:#}"
    );
    let note = finding(&doc, "loaded-by-framework").unwrap();
    assert!(note["message"].as_str().unwrap().contains("(torch 2.10.0: "));
}

/// The same files outside any Python environment (a copy of the tree with no `*.dist-info`): judged alone, as
/// before, while the environment's own copy is judged as torch loads it.
#[test]
fn a_framework_file_outside_any_environment_is_judged_alone() {
    let (_t, root) = torch_with_an_older_toolkit_in_ld_library_path();
    let site = root.join("venv/lib/python3.11/site-packages");
    let copy = root.join("opt/build");
    std::fs::create_dir_all(&copy).unwrap();
    for dir in ["torch", "nvidia"] {
        let ok = std::process::Command::new("cp")
            .arg("-a")
            .arg(site.join(dir))
            .arg(&copy)
            .status()
            .unwrap();
        assert!(ok.success());
    }
    let alone = inspect(
        &root,
        &[OLD_TOOLKIT],
        "/opt/build/torch/_C.cpython-311-x86_64-linux-gnu.so",
    );
    assert_eq!(slugs(&alone), ["library-shadowed"], "{alone:#}");
    assert!(
        paths_of(&alone, "libcublasLt.so.13")
            .contains(&"/usr/local/cuda/lib64/libcublasLt.so.13".to_string())
    );
    let in_env = inspect(&root, &[OLD_TOOLKIT], C);
    assert_eq!(slugs(&in_env), ["loaded-by-framework"], "{in_env:#}");
}

/// ONNX Runtime's CUDA provider has no RPATH, and `import onnxruntime` loads only its provider bridge before
/// it: with the CUDA wheels installed, the provider still misses them (the session falls back to the CPU), and
/// the note says what ONNX Runtime itself needs: `onnxruntime.preload_dlls()` before the session.
#[test]
fn onnxruntimes_cuda_provider_is_judged_as_import_onnxruntime_loads_it() {
    let m = Machine::new(true);
    ort(&m);
    cuda13(&m, &[]);
    let provider = "/venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime_providers_cuda.so";
    let doc = inspect(&m.root, &[], provider);
    assert_eq!(
        slugs(&doc),
        ["library-not-found", "loaded-by-framework"],
        "{doc:#}"
    );
    let note = finding(&doc, "loaded-by-framework").unwrap();
    let message = note["message"].as_str().unwrap();
    assert!(
        message.contains("judged as `import onnxruntime` loads it (onnxruntime-gpu 1.31.1: ")
            && message.contains("1 library loaded before it"),
        "{message}"
    );
    assert!(
        note["evidence"]
            .to_string()
            .contains("onnxruntime/capi/libonnxruntime_providers_shared.so"),
        "{note:#}"
    );
    let help = note["help"].as_str().unwrap();
    assert!(
        help.starts_with("Call `onnxruntime.preload_dlls()` before creating the InferenceSession"),
        "{help}"
    );
    assert_eq!(paths_of(&doc, "libcublasLt.so.13"), ["null"]);
}
