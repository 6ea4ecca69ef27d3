//! Python in an image: `inspect --image IMG --import torch`, and an image whose program is a Python
//! interpreter. The interpreter's ELF tree says nothing of CUDA: what loads the CUDA libraries is the
//! frameworks' own loading code, which `imports` models (`cudadiag import`). Here that model runs inside the
//! image's unpacked tree, with the image's environment, after the NVIDIA Container Toolkit's mounts are made
//! ([`super::program::mount`]): the driver's `libcuda.so.1` is in the container when the toolkit injects it,
//! and only then; the GPUs are those the container gets.
//!
//! Which modules: those of `--import`, in order; else, for a Python entrypoint, `python -m MODULE` imports
//! MODULE's top-level package first (`-m torch.distributed.run` runs `import torch`), and when that is a
//! modelled framework it is the import judged. A script (`python train.py`), `-c CODE` or any other module is
//! not read (nothing is executed, and a script's imports are code, not data): the frameworks installed in the
//! interpreter's environment are judged instead (`imports::installed`), and the report says so.
//! `docs/container-images.md` documents the choice.

use super::program::{Program, Staged};
use crate::diagnose::ToolError;
use crate::facts::image::ImageImports;
use crate::findings::Finding;
use crate::image::Image;
use crate::imports::{ImportError, Machine};
use crate::matrix::Matrix;
use crate::python::frameworks::env::{Chosen, choose};
use crate::python::frameworks::{Driver, Framework, Gpu, PyEnv};
use crate::python::syspath::Target;
use std::path::{Path, PathBuf};

/// The imports to judge: the interpreter, its environment, the modules and why those.
pub struct Plan {
    chosen: Chosen,
    /// The interpreter's environment (`sys.path`, the distributions), collected once for every judgement of
    /// the plan: the toolkit's mounts put the driver's libraries in the tree, never a Python distribution.
    py: PyEnv,
    frameworks: Vec<&'static dyn Framework>,
    why: String,
    /// `--import` asked for them: a failure to model them is the command's failure, not a note.
    asked: bool,
}

/// What judging the imports gives: the findings (folded into the program's judgement) and the facts.
#[derive(Clone)]
pub struct Judged {
    /// The findings of the imports, most severe first.
    pub findings: Vec<Finding>,
    /// What the report shows.
    pub facts: ImageImports,
}

/// The imports to judge in the image: `asked` (`--import`, in the interpreter the image's environment
/// activates: `VIRTUAL_ENV`, else `CONDA_PREFIX`, else `python3` on its `PATH`, as `cudadiag import` chooses),
/// else those a Python entrypoint makes, in that interpreter as the entrypoint names it; none when the program
/// is no Python interpreter, its environment cannot be read or holds no modelled framework. The interpreter's
/// environment is collected here, once.
pub fn plan(img: &Image, program: &Program, asked: &[String]) -> Result<Option<Plan>, ToolError> {
    let env = environment(img, program);
    let collect = |chosen: &Chosen| {
        let req = crate::python::frameworks::env::request(&env, chosen);
        crate::python::frameworks::env::collect(&img.root(), &env, &req)
    };
    if !asked.is_empty() {
        let fail = |e: ImportError| ToolError(format!("{}: --import: {e}", img.facts.path));
        let frameworks = asked
            .iter()
            .map(|m| crate::imports::framework(m).ok_or_else(|| fail(ImportError::Unknown(m.clone()))))
            .collect::<Result<Vec<_>, _>>()?;
        let chosen = choose(&program.env, None, None);
        let py = collect(&chosen).map_err(|e| fail(ImportError::SysPath(e)))?;
        return Ok(Some(Plan {
            chosen,
            py,
            frameworks,
            why: "as --import names them".into(),
            asked: true,
        }));
    }
    let Some((interpreter, args)) = program.entry.as_ref().filter(|(p, _)| is_python(p)) else {
        return Ok(None);
    };
    let chosen = entrypoint(interpreter);
    // An environment that cannot be read (no interpreter there): the interpreter is judged alone.
    let Ok(py) = collect(&chosen) else {
        return Ok(None);
    };
    let runs = runs(args);
    if let Runs::Module(m) = &runs {
        let top = m.split('.').next().unwrap_or(m);
        if let Some(fw) = crate::imports::framework(top) {
            return Ok(Some(Plan {
                chosen,
                py,
                frameworks: vec![fw],
                why: format!("python -m {m} imports {top} first"),
                asked: false,
            }));
        }
    }
    let frameworks: Vec<&'static dyn Framework> = crate::imports::installed(&py)
        .into_iter()
        .filter_map(crate::imports::framework)
        .collect();
    if frameworks.is_empty() {
        return Ok(None);
    }
    Ok(Some(Plan {
        chosen,
        py,
        frameworks,
        why: format!(
            "{} is not read (cudadiag runs nothing, and a script's imports are code): the frameworks installed \
             in the interpreter's environment are judged, in this order; name the imports exactly with \
             --import",
            runs.shown()
        ),
        asked: false,
    }))
}

/// Models the plan's imports in the image's tree as it is now (the toolkit's mounts made), for the node as
/// the container sees it (`staged`; none: no node, no driver and no GPU), in the environment the plan
/// collected. `None` when an implicit plan cannot be modelled (its interpreter is not an ELF program the
/// loader can start): the interpreter is judged alone.
pub fn judge(
    img: &Image,
    program: &Program,
    staged: Option<&Staged>,
    plan: &Plan,
    matrix: &Matrix,
) -> Result<Option<Judged>, ToolError> {
    let (gpus, driver) = container_machine(staged, program.env.get("CUDA_VISIBLE_DEVICES"), matrix);
    let machine = Machine {
        gpus: &gpus,
        driver: driver.as_ref(),
        // The driver's libraries are in the tree when the toolkit mounts them, and only then.
        declared: false,
    };
    let env = environment(img, program);
    let root = img.root();
    let modelled = match crate::imports::model(&root, &env, &plan.py, &plan.frameworks, &machine, matrix) {
        Ok(m) => m,
        Err(e) if plan.asked => return Err(ToolError(format!("{}: --import: {e}", img.facts.path))),
        Err(_) => return Ok(None),
    };
    let mut detail = serde_json::json!({
        "executable": inside(&plan.py.syspath.executable, img.dir()),
        "sys_path": plan.py.syspath.entries,
        "imports": modelled.imports,
        "loaded": modelled.loaded,
    });
    super::tree::inside_value(&mut detail, &img.dir().to_string_lossy());
    let mut findings = modelled.findings;
    let mut why = plan.why.clone();
    if staged.is_none() {
        // No node (`--no-host`, a machine without NVIDIA): the image's files are judged, not whether a GPU
        // will be used, which depends on the node.
        findings.retain(|f| f.code != crate::findings::Code::FrameworkCpuFallback);
        why.push_str("; no node is judged, so whether the GPU is used is not either");
    }
    Ok(Some(Judged {
        findings,
        facts: ImageImports {
            python: plan.chosen.path.display().to_string(),
            because: plan.chosen.because.clone(),
            modules: plan.frameworks.iter().map(|f| f.module().to_string()).collect(),
            why,
            detail,
        },
    }))
}

/// A plan judged for many nodes (`fleet --image`): one judgement per machine a container gets (its driver and
/// GPUs), on the tree as mounted now; [`PerMachine::clear`] when the mounts change.
pub struct PerMachine {
    plan: Plan,
    done: std::sync::Mutex<std::collections::HashMap<String, Option<Judged>>>,
}

impl PerMachine {
    /// No judgement made yet.
    pub fn new(plan: Plan) -> PerMachine {
        PerMachine {
            plan,
            done: Default::default(),
        }
    }

    /// The imports judged on the node `staged`, once per machine the container gets: their findings and
    /// facts, as `inspect --image` has them. `None` for a plan that cannot be modelled: the interpreter is
    /// judged alone, as `inspect --image` does.
    pub fn judged(
        &self,
        img: &Image,
        program: &Program,
        staged: Option<&Staged>,
        matrix: &Matrix,
    ) -> Option<Judged> {
        let (gpus, driver) = container_machine(staged, program.env.get("CUDA_VISIBLE_DEVICES"), matrix);
        let labels: Vec<&str> = gpus.iter().map(|g| g.label.as_str()).collect();
        let key = format!("{:?} {labels:?} {}", driver.map(|d| d.version), staged.is_some());
        if let Some(j) = self.done.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return j;
        }
        let j = judge(img, program, staged, &self.plan, matrix).ok().flatten();
        if let Ok(mut m) = self.done.lock() {
            m.insert(key, j.clone());
        }
        j
    }

    /// Forgets the judgements: the tree's mounts are about to change.
    pub fn clear(&self) {
        if let Ok(mut m) = self.done.lock() {
            m.clear();
        }
    }
}

/// The interpreter an entrypoint starts, as it was opened (a venv's `bin/python3` is the venv's).
fn entrypoint(p: &Path) -> Chosen {
    Chosen {
        target: Target::Interpreter(p.to_path_buf()),
        path: p.to_path_buf(),
        because: "the image's Entrypoint and Cmd".into(),
    }
}

/// Is this program a Python interpreter (`python`, `python3`, `python3.12`)?
fn is_python(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("python"))
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// What a Python command line runs.
#[derive(Debug, PartialEq, Eq)]
enum Runs {
    /// `-m MODULE`.
    Module(String),
    /// `-c CODE`.
    Command,
    /// `SCRIPT`.
    Script(String),
    /// Nothing (interactive, or a script on stdin).
    Interactive,
}

impl Runs {
    fn shown(&self) -> String {
        match self {
            Runs::Module(m) => format!("python -m {m}: the module {m}"),
            Runs::Command => "python -c: the code it is given".into(),
            Runs::Script(s) => format!("python {s}: the script"),
            Runs::Interactive => "python with no program: what it reads from stdin".into(),
        }
    }
}

/// What the interpreter's arguments run: its options passed over (those that take a value with it), up to
/// `-m`, `-c`, `-` or the script (CPython's `Modules/main.c` and the `python(1)` options).
fn runs(args: &[String]) -> Runs {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-m" => {
                return args
                    .get(i + 1)
                    .map_or(Runs::Interactive, |m| Runs::Module(m.clone()));
            }
            "-c" => return Runs::Command,
            "-" => return Runs::Interactive,
            "-X" | "-W" | "--check-hash-based-pycs" => i += 2,
            s if s.starts_with("-m") => return Runs::Module(s[2..].to_string()),
            s if s.starts_with("-c") => return Runs::Command,
            s if s.starts_with('-') => i += 1,
            s => return Runs::Script(s.to_string()),
        }
    }
    Runs::Interactive
}

/// The process's environment: the image's (with `--env`), in its `WorkingDir` (`PWD`, which the model reads as
/// the working directory, when the image does not set it).
fn environment(img: &Image, program: &Program) -> crate::system::Env {
    let mut env = program.env.clone();
    if env.get("PWD").is_none() && img.config.working_dir.starts_with('/') {
        env.set("PWD", &img.config.working_dir);
    }
    env
}

/// The GPUs and driver a container of the image gets on the node: none without a node or when the toolkit
/// gives it no GPU (`NVIDIA_VISIBLE_DEVICES` unset or `void`, `--gpus` not given); the GPUs it selects, less
/// those the process's `CUDA_VISIBLE_DEVICES` (`visible`) hides.
fn container_machine(
    staged: Option<&Staged>,
    visible: Option<&str>,
    matrix: &Matrix,
) -> (Vec<Gpu>, Option<Driver>) {
    let Some(s) = staged else {
        return (Vec::new(), None);
    };
    let devices = &s.view.devices;
    let mut node = s.node.clone();
    if !devices.gpu_container {
        node.gpus.clear();
    } else if devices.node_gpus_known {
        let chosen: Vec<usize> = devices.gpus.iter().map(|g| g.index).collect();
        node.gpus = std::mem::take(&mut node.gpus)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| chosen.contains(i))
            .map(|(_, g)| g)
            .collect();
    }
    crate::diagnose::frameworks::machine_of(Some(&node), visible, matrix)
}

/// `p` as a path inside the image.
fn inside(p: &Path, dir: &Path) -> String {
    p.strip_prefix(dir)
        .map(|r| PathBuf::from("/").join(r))
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_python_command_line_runs_its_module_script_or_code() {
        assert_eq!(
            runs(&args(&[
                "-u",
                "-X",
                "dev",
                "-m",
                "torch.distributed.run",
                "train.py"
            ])),
            Runs::Module("torch.distributed.run".into())
        );
        assert_eq!(runs(&args(&["-mjax"])), Runs::Module("jax".into()));
        assert_eq!(
            runs(&args(&["-W", "ignore", "train.py", "-m", "x"])),
            Runs::Script("train.py".into())
        );
        assert_eq!(runs(&args(&["-c", "import torch"])), Runs::Command);
        assert_eq!(runs(&args(&[])), Runs::Interactive);
    }

    #[test]
    fn only_a_python_interpreter_is_python() {
        for p in [
            "/usr/bin/python3.12",
            "/venv/bin/python",
            "/opt/conda/bin/python3",
        ] {
            assert!(is_python(Path::new(p)), "{p}");
        }
        for p in ["/usr/bin/python3-config", "/usr/bin/pythonista", "/usr/bin/app"] {
            assert!(!is_python(Path::new(p)), "{p}");
        }
    }
}
