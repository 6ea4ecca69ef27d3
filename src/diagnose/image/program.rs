//! What the judgement of an image's program takes from the image whatever the node ([`Program`]), a node as
//! a container of the image sees it ([`Staged`]), and the toolkit's mounts put into the unpacked tree
//! ([`mount`]).

use super::ldconfig;
use crate::container::{CompatMode, ContainerView, FileKind, ImageLayout, Run};
use crate::diagnose::{System, ToolError};
use crate::facts::HostFacts;
use crate::facts::host::PlatformFacts;
use crate::image::{self, Image};
use crate::system::Env;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What the judgement of an image's program takes from the image whatever the node: read once per image
/// (`inspect --image` reads it for one node, `fleet --image` for all of them).
pub struct Program {
    /// The program's environment: the image's `Env`, with `--env`/`--clear-env` applied.
    pub env: Env,
    /// The files judged, as paths inside the image: the PATHs given, else the entrypoint's program.
    pub programs: Vec<PathBuf>,
    /// How the entrypoint's program was found (none when PATHs were given).
    pub steps: Vec<String>,
    /// The entrypoint's program as `execvp` opened it (links not resolved) and the arguments it is given
    /// (none when PATHs were given): what a Python entrypoint runs ([`super::python`]).
    pub entry: Option<(PathBuf, Vec<String>)>,
    /// The container's user (the image's `User`), as the image's `/etc/passwd` names it.
    pub(super) user: Option<crate::facts::host::Identity>,
    /// What the image's own rules read (`rules::image`: its `User` and why it gives no identity).
    pub(super) about: crate::facts::image::ImageFacts,
    /// Where the toolkit puts the node's libraries: the image's layout.
    layout: ImageLayout,
    /// The ELF machine of the stand-ins for the node's libraries.
    machine: u16,
    /// The image's cuda-compat libraries (regular files of [`COMPAT_DIR`]), before any mount.
    compat: Vec<String>,
    /// How the container is started (`--gpus`, `--runtime`, CDI); by default, with GPUs.
    pub run: Run,
}

impl Program {
    /// Reads, in the image's tree as unpacked (before any mount), its environment, the program to judge, its
    /// user and what the toolkit's mounts depend on. `paths`: files named inside the image, else the
    /// entrypoint's program.
    pub fn read(img: &Image, system: &System, paths: &[PathBuf]) -> Result<Program, ToolError> {
        let env = environment(img, system);
        let (programs, steps, entry) = programs(img, paths, &env)?;
        let root = img.root();
        let compat: Vec<String> = root
            .read_dir(Path::new(COMPAT_DIR))
            .unwrap_or_default()
            .iter()
            .filter(|p| root.symlink_metadata(p).is_ok_and(|m| m.is_file()))
            .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
            .collect();
        let arm = img.facts.platform.split('/').nth(1) == Some("arm64");
        Ok(Program {
            user: image::entry::identity(&root, &img.config.user),
            about: crate::facts::image::ImageFacts {
                user: img.config.user.clone(),
                user_problem: img.facts.user_problem.clone(),
                ..Default::default()
            },
            layout: ImageLayout {
                multiarch: root.exists(Path::new("/etc/debian_version")),
                machine: if arm { "aarch64" } else { "x86_64" }.to_string(),
            },
            machine: if arm {
                image::stub::EM_AARCH64
            } else {
                image::stub::EM_X86_64
            },
            compat,
            env,
            programs,
            steps,
            entry,
            run: Run::default(),
        })
    }

    /// The node as a container of the image sees it: what the NVIDIA Container Toolkit does there, the
    /// mounts that brings into the tree, and the node's facts the container shares (its kernel module, GPUs,
    /// PCI bus, MIG, CDI specs, device nodes). Needs the node's whole facts once; keeps only those.
    pub fn stage(&self, node: HostFacts, matrix: &crate::matrix::Matrix) -> Staged {
        let view = self.toolkit(&node, matrix);
        let plan = self.plan(&view);
        Staged {
            plan,
            node: HostFacts {
                observed: node.observed,
                driver: node.driver,
                gpus: node.gpus,
                pci_bus: node.pci_bus,
                kernel: node.kernel,
                mig: node.mig,
                cdi: node.cdi,
                device_nodes: node.device_nodes,
                platform: PlatformFacts {
                    wsl: node.platform.wsl,
                    jetson: node.platform.jetson,
                    tegra: node.platform.tegra,
                    ..PlatformFacts::default()
                },
                ..HostFacts::default()
            },
            view,
        }
    }

    /// What the NVIDIA Container Toolkit does to a container of the image on the node: the image's layout
    /// (Debian-like or not, its machine) decides where the driver's libraries land.
    fn toolkit(&self, node: &HostFacts, matrix: &crate::matrix::Matrix) -> ContainerView {
        let vars: BTreeMap<String, String> = self
            .env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        crate::container::evaluate_run(&vars, node, matrix, &self.layout, &self.run)
    }

    /// The driver libraries the toolkit mounts into the tree, with the SONAME links its `ldconfig` makes, when
    /// the node's driver version names them. (The programs it mounts matter to no rule.) A cuda-compat library
    /// of the image that the toolkit activates (`ContainerView::compat_libraries_used`, its default `ldconfig`
    /// mode: a newer branch than the node's driver) is put ahead of the driver's in the container's loader
    /// configuration: here its SONAME link points at it, so that the loader finds it first, as the regenerated
    /// `ld.so.cache` makes it.
    fn plan(&self, view: &ContainerView) -> Vec<Mount> {
        if view.node.driver.is_none() {
            return Vec::new();
        }
        let activated: Vec<&str> = view
            .compat_libraries_used(&self.compat, CompatMode::default())
            .unwrap_or_default();
        let mut plan = Vec::new();
        for f in view.injected.iter().filter(|f| f.kind == FileKind::Library) {
            let path = PathBuf::from(&f.path);
            let link = match (&f.soname, path.parent()) {
                (Some(soname), Some(dir)) => {
                    let compat = activated
                        .iter()
                        .find(|c| c.starts_with(&format!("{}.", f.name)))
                        .map(|c| format!("{COMPAT_DIR}/{c}"));
                    Some((dir.join(soname), compat.unwrap_or_else(|| f.file.clone())))
                }
                _ => None,
            };
            plan.push(Mount {
                // The node's file is not here: a library with its name and SONAME stands for it.
                soname: f.soname.clone().unwrap_or_else(|| f.file.clone()),
                path,
                link,
            });
        }
        plan
    }
}

/// A node as a container of the image sees it ([`Program::stage`]).
#[derive(Debug, Clone)]
pub struct Staged {
    /// What the toolkit does there.
    pub view: ContainerView,
    /// What that puts into the image's tree: nodes with the same plan share one unpacked tree.
    pub plan: Vec<Mount>,
    /// The node's facts the container shares.
    pub(super) node: HostFacts,
}

/// One library the toolkit mounts from the node: a stand-in at `path` with `soname`, and the SONAME link
/// (where, and to what) its `ldconfig` makes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mount {
    path: PathBuf,
    soname: String,
    link: Option<(PathBuf, String)>,
}

/// Where NVIDIA's images keep the forward-compatibility libraries the toolkit looks at.
const COMPAT_DIR: &str = "/usr/local/cuda/compat";

/// Puts a plan's stand-ins and links into the tree ([`Program::plan`]), then replays the toolkit's `ldconfig`
/// with the directories they went into on its command line ([`ldconfig`]): the tree's
/// `/etc/ld.so.cache` is then the container's.
pub fn mount(img: &Image, program: &Program, plan: &[Mount]) -> Result<(), ToolError> {
    let mut dirs: Vec<String> = Vec::new();
    for m in plan {
        img.mount(&m.path, &image::stub::library(&m.soname, program.machine), None)?;
        if let Some((at, to)) = &m.link {
            img.mount(at, b"", Some(to))?;
        }
        if let Some(d) = m.path.parent().map(|d| d.display().to_string())
            && !dirs.contains(&d)
        {
            dirs.push(d);
        }
    }
    if !plan.is_empty()
        && let Some(flags) = crate::loader::cache::default_id(program.machine, true)
    {
        ldconfig::regenerate(img, &dirs, &program.layout.machine, flags)?;
    }
    Ok(())
}

/// The program's environment: the image's `Env` (none with `--clear-env`), then each `--env`.
fn environment(img: &Image, system: &System) -> Env {
    let mut env = Env::empty();
    if !system.clear_env {
        for kv in &img.config.env {
            if let Some((k, v)) = kv.split_once('=') {
                env.set(k, v);
            }
        }
    }
    for o in &system.env {
        match o.split_once('=') {
            Some((k, v)) => env.set(k, v),
            None => env.remove(o),
        }
    }
    env
}

/// What [`programs`] finds: the files, the steps, the entrypoint's program as opened and its arguments.
type Found = (Vec<PathBuf>, Vec<String>, Option<(PathBuf, Vec<String>)>);

/// The files to inspect, as real paths inside the image: the PATHs given, else the entrypoint's program.
fn programs(img: &Image, paths: &[PathBuf], env: &Env) -> Result<Found, ToolError> {
    let root = img.root();
    let shown = img.facts.path.as_str();
    if paths.is_empty() {
        let p =
            image::entry::program(&root, &img.config, env).map_err(|e| ToolError(format!("{shown}: {e}")))?;
        return Ok((vec![p.path], p.steps, Some((p.invoked, p.args))));
    }
    let mut out = Vec::new();
    for p in paths {
        out.push(
            image::entry::named(&root, p, &img.config.working_dir)
                .map_err(|e| ToolError(format!("{shown}: {e}")))?,
        );
    }
    Ok((out, Vec::new(), None))
}
