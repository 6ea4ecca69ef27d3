//! What the node runs beside the driver, on copies of the healthy host tree with files written into them:
//! `container-toolkit-missing` (a container engine without the NVIDIA Container Toolkit),
//! `fabric-manager-not-running` (NVSwitches without Fabric Manager), and `gpu-fallen-off-bus` /
//! `gpu-xid-reported` (the driver's Xid reports in the kernel log since the last boot).

use crate::support::cli::{copy_tree, finding, json_exiting, machine_args, slugs};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A copy of the healthy tree (driver 550 loaded, two GPUs) under `dir`, with `files` written into it.
fn machine(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts/healthy");
    let root = dir.join("root");
    copy_tree(&fixture.join("root"), &root);
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    root
}

fn doctor(root: &Path) -> Value {
    let env = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts/healthy/env");
    let mut args = vec!["doctor".to_string(), "--format".into(), "json".into()];
    args.extend(machine_args(root, &env, &[]));
    json_exiting(&args, &[0, 1])
}

fn has(report: &Value, slug: &str) -> bool {
    slugs(report).iter().any(|s| s == slug)
}

#[test]
fn docker_without_the_container_toolkit_is_reported() {
    let t = tempfile::tempdir().unwrap();
    let r = doctor(&machine(
        t.path(),
        &[("usr/bin/dockerd", "ELF"), ("usr/bin/containerd", "ELF")],
    ));
    assert!(has(&r, "container-toolkit-missing"), "{:?}", slugs(&r));
    let f = finding(&r, "container-toolkit-missing");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("dockerd, containerd are installed"),
        "{f}"
    );
}

#[test]
fn the_container_toolkit_installed_or_inside_a_container_is_no_finding() {
    let t = tempfile::tempdir().unwrap();
    let installed = doctor(&machine(
        &t.path().join("installed"),
        &[("usr/bin/dockerd", "ELF"), ("usr/bin/nvidia-ctk", "ELF")],
    ));
    assert!(
        !has(&installed, "container-toolkit-missing"),
        "{:?}",
        slugs(&installed)
    );
    // The GPU Operator's layout: the library alone under its toolkit directory.
    let operator = doctor(&machine(
        &t.path().join("operator"),
        &[
            ("usr/bin/containerd", "ELF"),
            ("usr/local/nvidia/toolkit/libnvidia-container.so.1", "ELF"),
        ],
    ));
    assert!(
        !has(&operator, "container-toolkit-missing"),
        "{:?}",
        slugs(&operator)
    );
    // Inside a container the toolkit belongs to the host that started it.
    let inside = doctor(&machine(
        &t.path().join("inside"),
        &[("usr/bin/dockerd", "ELF"), (".dockerenv", "")],
    ));
    assert!(!has(&inside, "container-toolkit-missing"), "{:?}", slugs(&inside));
    // No engine: nothing to judge.
    let none = doctor(&machine(&t.path().join("none"), &[]));
    assert!(!has(&none, "container-toolkit-missing"), "{:?}", slugs(&none));
}

/// An NVSwitch's PCI function (an HGX H100 baseboard's, class "other bridge") and two processes.
const NVSWITCH: &[(&str, &str)] = &[
    ("sys/bus/pci/devices/0000:07:00.0/vendor", "0x10de\n"),
    ("sys/bus/pci/devices/0000:07:00.0/class", "0x068000\n"),
    ("sys/bus/pci/devices/0000:07:00.0/device", "0x22a3\n"),
    ("proc/1/comm", "systemd\n"),
    ("proc/812/comm", "sshd\n"),
];

#[test]
fn nvswitches_without_fabric_manager_fail_cuda_with_802() {
    let t = tempfile::tempdir().unwrap();
    let r = doctor(&machine(&t.path().join("absent"), NVSWITCH));
    let f = finding(&r, "fabric-manager-not-running");
    assert_eq!(f["code"], "CD315", "{f}");
    assert!(f["message"].as_str().unwrap().contains("802"), "{f}");
    assert!(f["message"].as_str().unwrap().contains("not installed"), "{f}");
    // Installed, not running: the help says how to start it.
    let mut files = NVSWITCH.to_vec();
    files.push(("usr/bin/nv-fabricmanager", "ELF"));
    let r = doctor(&machine(&t.path().join("stopped"), &files));
    let f = finding(&r, "fabric-manager-not-running");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("installed but not running"),
        "{f}"
    );
}

#[test]
fn fabric_manager_running_or_no_nvswitch_is_no_finding() {
    let t = tempfile::tempdir().unwrap();
    let mut files = NVSWITCH.to_vec();
    files.extend([
        ("usr/bin/nv-fabricmanager", "ELF"),
        ("proc/2301/comm", "nv-fabricmanage\n"),
    ]);
    let running = doctor(&machine(&t.path().join("running"), &files));
    assert!(
        !has(&running, "fabric-manager-not-running"),
        "{:?}",
        slugs(&running)
    );
    // The same processes without an NVSwitch: a PCIe machine needs no Fabric Manager.
    let pcie = doctor(&machine(&t.path().join("pcie"), &NVSWITCH[3..]));
    assert!(!has(&pcie, "fabric-manager-not-running"), "{:?}", slugs(&pcie));
}

const BOOT: &str =
    "Dec  5 01:00:00 gpu1 kernel: [    0.000000] Linux version 6.8.0-31-generic (buildd@lcy02-amd64-080)\n";

#[test]
fn xid_79_since_the_last_boot_is_a_gpu_fallen_off_the_bus() {
    let t = tempfile::tempdir().unwrap();
    let log = format!(
        "{BOOT}Dec  5 02:00:00 gpu1 kernel: [ 3600.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
    );
    let r = doctor(&machine(t.path(), &[("var/log/kern.log", &log)]));
    let f = finding(&r, "gpu-fallen-off-bus");
    assert!(f["message"].as_str().unwrap().contains("PCI:0000:3b:00"), "{f}");
    assert!(!has(&r, "gpu-xid-reported"), "{:?}", slugs(&r));
}

#[test]
fn xid_79_before_the_last_boot_is_no_finding() {
    let t = tempfile::tempdir().unwrap();
    let log = format!(
        "Dec  4 02:00:00 gpu1 kernel: [ 3600.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n{BOOT}"
    );
    let r = doctor(&machine(t.path(), &[("var/log/syslog", &log)]));
    assert!(!has(&r, "gpu-fallen-off-bus"), "{:?}", slugs(&r));
    assert!(!has(&r, "gpu-xid-reported"), "{:?}", slugs(&r));
}

#[test]
fn other_xids_are_reported_with_their_catalogue_meaning() {
    let t = tempfile::tempdir().unwrap();
    let log = format!(
        "{BOOT}Dec  5 02:00:00 gpu1 kernel: [ 3600.1] NVRM: Xid (PCI:0000:19:00): 48, pid=4242, name=python, DBE\n\
         Dec  5 02:00:01 gpu1 kernel: [ 3601.1] NVRM: Xid (PCI:0000:19:00): 48, pid=4242, name=python, DBE\n"
    );
    let r = doctor(&machine(t.path(), &[("var/log/messages", &log)]));
    let f = finding(&r, "gpu-xid-reported");
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains("2 GPU errors") && m.contains("48 (Double Bit ECC Error)"),
        "{f}"
    );
    assert!(!has(&r, "gpu-fallen-off-bus"), "{:?}", slugs(&r));
}

#[test]
fn a_kernel_log_without_xid_is_no_finding() {
    let t = tempfile::tempdir().unwrap();
    let log = format!(
        "{BOOT}Dec  5 02:00:00 gpu1 kernel: [ 3600.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07\n"
    );
    let r = doctor(&machine(t.path(), &[("var/log/kern.log", &log)]));
    assert!(!has(&r, "gpu-xid-reported"), "{:?}", slugs(&r));
    assert!(!has(&r, "gpu-fallen-off-bus"), "{:?}", slugs(&r));
}

#[test]
fn a_kernel_log_that_is_a_fifo_or_huge_is_read_without_hanging_and_only_at_its_end() {
    let t = tempfile::tempdir().unwrap();
    // A FIFO where the log should be: skipped (opened without blocking, then refused), the next log read.
    let root = machine(&t.path().join("fifo"), &[]);
    std::fs::create_dir_all(root.join("var/log")).unwrap();
    let fifo = root.join("var/log/kern.log");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let log = format!("{BOOT}k: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n");
    std::fs::write(root.join("var/log/syslog"), log).unwrap();
    let r = doctor(&root);
    assert!(has(&r, "gpu-fallen-off-bus"), "{:?}", slugs(&r));
    // 12 MiB of log: an Xid 79 in its first bytes is beyond the 8 MiB read; the 48 at its end is seen.
    let mut big = format!("{BOOT}k: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n");
    let filler = "Dec  5 02:00:00 gpu1 kernel: [ 3600.1] usb 1-1: new high-speed USB device number 2\n";
    while big.len() < 12 << 20 {
        big.push_str(filler);
    }
    big.push_str("k: NVRM: Xid (PCI:0000:19:00): 48, pid=1, DBE\n");
    let r = doctor(&machine(&t.path().join("big"), &[("var/log/kern.log", &big)]));
    assert!(!has(&r, "gpu-fallen-off-bus"), "{:?}", slugs(&r));
    assert!(has(&r, "gpu-xid-reported"), "{:?}", slugs(&r));
}
