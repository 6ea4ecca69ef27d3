//! The distributions of the Python environment an inspected object lives in, whose versions must go
//! together (issue 34): `jax-plugin-version-mismatch` from jax's, jaxlib's and the CUDA plugin's `Requires-Dist`
//! pins, `framework-extension-abi-mismatch` from an extension's exact pin of torch, and
//! `cpu-only-framework-build` from torch's `+cpu` label on a GPU machine. Each root is built
//! here: a tiny library made with `cc` (no libc) inside a `site-packages`, and the `*.dist-info/METADATA`
//! lines pip writes beside it.

use crate::support::loader_build as build;

use assert_cmd::Command;
use std::path::{Path, PathBuf};

const SITE: &str = "venv/lib/python3.12/site-packages";

/// A `.dist-info` for `name`-`version` in `site` with these `Requires-Dist` lines.
fn dist_info(site: &Path, name: &str, version: &str, requires: &[&str]) {
    let info = site.join(format!("{}-{version}.dist-info", name.replace('-', "_")));
    std::fs::create_dir_all(&info).unwrap();
    let mut metadata = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
    for r in requires {
        metadata.push_str(&format!("Requires-Dist: {r}\n"));
    }
    metadata.push_str("\nThe description.\n");
    std::fs::write(info.join("METADATA"), metadata).unwrap();
    std::fs::write(info.join("INSTALLER"), "pip\n").unwrap();
}

/// A root whose site-packages holds `module` (a tiny ELF, relative to the site) and these distributions
/// (name, version, Requires-Dist lines). Returns the root and the module's path.
fn root_with(t: &Path, module: &str, dists: &[(&str, &str, &[&str])]) -> (PathBuf, PathBuf) {
    let root = t.join("root");
    let site = root.join(SITE);
    let path = site.join(module);
    let dir = path.parent().unwrap();
    let name = path.file_name().unwrap().to_str().unwrap();
    let lib = build::lib(dir, name, "f", &[], &["-nostdlib"]);
    assert_eq!(lib, path);
    for (name, version, requires) in dists {
        dist_info(&site, name, version, requires);
    }
    (root, path)
}

/// `cudadiag inspect --root ROOT --clear-env --format json PATH`: the findings.
fn findings(root: &Path, path: &Path) -> Vec<serde_json::Value> {
    findings_with(root, path, &[])
}

/// [`findings`], with more arguments (`--gpu 9.0 --driver …`).
fn findings_with(root: &Path, path: &Path, more: &[&str]) -> Vec<serde_json::Value> {
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
        .args(more)
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    doc["findings"].as_array().cloned().unwrap_or_default()
}

fn with_slug<'f>(findings: &'f [serde_json::Value], slug: &str) -> Vec<&'f serde_json::Value> {
    findings.iter().filter(|f| f["slug"] == slug).collect()
}

/// jax 0.4.35's pins, as its METADATA writes them: jaxlib by range, and under the `cuda12` extra jaxlib and the
/// plugin.
const JAX: &[&str] = &[
    "jaxlib<=0.4.35,>=0.4.34",
    "jaxlib==0.4.35; extra == \"cuda12\"",
    "jax-cuda12-plugin[with_cuda]<=0.4.35,>=0.4.35; extra == \"cuda12\"",
];
const PLUGIN: &[&str] = &["jax-cuda12-pjrt==0.4.35"];

/// `pip install -U jax` after `jax[cuda12]==0.4.30`: jax moved to 0.4.35, jaxlib and the PJRT plugin stayed.
#[test]
fn jax_upgraded_alone_is_jax_plugin_version_mismatch() {
    let t = tempfile::tempdir().unwrap();
    let (root, path) = root_with(
        t.path(),
        "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
        &[
            ("jax", "0.4.35", JAX),
            ("jaxlib", "0.4.30", &[]),
            ("jax-cuda12-plugin", "0.4.35", PLUGIN),
            ("jax-cuda12-pjrt", "0.4.30", &[]),
        ],
    );
    let all = findings(&root, &path);
    let f = with_slug(&all, "jax-plugin-version-mismatch");
    assert_eq!(f.len(), 1, "{all:#?}");
    assert_eq!(f[0]["severity"], "error");
    let message = f[0]["message"].as_str().unwrap();
    for needle in [
        "jax 0.4.35 requires jaxlib<=0.4.35,>=0.4.34 but jaxlib 0.4.30 is installed",
        "jax-cuda12-plugin 0.4.35 requires jax-cuda12-pjrt==0.4.35 but jax-cuda12-pjrt 0.4.30 is installed",
        "silently runs on the CPU",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    let evidence = f[0]["evidence"].to_string();
    assert!(
        evidence.contains("jax-0.4.35.dist-info/METADATA:4: Requires-Dist: jaxlib<=0.4.35,>=0.4.34"),
        "{evidence}"
    );
    assert!(f[0]["help"].as_str().unwrap().contains("jax[cuda12]==0.4.35"));
}

/// The near miss: the same environment installed by `pip install "jax[cuda12]==0.4.35"`, every pin met; and a
/// jaxlib within jax's range but a plugin of another major not installed at all.
#[test]
fn jax_of_one_release_is_no_mismatch() {
    let t = tempfile::tempdir().unwrap();
    let (root, path) = root_with(
        &t.path().join("together"),
        "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
        &[
            ("jax", "0.4.35", JAX),
            ("jaxlib", "0.4.35", &[]),
            ("jax-cuda12-plugin", "0.4.35", PLUGIN),
            ("jax-cuda12-pjrt", "0.4.35", &[]),
        ],
    );
    let all = findings(&root, &path);
    assert!(
        with_slug(&all, "jax-plugin-version-mismatch").is_empty(),
        "{all:#?}"
    );
    let (root, path) = root_with(
        &t.path().join("cpu"),
        "jaxlib/xla_extension.so",
        &[("jax", "0.4.35", JAX), ("jaxlib", "0.4.34", &[])],
    );
    let all = findings(&root, &path);
    assert!(
        with_slug(&all, "jax-plugin-version-mismatch").is_empty(),
        "{all:#?}"
    );
}

/// torchvision 0.20.1's pin of the torch it was built against (its METADATA), then `pip install -U torch`.
const TORCHVISION: &[&str] = &["numpy", "torch==2.5.1", "pillow!=8.3.*,>=5.3.0"];

/// Issue 34: torch upgraded alone under torchvision; its `_C.so` refers to torch 2.5.1's C++ symbols.
#[test]
fn torch_upgraded_under_torchvision_is_framework_extension_abi_mismatch() {
    let t = tempfile::tempdir().unwrap();
    let (root, path) = root_with(
        t.path(),
        "torchvision/_C.so",
        &[
            ("torch", "2.6.0+cu124", &[]),
            ("torchvision", "0.20.1", TORCHVISION),
        ],
    );
    let all = findings(&root, &path);
    let f = with_slug(&all, "framework-extension-abi-mismatch");
    assert_eq!(f.len(), 1, "{all:#?}");
    assert_eq!(f[0]["severity"], "error");
    let message = f[0]["message"].as_str().unwrap();
    for needle in [
        "torchvision 0.20.1 was built against torch 2.5.1 (it requires torch==2.5.1) but torch 2.6.0+cu124 is installed",
        "undefined symbol: _ZN",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    let evidence = f[0]["evidence"].to_string();
    assert!(
        evidence.contains("torchvision-0.20.1.dist-info/METADATA:5: Requires-Dist: torch==2.5.1"),
        "{evidence}"
    );
}

/// The near miss: the pinned release with its local label (`2.5.1+cu124` is 2.5.1), and an extension that
/// states no torch release (a range or no pin) under another torch.
#[test]
fn the_pinned_torch_or_no_exact_pin_is_no_abi_mismatch() {
    let t = tempfile::tempdir().unwrap();
    let (root, path) = root_with(
        &t.path().join("pinned"),
        "torchvision/_C.so",
        &[
            ("torch", "2.5.1+cu124", &[]),
            ("torchvision", "0.20.1", TORCHVISION),
        ],
    );
    let all = findings(&root, &path);
    assert!(
        with_slug(&all, "framework-extension-abi-mismatch").is_empty(),
        "{all:#?}"
    );
    let (root, path) = root_with(
        &t.path().join("range"),
        "flash_attn_2_cuda.so",
        &[
            ("torch", "2.6.0", &[]),
            ("flash-attn", "2.7.0", &["torch", "einops"]),
            ("xformers", "0.0.29", &["torch>=2.4"]),
        ],
    );
    let all = findings(&root, &path);
    assert!(
        with_slug(&all, "framework-extension-abi-mismatch").is_empty(),
        "{all:#?}"
    );
}

/// A GPU machine declared on the command line: an H100 (9.0) and a driver that runs every CUDA 12 and 13 build.
const GPU: &[&str] = &["--gpu", "9.0", "--driver", "580.159.04"];

/// Issue 34: torch's CPU wheel (`pip install torch --index-url …/whl/cpu`) on a machine with a GPU.
#[test]
fn torch_cpu_wheel_on_a_gpu_machine_is_cpu_only_framework_build() {
    let t = tempfile::tempdir().unwrap();
    let (root, path) = root_with(
        t.path(),
        "torch/lib/libtorch_cpu.so",
        &[("torch", "2.5.1+cpu", &[])],
    );
    let all = findings_with(&root, &path, GPU);
    let f = with_slug(&all, "cpu-only-framework-build");
    assert_eq!(f.len(), 1, "{all:#?}");
    assert_eq!(f[0]["code"], "CD209");
    assert_eq!(f[0]["severity"], "error");
    let message = f[0]["message"].as_str().unwrap();
    for needle in ["torch 2.5.1+cpu is a build without CUDA", "the GPU is not used"] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    let evidence = f[0]["evidence"].to_string();
    assert!(
        evidence.contains("torch-2.5.1+cpu.dist-info/METADATA: Name: torch, Version: 2.5.1+cpu"),
        "{evidence}"
    );
    let help = f[0]["help"].as_str().unwrap();
    assert!(
        help.contains("--index-url https://download.pytorch.org/whl/cu126"),
        "{help}"
    );
}

/// The near misses: the same `+cpu` torch with no GPU known (a CPU machine may want it), and torch's CUDA build
/// (`+cu124`) on the GPU machine.
#[test]
fn torch_cpu_without_a_gpu_or_a_cuda_build_is_no_cpu_only_finding() {
    let t = tempfile::tempdir().unwrap();
    let (root, path) = root_with(
        &t.path().join("cpu"),
        "torch/lib/libtorch_cpu.so",
        &[("torch", "2.5.1+cpu", &[])],
    );
    let all = findings(&root, &path);
    assert!(with_slug(&all, "cpu-only-framework-build").is_empty(), "{all:#?}");
    let (root, path) = root_with(
        &t.path().join("cuda"),
        "torch/lib/libtorch_cuda.so",
        &[("torch", "2.5.1+cu124", &[])],
    );
    let all = findings_with(&root, &path, GPU);
    assert!(with_slug(&all, "cpu-only-framework-build").is_empty(), "{all:#?}");
}

/// Seen on an H200 (torch 2.11 venv with the CPU `onnxruntime` beside it): every file of `torch/lib` was
/// "will fail" for ONNX Runtime's CPU build, although the process that loads them imports torch alone.
#[test]
fn onnxruntime_cpu_build_beside_torch_does_not_fail_torchs_files() {
    let t = tempfile::tempdir().unwrap();
    let (root, path) = root_with(
        t.path(),
        "torch/lib/libtorch_cuda.so",
        &[("torch", "2.11.0", &[]), ("onnxruntime", "1.30.0", &[])],
    );
    let all = findings_with(&root, &path, GPU);
    assert!(with_slug(&all, "cpu-only-framework-build").is_empty(), "{all:#?}");
}
