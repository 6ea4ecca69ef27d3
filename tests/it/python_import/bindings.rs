//! `import torch` from 2.12 imports NVIDIA's `cuda.bindings` when it is installed (`torch/cuda/_utils.py`,
//! `try: from cuda.bindings import … except ImportError`): its Cython extension modules, each opened by path,
//! in the order Python imports them. Before this model, the real `import torch` 2.15 mapped eight modules of
//! cuda-bindings 13.5 that cudadiag did not predict (`scripts/import-differential.py`).
//!
//! The package is built here as pip installs it: `cuda/bindings/__init__.py`, `cuda/pathfinder/__init__.py`
//! (a namespace package `cuda`, no `cuda/__init__.py`), and each extension module a bare ELF object without
//! SONAME, as Cython's are, named with CPython 3.11's suffix.

use super::{driver_and_cache, import, interpreter_and_venv, loaded, outcome, slugs, torch, wheels, write};
use crate::support::loader_build as build;
use serde_json::Value;
use std::path::{Path, PathBuf};

const SUFFIX: &str = ".cpython-311-x86_64-linux-gnu.so";

/// cuda-bindings 13.5's modules (the `_internal` backends), with modules `import torch` never imports.
const V13_5: &[&str] = &[
    "driver",
    "cydriver",
    "runtime",
    "cyruntime",
    "nvrtc",
    "cynvrtc",
    "_internal/driver",
    "_internal/runtime",
    "_internal/runtime_ptds",
    "_internal/utils",
    "_internal/nvrtc",
    "_internal/cufile",
];

/// cuda-bindings 13.0's (the `_bindings` backends; `_internal/utils` is there, and nothing imports it).
const V13_0: &[&str] = &[
    "driver",
    "cydriver",
    "runtime",
    "cyruntime",
    "_bindings/cydriver",
    "_bindings/cyruntime",
    "_bindings/cyruntime_ptds",
    "_bindings/cynvrtc",
    "_internal/utils",
    "_internal/nvjitlink",
];

/// The modules torch 2.14 and later imports from cuda-bindings 13.5, in order (`LD_DEBUG=libs` of the real
/// `import torch` 2.15).
const IMPORTED_13_5: &[&str] = &[
    "driver",
    "cydriver",
    "_internal/driver",
    "_internal/utils",
    "runtime",
    "cyruntime",
    "_internal/runtime",
    "_internal/runtime_ptds",
];

/// cuda-bindings in `site` with `modules` (each a bare extension module; the runtime's backends need
/// `librt.so.1`, as the real ones do), and `cuda.pathfinder` unless `pathfinder` is
/// false. `librt.so.1` goes to the root's `/usr/lib/x86_64-linux-gnu`, in the cache [`driver_and_cache`]
/// writes with [`LIBRT`].
fn cuda_bindings(root: &Path, t: &Path, site: &Path, modules: &[&str], pathfinder: bool) {
    let scratch = t.join("scratch-bindings");
    std::fs::create_dir_all(&scratch).unwrap();
    let librt = super::bare(&root.join("usr/lib/x86_64-linux-gnu"), "librt.so.1", &[], &[]);
    let src = build::source(&scratch, "module", "int PyInit_module(void) { return 0; }\n");
    let plain = scratch.join("plain.so");
    let with_rt = scratch.join("with-rt.so");
    for (out, deps) in [
        (&plain, vec![]),
        (&with_rt, vec![librt.to_string_lossy().into_owned()]),
    ] {
        let mut args = vec![
            "-shared".to_string(),
            "-fPIC".into(),
            "-nostdlib".into(),
            "-Wl,--no-as-needed".into(),
            "-o".into(),
            out.to_string_lossy().into_owned(),
            src.to_string_lossy().into_owned(),
        ];
        args.extend(deps);
        build::cc(&args.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let dir = site.join("cuda/bindings");
    for m in modules {
        let file = dir.join(format!("{m}{SUFFIX}"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let rt = m.starts_with("_internal/runtime") || m.starts_with("_bindings/cyruntime");
        let from = if rt { &with_rt } else { &plain };
        std::fs::copy(from, &file).unwrap();
    }
    std::fs::remove_dir_all(&scratch).unwrap();
    write(
        &dir.join("__init__.py"),
        "from cuda.bindings._version import __version__\n",
    );
    write(&dir.join("_version.py"), "__version__ = '13.5.0'\n");
    write(&dir.join("_internal/__init__.py"), "");
    if pathfinder {
        write(&site.join("cuda/pathfinder/__init__.py"), "");
    }
}

/// `librt.so.1`'s `ld.so.cache` entry.
const LIBRT: (&str, &str) = ("librt.so.1", "/usr/lib/x86_64-linux-gnu/librt.so.1");

/// The cuda.bindings modules loaded, in load order, as `_internal/driver`, each checked to be an extension
/// module of that name imported by torch.
fn bindings_loaded(doc: &Value) -> Vec<String> {
    doc["loaded"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| {
            let path = l["path"].as_str()?;
            let rel = path.split("/cuda/bindings/").nth(1)?.strip_suffix(SUFFIX)?;
            assert_eq!(l["how"]["kind"], "extension", "{l:#}");
            assert_eq!(
                l["how"]["module"].as_str(),
                Some(format!("cuda.bindings.{}", rel.replace('/', ".")).as_str())
            );
            assert_eq!(
                (l["import"].as_str(), l["when"].as_str()),
                (Some("torch"), Some("import"))
            );
            Some(rel.to_string())
        })
        .collect()
}

/// A venv with torch `version`, its wheels, the driver and cuda-bindings with `modules`.
fn venv(t: &Path, version: &str, modules: &[&str], pathfinder: bool) -> PathBuf {
    let root = t.join("root");
    let site = interpreter_and_venv(&root);
    torch(t, &site, version);
    wheels(t, &site, &[]);
    driver_and_cache(&root, &[LIBRT]);
    if !modules.is_empty() {
        cuda_bindings(&root, t, &site, modules, pathfinder);
    }
    root
}

/// torch 2.15 with cuda-bindings 13.5: the eight modules the real `import torch` maps, in its order, each its
/// own extension module; `_internal/runtime`'s DT_NEEDED `librt.so.1` resolved as any object's; no CUDA library
/// opened by them, no finding, and the modules torch does not import (NVRTC's, cuFile's) not loaded.
#[test]
fn cuda_bindings_beside_torch_2_15_loads_its_extension_modules_in_pythons_order() {
    let t = tempfile::tempdir().unwrap();
    let root = venv(t.path(), "2.15.0", V13_5, true);
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!((code, slugs(&doc)), (0, Vec::<String>::new()), "{doc:#}");
    assert_eq!(
        (outcome(&doc, "import"), outcome(&doc, "first_use")),
        ("gpu", "gpu")
    );
    assert_eq!(bindings_loaded(&doc), IMPORTED_13_5, "{doc:#}");
    let rt = loaded(&doc, "librt.so.1").unwrap();
    assert_eq!(rt["how"]["kind"], "needed", "{rt:#}");
    assert!(
        rt["how"]["needed_by"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/cuda/bindings/_internal/runtime{SUFFIX}")),
        "{rt:#}"
    );
    assert!(
        doc["imports"][0]["import"]["notes"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

/// Without cuda-bindings nothing else changes: the same objects, less the modules and what only they need.
#[test]
fn without_cuda_bindings_torch_loads_the_same_objects_less_its_modules() {
    let with = tempfile::tempdir().unwrap();
    let (_, a) = import(&venv(with.path(), "2.15.0", V13_5, true), &[], &[]);
    let without = tempfile::tempdir().unwrap();
    let (code, b) = import(&venv(without.path(), "2.15.0", &[], true), &[], &[]);
    assert_eq!((code, slugs(&b)), (0, Vec::<String>::new()), "{b:#}");
    let names = |doc: &Value, root: &Path| -> Vec<String> {
        let root = root.to_string_lossy().into_owned();
        doc["loaded"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["path"].as_str().unwrap().replace(&root, ""))
            .collect()
    };
    let with_names = names(&a, with.path());
    assert_eq!(bindings_loaded(&a).len(), IMPORTED_13_5.len(), "{a:#}");
    let less: Vec<String> = with_names
        .into_iter()
        .filter(|p| !p.contains("/cuda/bindings/") && !p.ends_with("/librt.so.1"))
        .collect();
    assert_eq!(less, names(&b, without.path()));
}

/// The version gate, from torch's `torch/cuda/_utils.py` at its tags: 2.11 imports no cuda.bindings; 2.12 and
/// 2.13 import `runtime` alone, whose module loads first and then `driver`'s chain (runtime's types come from
/// it); from 2.14 `driver` comes first.
#[test]
fn torch_imports_cuda_bindings_from_2_12_runtime_alone_until_2_14() {
    let t = tempfile::tempdir().unwrap();
    let (_, doc) = import(&venv(t.path(), "2.11.0", V13_5, true), &[], &[]);
    assert_eq!(outcome(&doc, "import"), "gpu");
    assert!(bindings_loaded(&doc).is_empty(), "{doc:#}");
    let t = tempfile::tempdir().unwrap();
    let (_, doc) = import(&venv(t.path(), "2.13.0", V13_5, true), &[], &[]);
    assert_eq!(
        bindings_loaded(&doc),
        [
            "runtime",
            "driver",
            "cydriver",
            "_internal/driver",
            "_internal/utils",
            "cyruntime",
            "_internal/runtime",
            "_internal/runtime_ptds"
        ],
        "{doc:#}"
    );
}

/// cuda-bindings 13.0 to 13.2 have the older backends (`_bindings/cydriver`, `_bindings/cyruntime` and its
/// `_ptds` twin) and no `_internal/driver`: those are imported, `_internal/utils` is not (the real process with
/// cuda-bindings 13.0.3 maps seven modules).
#[test]
fn older_cuda_bindings_load_their_bindings_backends_and_not_internal_utils() {
    let t = tempfile::tempdir().unwrap();
    let (_, doc) = import(&venv(t.path(), "2.15.0", V13_0, false), &[], &[]);
    assert_eq!(
        bindings_loaded(&doc),
        [
            "driver",
            "cydriver",
            "_bindings/cydriver",
            "runtime",
            "cyruntime",
            "_bindings/cyruntime",
            "_bindings/cyruntime_ptds"
        ],
        "{doc:#}"
    );
}

/// A module `dlopen` refuses (`_internal/runtime`'s `librt.so.1` found nowhere) raises an `ImportError` in
/// `torch.cuda._utils`, which torch catches: `import torch` works, the modules imported before stay mapped,
/// the failed one is not, and a note says so. Without `cuda.pathfinder` the driver's backend stops after
/// `_internal/utils` the same way. (Both measured with the real `import torch` 2.15.)
#[test]
fn a_cuda_bindings_module_that_fails_to_load_is_an_import_error_torch_catches() {
    let t = tempfile::tempdir().unwrap();
    let root = venv(t.path(), "2.15.0", V13_5, true);
    std::fs::remove_file(root.join("usr/lib/x86_64-linux-gnu/librt.so.1")).unwrap();
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!((code, outcome(&doc, "import")), (0, "gpu"), "{doc:#}");
    assert_eq!(bindings_loaded(&doc), IMPORTED_13_5[..6], "{doc:#}");
    let notes = doc["imports"][0]["import"]["notes"].to_string();
    assert!(
        notes.contains("raised ImportError: librt.so.1: cannot open shared object file")
            && notes.contains("6 of its modules imported before stay loaded"),
        "{notes}"
    );
    let t = tempfile::tempdir().unwrap();
    let (_, doc) = import(&venv(t.path(), "2.15.0", V13_5, false), &[], &[]);
    assert_eq!(outcome(&doc, "import"), "gpu");
    assert_eq!(bindings_loaded(&doc), IMPORTED_13_5[..4], "{doc:#}");
    let notes = doc["imports"][0]["import"]["notes"].to_string();
    assert!(notes.contains("No module named 'cuda.pathfinder'"), "{notes}");
}

/// Python imports an extension module only by its own suffixes (`.cpython-311-…so`, `.abi3.so`, `.so`):
/// cuda-bindings built for CPython 3.12 in a 3.11 venv is a `ModuleNotFoundError` torch catches, nothing of it
/// loaded; the same modules on a second `sys.path` entry (`PYTHONPATH`, a portion of the namespace package
/// `cuda`) are imported from there.
#[test]
fn cuda_bindings_is_found_as_python_finds_it_by_suffix_and_namespace_portion() {
    let t = tempfile::tempdir().unwrap();
    let root = venv(t.path(), "2.15.0", V13_5, true);
    let site = root.join("venv/lib/python3.11/site-packages");
    for m in V13_5 {
        let file = site.join(format!("cuda/bindings/{m}{SUFFIX}"));
        std::fs::rename(&file, file.to_string_lossy().replace("-311-", "-312-")).unwrap();
    }
    let (code, doc) = import(&root, &[], &[]);
    assert_eq!((code, outcome(&doc, "import")), (0, "gpu"), "{doc:#}");
    assert!(bindings_loaded(&doc).is_empty(), "{doc:#}");
    let notes = doc["imports"][0]["import"]["notes"].to_string();
    assert!(
        notes.contains("No module named 'cuda.bindings.driver'"),
        "{notes}"
    );
    // The same package moved to /extra, given as PYTHONPATH; cuda.pathfinder stays in the venv.
    for m in V13_5 {
        let file = site.join(format!("cuda/bindings/{m}{SUFFIX}"));
        std::fs::rename(file.to_string_lossy().replace("-311-", "-312-"), &file).unwrap();
    }
    std::fs::create_dir_all(root.join("extra/cuda")).unwrap();
    std::fs::rename(site.join("cuda/bindings"), root.join("extra/cuda/bindings")).unwrap();
    let (_, doc) = import(&root, &["PYTHONPATH=/extra"], &[]);
    assert_eq!(bindings_loaded(&doc), IMPORTED_13_5, "{doc:#}");
    assert!(
        loaded(&doc, &format!("driver{SUFFIX}")).unwrap()["path"]
            .as_str()
            .unwrap()
            .starts_with("/extra/cuda/bindings/")
    );
}

/// cuda-bindings 12.8 has a third layout: `_lib/utils` after `driver`, the driver's `_bindings/cydriver`, and
/// the runtime's backend `_lib/cyruntime/cyruntime` after its `_lib/cyruntime/utils` (`LD_DEBUG=libs` of the
/// real 12.8.0 wheel).
#[test]
fn cuda_bindings_12_8_loads_its_lib_modules_in_their_order() {
    let v12_8 = [
        "driver",
        "cydriver",
        "runtime",
        "cyruntime",
        "_bindings/cydriver",
        "_bindings/cynvrtc",
        "_internal/utils",
        "_lib/utils",
        "_lib/cyruntime/utils",
        "_lib/cyruntime/cyruntime",
    ];
    let t = tempfile::tempdir().unwrap();
    let (_, doc) = import(&venv(t.path(), "2.15.0", &v12_8, false), &[], &[]);
    assert_eq!(
        bindings_loaded(&doc),
        [
            "driver",
            "_lib/utils",
            "cydriver",
            "_bindings/cydriver",
            "runtime",
            "cyruntime",
            "_lib/cyruntime/utils",
            "_lib/cyruntime/cyruntime"
        ],
        "{doc:#}"
    );
}
