//! Jetson and Grace Hopper hosts through `--root` (`docs/jetson.md`): roots built here, each with its
//! findings, no more and no fewer; and `inspect --root` verdicts that take the integrated GPU's compute
//! capability from the device tree and the CUDA driver's version from the Jetson Linux release.

use crate::support::arm_build::{self as arm, ld_cache};
use crate::support::cli::{finding, json, sorted_slugs as slugs};
use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

const AARCH64: i32 = 0x0a03;

fn put(root: &Path, path: &str, bytes: &[u8]) {
    let p = root.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// A stand-in driver library: an aarch64 `libcuda.so.1` that links libc (the toolkit's link stub does not).
fn libcuda(root: &Path, dir: &str, file: &str) {
    let d = root.join(dir.trim_start_matches('/'));
    let lib = arm::lib(
        &d,
        file,
        "cuInit",
        &["-Wl,-soname,libcuda.so.1", "-Wl,--no-as-needed", "-lc"],
    );
    if file != "libcuda.so.1" {
        std::os::unix::fs::symlink(lib.file_name().unwrap(), d.join("libcuda.so.1")).unwrap();
    }
}

/// A Jetson root: Jetson Linux `release` (`# R36 (release), REVISION: 4.3, …`) on the SoC `soc`, its libcuda
/// in `libdir` listed by `nvidia-tegra.conf` and the cache, `nvgpu` loaded or not, its device nodes or not.
fn jetson(root: &Path, release: &str, soc: &str, libdir: &str, nvgpu: bool, nodes: bool) {
    arm::debian_root(root);
    put(
        root,
        "/etc/nv_tegra_release",
        format!(
            "{release}, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n"
        )
        .as_bytes(),
    );
    put(
        root,
        "/proc/device-tree/compatible",
        format!("nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,{soc}\0").as_bytes(),
    );
    put(
        root,
        "/proc/device-tree/model",
        b"NVIDIA Jetson AGX Orin Developer Kit\0",
    );
    let modules = if nvgpu {
        "nvgpu 2662400 26 - Live 0xffffa1c9e4a7c000 (O)\nnvmap 229376 85 nvgpu, Live 0xffffa1c9e4a3b000 (O)\n"
    } else {
        "nvmap 229376 85 - Live 0xffffa1c9e4a3b000 (O)\n"
    };
    put(root, "/proc/modules", modules.as_bytes());
    put(
        root,
        "/proc/self/status",
        b"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t0\n",
    );
    if nodes {
        put(root, "/dev/nvmap", b"");
        put(root, "/dev/nvhost-ctrl-gpu", b"");
    }
    libcuda(root, libdir, "libcuda.so.1.1");
    put(root, "/etc/ld.so.conf", b"include /etc/ld.so.conf.d/*.conf\n");
    put(
        root,
        "/etc/ld.so.conf.d/nvidia-tegra.conf",
        format!("{libdir}\n").as_bytes(),
    );
    let cached = format!("{libdir}/libcuda.so.1");
    put(
        root,
        "/etc/ld.so.cache",
        &ld_cache(&[
            ("libcuda.so.1", &cached, AARCH64),
            ("libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", AARCH64),
        ]),
    );
}

const R36_4_3: &str = "# R36 (release), REVISION: 4.3";
const R35_4_1: &str = "# R35 (release), REVISION: 4.1";

fn run(args: &[&str]) -> Value {
    json(args)
}

fn doctor(root: &Path, env: &[&str]) -> Value {
    let r = root.to_str().unwrap();
    let mut args = vec!["doctor", "--format", "json", "--root", r, "--clear-env"];
    for e in env {
        args.extend(["--env", e]);
    }
    run(&args)
}

fn inspect(root: &Path, binary: &Path) -> Value {
    run(&[
        "inspect",
        "--format",
        "json",
        "--root",
        root.to_str().unwrap(),
        "--clear-env",
        binary.to_str().unwrap(),
    ])
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/cuda13")
        .join(name)
}

/// An Orin on JetPack 6.2 (Jetson Linux R36.4.3): nvgpu, no `/proc/driver/nvidia`, libcuda in
/// `/usr/lib/aarch64-linux-gnu/nvidia`. No finding; the integrated GPU is listed with CC 8.7 from the device
/// tree and the driver supports CUDA 12.6.
#[test]
fn an_orin_on_jetpack_6_is_healthy() {
    let t = tempfile::tempdir().unwrap();
    jetson(
        t.path(),
        R36_4_3,
        "tegra234",
        "/usr/lib/aarch64-linux-gnu/nvidia",
        true,
        true,
    );
    let r = doctor(t.path(), &[]);
    assert_eq!(slugs(&r), Vec::<String>::new(), "{r:#}");
    let h = &r["host"]["facts"];
    assert_eq!(h["gpus"][0]["cc"], "8.7", "{h:#}");
    assert!(
        h["gpus"][0]["name"].as_str().unwrap().starts_with("Orin"),
        "{h:#}"
    );
    assert_eq!(h["driver_cuda"], "12.6", "{h:#}");
    let tegra = &h["platform"]["tegra"];
    assert_eq!(
        (tegra["l4t"].as_str(), tegra["soc"].as_str()),
        (Some("36.4.3"), Some("tegra234"))
    );
    assert_eq!(tegra["nvgpu"], true);
    assert_eq!(
        h["libcuda"][0]["path"], "/usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1",
        "{h:#}"
    );
}

/// Jetson Linux R35 keeps libcuda in `tegra/`: found there through the cache.
#[test]
fn a_xavier_on_jetpack_5_finds_libcuda_under_tegra() {
    let t = tempfile::tempdir().unwrap();
    jetson(
        t.path(),
        R35_4_1,
        "tegra194",
        "/usr/lib/aarch64-linux-gnu/tegra",
        true,
        true,
    );
    let r = doctor(t.path(), &[]);
    assert_eq!(slugs(&r), Vec::<String>::new(), "{r:#}");
    let h = &r["host"]["facts"];
    assert_eq!(h["gpus"][0]["cc"], "7.2");
    assert_eq!(h["driver_cuda"], "11.4");
    assert_eq!(
        h["libcuda"][0]["path"],
        "/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1"
    );
}

/// nvgpu not loaded (the module list was read and lacks it): `no-driver`, in the Jetson's words.
#[test]
fn nvgpu_not_loaded_is_no_driver() {
    let t = tempfile::tempdir().unwrap();
    jetson(
        t.path(),
        R36_4_3,
        "tegra234",
        "/usr/lib/aarch64-linux-gnu/nvidia",
        false,
        true,
    );
    let r = doctor(t.path(), &[]);
    assert_eq!(slugs(&r), ["no-driver"]);
    let f = finding(&r, "no-driver");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("neither nvgpu nor nvidia"),
        "{f:#}"
    );
    assert!(f["help"].as_str().unwrap().contains("modprobe nvgpu"), "{f:#}");
}

/// A container on a Jetson started without the NVIDIA runtime: nvgpu is loaded (procfs is the host's), its
/// nodes are not there.
#[test]
fn a_jetson_container_without_nodes_is_device_nodes_missing() {
    let t = tempfile::tempdir().unwrap();
    jetson(
        t.path(),
        R36_4_3,
        "tegra234",
        "/usr/lib/aarch64-linux-gnu/nvidia",
        true,
        false,
    );
    put(t.path(), "/.dockerenv", b"");
    let r = doctor(t.path(), &[]);
    assert_eq!(slugs(&r), ["device-nodes-missing"]);
    let f = finding(&r, "device-nodes-missing");
    assert!(f["help"].as_str().unwrap().contains("--runtime nvidia"), "{f:#}");
    let because = f["evidence"].to_string();
    assert!(because.contains("/dev/nvmap does not exist"), "{f:#}");
}

/// No libcuda anywhere: `libcuda-not-found`, pointing at Jetson Linux's package.
#[test]
fn a_jetson_without_libcuda() {
    let t = tempfile::tempdir().unwrap();
    jetson(
        t.path(),
        R36_4_3,
        "tegra234",
        "/usr/lib/aarch64-linux-gnu/nvidia",
        true,
        true,
    );
    std::fs::remove_dir_all(t.path().join("usr/lib/aarch64-linux-gnu/nvidia")).unwrap();
    let r = doctor(t.path(), &[]);
    assert_eq!(slugs(&r), ["libcuda-not-found"]);
    let f = finding(&r, "libcuda-not-found");
    assert!(f["help"].as_str().unwrap().contains("nvidia-l4t-cuda"), "{f:#}");
}

/// A CUDA 13 program on Jetson Linux R36.4 (CUDA 12.6): `driver-insufficient`, judged on the device tree's
/// CC 8.7 without `--gpu`; no JetPack brings CUDA 13 to Orin, so the help says so and names cuda-compat.
#[test]
fn a_cuda_13_program_on_jetpack_6_is_driver_insufficient() {
    let t = tempfile::tempdir().unwrap();
    jetson(
        t.path(),
        R36_4_3,
        "tegra234",
        "/usr/lib/aarch64-linux-gnu/nvidia",
        true,
        true,
    );
    let r = inspect(t.path(), &fixture("ptx_only"));
    let f = finding(&r, "driver-insufficient");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("Jetson Linux 36.4.3's (CUDA 12.6)"),
        "{f:#}"
    );
    let help = f["help"].as_str().unwrap();
    assert!(
        help.contains("No JetPack in the matrix brings CUDA 13.0 to Orin"),
        "{help}"
    );
    assert!(help.contains("cuda-compat-13-0"), "{help}");
    assert!(!slugs(&r).contains(&"no-driver".to_string()), "{:?}", slugs(&r));
    let verdict = &r["verdicts"][0];
    assert!(verdict["gpu"].as_str().unwrap().contains("CC 8.7"), "{verdict:#}");
    assert_eq!(verdict["outcome"], "fails", "{verdict:#}");

    // The same judgement at a desk, from a snapshot of the Jetson.
    let snap = t.path().join("jetson.json");
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args([
            "snapshot",
            "-o",
            snap.to_str().unwrap(),
            "--root",
            t.path().to_str().unwrap(),
            "--clear-env",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = run(&[
        "inspect",
        "--format",
        "json",
        "--facts",
        snap.to_str().unwrap(),
        fixture("ptx_only").to_str().unwrap(),
    ]);
    assert!(
        slugs(&r).contains(&"driver-insufficient".to_string()),
        "{:?}",
        slugs(&r)
    );
    assert!(
        r["verdicts"][0]["gpu"].as_str().unwrap().contains("CC 8.7"),
        "{r:#}"
    );
}

/// An aarch64 program built for CUDA 12 (it needs `libcudart.so.12`) on JetPack 5 (CUDA 11.4): the help names
/// the JetPack that brings CUDA 12 to Orin. Near miss: on JetPack 6 it fits.
#[test]
fn a_cuda_12_program_on_jetpack_5_names_jetpack_6() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    jetson(
        root,
        R35_4_1,
        "tegra234",
        "/usr/lib/aarch64-linux-gnu/tegra",
        true,
        true,
    );
    let cudart = arm::lib(&root.join("opt/app/lib"), "libcudart.so.12", "cudaMalloc", &[]);
    let main = arm::exe(
        &root.join("opt/app/main"),
        &["cudaMalloc"],
        &[&cudart],
        &["-Wl,-rpath,$ORIGIN/lib"],
    );
    let r = inspect(root, &main);
    let f = finding(&r, "driver-insufficient");
    let help = f["help"].as_str().unwrap();
    assert!(
        help.contains("Flash JetPack 6.0 (Jetson Linux R36.3, CUDA 12.2)"),
        "{help}"
    );
    assert!(help.contains("cuda-compat-12-N"), "{help}");
    // Its tree is resolved in the Jetson root: no missing library.
    assert!(
        !slugs(&r).contains(&"library-not-found".to_string()),
        "{:?}",
        slugs(&r)
    );

    std::fs::write(
        root.join("etc/nv_tegra_release"),
        format!("{R36_4_3}, GCID: 1, BOARD: generic, EABI: aarch64\n"),
    )
    .unwrap();
    let r = inspect(root, &main);
    assert!(
        !slugs(&r).contains(&"driver-insufficient".to_string()),
        "{:?}",
        slugs(&r)
    );
}

/// A Grace Hopper node: a discrete GPU behind the open kernel module for aarch64, `/proc/driver/nvidia`, the
/// driver's libraries in the multiarch directory. No finding; CC 9.0 from the GPU's name; a CUDA 13.0 program
/// fits driver 580 (near miss of the Jetson case above).
#[test]
fn a_grace_hopper_node_is_judged_by_its_driver() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    arm::debian_root(root);
    put(
        root,
        "/proc/driver/nvidia/version",
        b"NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build  (dvs-builder@U22-I3-AE18-23-3)  Sun Jul 20 06:20:35 UTC 2025\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n",
    );
    put(
        root,
        "/proc/driver/nvidia/gpus/0009:01:00.0/information",
        b"Model: \t\t NVIDIA GH200 480GB\nIRQ:   \t\t 85\nGPU UUID: \t GPU-6e1c8f3a-52b4-4a7e-9d0e-0123456789ab\nBus Location: \t 0009:01:00.0\nDevice Minor: \t 0\n",
    );
    put(root, "/sys/module/nvidia/version", b"580.65.06\n");
    put(
        root,
        "/proc/modules",
        b"nvidia_uvm 1892352 0 - Live 0x0 (O)\nnvidia 9650176 1 nvidia_uvm, Live 0x0 (O)\n",
    );
    put(
        root,
        "/proc/self/status",
        b"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t0\n",
    );
    for node in ["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"] {
        put(root, node, b"");
    }
    libcuda(root, "/usr/lib/aarch64-linux-gnu", "libcuda.so.580.65.06");
    put(
        root,
        "/etc/ld.so.cache",
        &ld_cache(&[
            ("libcuda.so.1", "/usr/lib/aarch64-linux-gnu/libcuda.so.1", AARCH64),
            ("libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", AARCH64),
        ]),
    );
    let r = doctor(root, &[]);
    assert_eq!(slugs(&r), Vec::<String>::new(), "{r:#}");
    let h = &r["host"]["facts"];
    assert_eq!(h["gpus"][0]["cc"], "9.0", "{h:#}");
    assert_eq!(h["driver"]["version"], "580.65.06");
    assert_eq!(h["libcuda"][0]["path"], "/usr/lib/aarch64-linux-gnu/libcuda.so.1");
    assert!(h["platform"].get("tegra").is_none(), "{h:#}");
    let r = inspect(root, &fixture("ptx_only"));
    assert!(
        !slugs(&r).contains(&"driver-insufficient".to_string()),
        "{:?}",
        slugs(&r)
    );
}
