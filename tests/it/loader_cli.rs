//! `cudadiag inspect` end to end for the loader: the JSON `libraries` honour the contract
//! (`shared/contract/check_report.py`), and the human tree shows tags, the numbered trail and a fix.

use crate::support::loader_build as build;

use assert_cmd::Command;
use std::path::Path;

use crate::support::cli::slugs as slugs_of;
use crate::support::golden;

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
    if let Some(checker) = crate::support::skip::contract_checker() {
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
    if let Some(checker) = crate::support::skip::contract_checker() {
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

/// A library with SONAME `soname` and no dependency, not even libc (`-nostdlib`): the roots below hold no
/// libc, and nothing else should be missing.
fn bare_lib(dir: &Path, soname: &str, deps: &[&Path], flags: &[&str]) -> std::path::PathBuf {
    let mut all = vec!["-nostdlib"];
    all.extend_from_slice(flags);
    build::lib(dir, soname, "f", deps, &all)
}

/// Stub libraries with these SONAMEs in `dir`, to link against (and remove after).
fn stubs(dir: &Path, sonames: &[&str]) -> Vec<std::path::PathBuf> {
    sonames.iter().map(|s| bare_lib(dir, s, &[], &[])).collect()
}

/// torch 2.11.0's `Requires-Dist` lines (its METADATA, read from the PyPI wheel torch-2.11.0-cp311-cp311-
/// manylinux_2_28_x86_64.whl), the CUDA part, and the RPATH of its libraries (libc10_cuda.so of that wheel).
const TORCH_REQUIRES: &str = "Metadata-Version: 2.4\nName: torch\nVersion: 2.11.0\n\
Requires-Dist: filelock\n\
Requires-Dist: typing-extensions>=4.10.0\n\
Requires-Dist: cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2; platform_system == \"Linux\"\n\
Requires-Dist: cuda-bindings<14,>=13.0.3; platform_system == \"Linux\"\n\
Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n\
Requires-Dist: nvidia-cusparselt-cu13==0.8.0; platform_system == \"Linux\"\n\
Requires-Dist: nvidia-nccl-cu13==2.28.9; platform_system == \"Linux\"\n\
Requires-Dist: nvidia-nvshmem-cu13==3.4.5; platform_system == \"Linux\"\n\
Requires-Dist: triton==3.6.0; platform_system == \"Linux\"\n\
Requires-Dist: optree>=0.13.0; extra == \"optree\"\n\n\
The description.\n";
const TORCH_RPATH: &str = "-Wl,-rpath,$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/nvshmem/lib:\
$ORIGIN/../../nvidia/nccl/lib:$ORIGIN/../../nvidia/cusparselt/lib:$ORIGIN/../../nvidia/cu13/lib:$ORIGIN";
const TORCH_CUDA: [&str; 12] = [
    "libcudart.so.13",
    "libcublas.so.13",
    "libcublasLt.so.13",
    "libcudnn.so.9",
    "libnccl.so.2",
    "libcusparse.so.12",
    "libcufft.so.12",
    "libcurand.so.10",
    "libcusparseLt.so.0",
    "libnvshmem_host.so.3",
    "libcupti.so.13",
    "libnvrtc.so.13",
];

/// A root with a venv holding torch 2.11.0 (its libtorch_cuda.so and libc10_cuda.so, their RPATH, its
/// dist-info) and none of the NVIDIA wheels it requires; with `wheels`, the wheels are installed in their real
/// layout (`nvidia/cu13/lib`, `nvidia/cudnn/lib`, …). Returns the root and libtorch_cuda.so.
fn torch_venv(t: &Path, wheels: bool) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = t.join("root");
    let site = root.join("venv/lib/python3.12/site-packages");
    let scratch = t.join("scratch");
    let deps = stubs(&scratch, &TORCH_CUDA);
    let lib = site.join("torch/lib");
    let flags = ["-Wl,--disable-new-dtags", TORCH_RPATH];
    let c10 = bare_lib(&lib, "libc10_cuda.so", &[&deps[0]], &flags);
    let mut all: Vec<&Path> = vec![&c10];
    all.extend(deps.iter().map(|d| d.as_path()));
    let torch = bare_lib(&lib, "libtorch_cuda.so", &all, &flags);
    std::fs::remove_dir_all(&scratch).unwrap();
    let info = site.join("torch-2.11.0.dist-info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("METADATA"), TORCH_REQUIRES).unwrap();
    std::fs::write(
        info.join("RECORD"),
        "torch/__init__.py,sha256=x,1\ntorch/lib/libtorch_cuda.so,sha256=x,1\ntorch/lib/libc10_cuda.so,sha256=x,1\n",
    )
    .unwrap();
    if wheels {
        for so in TORCH_CUDA {
            let dir = match so {
                "libcudnn.so.9" => "cudnn",
                "libnccl.so.2" => "nccl",
                "libcusparseLt.so.0" => "cusparselt",
                "libnvshmem_host.so.3" => "nvshmem",
                _ => "cu13",
            };
            bare_lib(&site.join("nvidia").join(dir).join("lib"), so, &[], &[]);
        }
    }
    (root, torch)
}

/// Runs `cudadiag --color never inspect --root ROOT --clear-env [extra] PATH`: exit code and stdout.
fn inspect_in(root: &Path, path: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["--color", "never", "inspect", "--clear-env", "--root"])
        .arg(root)
        .args(extra)
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn not_found(doc: &serde_json::Value) -> Vec<&serde_json::Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["slug"] == "library-not-found")
        .collect()
}

/// Issue 20's case: torch installed without the CUDA wheels it requires is one finding, whose fix is torch's
/// own pins; the JSON keeps every request and its trail.
#[test]
fn torch_without_its_cuda_wheels_is_one_finding_naming_its_pins() {
    let t = tempfile::tempdir().unwrap();
    let (root, torch) = torch_venv(t.path(), false);
    let (code, text) = inspect_in(&root, &torch, &["--format", "json"]);
    assert_eq!(code, Some(1));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let nf = not_found(&doc);
    assert_eq!(nf.len(), 1, "{nf:#?}");
    let f = nf[0];
    assert_eq!(f["sonames"].as_array().unwrap().len(), 12, "{f}");
    // libcudart.so.13 is needed by libtorch_cuda.so and libc10_cuda.so: 13 requests.
    assert_eq!(f["requests"], 13, "{f}");
    let help = f["help"].as_str().unwrap();
    assert!(help.contains("'nvidia-cudnn-cu13==9.19.0.56'"), "{help}");
    assert!(help.contains("'cuda-toolkit[cublas,cudart,"), "{help}");
    assert!(
        help.contains("pip install --force-reinstall torch==2.11.0"),
        "{help}"
    );
    assert!(
        !help.contains("cuda-bindings") && !help.contains("triton"),
        "{help}"
    );
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains("torch-2.11.0.dist-info/METADATA:8: Requires-Dist: nvidia-cudnn-cu13"),
        "{evidence}"
    );
    assert!(evidence.contains("nvidia/cu13/lib"), "{evidence}");
    // Every request, with its trail, is still in `libraries`.
    let libs = doc["libraries"].as_array().unwrap();
    let missing: Vec<&serde_json::Value> = libs.iter().filter(|l| l["how"] == "not_found").collect();
    assert_eq!(missing.len(), 13);
    assert!(missing.iter().all(|l| !l["trail"].as_array().unwrap().is_empty()));
    // The human report: measured in the issue at 184 lines before.
    let (code, human) = inspect_in(&root, &torch, &[]);
    assert_eq!(code, Some(1));
    assert!(human.contains("nvidia-cudnn-cu13"), "{human}");
    assert!(
        human.lines().count() <= 40,
        "{} lines:\n{human}",
        human.lines().count()
    );
    let (_, verbose) = inspect_in(&root, &torch, &["-v"]);
    for so in TORCH_CUDA {
        assert!(verbose.contains(&format!("{so} not found")), "{so}:\n{verbose}");
    }
    // A CUDA toolkit off the search path does not change the answer: torch pins its own wheels; the copy is
    // named in the evidence.
    bare_lib(
        &root.join("usr/local/cuda-13.0/targets/x86_64-linux/lib"),
        "libcudart.so.13",
        &[],
        &[],
    );
    let (_, text) = inspect_in(&root, &torch, &["--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let nf = not_found(&doc);
    assert_eq!(nf.len(), 1, "{nf:#?}");
    assert!(
        nf[0]["help"]
            .as_str()
            .unwrap()
            .contains("'nvidia-cudnn-cu13==9.19.0.56'")
    );
    assert!(
        nf[0]["evidence"]
            .to_string()
            .contains("libcudart.so.13: a copy is on disk, off the search path: /usr/local/cuda-13.0/"),
        "{}",
        nf[0]["evidence"]
    );
}

/// Near miss: the same venv with the wheels in their real layout loads everything.
#[test]
fn torch_with_its_cuda_wheels_has_no_missing_library() {
    let t = tempfile::tempdir().unwrap();
    let (root, torch) = torch_venv(t.path(), true);
    let (code, text) = inspect_in(&root, &torch, &["--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(not_found(&doc).is_empty(), "{doc:#}");
    assert_eq!(code, Some(0), "{text}");
}

/// A root with a CUDA 13 toolkit under /usr/local/cuda-13.0 (no ld.so.conf line for it), a dpkg database, and
/// `app/lib.so` linked against `sonames`.
fn toolkit_root(t: &Path, sonames: &[&str], conf: bool) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = t.join("root");
    let lib = root.join("usr/local/cuda-13.0/targets/x86_64-linux/lib");
    stubs(&lib, &["libcudart.so.13", "libcublas.so.13"]);
    std::fs::create_dir_all(root.join("var/lib/dpkg")).unwrap();
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    if conf {
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::write(
            root.join("etc/ld.so.conf"),
            "/usr/local/cuda-13.0/targets/x86_64-linux/lib\n",
        )
        .unwrap();
    }
    let scratch = t.join("scratch");
    let deps = stubs(&scratch, sonames);
    let refs: Vec<&Path> = deps.iter().map(|d| d.as_path()).collect();
    let app = bare_lib(&root.join("app"), "libapp.so", &refs, &[]);
    std::fs::remove_dir_all(&scratch).unwrap();
    (root, app)
}

#[test]
fn cuda_12_libraries_on_a_cuda_13_machine_name_cuda_12_packages() {
    let t = tempfile::tempdir().unwrap();
    let (root, app) = toolkit_root(t.path(), &["libcudart.so.12", "libcublas.so.12"], false);
    let (code, text) = inspect_in(&root, &app, &["--format", "json"]);
    assert_eq!(code, Some(1));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let nf = not_found(&doc);
    assert_eq!(nf.len(), 1, "{nf:#?}");
    let help = nf[0]["help"].as_str().unwrap();
    // The root has dpkg: apt names, CUDA 12's.
    assert!(
        help.contains("sudo apt-get install cuda-cudart-12-N libcublas-12-N"),
        "{help}"
    );
    let msg = nf[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("2 CUDA 12 libraries (libcudart.so.12, libcublas.so.12)"),
        "{msg}"
    );
    // The CUDA 13 copies are named as other versions, not offered as the answer.
    let evidence = nf[0]["evidence"].to_string();
    assert!(
        evidence.contains("only other versions on disk: /usr/local/cuda-13.0/"),
        "{evidence}"
    );
}

#[test]
fn a_toolkit_off_the_search_path_gets_the_ldconfig_fix_with_its_directory() {
    let t = tempfile::tempdir().unwrap();
    let (root, app) = toolkit_root(t.path(), &["libcudart.so.13", "libcublas.so.13"], false);
    let (code, text) = inspect_in(&root, &app, &["--format", "json"]);
    assert_eq!(code, Some(1));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let nf = not_found(&doc);
    assert_eq!(nf.len(), 1, "{nf:#?}");
    assert_eq!(
        nf[0]["sonames"],
        serde_json::json!(["libcudart.so.13", "libcublas.so.13"])
    );
    let dir = "/usr/local/cuda-13.0/targets/x86_64-linux/lib";
    let help = nf[0]["help"].as_str().unwrap();
    assert!(
        help.contains(&format!(
            "echo {dir} | sudo tee -a /etc/ld.so.conf.d/cuda.conf && sudo ldconfig"
        )),
        "{help}"
    );
    assert!(help.contains(&format!("export LD_LIBRARY_PATH={dir}")), "{help}");
    // Near miss: the directory on the search path (LD_LIBRARY_PATH) loads both.
    let (code, text) = inspect_in(
        &root,
        &app,
        &["--format", "json", "--env", &format!("LD_LIBRARY_PATH={dir}")],
    );
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(not_found(&doc).is_empty(), "{doc:#}");
    assert_eq!(code, Some(0));
    // Listed in ld.so.conf but the cache never written: the fix is ldconfig alone.
    let t = tempfile::tempdir().unwrap();
    let (root, app) = toolkit_root(t.path(), &["libcudart.so.13"], true);
    let (_, text) = inspect_in(&root, &app, &["--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let help = not_found(&doc)[0]["help"].as_str().unwrap().to_string();
    assert!(help.contains("run `sudo ldconfig`"), "{help}");
}

/// Without a dist-info, a pip layout's fix is the pip table's wheels for the CUDA major; in a conda
/// environment, conda-forge's packages pinned with `cuda-version`.
#[test]
fn pip_without_metadata_and_conda_name_their_own_packages() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let scratch = t.path().join("scratch");
    let deps = stubs(&scratch, &["libcudart.so.12", "libcudnn.so.9"]);
    let refs: Vec<&Path> = deps.iter().map(|d| d.as_path()).collect();
    let pip = bare_lib(
        &root.join("venv/lib/python3.11/site-packages/ext/lib"),
        "libext.so",
        &refs,
        &[],
    );
    let conda = bare_lib(&root.join("opt/conda/envs/ml/lib"), "libml.so", &refs, &[]);
    std::fs::create_dir_all(root.join("opt/conda/envs/ml/conda-meta")).unwrap();
    std::fs::remove_dir_all(&scratch).unwrap();

    let (code, text) = inspect_in(&root, &pip, &["--format", "json"]);
    assert_eq!(code, Some(1));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let nf = not_found(&doc);
    assert_eq!(nf.len(), 1, "{nf:#?}");
    let help = nf[0]["help"].as_str().unwrap();
    assert!(
        help.contains("pip install 'nvidia-cuda-runtime-cu12' 'nvidia-cudnn-cu12'"),
        "{help}"
    );
    assert!(!help.contains("cu13"), "libcudart.so.12 makes it CUDA 12: {help}");

    let (code, text) = inspect_in(&root, &conda, &["--format", "json"]);
    assert_eq!(code, Some(1));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let help = not_found(&doc)[0]["help"].as_str().unwrap().to_string();
    assert!(
        help.contains(
            "conda install -p /opt/conda/envs/ml -c conda-forge cuda-cudart cudnn 'cuda-version=12'"
        ),
        "{help}"
    );
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

/// torch's venv with its CUDA wheels, but `requires` for its cuDNN line and, with `pip_cudnn` false, no
/// nvidia-cudnn-cu13 wheel; `/usr/lib/x86_64-linux-gnu` holds `libcudnn.so.{version}` (SONAME libcudnn.so.9)
/// with the `libcudnn.so.9` link a system package makes. Returns the root and libtorch_cuda.so.
fn torch_with_system_cudnn(
    t: &Path,
    requires: &str,
    version: &str,
    pip_cudnn: bool,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let (root, torch) = torch_venv(t, true);
    let site = root.join("venv/lib/python3.12/site-packages");
    let metadata = TORCH_REQUIRES.replace("nvidia-cudnn-cu13==9.19.0.56", requires);
    std::fs::write(site.join("torch-2.11.0.dist-info/METADATA"), metadata).unwrap();
    if !pip_cudnn {
        std::fs::remove_dir_all(site.join("nvidia/cudnn")).unwrap();
    }
    let sys = root.join("usr/lib/x86_64-linux-gnu");
    let built = bare_lib(&sys, "libcudnn.so.9", &[], &[]);
    std::fs::rename(&built, sys.join(format!("libcudnn.so.{version}"))).unwrap();
    std::os::unix::fs::symlink(format!("libcudnn.so.{version}"), &built).unwrap();
    (root, torch)
}

fn too_old(doc: &serde_json::Value) -> Vec<&serde_json::Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["slug"] == "cuda-library-too-old")
        .collect()
}

const SYSTEM_LIBS: &str = "LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu";

/// Issue 21: torch pins cuDNN 9.19.0.56, and the libcudnn.so.9 its libtorch_cuda.so loads is the system's
/// 9.14.0 from LD_LIBRARY_PATH (the pip wheel is not installed). A warning, not "will fail": on the H200, torch
/// 2.11 with the system's cuDNN 9.14 ran a conv2d; only `torch.backends.cudnn.version()`/`is_acceptable()`
/// (cuDNN RNNs) raise.
#[test]
fn an_older_cudnn_than_torch_pins_is_cuda_library_too_old() {
    let t = tempfile::tempdir().unwrap();
    let (root, torch) = torch_with_system_cudnn(t.path(), "nvidia-cudnn-cu13==9.19.0.56", "9.14.0", false);
    let (code, text) = inspect_in(&root, &torch, &["--format", "json", "--env", SYSTEM_LIBS]);
    assert_eq!(code, Some(0), "{text}");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(not_found(&doc).is_empty(), "{doc:#}");
    let f = too_old(&doc);
    assert_eq!(f.len(), 1, "{:#}", doc["findings"]);
    assert_eq!(
        (f[0]["code"].as_str(), f[0]["severity"].as_str()),
        (Some("CD206"), Some("warning"))
    );
    assert_eq!(
        f[0]["message"],
        "libtorch_cuda.so's package torch 2.11.0 requires nvidia-cudnn-cu13==9.19.0.56; the loaded \
         libcudnn.so.9 is 9.14.0 (/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0, as \
         /usr/lib/x86_64-linux-gnu/libcudnn.so.9, found through LD_LIBRARY_PATH): torch raises \"cuDNN version \
         incompatibility\" when torch.backends.cudnn.version() or is_acceptable() runs (a cuDNN RNN: nn.LSTM, \
         nn.GRU or nn.RNN on the GPU; code that asks for the cuDNN version), not at import, and convolutions \
         run on the older copy (cuDNN 9.14 is older than the 9.19 it was compiled with)"
    );
    let evidence = f[0]["evidence"].to_string();
    for needle in [
        "torch-2.11.0.dist-info/METADATA:8: Requires-Dist: nvidia-cudnn-cu13==9.19.0.56",
        "found through LD_LIBRARY_PATH (/usr/lib/x86_64-linux-gnu)",
        "version 9.14.0 read from the file name libcudnn.so.9.14.0, compared with 9.19.0.56 on 3 numbers",
    ] {
        assert!(evidence.contains(needle), "{needle}: {evidence}");
    }
    let help = f[0]["help"].as_str().unwrap();
    assert!(
        help.contains("Take /usr/lib/x86_64-linux-gnu off LD_LIBRARY_PATH"),
        "{help}"
    );
    assert!(
        help.contains("pip install 'nvidia-cudnn-cu13==9.19.0.56'"),
        "{help}"
    );
}

/// Near misses: the loaded copy is the pinned release; a range the loaded copy meets; the pip wheel, found
/// through torch's RPATH before LD_LIBRARY_PATH.
#[test]
fn a_cudnn_that_meets_the_requirement_is_not_too_old() {
    for (requires, version, pip) in [
        ("nvidia-cudnn-cu13==9.19.0.56", "9.19.0", false),
        ("nvidia-cudnn-cu13>=9.8,<10.0", "9.14.0", false),
        ("nvidia-cudnn-cu13==9.19.0.56", "9.14.0", true),
    ] {
        let t = tempfile::tempdir().unwrap();
        let (root, torch) = torch_with_system_cudnn(t.path(), requires, version, pip);
        let (_, text) = inspect_in(&root, &torch, &["--format", "json", "--env", SYSTEM_LIBS]);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            too_old(&doc).is_empty(),
            "{requires} {version} {pip}: {:#}",
            doc["findings"]
        );
        assert!(not_found(&doc).is_empty(), "{doc:#}");
    }
}

/// `file` with its ELF header's `e_machine` set to `machine`: the same program, for another processor as far
/// as any loader or reader is concerned (nothing runs it).
fn retarget(file: &Path, machine: u16) {
    let mut b = std::fs::read(file).unwrap();
    b[18..20].copy_from_slice(&machine.to_le_bytes());
    std::fs::write(file, b).unwrap();
}

const EM_AARCH64: u16 = 183;

/// An aarch64 program with a truly missing library, inspected on this machine (x86-64 CI: no
/// `/lib/ld-linux-aarch64.so.1`, an `ld.so.cache` of x86-64 libraries).
fn aarch64_program(dir: &Path) -> std::path::PathBuf {
    let dep = build::lib(&dir.join("lib"), "libgone.so.1", "gone", &[], &[]);
    let main = build::exe(
        &dir.join("app"),
        &[&dep],
        &["-Wl,--dynamic-linker=/lib/ld-linux-aarch64.so.1"],
    );
    std::fs::remove_file(&dep).unwrap();
    retarget(&main, EM_AARCH64);
    main
}

/// Regression (cupy's aarch64 wheel on an x86-64 runner: 134 `library-not-found` for libc, libm, libstdc++…):
/// a binary of another architecture gets one note, and its tree is not judged against this machine's
/// libraries.
#[test]
fn an_aarch64_program_on_this_machine_is_one_note_not_missing_libraries() {
    if !Path::new("/lib64/ld-linux-x86-64.so.2").exists() || Path::new("/lib/ld-linux-aarch64.so.1").exists()
    {
        // the test speaks of an x86-64 machine without an aarch64 loader
        crate::support::skip::optional("not an x86-64 machine without an aarch64 loader");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let main = aarch64_program(t.path());
    let (code, doc) = json_of(&[
        "inspect".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        "--clear-env".as_ref(),
        main.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{doc:#}");
    let slugs = slugs_of(&doc);
    assert_eq!(
        slugs.iter().filter(|s| *s == "foreign-architecture").count(),
        1,
        "{slugs:?}"
    );
    for judged in [
        "library-not-found",
        "library-shadowed",
        "symbol-version-missing",
        "glibc-too-old",
    ] {
        assert!(!slugs.iter().any(|s| s == judged), "{slugs:?}");
    }
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["slug"] == "foreign-architecture")
        .unwrap();
    assert_eq!(f["code"], "CD110");
    assert_eq!(f["severity"], "note");
    let message = f["message"].as_str().unwrap();
    assert!(message.contains("built for aarch64"), "{message}");
    assert!(message.contains("x86_64 machine cannot load it"), "{message}");
    assert!(f["help"].as_str().unwrap().contains("--root"), "{f:#}");
    // The binary itself is still read: its facts are there, and no library was looked up.
    assert_eq!(doc["binaries"][0]["elf"]["machine"], "aarch64", "{doc:#}");
    assert!(
        doc["libraries"]
            .as_array()
            .is_none_or(|l| l.iter().all(|l| l["soname"] != "libc.so.6")),
        "{doc:#}"
    );
}

/// Near miss: the same program for x86-64 still gets `library-not-found` for its truly missing library.
#[test]
fn an_x86_64_program_with_a_missing_library_is_still_judged() {
    if !Path::new("/lib64/ld-linux-x86-64.so.2").exists() {
        crate::support::skip::optional("not an x86-64 machine (no /lib64/ld-linux-x86-64.so.2)");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let main = program_with_a_missing_library(t.path());
    let (code, doc) = json_of(&[
        "inspect".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        "--clear-env".as_ref(),
        main.as_os_str(),
    ]);
    assert_eq!(code, Some(1));
    let slugs = slugs_of(&doc);
    assert!(slugs.iter().any(|s| s == "library-not-found"), "{slugs:?}");
    assert!(!slugs.iter().any(|s| s == "foreign-architecture"), "{slugs:?}");
}

/// Inside a `--root` of its own architecture (its loader is an aarch64 file there) the aarch64 program's
/// tree is judged as any other: no note, and its missing library is reported.
#[test]
fn an_aarch64_program_in_an_aarch64_root_is_judged() {
    let t = tempfile::tempdir().unwrap();
    let main = aarch64_program(t.path());
    let root = t.path().join("root");
    std::fs::create_dir_all(root.join("lib")).unwrap();
    // Any aarch64 ELF file stands for the loader: only its header is read.
    std::fs::copy(&main, root.join("lib/ld-linux-aarch64.so.1")).unwrap();
    let (code, doc) = json_of(&[
        "inspect".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        "--clear-env".as_ref(),
        "--root".as_ref(),
        root.as_os_str(),
        main.as_os_str(),
    ]);
    let slugs = slugs_of(&doc);
    assert!(!slugs.iter().any(|s| s == "foreign-architecture"), "{slugs:?}");
    assert!(slugs.iter().any(|s| s == "library-not-found"), "{slugs:?}");
    assert_eq!(code, Some(1));
}
