//! `cudadiag import torch` (issue 31): torch's own loading modelled in one process, on small synthetic
//! environments built here under a `--root`: an interpreter (a bare ELF object named `python3.11`, with the
//! standard library's landmark `os.py`), a venv with `pyvenv.cfg`, torch's layout (`libtorch_global_deps.so`
//! with torch's DT_RPATH into `nvidia/…/lib`, `_C` needing `libtorch_cuda.so`), the NVIDIA wheels' libraries
//! and `*.dist-info` as pip writes them, tiny libraries made with `cc` (no libc: nothing else to miss).
//!
//! Before this command, the only judgement was `inspect` of `torch/_C*.so`, which resolves its NEEDED tree
//! alone: with the wheels on a second `sys.path` entry it said "will fail" for an import that works.

mod bindings;
mod numpy;

use crate::support::arm_build::ld_cache;
use crate::support::cli::{self, slugs};
use crate::support::loader_build as build;

use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// `0x0303`: what an x86-64 `ldconfig` writes for a 64-bit library.
const X86_64_LIB: i32 = 0x0303;

/// torch 2.15's NVIDIA wheels on CUDA 13: `(directory under nvidia/, soname)`, every one its preload list
/// names (cuBLASLt first), each a bare library.
const WHEELS: &[(&str, &str)] = &[
    ("cu13", "libcublasLt.so.13"),
    ("cu13", "libcublas.so.13"),
    ("cudnn", "libcudnn.so.9"),
    ("cu13", "libnvrtc.so.13"),
    ("cu13", "libnvrtc-builtins.so.13.2"),
    ("cu13", "libcudart.so.13"),
    ("cu13", "libcupti.so.13"),
    ("cu13", "libcufft.so.12"),
    ("cu13", "libnvJitLink.so.13"),
    ("cu13", "libcusparse.so.12"),
    ("cusparselt", "libcusparseLt.so.0"),
    ("cu13", "libcusolver.so.12"),
    ("nccl", "libnccl.so.2"),
    ("nvshmem", "libnvshmem_host.so.3"),
    ("cu13", "libcufile.so.0"),
];

/// torch's DT_RPATH (2.15 wheels), relative to `torch/lib`.
const TORCH_RPATH: &str = "-Wl,-rpath,$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/nvshmem/lib:\
$ORIGIN/../../nvidia/nccl/lib:$ORIGIN/../../nvidia/cusparselt/lib:$ORIGIN/../../nvidia/cu13/lib:$ORIGIN";

pub(crate) fn bare(dir: &Path, soname: &str, deps: &[&Path], flags: &[&str]) -> PathBuf {
    let mut all = vec!["-nostdlib"];
    all.extend_from_slice(flags);
    build::lib(dir, soname, "f", deps, &all)
}

pub(crate) fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A `.dist-info` for `name`-`version` in `site`, with `requires` and a RECORD of `files`.
pub(crate) fn dist_info(site: &Path, name: &str, version: &str, requires: &[&str], files: &[String]) {
    let info = site.join(format!("{}-{version}.dist-info", name.replace('-', "_")));
    let mut metadata = format!("Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n");
    for r in requires {
        metadata.push_str(&format!("Requires-Dist: {r}\n"));
    }
    write(&info.join("METADATA"), &metadata);
    let record: String = files.iter().map(|f| format!("{f},sha256=AAAA,1\n")).collect();
    write(&info.join("RECORD"), &record);
}

/// The environment: `/usr/bin/python3.11` with its standard library, and a venv at `/venv` without system
/// site-packages. Returns the venv's site-packages (a host path).
pub(crate) fn interpreter_and_venv(root: &Path) -> PathBuf {
    bare(&root.join("usr/bin"), "python3.11", &[], &[]);
    write(&root.join("usr/lib/python3.11/os.py"), "");
    std::fs::create_dir_all(root.join("usr/lib/python3.11/lib-dynload")).unwrap();
    write(
        &root.join("venv/pyvenv.cfg"),
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.7\n",
    );
    std::fs::create_dir_all(root.join("venv/bin")).unwrap();
    std::os::unix::fs::symlink("/usr/bin/python3.11", root.join("venv/bin/python3")).unwrap();
    let site = root.join("venv/lib/python3.11/site-packages");
    std::fs::create_dir_all(&site).unwrap();
    site
}

/// torch `version` in `site`: `libtorch_global_deps.so` (NEEDED `libcudart.so.13`), `_C` → `libtorch_cuda.so`
/// (NEEDED cudart, cuBLAS, cuDNN), all with torch's DT_RPATH, its `version.py` and dist-info pinning cuDNN
/// 9.26.0.51.
pub(crate) fn torch(t: &Path, site: &Path, version: &str) {
    let scratch = t.join("scratch");
    let stub = |s: &str| bare(&scratch, s, &[], &[]);
    let (cudart, cublas, cudnn) = (
        stub("libcudart.so.13"),
        stub("libcublas.so.13"),
        stub("libcudnn.so.9"),
    );
    let lib = site.join("torch/lib");
    let rpath = ["-Wl,--disable-new-dtags", TORCH_RPATH];
    bare(&lib, "libtorch_global_deps.so", &[&cudart], &rpath);
    let cuda = bare(&lib, "libtorch_cuda.so", &[&cudart, &cublas, &cudnn], &rpath);
    // The extension module's suffix is the interpreter's whose `lib/python3.X` holds `site`.
    let xy = site
        .iter()
        .find_map(|c| c.to_str()?.strip_prefix("python3."))
        .unwrap_or("11");
    let c = bare(
        &site.join("torch"),
        &format!("_C.cpython-3{xy}-x86_64-linux-gnu.so"),
        &[&cuda],
        &["-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/lib"],
    );
    assert!(c.exists());
    std::fs::remove_dir_all(&scratch).unwrap();
    write(&site.join("torch/__init__.py"), "");
    write(
        &site.join("torch/version.py"),
        &format!("__version__ = '{version}+cu132'\ncuda: Optional[str] = '13.2'\n"),
    );
    dist_info(
        site,
        "torch",
        version,
        &["nvidia-cudnn-cu13==9.26.0.51; platform_system == \"Linux\""],
        &["torch/__init__.py".into(), "torch/lib/libtorch_cuda.so".into()],
    );
}

/// The NVIDIA wheels in `site` (skipping `except`): each library, cuBLAS needing cuBLASLt through its own
/// RUNPATH `$ORIGIN` as the wheel's does, and the dist-infos (cuDNN's at 9.26.0.51, as torch pins it).
pub(crate) fn wheels(t: &Path, site: &Path, except: &[&str]) {
    let scratch = t.join("scratch-wheels");
    let lt = bare(&scratch, "libcublasLt.so.13", &[], &[]);
    for (dir, soname) in WHEELS.iter().filter(|(_, s)| !except.contains(s)) {
        let at = site.join("nvidia").join(dir).join("lib");
        if *soname == "libcublas.so.13" {
            bare(
                &at,
                soname,
                &[&lt],
                &["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"],
            );
        } else if *soname == "libcudnn.so.9" {
            cudnn(&at, "");
        } else {
            bare(&at, soname, &[], &[]);
        }
    }
    std::fs::remove_dir_all(&scratch).unwrap();
    if !except.contains(&"libcudnn.so.9") {
        dist_info(
            site,
            "nvidia-cudnn-cu13",
            "9.26.0.51",
            &[],
            &["nvidia/cudnn/lib/libcudnn.so.9".into()],
        );
    }
}

/// cuDNN 9 in `dir`: `libcudnn.so.9` (DT_RPATH `$ORIGIN`, as the wheel's) and the sub-libraries a first
/// convolution opens (`libcudnn_graph.so.9` and the engines, RUNPATH `$ORIGIN`), each file named `soname` +
/// `suffix` (`.1.0` for a system copy `libcudnn.so.9.1.0`). Returns `(soname, file)` of each.
pub(crate) fn cudnn(dir: &Path, suffix: &str) -> Vec<(String, PathBuf)> {
    let subs = [
        "libcudnn_graph.so.9",
        "libcudnn_engines_precompiled.so.9",
        "libcudnn_heuristic.so.9",
        "libcudnn_engines_runtime_compiled.so.9",
    ];
    let mut out = Vec::new();
    let main = ("libcudnn.so.9", ["-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN"]);
    let others = subs.map(|s| (s, ["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]));
    for (soname, flags) in std::iter::once(main).chain(others) {
        let built = bare(dir, soname, &[], &flags);
        let file = dir.join(format!("{soname}{suffix}"));
        if built != file {
            std::fs::rename(&built, &file).unwrap();
        }
        out.push((soname.to_string(), file));
    }
    out
}

/// The driver's `libcuda.so.1` at `/usr/lib/x86_64-linux-gnu`, in the root's `ld.so.cache` with `extra`.
pub(crate) fn driver_and_cache(root: &Path, extra: &[(&str, &str)]) {
    let dir = root.join("usr/lib/x86_64-linux-gnu");
    bare(&dir, "libcuda.so.1", &[], &[]);
    let mut entries = vec![(
        "libcuda.so.1",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        X86_64_LIB,
    )];
    entries.extend(extra.iter().map(|(k, v)| (*k, *v, X86_64_LIB)));
    write(&root.join("etc/ld.so.conf"), "");
    std::fs::write(root.join("etc/ld.so.cache"), ld_cache(&entries)).unwrap();
}

/// A healthy torch 2.15 venv under a new root: every NVIDIA wheel, the driver's `libcuda.so.1` in the root's
/// `ld.so.cache`. The directory (kept alive by the caller), the root, the venv's site-packages.
fn healthy() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    torch(t.path(), &site, "2.15.0");
    wheels(t.path(), &site, &[]);
    driver_and_cache(&root, &[]);
    (t, root, site)
}

/// `cudadiag import torch --root ROOT --venv /venv --clear-env --gpu 9.0 --driver 580.65.06 --format json`,
/// with `env` (`KEY=VALUE`) and `extra` arguments: the exit code and the report.
fn import(root: &Path, env: &[&str], extra: &[&str]) -> (i32, Value) {
    let mut target = vec!["--gpu", "9.0"];
    if !extra.contains(&"--driver") {
        target.extend(["--driver", "580.65.06"]);
    }
    import_on(root, &target, env, extra)
}

/// `cudadiag import torch --root ROOT --venv /venv --clear-env --format json` with `target` (the declared
/// machine; none: the root's own), `env` and `extra` arguments.
fn import_on(root: &Path, target: &[&str], env: &[&str], extra: &[&str]) -> (i32, Value) {
    let args = [
        &["import", "torch", "--venv", "/venv", "--format", "json"],
        target,
        extra,
    ]
    .concat();
    cli::run_json(args.iter().map(OsString::from).chain(cli::on_root(root, env)))
}

/// The exit code, the findings' slugs, and the outcomes of the import and of the first use.
fn summary(code: i32, doc: &Value) -> (i32, Vec<String>, &str, &str) {
    (
        code,
        slugs(doc),
        outcome(doc, "import"),
        outcome(doc, "first_use"),
    )
}

/// The loaded object whose path ends with `/name`.
fn loaded<'d>(doc: &'d Value, name: &str) -> Option<&'d Value> {
    doc["loaded"].as_array().unwrap().iter().find(|l| {
        l["path"]
            .as_str()
            .is_some_and(|p| p.ends_with(&format!("/{name}")))
    })
}

fn outcome<'d>(doc: &'d Value, step: &str) -> &'d str {
    doc["imports"][0][step]["outcome"]["kind"]
        .as_str()
        .unwrap_or("none")
}

/// The healthy venv: every library torch preloads from the venv's site-packages, `_C`'s tree reusing them,
/// the driver at first use: works on the GPU, no finding.
#[test]
fn a_healthy_torch_venv_imports_and_uses_the_gpu_with_no_finding() {
    let (_t, root, _) = healthy();
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!((code, slugs(&doc)), (0, Vec::<String>::new()), "{doc:#}");
    assert_eq!(
        (outcome(&doc, "import"), outcome(&doc, "first_use")),
        ("gpu", "gpu")
    );
    // The near misses of the code table: the driver is found, the cuDNN loaded is the pinned wheel's.
    for slug in ["framework-cpu-fallback", "framework-version-check"] {
        assert!(!slugs(&doc).iter().any(|s| s == slug));
    }
    let lt = loaded(&doc, "libcublasLt.so.13").unwrap();
    assert_eq!(lt["how"]["kind"], "preloaded", "{lt:#}");
    assert_eq!(lt["how"]["by"], "torch");
    assert!(
        lt["path"]
            .as_str()
            .unwrap()
            .ends_with("/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublasLt.so.13")
    );
    let cuda = loaded(&doc, "libtorch_cuda.so").unwrap();
    assert_eq!(
        (cuda["how"]["kind"].as_str(), cuda["how"]["found"].as_str()),
        (Some("needed"), Some("rpath"))
    );
    // The driver comes in at import already: cuBLASLt's initialiser opens it (LD_DEBUG on the H200).
    let drv = loaded(&doc, "libcuda.so.1").unwrap();
    assert_eq!(
        (drv["how"]["kind"].as_str(), drv["when"].as_str()),
        (Some("opened"), Some("import"))
    );
    assert!(
        drv["how"]["caller"]
            .as_str()
            .unwrap()
            .ends_with("/libcublasLt.so.13"),
        "{drv:#}"
    );
    // A convolution's cuDNN sub-libraries at first use, each opened by the one before.
    let graph = loaded(&doc, "libcudnn_graph.so.9").unwrap();
    assert_eq!(
        (graph["when"].as_str(), graph["how"]["name"].as_str()),
        (Some("first_use"), Some("libcudnn_graph.so.9"))
    );
    let heuristic = loaded(&doc, "libcudnn_heuristic.so.9").unwrap();
    assert!(
        heuristic["how"]["caller"]
            .as_str()
            .unwrap()
            .ends_with("/libcudnn_graph.so.9")
    );
    // One copy of each library: `_C`'s NEEDED cuBLAS is the one torch preloaded.
    let cublas: Vec<_> = doc["loaded"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["soname"] == "libcublas.so.13")
        .collect();
    assert_eq!(cublas.len(), 1);
}

/// Issue 31: the NVIDIA wheels on a second `sys.path` entry (a `.pth` line naming `/wheels`), out of reach of
/// torch's DT_RPATH. `libtorch_global_deps.so` fails on `libcudart.so.13`, torch preloads every wheel from
/// `sys.path` (required) and loads it again; `_C` finds them loaded. The import works: no "will fail".
#[test]
fn nvidia_wheels_on_a_second_sys_path_entry_are_preloaded_by_torch_not_missing() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    torch(t.path(), &site, "2.15.0");
    let extra = root.join("wheels");
    wheels(t.path(), &extra, &[]);
    write(&site.join("wheels.pth"), "/wheels\n");
    driver_and_cache(&root, &[]);
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!((code, slugs(&doc)), (0, Vec::<String>::new()), "{doc:#}");
    assert_eq!(outcome(&doc, "import"), "gpu");
    let cudnn = loaded(&doc, "libcudnn.so.9").unwrap();
    assert_eq!(cudnn["path"], "/wheels/nvidia/cudnn/lib/libcudnn.so.9");
    assert_eq!(cudnn["how"]["kind"], "preloaded");
    assert!(
        cudnn["how"]["search"].as_str().unwrap().contains("/wheels"),
        "{cudnn:#}"
    );
}

/// Without the wheels anywhere on `sys.path`, that same fall-back raises torch's `ValueError`: the import fails.
#[test]
fn no_cuda_wheel_anywhere_fails_with_torchs_own_value_error() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    torch(t.path(), &site, "2.15.0");
    driver_and_cache(&root, &[]);
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!(
        (code, slugs(&doc)),
        (1, vec!["library-not-found".to_string()]),
        "{doc:#}"
    );
    let message = doc["imports"][0]["import"]["outcome"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.starts_with("ValueError: libcublasLt.so.*[0-9] not found in the system path ['"),
        "{message}"
    );
}

/// One wheel missing (cuDNN) and an older system cuDNN (9.1.0) in `ld.so.cache`: torch 2.15 preloads the
/// others best effort, `libtorch_cuda.so` finds cuDNN through the cache. The import and a convolution run;
/// torch's cuDNN rule raises from `torch.backends.cudnn.version()` and RNNs: a warning naming them.
#[test]
fn a_missing_cudnn_wheel_with_an_older_system_copy_is_a_version_check_warning_not_a_failure() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    torch(t.path(), &site, "2.15.0");
    wheels(t.path(), &site, &["libcudnn.so.9"]);
    let sys = root.join("usr/lib/x86_64-linux-gnu");
    let copies = cudnn(&sys, ".1.0");
    let entries: Vec<(String, String)> = copies
        .iter()
        .map(|(s, f)| {
            (
                s.clone(),
                format!("/{}", f.strip_prefix(&root).unwrap().display()),
            )
        })
        .collect();
    let entries: Vec<(&str, &str)> = entries.iter().map(|(s, f)| (s.as_str(), f.as_str())).collect();
    driver_and_cache(&root, &entries);
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!(
        summary(code, &doc),
        (0, vec!["framework-version-check".into()], "gpu", "gpu"),
        "{doc:#}"
    );
    let cudnn = loaded(&doc, "libcudnn.so.9.1.0").unwrap();
    assert_eq!(
        (cudnn["how"]["kind"].as_str(), cudnn["how"]["found"].as_str()),
        (Some("needed"), Some("ld_so_cache"))
    );
    let f = &doc["findings"][0];
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("torch.backends.cudnn.version()"),
        "{f:#}"
    );
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains("cuDNN version incompatibility: PyTorch was compiled  against (9, 26, 0) but found runtime version (9, 1, 0)"),
        "{evidence}"
    );
}

/// `cudadiag import torch` in a venv without torch: Python raises `ModuleNotFoundError`, and the report said
/// "import: fails" above "no finding" with exit status 0.
#[test]
fn a_venv_without_torch_is_framework_not_installed_and_fails() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    driver_and_cache(&root, &[]);
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!(
        (code, slugs(&doc)),
        (1, vec!["framework-not-installed".to_string()]),
        "{doc:#}"
    );
    let f = &doc["findings"][0];
    assert!(
        f["help"].as_str().unwrap().contains("-m pip install torch"),
        "{f:#}"
    );
    // torch's dist-info without its package (a broken install): the same error, with the reinstall to run.
    dist_info(&site, "torch", "2.15.0", &[], &["torch/__init__.py".into()]);
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!(
        (code, slugs(&doc)),
        (1, vec!["framework-not-installed".to_string()]),
        "{doc:#}"
    );
    let f = &doc["findings"][0];
    assert!(
        f["help"]
            .as_str()
            .unwrap()
            .contains("-m pip install --force-reinstall torch==2.15.0"),
        "{f:#}"
    );
    // The near miss: torch installed there.
    torch(t.path(), &site, "2.15.0");
    wheels(t.path(), &site, &[]);
    let (_, doc) = import(&root, &[], &[]);
    assert!(
        !slugs(&doc).contains(&"framework-not-installed".to_string()),
        "{doc:#}"
    );
}

/// torch's `_C` built for CPython 3.12 in the venv of a 3.11 interpreter (a wheel copied from another
/// environment): Python finds no module (`ModuleNotFoundError: No module named 'torch._C'`, as CPython's
/// `EXTENSION_SUFFIXES` say; torch's own `ImportError` where the `torch/_C` stub directory is there), and a note
/// names the file and the interpreter it was built for.
#[test]
fn a_torch_extension_built_for_another_python_is_not_imported_and_a_note_says_why() {
    let (_t, root, site) = healthy();
    let ours = site.join("torch/_C.cpython-311-x86_64-linux-gnu.so");
    std::fs::rename(&ours, site.join("torch/_C.cpython-312-x86_64-linux-gnu.so")).unwrap();
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(outcome(&doc, "import"), "fails");
    let step = &doc["imports"][0]["import"];
    assert_eq!(
        step["outcome"]["message"].as_str(),
        Some("ModuleNotFoundError: No module named 'torch._C'"),
        "{step:#}"
    );
    // With the wheel's `torch/_C/` of type stubs, `torch._C` is that namespace package, and torch's own check
    // raises (measured with torch 2.15's wheel).
    std::fs::create_dir(site.join("torch/_C")).unwrap();
    write(&site.join("torch/_C/__init__.pyi"), "");
    let (_, doc) = import(&root, &[], &[]);
    let step = &doc["imports"][0]["import"];
    assert!(
        step["outcome"]["message"]
            .as_str()
            .unwrap()
            .starts_with("ImportError: Failed to load PyTorch C extensions: It appears that PyTorch has loaded the `torch/_C` folder"),
        "{step:#}"
    );
    assert!(
        step["notes"].to_string().contains(
            "torch holds _C.cpython-312-x86_64-linux-gnu.so: built for another CPython (the interpreter is CPython 3.11)"
        ),
        "{step:#}"
    );
}

/// An older cuDNN wheel laid out as a symbolic-link copy (`cp -as`, a Spack view): `site-packages/nvidia/cudnn/lib`
/// holds links into a store, so the library's real path is outside every `sys.path` entry. Its version is the
/// distribution's whose `RECORD` lists it by the name torch opened, and torch's cuDNN rule applies. Measured:
/// `scripts/import-faults.py` (torch 2.15, nvidia-cudnn-cu13 9.13.1.26 in place of 9.26.0.51) raised
/// `cuDNN version incompatibility` from `torch.backends.cudnn.version()` while cudadiag said nothing.
#[test]
fn an_older_cudnn_wheel_through_links_into_a_store_is_the_version_check_warning() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    torch(t.path(), &site, "2.15.0");
    wheels(t.path(), &site, &["libcudnn.so.9"]);
    let lib = site.join("nvidia/cudnn/lib");
    std::fs::create_dir_all(&lib).unwrap();
    for (soname, file) in cudnn(&root.join("store/cudnn-9.13.1/lib"), "") {
        let inside = format!("/{}", file.strip_prefix(&root).unwrap().display());
        std::os::unix::fs::symlink(inside, lib.join(&soname)).unwrap();
    }
    dist_info(
        &site,
        "nvidia-cudnn-cu13",
        "9.13.1.26",
        &[],
        &["nvidia/cudnn/lib/libcudnn.so.9".into()],
    );
    driver_and_cache(&root, &[]);
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!(
        (code, slugs(&doc)),
        (0, vec!["framework-version-check".to_string()]),
        "{doc:#}"
    );
    let evidence = doc["findings"][0]["evidence"].to_string();
    assert!(
        evidence.contains("compiled  against (9, 26, 0) but found runtime version (9, 13, 1)"),
        "{evidence}"
    );
}

/// `LD_LIBRARY_PATH` holding another `libcublasLt.so.13`: cuBLAS needs it through its RUNPATH, which loses to
/// `LD_LIBRARY_PATH`. torch 2.10 preloads cuBLAS first, so that copy wins; from 2.11 torch preloads cuBLASLt
/// first, from its wheel, and the variable's copy is never mapped.
#[test]
fn ld_library_path_shadows_cublaslt_under_torch_2_10_and_not_from_2_11() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    torch(t.path(), &site, "2.10.0");
    wheels(t.path(), &site, &[]);
    bare(&root.join("opt/old"), "libcublasLt.so.13", &[], &[]);
    driver_and_cache(&root, &[]);
    let (_, doc) = import(&root, &["LD_LIBRARY_PATH=/opt/old"], &[]);
    let lt = loaded(&doc, "libcublasLt.so.13").unwrap();
    assert_eq!(lt["path"], "/opt/old/libcublasLt.so.13", "{lt:#}");
    assert_eq!(
        (lt["how"]["kind"].as_str(), lt["how"]["found"].as_str()),
        (Some("needed"), Some("ld_library_path"))
    );

    std::fs::remove_dir_all(site.join("torch-2.10.0.dist-info")).unwrap();
    dist_info(&site, "torch", "2.11.0", &[], &[]);
    let (_, doc) = import(&root, &["LD_LIBRARY_PATH=/opt/old"], &[]);
    let lt = loaded(&doc, "libcublasLt.so.13").unwrap();
    assert_eq!(
        lt["path"], "/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublasLt.so.13",
        "{lt:#}"
    );
    assert_eq!(lt["how"]["kind"], "preloaded");
}

/// No `libcuda.so.1` anywhere on the machine read (the root's own, no machine declared): `import torch` works
/// and `torch.cuda.is_available()` is False: the GPU will not be used, an error.
#[test]
fn no_driver_library_is_a_cpu_fallback() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    torch(t.path(), &site, "2.15.0");
    wheels(t.path(), &site, &[]);
    let (code, doc) = import_on(&root, &[], &[], &[]);
    assert_eq!(
        summary(code, &doc),
        (1, vec!["framework-cpu-fallback".into()], "gpu", "cpu_fallback"),
        "{doc:#}"
    );
}

/// A driver of CUDA 12.2 under torch's CUDA 13 runtime: torch's own message, with the driver's CUDA as it
/// prints it (12020).
#[test]
fn an_old_driver_fails_at_first_use_with_torchs_message() {
    let (_t, root, _) = healthy();
    let (code, doc) = import(&root, &[], &["--driver", "535.104.05"]);
    assert_eq!(
        (code, slugs(&doc)),
        (1, vec!["driver-insufficient".to_string()]),
        "{doc:#}"
    );
    let message = doc["imports"][0]["first_use"]["outcome"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message
            .starts_with("RuntimeError: The NVIDIA driver on your system is too old (found version 12020)."),
        "{message}"
    );
}

/// `CUDA_VISIBLE_DEVICES=""` on a machine with a GPU: the import works, the first CUDA tensor raises
/// `RuntimeError: No CUDA GPUs are available` (the H200, torch 2.11): no GPU is used, an error; the driver is
/// opened, NVML and cuDNN's sub-libraries are not. An index that exists hides nothing.
#[test]
fn cuda_visible_devices_hiding_every_gpu_is_torchs_no_gpu_fall_back() {
    let (_t, root, _) = healthy();
    let (code, doc) = import(&root, &["CUDA_VISIBLE_DEVICES="], &[]);
    assert_eq!(
        summary(code, &doc),
        (1, vec!["framework-cpu-fallback".into()], "gpu", "cpu_fallback"),
        "{doc:#}"
    );
    let because = doc["imports"][0]["first_use"]["outcome"]["because"]
        .as_str()
        .unwrap();
    assert!(because.contains("No CUDA GPUs are available"), "{because}");
    assert!(loaded(&doc, "libcuda.so.1").is_some());
    assert!(loaded(&doc, "libcudnn_graph.so.9").is_none(), "{doc:#}");
    for visible in ["CUDA_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=MIG-4f2a"] {
        let (code, doc) = import(&root, &[visible], &[]);
        assert_eq!(
            (code, outcome(&doc, "first_use")),
            (0, "gpu"),
            "{visible}: {doc:#}"
        );
    }
    let (_, doc) = import(&root, &["CUDA_VISIBLE_DEVICES=1"], &[]);
    assert_eq!(outcome(&doc, "first_use"), "cpu_fallback", "index 1 of one GPU");
}

/// The toolkit's stub first on `LD_LIBRARY_PATH` as `libcuda.so.1` (a link into `lib64/stubs`): the import
/// works and the first CUDA call raises torch's own error 34 (measured on the H200): `stub-libcuda`, naming the
/// directory to take off the path, and no `framework-raises` beside it.
#[test]
fn the_toolkits_stub_as_libcuda_fails_torchs_first_use_with_error_34() {
    let (_t, root, _) = healthy();
    let stubs = root.join("usr/local/cuda/targets/x86_64-linux/lib/stubs");
    let stub = bare(&stubs, "libcuda.so.1", &[], &[]);
    std::fs::rename(&stub, stubs.join("libcuda.so")).unwrap();
    std::fs::create_dir_all(root.join("opt/stub")).unwrap();
    std::os::unix::fs::symlink(
        "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so",
        root.join("opt/stub/libcuda.so.1"),
    )
    .unwrap();
    let (code, doc) = import(&root, &["LD_LIBRARY_PATH=/opt/stub"], &[]);
    assert_eq!(
        summary(code, &doc),
        (1, vec!["stub-libcuda".into()], "gpu", "fails"),
        "{doc:#}"
    );
    let message = doc["imports"][0]["first_use"]["outcome"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.starts_with("RuntimeError: Unexpected error from cudaGetDeviceCount()")
            && message.ends_with("Error 34: CUDA driver is a stub library"),
        "{message}"
    );
    let help = doc["findings"][0]["help"].as_str().unwrap();
    assert!(help.contains("take /opt/stub off LD_LIBRARY_PATH"), "{help}");
    // Without the variable the driver's copy is found, and nothing is said.
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!((code, slugs(&doc)), (0, Vec::<String>::new()), "{doc:#}");
}

/// `LD_LIBRARY_PATH` naming an older cuDNN 9 while the pinned wheel is installed: torch preloads the wheel's
/// `libcudnn.so.9` by path, but that dispatcher `dlopen`s its sub-libraries by name, and where its own path is a
/// DT_RUNPATH (`$ORIGIN` in the 9.14 and 9.19 wheels; 9.26's is a DT_RPATH) the variable comes first and the
/// older ones are found; `cudnnGetVersion` answers from `libcudnn_graph.so.9`, so torch's rule raises with the
/// older version (the H200: the 9.19 wheel preloaded, `found runtime version (9, 14, 0)`).
#[test]
fn ld_library_path_with_an_older_cudnn_is_torchs_cudnn_check_by_the_graph_library() {
    let (_t, root, site) = healthy();
    let old = root.join("opt/cudnn-9.1/lib");
    for (soname, file) in cudnn(&old, ".1.0") {
        std::os::unix::fs::symlink(file.file_name().unwrap(), old.join(soname)).unwrap();
    }
    // With the DT_RPATH of the helper's wheel (9.26's), the wheel's sub-libraries win: nothing to say.
    let (code, doc) = import(&root, &["LD_LIBRARY_PATH=/opt/cudnn-9.1/lib"], &[]);
    assert_eq!((code, slugs(&doc)), (0, Vec::<String>::new()), "{doc:#}");
    let dispatcher = ["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"];
    bare(&site.join("nvidia/cudnn/lib"), "libcudnn.so.9", &[], &dispatcher);
    let (code, doc) = import(&root, &["LD_LIBRARY_PATH=/opt/cudnn-9.1/lib"], &[]);
    assert_eq!(
        (code, slugs(&doc)),
        (0, vec!["framework-version-check".to_string()]),
        "{doc:#}"
    );
    let main = loaded(&doc, "libcudnn.so.9").unwrap();
    assert_eq!(main["how"]["kind"], "preloaded", "{main:#}");
    let graph = loaded(&doc, "libcudnn_graph.so.9").unwrap();
    assert!(
        graph["realpath"]
            .as_str()
            .unwrap()
            .ends_with("/opt/cudnn-9.1/lib/libcudnn_graph.so.9.1.0"),
        "{graph:#}"
    );
    let evidence = doc["findings"][0]["evidence"].to_string();
    assert!(evidence.contains("found runtime version (9, 1, 0)"), "{evidence}");
    assert!(evidence.contains("libcudnn_graph.so.9"), "{evidence}");
}

/// A torch newer than every model is judged with the newest one, and says so.
#[test]
fn a_torch_newer_than_every_model_is_judged_with_the_nearest_and_says_so() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    torch(t.path(), &site, "2.15.0");
    std::fs::remove_dir_all(site.join("torch-2.15.0.dist-info")).unwrap();
    dist_info(&site, "torch", "3.0.0", &[], &[]);
    let (_, doc) = import(&root, &[], &[]);
    let near = doc["imports"][0]["model"]["nearest"].as_str().unwrap();
    assert!(
        near.contains("torch 3.0.0 is newer") && near.contains("torch 2.15 up to 2.16"),
        "{near}"
    );
}

/// A declared machine (`--gpu 9.0 --driver …`) has its driver's `libcuda.so.1` and NVML, although the files
/// read (a venv copied off a laptop) hold none: the first GPU use is judged on that driver, not "runs on the
/// CPU: libcuda.so.1 is found nowhere" (what the first build said for the command's own `--help` example).
#[test]
fn a_declared_machines_driver_provides_libcuda_although_the_files_hold_none() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    torch(t.path(), &site, "2.15.0");
    wheels(t.path(), &site, &[]);
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!((code, slugs(&doc)), (0, Vec::<String>::new()), "{doc:#}");
    assert_eq!(
        (outcome(&doc, "import"), outcome(&doc, "first_use")),
        ("gpu", "gpu")
    );
    let (code, doc) = import(&root, &[], &["--driver", "535.104.05"]);
    assert_eq!(
        (code, slugs(&doc)),
        (1, vec!["driver-insufficient".to_string()]),
        "{doc:#}"
    );
}
