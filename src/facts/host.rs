//! The host facts model: owned, serialisable records of what `host::collect` read from the machine.
//!
//! These types hang off [`crate::facts::HostFacts`]. They are raw observations (a file's mode, a module name,
//! a version read from a file name) and never verdicts: the rules in `rules::host` decide what they mean. That
//! split is what makes `snapshot` and `--facts` give the very findings the live machine gives. Every record
//! names where it was read.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// `NVIDIA_REQUIRE_CUDA` parsed as the NVIDIA container runtime reads it: space-separated requirements,
    /// each a comma-separated list of conditions.
    pub require_cuda: Vec<Vec<Condition>>,
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
