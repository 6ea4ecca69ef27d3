//! NumPy's import, as a framework's code triggers it: which of its extension modules `import numpy` opens, in
//! order, per NumPy version. `torch._C`'s module init imports NumPy (PyTorch's `torch/csrc/utils/
//! tensor_numpy.cpp`), so every `import torch` with NumPy installed maps them and their libraries (OpenBLAS,
//! libgfortran and libquadmath from `numpy.libs`, through the modules' `$ORIGIN/../../numpy.libs` RPATH).
//! None of them is a CUDA library; modelled so that the process cudadiag predicts is the process that runs.
//!
//! The lists are `LD_DEBUG=files` of `python -c "import numpy"` on PyPI's manylinux wheels (CPython 3.11, and
//! 3.12 for 2.3.5 to 2.5.2), `docs/python-frameworks.md` ("NumPy"): 1.24.4 and 1.26.4 import `core`, `linalg`,
//! `fft` and every `random` module; 2.0.2 `_core/_multiarray_umath`, `_core/_multiarray_tests` and `linalg`;
//! 2.1.3 to 2.5.2 `_core/_multiarray_umath` and `linalg` alone (the rest became lazy). A version outside 1.24 to
//! 2.5 is judged as the nearest measured one, and a note says so.
//!
//! What is read: the `numpy` package Python's path finder takes (the first `sys.path` directory with
//! `numpy/__init__.py`), its distribution's version, and one listing per subdirectory whose module is asked
//! for. No module is run.

use super::extension::Modules;
use super::{Ctx, Process};
use std::path::PathBuf;

/// NumPy 1.x (measured: 1.24.4, 1.26.4).
const V1: &[&str] = &[
    "core/_multiarray_umath",
    "core/_multiarray_tests",
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

/// NumPy 2.0 (measured: 2.0.2).
const V2_0: &[&str] = &[
    "_core/_multiarray_umath",
    "_core/_multiarray_tests",
    "linalg/_umath_linalg",
];

/// NumPy 2.1 and later (measured: 2.1.3, 2.2.6, 2.3.5, 2.4.6, 2.5.2).
const V2_1: &[&str] = &["_core/_multiarray_umath", "linalg/_umath_linalg"];

/// The measured versions' span, for the note on a version outside it.
const OLDEST: [u64; 2] = [1, 24];
const NEWEST: [u64; 2] = [2, 5];

/// The modules `import numpy` of `release` (`[2, 4, 6]`) opens, in order.
fn modules(release: &[u64]) -> &'static [&'static str] {
    match release {
        [0..=1, ..] | [] => V1,
        [2] | [2, 0, ..] => V2_0,
        _ => V2_1,
    }
}

/// The `numpy` package of `sys.path`: the first directory with `numpy/__init__.py`, unless a `numpy.py` module
/// comes first (Python's path finder takes it, and no extension module is opened).
fn package(ctx: &Ctx) -> Option<PathBuf> {
    for d in ctx.python.dirs() {
        let pkg = d.join("numpy");
        if ctx.root.exists(&pkg.join("__init__.py")) {
            return Some(pkg);
        }
        if ctx.root.exists(&d.join("numpy.py")) {
            return None;
        }
    }
    None
}

/// `import numpy` on behalf of the import `by`, into `p`: its extension modules opened by path, in its order.
/// Nothing is loaded when NumPy is not installed. The notes: what the import raised, when a module is missing
/// or `dlopen` refuses one (the modules before it stay loaded: Python never unloads an extension module),
/// followed by `then` (what the importer does about it); and a version outside the measured span.
pub fn import(ctx: &Ctx, by: &str, then: &str, p: &mut dyn Process) -> Vec<String> {
    let Some(pkg) = package(ctx) else {
        return Vec::new();
    };
    let dist = ctx
        .python
        .named("numpy")
        .find(|d| Some(d.site.as_path()) == pkg.parent());
    let version = dist.map_or("(no distribution)", |d| d.version());
    // Without a distribution, the package's layout tells 1.x (`core`) from 2.x (`_core`).
    let release = match dist.and_then(|d| d.release().map(<[u64]>::to_vec)) {
        Some(r) => r,
        None if ctx.root.exists(&pkg.join("_core/__init__.py")) => NEWEST.to_vec(),
        None => OLDEST.to_vec(),
    };
    let mut notes = Vec::new();
    let minor = &release[..release.len().min(2)];
    if minor < OLDEST.as_slice() || minor > NEWEST.as_slice() {
        notes.push(format!(
            "NumPy {version} is outside the versions whose import was measured (1.24 to 2.5): the modules it opens \
             are taken as the nearest measured version's"
        ));
    }
    let mut files = Modules::new(ctx, pkg.clone());
    for (done, rel) in modules(&release).iter().enumerate() {
        let module = format!("numpy.{}", rel.replace('/', "."));
        let raised = match files.file(rel) {
            None => format!("ModuleNotFoundError: No module named '{module}'"),
            Some(file) => match p.load_extension(by, &module, &file) {
                Ok(_) => continue,
                Err(e) => format!("ImportError: {}", e.message),
            },
        };
        notes.push(format!(
            "import numpy (NumPy {version}, {}) raised {raised}; {done} of its modules imported before stay \
             loaded; {then}",
            pkg.display()
        ));
        break;
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::{V1, V2_0, V2_1, modules};

    #[test]
    fn numpy_2_1_and_later_open_two_modules_2_0_three_and_1_x_every_random_module() {
        assert_eq!(modules(&[2, 4, 6]), V2_1);
        assert_eq!(modules(&[2, 1]), V2_1);
        assert_eq!(modules(&[3, 0]), V2_1);
        assert_eq!(modules(&[2, 0, 2]), V2_0);
        assert_eq!(modules(&[2]), V2_0);
        assert_eq!(modules(&[1, 26, 4]), V1);
        assert_eq!(modules(&[1, 16]), V1);
        assert_eq!(V1.len(), 13);
        assert!(V1.iter().all(|m| !m.starts_with("_core/")));
        assert!(V2_0.iter().chain(V2_1).all(|m| !m.starts_with("core/")));
    }
}
