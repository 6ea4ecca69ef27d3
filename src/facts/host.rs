//! The host facts model: owned, serialisable records of what `host::collect` read from the machine.
//!
//! These types hang off [`crate::facts::HostFacts`]. They are raw observations (a file's mode, a module name,
//! a version read from a file name) and never verdicts: the rules in `rules::host` decide what they mean. That
//! split is what makes `snapshot` and `--facts` give the very findings the live machine gives. Every record
//! names where it was read.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod container_toolkit;
pub mod fabric;
mod files;
pub mod kernel_log;
pub use files::{CacheDir, CdiSpec, JitCacheFacts, LibFile, LibShape};

/// Which NVIDIA kernel module flavour is loaded (`/proc/driver/nvidia/version` says "Open Kernel Module" for
/// the open GPU kernel modules, github.com/NVIDIA/open-gpu-kernel-modules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flavour {
    /// The closed-source module.
    Proprietary,
    /// The open GPU kernel modules.
    Open,
}

/// The kernel side: the NVIDIA module as procfs and sysfs show it, and the GPU-related modules loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelFacts {
    /// The first line of `/proc/driver/nvidia/version`, verbatim.
    pub nvrm_line: Option<String>,
    /// Why `/proc/driver/nvidia/version` is there but was not read ("is a FIFO (named pipe), not a regular
    /// file", "is 8 GiB, more than the 1 MiB …", "Permission denied"); `None` when it was read or is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_unreadable: Option<String>,
    /// Proprietary or open.
    pub flavour: Option<Flavour>,
    /// `/sys/module/nvidia/version`.
    pub sys_module_version: Option<String>,
    /// GPU-related modules loaded (`nvidia`, `nvidia_uvm`, `nvidia_modeset`, `nvidia_drm`, `nouveau`).
    pub modules: Vec<String>,
    /// Where `modules` was read (`/proc/modules`, or `/sys/module` when procfs has no module list); `None`
    /// when neither could be read, so "not loaded" cannot be told from "unknown".
    pub modules_source: Option<String>,
}

/// Windows Subsystem for Linux 2: the GPU is reached through `/dev/dxg`, and the driver's user-space
/// libraries are mounted at `/usr/lib/wsl/lib` (microsoft/WSL#5548, #5663).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WslFacts {
    /// `/dev/dxg` exists.
    pub dxg: bool,
    /// `/usr/lib/wsl/lib` exists.
    pub lib_dir: bool,
}

/// Signs that cudadiag runs inside a container.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerFacts {
    /// Best guess of the engine: `docker`, `podman`, `kubernetes`, `containerd`, `lxc`, or `unknown`.
    pub engine: String,
    /// What gave it away (`/.dockerenv exists`, `/proc/1/cgroup mentions kubepods`).
    pub evidence: Vec<String>,
}

/// One condition of `NVIDIA_REQUIRE_CUDA` (`cuda>=12.8`, `brand=tesla`, `driver<471`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    /// `cuda`, `driver`, `arch`, `brand`.
    pub key: String,
    /// `>=`, `<=`, `>`, `<`, `=`, `!=`.
    pub op: String,
    /// The right-hand side.
    pub value: String,
}

/// Where the machine runs: WSL2, a container, a Jetson board.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformFacts {
    /// WSL2, when `/dev/dxg` or `/usr/lib/wsl/lib` exists.
    pub wsl: Option<WslFacts>,
    /// A container, when one shows.
    pub container: Option<ContainerFacts>,
    /// The first line of `/etc/nv_tegra_release` (Jetson / L4T).
    pub jetson: Option<String>,
    /// A Jetson's release, SoC and `nvgpu` driver (`host::jetson`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tegra: Option<TegraFacts>,
    /// `NVIDIA_REQUIRE_CUDA` parsed as the NVIDIA container runtime reads it: space-separated requirements,
    /// each a comma-separated list of conditions.
    pub require_cuda: Vec<Vec<Condition>>,
}

/// The device nodes CUDA needs on nvgpu: those [`TegraFacts::nodes`] records when present.
pub const NVGPU_NODES: [&str; 2] = ["/dev/nvmap", "/dev/nvhost-ctrl-gpu"];

/// A Jetson board, read from `/etc/nv_tegra_release`, the device tree and the module list (`host::jetson`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TegraFacts {
    /// The first line of `/etc/nv_tegra_release`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_line: Option<String>,
    /// The Jetson Linux (L4T) release, `36.4.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l4t: Option<String>,
    /// The SoC the device tree names (`tegra234`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc: Option<String>,
    /// Where the SoC was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc_source: Option<String>,
    /// The board (`NVIDIA Jetson AGX Orin Developer Kit`), from the device tree's `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `nvgpu` is loaded (`None`: the module list could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvgpu: Option<bool>,
    /// Which of `/dev/nvmap` and `/dev/nvhost-ctrl-gpu` exist.
    #[serde(default)]
    pub nodes: Vec<String>,
}

/// The identity the diagnosed program would run as (`/proc/self/status`: `Uid:`, `Gid:`, `Groups:`; the
/// effective ids are the ones the kernel checks on `open`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Effective user id.
    pub uid: u32,
    /// Effective group id.
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
    /// Where it was read.
    pub source: String,
}

/// One `/dev/nvidia*` node (or `/dev/dxg`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceNode {
    /// The machine path (`/dev/nvidia0`).
    pub path: String,
    /// It is a character device (a fixture tree has plain files instead).
    pub char_device: bool,
    /// Permission bits (`0o666`).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
}

/// The environment variables that decide how CUDA behaves, as captured for the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvFacts {
    /// The relevant variables (see `host::env::RELEVANT`, plus every `NVIDIA_*`), by name.
    pub vars: BTreeMap<String, String>,
    /// Every `nvcc` found on `PATH`, in `PATH` order.
    pub nvcc: Vec<String>,
}

/// How a candidate directory entered the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FoundVia {
    /// `LD_LIBRARY_PATH`.
    LdLibraryPath,
    /// `/etc/ld.so.cache`.
    LdSoCache,
    /// A directory of `/etc/ld.so.conf`. No longer produced (glibc reads no ld.so.conf at run time, so a machine
    /// without a cache has no such step); kept so that snapshots taken by earlier versions still load.
    LdSoConf,
    /// The loader's built-in default directories.
    DefaultPath,
}

impl FoundVia {
    /// How people name the way it was found (`ld.so.cache`).
    pub fn as_str(self) -> &'static str {
        match self {
            FoundVia::LdLibraryPath => "LD_LIBRARY_PATH",
            FoundVia::LdSoCache => "ld.so.cache",
            FoundVia::LdSoConf => "ld.so.conf",
            FoundVia::DefaultPath => "default path",
        }
    }
}

impl std::fmt::Display for FoundVia {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The machine's `/etc/ld.so.cache`, as its loader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LdCacheState {
    /// There, in a format glibc reads.
    Usable,
    /// Not there (or not readable): the loader searches `LD_LIBRARY_PATH`, RPATH/RUNPATH and the default
    /// directories only, whatever `/etc/ld.so.conf` lists.
    Missing,
    /// There, but not a cache glibc can read (truncated, another format): glibc ignores it.
    Unusable,
}

/// What a library file is, for the driver's libraries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LibKind {
    /// The driver's own library.
    Driver,
    /// The toolkit's link-time stub (`…/stubs/`): returns error 34 at run time.
    Stub,
    /// A forward-compatibility library (`/usr/local/cuda-X.Y/compat/`).
    Compat,
    /// WSL2's `/usr/lib/wsl/lib` copy.
    Wsl,
}

impl LibKind {
    /// The kind of a driver library, from where it lives: `path` as opened and its real path `real`.
    pub fn of(path: &std::path::Path, real: &std::path::Path) -> LibKind {
        use std::os::unix::ffi::OsStrExt;
        // A component is a run of bytes between separators (`.` runs aside, which are never these names).
        let has = |p: &std::path::Path, name: &str| {
            (p.as_os_str().as_bytes())
                .split(|&b| b == b'/')
                .any(|c| c == name.as_bytes())
        };
        if has(path, "stubs") || has(real, "stubs") {
            LibKind::Stub
        } else if has(path, "compat") || has(real, "compat") {
            LibKind::Compat
        } else if path.starts_with("/usr/lib/wsl") || real.starts_with("/usr/lib/wsl") {
            LibKind::Wsl
        } else {
            LibKind::Driver
        }
    }

    /// How the reports name it (`STUB` stands out on purpose).
    pub fn as_str(self) -> &'static str {
        match self {
            LibKind::Driver => "driver",
            LibKind::Stub => "STUB",
            LibKind::Compat => "compat",
            LibKind::Wsl => "wsl",
        }
    }
}

impl std::fmt::Display for LibKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One file the loader could pick for a driver soname (`libcuda.so.1`, `libnvidia-ml.so.1`), in search order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibCandidate {
    /// The path the loader would open (`/usr/lib/x86_64-linux-gnu/libcuda.so.1`).
    pub path: String,
    /// Its real path, links resolved inside the root (`…/libcuda.so.550.90.07`).
    pub real_path: String,
    /// The driver version read from the real file name, when it carries one.
    pub version: Option<String>,
    /// Driver, stub, compat or WSL.
    pub kind: LibKind,
    /// How its directory entered the search.
    pub found_via: FoundVia,
}

/// Who installed a library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// `pip`, `conda`, `deb`, `toolkit`, `driver`.
    pub kind: String,
    /// The package (`nvidia-cuda-runtime-cu12`) or the toolkit root (`/usr/local/cuda-12.4`).
    pub name: String,
    /// The package's version, when known.
    pub version: Option<String>,
}

/// One CUDA library file found on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryEntry {
    /// The soname family it belongs to, as named on disk (`libcudart.so.12`, or the file name).
    pub soname: String,
    /// Machine path of the entry.
    pub path: String,
    /// Its real path.
    pub real_path: String,
    /// `cudart`, `libcuda`, `nvml`, `nvrtc`, `cublas`, `cudnn`, …, or `stub` / `compat` for those directories.
    pub kind: String,
    /// The exact version, when one could be read.
    pub version: Option<String>,
    /// Where `version` came from (`file name`, `pip nvidia_cuda_runtime_cu12-12.4.127.dist-info`, …).
    pub version_source: Option<String>,
    /// For a libcudart: the runtime version its `cudaRuntimeGetVersion` stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<String>,
    /// Who installed it.
    pub owner: Option<Owner>,
    /// Which scan root found it (`/usr/local/cuda-12.4`, a site-packages directory).
    pub scan_root: String,
}

/// The machine's GNU C Library: the `libc.so.6` its loader resolves (`host::glibc`), and its release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlibcFacts {
    /// The release (`2.36`).
    pub version: String,
    /// How the release was read.
    pub source: GlibcSource,
    /// The path the loader opens (`/lib/x86_64-linux-gnu/libc.so.6`).
    pub path: String,
    /// Its real path, links resolved inside the root.
    pub real_path: String,
    /// What was read: the banner line and its file offset, or the highest version DT_VERDEF defines.
    pub evidence: String,
}

/// Where a [`GlibcFacts`] release was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GlibcSource {
    /// glibc's banner in `.rodata` ("GNU C Library (…) stable release version 2.36.").
    Banner,
    /// The highest `GLIBC_x.y` the library defines (DT_VERDEF): a lower bound of the release.
    Verdef,
}

/// Facts about the machine: driver and GPUs. `host::collect` fills it from files; `--gpu`/`--driver` complete or
/// replace it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostFacts {
    /// The node's host name and where it was read (`host::hostname`; `host-1` in a snapshot written with
    /// `--redact`). `None`: not found, a what-if target, or a snapshot taken by an earlier version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<HostName>,
    /// The loaded NVIDIA kernel driver, if any.
    pub driver: Option<DriverFacts>,
    /// The NVIDIA GPUs.
    pub gpus: Vec<GpuFacts>,
    /// Whether the PCI bus was read (`None`: not recorded, as for a what-if target or a snapshot taken by an
    /// earlier version). No GPU is certain only when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus: Option<PciBus>,
    /// These facts were read from a machine (`host::collect`), not declared as a what-if target (`--gpu`,
    /// `--driver`): only then do the machine rules (device nodes, libraries, environment) apply.
    #[serde(default)]
    pub observed: bool,
    /// The newest CUDA version the driver supports (`13.0`), from the compatibility matrix, when known.
    #[serde(default)]
    pub driver_cuda: Option<String>,
    /// The kernel module as procfs and sysfs show it, and the GPU-related modules loaded.
    #[serde(default)]
    pub kernel: KernelFacts,
    /// WSL2, container, Jetson.
    #[serde(default)]
    pub platform: PlatformFacts,
    /// Who the diagnosed program runs as, when known.
    #[serde(default)]
    pub identity: Option<Identity>,
    /// The `/dev/nvidia*` (and `/dev/dxg`) nodes present.
    #[serde(default)]
    pub device_nodes: Vec<DeviceNode>,
    /// MIG instances the driver exposes (`/proc/driver/nvidia/capabilities/gpuN/mig/giM`).
    #[serde(default)]
    pub mig: Vec<String>,
    /// The CUDA-relevant environment.
    #[serde(default)]
    pub env: EnvFacts,
    /// Every `libcuda.so.1` the loader could pick, in search order.
    #[serde(default)]
    pub libcuda: Vec<LibCandidate>,
    /// The machine's `/etc/ld.so.cache` as its loader sees it (`None`: not read, as for a what-if target or a
    /// snapshot taken by an earlier version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ld_cache: Option<LdCacheState>,
    /// The machine's glibc, read from the `libc.so.6` its loader resolves (`None`: not found, not read (a
    /// what-if target), or a snapshot taken by an earlier version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glibc: Option<GlibcFacts>,
    /// Every `libnvidia-ml.so.1` the loader could pick, in search order.
    #[serde(default)]
    pub nvml: Vec<LibCandidate>,
    /// The driver libraries' files as read: the candidates above and the `libcuda.so*` / `libnvidia-*` files
    /// beside the driver's own (size, whole or cut short, SONAME, `DT_NEEDED`, symbol versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub driver_files: Vec<LibFile>,
    /// The driver's JIT cache: where, whether on, whether it holds anything (`None`: no `CUDA_CACHE_PATH` or
    /// `HOME` to place it, or not recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit_cache: Option<JitCacheFacts>,
    /// The NVIDIA Container Toolkit's CDI specs (`/etc/cdi`, `/var/run/cdi`) and the driver versions of the
    /// libraries they mount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cdi: Vec<CdiSpec>,
    /// Every CUDA library found on the machine.
    #[serde(default)]
    pub libraries: Vec<LibraryEntry>,
    /// The library catalogue was not read (`inspect` does not list the machine's libraries; `doctor` does):
    /// an empty [`HostFacts::libraries`] then says nothing about the disk.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub catalog_skipped: bool,
    /// Problems met while collecting (unreadable directories, link loops); never fatal.
    #[serde(default)]
    pub problems: Vec<String>,
    /// UEFI Secure Boot and the NVIDIA module of the running kernel, read only when no NVIDIA driver is
    /// loaded (`None`: a driver is loaded, no EFI variables, or a snapshot taken by an earlier version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_boot: Option<super::secure_boot::SecureBootFacts>,
    /// The container engines installed and the NVIDIA Container Toolkit beside them (`None`: no engine
    /// installed, or a snapshot taken by an earlier version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_toolkit: Option<container_toolkit::ContainerToolkitFacts>,
    /// The driver's Xid reports since the last boot, from the tail of a plain-text kernel log (`None`: no
    /// such log is readable under the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_log: Option<kernel_log::KernelLogFacts>,
    /// NVSwitches and NVIDIA Fabric Manager (`None`: the machine shows no NVSwitch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<fabric::FabricFacts>,
    /// The ptxas a tool would run: the first on `PATH`, `TRITON_PTXAS_PATH`, the toolkits under
    /// `/usr/local/cuda*`, each with its CUDA release (`host::ptxas`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ptxas: Vec<super::ptxas::Ptxas>,
}

/// The NVIDIA kernel driver.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverFacts {
    /// Kernel module version (`580.159.04`).
    pub version: String,
    /// Where it was read (`/proc/driver/nvidia/version`, `--driver`).
    pub source: String,
}

/// One GPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuFacts {
    /// Model name (`NVIDIA H200`).
    pub name: String,
    /// Compute capability (`9.0`), when known.
    pub cc: Option<String>,
    /// PCI device id (`0x2335`), when known.
    pub pci_device_id: Option<u16>,
    /// GPU UUID, when known.
    pub uuid: Option<String>,
    /// PCI bus id (`0000:19:00.0`), when known.
    pub bus_id: Option<String>,
    /// Where it was read (`/proc/driver/nvidia/gpus/…/information`, `--gpu`).
    pub source: String,
}

/// Whether `/sys/bus/pci/devices` was read: only a bus that was read and showed no NVIDIA display controller
/// says there is no GPU. A container without `/sys` (or with it masked) shows nothing either way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum PciBus {
    /// The directory was listed; `devices` entries were in it (NVIDIA or not).
    Read {
        /// How many PCI functions the directory listed.
        devices: usize,
    },
    /// The directory could not be listed (absent, not a directory, permission denied).
    Unreadable {
        /// Why, as the system said it.
        reason: String,
    },
}

impl DeviceNode {
    /// Whether `who` may open this node for reading and writing, by the classic owner/group/other bits (root
    /// always may). ACLs and capabilities are not modelled.
    pub fn allows_rw(&self, who: &Identity) -> bool {
        if who.uid == 0 {
            return true;
        }
        let bits = if self.uid == who.uid {
            (self.mode >> 6) & 7
        } else if self.gid == who.gid || who.groups.contains(&self.gid) {
            (self.mode >> 3) & 7
        } else {
            self.mode & 7
        };
        bits & 6 == 6
    }

    /// A per-GPU node: `/dev/nvidia` followed by digits (`/dev/nvidia0`).
    pub fn is_gpu_node(&self) -> bool {
        self.path
            .strip_prefix("/dev/nvidia")
            .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
    }
}

impl HostFacts {
    /// The per-GPU nodes (`/dev/nvidia0`, …), in the order they were read.
    pub fn gpu_nodes(&self) -> Vec<&DeviceNode> {
        self.device_nodes.iter().filter(|n| n.is_gpu_node()).collect()
    }

    /// The nodes a CUDA program opens: `/dev/nvidiactl`, `/dev/nvidia-uvm`, `/dev/dxg` (WSL2) and the per-GPU
    /// nodes; not `nvidia-modeset` or the capability nodes.
    pub fn cuda_nodes(&self) -> Vec<&DeviceNode> {
        self.device_nodes
            .iter()
            .filter(|n| {
                matches!(n.path.as_str(), "/dev/nvidiactl" | "/dev/nvidia-uvm" | "/dev/dxg")
                    || n.is_gpu_node()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_bits() {
        let node = |mode, uid, gid| DeviceNode {
            path: "/dev/nvidia0".into(),
            char_device: true,
            mode,
            uid,
            gid,
        };
        let me = Identity {
            uid: 1000,
            gid: 1000,
            groups: vec![44],
            source: String::new(),
        };
        assert!(node(0o666, 0, 0).allows_rw(&me));
        assert!(!node(0o660, 0, 0).allows_rw(&me));
        assert!(node(0o660, 0, 44).allows_rw(&me));
        assert!(node(0o600, 1000, 0).allows_rw(&me));
        assert!(!node(0o644, 0, 0).allows_rw(&me));
        let root = Identity { uid: 0, ..me.clone() };
        assert!(node(0o600, 5, 5).allows_rw(&root));
    }

    #[test]
    fn cuda_nodes_are_the_ones_a_program_opens() {
        let n = |path: &str| DeviceNode {
            path: path.into(),
            char_device: true,
            mode: 0o666,
            uid: 0,
            gid: 0,
        };
        let h = HostFacts {
            device_nodes: [
                "/dev/nvidia0",
                "/dev/nvidiactl",
                "/dev/nvidia-modeset",
                "/dev/nvidia-uvm",
                "/dev/nvidia12",
            ]
            .into_iter()
            .map(n)
            .collect(),
            ..HostFacts::default()
        };
        let paths = |v: Vec<&DeviceNode>| v.into_iter().map(|d| d.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(h.gpu_nodes()), ["/dev/nvidia0", "/dev/nvidia12"]);
        assert_eq!(
            paths(h.cuda_nodes()),
            [
                "/dev/nvidia0",
                "/dev/nvidiactl",
                "/dev/nvidia-uvm",
                "/dev/nvidia12"
            ]
        );
    }
}

/// The node's name and where it was read (`host::hostname`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostName {
    /// The name (`gpu-node-17`, or a fully qualified one).
    pub name: String,
    /// The file it was read from.
    pub source: String,
}
