//! `cudadiag inspect --image IMAGE [PATH…]`: will this image's program run on that node?
//!
//! Two sources of facts meet here. The *node* (its kernel module, GPUs, device nodes, MIG, CDI specs) is this
//! machine, a snapshot (`--facts`) or a what-if target (`--gpu`/`--driver`). The *files* the program sees
//! (its libraries, `ld.so.cache`, a cuda-compat `libcuda`, `LD_LIBRARY_PATH`) are the image's, read through
//! its unpacked root with its own environment, plus what the NVIDIA Container Toolkit puts in the container on
//! that node. The same rules then judge the combination as they judge a machine.

use super::inspect::{Reading, binaries_and_libraries, nvidia_present};
use super::{Outcome, ToolError};
use crate::cli::InspectArgs;
use crate::container::{CompatMode, ContainerView, FileKind, ImageLayout, Run};
use crate::facts::host::{ContainerFacts, DeviceNode, PlatformFacts};
use crate::facts::{Facts, HostFacts};
use crate::findings::Code;
use crate::image::{self, Image, Limits};
use crate::inspect::InspectOptions;
use crate::report::{Detail, Paint};
use crate::system::{Env, Root};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Runs `inspect --image`.
pub fn run(args: &InspectArgs, path: &Path, paint: Paint, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let limits = Limits::default();
    let layers = std::sync::atomic::AtomicUsize::new(0);
    let opened = crate::report::progress::while_running("unpacking image…", "layers", &layers, || {
        image::open_counting(path, args.platform.as_deref(), &limits, &layers)
    });
    let img = opened?;
    let matrix = super::targets::load_matrix(args.target.matrix.as_deref())?;
    let mut program = Program::read(&img, &args.system, &args.paths)?;
    program.run = run_of(args);
    let opts = super::inspect::options(args);
    // The node, and what the container toolkit mounts from it into the container: in the tree before the
    // loader is emulated there.
    let node = if args.no_host { None } else { node(args, &matrix)? };
    let (staged, note) = match node {
        Some(Node::Judged(n)) => (Some(program.stage(*n, &matrix)), None),
        Some(Node::Unjudged(note)) => (None, Some(note)),
        None => (None, None),
    };
    if let Some(s) = &staged {
        mount(&img, &program, &s.plan)?;
    }
    let reading = Reading {
        paths: &[],
        opts: &opts,
        system: &args.system,
        target: &args.target,
        libraries: !args.no_libraries,
        device_code: !args.no_device_code,
        host: !args.no_host,
        snapshot: args.facts.as_deref(),
    };
    let tree = Tree::read(&img, &program, &reading)?;
    let mut facts = tree.facts.clone();
    let (findings, verdicts) = judge(&mut facts, &tree, &program, staged.as_ref(), &matrix);
    facts.host_note = note;
    let mut about = img.facts.clone();
    if args.paths.is_empty() {
        about.program = program.programs.first().map(|p| p.display().to_string());
        about.program_steps = program.steps.clone();
    }
    about.toolkit = staged.as_ref().and_then(|s| serde_json::to_value(&s.view).ok());
    facts.image = Some(about);
    // As for `inspect`: `-v` counts kernel names, `-v --deep` lists them.
    let detail = match (args.verbose, args.deep) {
        (false, _) => Detail::Short,
        (true, false) => Detail::Verbose,
        (true, true) => Detail::Everything,
    };
    let report = crate::report::Report::new(facts, findings, verdicts);
    let outcome = super::render(&report, &args.output, paint, detail, out);
    // The unpacked tree is removed here, before the exit (never handed to `parallel::discard`, which leaks).
    drop(img);
    outcome
}

/// What the judgement of an image's program takes from the image whatever the node: read once per image
/// (`inspect --image` reads it for one node, `fleet --image` for all of them).
pub(crate) struct Program {
    /// The program's environment: the image's `Env`, with `--env`/`--clear-env` applied.
    pub env: Env,
    /// The files judged, as paths inside the image: the PATHs given, else the entrypoint's program.
    pub programs: Vec<PathBuf>,
    /// How the entrypoint's program was found (none when PATHs were given).
    pub steps: Vec<String>,
    /// The container's user (the image's `User`), as the image's `/etc/passwd` names it.
    user: Option<crate::facts::host::Identity>,
    /// What the image's own rules read (`rules::image`: its `User` and why it gives no identity).
    about: crate::facts::image::ImageFacts,
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
    pub fn read(
        img: &Image,
        system: &crate::cli::SystemArgs,
        paths: &[PathBuf],
    ) -> Result<Program, ToolError> {
        let env = environment(img, system);
        let (programs, steps) = programs(img, paths, &env)?;
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
pub(crate) struct Staged {
    /// What the toolkit does there.
    pub view: ContainerView,
    /// What that puts into the image's tree: nodes with the same plan share one unpacked tree.
    pub plan: Vec<Mount>,
    /// The node's facts the container shares.
    node: HostFacts,
}

/// One library the toolkit mounts from the node: a stand-in at `path` with `soname`, and the SONAME link
/// (where, and to what) its `ldconfig` makes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Mount {
    path: PathBuf,
    soname: String,
    link: Option<(PathBuf, String)>,
}

/// Where NVIDIA's images keep the forward-compatibility libraries the toolkit looks at.
const COMPAT_DIR: &str = "/usr/local/cuda/compat";

/// Puts a plan's stand-ins and links into the tree ([`Program::plan`]), then replays the toolkit's `ldconfig`
/// with the directories they went into on its command line (`commands::ldconfig`): the tree's
/// `/etc/ld.so.cache` is then the container's.
pub(crate) fn mount(img: &Image, program: &Program, plan: &[Mount]) -> Result<(), ToolError> {
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
        super::ldconfig::regenerate(img, &dirs, &program.layout.machine, flags)?;
    }
    Ok(())
}

/// The run `inspect --image` describes: `--gpus`, `--runtime`, `--device nvidia.com/gpu=…`.
fn run_of(args: &InspectArgs) -> Run {
    Run {
        gpus: args.run_gpus.clone(),
        runtime: args.runtime,
        cdi: args.cdi.clone(),
    }
}

/// What one unpacked (and mounted) tree gives, whatever the node: the programs' facts, their loader trees and
/// the device code of the libraries they load, with paths as the image's own; and the container's files (its
/// libraries, `ld.so.cache`, a cuda-compat `libcuda`, its environment) as the machine collector reads them.
pub(crate) struct Tree {
    /// The binaries' facts, with no host.
    pub facts: Facts,
    /// The container's files, with none of the node's facts.
    files: HostFacts,
}

impl Tree {
    /// Reads the tree as it is now (mounts done). `reading` gives the options; its paths are the program's.
    pub fn read(img: &Image, program: &Program, reading: &Reading<'_>) -> Result<Tree, ToolError> {
        let root = img.root();
        let host_paths: Vec<PathBuf> = program.programs.iter().map(|p| root.host_path(p)).collect();
        let reading = Reading {
            paths: &host_paths,
            ..*reading
        };
        let mut facts = binaries_and_libraries(&reading, &root, &program.env)?;
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
/// ([`container_host`]) and the rules and verdicts run. The toolkit's findings come first, then the machine's
/// rules, most severe first (a stable sort): a container the toolkit refuses to start never runs its program,
/// so that refusal is the answer to lead with, and each verdict's reason. Without a node (`--no-host`, a
/// machine without NVIDIA), the binaries are judged alone.
pub(crate) fn judge(
    facts: &mut Facts,
    tree: &Tree,
    program: &Program,
    staged: Option<&Staged>,
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
    let mut findings = staged.map(|s| s.view.findings.clone()).unwrap_or_default();
    findings.extend(crate::rules::evaluate(facts, matrix));
    findings.extend(crate::rules::image::user(&program.about));
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    let mut verdicts = crate::rules::verdicts(facts, &findings, matrix);
    if let Some(stop) = findings.iter().find(|f| stops_the_container(f.code)) {
        for v in &mut verdicts {
            v.outcome = crate::rules::Outcome::Fails;
            v.reason = stop.message.clone();
            v.codes.retain(|c| *c != stop.slug);
            v.codes.insert(0, stop.slug.clone());
        }
    }
    (findings, verdicts)
}

/// Whether the NVIDIA Container Toolkit refuses to start the container for this finding, so that nothing of
/// the image runs at all.
fn stops_the_container(code: Code) -> bool {
    matches!(
        code,
        Code::ContainerRequirementUnmet
            | Code::ContainerConfigInvalid
            | Code::ContainerUnknownDevice
            | Code::ContainerUserUnknown
    )
}

/// The program's environment: the image's `Env` (none with `--clear-env`), then each `--env`.
fn environment(img: &Image, system: &crate::cli::SystemArgs) -> Env {
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

/// The files to inspect, as real paths inside the image: the PATHs given, else the entrypoint's program.
fn programs(img: &Image, paths: &[PathBuf], env: &Env) -> Result<(Vec<PathBuf>, Vec<String>), ToolError> {
    let root = img.root();
    let shown = img.facts.path.as_str();
    if paths.is_empty() {
        let p =
            image::entry::program(&root, &img.config, env).map_err(|e| ToolError(format!("{shown}: {e}")))?;
        return Ok((vec![p.path], p.steps));
    }
    let mut out = Vec::new();
    for p in paths {
        out.push(
            image::entry::named(&root, p, &img.config.working_dir)
                .map_err(|e| ToolError(format!("{shown}: {e}")))?,
        );
    }
    Ok((out, Vec::new()))
}

/// Rewrites the temporary directory's paths in the binaries' facts and loader trees as the image's own
/// (`/tmp/cudadiag-image-x/usr/bin/app` is `/usr/bin/app`).
fn inside_paths(facts: &mut Facts, dir: &Path) {
    let prefix = dir.to_string_lossy().into_owned();
    fn walk(v: &mut serde_json::Value, prefix: &str) {
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
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| walk(x, prefix)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| walk(x, prefix)),
            _ => {}
        }
    }
    fn rewrite<T: serde::Serialize + serde::de::DeserializeOwned>(x: &mut T, prefix: &str) {
        if let Ok(mut v) = serde_json::to_value(&*x) {
            walk(&mut v, prefix);
            if let Ok(back) = serde_json::from_value(v) {
                *x = back;
            }
        }
    }
    rewrite(&mut facts.binaries, &prefix);
    rewrite(&mut facts.libraries, &prefix);
    rewrite(&mut facts.loaded, &prefix);
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
fn node(args: &InspectArgs, matrix: &crate::matrix::Matrix) -> Result<Option<Node>, ToolError> {
    let what_if = args.target.what_if();
    let base = if let Some(snapshot) = &args.facts {
        Some(super::snapshot::load_host(snapshot)?)
    } else if what_if {
        None
    } else {
        let here = super::doctor::collect(&Root::host(), &Env::from_process(), true);
        if !nvidia_present(&here) {
            return Ok(Some(Node::Unjudged(super::inspect::NO_NVIDIA_NOTE.into())));
        }
        Some(here)
    };
    let mut facts = Facts {
        host: base,
        ..Facts::default()
    };
    super::targets::apply(&args.target, &mut facts, matrix)?;
    let mut host = facts.host.unwrap_or_default();
    crate::host::enrich::with_matrix(&mut host, matrix);
    Ok(Some(Node::Judged(Box::new(host))))
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

/// `audit` of an image: every binary in its unpacked tree (and every wheel in it), named `IMAGE!/path`.
/// Links are not followed: what they point to is audited where it lies in the image.
pub fn audit(
    path: &Path,
    opts: &InspectOptions,
    binaries: &mut Vec<crate::facts::BinaryFacts>,
    wheels: &mut Vec<crate::facts::WheelFacts>,
) -> Result<(), ToolError> {
    let img = image::open(path, None, &Limits::default())?;
    let dir = img.dir().to_path_buf();
    let shown = path.display().to_string();
    let inside = |p: &Path| {
        let rest = p.strip_prefix(&dir).unwrap_or(p);
        format!("{shown}!/{}", rest.display())
    };
    for entry in walkdir::WalkDir::new(&dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
    {
        let file = entry.path();
        opts.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if file.extension().is_some_and(|x| x == "whl") {
            let (mut b, mut w) = (Vec::new(), Vec::new());
            crate::inspect::wheel::wheel(file, opts, &mut b, &mut w);
            let old = file.display().to_string();
            let new = inside(file);
            for x in &mut b {
                x.path = x.path.replacen(&old, &new, 1);
            }
            for x in &mut w {
                x.path = new.clone();
            }
            binaries.extend(b);
            wheels.extend(w);
            continue;
        }
        let mut head = Vec::with_capacity(8);
        let Ok(f) = std::fs::File::open(file) else {
            continue;
        };
        use std::io::Read;
        if f.take(8).read_to_end(&mut head).is_err()
            || !crate::inspect::wheel::looks_binary(&head, &file.to_string_lossy())
        {
            continue;
        }
        match crate::inspect::path(file, opts) {
            Ok(found) => binaries.extend(found.into_iter().map(|mut b| {
                let old = file.display().to_string();
                b.path = b.path.replacen(&old, &inside(file), 1);
                b
            })),
            Err(e) => return Err(ToolError(format!("{}: {}", inside(file), e.error))),
        }
    }
    drop(img);
    Ok(())
}
