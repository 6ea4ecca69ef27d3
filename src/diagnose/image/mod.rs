//! The image engine: will an image's program run on a node? (`inspect --image`, and `fleet --image` for many
//! nodes: [`fleet`].)
//!
//! Two sources of facts meet here. The *node* (its kernel module, GPUs, device nodes, MIG, CDI specs) is this
//! machine, a snapshot (`--facts`) or a what-if target (`--gpu`/`--driver`). The *files* the program sees
//! (its libraries, `ld.so.cache`, a cuda-compat `libcuda`, `LD_LIBRARY_PATH`) are the image's, read through
//! its unpacked root with its own environment, plus what the NVIDIA Container Toolkit puts in the container on
//! that node ([`program::mount`], [`ldconfig`]). The same rules then judge the combination as they judge a machine
//! ([`tree`]).

pub mod audit;
pub mod fleet;
mod ldconfig;
pub mod program;
pub mod python;
pub mod tree;

use super::ToolError;
use super::machine::nvidia_present;
use super::read::Reading;
use crate::container::Run;
use crate::facts::{Facts, HostFacts};
use crate::image::Image;
use crate::matrix::Matrix;
use crate::rules::Judgement;
use crate::system::{Env, Root};
use program::Program;
use tree::Tree;

/// An image's program judged on its node, as `inspect --image` asks: `r` is what its flags say to read (its
/// paths are named inside the image; none: the entrypoint's program), `run` how the container is started,
/// `imports` the Python modules `--import` names (none: those a Python entrypoint imports, [`python`]).
/// Returns the facts (the image's among them, `facts.image`) and the rules' judgement of them.
pub fn diagnose(
    img: &Image,
    r: &Reading,
    run: Run,
    imports: &[String],
    matrix: &Matrix,
) -> Result<(Facts, Judgement), ToolError> {
    let mut program = Program::read(img, &r.system, &r.paths)?;
    program.run = run;
    // The node, and what the container toolkit mounts from it into the container: in the tree before the
    // loader is emulated there.
    let node = if r.host { node(r, matrix)? } else { None };
    let (staged, note) = match node {
        Some(Node::Judged(n)) => (Some(program.stage(*n, matrix)), None),
        Some(Node::Unjudged(note)) => (None, Some(note)),
        None => (None, None),
    };
    if let Some(s) = &staged {
        program::mount(img, &program, &s.plan)?;
    }
    let tree = Tree::read(img, &program, r)?;
    // The Python imports, modelled in the same tree (the toolkit's mounts made).
    let judged = match python::plan(img, &program, imports)? {
        Some(plan) => python::judge(img, &program, staged.as_ref(), &plan, matrix)?,
        None => None,
    };
    let (import_findings, import_facts) = judged.map(|j| (j.findings, j.facts)).unzip();
    let mut facts = tree.facts.clone();
    // What the image is and runs, in the facts before they are judged: the rules judge an interpreter by the
    // imports modelled for it (`rules::python_imports`).
    let mut about = img.facts.clone();
    if r.paths.is_empty() {
        about.program = program.programs.first().map(|p| p.display().to_string());
        about.program_steps = program.steps.clone();
    }
    about.toolkit = staged.as_ref().and_then(|s| serde_json::to_value(&s.view).ok());
    about.imports = import_facts;
    facts.image = Some(about);
    let (findings, verdicts) = tree::judge(
        &mut facts,
        &tree,
        &program,
        staged.as_ref(),
        import_findings.as_deref().unwrap_or_default(),
        matrix,
    );
    facts.host_note = note;
    let judgement = Judgement::of(&facts, findings, verdicts);
    Ok((facts, judgement))
}

/// The node a container of the image would run on.
enum Node {
    /// Its facts: this machine's, a snapshot's, or a what-if target's (`--gpu`/`--driver`).
    Judged(Box<HostFacts>),
    /// This machine, which has no NVIDIA GPU or driver: the binaries are judged alone, and why.
    Unjudged(String),
}

/// The node: `--facts`, else the what-if target, else this machine (judged only when it shows NVIDIA); a
/// what-if target overrides the GPUs and driver of the other two, as for `inspect`.
fn node(r: &Reading, matrix: &Matrix) -> Result<Option<Node>, ToolError> {
    let what_if = r.target.what_if();
    let base = if let Some(snapshot) = &r.snapshot {
        Some(super::snapshot::load_host(snapshot)?)
    } else if what_if {
        None
    } else {
        let here = super::machine::collect(&Root::host(), &Env::from_process(), true, &super::Quiet);
        if !nvidia_present(&here) {
            return Ok(Some(Node::Unjudged(super::read::NO_NVIDIA_NOTE.into())));
        }
        Some(here)
    };
    let mut facts = Facts {
        host: base,
        ..Facts::default()
    };
    super::targets::apply(&r.target, &mut facts, matrix)?;
    let mut host = facts.host.unwrap_or_default();
    crate::host::enrich::with_matrix(&mut host, matrix);
    Ok(Some(Node::Judged(Box::new(host))))
}
