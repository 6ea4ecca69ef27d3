//! Findings about the machine: driver, GPUs, device nodes, driver libraries, `CUDA_VISIBLE_DEVICES`.
//!
//! Pure functions over [`HostFacts`], one per finding. The facts they rest on and the CUDA errors they predict
//! are documented in `docs/compatibility.md` ("Forward compatibility: 803 and 804"; "The CUDA error table the
//! rules use": 34, 100, 999, NVML "Driver/library version mismatch"; "Failures on the host, as users meet
//! them").

use super::visibility::visibility;
use crate::facts::host::PciBus;
use crate::facts::host::{DeviceNode, FoundVia, LdCacheState, LibCandidate, LibKind, LibraryEntry};
use crate::facts::{DriverFacts, HostFacts};
use crate::findings::{Code, Finding};
use std::cmp::Ordering;

/// Runs every host rule on facts read from a machine. A what-if target (`--gpu`, `--driver`) declares a GPU and
/// a driver, not device nodes or libraries, so nothing here applies to it.
pub fn evaluate(h: &HostFacts) -> Vec<Finding> {
    if !h.observed {
        return Vec::new();
    }
    [
        no_driver(h),
        nouveau_loaded(h),
        no_gpu(h),
        driver_library_mismatch(h),
        device_nodes_missing(h),
        nvidia_uvm_missing(h),
        device_permission_denied(h),
        no_visible_devices(h),
        stub_libcuda(h),
        compat_libcuda_unsupported(h),
        libcuda_not_found(h),
    ]
    .into_iter()
    .flatten()
    .chain(super::driver_files::damaged(h))
    .chain(super::device_order::device_order_mismatch(h))
    .chain(super::cdi::cdi_spec_stale(h))
    .collect()
}

/// Compares dotted numeric versions (`550.54.14` < `550.90.07`); non-numeric parts compare as 0.
pub fn cmp_versions(a: &str, b: &str) -> Ordering {
    let parse = |s: &str| -> Vec<u64> { s.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    parse(a).cmp(&parse(b))
}

pub(crate) fn wsl(h: &HostFacts) -> bool {
    h.platform.wsl.is_some()
}

/// Jetson's integrated GPU is not a PCI device, and older L4T releases drive it with nvgpu, which has no
/// `/proc/driver/nvidia`: the PCI and procfs checks say nothing there.
pub(crate) fn jetson(h: &HostFacts) -> bool {
    h.platform.jetson.is_some() || h.platform.tegra.is_some()
}

/// A Jetson whose integrated GPU is driven by `nvgpu` (Jetson Linux up to R36): loaded, or not known not to be.
/// (A Jetson whose driver is `nvidia.ko`, as Thor's on R38 is expected to be, shows in procfs like any other.)
fn nvgpu(h: &HostFacts) -> Option<bool> {
    h.platform.tegra.as_ref()?.nvgpu
}

/// `no-driver` on a Jetson: the device tree shows its GPU, the module list was read, and neither `nvgpu` nor
/// `nvidia` is loaded.
fn jetson_no_driver(h: &HostFacts) -> Option<Finding> {
    let t = h.platform.tegra.as_ref()?;
    if h.gpus.is_empty() || t.nvgpu != Some(false) || h.kernel.modules.iter().any(|m| m == "nvidia") {
        return None;
    }
    let mut f = Finding::new(
        Code::NoDriver,
        "the Jetson's GPU driver is not loaded (neither nvgpu nor nvidia): CUDA programs cannot start",
        "Load it (`sudo modprobe nvgpu`) and look in `dmesg` for why it did not load at boot; a kernel that is \
         not Jetson Linux's own needs NVIDIA's out-of-tree modules for it (`nvidia-l4t-kernel-oot-modules` on \
         Jetson Linux R36). Reflashing with SDK Manager restores the stock kernel and modules.",
    )
    .because(format!(
        "{} does not list nvgpu",
        h.kernel.modules_source.as_deref().unwrap_or("the module list")
    ))
    .because("/proc/driver/nvidia/version does not exist");
    for g in &h.gpus {
        f = f.because(format!("{} ({})", g.name, g.source));
    }
    Some(f)
}

fn in_container(h: &HostFacts) -> bool {
    h.platform.container.is_some()
}

fn via(c: &LibCandidate) -> &'static str {
    match c.found_via {
        FoundVia::LdLibraryPath => "LD_LIBRARY_PATH",
        FoundVia::LdSoCache => "ld.so.cache",
        FoundVia::LdSoConf => "ld.so.conf",
        FoundVia::DefaultPath => "the default path",
    }
}

fn describe(c: &LibCandidate) -> String {
    let real = if c.real_path != c.path {
        format!(" -> {}", c.real_path)
    } else {
        String::new()
    };
    format!("{}{real} (found via {})", c.path, via(c))
}

fn node<'a>(h: &'a HostFacts, path: &str) -> Option<&'a DeviceNode> {
    h.device_nodes.iter().find(|n| n.path == path)
}

fn driver_evidence(h: &HostFacts) -> Option<String> {
    let d = h.driver.as_ref()?;
    Some(format!("{} shows kernel module {}", d.source, d.version))
}

/// Why the PCI bus says nothing, when it was not read (`None`: it was read, or the facts do not say).
fn pci_unread(h: &HostFacts) -> Option<&str> {
    match &h.pci_bus {
        Some(PciBus::Unreadable { reason }) => Some(reason),
        Some(PciBus::Read { .. }) | None => None,
    }
}

/// `no-driver`: no NVIDIA kernel module is loaded, while the PCI bus shows NVIDIA GPUs or could not be read
/// (a container without `/sys`): no driver is certain then, no GPU is not.
pub fn no_driver(h: &HostFacts) -> Option<Finding> {
    if h.driver.is_some() || wsl(h) {
        return None;
    }
    if jetson(h) {
        return jetson_no_driver(h);
    }
    let unread = pci_unread(h);
    if h.gpus.is_empty() && unread.is_none() {
        return None;
    }
    let module = if h.kernel.version_unreadable.is_some() {
        "no loaded NVIDIA kernel driver could be confirmed: its version file cannot be read"
    } else {
        "no NVIDIA kernel driver is loaded"
    };
    let message = if h.gpus.is_empty() {
        format!(
            "{module}: CUDA programs cannot start (whether the machine has an NVIDIA GPU is unknown: the PCI bus \
             could not be read)"
        )
    } else {
        format!(
            "{} NVIDIA GPU{} on the PCI bus, but {module}",
            h.gpus.len(),
            if h.gpus.len() == 1 { " is" } else { "s are" },
        )
    };
    let help = if h.gpus.is_empty() && in_container(h) {
        "Inside a container the driver comes from the host: start it with GPU access (`docker run --gpus all`, \
         CDI `--device nvidia.com/gpu=all`, or a `nvidia.com/gpu` resource limit on Kubernetes), on a host \
         whose NVIDIA driver is loaded (`nvidia-smi` there)."
    } else {
        "Install the NVIDIA driver, or load it (`sudo modprobe nvidia`). If it is installed: check for a \
         module built for the running kernel (DKMS), Secure Boot rejecting an unsigned module (\"Key was \
         rejected by service\" in dmesg), and nouveau holding the GPU."
    };
    let mut f = Finding::new(Code::NoDriver, message, help).because(match &h.kernel.version_unreadable {
        Some(why) => format!("/proc/driver/nvidia/version is there but was not read: {why}"),
        None => "/proc/driver/nvidia/version does not exist".to_string(),
    });
    for g in &h.gpus {
        f = f.because(format!("{} ({})", g.name, g.source));
    }
    if let Some(why) = unread {
        f = f.because(format!("the PCI bus was not read: {why}"));
    }
    Some(f)
}

/// `nouveau-loaded`: the open-source nouveau driver is loaded and holds the GPU.
pub fn nouveau_loaded(h: &HostFacts) -> Option<Finding> {
    if !h.kernel.modules.iter().any(|m| m == "nouveau") {
        return None;
    }
    let source = h.kernel.modules_source.as_deref().unwrap_or("the module list");
    Some(
        Finding::new(
            Code::NouveauLoaded,
            "the nouveau driver is loaded: the NVIDIA driver cannot bind the GPU while it is",
            "Blacklist nouveau (`blacklist nouveau` and `options nouveau modeset=0` in \
             /etc/modprobe.d/blacklist-nouveau.conf), rebuild the initramfs (`update-initramfs -u` or `dracut -f`) \
             and reboot; then install or load the NVIDIA driver.",
        )
        .because(format!("{source} lists nouveau")),
    )
}

/// `no-gpu`: no NVIDIA GPU is visible to the driver, and the PCI bus was read and shows none. Without a driver
/// and without a readable bus nothing is known about the GPU (`no-driver` speaks); with a driver, its own GPU
/// list is enough.
pub fn no_gpu(h: &HostFacts) -> Option<Finding> {
    if !h.gpus.is_empty() || wsl(h) || jetson(h) {
        return None;
    }
    let unread = pci_unread(h);
    if h.driver.is_none() && unread.is_some() {
        return None;
    }
    let mut f = Finding::new(
        Code::NoGpu,
        "no NVIDIA GPU is present: CUDA will report error 100 (no CUDA-capable device is detected)",
        if in_container(h) {
            "Inside a container the GPU must be passed in: `docker run --gpus all`, `--device nvidia.com/gpu=all` \
             (CDI), or a `nvidia.com/gpu` resource limit on Kubernetes."
        } else {
            "Run on a machine with an NVIDIA GPU, or check that the GPU is seated, powered and enabled in the \
             firmware (`lspci -d 10de:`)."
        },
    )
    .because(if h.driver.is_some() {
        "/proc/driver/nvidia/gpus lists no GPU"
    } else {
        "/proc/driver/nvidia/gpus does not exist (no NVIDIA driver)"
    });
    f = f.because(match (&h.pci_bus, unread) {
        (_, Some(why)) => format!("the PCI bus was not read: {why}"),
        (Some(PciBus::Read { devices }), None) => format!(
            "/sys/bus/pci/devices lists {devices} PCI function{}, none an NVIDIA (0x10de) display controller",
            if *devices == 1 { "" } else { "s" }
        ),
        _ => "/sys/bus/pci/devices has no NVIDIA (0x10de) display controller".to_string(),
    });
    if let Some(e) = driver_evidence(h) {
        f = f.because(e);
    }
    Some(f)
}

/// `driver-library-mismatch`: the user-space driver libraries the loader picks are another version than the
/// loaded kernel module (NVML: "Driver/library version mismatch"; CUDA: 803/804).
pub fn driver_library_mismatch(h: &HostFacts) -> Option<Finding> {
    let d = h.driver.as_ref()?;
    let mismatched: Vec<&LibCandidate> = [&h.libcuda, &h.nvml]
        .into_iter()
        .filter_map(|list| list.iter().find(|c| c.kind == LibKind::Driver))
        .filter(|c| c.version.as_deref().is_some_and(|v| v != d.version))
        .collect();
    let first = mismatched.first()?;
    let mut f = Finding::new(
        Code::DriverLibraryMismatch,
        format!(
            "the driver libraries are version {} but the loaded kernel module is {}",
            first.version.as_deref().unwrap_or("?"),
            d.version
        ),
        "The driver was upgraded (or reinstalled) without unloading the old kernel module: reboot, or unload \
         and reload the nvidia modules (`sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe \
         nvidia`). If it persists, two driver installs are mixed (.run and packages): reinstall one.",
    );
    if let Some(e) = driver_evidence(h) {
        f = f.because(e);
    }
    for c in mismatched {
        f = f.because(format!(
            "{} is version {}",
            describe(c),
            c.version.as_deref().unwrap_or("?")
        ));
    }
    Some(f)
}

/// `device-nodes-missing`: the driver is loaded (procfs shows it) but `/dev/nvidiactl` or `/dev/nvidiaN` is
/// missing. In a container this is the signature of a container started without GPU access.
pub fn device_nodes_missing(h: &HostFacts) -> Option<Finding> {
    if h.driver.is_none() && nvgpu(h) == Some(true) {
        return jetson_nodes_missing(h);
    }
    let d = driver_evidence(h)?;
    if wsl(h) {
        return None;
    }
    let mut missing = Vec::new();
    if node(h, "/dev/nvidiactl").is_none() {
        missing.push("/dev/nvidiactl does not exist");
    }
    if h.gpu_nodes().is_empty() {
        missing.push("no /dev/nvidia<N> GPU node exists");
    }
    if missing.is_empty() {
        return None;
    }
    let (message, help) = if in_container(h) {
        (
            "the container can see the host's driver but has no GPU device nodes: it was started without GPU \
             access",
            "Start the container with GPU access: `docker run --gpus all …` (or `--runtime=nvidia`, or CDI \
             `--device nvidia.com/gpu=all`; in Compose a `deploy.resources.reservations.devices` entry; on \
             Kubernetes a `nvidia.com/gpu` resource limit).",
        )
    } else {
        (
            "the NVIDIA driver is loaded but its device nodes are missing",
            "Create the nodes: run `sudo nvidia-modprobe -c 0` (or `nvidia-smi` once as root), or enable \
             nvidia-persistenced; check the udev rules that create /dev/nvidia*.",
        )
    };
    let mut f = Finding::new(Code::DeviceNodesMissing, message, help).because(d);
    for m in missing {
        f = f.because(m);
    }
    if let Some(c) = &h.platform.container {
        f = f.because(format!("running in a container ({})", c.evidence.join(", ")));
    }
    Some(f)
}

/// `device-nodes-missing` on a Jetson: `nvgpu` is loaded but `/dev/nvmap` or `/dev/nvhost-ctrl-gpu`, which
/// libcuda opens there, is missing: a container started without the NVIDIA runtime, as a rule.
fn jetson_nodes_missing(h: &HostFacts) -> Option<Finding> {
    let t = h.platform.tegra.as_ref()?;
    let missing: Vec<&str> = crate::facts::host::NVGPU_NODES
        .iter()
        .copied()
        .filter(|n| !t.nodes.iter().any(|have| have == n))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let (message, help) = if in_container(h) {
        (
            "the container runs on a Jetson but has no GPU device nodes: it was started without the NVIDIA runtime",
            "Start it with `docker run --runtime nvidia …` (or `--gpus all` with the NVIDIA Container Toolkit \
             for Jetson, or CDI `--device nvidia.com/gpu=all` after `nvidia-ctk cdi generate --mode=csv`).",
        )
    } else {
        (
            "nvgpu is loaded but its device nodes are missing",
            "The nodes come from the nvgpu and nvmap drivers through udev: check `dmesg` for their errors and \
             the udev rules of Jetson Linux (`/etc/udev/rules.d/99-tegra-devices.rules`); a reboot recreates them.",
        )
    };
    let mut f = Finding::new(Code::DeviceNodesMissing, message, help).because(format!(
        "{} lists nvgpu",
        h.kernel.modules_source.as_deref().unwrap_or("the module list")
    ));
    for m in missing {
        f = f.because(format!("{m} does not exist"));
    }
    if let Some(c) = &h.platform.container {
        f = f.because(format!("running in a container ({})", c.evidence.join(", ")));
    }
    Some(f)
}

/// `nvidia-uvm-missing`: the GPU nodes exist but `/dev/nvidia-uvm` does not (`cuInit` fails with 999 while
/// `nvidia-smi` works).
pub fn nvidia_uvm_missing(h: &HostFacts) -> Option<Finding> {
    let d = driver_evidence(h)?;
    if wsl(h) || node(h, "/dev/nvidiactl").is_none() || node(h, "/dev/nvidia-uvm").is_some() {
        return None;
    }
    let mut f = Finding::new(
        Code::NvidiaUvmMissing,
        "/dev/nvidia-uvm is missing: CUDA initialisation will fail with error 999 (unknown error) although \
         nvidia-smi works",
        "Load the module and create its node: `sudo modprobe nvidia-uvm` and `sudo nvidia-modprobe -u -c=0`; \
         make it permanent with `nvidia-uvm` in /etc/modules-load.d/. In a container, the host must have it \
         loaded before the container starts.",
    )
    .because(d)
    .because("/dev/nvidiactl exists but /dev/nvidia-uvm does not");
    if let Some(src) = &h.kernel.modules_source {
        let loaded = h.kernel.modules.iter().any(|m| m == "nvidia_uvm");
        f = f.because(format!(
            "{src} {} nvidia_uvm",
            if loaded { "lists" } else { "does not list" }
        ));
    }
    Some(f)
}

/// `device-permission-denied`: the current user cannot open a GPU device node read-write.
pub fn device_permission_denied(h: &HostFacts) -> Option<Finding> {
    let who = h.identity.as_ref()?;
    let denied: Vec<&DeviceNode> = h.cuda_nodes().into_iter().filter(|n| !n.allows_rw(who)).collect();
    if denied.is_empty() {
        return None;
    }
    let mut f = Finding::new(
        Code::DevicePermissionDenied,
        format!(
            "uid {} cannot open {} for reading and writing",
            who.uid,
            denied
                .iter()
                .map(|n| n.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "Add the user to the group that owns the nodes (often `video` or `render`: `sudo usermod -aG video \
         $USER`, then log in again), or fix the node mode (the driver's NVreg_DeviceFileMode / \
         NVreg_DeviceFileGID options, or the udev rule that creates them).",
    )
    .because(format!(
        "{}: uid {}, gid {}, groups {:?}",
        who.source, who.uid, who.gid, who.groups
    ));
    for n in denied {
        f = f.because(format!(
            "{} is mode {:o}, owner {}, group {}",
            n.path, n.mode, n.uid, n.gid
        ));
    }
    Some(f)
}

/// `no-visible-devices`: `CUDA_VISIBLE_DEVICES` leaves no GPU visible (empty, `-1`, out of range, unknown
/// UUID; the list stops at its first invalid entry).
pub fn no_visible_devices(h: &HostFacts) -> Option<Finding> {
    let value = h.env.vars.get("CUDA_VISIBLE_DEVICES")?;
    let v = visibility(value, &h.gpus);
    if v.unknown_mig || !v.visible.is_empty() {
        return None;
    }
    let (entry, why) = v.stopped_at?;
    let trivially_empty = value.trim().is_empty() || entry.starts_with('-');
    if h.gpus.is_empty() && !trivially_empty {
        return None; // nothing to check indices and UUIDs against; `no-gpu` speaks
    }
    let mut f = Finding::new(
        Code::NoVisibleDevices,
        format!("CUDA_VISIBLE_DEVICES={value:?} hides every GPU: CUDA will report error 100"),
        "Unset CUDA_VISIBLE_DEVICES, or list valid device indices or GPU UUIDs (`nvidia-smi -L`), comma-separated. \
         CUDA reads the list up to its first invalid entry, so put valid entries first.",
    )
    .because(format!("CUDA_VISIBLE_DEVICES={value:?} in the environment"));
    f = f.because(if entry.is_empty() {
        why
    } else {
        format!("the list stops at {entry:?}: {why}")
    });
    if !h.gpus.is_empty() {
        f = f.because(format!(
            "the driver lists {}",
            h.gpus
                .iter()
                .enumerate()
                .map(|(i, g)| format!("{i}: {} {}", g.name, g.uuid.as_deref().unwrap_or("")))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    Some(f)
}

/// `stub-libcuda`: the first `libcuda.so.1` the loader finds is the toolkit's stub (error 34), whether it sits in
/// a `stubs` directory or was copied elsewhere under that name (recognised by its content: no `DT_NEEDED`, no
/// symbol versions; `host::libfile`). An unversioned stub `libcuda.so` on the path is harmless: nothing at run
/// time opens that name.
pub fn stub_libcuda(h: &HostFacts) -> Option<Finding> {
    let first = h.libcuda.first().filter(|c| c.kind == LibKind::Stub)?;
    let in_stubs = [&first.path, &first.real_path]
        .iter()
        .any(|p| p.split('/').any(|c| c == "stubs"));
    let help = if in_stubs {
        "Remove the `stubs` directory from LD_LIBRARY_PATH (and from ld.so.conf); the stub is for linking \
         only (`-L…/lib64/stubs`), never for running. Never name a stub `libcuda.so.1`."
            .to_string()
    } else {
        let dir = first.path.rsplit_once('/').map_or("/", |(d, _)| d);
        format!(
            "{} is a copy of the CUDA toolkit's link stub (`lib64/stubs/libcuda.so`): delete it (or take {dir} \
             off the loader's path) so that the driver's libcuda.so.1 is found. The stub is for linking only; \
             never copy it as `libcuda.so.1` into an image or environment.",
            first.path
        )
    };
    let mut f = Finding::new(
        Code::StubLibcuda,
        format!(
            "the loader finds the toolkit's stub {} before the driver's libcuda: CUDA will fail with error 34 \
             (CUDA driver is a stub library)",
            first.path
        ),
        help,
    )
    .because(format!("first libcuda.so.1: {}", describe(first)));
    if let Some(file) = h.driver_files.iter().find(|f| f.path == first.real_path) {
        let what = if file.is_link_stub() {
            "the toolkit's link stub: the driver's libcuda needs libc, libm, libdl, libpthread and librt"
        } else {
            "in a `stubs` directory"
        };
        f = f.because(format!("{} — {what}", file.describe()));
    }
    if let Some(real) = h.libcuda.iter().find(|c| c.kind != LibKind::Stub) {
        f = f.because(format!("the next one would be {}", describe(real)));
    }
    Some(f)
}

/// `compat-libcuda-unsupported`: the first `libcuda.so.1` is a forward-compatibility library the machine cannot
/// use. Two cases (`docs/compatibility.md`, "Forward compatibility: 803 and 804"):
/// - older than the loaded kernel module: 803, as compat packages are for *older* drivers only;
/// - newer than the module, as meant, but a GPU CUDA will initialise is a consumer one: 804, as forward
///   compatibility works only on data-center GPUs, select NGC Server Ready RTX SKUs and Jetson.
pub fn compat_libcuda_unsupported(h: &HostFacts) -> Option<Finding> {
    let d = h.driver.as_ref()?;
    let first = h.libcuda.first().filter(|c| c.kind == LibKind::Compat)?;
    let v = first.version.as_deref()?;
    let f = match cmp_versions(v, &d.version) {
        Ordering::Less => Finding::new(
            Code::CompatLibcudaUnsupported,
            format!(
                "the loader picks forward-compatibility libcuda {v}, older than the loaded driver {}: CUDA will \
                 fail with error 803 (system has unsupported display driver / cuda driver combination)",
                d.version
            ),
            "The driver already supports this CUDA release natively: take the compat directory off the loader \
             path (its /etc/ld.so.conf.d entry, then `ldconfig`, or LD_LIBRARY_PATH) or remove the cuda-compat \
             package. Forward compatibility only works on top of an older driver.",
        ),
        Ordering::Equal => return None,
        Ordering::Greater => return compat_on_consumer_gpus(h, d, first, v),
    };
    Some(
        f.because(format!("first libcuda.so.1: {}", describe(first)))
            .because(driver_evidence(h).unwrap_or_default()),
    )
}

/// Is this GPU, by its name, one of the consumer lines (GeForce, TITAN) that never support forward
/// compatibility? Professional RTX cards are not judged: some NGC Server Ready SKUs do support it, and the
/// name alone does not tell which.
fn consumer_gpu(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.contains("geforce") || name.contains("titan")
}

/// The 804 half of [`compat_libcuda_unsupported`]: a compat libcuda newer than the module (`v`) while a consumer
/// GPU is visible to CUDA. `CUDA_VISIBLE_DEVICES` decides which GPUs `cuInit` sees; a list with MIG entries
/// cannot be matched to GPUs from files, so it says nothing.
fn compat_on_consumer_gpus(h: &HostFacts, d: &DriverFacts, first: &LibCandidate, v: &str) -> Option<Finding> {
    let visible: Vec<usize> = match h.env.vars.get("CUDA_VISIBLE_DEVICES") {
        Some(value) => {
            let vis = visibility(value, &h.gpus);
            if vis.unknown_mig {
                return None;
            }
            vis.visible
        }
        None => (0..h.gpus.len()).collect(),
    };
    let (consumer, others): (Vec<usize>, Vec<usize>) =
        visible.into_iter().partition(|&i| consumer_gpu(&h.gpus[i].name));
    let shown = consumer.first().map(|&i| &h.gpus[i])?;
    let help = if others.is_empty() {
        "Forward compatibility works only on NVIDIA data-center GPUs (and select NGC Server Ready RTX SKUs), \
         never on GeForce or TITAN: take the compat directory off the loader path (its /etc/ld.so.conf.d entry, \
         then `ldconfig`, or LD_LIBRARY_PATH; in a container, use an image without cuda-compat) and upgrade \
         the driver itself to one that supports this CUDA release."
    } else {
        "Forward compatibility works only on NVIDIA data-center GPUs (and select NGC Server Ready RTX SKUs), \
         never on GeForce or TITAN: list only the supported GPUs in CUDA_VISIBLE_DEVICES, or take the compat \
         directory off the loader path (its /etc/ld.so.conf.d entry, then `ldconfig`, or LD_LIBRARY_PATH) and \
         upgrade the driver itself."
    };
    let mut f = Finding::new(
        Code::CompatLibcudaUnsupported,
        format!(
            "the loader picks forward-compatibility libcuda {v} on top of driver {}, but {}: CUDA will fail \
             with error 804 (forward compatibility was attempted on non supported HW)",
            d.version,
            if consumer.len() == 1 {
                format!("{} is a consumer GPU", shown.name)
            } else {
                let mut names: Vec<&str> = Vec::new();
                for &i in &consumer {
                    if !names.contains(&h.gpus[i].name.as_str()) {
                        names.push(&h.gpus[i].name);
                    }
                }
                format!(
                    "{} visible GPUs are consumer ones ({})",
                    consumer.len(),
                    names.join(", ")
                )
            }
        ),
        help,
    )
    .because(format!("first libcuda.so.1: {}", describe(first)))
    .because(driver_evidence(h).unwrap_or_default());
    for &i in &consumer {
        let g = &h.gpus[i];
        f = f.because(format!("GPU {i}: {} ({})", g.name, g.source));
    }
    if let Some(value) = h.env.vars.get("CUDA_VISIBLE_DEVICES") {
        f = f.because(format!("CUDA_VISIBLE_DEVICES={value:?} in the environment"));
    }
    Some(f)
}

/// `libcuda-not-found`: the driver is there (or WSL is), but no `libcuda.so.1` is on the loader's path. When the
/// library catalogue saw the driver's libcuda on disk all the same (a directory `ld.so.conf.d` lists but a stale
/// `ld.so.cache` lacks, or one nothing lists), the finding says where, and that the search does not reach it.
pub fn libcuda_not_found(h: &HostFacts) -> Option<Finding> {
    if !h.libcuda.is_empty() || (h.driver.is_none() && !wsl(h) && !jetson(h)) {
        return None;
    }
    let on_disk: Vec<&LibraryEntry> = h
        .libraries
        .iter()
        .filter(|l| l.kind == "libcuda" && l.path.rsplit('/').next() == Some("libcuda.so.1"))
        .collect();
    let no_cache = match h.ld_cache {
        Some(LdCacheState::Missing) => Some("the machine has no /etc/ld.so.cache"),
        Some(LdCacheState::Unusable) => Some("/etc/ld.so.cache is not a cache glibc can read"),
        Some(LdCacheState::Usable) | None => None,
    };
    let help = if let (Some(l), Some(why)) = (on_disk.first(), no_cache) {
        let dir = l.path.rsplit_once('/').map_or("/", |(d, _)| d);
        format!(
            "The driver's libcuda.so.1 is on disk in {dir}, but {why}, and glibc never reads /etc/ld.so.conf \
             itself: the directories it lists are searched only through the cache. Run `sudo ldconfig` to \
             write the cache (after adding a file naming {dir} to /etc/ld.so.conf.d if none does), or put \
             {dir} on LD_LIBRARY_PATH."
        )
    } else if let Some(l) = on_disk.first() {
        let dir = l.path.rsplit_once('/').map_or("/", |(d, _)| d);
        format!(
            "The driver's libcuda.so.1 is on disk in {dir}, but the loader's search does not reach it. If \
             /etc/ld.so.conf.d lists {dir}, the cache is stale: run `sudo ldconfig`. Otherwise add a file \
             there naming {dir} and run `sudo ldconfig` (or put {dir} on LD_LIBRARY_PATH)."
        )
    } else if jetson(h) {
        "On a Jetson libcuda comes with Jetson Linux: /usr/lib/aarch64-linux-gnu/nvidia (R36 and later) or \
         /usr/lib/aarch64-linux-gnu/tegra (R32 to R35), listed by /etc/ld.so.conf.d/nvidia-tegra.conf. \
         Reinstall it (`sudo apt install --reinstall nvidia-l4t-cuda`) and run `sudo ldconfig`; in a container, \
         start it with `--runtime nvidia` so that it is mounted in."
            .into()
    } else if wsl(h) {
        "On WSL2 libcuda lives in /usr/lib/wsl/lib: make sure /etc/ld.so.conf.d/ld.wsl.conf lists it and run \
         `sudo ldconfig`; do not install a Linux driver inside WSL."
            .into()
    } else if in_container(h) {
        "Start the container with GPU access (`docker run --gpus all`): the NVIDIA runtime mounts the \
         driver's libraries into it."
            .into()
    } else {
        "Install the driver's user-space libraries (the package matching the kernel module, e.g. \
         libnvidia-compute), or add their directory to /etc/ld.so.conf.d and run `sudo ldconfig`."
            .into()
    };
    let mut f = Finding::new(
        Code::LibcudaNotFound,
        "no libcuda.so.1 on the loader's search path: CUDA programs fail with \"libcuda.so.1: cannot open \
         shared object file\"",
        help,
    )
    .because(match no_cache {
        Some(why) => format!("searched LD_LIBRARY_PATH and the default directories: {why}"),
        None => "searched LD_LIBRARY_PATH, /etc/ld.so.cache and the default directories".to_string(),
    });
    for l in &on_disk {
        let real = if l.real_path != l.path {
            format!(" -> {}", l.real_path)
        } else {
            String::new()
        };
        let version = l
            .version
            .as_deref()
            .map(|v| format!(", version {v}"))
            .unwrap_or_default();
        f = f.because(format!(
            "on disk, not on the search path: {}{real}{version}",
            l.path
        ));
    }
    if let Some(e) = driver_evidence(h) {
        f = f.because(e);
    }
    Some(f)
}
