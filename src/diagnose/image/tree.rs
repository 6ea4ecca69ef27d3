//! One unpacked (and mounted) tree read, and the image's program judged on it for one node.

use super::program::{Program, Staged};
use crate::container::ContainerView;
use crate::diagnose::ToolError;
use crate::diagnose::read::{Reading, binaries_and_libraries};
use crate::facts::host::{ContainerFacts, DeviceNode, PlatformFacts};
use crate::facts::{Facts, HostFacts};
use crate::image::Image;
use std::path::{Path, PathBuf};

/// What one unpacked (and mounted) tree gives, whatever the node: the programs' facts, their loader trees and
/// the device code of the libraries they load, with paths as the image's own; and the container's files (its
/// libraries, `ld.so.cache`, a cuda-compat `libcuda`, its environment) as the machine collector reads them.
pub struct Tree {
    /// The binaries' facts, with no host.
    pub facts: Facts,
    /// The container's files, with none of the node's facts.
    files: HostFacts,
}

impl Tree {
    /// Reads the tree as it is now (mounts done). `reading` gives the options; its paths are the program's.
    pub fn read(img: &Image, program: &Program, reading: &Reading) -> Result<Tree, ToolError> {
        let root = img.root();
        let host_paths: Vec<PathBuf> = program.programs.iter().map(|p| root.host_path(p)).collect();
        let mut facts = binaries_and_libraries(&host_paths, reading, &root, &program.env)?;
        inside_paths(&mut facts, img.dir());
        let files = crate::host::collect(
            &root,
            &program.env,
            &crate::host::CollectOptions {
                skip_catalog: true,
                progress: None,
            },
        );
        Ok(Tree { facts, files })
    }
}

/// Judges the program on one node: `facts` (a copy of the tree's) gets the container's host facts
/// ([`container_host`]) and the rules run, the toolkit's effect on the verdicts among them
/// (`rules::container_verdict`), with the findings of the program's Python imports (`imports`, from
/// [`super::python`]). Without a node (`--no-host`, a machine without NVIDIA), the binaries are
/// judged alone.
pub fn judge(
    facts: &mut Facts,
    tree: &Tree,
    program: &Program,
    staged: Option<&Staged>,
    imports: &[crate::findings::Finding],
    matrix: &crate::matrix::Matrix,
) -> (Vec<crate::findings::Finding>, Vec<crate::rules::Verdict>) {
    if let Some(s) = staged {
        facts.host = Some(container_host(
            tree.files.clone(),
            program.user.clone(),
            s.node.clone(),
            &s.view,
            matrix,
        ));
    }
    // The imports' findings (a framework's own failure to load, its fall-back to the CPU) are the process's:
    // they come with the toolkit's, ahead of the machine's rules, and the verdicts are computed from all.
    let mut before: Vec<crate::findings::Finding> =
        staged.map(|s| s.view.findings.clone()).unwrap_or_default();
    before.extend_from_slice(imports);
    crate::rules::container_verdict::evaluate(facts, matrix, &before, &program.about)
}

/// Rewrites the temporary directory's paths in the binaries' facts and loader trees as the image's own
/// (`/tmp/cudadiag-image-x/usr/bin/app` is `/usr/bin/app`).
fn inside_paths(facts: &mut Facts, dir: &Path) {
    let prefix = dir.to_string_lossy().into_owned();
    fn rewrite<T: serde::Serialize + serde::de::DeserializeOwned>(x: &mut T, prefix: &str) {
        if let Ok(mut v) = serde_json::to_value(&*x) {
            inside_value(&mut v, prefix);
            if let Ok(back) = serde_json::from_value(v) {
                *x = back;
            }
        }
    }
    rewrite(&mut facts.binaries, &prefix);
    rewrite(&mut facts.libraries, &prefix);
    rewrite(&mut facts.loaded, &prefix);
}

/// Rewrites every string of `v` that is a path under `prefix` (the unpacked tree) as the image's own path.
pub(super) fn inside_value(v: &mut serde_json::Value, prefix: &str) {
    match v {
        serde_json::Value::String(s) => {
            if let Some(rest) = s.strip_prefix(prefix)
                && (rest.is_empty() || rest.starts_with('/'))
            {
                *s = if rest.is_empty() {
                    "/".into()
                } else {
                    rest.to_string()
                };
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| inside_value(x, prefix)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| inside_value(x, prefix)),
        _ => {}
    }
}

/// The machine the program sees: the image's files (`files`, read by [`Tree::read`]) (libraries, `ld.so.cache`, a cuda-compat `libcuda`, its
/// environment) with the node's kernel module, GPUs, PCI bus, MIG and CDI specs, and the device nodes the
/// toolkit creates. The machine rules apply when the node was read, or declared with both a driver and a GPU.
fn container_host(
    mut files: HostFacts,
    user: Option<crate::facts::host::Identity>,
    n: HostFacts,
    view: &ContainerView,
    matrix: &crate::matrix::Matrix,
) -> HostFacts {
    files.observed = n.observed || (n.driver.is_some() && !n.gpus.is_empty());
    files.device_nodes = view
        .devices
        .device_nodes
        .iter()
        .map(|p| {
            n.device_nodes
                .iter()
                .find(|d| &d.path == p)
                .cloned()
                .unwrap_or(DeviceNode {
                    path: p.clone(),
                    char_device: true,
                    mode: 0o666,
                    uid: 0,
                    gid: 0,
                })
        })
        .collect();
    files.platform = PlatformFacts {
        wsl: n.platform.wsl,
        jetson: n.platform.jetson,
        tegra: n.platform.tegra,
        container: Some(ContainerFacts {
            engine: "unknown".into(),
            evidence: vec!["the image's program, run in a container".into()],
        }),
        require_cuda: std::mem::take(&mut files.platform.require_cuda),
    };
    files.driver = n.driver;
    files.gpus = n.gpus;
    files.pci_bus = n.pci_bus;
    files.kernel = n.kernel;
    // The container's user is the image's `User`, not cudadiag's; the toolkit creates the device nodes with
    // the node's modes.
    files.identity = user;
    files.mig = n.mig;
    files.cdi = n.cdi;
    crate::host::enrich::with_matrix(&mut files, matrix);
    files
}
