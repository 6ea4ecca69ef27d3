//! Every host finding: one case where it fires and one near miss where it does not. The rules are pure, so the
//! facts are built here by hand; no test depends on how the facts were collected or how libcuda was searched.

use cudadiag::facts::host::{
    ContainerFacts, DeviceNode, FoundVia, Identity, LdCacheState, LibCandidate, LibKind, LibraryEntry,
    WslFacts,
};
use cudadiag::facts::{DriverFacts, GpuFacts, HostFacts};
use cudadiag::rules::host::{self, cmp_versions};

const UUID0: &str = "GPU-b4a13011-1c9e-7c5a-7f8e-0123456789ab";
const UUID1: &str = "GPU-7d2e4f10-aa55-4b1b-9c3d-fedcba987654";

fn node(path: &str, mode: u32) -> DeviceNode {
    DeviceNode {
        path: path.into(),
        char_device: true,
        mode,
        uid: 0,
        gid: 44,
    }
}

fn lib(path: &str, version: Option<&str>, kind: LibKind, via: FoundVia) -> LibCandidate {
    LibCandidate {
        path: path.into(),
        real_path: path.into(),
        version: version.map(str::to_string),
        kind,
        found_via: via,
    }
}

/// A healthy machine: driver 550.90.07, two GPUs, all nodes, the driver's libcuda and NVML.
fn healthy() -> HostFacts {
    let gpu = |uuid: &str, bus: &str| GpuFacts {
        name: "NVIDIA H100 80GB HBM3".into(),
        cc: None,
        pci_device_id: Some(0x2330),
        uuid: Some(uuid.into()),
        bus_id: Some(bus.into()),
        source: "test".into(),
    };
    let mut h = HostFacts {
        driver: Some(DriverFacts {
            version: "550.90.07".into(),
            source: "/proc/driver/nvidia/version".into(),
        }),
        gpus: vec![gpu(UUID0, "0000:19:00.0"), gpu(UUID1, "0000:3b:00.0")],
        observed: true,
        ..HostFacts::default()
    };
    h.kernel.modules = vec!["nvidia_uvm".into(), "nvidia".into()];
    h.kernel.modules_source = Some("/proc/modules".into());
    h.device_nodes = [
        "/dev/nvidia0",
        "/dev/nvidia1",
        "/dev/nvidiactl",
        "/dev/nvidia-uvm",
    ]
    .iter()
    .map(|p| node(p, 0o666))
    .collect();
    h.identity = Some(Identity {
        uid: 1000,
        gid: 1000,
        groups: vec![1000],
        source: "/proc/self/status".into(),
    });
    h.libcuda = vec![lib(
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        Some("550.90.07"),
        LibKind::Driver,
        FoundVia::LdSoCache,
    )];
    h.nvml = vec![lib(
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        Some("550.90.07"),
        LibKind::Driver,
        FoundVia::LdSoCache,
    )];
    h
}

fn slugs(h: &HostFacts) -> Vec<String> {
    host::evaluate(h).into_iter().map(|f| f.slug).collect()
}

#[test]
fn healthy_machine_has_no_findings() {
    assert!(slugs(&healthy()).is_empty(), "{:?}", slugs(&healthy()));
}

#[test]
fn no_driver_fires_when_the_bus_shows_gpus_without_a_module() {
    let mut h = healthy();
    h.driver = None;
    assert!(host::no_driver(&h).is_some());
    // near miss: the same machine with its module loaded
    assert!(host::no_driver(&healthy()).is_none());
    // near miss: WSL2 has no Linux module by design
    h.platform.wsl = Some(WslFacts {
        dxg: true,
        lib_dir: true,
    });
    assert!(host::no_driver(&h).is_none());
}

#[test]
fn nouveau_loaded_fires_only_when_listed() {
    let mut h = healthy();
    h.kernel.modules.push("nouveau".into());
    let f = host::nouveau_loaded(&h).unwrap();
    assert!(f.evidence[0].contains("/proc/modules"));
    // near miss: a module whose name merely contains "nouveau"-like text is not it
    let mut h = healthy();
    h.kernel.modules.push("nvidia_drm".into());
    assert!(host::nouveau_loaded(&h).is_none());
}

#[test]
fn no_gpu_fires_when_nothing_is_visible() {
    let mut h = healthy();
    h.gpus.clear();
    assert_eq!(
        host::no_gpu(&h).map(|f| f.code),
        Some(cudadiag::findings::Code::NoGpu)
    );
    // near miss: a Jetson board, whose integrated GPU is on neither list
    let mut j = h.clone();
    j.platform.jetson = Some("# R35 (release), REVISION: 4.1".into());
    assert!(host::no_gpu(&j).is_none());
    // near miss: one GPU on the bus, no driver (that is `no-driver`, not `no-gpu`)
    let mut h = healthy();
    h.gpus.truncate(1);
    h.driver = None;
    assert!(host::no_gpu(&h).is_none());
}

/// A container without `/sys` and without the driver: that there is no driver is certain, that there is no GPU
/// is not (issue 21). Only a bus that was read and showed no NVIDIA display controller gives `no-gpu`.
#[test]
fn an_unread_pci_bus_without_a_driver_is_no_driver_not_no_gpu() {
    use cudadiag::facts::host::PciBus;
    let mut h = healthy();
    h.gpus.clear();
    h.driver = None;
    h.pci_bus = Some(PciBus::Unreadable {
        reason: "/sys/bus/pci/devices does not exist".into(),
    });
    let f = host::no_driver(&h).unwrap();
    assert!(f.message.contains("unknown"), "{}", f.message);
    assert!(f.evidence.iter().any(|e| e.contains("PCI bus was not read")));
    assert!(host::no_gpu(&h).is_none());
    // near miss: the bus was read and shows no NVIDIA function: no GPU, and nothing to drive
    h.pci_bus = Some(PciBus::Read { devices: 3 });
    assert!(host::no_driver(&h).is_none());
    let g = host::no_gpu(&h).unwrap();
    assert!(
        g.evidence.iter().any(|e| e.contains("lists 3 PCI functions")),
        "{:?}",
        g.evidence
    );
    // near miss: the driver is loaded and lists no GPU: its list is enough, read bus or not
    h.driver = healthy().driver;
    h.pci_bus = Some(PciBus::Unreadable {
        reason: "/sys/bus/pci/devices does not exist".into(),
    });
    assert!(host::no_gpu(&h).is_some());
    assert!(host::no_driver(&h).is_none());
}

#[test]
fn driver_library_mismatch_compares_the_first_driver_library() {
    let mut h = healthy();
    h.driver.as_mut().unwrap().version = "550.54.14".into();
    let f = host::driver_library_mismatch(&h).unwrap();
    assert!(f.message.contains("550.90.07") && f.message.contains("550.54.14"));
    // near miss: a compat libcuda of another version first, the driver's own library matching the module
    let mut h = healthy();
    h.libcuda.insert(
        0,
        lib(
            "/usr/local/cuda-13.0/compat/libcuda.so.1",
            Some("580.65.06"),
            LibKind::Compat,
            FoundVia::LdLibraryPath,
        ),
    );
    assert!(host::driver_library_mismatch(&h).is_none());
}

#[test]
fn device_nodes_missing_names_the_container_case() {
    let mut h = healthy();
    h.device_nodes.clear();
    h.platform.container = Some(ContainerFacts {
        engine: "docker".into(),
        evidence: vec!["/.dockerenv exists".into()],
    });
    let f = host::device_nodes_missing(&h).unwrap();
    assert!(f.help.contains("--gpus"));
    // near miss: nodes present
    assert!(host::device_nodes_missing(&healthy()).is_none());
    // near miss: no driver at all (no-driver or no-gpu speaks instead)
    let mut h = healthy();
    h.device_nodes.clear();
    h.driver = None;
    assert!(host::device_nodes_missing(&h).is_none());
}

#[test]
fn nvidia_uvm_missing_needs_the_other_nodes() {
    let mut h = healthy();
    h.device_nodes.retain(|n| n.path != "/dev/nvidia-uvm");
    assert!(host::nvidia_uvm_missing(&h).is_some());
    // near miss: uvm present
    assert!(host::nvidia_uvm_missing(&healthy()).is_none());
}

#[test]
fn device_permission_denied_follows_owner_group_other() {
    let mut h = healthy();
    for n in &mut h.device_nodes {
        n.mode = 0o660;
    }
    let f = host::device_permission_denied(&h).unwrap();
    assert!(f.message.contains("/dev/nvidiactl"));
    // near miss: the user is in the nodes' group
    h.identity.as_mut().unwrap().groups.push(44);
    assert!(host::device_permission_denied(&h).is_none());
}

#[test]
fn no_visible_devices_follows_cuda_semantics() {
    for value in ["", "-1", "2", "7,0", "GPU-deadbeef", "GPU-", "abc"] {
        let mut h = healthy();
        h.env.vars.insert("CUDA_VISIBLE_DEVICES".into(), value.into());
        assert!(
            host::no_visible_devices(&h).is_some(),
            "{value:?} should hide every GPU"
        );
    }
    // near misses: the list stops after a valid entry; a unique UUID prefix; a MIG instance
    for value in ["0,7", "1", "GPU-7d2e", "gpu-b4a13011-1c9e", "MIG-9a3b"] {
        let mut h = healthy();
        h.env.vars.insert("CUDA_VISIBLE_DEVICES".into(), value.into());
        assert!(host::no_visible_devices(&h).is_none(), "{value:?} shows a GPU");
    }
}

#[test]
fn stub_libcuda_only_when_the_stub_is_first() {
    let stub = lib(
        "/usr/local/cuda/lib64/stubs/libcuda.so.1",
        None,
        LibKind::Stub,
        FoundVia::LdLibraryPath,
    );
    let mut h = healthy();
    h.libcuda.insert(0, stub.clone());
    let f = host::stub_libcuda(&h).unwrap();
    assert!(f.evidence[1].contains("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
    // near miss: the stub after the driver's library
    let mut h = healthy();
    h.libcuda.push(stub);
    assert!(host::stub_libcuda(&h).is_none());
}

#[test]
fn compat_libcuda_unsupported_when_older_than_the_module() {
    let compat = |v: &str| {
        lib(
            "/usr/local/cuda-12.4/compat/libcuda.so.1",
            Some(v),
            LibKind::Compat,
            FoundVia::LdSoCache,
        )
    };
    let mut h = healthy();
    h.driver.as_mut().unwrap().version = "580.65.06".into();
    h.libcuda.insert(0, compat("550.54.14"));
    assert!(host::compat_libcuda_unsupported(&h).is_some());
    // near miss: a newer compat library on an older driver is what forward compatibility is for
    let mut h = healthy();
    h.libcuda.insert(0, compat("580.65.06"));
    assert!(host::compat_libcuda_unsupported(&h).is_none());
}

#[test]
fn compat_libcuda_unsupported_on_consumer_gpus() {
    // cuda-compat-12-9 (575.57.08) ldconfig'd first on a 550 machine: fine on H100s, 804 on GeForce.
    let on = |names: [&str; 2]| {
        let mut h = healthy();
        for (g, name) in h.gpus.iter_mut().zip(names) {
            g.name = name.into();
        }
        h.libcuda.insert(
            0,
            lib(
                "/usr/local/cuda-12.9/compat/libcuda.so.1",
                Some("575.57.08"),
                LibKind::Compat,
                FoundVia::LdSoCache,
            ),
        );
        h
    };
    let h = on(["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"]);
    let f = host::compat_libcuda_unsupported(&h).expect("804 on GeForce");
    assert!(f.message.contains("error 804"), "{}", f.message);
    assert!(
        f.message
            .contains("but 2 visible GPUs are consumer ones (NVIDIA GeForce RTX 4090)"),
        "{}",
        f.message
    );
    assert!(f.evidence[0].contains("/usr/local/cuda-12.9/compat/libcuda.so.1"));
    assert!(
        f.evidence
            .iter()
            .any(|e| e.starts_with("GPU 1: NVIDIA GeForce RTX 4090"))
    );
    assert!(
        !f.help.contains("CUDA_VISIBLE_DEVICES"),
        "no supported GPU to keep: {}",
        f.help
    );
    assert_eq!(slugs(&h), ["compat-libcuda-unsupported"]);
    assert!(host::compat_libcuda_unsupported(&on(["NVIDIA TITAN RTX", "NVIDIA H100 80GB HBM3"])).is_some());

    // A mixed machine: hiding the GeForce is one way out, and once hidden nothing is said.
    let mut h = on(["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"]);
    let f = host::compat_libcuda_unsupported(&h).unwrap();
    assert!(
        f.message
            .contains("but NVIDIA GeForce RTX 4090 is a consumer GPU"),
        "{}",
        f.message
    );
    assert!(f.help.contains("CUDA_VISIBLE_DEVICES"), "{}", f.help);
    h.env.vars.insert("CUDA_VISIBLE_DEVICES".into(), "0".into());
    assert!(host::compat_libcuda_unsupported(&h).is_none());
    h.env.vars.insert("CUDA_VISIBLE_DEVICES".into(), "1,0".into());
    let f = host::compat_libcuda_unsupported(&h).unwrap();
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("CUDA_VISIBLE_DEVICES=\"1,0\""))
    );
    // MIG entries cannot be matched to GPUs from files: nothing is claimed.
    h.env
        .vars
        .insert("CUDA_VISIBLE_DEVICES".into(), "MIG-9a3b".into());
    assert!(host::compat_libcuda_unsupported(&h).is_none());

    // Near misses: data-center GPUs (what forward compatibility is for); a professional RTX card, which the
    // name cannot place (some NGC Server Ready SKUs support it); the compat library of the driver's own version.
    assert!(
        host::compat_libcuda_unsupported(&on(["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"])).is_none()
    );
    assert!(
        host::compat_libcuda_unsupported(&on(["NVIDIA RTX A6000", "NVIDIA RTX 6000 Ada Generation"]))
            .is_none()
    );
    let mut h = on(["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"]);
    h.libcuda[0].version = Some("550.90.07".into());
    assert!(host::compat_libcuda_unsupported(&h).is_none());
}

#[test]
fn libcuda_not_found_when_the_driver_is_there() {
    let mut h = healthy();
    h.libcuda.clear();
    assert!(host::libcuda_not_found(&h).is_some());
    assert!(!host::libcuda_not_found(&h).unwrap().help.contains("on disk"));
    // The catalogue saw the driver's libcuda where the search does not go: the finding names it.
    let mut seen = h.clone();
    seen.libraries.push(LibraryEntry {
        soname: "libcuda.so.1".into(),
        path: "/usr/local/nvidia/lib64/libcuda.so.1".into(),
        real_path: "/usr/local/nvidia/lib64/libcuda.so.550.90.07".into(),
        kind: "libcuda".into(),
        version: Some("550.90.07".into()),
        version_source: None,
        runtime_version: None,
        owner: None,
        scan_root: "/usr/local/nvidia/lib64".into(),
    });
    let f = host::libcuda_not_found(&seen).unwrap();
    assert!(
        f.help.contains("is on disk in /usr/local/nvidia/lib64"),
        "{}",
        f.help
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("libcuda.so.550.90.07, version 550.90.07"))
    );
    assert!(f.help.contains("the cache is stale"), "{}", f.help);
    // With no cache glibc can read, the help says so instead of calling a cache stale.
    for (state, why) in [
        (LdCacheState::Missing, "the machine has no /etc/ld.so.cache"),
        (
            LdCacheState::Unusable,
            "/etc/ld.so.cache is not a cache glibc can read",
        ),
    ] {
        seen.ld_cache = Some(state);
        let f = host::libcuda_not_found(&seen).unwrap();
        assert!(f.help.contains(why) && !f.help.contains("stale"), "{}", f.help);
        assert!(f.evidence.iter().any(|e| e.ends_with(why)), "{:?}", f.evidence);
    }
    // near miss: neither driver nor WSL (a machine without NVIDIA at all: no-gpu speaks)
    h.driver = None;
    assert!(host::libcuda_not_found(&h).is_none());
}

#[test]
fn what_if_targets_get_no_machine_findings() {
    // `--gpu 9.0 --driver 580.65.06` declares a GPU and a driver, nothing about nodes or libraries.
    let mut h = healthy();
    h.observed = false;
    h.device_nodes.clear();
    h.libcuda.clear();
    assert!(slugs(&h).is_empty());
    h.observed = true;
    assert!(!slugs(&h).is_empty());
}

#[test]
fn versions_compare_numerically() {
    use std::cmp::Ordering::*;
    assert_eq!(cmp_versions("550.54.14", "550.90.07"), Less);
    assert_eq!(cmp_versions("580.65.06", "580.65.06"), Equal);
    assert_eq!(cmp_versions("1000.1", "999.99.99"), Greater);
}

/// `CUDA_VISIBLE_DEVICES` indices on GPUs of different models follow CUDA's fastest-first order, not
/// nvidia-smi's PCI order (issue 21).
#[test]
fn device_order_mismatch_needs_indices_mixed_models_and_the_default_order() {
    use cudadiag::rules::device_order::device_order_mismatch;
    let mut h = healthy();
    h.gpus[1].name = "NVIDIA T400".into();
    h.env.vars.insert("CUDA_VISIBLE_DEVICES".into(), "1".into());
    let f = device_order_mismatch(&h).unwrap();
    assert!(f.evidence.iter().any(|e| e.contains("FASTEST_FIRST")));
    assert!(f.help.contains("CUDA_DEVICE_ORDER=PCI_BUS_ID"));
    assert_eq!(f.severity, cudadiag::findings::Severity::Warning);
    let mut fastest = h.clone();
    fastest
        .env
        .vars
        .insert("CUDA_DEVICE_ORDER".into(), "FASTEST_FIRST".into());
    assert!(device_order_mismatch(&fastest).is_some());
    // near misses: PCI order asked for; GPUs selected by UUID; one model only; the variable unset
    let mut pci = h.clone();
    pci.env
        .vars
        .insert("CUDA_DEVICE_ORDER".into(), "PCI_BUS_ID".into());
    assert!(device_order_mismatch(&pci).is_none());
    let mut uuid = h.clone();
    uuid.env.vars.insert("CUDA_VISIBLE_DEVICES".into(), UUID1.into());
    assert!(device_order_mismatch(&uuid).is_none());
    let mut same = healthy();
    same.env.vars.insert("CUDA_VISIBLE_DEVICES".into(), "1".into());
    assert!(device_order_mismatch(&same).is_none());
    h.env.vars.remove("CUDA_VISIBLE_DEVICES");
    assert!(device_order_mismatch(&h).is_none());
}
