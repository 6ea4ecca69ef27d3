//! `fleet --image`: will the image's program run on each node? The same question `inspect --image IMAGE
//! --facts NODE.json` answers for one node, through the same code (`commands::image`): the image's program,
//! environment and user are read once; each node is staged as it is read (what the NVIDIA Container Toolkit
//! does there, and the node's facts a container shares); then the nodes are judged per unpacked tree.
//!
//! The toolkit's mounts put stand-ins of the node's driver libraries into the tree (their file names carry the
//! driver version; a cuda-compat library of the image may be activated ahead of them, by the node's driver
//! branch), so nodes cannot all share one tree. Nodes are grouped by what the mounts put there (their plan,
//! which follows the driver version), and the image is unpacked once per group, judged on every node of it and
//! removed before the next: one unpack per distinct driver version, never one per node, and one tree on disk
//! at a time. The loader tree and the binaries' facts are read once per group too; per node, only the rules
//! and verdicts run.

use super::super::ToolError;
use crate::commands::image::{self as judging, Mount, Program, Staged, Tree};
use crate::commands::inspect::Reading;
use crate::fleet::Node;
use crate::fleet::judge::Prediction;
use crate::image::{self, Image, Limits};
use crate::matrix::Matrix;
use std::collections::BTreeMap;
use std::path::Path;

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
    let program = Program::read(&tree, &crate::cli::SystemArgs::default(), &[])?;
    Ok(Opened { tree, program })
}

/// Judges the program on every staged node (`staged[i]` is `nodes[i]`'s; a node without one has its
/// prediction already, or none to make). Returns how many times the image was unpacked. `done` counts the
/// nodes judged.
pub fn judge_all(
    opened: Opened,
    path: &Path,
    platform: Option<&str>,
    nodes: &mut [Node],
    staged: &[Option<Staged>],
    matrix: &Matrix,
    done: &std::sync::atomic::AtomicUsize,
) -> Result<usize, ToolError> {
    let Opened { tree, program } = opened;
    let mut groups: BTreeMap<&[Mount], Vec<usize>> = BTreeMap::new();
    for (i, s) in staged.iter().enumerate() {
        if let Some(s) = s {
            groups.entry(s.plan.as_slice()).or_default().push(i);
        }
    }
    let opts = crate::inspect::InspectOptions::default();
    let (system, target) = (
        crate::cli::SystemArgs::default(),
        crate::cli::TargetArgs::default(),
    );
    // As `inspect --image` reads by default: the programs' device code (headers), their loader trees and the
    // device code of the libraries they load.
    let reading = Reading {
        paths: &[],
        opts: &opts,
        system: &system,
        target: &target,
        libraries: true,
        device_code: true,
        host: true,
        snapshot: None,
    };
    let mut first = Some(tree);
    let mut unpacked = 1;
    for (plan, members) in groups {
        let img = match first.take() {
            Some(img) => img,
            None => {
                unpacked += 1;
                image::open(path, platform, &Limits::default()).map_err(|e| ToolError(e.to_string()))?
            }
        };
        judging::mount(&img, &program, plan)?;
        let tree = Tree::read(&img, &program, &reading)?;
        let predictions = crate::parallel::map_with(
            &members,
            usize::MAX,
            || tree.facts.clone(),
            |facts, &i| {
                let (findings, verdicts) = judging::judge(facts, &tree, &program, staged[i].as_ref(), matrix);
                facts.host = None;
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Prediction::of(&findings, &verdicts)
            },
        );
        for (i, p) in members.into_iter().zip(predictions) {
            nodes[i].prediction = Some(p);
        }
        // The tree is removed before the next is unpacked.
        drop(img);
    }
    Ok(unpacked)
}
