//! The frameworks of one Python environment, each judged: what `inspect DIR` says of a venv, a conda
//! environment or a `site-packages` directory, and what `doctor` says of the active environment.
//!
//! A user who points at an environment asks "will my frameworks work here?", and imports them one at a time
//! (a script imports torch) or several in one process (a notebook imports torch, then JAX). So each framework
//! [`imports::installed`] finds is modelled alone, in a process of its own: its verdict. When there are several,
//! all of them are then modelled together in one process in [`imports::known`]'s order (torch, JAX,
//! TensorFlow, CuPy, ONNX Runtime), so that what only one process shows (the first copy of a library loaded
//! wins; two frameworks pinning different NVIDIA wheels) shows too: each framework's verdict there, and the
//! findings that only the shared process gives. `docs/python-frameworks.md` states it for users.
//!
//! Every finding gets a "because" line naming the environment and the run it comes from. Nothing is run; the
//! environment is read through the root.

use super::ToolError;
use crate::facts::HostFacts;
use crate::findings::Finding;
use crate::imports::{self, ImportError, Imported, Modelled};
use crate::python::frameworks::env::{self as pyenv, Chosen};
use crate::python::frameworks::{Driver, Framework, Gpu, Loaded, Outcome, PyEnv};
use crate::python::syspath::Target;
use crate::system::{Env, Root};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What kind of environment was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A directory with `pyvenv.cfg`.
    Venv,
    /// A directory with `conda-meta/`.
    Conda,
    /// A `site-packages` or `dist-packages` directory, judged with the interpreter of the prefix above it.
    SitePackages,
    /// The environment `cudadiag import` would choose (`VIRTUAL_ENV`, `CONDA_PREFIX`, `python3` on `PATH`).
    Active,
}

impl Kind {
    /// In words: `a venv`.
    pub fn words(self) -> &'static str {
        match self {
            Kind::Venv => "a venv",
            Kind::Conda => "a conda environment",
            Kind::SitePackages => "a site-packages directory",
            Kind::Active => "the active environment",
        }
    }
}

/// What environment `dir` (a path inside `root`) is by its own marker: a venv (it holds `pyvenv.cfg`, as
/// `python -m venv` writes it) or a conda environment (it holds `conda-meta/`); `None` for any other
/// directory. `inspect DIR` and `fleet --artifact ENV` tell an environment from other directories by it.
pub fn env_kind(root: &Root, dir: &Path) -> Option<Kind> {
    if root.is_file(&dir.join("pyvenv.cfg")) {
        return Some(Kind::Venv);
    }
    if root.is_dir(&dir.join("conda-meta")) {
        return Some(Kind::Conda);
    }
    None
}

/// The directory `inspect` was given, as the environment to judge: the interpreter and the kind, or why it is
/// not one. `dir` is a path inside `root`.
pub fn locate(root: &Root, dir: &Path) -> Result<(Chosen, Kind), ToolError> {
    let is_file = |p: &Path| root.is_file(p);
    if let Some(kind) = env_kind(root, dir) {
        let chosen = Chosen {
            target: Target::Environment(dir.to_path_buf()),
            path: dir.to_path_buf(),
            because: "given to inspect".into(),
        };
        return Ok((chosen, kind));
    }
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    if !matches!(name.as_deref(), Some("site-packages" | "dist-packages")) {
        return Err(ToolError(format!(
            "{}: a directory that is not a Python environment: inspect takes files (programs, libraries, \
             objects, archives, .fatbin/.cubin/.ptx, wheels) or one environment directory: a venv (with \
             pyvenv.cfg), a conda environment (with conda-meta/) or a site-packages/dist-packages directory",
            dir.display()
        )));
    }
    // `PREFIX/lib/pythonX.Y/site-packages` (Debian: `PREFIX/lib/python3/dist-packages`).
    let version_dir = dir
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned());
    let prefix = dir.parent().and_then(Path::parent).and_then(Path::parent);
    let (Some(version_dir), Some(prefix)) = (version_dir.filter(|v| v.starts_with("python")), prefix) else {
        return Err(ToolError(format!(
            "{}: not under PREFIX/lib/pythonX.Y/, so no interpreter can be told for it",
            dir.display()
        )));
    };
    let chosen = |target: Target| Chosen {
        target,
        path: dir.to_path_buf(),
        because: "the interpreter of its prefix".into(),
    };
    if env_kind(root, prefix).is_some() {
        return Ok((
            chosen(Target::Environment(prefix.to_path_buf())),
            Kind::SitePackages,
        ));
    }
    let mut tried: Vec<PathBuf> = Vec::new();
    for name in [version_dir.as_str(), "python3", "python"] {
        let exe = prefix.join("bin").join(name);
        if !tried.contains(&exe) {
            tried.push(exe);
        }
    }
    match tried.iter().find(|p| is_file(p)) {
        Some(exe) => Ok((chosen(Target::Interpreter(exe.clone())), Kind::SitePackages)),
        None => Err(ToolError(format!(
            "{}: no interpreter for it: none of {} exists",
            dir.display(),
            tried
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The GPUs and driver the imports are judged for, as the rules read them from `host` (read, from a
/// snapshot, or declared with `--gpu`/`--driver`), less the GPUs `visible` (the process's
/// `CUDA_VISIBLE_DEVICES`, when set) hides: CUDA's rules (`rules::visibility`), so an empty value, `-1` or an
/// index out of range leaves none, and the frameworks' first GPU use meets no device. A `MIG-…` entry, which
/// files cannot match to a GPU, hides nothing here.
pub fn machine_of(
    host: Option<&HostFacts>,
    visible: Option<&str>,
    matrix: &crate::matrix::Matrix,
) -> (Vec<Gpu>, Option<Driver>) {
    let shown = match (host, visible) {
        (Some(h), Some(value)) => {
            let v = crate::rules::visibility::visibility(value, &h.gpus);
            (!v.unknown_mig).then(|| HostFacts {
                gpus: v.visible.iter().map(|&i| h.gpus[i].clone()).collect(),
                ..HostFacts::default()
            })
        }
        _ => None,
    };
    let gpus = super::gpu_targets(shown.as_ref().or(host), matrix)
        .into_iter()
        .map(|t| Gpu {
            label: t.label,
            cc: t.cc,
        })
        .collect();
    let driver = super::driver_of(host).map(|d| Driver {
        version: d.version,
        source: d.source,
    });
    (gpus, driver)
}

/// One framework's answer in one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Verdict {
    /// It imports and its first GPU use works.
    Gpu,
    /// It imports and runs on the CPU: the GPU will not be used.
    Cpu {
        /// Why, in the model's terms.
        because: String,
    },
    /// It raises, at `import` or at its first GPU use.
    Fails {
        /// `import` or `first GPU use`.
        at: String,
        /// The exception as the user sees it.
        message: String,
    },
}

impl Verdict {
    /// The verdict of one import: its import, then (when that works) its first GPU use.
    pub fn of(i: &Imported) -> Verdict {
        let (at, outcome) = match (&i.import.outcome, &i.first_use) {
            (Outcome::Gpu, Some(first)) => ("first GPU use", &first.outcome),
            (o, _) => ("import", o),
        };
        match outcome {
            Outcome::Gpu => Verdict::Gpu,
            Outcome::CpuFallback { because, .. } => Verdict::Cpu {
                because: because.clone(),
            },
            Outcome::Fails { message, .. } => Verdict::Fails {
                at: at.into(),
                message: message.clone(),
            },
        }
    }
}

/// One framework of the environment, judged.
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    /// The module imported (`torch`).
    pub module: String,
    /// The distribution and version installed (`torch 2.15.0`).
    pub installed: Option<String>,
    /// Imported alone, in a process of its own.
    pub alone: Verdict,
    /// Imported with every other framework of the environment, in [`Frameworks::order`], when there are several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub together: Option<Verdict>,
}

/// One modelled process: the modules imported in order, each import, the objects, the findings.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// The modules, in import order.
    pub modules: Vec<String>,
    /// Each import and first use.
    pub imports: Vec<Imported>,
    /// Every object of the process, in load order.
    pub loaded: Vec<Loaded>,
}

/// The frameworks of one environment, each judged; or why there is no environment to judge.
#[derive(Debug, Clone, Serialize)]
pub struct Frameworks {
    /// The interpreter or environment, and why that one.
    pub python: Chosen,
    /// What was given.
    pub kind: Kind,
    /// The interpreter's path, when one was found.
    pub executable: Option<String>,
    /// Its `X.Y`, when known.
    pub version: Option<String>,
    /// Why the environment could not be read (no interpreter there), for a quiet line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// How many `*.dist-info` directories its `sys.path` holds (read or not: `METADATA` is read only for the
    /// distributions a model asks for).
    pub distributions: usize,
    /// Each framework installed, in [`imports::known`]'s order.
    pub frameworks: Vec<Judged>,
    /// The order of the process with all of them, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<String>,
    /// Each process modelled: each framework alone, then all together (empty in `doctor`'s report).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<Run>,
    /// The environment as facts (`sys.path`, what was not modelled), for the human report's details.
    #[serde(skip)]
    pub env: Option<PyEnv>,
}

impl Frameworks {
    /// `chosen`'s environment, not read yet.
    fn unread(chosen: Chosen, kind: Kind) -> Frameworks {
        Frameworks {
            python: chosen,
            kind,
            executable: None,
            version: None,
            problem: None,
            distributions: 0,
            frameworks: Vec::new(),
            order: Vec::new(),
            runs: Vec::new(),
            env: None,
        }
    }
}

/// The machine and the question's settings, as [`judge`] takes them.
pub struct Question<'a> {
    /// The root the environment is read through.
    pub root: &'a Root,
    /// The process's environment (`LD_LIBRARY_PATH`, `PYTHONPATH`, …).
    pub env: &'a Env,
    /// The GPUs and driver.
    pub machine: imports::Machine<'a>,
    /// The matrix.
    pub matrix: &'a crate::matrix::Matrix,
}

/// An environment read and its frameworks named, not modelled yet ([`read_env`], then [`judge_read`]): the
/// reading needs no machine, so `doctor` does it while the machine's facts are collected.
pub struct Read {
    out: Frameworks,
    /// The environment, or `None` when it could not be read (quietly: [`Frameworks::problem`] says why).
    py: Option<PyEnv>,
    frameworks: Vec<&'static dyn Framework>,
}

/// Reads `chosen`'s environment through `root` and `env`: its `sys.path` and distributions, and which
/// frameworks it holds. An environment that cannot be read is a [`Frameworks::problem`] when `quiet`, else the
/// error.
pub fn read_env(root: &Root, env: &Env, chosen: Chosen, kind: Kind, quiet: bool) -> Result<Read, ToolError> {
    let mut out = Frameworks::unread(chosen, kind);
    let req = pyenv::request(env, &out.python);
    // Without a framework there is nothing to model: the distributions' `RECORD`s are read only when a model
    // asks for one.
    let py = match pyenv::collect(root, env, &req) {
        Ok(py) => py,
        Err(e) if quiet => {
            out.problem = Some(e.to_string());
            return Ok(Read {
                out,
                py: None,
                frameworks: Vec::new(),
            });
        }
        Err(e) => return Err(ToolError(e.to_string())),
    };
    let modules = imports::installed(&py);
    out.executable = Some(py.syspath.executable.to_string_lossy().into_owned());
    out.version = py
        .syspath
        .version
        .as_ref()
        .map(|v| format!("{}.{}", v.major, v.minor));
    out.distributions = py.listed();
    if let Some(dir) = site_dir(&out) {
        on_sys_path(root, &py, &dir)?;
    }
    let frameworks = modules.iter().filter_map(|m| imports::framework(m)).collect();
    Ok(Read {
        out,
        py: Some(py),
        frameworks,
    })
}

/// Judges every framework installed in `chosen`'s environment: each alone, then all together when there are
/// several. Returns the frameworks and their findings (deduplicated, each naming the environment and the
/// run). An environment that cannot be read is a [`Frameworks::problem`] without findings when `quiet`, else
/// the error.
pub fn judge(
    q: &Question,
    chosen: Chosen,
    kind: Kind,
    quiet: bool,
) -> Result<(Frameworks, Vec<Finding>), ToolError> {
    judge_read(q, read_env(q.root, q.env, chosen, kind, quiet)?)
}

/// [`judge`] of an environment already read.
pub fn judge_read(q: &Question, read: Read) -> Result<(Frameworks, Vec<Finding>), ToolError> {
    judge_read_on(q, read, crate::loader::Files::default())
}

/// [`judge_read`] on `files`, whose workers decide whether the runs alone go side by side (three or more) or
/// one after the other: the answer is the same.
pub fn judge_read_on(
    q: &Question,
    read: Read,
    mut files: crate::loader::Files,
) -> Result<(Frameworks, Vec<Finding>), ToolError> {
    let Read {
        mut out,
        py,
        frameworks,
    } = read;
    let Some(py) = py else {
        return Ok((out, Vec::new()));
    };
    let mut findings: Vec<Finding> = Vec::new();
    let place = format!("{} ({})", out.python.path.display(), out.python.because);
    // Each framework alone and all of them together are separate processes of one environment, modelled on
    // one `Files`: all together first, so that each run alone finds every library it loads read and parsed
    // already. (Every run with reads of its own cost a fifth more CPU time on 2 cores, and on 16 cores five
    // pools of workers. The runs alone first, side by side on copies whose reads the run together then found,
    // took doctor on the GPU machine from 20.2 to 29.7 ms: each copy read the libraries the others read too.)
    let together = (frameworks.len() > 1).then(|| run(q, &py, &frameworks, &mut files));
    let alone = alone(q, &py, &frameworks, &mut files);
    crate::parallel::discard(files);
    for (fw, m) in frameworks.iter().zip(alone) {
        let m = m?;
        let Some(imported) = m.imports.first() else {
            continue;
        };
        out.frameworks.push(Judged {
            module: fw.module().to_string(),
            installed: imported.installed.clone(),
            alone: Verdict::of(imported),
            together: None,
        });
        let line = format!(
            "modelled: `import {}` alone, in the environment {place}",
            fw.module()
        );
        merge(&mut findings, m.findings, &line);
        out.runs.push(Run {
            modules: vec![fw.module().to_string()],
            imports: m.imports,
            loaded: m.loaded,
        });
    }
    if let Some(m) = together {
        let m = m?;
        out.order = frameworks.iter().map(|f| f.module().to_string()).collect();
        for (judged, imported) in out.frameworks.iter_mut().zip(&m.imports) {
            judged.together = Some(Verdict::of(imported));
        }
        let line = format!(
            "modelled: `{}` in one process, in the environment {place}",
            out.order
                .iter()
                .map(|m| format!("import {m}"))
                .collect::<Vec<_>>()
                .join("; ")
        );
        merge(&mut findings, m.findings, &line);
        out.runs.push(Run {
            modules: out.order.clone(),
            imports: m.imports,
            loaded: m.loaded,
        });
    }
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out.env = Some(py);
    Ok((out, findings))
}

/// One process of `frameworks`, in order.
fn run(
    q: &Question,
    py: &PyEnv,
    frameworks: &[&'static dyn Framework],
    files: &mut crate::loader::Files,
) -> Result<Modelled, ToolError> {
    imports::model_in(q.root, q.env, py, frameworks, &q.machine, q.matrix, files)
        .map_err(|e: ImportError| ToolError(e.to_string()))
}

/// Each of `frameworks` in a process of its own, on `files` (filled by the run of all of them together): side
/// by side where there are cores to spare, each on a copy of `files` and all on its workers (on 16 cores, the
/// four runs alone of `doctor` on the GPU machine took 4 ms instead of 9), else one after the other (on 2 cores
/// the copies cost CPU time and save none).
fn alone(
    q: &Question,
    py: &PyEnv,
    frameworks: &[&'static dyn Framework],
    files: &mut crate::loader::Files,
) -> Vec<Result<Modelled, ToolError>> {
    let Some((last, others)) = frameworks.split_last() else {
        return Vec::new();
    };
    if !files.has_spare_workers() {
        return frameworks.iter().map(|fw| run(q, py, &[*fw], files)).collect();
    }
    std::thread::scope(|s| {
        let runs: Vec<_> = others
            .iter()
            .map(|fw| {
                let mut mine = files.clone();
                s.spawn(move || {
                    let m = run(q, py, &[*fw], &mut mine);
                    crate::parallel::discard(mine);
                    m
                })
            })
            .collect();
        let last = run(q, py, &[*last], files);
        runs.into_iter()
            .map(crate::parallel::join)
            .chain([last])
            .collect()
    })
}

/// Adds `new` to `all`, each with `line` as its last "because", but for those already there (the same code
/// and message from an earlier run).
fn merge(all: &mut Vec<Finding>, new: Vec<Finding>, line: &str) {
    for f in new {
        if !all.iter().any(|a| a.code == f.code && a.message == f.message) {
            all.push(f.because(line.to_string()));
        }
    }
}

/// The site-packages directory given, when that is what was given.
fn site_dir(f: &Frameworks) -> Option<PathBuf> {
    (f.kind == Kind::SitePackages).then(|| f.python.path.clone())
}

/// A site-packages directory is judged with its prefix's interpreter only when that interpreter has it on
/// `sys.path` (not so for a `pip install --target` directory that happens to sit under a prefix).
fn on_sys_path(root: &Root, py: &PyEnv, dir: &Path) -> Result<(), ToolError> {
    let real = |p: &Path| root.resolve(p).unwrap_or_else(|_| p.to_path_buf());
    let want = real(dir);
    if py.dirs().any(|d| real(d) == want) {
        return Ok(());
    }
    Err(ToolError(format!(
        "{}: not on the sys.path of {}, the interpreter of its prefix: model it as that interpreter sees it \
         with `cudadiag import MODULE --python {} --env PYTHONPATH={}`",
        dir.display(),
        py.syspath.executable.display(),
        py.syspath.executable.display(),
        dir.display()
    )))
}

/// The machine an environment is judged for, as `cudadiag import` reads it: `snapshot`'s, else the declared
/// targets', else the root's own (without the library catalogue, which the imports do not read).
pub fn machine_facts(
    system: &super::System,
    target: &super::Target,
    snapshot: Option<&Path>,
    matrix: &crate::matrix::Matrix,
) -> Result<crate::facts::Facts, ToolError> {
    let mut facts = crate::facts::Facts::default();
    if let Some(s) = snapshot {
        let mut host = super::snapshot::load_host(s)?;
        crate::host::enrich::with_matrix(&mut host, matrix);
        facts.host = Some(host);
    } else if !target.what_if() {
        let root = super::machine::checked_root(system)?;
        let mut host = super::machine::collect(&root, &system.env(), true, &super::Quiet);
        crate::host::enrich::with_matrix(&mut host, matrix);
        facts.host = Some(host);
    }
    super::targets::apply(target, &mut facts, matrix)?;
    Ok(facts)
}

/// `doctor`'s environment, read by [`read_active`] before the machine is known.
pub struct Active {
    chosen: Chosen,
    read: Result<Read, ToolError>,
}

/// Reads the environment `cudadiag import` would choose (`VIRTUAL_ENV`, `CONDA_PREFIX`, else `python3` on
/// `PATH`, through the root and `env`); no machine is needed, so `doctor` does it while the machine is read.
pub fn read_active(root: &Root, env: &Env) -> Active {
    let chosen = pyenv::choose(env, None, None);
    let read = read_env(root, env, chosen.clone(), Kind::Active, true);
    Active { chosen, read }
}

/// `doctor`'s question: the environment [`read_active`] read, its frameworks judged on `host`. No environment
/// there is a quiet [`Frameworks::problem`]; the processes' details are left out of the machine's report.
pub fn active(
    root: &Root,
    env: &Env,
    read: Active,
    host: Option<&HostFacts>,
    matrix: &crate::matrix::Matrix,
) -> (Frameworks, Vec<Finding>) {
    let (gpus, driver) = machine_of(host, env.get("CUDA_VISIBLE_DEVICES"), matrix);
    let q = Question {
        root,
        env,
        machine: imports::Machine {
            gpus: &gpus,
            driver: driver.as_ref(),
            declared: false,
        },
        matrix,
    };
    let Active { chosen, read } = read;
    match read.and_then(|r| judge_read(&q, r)) {
        Ok((mut fw, findings)) => {
            fw.runs.clear();
            (fw, findings)
        }
        // An interpreter the loader cannot start (a shell wrapper): said, and the machine's report goes on.
        Err(e) => {
            let mut fw = Frameworks::unread(chosen, Kind::Active);
            fw.problem = Some(e.0);
            (fw, Vec::new())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, path: &str) {
        let p = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "").unwrap();
    }

    #[test]
    fn a_site_packages_directory_gets_the_interpreter_of_its_prefix_or_says_why_not() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::at(t.path());
        touch(t.path(), "/opt/py/bin/python3.12");
        touch(t.path(), "/opt/py/lib/python3.12/site-packages/x.py");
        touch(t.path(), "/usr/lib/python3/dist-packages/x.py");
        touch(t.path(), "/srv/site-packages/x.py");
        let (c, kind) = locate(&root, Path::new("/opt/py/lib/python3.12/site-packages")).unwrap();
        assert_eq!(
            (c.target, kind),
            (
                Target::Interpreter("/opt/py/bin/python3.12".into()),
                Kind::SitePackages
            )
        );
        // Debian's dist-packages without an interpreter: the error names every one looked for.
        let e = locate(&root, Path::new("/usr/lib/python3/dist-packages")).unwrap_err();
        assert!(
            e.0.contains("none of /usr/bin/python3, /usr/bin/python exists"),
            "{e}"
        );
        let e = locate(&root, Path::new("/srv/site-packages")).unwrap_err();
        assert!(e.0.contains("not under PREFIX/lib/pythonX.Y/"), "{e}");
        let e = locate(&root, Path::new("/opt/py")).unwrap_err();
        assert!(e.0.contains("not a Python environment"), "{e}");
    }
}
