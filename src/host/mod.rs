//! `host`: the machine, read from files alone, into [`HostFacts`].
//!
//! The by-hand ritual of CUDA triage (`nvidia-smi`, `cat /proc/driver/nvidia/version`, `ls /dev/nvidia*`,
//! `ldconfig -p | grep cuda`, `pip list | grep nvidia`, `echo $CUDA_VISIBLE_DEVICES`) done in one pass without
//! loading the driver or running anything. Every read goes through [`Root`] and every variable through [`Env`],
//! so the same code reads the live machine, a mounted filesystem (`--root`), or a replayed environment; a
//! snapshot of the result (`snapshot`, `--facts`) gives the rules the very same input.
//!
//! Each submodule cites the documents its facts rest on. Nothing here judges: `rules::host` does.
//!
//! Two facts come from the compatibility matrix, not from files: a GPU's compute capability (by PCI device id or
//! name) and the newest CUDA the driver supports (by driver branch). [`collect`] leaves them `None`;
//! [`enrich::with_matrix`] fills them. The search for `libcuda.so.1` ([`libcuda::candidates`]) asks the loader
//! emulation for the machine's own loader, its cache entries and the ELF checks that decide which file wins.

pub mod catalog;
pub mod cdi;
pub mod container_toolkit;
pub mod devnodes;
pub mod driver;
pub mod enrich;
pub mod env;
pub mod fabric;
pub mod glibc;
pub mod gpu;
pub mod hostname;
pub mod jetson;
pub mod jit_cache;
pub mod kernel_log;
pub mod libcuda;
pub mod libfile;
mod library;
pub mod owners;
pub mod ptxas;
pub mod secure_boot;

use crate::facts::HostFacts;
use crate::system::{Env, Root};
use std::sync::atomic::AtomicUsize;

/// What to collect.
#[derive(Debug, Default)]
pub struct CollectOptions<'a> {
    /// Skip the library catalogue (the slow part: a walk of every place CUDA libraries live).
    pub skip_catalog: bool,
    /// Counts directories the catalogue has visited, for a progress indicator.
    pub progress: Option<&'a AtomicUsize>,
}

/// Reads everything cudadiag knows how to read about the machine.
pub fn collect(root: &Root, env: &Env, opts: &CollectOptions<'_>) -> HostFacts {
    collect_from(root, env, opts, early(root, env))
}

/// What is read of the machine first: the driver and the kernel facts read with it, the GPUs (a Jetson's
/// integrated GPU included) and the platform. A few `procfs` and `sysfs` reads: what a framework's model needs
/// of the machine ([`Early::facts`]), ready before the rest ([`collect_from`]) is.
#[derive(Debug, Clone)]
pub struct Early {
    driver: Option<crate::facts::DriverFacts>,
    kernel: crate::facts::host::KernelFacts,
    gpus: Vec<crate::facts::GpuFacts>,
    pci_bus: crate::facts::host::PciBus,
    platform: crate::facts::host::PlatformFacts,
    /// The device nodes, once [`Early::presence`] has read them (else [`collect_from`] reads them).
    device_nodes: Option<Vec<crate::facts::host::DeviceNode>>,
    problems: Vec<String>,
}

/// Reads the [`Early`] facts.
pub fn early(root: &Root, env: &Env) -> Early {
    let mut problems = Vec::new();
    let (driver, kernel) = driver::kernel(root);
    let (mut gpus, pci_bus) = gpu::gpus(root, &mut problems);
    let platform = driver::platform(root, env);
    // A Jetson's integrated GPU is on no PCI bus: the device tree names it, and the matrix gives its compute
    // capability (`enrich`).
    if gpus.is_empty()
        && let Some(t) = &platform.tegra
        && let (Some(soc), Some(source)) = (&t.soc, &t.soc_source)
    {
        gpus.push(crate::facts::GpuFacts {
            name: format!("{soc} integrated GPU"),
            cc: None,
            pci_device_id: None,
            uuid: None,
            bus_id: None,
            source: format!("{source} names nvidia,{soc}"),
        });
    }
    Early {
        driver,
        kernel,
        gpus,
        pci_bus,
        platform,
        device_nodes: None,
        problems,
    }
}

impl Early {
    /// The facts that tell whether the machine shows NVIDIA at all: [`Early::facts`], the kernel's and the
    /// device nodes, each as [`collect_from`] reads it; every other field empty. The device nodes are kept (with
    /// what went wrong reading them) for [`collect_from`], which then does not read them again.
    pub fn presence(&mut self, root: &Root) -> HostFacts {
        let problems = &mut self.problems;
        let nodes = self
            .device_nodes
            .get_or_insert_with(|| devnodes::nodes(root, problems));
        HostFacts {
            kernel: self.kernel.clone(),
            device_nodes: nodes.clone(),
            ..self.facts()
        }
    }

    /// The facts read so far, every other field empty: the same driver, GPUs and platform that
    /// [`collect_from`] puts into the whole machine's facts.
    pub fn facts(&self) -> HostFacts {
        HostFacts {
            driver: self.driver.clone(),
            gpus: self.gpus.clone(),
            platform: self.platform.clone(),
            ..HostFacts::default()
        }
    }
}

/// `facts` with the machine's glibc read, as [`collect_from`] reads it (through `ld.so.cache`), and nothing
/// else added.
pub fn with_glibc(root: &Root, env: &Env, mut facts: HostFacts) -> HostFacts {
    let (_, cache) = libcuda::read_cache(root);
    facts.glibc = glibc::collect(root, env, &libcuda::host_platform(root), cache.as_ref());
    facts
}

/// [`collect`] with the [`Early`] facts already read.
pub fn collect_from(root: &Root, env: &Env, opts: &CollectOptions<'_>, early: Early) -> HostFacts {
    let (ld_cache, cache) = libcuda::read_cache(root);
    // The library catalogue (a walk of the loader's, toolkits' and Python environments' directories, then
    // every library's owner) needs only `ld.so.cache`: it is read on a thread of its own while the rest of
    // the machine is, instead of after it (2–5 ms into `doctor` on a 2-core machine).
    std::thread::scope(|s| {
        let catalog = (!opts.skip_catalog).then(|| {
            s.spawn(|| {
                let (found, scan_problems) = catalog::scan(root, env, cache.as_ref(), opts.progress);
                (library::describe(root, found), scan_problems)
            })
        });
        let mut facts = all_but_catalog(root, env, opts, early, ld_cache, cache.as_ref());
        if let Some(catalog) = catalog {
            let (libraries, scan_problems) = crate::parallel::join(catalog);
            facts.libraries = libraries;
            facts.problems.extend(scan_problems);
        }
        facts
    })
}

/// The machine's facts but its library catalogue, from the [`Early`] ones and `ld.so.cache` (`ld_cache` as
/// reported, `cache` parsed).
fn all_but_catalog(
    root: &Root,
    env: &Env,
    opts: &CollectOptions<'_>,
    early: Early,
    ld_cache: crate::facts::host::LdCacheState,
    cache: Option<&crate::loader::cache::LdCache>,
) -> HostFacts {
    let Early {
        driver,
        kernel,
        gpus,
        pci_bus,
        platform: platform_facts,
        device_nodes,
        mut problems,
    } = early;
    let device_nodes = device_nodes.unwrap_or_else(|| devnodes::nodes(root, &mut problems));
    let platform = libcuda::host_platform(root);
    let mut facts = HostFacts {
        hostname: hostname::collect(root),
        driver,
        gpus,
        pci_bus: Some(pci_bus),
        kernel,
        platform: platform_facts,
        identity: devnodes::identity(root),
        device_nodes,
        observed: true,
        // From the matrix, by `enrich::with_matrix`.
        driver_cuda: None,
        mig: gpu::mig(root),
        env: env::collect(root, env),
        libcuda: libcuda::candidates(root, env, &platform, cache, "libcuda.so.1"),
        nvml: libcuda::candidates(root, env, &platform, cache, "libnvidia-ml.so.1"),
        ld_cache: Some(ld_cache),
        glibc: glibc::collect(root, env, &platform, cache),
        libraries: Vec::new(),
        driver_files: Vec::new(),
        jit_cache: jit_cache::collect(root, env),
        cdi: cdi::collect(root),
        catalog_skipped: opts.skip_catalog,
        problems: Vec::new(),
        secure_boot: None,
        container_toolkit: container_toolkit::collect(root),
        kernel_log: kernel_log::collect(root),
        fabric: fabric::collect(root),
        ptxas: ptxas::collect(root, env),
    };
    if facts.driver.is_none() {
        facts.secure_boot = secure_boot::collect(root);
    }
    facts.driver_files = driver_files(root, &mut facts.libcuda, &mut facts.nvml);
    facts.problems = problems;
    facts
}

/// The files of the driver's libraries: every `libcuda.so.1` and `libnvidia-ml.so.1` candidate, and the
/// `libcuda.so*` / `libnvidia-*` files beside the driver's own. A candidate whose content is the toolkit's link
/// stub (whatever its directory) is marked as one.
fn driver_files(
    root: &Root,
    libcuda: &mut [crate::facts::host::LibCandidate],
    nvml: &mut [crate::facts::host::LibCandidate],
) -> Vec<crate::facts::host::LibFile> {
    use std::path::Path;
    let mut files: Vec<crate::facts::host::LibFile> = Vec::new();
    for c in libcuda.iter_mut().chain(nvml.iter_mut()) {
        let file = match files.iter().find(|f| f.path == c.real_path) {
            Some(f) => f.clone(),
            None => {
                let f = libfile::examine(root, Path::new(&c.real_path));
                files.push(f.clone());
                f
            }
        };
        if file.is_link_stub() {
            c.kind = crate::facts::host::LibKind::Stub;
        }
    }
    let dirs: Vec<String> = libcuda
        .iter()
        .chain(nvml.iter())
        .filter(|c| c.kind == crate::facts::host::LibKind::Driver)
        .filter_map(|c| Some(Path::new(&c.real_path).parent()?.display().to_string()))
        .collect();
    for (i, d) in dirs.iter().enumerate() {
        if !dirs[..i].contains(d) {
            libfile::driver_files_in(root, Path::new(d), 256, &mut files);
        }
    }
    files
}
