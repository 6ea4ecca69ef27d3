//! `torch._C`'s module init imports NumPy when it is installed, and `import numpy` opens its own extension
//! modules, whose RPATH `$ORIGIN/../../numpy.libs` brings OpenBLAS. Before this model, the real `import torch`
//! 2.15 with NumPy 2.4 mapped two modules and three libraries cudadiag did not predict
//! (`scripts/import-differential.py`); with it, the prediction equals the real maps for NumPy 1.24.4 to 2.5.2.
//!
//! NumPy is built here as its manylinux wheel lays it out: `numpy/__init__.py`, the extension modules named with
//! CPython 3.11's suffix (more of them than an import opens, as the wheel ships), `_multiarray_umath` needing
//! `libscipy_openblas64_-….so` from `numpy.libs` through its DT_RPATH.

use super::{
    bare, dist_info, driver_and_cache, import, interpreter_and_venv, loaded, outcome, slugs, torch, wheels,
    write,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

const SUFFIX: &str = ".cpython-311-x86_64-linux-gnu.so";

/// NumPy 2.4's extension modules, a few of those its wheel ships beside the two `import numpy` opens.
const V2_4: &[&str] = &[
    "_core/_multiarray_umath",
    "_core/_multiarray_tests",
    "_core/_simd",
    "linalg/_umath_linalg",
    "fft/_pocketfft_umath",
    "random/mtrand",
    "random/_generator",
];

/// NumPy 1.26's, every one `import numpy` opens, and one it does not.
const V1_26: &[&str] = &[
    "core/_multiarray_umath",
    "core/_multiarray_tests",
    "core/_simd",
    "linalg/_umath_linalg",
    "fft/_pocketfft_internal",
    "random/mtrand",
    "random/bit_generator",
    "random/_common",
    "random/_bounded_integers",
    "random/_mt19937",
    "random/_philox",
    "random/_pcg64",
    "random/_sfc64",
    "random/_generator",
];

const OPENBLAS: &str = "libscipy_openblas64_-32a4b2a6.so";

/// NumPy `version` in `site` with `modules`; `numpy.libs` with OpenBLAS unless `openblas` is false.
fn numpy(t: &Path, site: &Path, version: &str, modules: &[&str], openblas: bool) {
    let libs = if openblas {
        site.join("numpy.libs")
    } else {
        t.join("scratch-numpy")
    };
    let blas = bare(&libs, OPENBLAS, &[], &[]);
    let pkg = site.join("numpy");
    for m in modules {
        let (dir, stem) = m.split_once('/').unwrap();
        let umath = stem == "_multiarray_umath";
        let deps: &[&Path] = if umath { &[&blas] } else { &[] };
        let rpath = ["-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/../../numpy.libs"];
        bare(&pkg.join(dir), &format!("{stem}{SUFFIX}"), deps, &rpath);
        write(&pkg.join(dir).join("__init__.py"), "");
    }
    write(&pkg.join("__init__.py"), "");
    dist_info(site, "numpy", version, &[], &["numpy/__init__.py".into()]);
}

/// A venv with torch 2.15, its wheels, the driver, and NumPy as [`numpy`] makes it.
fn venv(t: &Path, version: &str, modules: &[&str], openblas: bool) -> PathBuf {
    let root = t.join("root");
    let site = interpreter_and_venv(&root);
    torch(t, &site, "2.15.0");
    wheels(t, &site, &[]);
    driver_and_cache(&root, &[]);
    numpy(t, &site, version, modules, openblas);
    root
}

/// The NumPy modules loaded, in load order, as `_core/_multiarray_umath`, each checked to be an extension module
/// of that name imported by torch.
fn numpy_loaded(doc: &Value) -> Vec<String> {
    doc["loaded"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| {
            let rel = l["path"]
                .as_str()?
                .split("/numpy/")
                .nth(1)?
                .strip_suffix(SUFFIX)?;
            assert_eq!(l["how"]["kind"], "extension", "{l:#}");
            let module = format!("numpy.{}", rel.replace('/', "."));
            assert_eq!(l["how"]["module"].as_str(), Some(module.as_str()));
            assert_eq!(
                (l["import"].as_str(), l["when"].as_str()),
                (Some("torch"), Some("import"))
            );
            Some(rel.to_string())
        })
        .collect()
}

fn notes(doc: &Value) -> Vec<&str> {
    doc["imports"][0]["import"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}

/// NumPy 2.4 beside torch 2.15: `_multiarray_umath` then `linalg`'s module, right after `torch._C` (whose
/// init imports NumPy), OpenBLAS needed by the first through its RPATH; the modules the wheel ships and
/// `import numpy` leaves for later (`fft`, `random`, `_simd`, the tests') not loaded; no finding, no note.
#[test]
fn numpy_2_4_beside_torch_loads_two_modules_and_openblas_after_torch_c() {
    let t = tempfile::tempdir().unwrap();
    let (code, doc) = import(&venv(t.path(), "2.4.6", V2_4, true), &[], &[]);
    assert_eq!((code, slugs(&doc)), (0, Vec::<String>::new()), "{doc:#}");
    assert_eq!(outcome(&doc, "import"), "gpu");
    assert_eq!(
        numpy_loaded(&doc),
        ["_core/_multiarray_umath", "linalg/_umath_linalg"],
        "{doc:#}"
    );
    let paths: Vec<&str> = doc["loaded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["path"].as_str().unwrap())
        .collect();
    let c = paths
        .iter()
        .position(|p| p.ends_with(&format!("/torch/_C{SUFFIX}")))
        .unwrap();
    assert!(
        paths[c + 1..].iter().take(3).any(|p| p.contains("/numpy/_core/")),
        "{paths:#?}"
    );
    let blas = loaded(&doc, OPENBLAS).unwrap();
    assert_eq!(blas["how"]["kind"], "needed", "{blas:#}");
    let real = blas["realpath"].as_str().unwrap();
    assert!(
        real.ends_with(&format!("/site-packages/numpy.libs/{OPENBLAS}")),
        "{blas:#}"
    );
    assert!(notes(&doc).is_empty(), "{doc:#}");
}

/// NumPy 1.26 imports `core`, `linalg`, `fft` and every `random` module, in its order (LD_DEBUG of the real
/// import); `_simd` stays unopened.
#[test]
fn numpy_1_26_loads_its_thirteen_modules_in_order() {
    let t = tempfile::tempdir().unwrap();
    let (code, doc) = import(&venv(t.path(), "1.26.4", V1_26, true), &[], &[]);
    assert_eq!(code, 0, "{doc:#}");
    let want: Vec<&str> = V1_26.iter().copied().filter(|m| *m != "core/_simd").collect();
    assert_eq!(numpy_loaded(&doc), want, "{doc:#}");
}

/// OpenBLAS gone from `numpy.libs`: `_multiarray_umath` cannot be opened, `import numpy` raises, torch warns
/// and goes on: the import still works on the GPU, nothing of NumPy loaded, a note that says what was raised.
#[test]
fn a_numpy_that_cannot_load_is_a_note_and_torch_still_imports() {
    let t = tempfile::tempdir().unwrap();
    let (code, doc) = import(&venv(t.path(), "2.4.6", V2_4, false), &[], &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(outcome(&doc, "import"), "gpu");
    assert!(numpy_loaded(&doc).is_empty(), "{doc:#}");
    let n = notes(&doc);
    assert_eq!(n.len(), 1, "{n:#?}");
    assert!(
        n[0].starts_with(
            "import numpy (NumPy 2.4.6, /venv/lib/python3.11/site-packages/numpy) raised ImportError: "
        ),
        "{n:#?}"
    );
    assert!(
        n[0].contains(OPENBLAS) && n[0].contains("0 of its modules imported before stay loaded"),
        "{n:#?}"
    );
    assert!(
        n[0].ends_with("warns \"Failed to initialize NumPy\" and goes on without it"),
        "{n:#?}"
    );
}

/// A module missing from the package (a damaged install): `ModuleNotFoundError` after the modules before it.
#[test]
fn a_missing_numpy_module_stops_its_import_after_the_ones_before() {
    let t = tempfile::tempdir().unwrap();
    let (_, doc) = import(&venv(t.path(), "2.4.6", &V2_4[..3], true), &[], &[]);
    assert_eq!(numpy_loaded(&doc), ["_core/_multiarray_umath"], "{doc:#}");
    let n = notes(&doc);
    assert!(
        n.iter().any(|n| n.contains(
            "raised ModuleNotFoundError: No module named 'numpy.linalg._umath_linalg'; 1 of its modules"
        )),
        "{n:#?}"
    );
}

/// A NumPy newer than every measured version is taken as 2.5 and says so.
#[test]
fn a_numpy_newer_than_the_measured_ones_is_judged_as_the_nearest_and_says_so() {
    let t = tempfile::tempdir().unwrap();
    let (code, doc) = import(&venv(t.path(), "3.1.0", V2_4, true), &[], &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(
        numpy_loaded(&doc),
        ["_core/_multiarray_umath", "linalg/_umath_linalg"]
    );
    let n = notes(&doc);
    assert_eq!(n.len(), 1, "{n:#?}");
    assert!(
        n[0].starts_with("NumPy 3.1.0 is outside the versions whose import was measured (1.24 to 2.5)"),
        "{n:#?}"
    );
}
