//! Who installed a library, by pip's and conda's own records, wherever the files are (issue 29, items 4 and
//! 5): the version of a pip-installed NVIDIA library is its distribution's, compared with a framework's pin
//! (`cuda-library-too-old`), and a missing library's copies are found in the pip and conda layouts beside the
//! object that asks for it, whose fix then reaches the installed package instead of installing it again.
//!
//! Each root is built here: tiny libraries made with `cc` (no libc, nothing else to miss), `*.dist-info`
//! directories with the `RECORD` and `METADATA` lines pip writes, a `conda-meta` record.

use crate::support::loader_build as build;

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// A library with SONAME `soname` and no dependency (not even libc): the roots hold no libc.
fn bare_lib(dir: &Path, soname: &str, deps: &[&Path], flags: &[&str]) -> PathBuf {
    let mut all = vec!["-nostdlib"];
    all.extend_from_slice(flags);
    build::lib(dir, soname, "f", deps, &all)
}

/// Stub libraries with these SONAMEs in `dir`, to link against (and remove after).
fn stubs(dir: &Path, sonames: &[&str]) -> Vec<PathBuf> {
    sonames.iter().map(|s| bare_lib(dir, s, &[], &[])).collect()
}

/// A `.dist-info` in `dir` for `name`-`version`: its METADATA (with `requires` lines) and a RECORD listing
/// `files` (paths relative to `dir`), as pip writes them.
fn dist_info(dir: &Path, name: &str, version: &str, requires: &[&str], files: &[&str]) {
    let info = dir.join(format!("{}-{version}.dist-info", name.replace('-', "_")));
    std::fs::create_dir_all(&info).unwrap();
    let mut metadata = format!("Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n");
    for r in requires {
        metadata.push_str(&format!("Requires-Dist: {r}\n"));
    }
    metadata.push_str("\nThe description.\n");
    std::fs::write(info.join("METADATA"), metadata).unwrap();
    let mut record: String = files.iter().map(|f| format!("{f},sha256=AAAA,1\n")).collect();
    record.push_str(&format!(
        "{}-{version}.dist-info/RECORD,,\n",
        name.replace('-', "_")
    ));
    std::fs::write(info.join("RECORD"), record).unwrap();
    std::fs::write(info.join("INSTALLER"), "pip\n").unwrap();
}

/// torch 2.15.0's cuDNN pin (its METADATA, read from the PyPI wheel torch-2.15.0-cp312-cp312-
/// manylinux_2_28_x86_64.whl).
const TORCH_CUDNN: &str = "nvidia-cudnn-cu13==9.26.0.51; platform_system == \"Linux\"";

/// torch's layout in `dir` (a site-packages, or a `pip install --target` directory): libtorch_cuda.so with
/// torch's RPATH to `nvidia/cudnn/lib`, the cuDNN wheel's libcudnn.so.9 there, and both dist-infos, the
/// cuDNN one at `cudnn`. Returns libtorch_cuda.so.
fn torch_with_pip_cudnn(t: &Path, dir: &Path, cudnn: &str) -> PathBuf {
    let scratch = t.join("scratch");
    let deps = stubs(&scratch, &["libcudnn.so.9"]);
    let torch = bare_lib(
        &dir.join("torch/lib"),
        "libtorch_cuda.so",
        &[&deps[0]],
        &[
            "-Wl,--disable-new-dtags",
            "-Wl,-rpath,$ORIGIN/../../nvidia/cudnn/lib",
        ],
    );
    std::fs::remove_dir_all(&scratch).unwrap();
    bare_lib(&dir.join("nvidia/cudnn/lib"), "libcudnn.so.9", &[], &[]);
    dist_info(
        dir,
        "torch",
        "2.15.0",
        &["filelock", TORCH_CUDNN],
        &["torch/__init__.py", "torch/lib/libtorch_cuda.so"],
    );
    dist_info(
        dir,
        "nvidia-cudnn-cu13",
        cudnn,
        &[],
        &["nvidia/cudnn/lib/libcudnn.so.9"],
    );
    torch
}

/// `cudadiag --color never inspect --root ROOT --clear-env --format json [extra] PATH`: exit code and JSON.
fn inspect_json(root: &Path, path: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args([
            "--color",
            "never",
            "inspect",
            "--clear-env",
            "--format",
            "json",
            "--root",
        ])
        .arg(root)
        .args(extra)
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let doc = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (out.status.code(), doc)
}

fn with_slug<'d>(doc: &'d serde_json::Value, slug: &str) -> Vec<&'d serde_json::Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["slug"] == slug)
        .collect()
}

/// Issue 29 item 4: `nvidia-cudnn-cu13` 9.14.0.64 installed under torch 2.15's pin `==9.26.0.51`. The wheel's
/// file is `libcudnn.so.9`, which names only the major, so the version is the distribution's (its RECORD lists
/// the file). torch refuses a cuDNN minor older than its own where its Python check runs (cudnn.version(),
/// cuDNN RNNs), while convolutions run: a warning naming both (observed on an H200).
#[test]
fn a_pip_cudnn_older_than_torchs_pin_is_cuda_library_too_old() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = root.join("venv/lib/python3.12/site-packages");
    let torch = torch_with_pip_cudnn(t.path(), &site, "9.14.0.64");
    let (code, doc) = inspect_json(&root, &torch, &[]);
    let f = with_slug(&doc, "cuda-library-too-old");
    assert_eq!(f.len(), 1, "{:#}", doc["findings"]);
    assert_eq!(code, Some(0));
    assert_eq!(f[0]["severity"], "warning");
    let message = f[0]["message"].as_str().unwrap();
    for needle in [
        "libtorch_cuda.so's package torch 2.15.0 requires nvidia-cudnn-cu13==9.26.0.51",
        "the loaded libcudnn.so.9 is nvidia-cudnn-cu13 9.14.0.64 (installed by pip",
        "found through rpath",
        "torch raises \"cuDNN version incompatibility\" when torch.backends.cudnn.version() or is_acceptable() runs",
        "(cuDNN 9.14 is older than the 9.26 it was compiled with)",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    let evidence = f[0]["evidence"].to_string();
    assert!(
        evidence.contains("version 9.14.0.64 of nvidia-cudnn-cu13, whose RECORD lists")
            && evidence.contains("nvidia_cudnn_cu13-9.14.0.64.dist-info/METADATA: Version"),
        "{evidence}"
    );
    let help = f[0]["help"].as_str().unwrap();
    assert!(
        help.contains("pip install 'nvidia-cudnn-cu13==9.26.0.51'")
            && help.contains("replacing nvidia-cudnn-cu13 9.14.0.64"),
        "{help}"
    );
}

/// Near misses and the lesser case: the pinned release, a later minor (torch accepts it), and an older build
/// of the same minor (the pin is not met, but torch's check compares major and minor: a warning).
#[test]
fn a_pip_cudnn_that_meets_torchs_check_is_not_an_error() {
    for (cudnn, expected) in [
        ("9.26.0.51", None),
        ("9.27.0.3", None),
        ("9.26.0.10", Some("warning")),
    ] {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let site = root.join("venv/lib/python3.12/site-packages");
        let torch = torch_with_pip_cudnn(t.path(), &site, cudnn);
        let (code, doc) = inspect_json(&root, &torch, &[]);
        let f = with_slug(&doc, "cuda-library-too-old");
        assert_eq!(
            f.first().map(|f| f["severity"].as_str().unwrap()),
            expected,
            "{cudnn}: {:#}",
            doc["findings"]
        );
        assert_eq!(code, Some(0), "{cudnn}: {:#}", doc["findings"]);
        if expected.is_some() {
            let message = f[0]["message"].as_str().unwrap();
            assert!(
                message.contains("torch's own cuDNN check compares major and minor only"),
                "{message}"
            );
        }
    }
}

/// `pip install --target DIR`: no `site-packages` anywhere in the path, and the RECORDs still say who
/// installed what. On the old build the requester was not "installed by pip" at all here.
#[test]
fn pip_install_target_is_pips_too() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let target = root.join("app/deps");
    let torch = torch_with_pip_cudnn(t.path(), &target, "9.14.0.64");
    let (code, doc) = inspect_json(&root, &torch, &["--env", "PYTHONPATH=/app/deps"]);
    let f = with_slug(&doc, "cuda-library-too-old");
    assert_eq!(f.len(), 1, "{:#}", doc["findings"]);
    assert_eq!(code, Some(0));
    let message = f[0]["message"].as_str().unwrap();
    assert!(
        message.contains("requires nvidia-cudnn-cu13==9.26.0.51")
            && message.contains(
                "nvidia-cudnn-cu13 9.14.0.64 (installed by pip: /app/deps/nvidia/cudnn/lib/libcudnn.so.9"
            ),
        "{message}"
    );
    let help = f[0]["help"].as_str().unwrap();
    assert!(
        help.contains("pip install --upgrade --target /app/deps 'nvidia-cudnn-cu13==9.26.0.51'"),
        "{help}"
    );
}

/// onnxruntime-gpu's layout (1.31: its CUDA provider has no RPATH or RUNPATH; its CUDA libraries are the
/// NVIDIA wheels' in the same site-packages' `nvidia/cu13/lib`), in a venv outside `/usr` and `/opt`.
/// Returns the root and the provider.
fn onnxruntime_venv(t: &Path) -> (PathBuf, PathBuf) {
    let root = t.join("root");
    let site = root.join("home/u/ort/lib/python3.12/site-packages");
    let scratch = t.join("scratch");
    let deps = stubs(&scratch, &["libcublasLt.so.13", "libcublas.so.13"]);
    let refs: Vec<&Path> = deps.iter().map(PathBuf::as_path).collect();
    let provider = bare_lib(
        &site.join("onnxruntime/capi"),
        "libonnxruntime_providers_cuda.so",
        &refs,
        &[],
    );
    std::fs::remove_dir_all(&scratch).unwrap();
    dist_info(
        &site,
        "onnxruntime-gpu",
        "1.31.1",
        &["nvidia-cuda-runtime~=13.0; extra == \"cuda\""],
        &["onnxruntime/capi/libonnxruntime_providers_cuda.so"],
    );
    (root, provider)
}

/// Issue 29 item 5: every missing library sat in the same venv's `nvidia/cu13/lib`, and the report said "no
/// copy of any of them on disk" and "install" them. The copies are found, named with the package that
/// installed them, and the fix reaches that directory (or onnxruntime's own preload).
#[test]
fn copies_in_the_requesters_own_site_packages_are_found_and_not_reinstalled() {
    let t = tempfile::tempdir().unwrap();
    let (root, provider) = onnxruntime_venv(t.path());
    let site = root.join("home/u/ort/lib/python3.12/site-packages");
    let lib = site.join("nvidia/cu13/lib");
    bare_lib(&lib, "libcublasLt.so.13", &[], &[]);
    bare_lib(&lib, "libcublas.so.13", &[], &[]);
    dist_info(
        &site,
        "nvidia-cublas",
        "13.10.0.20",
        &[],
        &[
            "nvidia/cu13/lib/libcublas.so.13",
            "nvidia/cu13/lib/libcublasLt.so.13",
        ],
    );
    let (code, doc) = inspect_json(&root, &provider, &[]);
    assert_eq!(code, Some(1));
    let nf = with_slug(&doc, "library-not-found");
    assert_eq!(nf.len(), 1, "{:#}", doc["findings"]);
    let dir = "/home/u/ort/lib/python3.12/site-packages/nvidia/cu13/lib";
    let text = nf[0].to_string();
    assert!(!text.contains("no copy"), "{text}");
    let evidence = nf[0]["evidence"].to_string();
    assert!(
        evidence.contains(&format!(
            "on disk: {dir}/libcublasLt.so.13 (version 13; installed by pip: nvidia-cublas 13.10.0.20)"
        )),
        "{evidence}"
    );
    let help = nf[0]["help"].as_str().unwrap();
    for needle in [
        "They are installed (nvidia-cublas 13.10.0.20",
        "installing them again does not help",
        &format!("LD_LIBRARY_PATH={dir}$"),
        "onnxruntime.preload_dlls()",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
    assert!(
        !help.contains("pip install") && !help.contains("ld.so.conf"),
        "{help}"
    );
}

/// Near miss: the wheel is not installed: nothing on disk, and the fix installs what onnxruntime-gpu needs.
#[test]
fn without_the_wheels_the_fix_still_installs_them() {
    let t = tempfile::tempdir().unwrap();
    let (root, provider) = onnxruntime_venv(t.path());
    let (code, doc) = inspect_json(&root, &provider, &[]);
    assert_eq!(code, Some(1));
    let nf = with_slug(&doc, "library-not-found");
    assert_eq!(nf.len(), 1, "{:#}", doc["findings"]);
    assert!(
        nf[0]["evidence"]
            .to_string()
            .contains("no copy of any of them on disk"),
        "{:#}",
        nf[0]
    );
    assert!(
        nf[0]["help"].as_str().unwrap().contains("pip install"),
        "{:#}",
        nf[0]
    );
}

/// A conda environment's `lib` holds the library, its `conda-meta` record lists it, and a package's object
/// in the environment's site-packages has no RPATH to it (conda-forge's own packages do; a pip wheel does
/// not). The environment is outside every place the old walk looked (`/usr/local`, `/opt`).
#[test]
fn a_copy_in_a_conda_prefix_is_named_with_its_package() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let prefix = root.join("work/envs/ml");
    let scratch = t.path().join("scratch");
    let deps = stubs(&scratch, &["libcublas.so.13"]);
    let ext = bare_lib(
        &prefix.join("lib/python3.12/site-packages/ext"),
        "libext.so",
        &[&deps[0]],
        &[],
    );
    std::fs::remove_dir_all(&scratch).unwrap();
    bare_lib(&prefix.join("lib"), "libcublas.so.13", &[], &[]);
    std::fs::create_dir_all(prefix.join("conda-meta")).unwrap();
    std::fs::write(
        prefix.join("conda-meta/libcublas-13.1.0.3-0.json"),
        r#"{"name": "libcublas", "version": "13.1.0.3", "files": ["lib/libcublas.so.13"]}"#,
    )
    .unwrap();
    let (code, doc) = inspect_json(&root, &ext, &[]);
    assert_eq!(code, Some(1));
    let nf = with_slug(&doc, "library-not-found");
    assert_eq!(nf.len(), 1, "{:#}", doc["findings"]);
    let text = nf[0].to_string();
    assert!(
        text.contains(
            "/work/envs/ml/lib/libcublas.so.13 (version 13; installed by conda: libcublas 13.1.0.3)"
        ),
        "{text}"
    );
    let help = nf[0]["help"].as_str().unwrap();
    assert!(help.contains("LD_LIBRARY_PATH=/work/envs/ml/lib$"), "{help}");
    assert!(!help.contains("conda install"), "{help}");
}
