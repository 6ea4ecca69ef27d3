//! `imports`: `import A; import B; …` in one Python process, then the first GPU use of each, then each
//! framework's checks: the models of [`crate::python::frameworks::Framework`] driving one
//! [`process::PyProcess`] over the loader's emulation of the process, and what they end in as findings.
//!
//! It sits above both `python` (the environment and the framework models, which name no loader) and `loader`
//! (the process), which `python` serves: `docs/python-frameworks.md`.
//!
//! An outcome becomes a finding here, once: an import or first use that raises on a failed load is
//! `library-not-found` (with the loader's search trail), one that goes on without the GPU is
//! `framework-cpu-fallback`, one that raises `ModuleNotFoundError` is `framework-not-installed`. An outcome that
//! raises for another reason comes with the model's own finding from
//! [`crate::python::frameworks::Framework::checks`] (torch's driver check), else it is `framework-raises`: an
//! exception never passes for "works".

pub mod file;
pub mod process;

use crate::findings::{Code, Finding, Severity};
use crate::python::frameworks::env::Chosen;
use crate::python::frameworks::{Ctx, Driver, Framework, Gpu, Loaded, Outcome, PyEnv, Selected, Step, When};
use crate::system::Root;
use process::PyProcess;
use serde::Serialize;

/// Every framework modelled, by the module a user imports.
pub fn known() -> &'static [&'static dyn Framework] {
    use crate::python::frameworks as f;
    &[
        &f::torch::Torch,
        &f::jax::Jax,
        &f::tensorflow::TensorFlow,
        &f::cupy::Cupy,
        &f::onnxruntime::OnnxRuntime { preload: false },
        &f::onnxruntime::OnnxRuntime { preload: true },
    ]
}

/// The framework of `module` (`torch`).
pub fn framework(module: &str) -> Option<&'static dyn Framework> {
    known().iter().copied().find(|f| f.module() == module)
}

/// The top-level package of `fw`'s module (`onnxruntime` for `onnxruntime.preload_dlls`): what `import`
/// finds on `sys.path`.
fn package(fw: &dyn Framework) -> &'static str {
    fw.module().split('.').next().unwrap_or(fw.module())
}

/// The modules of the frameworks installed in `env` (a distribution of theirs is on its `sys.path`), in
/// [`known`]'s order, each once: what `inspect` of an environment, `doctor` and `fleet` import.
pub fn installed(env: &PyEnv) -> Vec<&'static str> {
    let mut modules: Vec<&'static str> = Vec::new();
    for fw in known() {
        let module = package(*fw);
        if !modules.contains(&module) && fw.distributions().iter().any(|n| env.dist(n).is_some()) {
            modules.push(module);
        }
    }
    modules
}

/// One import, modelled.
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    /// The module (`torch`).
    pub module: String,
    /// The installed distribution's name and version, when installed.
    pub installed: Option<String>,
    /// The model used, when one applies.
    pub model: Option<Selected>,
    /// What the model covers (`every CUDA wheel preloaded from sys.path, each best effort`).
    pub model_about: Option<String>,
    /// `import MODULE`.
    pub import: Step,
    /// The first GPU use, after a successful import.
    pub first_use: Option<Step>,
}

/// What `cudadiag import` found: the environment, each import, the process's libraries, the findings.
#[derive(Debug, Clone)]
pub struct ImportReport {
    /// The interpreter and why that one.
    pub python: Chosen,
    /// The environment as facts.
    pub env: PyEnv,
    /// The imports, in order.
    pub imports: Vec<Imported>,
    /// Every object of the process at the end, in load order, with how and from where it came in.
    pub loaded: Vec<Loaded>,
    /// Findings, most severe first.
    pub findings: Vec<Finding>,
}

impl ImportReport {
    /// Does any finding reach `threshold`?
    pub fn fails(&self, threshold: Option<crate::findings::Severity>) -> bool {
        threshold.is_some_and(|t| self.findings.iter().any(|f| f.severity >= t))
    }
}

/// Why the imports could not be modelled at all.
#[derive(Debug)]
pub enum ImportError {
    /// `sys.path` could not be computed (no interpreter there, its version unknown).
    SysPath(crate::python::syspath::SysPathError),
    /// A module no model covers.
    Unknown(String),
    /// The interpreter is not an ELF program this loader can start.
    NotElf(std::path::PathBuf),
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportError::SysPath(e) => e.fmt(f),
            ImportError::Unknown(m) => {
                let names: Vec<&str> = known().iter().map(|f| f.module()).collect();
                write!(f, "no model of `import {m}` (modelled: {})", names.join(", "))
            }
            ImportError::NotElf(p) => write!(f, "{}: not an ELF program the loader can start", p.display()),
        }
    }
}

/// The machine the imports are judged for.
pub struct Machine<'a> {
    /// Its GPUs visible to the process.
    pub gpus: &'a [Gpu],
    /// Its driver, when known.
    pub driver: Option<&'a Driver>,
    /// Declared (`--gpu`/`--driver`, `--facts`), not read: its driver's libraries are there
    /// ([`Ctx::provides`]).
    pub declared: bool,
}

/// Models `import M` for each of `modules`, in order, in one process of the interpreter `chosen`, then the
/// first GPU use of each imported framework, then their checks, for `machine`.
pub fn run(
    root: &Root,
    env: &crate::system::Env,
    chosen: Chosen,
    modules: &[String],
    machine: &Machine,
    matrix: &crate::matrix::Matrix,
) -> Result<ImportReport, ImportError> {
    let frameworks = modules
        .iter()
        .map(|m| framework(m).ok_or_else(|| ImportError::Unknown(m.clone())))
        .collect::<Result<Vec<_>, _>>()?;
    let py = crate::python::frameworks::env::collect(
        root,
        env,
        &crate::python::frameworks::env::request(env, &chosen),
    )
    .map_err(ImportError::SysPath)?;
    // The report lists every distribution: their `METADATA` are read beside the model, which asks for a few.
    let Modelled {
        imports,
        loaded,
        findings,
    } = std::thread::scope(|s| {
        s.spawn(|| py.read_all());
        model(root, env, &py, &frameworks, machine, matrix)
    })?;
    Ok(ImportReport {
        python: chosen,
        env: py,
        imports,
        loaded,
        findings,
    })
}

/// What [`model`] gives: each import, the process's objects, the findings (most severe first).
#[derive(Debug, Clone)]
pub struct Modelled {
    /// The imports, in order.
    pub imports: Vec<Imported>,
    /// Every object of the process at the end, in load order.
    pub loaded: Vec<Loaded>,
    /// Findings, most severe first.
    pub findings: Vec<Finding>,
}

/// [`run`] on an environment already collected: `import F` for each of `frameworks` in order in one process of
/// `py`'s interpreter, then their first GPU uses and checks. `inspect` of an environment models each
/// framework alone and then all together on one collection.
pub fn model(
    root: &Root,
    env: &crate::system::Env,
    py: &PyEnv,
    frameworks: &[&'static dyn Framework],
    machine: &Machine,
    matrix: &crate::matrix::Matrix,
) -> Result<Modelled, ImportError> {
    let mut files = crate::loader::Files::default();
    let out = model_in(root, env, py, frameworks, machine, matrix, &mut files);
    crate::parallel::discard(files);
    out
}

/// [`model`] with the candidate files read and remembered in `files`: processes of one environment modelled
/// one after the other read each library once.
pub fn model_in(
    root: &Root,
    env: &crate::system::Env,
    py: &PyEnv,
    frameworks: &[&'static dyn Framework],
    machine: &Machine,
    matrix: &crate::matrix::Matrix,
    files: &mut crate::loader::Files,
) -> Result<Modelled, ImportError> {
    let Machine {
        gpus,
        driver,
        declared,
    } = *machine;
    let exe = root.host_path(&py.syspath.executable);
    let provides = |soname: &str| declared && crate::container::is_driver_library(soname);
    let ctx = Ctx {
        root,
        env,
        python: py,
        gpus,
        driver,
        matrix,
        provides: &provides,
    };
    let body = crate::loader::process::process(root, env, &exe, files, |img| {
        let mut p = PyProcess::new(img);
        let (imports, findings) = in_process(&ctx, frameworks, &mut p);
        (
            imports,
            findings,
            crate::python::frameworks::Process::loaded(&p).to_vec(),
        )
    })
    .ok_or_else(|| ImportError::NotElf(exe.clone()))?;
    let (imports, mut findings, loaded) = body.ok_or(ImportError::NotElf(exe))?;
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    Ok(Modelled {
        imports,
        loaded,
        findings,
    })
}

/// The imports in order, the first uses, the checks.
fn in_process(
    ctx: &Ctx,
    frameworks: &[&'static dyn Framework],
    p: &mut PyProcess,
) -> (Vec<Imported>, Vec<Finding>) {
    let mut imports = Vec::new();
    let mut findings = Vec::new();
    let mut models: Vec<Option<Selected>> = Vec::new();
    for fw in frameworks {
        let dist = fw.distributions().iter().find_map(|n| ctx.python.dist(n));
        let installed = dist.map(|d| format!("{} {}", d.name(), d.version()));
        let model =
            dist.and_then(|d| crate::python::frameworks::select(fw.module(), d.version(), fw.models()));
        let step = match (&model, dist) {
            (Some(m), _) => {
                p.begin(fw.module(), When::Import);
                fw.import(ctx, m, p)
            }
            (None, None) => Step {
                outcome: Outcome::Fails {
                    message: format!("ModuleNotFoundError: No module named '{}'", package(*fw)),
                    load: None,
                },
                notes: vec![format!("no {} distribution on sys.path", fw.distributions()[0])],
            },
            (None, Some(d)) => Step {
                outcome: Outcome::Gpu,
                notes: vec![format!(
                    "{} {}: its version has no release numbers, so no model of its loading applies",
                    d.name(),
                    d.version()
                )],
            },
        };
        let help = model.as_ref().and_then(|m| fw.help(ctx, m, &step.outcome));
        findings.extend(outcome_finding(ctx, *fw, "import", &step.outcome, help));
        imports.push(Imported {
            module: fw.module().to_string(),
            installed,
            model_about: model.as_ref().map(|m| fw.models()[m.index].about.to_string()),
            model: model.clone(),
            import: step,
            first_use: None,
        });
        models.push(model);
    }
    for ((fw, model), imported) in frameworks.iter().zip(&models).zip(imports.iter_mut()) {
        let Some(m) = model else { continue };
        if !matches!(imported.import.outcome, Outcome::Gpu) {
            continue;
        }
        p.begin(fw.module(), When::FirstUse);
        let step = fw.first_use(ctx, m, p);
        let help = fw.help(ctx, m, &step.outcome);
        findings.extend(outcome_finding(ctx, *fw, "first GPU use", &step.outcome, help));
        imported.first_use = Some(step);
    }
    for ((fw, model), imported) in frameworks.iter().zip(&models).zip(&imports) {
        let own = model.as_ref().map(|m| fw.checks(ctx, m, p)).unwrap_or_default();
        // A raise the model's own checks explain (torch's driver check) is their finding; any other is one
        // of its own, so that no exception passes for "works".
        let explained = own.iter().any(|f| f.severity == Severity::Error);
        findings.extend(own);
        if !explained {
            let help = |o: &Outcome| model.as_ref().and_then(|m| fw.help(ctx, m, o));
            findings.extend(unexplained_raise(fw.module(), imported, help));
        }
    }
    (imports, findings)
}

/// The exception of an import or first use that raises with no finding of its own (no failed load, no
/// module missing): `framework-raises`, with the framework's last line as the exception raised, the whole
/// text and the model's notes as evidence, and `help` (the framework's advice for the outcome) when it has one.
fn unexplained_raise(
    module: &str,
    imported: &Imported,
    help: impl Fn(&Outcome) -> Option<String>,
) -> Option<Finding> {
    let (stage, step) = match &imported.first_use {
        Some(first) => ("first GPU use", first),
        None => ("import", &imported.import),
    };
    let Outcome::Fails { message, load: None } = &step.outcome else {
        return None;
    };
    if message.starts_with("ModuleNotFoundError:") {
        return None;
    }
    let raised = message.lines().last().unwrap_or(message);
    let help = help(&step.outcome).unwrap_or_else(|| {
        format!(
            "fix what the exception names; `cudadiag import {module} --verbose` shows the model's notes and \
             every library the process loaded, with how it came in"
        )
    });
    let mut f = Finding::new(
        Code::FrameworkRaises,
        format!("`import {module}` will fail at its {stage}: {raised}"),
        help,
    );
    if raised != message {
        f = f.because(format!("{module} says: {message}"));
    }
    for n in &step.notes {
        f = f.because(format!("model: {n}"));
    }
    Some(f)
}

/// `import M` raising `ModuleNotFoundError` (`message`): no distribution of the framework on `sys.path`, or one
/// installed whose package Python does not find there (a broken or partial install).
fn not_installed(ctx: &Ctx, fw: &dyn Framework, message: &str) -> Finding {
    let module = package(fw);
    let python = ctx.python.syspath.executable.display();
    let (help, because) = match fw.distributions().iter().find_map(|n| ctx.python.dist(n)) {
        None => (
            format!(
                "install it into this environment (`{python} -m pip install {}`), or point cudadiag at the \
                 environment that has it (--venv DIR, --python PATH)",
                fw.distributions()[0]
            ),
            format!(
                "no distribution of {} is installed in a sys.path entry of {python}",
                fw.distributions().join(", ")
            ),
        ),
        Some(d) => (
            format!(
                "reinstall it: `{python} -m pip install --force-reinstall {}=={}`",
                d.name(),
                d.version()
            ),
            format!(
                "{} {} is installed in {}, but its package is not there (a broken or partial install)",
                d.name(),
                d.version(),
                d.site.display()
            ),
        ),
    };
    let mut f = Finding::new(
        Code::FrameworkNotInstalled,
        format!("`import {module}` will fail: {message}"),
        help,
    )
    .because(because);
    for dir in ctx.python.dirs() {
        f = f.because(format!("sys.path: {}", dir.display()));
    }
    f
}

/// The finding an outcome is, when it is one of its own: a module not found, a failed load, or a fall-back
/// to the CPU; `help` is the framework's own advice for the last two.
fn outcome_finding(
    ctx: &Ctx,
    fw: &dyn Framework,
    stage: &str,
    o: &Outcome,
    help: Option<String>,
) -> Option<Finding> {
    if let Outcome::Fails { message, load: None } = o
        && message.starts_with("ModuleNotFoundError:")
    {
        return Some(not_installed(ctx, fw, message));
    }
    let mut f = outcome_finding_generic(fw.module(), stage, o)?;
    if let Some(h) = help {
        f.help = h;
    }
    Some(f)
}

/// [`outcome_finding`] with the generic help.
fn outcome_finding_generic(module: &str, stage: &str, o: &Outcome) -> Option<Finding> {
    match o {
        Outcome::Gpu => None,
        Outcome::Fails { message, load } => {
            let load = load.as_ref()?;
            let mut f = Finding::new(
                Code::LibraryNotFound,
                format!("`import {module}` will fail at its {stage}: {message}"),
                format!(
                    "install the package that provides {} into this environment, or make the copy the trail \
                     below looks for visible to the loader",
                    load.name
                ),
            );
            f.sonames = vec![load.name.clone()];
            if let Some(lib) = &load.library {
                f = f.because(format!("{} asked for {}", lib.needed_by, lib.soname));
                for line in lib.trail_lines() {
                    f = f.because(line);
                }
            }
            Some(f)
        }
        Outcome::CpuFallback { message, because } => {
            let mut f = Finding::new(
                Code::FrameworkCpuFallback,
                format!("`import {module}` works but the GPU will not be used: {because}"),
                "make the driver's libcuda.so.1 and a GPU visible to the process (cudadiag doctor says what is \
                 missing), or install the framework's CUDA build",
            );
            if let Some(m) = message {
                f = f.because(format!("{module} says: {m}"));
            }
            Some(f)
        }
    }
}
