//! Python in container images (issue 31): `inspect --image IMG --import torch`, an image whose program is
//! `python -m torch.distributed.run` or `python train.py`, and `fleet --artifact ENV` for a venv. The images
//! hold the synthetic torch venv of `python_import` (an interpreter, `pyvenv.cfg`, torch's layout, the NVIDIA
//! wheels) over the test machine's libc, as a `docker save` tarball; the node is declared (`--gpu`,
//! `--driver`) and the NVIDIA Container Toolkit's mounts bring its `libcuda.so.1` into the container.
//!
//! Before this, `inspect --image` judged a Python entrypoint by the interpreter's ELF tree alone ("will run"
//! whatever its venv held), had no `--import`, and `fleet --artifact` read a venv as a directory of ELF files.

use crate::python_import::{dist_info, interpreter_and_venv, torch, wheels};
use crate::support::image::{Image, Layer, Pack, system_layer};

use crate::support::cli;
use serde_json::{Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Every file, link and directory under `dir` as a layer, paths relative to it, modes kept.
fn layer_of(dir: &Path) -> Layer {
    fn walk(l: Layer, dir: &Path, base: &Path) -> Layer {
        let mut l = l;
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            let rel = p.strip_prefix(base).unwrap().to_str().unwrap().to_string();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                let to = std::fs::read_link(&p).unwrap();
                l = l.symlink(&rel, to.to_str().unwrap());
            } else if meta.is_dir() {
                l = walk(l.dir(&rel), &p, base);
            } else {
                use std::os::unix::fs::PermissionsExt;
                let bytes = std::fs::read(&p).unwrap();
                l = if meta.permissions().mode() & 0o111 != 0 {
                    l.exe(&rel, &bytes)
                } else {
                    l.file(&rel, &bytes)
                };
            }
        }
        l
    }
    walk(Layer::new(), dir, dir)
}

/// A torch 2.15 venv at `/venv` (its NVIDIA wheels but `missing`) in a root under `t`: the root.
fn venv_root(t: &Path, missing: &[&str]) -> PathBuf {
    let root = t.join("root");
    let site = interpreter_and_venv(&root);
    torch(t, &site, "2.15.0");
    wheels(t, &site, missing);
    root
}

/// The image of `root` over the system layer, with `VIRTUAL_ENV=/venv` and its `PATH` first, written as a
/// `docker save` tarball under `t`; `cuda` sets the variables NVIDIA's CUDA images set for the toolkit.
fn image_of(t: &Path, root: &Path, cuda: bool, program: &[&str]) -> PathBuf {
    let mut img = Image::new(vec![system_layer(), layer_of(root)])
        .env("VIRTUAL_ENV=/venv")
        .env("PATH=/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    if cuda {
        img = img.cuda13();
    }
    if !program.is_empty() {
        img = img.entrypoint(program);
    }
    let out = t.join("app.tar");
    img.docker_save(&out, Pack::None);
    out
}

/// `cudadiag inspect --image IMG --gpu 9.0 --driver 580.65.06 ARGS --format json`: exit code and report.
fn inspect(img: &Path, args: &[&str]) -> (i32, Value) {
    cli::run_json(inspect_args(img, args, "json"))
}

/// `inspect --image IMG --gpu 9.0 --driver 580.65.06 ARGS --format FORMAT`.
fn inspect_args(img: &Path, args: &[&str], format: &str) -> Vec<OsString> {
    let mut all: Vec<OsString> = vec!["inspect".into(), "--image".into(), img.into()];
    let rest = [
        &["--gpu", "9.0", "--driver", "580.65.06"],
        args,
        &["--format", format],
    ]
    .concat();
    all.extend(rest.iter().map(OsString::from));
    all
}

/// `cudadiag fleet --format json FLAG WHAT NODES`: exit code and report.
fn fleet(flag: &str, what: &Path, nodes: &Path) -> (i32, Value) {
    cli::run_json([
        OsString::from("fleet"),
        "--format".into(),
        "json".into(),
        flag.into(),
        what.into(),
        nodes.into(),
    ])
}

/// The errors and warnings.
fn slugs(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "note")
        .map(|f| f["slug"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The outcome kind of the first import's `step` (`import`, `first_use`).
fn outcome<'d>(doc: &'d Value, step: &str) -> &'d str {
    doc["image"]["imports"]["detail"]["imports"][0][step]["outcome"]["kind"]
        .as_str()
        .unwrap_or("none")
}

/// The healthy venv in a CUDA image on an H200 node with driver 580: the toolkit mounts the driver's
/// `libcuda.so.1`, torch preloads its wheels from the venv, the first GPU use finds the driver: no finding,
/// the verdict runs, and the interpreter judged is the image's `VIRTUAL_ENV`.
#[test]
fn image_import_torch_healthy_venv_uses_the_gpu_on_a_node_with_the_driver() {
    let t = tempfile::tempdir().unwrap();
    let root = venv_root(t.path(), &[]);
    let img = image_of(t.path(), &root, true, &["/venv/bin/python3", "-c", "pass"]);
    let (code, doc) = inspect(&img, &["--import", "torch"]);
    assert_eq!((code, slugs(&doc)), (0, Vec::<String>::new()), "{doc:#}");
    // The interpreter is judged by its imports: it runs, and no note says there is nothing to run on a GPU
    // (it said "no verdict: no device code of its own" above a `no-device-code` note).
    assert_eq!(
        (
            doc["verdicts"][0]["outcome"].as_str(),
            doc["findings"].as_array().map(Vec::len)
        ),
        (Some("runs"), Some(0)),
        "{:#}",
        doc["verdicts"]
    );
    assert!(
        doc["verdicts"][0]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("`import torch` uses the GPU"),
        "{:#}",
        doc["verdicts"]
    );
    let im = &doc["image"]["imports"];
    assert_eq!(
        (im["python"].as_str(), im["because"].as_str()),
        (Some("/venv"), Some("VIRTUAL_ENV")),
        "{im:#}"
    );
    assert_eq!(im["modules"], json!(["torch"]));
    assert_eq!(
        (outcome(&doc, "import"), outcome(&doc, "first_use")),
        ("gpu", "gpu"),
        "{im:#}"
    );
    // The driver's library is the toolkit's mount, at the image's own path (not the unpacked tree's).
    let loaded = im["detail"]["loaded"].as_array().unwrap();
    let cuda = loaded
        .iter()
        .find(|l| l["soname"] == "libcuda.so.1")
        .expect("libcuda loaded");
    assert!(
        cuda["path"]
            .as_str()
            .unwrap()
            .starts_with("/usr/lib/x86_64-linux-gnu/"),
        "{cuda:#}"
    );
    let lt = loaded
        .iter()
        .find(|l| l["soname"] == "libcublasLt.so.13")
        .unwrap();
    assert_eq!(
        lt["path"], "/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublasLt.so.13",
        "{im:#}"
    );
    cli::contract(&doc);
}

/// The same image without the cuDNN wheel: `import torch` fails, naming the library.
#[test]
fn image_import_torch_with_a_missing_wheel_fails_naming_it() {
    let t = tempfile::tempdir().unwrap();
    let root = venv_root(t.path(), &["libcudnn.so.9"]);
    let img = image_of(t.path(), &root, true, &["/venv/bin/python3", "-c", "pass"]);
    let (code, doc) = inspect(&img, &["--import", "torch"]);
    assert_eq!(code, 1, "{doc:#}");
    let f = cli::finding(&doc, "library-not-found");
    assert!(f["message"].as_str().unwrap().contains("libcudnn.so.9"), "{f:#}");
    assert_eq!(outcome(&doc, "import"), "fails");
    assert!(
        doc["verdicts"]
            .as_array()
            .is_none_or(|v| v.iter().all(|v| v["outcome"] != "runs")),
        "{doc:#}"
    );
    cli::contract(&doc);
}

/// An image that does not ask the toolkit for GPUs (no `NVIDIA_VISIBLE_DEVICES`), run with no GPU request:
/// nothing mounts the driver's `libcuda.so.1`, so torch imports and runs on the CPU: the GPU is not used.
#[test]
fn image_import_torch_without_the_toolkits_injection_falls_back_to_the_cpu() {
    let t = tempfile::tempdir().unwrap();
    let root = venv_root(t.path(), &[]);
    let img = image_of(t.path(), &root, false, &["/venv/bin/python3", "-c", "pass"]);
    let (code, doc) = inspect(&img, &["--import", "torch", "--gpus", "none"]);
    assert_eq!(code, 1, "{doc:#}");
    assert!(
        slugs(&doc).contains(&"framework-cpu-fallback".to_string()),
        "{doc:#}"
    );
    assert_eq!(
        (outcome(&doc, "import"), outcome(&doc, "first_use")),
        ("gpu", "cpu_fallback")
    );
    // The near miss: the same image run with every GPU gets the driver.
    let (code, doc) = inspect(&img, &["--import", "torch", "--gpus", "all"]);
    assert_eq!((code, slugs(&doc)), (0, Vec::<String>::new()), "{doc:#}");
}

/// `ENTRYPOINT ["python", "-m", "torch.distributed.run", "train.py"]`: judged as `import torch` in the venv
/// the entrypoint's interpreter belongs to. With the cuDNN wheel missing it fails; before, the interpreter's
/// ELF tree alone was judged and it "ran".
#[test]
fn image_python_m_torch_distributed_run_entrypoint_is_judged_as_import_torch() {
    let t = tempfile::tempdir().unwrap();
    let root = venv_root(t.path(), &["libcudnn.so.9"]);
    let program = [
        "python3",
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "8",
        "train.py",
    ];
    let img = image_of(t.path(), &root, true, &program);
    let (code, doc) = inspect(&img, &[]);
    let im = &doc["image"]["imports"];
    assert_eq!(im["modules"], json!(["torch"]), "{doc:#}");
    assert_eq!(im["python"], "/venv/bin/python3");
    assert!(
        im["why"].as_str().unwrap().contains("-m torch.distributed.run"),
        "{im:#}"
    );
    assert_eq!(code, 1, "{doc:#}");
    assert!(slugs(&doc).contains(&"library-not-found".to_string()));
    cli::contract(&doc);
}

/// `python train.py`: the script is not read; the frameworks installed in the interpreter's environment are
/// judged (torch here), and the report says so.
#[test]
fn image_python_script_entrypoint_judges_the_installed_frameworks_and_says_so() {
    let t = tempfile::tempdir().unwrap();
    let root = venv_root(t.path(), &[]);
    let img = image_of(t.path(), &root, true, &["python3", "train.py"]);
    let (code, doc) = inspect(&img, &[]);
    assert_eq!((code, slugs(&doc)), (0, Vec::<String>::new()), "{doc:#}");
    let im = &doc["image"]["imports"];
    assert_eq!(im["modules"], json!(["torch"]), "{doc:#}");
    let why = im["why"].as_str().unwrap();
    assert!(
        why.contains("train.py") && why.contains("installed") && why.contains("--import"),
        "{why}"
    );
    assert_eq!(outcome(&doc, "first_use"), "gpu");
}

/// The torch venv (its NVIDIA wheels but `missing`) in a root under `t`, readable from this machine's own
/// root as `fleet --artifact` reads it: its `pyvenv.cfg` and `bin/python3` name the base interpreter by its
/// host path. The root.
fn host_venv(t: &Path, missing: &[&str]) -> PathBuf {
    let root = venv_root(t, missing);
    let base = root.join("usr/bin");
    std::fs::write(
        root.join("venv/pyvenv.cfg"),
        format!(
            "home = {}\ninclude-system-site-packages = false\nversion = 3.11.7\n",
            base.display()
        ),
    )
    .unwrap();
    std::fs::remove_file(root.join("venv/bin/python3")).unwrap();
    std::os::unix::fs::symlink(base.join("python3.11"), root.join("venv/bin/python3")).unwrap();
    root
}

/// `t/nodes`, holding the H200 node's snapshot once per `(name, driver version, LD_LIBRARY_PATH)`.
fn nodes(t: &Path, each: &[(&str, &str, Option<&str>)]) -> PathBuf {
    let dir = t.join("nodes");
    std::fs::create_dir_all(&dir).unwrap();
    let h200 = crate::fleet::snapshot("h200-nix-open-580");
    for (name, driver, path) in each {
        let mut s = h200.clone();
        s["facts"]["host"]["driver"]["version"] = json!(driver);
        if let Some(p) = path {
            s["facts"]["host"]["env"]["vars"]["LD_LIBRARY_PATH"] = json!(p);
        }
        std::fs::write(dir.join(format!("{name}.json")), serde_json::to_vec(&s).unwrap()).unwrap();
    }
    dir
}

/// `fleet --artifact ROOT/venv` over [`nodes`]`(t, each)`: exit code, [`grouped`] nodes, report.
fn artifact_on(t: &Path, root: &Path, each: &[(&str, &str, Option<&str>)]) -> (i32, String, Value) {
    let (code, doc) = fleet("--artifact", &root.join("venv"), &nodes(t, each));
    (code, grouped(&doc), doc)
}

/// The prediction for `node` in `fleet`'s JSON report.
fn prediction<'d>(doc: &'d Value, node: &str) -> &'d Value {
    let nodes = doc["per_node"].as_array().unwrap();
    let n = nodes.iter().find(|n| n["name"] == node);
    &n.unwrap_or_else(|| panic!("no node {node} in {doc:#}"))["prediction"]
}

/// The nodes of `fleet`'s JSON report that run and those that fail: `runs: a, b; fails: c`.
fn grouped(doc: &Value) -> String {
    let names = |kind: &str| -> String {
        let nodes = doc["artifact"]["outcomes"][kind].as_array();
        let names: Vec<&str> = nodes.into_iter().flatten().filter_map(Value::as_str).collect();
        names.join(", ")
    };
    format!("runs: {}; fails: {}", names("runs"), names("fails"))
}

/// `fleet --artifact VENV` over two nodes' snapshots: an H200 with driver 580 runs the venv's torch; the
/// same node with a CUDA 12.4 driver fails torch's driver check. Grouped by outcome.
#[test]
fn fleet_artifact_venv_groups_nodes_by_import_outcome() {
    let t = tempfile::tempdir().unwrap();
    let root = host_venv(t.path(), &[]);
    let each = [("new", "580.65.06", None), ("old", "550.90.07", None)];
    let (code, groups, doc) = artifact_on(t.path(), &root, &each);
    assert_eq!((code, groups.as_str()), (1, "runs: new; fails: old"), "{doc:#}");
    assert_eq!(prediction(&doc, "old")["codes"][0], "driver-insufficient");
}

/// `fleet --artifact VENV` over two nodes alike but for the `LD_LIBRARY_PATH` their reports recorded (a job's
/// `module load cudnn`): the venv lacks the cuDNN wheel, and one node's `LD_LIBRARY_PATH` names a directory
/// with cuDNN 9, where torch's `_C` finds it; the other's names none. Each node is judged with its own: it
/// runs on the first and fails on the second, naming the library. Before, nodes with the same driver and
/// GPUs shared one judgement made with no `LD_LIBRARY_PATH`, and both failed.
#[test]
fn fleet_artifact_venv_judges_each_node_with_the_ld_library_path_its_report_recorded() {
    let t = tempfile::tempdir().unwrap();
    let root = host_venv(t.path(), &["libcudnn.so.9"]);
    let cudnn = t.path().join("modules/cudnn-9/lib");
    crate::python_import::cudnn(&cudnn, "");
    let elsewhere = t.path().join("modules/nccl/lib");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let each = [
        ("with-cudnn", "580.65.06", cudnn.to_str()),
        ("without", "580.65.06", elsewhere.to_str()),
    ];
    let (code, groups, doc) = artifact_on(t.path(), &root, &each);
    let want = (1, "runs: with-cudnn; fails: without");
    assert_eq!((code, groups.as_str()), want, "{doc:#}");
    let without = prediction(&doc, "without");
    assert_eq!(without["codes"][0], "library-not-found", "{without:#}");
    assert!(
        without["reason"].as_str().unwrap().contains("libcudnn.so.9"),
        "{without:#}"
    );
}

/// `fleet --artifact VENV` where the venv lacks the cuDNN wheel and one node's jobs run with
/// `LD_PRELOAD=.../libcudnn.so.9` (recorded in its report): ld.so maps it before the interpreter's own
/// libraries, torch's `_C` finds the soname already in the process, and `import torch` works there; the node
/// without it fails, naming the library. Before, LD_PRELOAD was recorded but not used, and both failed.
#[test]
fn fleet_artifact_venv_judges_each_node_with_the_ld_preload_its_report_recorded() {
    let t = tempfile::tempdir().unwrap();
    let root = host_venv(t.path(), &["libcudnn.so.9"]);
    let cudnn = t.path().join("modules/cudnn-9/lib");
    crate::python_import::cudnn(&cudnn, "");
    let dir = t.path().join("nodes");
    std::fs::create_dir_all(&dir).unwrap();
    let h200 = crate::fleet::snapshot("h200-nix-open-580");
    for (name, preload) in [("preloads", Some(cudnn.join("libcudnn.so.9"))), ("plain", None)] {
        let mut s = h200.clone();
        if let Some(p) = preload {
            s["facts"]["host"]["env"]["vars"]["LD_PRELOAD"] = json!(p.to_str().unwrap());
        }
        std::fs::write(dir.join(format!("{name}.json")), serde_json::to_vec(&s).unwrap()).unwrap();
    }
    let (code, doc) = fleet("--artifact", &root.join("venv"), &dir);
    assert_eq!(
        (code, grouped(&doc).as_str()),
        (1, "runs: preloads; fails: plain"),
        "{doc:#}"
    );
    let plain = prediction(&doc, "plain");
    assert_eq!(plain["codes"][0], "library-not-found", "{plain:#}");
}

/// `fleet --image` of an image whose program is `python -m torch.distributed.run`, on two nodes: the image asks
/// for no CUDA version (no `NVIDIA_REQUIRE_CUDA`), so the toolkit starts it on both; torch's own driver check
/// fails on the node with a CUDA 12.4 driver. Before, both nodes judged the interpreter alone.
#[test]
fn fleet_image_python_entrypoint_is_judged_by_its_imports_on_each_node() {
    let t = tempfile::tempdir().unwrap();
    let root = venv_root(t.path(), &[]);
    let img = Image::new(vec![system_layer(), layer_of(&root)])
        .env("NVIDIA_VISIBLE_DEVICES=all")
        .env("NVIDIA_DRIVER_CAPABILITIES=compute,utility")
        .entrypoint(&["/venv/bin/python3", "-m", "torch.distributed.run", "train.py"]);
    let tar = t.path().join("app.tar");
    img.docker_save(&tar, Pack::None);
    let nodes = t.path().join("nodes");
    std::fs::create_dir_all(&nodes).unwrap();
    let good = crate::fleet::snapshot("h200-nix-open-580");
    let mut old = good.clone();
    old["facts"]["host"]["driver"]["version"] = json!("550.90.07");
    std::fs::write(nodes.join("new.json"), serde_json::to_vec(&good).unwrap()).unwrap();
    std::fs::write(nodes.join("old.json"), serde_json::to_vec(&old).unwrap()).unwrap();
    let (code, doc) = fleet("--image", &tar, &nodes);
    assert_eq!(code, 1, "{doc:#}");
    let old = prediction(&doc, "old");
    assert_eq!(
        (old["outcome"].as_str(), old["codes"][0].as_str()),
        (Some("fails"), Some("driver-insufficient")),
        "{old:#}"
    );
    assert!(old["reason"].as_str().unwrap().contains("torch"), "{old:#}");
    // The interpreter is judged by its imports on each node, as `inspect --image` judges it: where torch uses
    // the GPU it runs (it read "no device code of its own", the interpreter's ELF alone).
    assert_eq!(prediction(&doc, "new")["outcome"], "runs", "{doc:#}");
}

/// `ENTRYPOINT ["python3", "train.py"]` in an image that sets `JAX_PLATFORMS=cuda` and holds JAX with a
/// partial CUDA plugin (its distribution installed, its `_versions` module missing): the plugin's
/// `initialize()` raises, and because `JAX_PLATFORMS=cuda` asks for CUDA, JAX raises `Unable to initialize
/// backend 'cuda'` at its first GPU use instead of falling back to the CPU. No failed load, no module missing:
/// no finding came of it, and the interpreter's verdict was "no verdict: no device code of its own" (exit 0)
/// above an import that raises. Now it fails, naming the exception, in JSON and in the human headline. The
/// near miss, without `JAX_PLATFORMS`: JAX falls back to the CPU, `framework-cpu-fallback`, no raise.
#[test]
fn image_python_import_that_raises_with_no_finding_of_its_own_fails_naming_the_exception() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let site = interpreter_and_venv(&root);
    dist_info(&site, "jax", "0.10.2", &[], &["jax/__init__.py".into()]);
    dist_info(&site, "jax-cuda12-plugin", "0.10.2", &[], &[]);
    let image = |platforms: Option<&str>| {
        let mut img = Image::new(vec![system_layer(), layer_of(&root)])
            .env("VIRTUAL_ENV=/venv")
            .env("PATH=/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .cuda13()
            .entrypoint(&["python3", "train.py"]);
        if let Some(p) = platforms {
            img = img.env(&format!("JAX_PLATFORMS={p}"));
        }
        let tar = t.path().join(format!("app-{}.tar", platforms.unwrap_or("unset")));
        img.docker_save(&tar, Pack::None);
        tar
    };
    let raised = "RuntimeError: Unable to initialize backend 'cuda'";
    let tar = image(Some("cuda"));
    let (code, doc) = inspect(&tar, &[]);
    assert_eq!(
        (code, slugs(&doc)),
        (1, vec!["framework-raises".to_string()]),
        "{doc:#}"
    );
    let f = cli::finding(&doc, "framework-raises");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("`import jax` will fail at its first GPU use: {raised}")),
        "{f:#}"
    );
    // The fix in JAX's terms: the plugin's wheels reinstalled, pinned to the installed JAX.
    assert!(
        f["help"]
            .as_str()
            .unwrap()
            .contains("-m pip install --force-reinstall \"jax[cuda12]==0.10.2\""),
        "{f:#}"
    );
    let v = &doc["verdicts"][0];
    assert_eq!(
        (v["outcome"].as_str(), v["codes"][0].as_str()),
        (Some("fails"), Some("framework-raises")),
        "{v:#}"
    );
    assert!(v["reason"].as_str().unwrap().contains(raised), "{v:#}");
    cli::contract(&doc);
    let (code, out, _) = cli::run(inspect_args(&tar, &[], "human"));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "/usr/bin/python3.11 on CC 9.0 GPU: will fail: `import jax` will fail at its first GPU use: {raised}"
        )),
        "{out}"
    );
    assert!(!out.contains("no verdict"), "{out}");
    // The near miss: without JAX_PLATFORMS the plugin's failure is logged and JAX runs on the CPU.
    let (code, doc) = inspect(&image(None), &[]);
    assert_eq!(
        (code, slugs(&doc)),
        (1, vec!["framework-cpu-fallback".to_string()]),
        "{doc:#}"
    );
}
