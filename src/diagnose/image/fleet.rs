//! `fleet --image`: will the image's program run on each node? The same question `inspect --image IMAGE
//! --facts NODE.json` answers for one node, through the same code (`diagnose::image`): the image's program,
//! environment and user are read once; each node is staged as it is read (what the NVIDIA Container Toolkit
//! does there, and the node's facts a container shares); then the nodes are judged per unpacked tree.
//!
//! The toolkit's mounts put stand-ins of the node's driver libraries into the tree (their file names carry the
//! driver version; a cuda-compat library of the image may be activated ahead of them, by the node's driver
//! branch), so nodes cannot all be judged on one tree as it is. Nodes are grouped by what the mounts put there
//! (their plan), and the image is unpacked once: each group's mounts are made on that tree, its nodes judged,
//! and the mounts undone ([`Image::unmount`]: what they hid comes back) before the next group's. The loader
//! tree and the binaries' facts are read once per group; per node, only the rules and verdicts run. Groups
//! past [`MAX_GROUPS`] are not judged: their nodes say so, with the cap, rather than the run taking minutes.

use super::program::{self, Mount, Program, Staged};
use super::tree::{self, Tree};
use crate::diagnose::read::Reading;
use crate::diagnose::{System, ToolError};
use crate::facts::image::ImageFacts;
use crate::fleet::Node;
use crate::fleet::judge::Prediction;
use crate::image::{self, Image, Limits};
use crate::matrix::Matrix;
use std::collections::BTreeMap;
use std::path::Path;

/// Distinct sets of mounts judged (a fleet has a handful of driver versions; each set costs a loader walk of
/// the image's program).
pub const MAX_GROUPS: usize = 64;

/// The image as given, opened once, and what is read of it whatever the node.
pub struct Opened {
    /// The first unpacked tree (no mount yet): the first group is judged on it.
    pub tree: Image,
    /// The program, its environment and user, what the mounts depend on.
    pub program: Program,
}

/// Opens the image and reads its program (the entrypoint's, as `inspect --image` finds it).
pub fn open(path: &Path, platform: Option<&str>) -> Result<Opened, ToolError> {
    let tree = image::open(path, platform, &Limits::default()).map_err(|e| ToolError(e.to_string()))?;
    // The image's own environment, as a scheduler starts it (no `--env` to apply).
    let program = Program::read(&tree, &System::default(), &[])?;
    Ok(Opened { tree, program })
}

/// Judges the program on every staged node (`staged[i]` is `nodes[i]`'s; a node without one has its
/// prediction already, or none to make). Returns how many times the image was unpacked (once) and how many
/// sets of mounts were judged. `done` counts the nodes judged.
pub fn judge_all(
    opened: Opened,
    nodes: &mut [Node],
    staged: &[Option<Staged>],
    matrix: &Matrix,
    done: &std::sync::atomic::AtomicUsize,
) -> Result<(usize, usize), ToolError> {
    let Opened { tree, program } = opened;
    let mut groups: BTreeMap<&[Mount], Vec<usize>> = BTreeMap::new();
    for (i, s) in staged.iter().enumerate() {
        if let Some(s) = s {
            groups.entry(s.plan.as_slice()).or_default().push(i);
        }
    }
    // As `inspect --image` reads by default: the programs' device code (headers), their loader trees and the
    // device code of the libraries they load.
    let reading = Reading::default();
    let img = tree;
    // A Python entrypoint is judged by its imports too, as `inspect --image` judges it.
    let imports = super::python::plan(&img, &program, &[])?.map(super::python::PerMachine::new);
    let mount_sets = groups.len();
    for (n, (plan, members)) in groups.into_iter().enumerate() {
        if n >= MAX_GROUPS {
            for i in members {
                nodes[i].prediction = Some(Prediction::not_judged(format!(
                    "not judged: the fleet's nodes need more than {MAX_GROUPS} different sets of the toolkit's \
                     mounts (driver versions); judge fewer nodes at a time"
                )));
            }
            continue;
        }
        program::mount(&img, &program, plan)?;
        let tree = Tree::read(&img, &program, &reading)?;
        let predictions = crate::parallel::map_with(
            &members,
            usize::MAX,
            || tree.facts.clone(),
            |facts, &i| {
                let judged = imports
                    .as_ref()
                    .and_then(|m| m.judged(&img, &program, staged[i].as_ref(), matrix));
                let (extra, about) = judged.map(|j| (j.findings, j.facts)).unzip();
                // The interpreter is judged by its imports, as `inspect --image` judges it
                // (`rules::python_imports`): the image's program and the imports in the facts.
                facts.image = about.map(|imports| ImageFacts {
                    program: program.programs.first().map(|p| p.display().to_string()),
                    imports: Some(imports),
                    ..ImageFacts::default()
                });
                let extra = extra.unwrap_or_default();
                let (findings, verdicts) =
                    tree::judge(facts, &tree, &program, staged[i].as_ref(), &extra, matrix);
                facts.host = None;
                facts.image = None;
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Prediction::of(&findings, &verdicts)
            },
        );
        for (i, p) in members.into_iter().zip(predictions) {
            nodes[i].prediction = Some(p);
        }
        // The next group's mounts go on the image's own tree.
        img.unmount().map_err(|e| ToolError(e.to_string()))?;
        if let Some(m) = &imports {
            m.clear();
        }
    }
    drop(img);
    Ok((1, mount_sets.min(MAX_GROUPS)))
}
