//! A file of a Python framework's distribution (`torch/_C*.so`, `torch/lib/libtorch_cuda.so`, a JAX plugin's
//! `.so`, CuPy's `_core/*.so`, ONNX Runtime's CUDA provider: the `.so` a user meets in an error), judged as
//! that framework loads it.
//!
//! Such a file is never loaded alone. The framework's Python code loads libraries by path before it (torch's
//! `__init__` preloads its CUDA wheels from `sys.path`, JAX's plugin the `nvidia.*` packages, CuPy asks
//! cuda-pathfinder, ONNX Runtime maps its provider bridge and, when called, `preload_dlls()` the wheels), and
//! the file's DT_NEEDED entries then find those sonames loaded: the loader does not search for them again. So
//! when the file lies in a `sys.path` entry of a Python environment and belongs to the installed distribution
//! of a modelled framework, that framework's import and first GPU use are modelled in one process of the
//! environment's interpreter ([`super::process::PyProcess`], as `cudadiag import` does), and what that process
//! loaded before the file becomes the [`Earlier`] objects the loader resolves the file after
//! ([`crate::loader::resolve_after`]). A file outside every environment, or of a framework without a model, is
//! judged alone. `docs/python-frameworks.md`, "A framework's own files".

use super::process::PyProcess;
use crate::facts::loader::FrameworkLoad;
use crate::loader::{Earlier, Files};
use crate::python::frameworks::env::{Chosen, choose, collect_expecting, request};
use crate::python::frameworks::{
    Ctx, Framework, Loaded, LoadedHow, Outcome, Process, PyEnv, Selected, When, normalise, select,
};
use crate::python::syspath::Target;
use crate::system::{Env, Root};
use std::path::{Component, Path, PathBuf};

/// How the framework of `known` (`crate::imports::known`) that owns the file at `file` (a machine path) loads
/// it: the model's facts for the report and the objects its process holds before the file, in load order
/// (none for a file it loads first). `None` when the file belongs to no modelled framework's distribution on
/// the `sys.path` of a Python environment of the root. `files` is shared with the file's own resolution.
pub fn loading(
    root: &Root,
    env: &Env,
    file: &Path,
    known: &[&'static dyn Framework],
    files: &mut Files,
) -> Option<(FrameworkLoad, Vec<Earlier>)> {
    let real = root.resolve(file).ok()?;
    // The environment (every distribution's `METADATA`) is read while the owner is looked for in `RECORD`s,
    // a few milliseconds each on a venv of two hundred distributions, for a file in a framework's package
    // directory (`site-packages/torch/lib/…`): that `site-packages` is the owner's but for a file no `RECORD`
    // lists. Its answer is used only when it is the owner's directory.
    let guess = framework_site(&real, known);
    let (owned, guessed) = std::thread::scope(|s| {
        let guessed = guess
            .as_deref()
            .map(|site| s.spawn(move || environment(root, env, site)));
        (owner(root, &real, known), guessed.map(crate::parallel::join))
    });
    let (site, key) = owned?;
    let fw = known
        .iter()
        .copied()
        .find(|fw| fw.distributions().iter().any(|n| normalise(n) == key))?;
    let py = match guessed {
        Some(py) if guess.as_deref() == Some(site.as_path()) => py,
        _ => environment(root, env, &site),
    }?;
    // `import` finds the first copy on sys.path: a copy of the distribution shadowed by an earlier one is not
    // what the framework loads.
    if !py.dist(&key).is_some_and(|d| same_dir(root, &d.site, &site)) {
        return None;
    }
    let selecting = fw.distributions().iter().find_map(|n| py.dist(n))?;
    let model = select(fw.module(), selecting.version(), fw.models())?;
    let real = real.to_string_lossy();
    let (loaded, fix) = framework_process(root, env, &py, fw, &model, &real, files)?;
    let earlier = before(&loaded, &real, file);
    let dist = py.dist(&key)?;
    let load = FrameworkLoad {
        module: fw.module().to_string(),
        installed: format!("{} {}", dist.name(), dist.version()),
        model: fw.models()[model.index].about.to_string(),
        nearest: model.nearest.clone(),
        site: site.to_string_lossy().into_owned(),
        before: earlier.iter().map(|e| e.path.clone()).collect(),
        fix,
    };
    Some((load, earlier))
}

/// The framework's import, then its first GPU use when the import works and has not loaded the file (real
/// path `real`) yet, in one process of the environment's interpreter (an import may stop once it has loaded the
/// file, [`crate::python::frameworks::Process::settled`]): every object loaded, in order, and the
/// framework's own advice when the model does not reach the GPU for a reason of its own (ONNX Runtime's CUDA
/// provider not loading). The GPU and the driver are
/// left undeclared, the driver's libraries taken as provided: the question is what the framework loads, not
/// whether this machine runs it (the file's own judgement answers that).
fn framework_process(
    root: &Root,
    env: &Env,
    py: &PyEnv,
    fw: &'static dyn Framework,
    model: &Selected,
    real: &str,
    files: &mut Files,
) -> Option<(Vec<Loaded>, Option<String>)> {
    // With no driver declared no model's driver check consults the matrix (`--matrix` included): the bundled
    // one only fills the field.
    let matrix = crate::matrix::Matrix::bundled().ok()?;
    let provides = |soname: &str| crate::container::is_driver_library(soname);
    let ctx = Ctx {
        root,
        env,
        python: py,
        gpus: &[],
        driver: None,
        matrix: &matrix,
        provides: &provides,
    };
    let exe = root.host_path(&py.syspath.executable);
    crate::loader::process::process(root, env, &exe, files, |img| {
        let mut p = PyProcess::new(img);
        p.until(real);
        p.begin(fw.module(), When::Import);
        let mut outcome = fw.import(&ctx, model, &mut p).outcome;
        // What comes after the file is not asked for: the first use only matters to a file it loads.
        if matches!(outcome, Outcome::Gpu) && !p.loaded().iter().any(|l| l.realpath == real) {
            p.begin(fw.module(), When::FirstUse);
            outcome = fw.first_use(&ctx, model, &mut p).outcome;
        }
        // Without a GPU declared, a model that falls back for want of one says nothing of its own here.
        let fix = match &outcome {
            Outcome::Gpu => None,
            other => fw.help(&ctx, model, other),
        };
        (p.loaded().to_vec(), fix)
    })?
}

/// The objects the framework's process holds before the file (its real path `real`), each as the loader is to
/// load it: those the framework loaded by path or opened by name (their own dependencies come with them), up
/// to the file itself when the process loads it, else all of them (a file the framework opens later).
fn before(loaded: &[Loaded], real: &str, file: &Path) -> Vec<Earlier> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let end = loaded
        .iter()
        .position(|l| l.realpath == real)
        .unwrap_or(loaded.len());
    loaded[..end]
        .iter()
        .filter_map(|l| {
            let reason = match &l.how {
                LoadedHow::Preloaded { by, search, global } => format!(
                    "{by} loads it by path before {name} (ctypes.CDLL{}): {search}",
                    if *global { ", RTLD_GLOBAL" } else { "" }
                ),
                LoadedHow::Opened { name: n, caller, .. } => {
                    format!("{} opens {n} by name from {caller} before {name}", l.import)
                }
                _ => return None,
            };
            Some(Earlier {
                path: l.path.clone(),
                reason,
            })
        })
        .collect()
}

/// The directory the file's distribution is installed in and that distribution's normalised name: the
/// distribution whose `RECORD` lists the file (`python::dist_info`), else, for a file no `RECORD` lists (one
/// written after the install), the framework whose package directory holds it (`torch/…` in a directory
/// with `torch-*.dist-info`).
fn owner(root: &Root, real: &Path, known: &[&'static dyn Framework]) -> Option<(PathBuf, String)> {
    let mut records = crate::python::dist_info::Records::default();
    if let Some(o) = records.owner(root, real) {
        return Some((o.dir, key_of(&o.info)?));
    }
    let mut dir = real.parent();
    for _ in 0..crate::python::dist_info::MAX_LEVELS {
        let d = dir?;
        let infos = crate::python::dist_info::dist_infos(root, d);
        if !infos.is_empty() {
            let fw = package_framework(real, d, known)?;
            let key = infos
                .iter()
                .filter_map(|i| key_of(i))
                .find(|k| fw.distributions().iter().any(|n| normalise(n) == *k))?;
            return Some((d.to_path_buf(), key));
        }
        dir = d.parent();
    }
    None
}

/// The `site-packages` (or `dist-packages`) directory nearest above `real` when the first directory below it
/// is a package of a framework of `known` (`torch` for `…/site-packages/torch/lib/libtorch_cuda.so`).
fn framework_site(real: &Path, known: &[&'static dyn Framework]) -> Option<PathBuf> {
    let site = real.ancestors().skip(1).find(|d| prefix_of(d).is_some())?;
    package_framework(real, site, known).map(|_| site.to_path_buf())
}

/// The framework of `known` whose top-level package is the first directory of `real` below `dir` (`torch`
/// for `dir/torch/lib/libtorch_cuda.so`).
fn package_framework(
    real: &Path,
    dir: &Path,
    known: &[&'static dyn Framework],
) -> Option<&'static dyn Framework> {
    let top = match real.strip_prefix(dir).ok()?.components().next()? {
        Component::Normal(n) => n.to_string_lossy().into_owned(),
        _ => return None,
    };
    known
        .iter()
        .copied()
        .find(|fw| fw.module().split('.').next() == Some(top.as_str()))
}

/// The normalised distribution name of a `.dist-info` directory (`torch-2.15.0.dist-info` → `torch`).
fn key_of(info: &Path) -> Option<String> {
    if !info.file_name()?.as_encoded_bytes().ends_with(b".dist-info") {
        return None;
    }
    let key = crate::python::dist_info::key_of(info);
    (!key.is_empty()).then_some(key)
}

/// The Python environment whose `sys.path` holds `site`: the environment `site` is the `lib/pythonX.Y/
/// {site,dist}-packages` of (a venv, a conda environment, `/usr`), else the active one as `cudadiag import`
/// chooses it (`VIRTUAL_ENV`, `CONDA_PREFIX`, `python3` on `PATH`), for a `PYTHONPATH` or `--target`
/// directory.
fn environment(root: &Root, env: &Env, site: &Path) -> Option<PyEnv> {
    let mut targets: Vec<Target> = prefix_of(site).map(Target::Environment).into_iter().collect();
    targets.push(choose(env, None, None).target);
    targets.into_iter().find_map(|target| {
        let chosen = Chosen {
            target,
            path: PathBuf::new(),
            because: String::new(),
        };
        let py = collect_expecting(root, env, &request(env, &chosen), site).ok()?;
        let holds = py.dirs().any(|d| same_dir(root, d, site));
        holds.then_some(py)
    })
}

/// `/venv` for `/venv/lib/python3.11/site-packages` (or `lib64`, or Debian's `dist-packages` under
/// `lib/python3`).
fn prefix_of(site: &Path) -> Option<PathBuf> {
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    if !matches!(name(site)?.as_str(), "site-packages" | "dist-packages") {
        return None;
    }
    let py = site.parent()?;
    let lib = py.parent()?;
    (name(py)?.starts_with("python") && matches!(name(lib)?.as_str(), "lib" | "lib64"))
        .then(|| lib.parent().map(Path::to_path_buf))
        .flatten()
}

/// Are `a` and `b` one directory of the root (links resolved inside it)?
fn same_dir(root: &Root, a: &Path, b: &Path) -> bool {
    a == b || matches!((root.resolve(a), root.resolve(b)), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environment_is_the_prefix_of_its_site_packages() {
        let p = |s: &str| prefix_of(Path::new(s));
        assert_eq!(p("/venv/lib/python3.11/site-packages"), Some("/venv".into()));
        assert_eq!(p("/opt/c/lib64/python3.12/site-packages"), Some("/opt/c".into()));
        assert_eq!(p("/usr/lib/python3/dist-packages"), Some("/usr".into()));
        assert_eq!(p("/srv/deps"), None);
        assert_eq!(p("/x/share/python3.11/site-packages"), None);
    }

    #[test]
    fn the_environment_is_read_early_only_for_a_file_in_a_frameworks_package() {
        let site = |s: &str| framework_site(Path::new(s), crate::imports::known());
        let venv = Some(PathBuf::from("/v/lib/python3.12/site-packages"));
        assert_eq!(
            site("/v/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"),
            venv
        );
        assert_eq!(site("/v/lib/python3.12/site-packages/cupy/_core/core.so"), venv);
        // The nearest site-packages: a venv inside another's tree.
        assert_eq!(
            site("/v/lib/python3.12/site-packages/w/lib/python3.12/site-packages/torch/_C.so"),
            Some(PathBuf::from(
                "/v/lib/python3.12/site-packages/w/lib/python3.12/site-packages"
            ))
        );
        // Not a framework's package (the owner is looked for first, then the environment).
        assert_eq!(
            site("/v/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13"),
            None
        );
        assert_eq!(site("/v/lib/python3.12/site-packages/libtop.so"), None);
        assert_eq!(site("/opt/torch/lib/libtorch_cuda.so"), None);
    }

    #[test]
    fn a_dist_info_names_its_distribution() {
        let k = |s: &str| key_of(Path::new(s));
        assert_eq!(k("/s/torch-2.15.0.dist-info").as_deref(), Some("torch"));
        assert_eq!(
            k("/s/onnxruntime_gpu-1.31.1.dist-info").as_deref(),
            Some("onnxruntime-gpu")
        );
        assert_eq!(k("/s/torch-2.15.0.egg-info"), None);
    }
}
