//! `fleet --artifact ENV` where ENV is a Python environment (a venv or a conda environment): will `import`
//! of each framework installed there use the GPU on each node? The question `cudadiag import --venv ENV
//! --facts NODE.json --clear-env --env LD_LIBRARY_PATH=…` answers for one node, through the same model
//! (`imports::model`).
//!
//! The environment is read once (its `sys.path` and distributions, which frameworks are installed), on this
//! machine: the nodes are taken to see the same files at the same paths (a shared filesystem, as the
//! environment itself is). A node's outcome depends on its facts through its driver, its GPUs and the
//! loader's variables its report recorded (`host.env.vars`: the environment `doctor` or `snapshot` ran in on
//! the node, a job's): `LD_LIBRARY_PATH`, which the loader searches before `ld.so.cache`, and `LD_PRELOAD`,
//! whose libraries are in the process before the interpreter's own (a soname they answer to is not searched
//! again); so nodes with the same driver, GPUs and variables share one judgement: a fleet has a handful of such machines, and each judgement is one emulated process. Each node's
//! recorded facts are a declared machine: its driver provides `libcuda.so.1` and NVML
//! (`imports::Machine::declared`), as on the node itself. The variables of this shell are not the nodes'
//! jobs': the environment is judged with none but the node's loader variables (`--clear-env`), as a job that
//! activates it runs. `sys.path` reads neither, so the one collection serves every node.

use crate::facts::HostFacts;
use crate::fleet::judge::{Outcome, Prediction};
use crate::matrix::Matrix;
use crate::python::frameworks::env::Chosen;
use crate::python::frameworks::{Driver, Framework, Gpu, PyEnv};
use crate::python::syspath::Target;
use crate::system::{Env, Root};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A Python environment judged on every node.
pub struct EnvArtefact {
    /// The directory, as given.
    pub path: PathBuf,
    /// The modules imported on each node, in `imports::known`'s order: every framework installed.
    pub modules: Vec<String>,
    /// Its `sys.path` and distributions, collected once.
    py: PyEnv,
    /// The frameworks of [`EnvArtefact::modules`].
    frameworks: Vec<&'static dyn Framework>,
    /// Judgements made, by driver version, GPUs and loader variables.
    judged: Mutex<HashMap<Machine, Prediction>>,
}

/// What a node's outcome depends on: its driver version, its GPUs and its loader variables ([`LOADER_VARS`]).
type Machine = (Option<String>, Vec<String>, Vec<(&'static str, String)>);

/// The variables of a node's recorded environment its imports are judged with: the loader's.
const LOADER_VARS: &[&str] = &["LD_LIBRARY_PATH", "LD_PRELOAD"];

/// Is `p` a Python environment directory: a venv (`pyvenv.cfg`) or a conda environment (`conda-meta/`), as
/// `inspect DIR` tells one ([`super::frameworks::env_kind`])?
pub fn is_env(p: &Path) -> bool {
    std::path::absolute(p).is_ok_and(|p| super::frameworks::env_kind(&Root::host(), &p).is_some())
}

impl EnvArtefact {
    /// The artefact when `paths` is one Python environment directory, read (`Err` when it holds no modelled
    /// framework, or its interpreter cannot be found); `None` when it is not one.
    pub fn detect(paths: &[PathBuf]) -> Option<Result<EnvArtefact, String>> {
        match paths {
            [p] if is_env(p) => Some(EnvArtefact::read(p)),
            _ => None,
        }
    }

    /// Reads the environment: its `sys.path`, its distributions, which frameworks it has installed.
    pub fn read(path: &Path) -> Result<EnvArtefact, String> {
        let shown = path.display();
        // Absolute, links kept: a venv is found from the name its interpreter is started by.
        let dir = std::path::absolute(path).map_err(|e| format!("--artifact {shown}: {e}"))?;
        let env = Env::empty();
        let req = crate::python::frameworks::env::request(&env, &chosen(&dir));
        let py = crate::python::frameworks::env::collect(&Root::host(), &env, &req)
            .map_err(|e| format!("--artifact {shown}: {e}"))?;
        let modules: Vec<String> = crate::imports::installed(&py)
            .into_iter()
            .map(str::to_string)
            .collect();
        if modules.is_empty() {
            let known: Vec<&str> = crate::imports::known().iter().map(|f| f.module()).collect();
            return Err(format!(
                "--artifact {shown}: a Python environment with no modelled framework installed (modelled: {})",
                known.join(", ")
            ));
        }
        let frameworks = modules
            .iter()
            .filter_map(|m| crate::imports::framework(m))
            .collect();
        Ok(EnvArtefact {
            path: path.to_path_buf(),
            modules,
            py,
            frameworks,
            judged: Mutex::new(HashMap::new()),
        })
    }

    /// The outcome of importing every installed framework, in one process, on the node whose facts are
    /// `host`, with the loader variables they recorded: it fails on the first error finding (a library the
    /// loader cannot find, the GPU not used, a framework's own check, an exception), runs when there is none
    /// and the node has a GPU.
    pub fn predict(&self, host: Option<HostFacts>, matrix: &Matrix) -> Prediction {
        let Some(mut host) = host else {
            return Prediction::no_host();
        };
        crate::host::enrich::with_matrix(&mut host, matrix);
        let (gpus, driver) = super::frameworks::machine_of(
            Some(&host),
            host.env.vars.get("CUDA_VISIBLE_DEVICES").map(String::as_str),
            matrix,
        );
        let key = (
            host.driver.as_ref().map(|d| d.version.clone()),
            gpus.iter().map(|g| g.label.clone()).collect::<Vec<_>>(),
            loader_vars(&host),
        );
        if let Some(p) = self.judged.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return p;
        }
        let p = self.judge(&gpus, driver.as_ref(), &key.2, matrix);
        if let Ok(mut m) = self.judged.lock() {
            m.insert(key, p.clone());
        }
        p
    }

    /// One judgement: the imports modelled for a declared machine with `gpus` and `driver`, in a process whose
    /// only variables are `vars`.
    fn judge(
        &self,
        gpus: &[Gpu],
        driver: Option<&Driver>,
        vars: &[(&'static str, String)],
        matrix: &Matrix,
    ) -> Prediction {
        let machine = crate::imports::Machine {
            gpus,
            driver,
            declared: true,
        };
        let mut env = Env::empty();
        for (k, v) in vars {
            env.set(k, v);
        }
        let modelled =
            match crate::imports::model(&Root::host(), &env, &self.py, &self.frameworks, &machine, matrix) {
                Ok(m) => m,
                Err(e) => return Prediction::not_judged(format!("not judged: {e}")),
            };
        let p = Prediction::of(&modelled.findings, &[]);
        if p.outcome == Outcome::Fails {
            return p;
        }
        if gpus.is_empty() {
            return Prediction::not_judged(
                "no GPU in the node's facts: the imports' GPU use cannot be judged".into(),
            );
        }
        Prediction {
            outcome: Outcome::Runs,
            reason: String::new(),
            codes: Vec::new(),
        }
    }
}

/// The loader variables the node's report recorded, each unless `snapshot --redact` replaced it by a
/// placeholder (what it named is then unknown, and the node is judged without it).
fn loader_vars(host: &HostFacts) -> Vec<(&'static str, String)> {
    LOADER_VARS
        .iter()
        .filter_map(|&k| {
            let v = host.env.vars.get(k)?;
            (!crate::bundle::redact::is_placeholder_value(v)).then(|| (k, v.clone()))
        })
        .collect()
}

/// The environment directory as `cudadiag import --venv DIR` names it.
fn chosen(dir: &Path) -> Chosen {
    Chosen {
        target: Target::Environment(dir.to_path_buf()),
        path: dir.to_path_buf(),
        because: "--artifact".into(),
    }
}
