//! `doctor` and `snapshot` on the host fixture roots (`fixtures/hosts/<case>/root` + `env`; see
//! `fixtures/hosts/README.md`). Each case names the findings it must give, no more and no fewer.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::support::cli::{copy_tree, finding, json as run_json, machine_args, sorted_slugs as slugs};
use crate::support::golden;

fn case_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hosts")
        .join(case)
}

fn doctor_at(root: &Path, env_file: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["doctor".to_string(), "--format".into(), "json".into()];
    args.extend(machine_args(root, env_file, extra));
    run_json(&args)
}

fn doctor(case: &str, extra: &[&str]) -> Value {
    let d = case_dir(case);
    doctor_at(&d.join("root"), &d.join("env"), extra)
}

fn assert_findings(case: &str, extra: &[&str], expected: &[&str]) {
    let got = slugs(&doctor(case, extra));
    let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(got, want, "{case} {extra:?}");
}

const CASES: &[(&str, &[&str])] = &[
    ("healthy", &[]),
    ("container-no-gpu", &["device-nodes-missing", "libcuda-not-found"]),
    ("driver-upgraded-no-reboot", &["driver-library-mismatch"]),
    ("wsl2", &[]),
    ("compat-older-than-driver", &["compat-libcuda-unsupported"]),
    ("compat-on-geforce", &["compat-libcuda-unsupported"]),
    ("stale-ld-cache", &["libcuda-not-found"]),
    ("ld-cache-missing", &["libcuda-not-found"]),
    ("stub-first", &["stub-libcuda"]),
    ("stub-unversioned", &[]),
    ("conda-pip-toolkit", &[]),
    ("nouveau", &["no-driver", "nouveau-loaded"]),
    ("uvm-missing", &["nvidia-uvm-missing"]),
    ("h200-nix-open-580", &[]),
    ("jetson", &[]),
];

#[test]
fn every_fixture_gives_exactly_its_findings() {
    for (case, expected) in CASES {
        assert_findings(case, &[], expected);
    }
}

#[test]
fn healthy_host_facts() {
    let r = doctor("healthy", &[]);
    assert_eq!(r["host"]["collected"], true);
    assert_eq!(r["host"]["driver"]["version"], "550.90.07");
    assert_eq!(r["host"]["gpus"][0]["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(r["host"]["gpus"][0]["pci_device_id"], "0x2330");
    // from the matrix: the H100's compute capability by PCI id, R550's CUDA version
    assert_eq!(r["host"]["gpus"][0]["cc"], "9.0");
    assert_eq!(r["host"]["driver"]["cuda"], "12.4");
    assert_eq!(r["host"]["gpus"].as_array().unwrap().len(), 2);
    let f = &r["host"]["facts"];
    assert_eq!(f["kernel"]["flavour"], "proprietary");
    assert_eq!(f["libcuda"][0]["version"], "550.90.07");
    assert_eq!(f["libcuda"][0]["found_via"], "ld_so_cache");
    assert_eq!(f["ld_cache"], "usable");
    assert_eq!(f["env"]["nvcc"][0], "/usr/local/cuda/bin/nvcc");
}

#[test]
fn cuda_visible_devices_cases() {
    for bad in [
        "CUDA_VISIBLE_DEVICES=",
        "CUDA_VISIBLE_DEVICES=-1",
        "CUDA_VISIBLE_DEVICES=2",
        "CUDA_VISIBLE_DEVICES=GPU-deadbeef",
    ] {
        assert_findings("healthy", &[bad], &["no-visible-devices"]);
    }
    for good in [
        "CUDA_VISIBLE_DEVICES=0,7",
        "CUDA_VISIBLE_DEVICES=GPU-7d2e",
        "CUDA_VISIBLE_DEVICES=1,0",
    ] {
        assert_findings("healthy", &[good], &[]);
    }
}

#[test]
fn open_module_and_compat_candidate_order() {
    let r = doctor("compat-older-than-driver", &[]);
    let f = &r["host"]["facts"];
    assert_eq!(f["kernel"]["flavour"], "open");
    assert_eq!(f["libcuda"][0]["kind"], "compat");
    assert_eq!(f["libcuda"][0]["version"], "550.54.14");
    assert_eq!(f["libcuda"][1]["kind"], "driver");
}

/// What stops every CUDA program on the machine (here no GPU left visible, or the stub libcuda first), or this
/// one's libraries from loading, fails the verdict of a binary whose device code would run there.
#[test]
fn a_machine_or_loader_error_fails_the_verdict_of_code_that_would_run() {
    let verdict = |case: &str, extra: &[&str], flags: &[&str]| {
        let d = case_dir(case);
        let mut args = vec!["inspect".to_string(), "--format".into(), "json".into()];
        args.extend(flags.iter().map(|f| f.to_string()));
        args.extend(machine_args(&d.join("root"), &d.join("env"), extra));
        args.push(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/cuda13/multi")
                .display()
                .to_string(),
        );
        run_json(&args)["verdicts"][0].clone()
    };
    // The machine alone (the fixture trees hold no C library for the loader to find).
    let v = verdict("h200-nix-open-580", &[], &["--no-libraries"]);
    assert_eq!(v["outcome"], "runs", "{v}");
    let v = verdict(
        "h200-nix-open-580",
        &["CUDA_VISIBLE_DEVICES=-1"],
        &["--no-libraries"],
    );
    assert_eq!(v["outcome"], "fails", "{v}");
    assert_eq!(v["codes"][0], "no-visible-devices");
    assert!(v["reason"].as_str().unwrap().contains("error 100"), "{v}");
    let v = verdict("stub-first", &[], &["--no-libraries"]);
    assert_eq!(v["outcome"], "fails", "{v}");
    assert!(
        v["codes"].as_array().unwrap().iter().any(|c| c == "stub-libcuda"),
        "{v}"
    );
    // With its libraries resolved in that tree: the C and C++ runtimes are not there, so it does not start.
    let v = verdict("h200-nix-open-580", &[], &[]);
    assert_eq!(v["outcome"], "fails", "{v}");
    // Four libraries missing, one code.
    assert_eq!(v["codes"], serde_json::json!(["library-not-found"]), "{v}");
    assert!(
        v["reason"].as_str().unwrap().contains("libstdc++.so.6 needed by"),
        "{v}"
    );
}

/// A stale cache: the driver's libcuda is on disk in a directory the cache does not know, and the finding says
/// where and to run ldconfig.
#[test]
fn libcuda_on_disk_but_not_in_a_stale_cache() {
    let r = doctor("stale-ld-cache", &[]);
    assert!(r["host"]["facts"]["libcuda"].as_array().unwrap().is_empty());
    assert_eq!(r["host"]["facts"]["ld_cache"], "usable");
    let f = finding(&r, "libcuda-not-found");
    let evidence = serde_json::to_string(&f["evidence"]).unwrap();
    assert!(
        evidence.contains("on disk, not on the search path: /usr/local/nvidia/lib64/libcuda.so.1"),
        "{evidence}"
    );
    assert!(f["help"].as_str().unwrap().contains("sudo ldconfig"), "{f}");
}

/// No cache at all: the directory `ld.so.conf.d` lists is not searched (glibc reads no ld.so.conf at run time),
/// and the finding says that the cache is missing, not that it is stale.
#[test]
fn libcuda_in_a_directory_only_ld_so_conf_lists_without_a_cache() {
    let r = doctor("ld-cache-missing", &[]);
    let facts = &r["host"]["facts"];
    assert_eq!(facts["ld_cache"], "missing");
    assert!(facts["libcuda"].as_array().unwrap().is_empty(), "{facts}");
    let f = finding(&r, "libcuda-not-found");
    let evidence = serde_json::to_string(&f["evidence"]).unwrap();
    assert!(
        evidence.contains("the machine has no /etc/ld.so.cache")
            && evidence.contains("on disk, not on the search path: /usr/local/nvidia/lib64/libcuda.so.1"),
        "{evidence}"
    );
    let help = f["help"].as_str().unwrap();
    assert!(
        help.contains("glibc never reads /etc/ld.so.conf") && help.contains("sudo ldconfig"),
        "{help}"
    );
    assert!(!help.contains("stale"), "{help}");
}

/// Every machine under fixtures/hosts is one of the cases checked above.
#[test]
fn every_fixture_directory_is_a_case() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts");
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(CASES.iter().any(|(c, _)| *c == name), "{name} is not in CASES");
        }
    }
}

/// `inspect` reads the machine without its library catalogue: the report says so rather than "no CUDA library
/// found on disk".
#[test]
fn inspect_says_the_library_catalogue_was_not_read() {
    let d = case_dir("healthy");
    let binary = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/multi");
    let mut args = vec!["inspect".to_string(), "--color".into(), "never".into()];
    args.extend(machine_args(&d.join("root"), &d.join("env"), &[]));
    args.push(binary.display().to_string());
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(&args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("libraries not scanned in this run"), "{text}");
    assert!(!text.contains("no CUDA library found on disk"), "{text}");
    args[2] = "json".into();
    args[1] = "--format".into();
    let r = run_json(&args);
    assert_eq!(r["host"]["facts"]["catalog_skipped"], true);
    // doctor reads it, and the field is left out.
    let r = doctor("healthy", &[]);
    assert!(r["host"]["facts"].get("catalog_skipped").is_none());
    assert!(!r["host"]["facts"]["libraries"].as_array().unwrap().is_empty());
}

/// The 804 case end to end: a newer compat libcuda found first on a GeForce machine.
#[test]
fn newer_compat_libcuda_on_geforce_predicts_804() {
    let r = doctor("compat-on-geforce", &[]);
    let f = &r["host"]["facts"];
    assert_eq!(f["libcuda"][0]["kind"], "compat");
    assert_eq!(f["libcuda"][0]["version"], "575.57.08");
    assert_eq!(r["host"]["gpus"][0]["name"], "NVIDIA GeForce RTX 4090");
    let message = finding(&r, "compat-libcuda-unsupported")["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("error 804"), "{message}");
    assert!(
        message.contains("575.57.08 on top of driver 550.90.07"),
        "{message}"
    );
}

#[test]
fn container_and_wsl_are_recognised() {
    let r = doctor("container-no-gpu", &[]);
    let p = &r["host"]["facts"]["platform"];
    assert_eq!(p["container"]["engine"], "docker");
    assert_eq!(p["require_cuda"][0][0]["value"], "12.4");
    assert_eq!(p["require_cuda"][1][2]["op"], "<");
    let r = doctor("wsl2", &[]);
    assert_eq!(r["host"]["facts"]["platform"]["wsl"]["dxg"], true);
    assert_eq!(r["host"]["facts"]["libcuda"][0]["kind"], "wsl");
}

/// A container with neither `/sys` nor the NVIDIA driver (issue 21): `no-driver`, and not `no-gpu`, since the
/// PCI bus was never read. With an empty `/sys/bus/pci/devices` it is `no-gpu` alone.
#[test]
fn a_container_without_sys_or_driver_is_no_driver_not_no_gpu() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    std::fs::create_dir_all(root.join("proc/self")).unwrap();
    std::fs::write(root.join(".dockerenv"), "").unwrap();
    std::fs::write(
        root.join("proc/self/status"),
        "Name:\tcudadiag\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t0\n",
    )
    .unwrap();
    let env = t.path().join("env");
    std::fs::write(&env, "PATH=/usr/bin:/bin\nHOME=/root\n").unwrap();
    let r = doctor_at(&root, &env, &[]);
    assert_eq!(slugs(&r), ["no-driver"], "{r}");
    let f = finding(&r, "no-driver");
    assert!(
        f["evidence"]
            .to_string()
            .contains("/sys/bus/pci/devices does not exist")
    );
    assert_eq!(r["host"]["facts"]["pci_bus"]["state"], "unreadable");
    // near miss: the bus is there, read, and holds only another vendor's function
    let dev = root.join("sys/bus/pci/devices/0000:00:02.0");
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::write(dev.join("vendor"), "0x8086\n").unwrap();
    std::fs::write(dev.join("class"), "0x030000\n").unwrap();
    std::fs::write(dev.join("device"), "0x46a6\n").unwrap();
    let r = doctor_at(&root, &env, &[]);
    assert_eq!(slugs(&r), ["no-gpu"], "{r}");
    assert_eq!(r["host"]["facts"]["pci_bus"]["devices"], 1);
}

/// Builds a shared object with `cc` from C source `src`, named `name` in `dir`, with `flags`.
fn cc_lib(dir: &Path, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let out = dir.join(name);
    let st = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&c)
        .args(flags)
        .status()
        .unwrap();
    assert!(st.success());
    out
}

const CU_SRC: &str = "int cuInit(unsigned f) { (void)f; return 34; }\n\
                      int cuDriverGetVersion(int *v) { *v = 0; return 34; }\n\
                      int cuDeviceGetCount(int *n) { *n = 0; return 34; }\n";

/// Issue 21: the toolkit's stub copied as `libcuda.so.1` into an application directory on LD_LIBRARY_PATH (no
/// `stubs` in its path) is recognised by content: no DT_NEEDED, no symbol versions. A synthetic stub with
/// those properties (`cc -shared -nostdlib`, SONAME libcuda.so.1) stands in for the real one (the device-run
/// check against CUDA 13.0's is `scripts/verdicts-live.sh`).
#[test]
fn a_stub_copied_anywhere_as_libcuda_so_1_is_stub_libcuda() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    copy_tree(&case_dir("healthy").join("root"), &root);
    let app = root.join("opt/app/lib");
    std::fs::create_dir_all(&app).unwrap();
    let stub = cc_lib(
        t.path(),
        "stub.so",
        CU_SRC,
        &["-nostdlib", "-Wl,-soname,libcuda.so.1"],
    );
    std::fs::copy(&stub, app.join("libcuda.so.1")).unwrap();
    let env = case_dir("healthy").join("env");
    let r = doctor_at(&root, &env, &["LD_LIBRARY_PATH=/opt/app/lib"]);
    assert_eq!(slugs(&r), ["stub-libcuda"], "{r}");
    let f = finding(&r, "stub-libcuda");
    let ev = f["evidence"].to_string();
    assert!(
        ev.contains("no DT_NEEDED entry") && ev.contains("no symbol versions"),
        "{ev}"
    );
    assert!(f["help"].as_str().unwrap().contains("/opt/app/lib/libcuda.so.1"));
    assert_eq!(r["host"]["facts"]["libcuda"][0]["kind"], "stub");
    // near miss: a library with the same SONAME that needs libc, as the driver's does, in the same place
    let map = t.path().join("v.map");
    std::fs::write(&map, "libcuda.so.1 { global: cu*; local: *; };\n").unwrap();
    let real = cc_lib(
        t.path(),
        "real.so",
        CU_SRC,
        &[
            "-Wl,-soname,libcuda.so.1",
            &format!("-Wl,--version-script={}", map.display()),
        ],
    );
    std::fs::copy(&real, app.join("libcuda.so.1")).unwrap();
    let r = doctor_at(&root, &env, &["LD_LIBRARY_PATH=/opt/app/lib"]);
    assert_eq!(slugs(&r), Vec::<String>::new(), "{r}");
    assert_eq!(r["host"]["facts"]["libcuda"][0]["kind"], "driver");
}

/// Empty and truncated driver libraries beside the driver's libcuda are `driver-library-damaged`; a whole one
/// is not.
#[test]
fn empty_or_truncated_driver_libraries_are_damaged() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    copy_tree(&case_dir("healthy").join("root"), &root);
    let dir = root.join("usr/lib/x86_64-linux-gnu");
    let env = case_dir("healthy").join("env");
    let whole = cc_lib(
        t.path(),
        "whole.so",
        CU_SRC,
        &["-Wl,-soname,libnvidia-gpucomp.so.550.90.07"],
    );
    std::fs::copy(&whole, dir.join("libnvidia-gpucomp.so.550.90.07")).unwrap();
    let r = doctor_at(&root, &env, &[]);
    assert_eq!(slugs(&r), Vec::<String>::new(), "{r}");
    std::fs::write(dir.join("libnvidia-ptxjitcompiler.so.550.90.07"), "").unwrap();
    let bytes = std::fs::read(&whole).unwrap();
    std::fs::write(
        dir.join("libnvidia-gpucomp.so.550.90.07"),
        &bytes[..bytes.len() / 2],
    )
    .unwrap();
    let r = doctor_at(&root, &env, &[]);
    assert_eq!(
        slugs(&r),
        ["driver-library-damaged", "driver-library-damaged"],
        "{r}"
    );
    let text = r["findings"].to_string();
    assert!(
        text.contains("libnvidia-ptxjitcompiler.so.550.90.07 is empty (0 bytes)"),
        "{text}"
    );
    assert!(
        text.contains("libnvidia-gpucomp.so.550.90.07 is cut short"),
        "{text}"
    );
}

/// A CDI spec generated for driver 550.54.14 on a machine whose module is now 550.90.07 is stale; one generated
/// for the loaded driver is not (issue 21).
#[test]
fn a_cdi_spec_for_another_driver_is_stale() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    copy_tree(&case_dir("healthy").join("root"), &root);
    let env = case_dir("healthy").join("env");
    let spec = |v: &str| {
        format!(
            "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n  containerEdits:\n    deviceNodes:\n    \
             - path: /dev/nvidia0\ncontainerEdits:\n  mounts:\n  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.{v}\n    \
             containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.{v}\n    options: [ro, nosuid, nodev, bind]\n  \
             - hostPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{v}\n    containerPath: /x\n"
        )
    };
    std::fs::create_dir_all(root.join("etc/cdi")).unwrap();
    std::fs::write(root.join("etc/cdi/nvidia.yaml"), spec("550.90.07")).unwrap();
    let r = doctor_at(&root, &env, &[]);
    assert_eq!(slugs(&r), Vec::<String>::new(), "{r}");
    assert_eq!(r["host"]["facts"]["cdi"][0]["driver_versions"][0], "550.90.07");
    std::fs::write(root.join("etc/cdi/nvidia.yaml"), spec("550.54.14")).unwrap();
    std::fs::create_dir_all(root.join("var/run/cdi")).unwrap();
    std::fs::write(
        root.join("var/run/cdi/nvidia.json"),
        r#"{"kind":"nvidia.com/gpu","containerEdits":{"mounts":[{"hostPath":"/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07"}]}}"#,
    )
    .unwrap();
    let r = doctor_at(&root, &env, &[]);
    assert_eq!(slugs(&r), ["cdi-spec-stale"], "{r}");
    let f = finding(&r, "cdi-spec-stale");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("/etc/cdi/nvidia.yaml mounts driver 550.54.14")
    );
    assert!(f["help"].as_str().unwrap().contains("nvidia-ctk cdi generate"));
}

/// Git keeps no file modes beyond +x, so the permission case is made from the healthy tree: an unprivileged
/// uid that owns nothing, and nodes whose mode is set here.
#[test]
fn device_permission_denied_on_a_copy_of_the_healthy_tree() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    copy_tree(&case_dir("healthy").join("root"), &root);
    std::fs::write(
        root.join("proc/self/status"),
        "Name:\tcudadiag\nUid:\t4242\t4242\t4242\t4242\nGid:\t4242\t4242\t4242\t4242\nGroups:\t4242\n",
    )
    .unwrap();
    let env = case_dir("healthy").join("env");
    for (mode, expected) in [(0o600, vec!["device-permission-denied"]), (0o666, vec![])] {
        for n in ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"] {
            std::fs::set_permissions(root.join("dev").join(n), std::fs::Permissions::from_mode(mode))
                .unwrap();
        }
        assert_eq!(slugs(&doctor_at(&root, &env, &[])), expected, "mode {mode:o}");
    }
}

#[test]
fn catalogue_lists_every_cudart_with_version_and_owner() {
    let r = doctor("conda-pip-toolkit", &[]);
    let libs = r["host"]["facts"]["libraries"].as_array().unwrap();
    let find = |real: &str| {
        libs.iter()
            .find(|l| l["real_path"].as_str().unwrap().ends_with(real))
            .unwrap_or_else(|| panic!("{real} not catalogued"))
    };
    let tk = find("cuda-12.4/targets/x86_64-linux/lib/libcublas.so.12.4.5.3");
    assert_eq!(tk["version"], "12.4.5.3");
    assert_eq!(tk["owner"]["kind"], "toolkit");
    assert!(
        tk["version_source"]
            .as_str()
            .unwrap()
            .ends_with("version.json libcublas")
    );
    let conda = find("envs/ml/lib/libcudart.so.12.6.77");
    assert_eq!(conda["version"], "12.6.77");
    assert_eq!(conda["owner"]["kind"], "conda");
    assert_eq!(conda["owner"]["name"], "cuda-cudart");
    let pip = find("nvidia/cuda_runtime/lib/libcudart.so.12");
    assert_eq!(pip["version"], "12.8.90");
    assert_eq!(pip["owner"]["name"], "nvidia-cuda-runtime-cu12");
    let cu13 = find("nvidia/cu13/lib/libcudart.so.13");
    assert_eq!(cu13["version"], "13.0.96");
    let vendored = find("torch/lib/libcudart-9335f6a2.so.12");
    assert_eq!(vendored["owner"]["name"], "torch");
    assert_eq!(vendored["kind"], "cudart");
    // the torch wheel's own version is not the runtime's
    assert_ne!(vendored["version"], "2.5.1");
    let stub = find("stubs/libcuda.so");
    assert_eq!(stub["kind"], "stub");
    // dpkg owns the toolkit's cudart and the driver's libcuda; the library version is the upstream one
    let deb = find("cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127");
    assert_eq!(deb["owner"]["kind"], "deb");
    assert_eq!(deb["owner"]["name"], "cuda-cudart-12-4");
    assert_eq!(deb["owner"]["version"], "12.4.127-1");
    assert_eq!(deb["version"], "12.4.127");
    let drv = find("libcuda.so.550.90.07");
    assert_eq!(drv["owner"]["name"], "libnvidia-compute-550");
    assert_eq!(drv["version_source"], "file name libcuda.so.550.90.07");
    // the unrelated numpy distribution owns nothing
    assert!(libs.iter().all(|l| l["owner"]["name"] != "numpy"));
}

#[test]
fn snapshot_gives_the_live_findings() {
    let t = tempfile::tempdir().unwrap();
    for (case, _) in CASES {
        let d = case_dir(case);
        let snap = t.path().join(format!("{case}.json"));
        let mut args = vec!["snapshot".to_string(), "-o".into(), snap.display().to_string()];
        args.extend(machine_args(&d.join("root"), &d.join("env"), &[]));
        Command::cargo_bin("cudadiag")
            .unwrap()
            .args(&args)
            .assert()
            .success();
        let live = doctor(case, &[]);
        let replay = run_json(&[
            "doctor".into(),
            "--format".into(),
            "json".into(),
            "--facts".into(),
            snap.display().to_string(),
        ]);
        assert_eq!(live["findings"], replay["findings"], "{case}");
        assert_eq!(live["host"], replay["host"], "{case}");
        // The envelope names the build as the JSON report's `tool` does; `tool` stays a string for old readers.
        let envelope: serde_json::Value = serde_json::from_slice(&std::fs::read(&snap).unwrap()).unwrap();
        assert_eq!(envelope["tool"], concat!("cudadiag ", env!("CARGO_PKG_VERSION")));
        assert_eq!(envelope["tool_info"], live["tool"], "{case}");
        // A snapshot written before `tool_info` existed still loads.
        let mut old = envelope.clone();
        old.as_object_mut().unwrap().remove("tool_info");
        std::fs::write(&snap, serde_json::to_vec(&old).unwrap()).unwrap();
        let replay = run_json(&[
            "doctor".into(),
            "--format".into(),
            "json".into(),
            "--facts".into(),
            snap.display().to_string(),
        ]);
        assert_eq!(live["findings"], replay["findings"], "{case}");
    }
}

#[test]
fn inspect_with_facts_judges_against_the_snapshot_machine() {
    let t = tempfile::tempdir().unwrap();
    let snap = t.path().join("case.json");
    let d = case_dir("stub-first");
    let mut args = vec!["snapshot".to_string(), "-o".into(), snap.display().to_string()];
    args.extend(machine_args(&d.join("root"), &d.join("env"), &[]));
    Command::cargo_bin("cudadiag")
        .unwrap()
        .args(&args)
        .assert()
        .success();
    let bin = env!("CARGO_BIN_EXE_cudadiag").to_string();
    let r = run_json(&[
        "inspect".into(),
        "--format".into(),
        "json".into(),
        "--facts".into(),
        snap.display().to_string(),
        bin,
    ]);
    assert!(slugs(&r).contains(&"stub-libcuda".to_string()));
    assert_eq!(r["host"]["driver"]["version"], "550.90.07");
}

#[test]
fn bad_root_and_bad_snapshot_are_tool_errors() {
    Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["doctor", "--root", "/nonexistent/cudadiag-root"])
        .assert()
        .code(2);
    let t = tempfile::tempdir().unwrap();
    let bad = t.path().join("bad.json");
    std::fs::write(&bad, "{\"snapshot_version\": 1}").unwrap();
    Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["doctor", "--facts", bad.to_str().unwrap()])
        .assert()
        .code(2);
}

/// The JSON contract (`shared/contract/check_report.py` beside the checkout), on every fixture.
#[test]
fn json_honours_the_contract() {
    let Some(checker) = crate::support::skip::contract_checker() else {
        return;
    };
    for (case, _) in CASES {
        let r = doctor(case, &[]);
        let t = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(t.path(), serde_json::to_vec(&r).unwrap()).unwrap();
        let out = std::process::Command::new("python3")
            .arg(&checker)
            .arg(t.path())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok", "{case}");
    }
}

/// Differential: the ld.so.cache reader against glibc's own `ldconfig -p` on the test machine's cache.
#[test]
fn ld_so_cache_agrees_with_ldconfig() {
    let Ok(bytes) = std::fs::read("/etc/ld.so.cache") else {
        crate::support::skip::optional("no /etc/ld.so.cache on this machine");
        return;
    };
    let Ok(out) = std::process::Command::new("ldconfig").arg("-p").output() else {
        crate::support::skip::optional("no ldconfig on the PATH to compare with");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut theirs: Vec<(String, String)> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (left, path) = l.split_once(" => ")?;
            let soname = left.trim().split(" (").next()?;
            Some((soname.to_string(), path.trim().to_string()))
        })
        .collect();
    let mut ours: Vec<(String, String)> = cudadiag::loader::cache::LdCache::parse(&bytes)
        .map(|c| c.entries.into_iter().map(|e| (e.name, e.path)).collect())
        .unwrap_or_default();
    theirs.sort();
    ours.sort();
    assert!(!ours.is_empty());
    assert_eq!(ours, theirs);
}

/// A link loop and a dangling link among the libraries are recorded as problems; the run goes on.
#[test]
fn link_loops_are_problems_not_failures() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    copy_tree(&case_dir("healthy").join("root"), &root);
    let lib = root.join("usr/local/cuda-12.4/targets/x86_64-linux/lib");
    std::os::unix::fs::symlink("libcublasLt.so.12", lib.join("libcublasLt.so.12")).unwrap();
    std::os::unix::fs::symlink("libcufft.so.11.2.1", lib.join("libcufft.so.11")).unwrap();
    std::os::unix::fs::symlink("..", lib.join("up")).unwrap();
    let r = doctor_at(&root, &case_dir("healthy").join("env"), &[]);
    assert!(slugs(&r).is_empty());
    let problems = r["host"]["facts"]["problems"].as_array().unwrap();
    let text = serde_json::to_string(problems).unwrap();
    assert!(text.contains("libcublasLt.so.12"), "{text}");
    assert!(text.contains("libcufft.so.11"), "{text}");
    assert!(r["host"]["facts"]["libraries"].as_array().unwrap().len() > 3);
}

/// The smallest shared object `inspect` reads as a libcudart: a `.text` holding `cudaRuntimeGetVersion`
/// (`mov dword [rdi], VERSION; xor eax, eax; ret`), named in `.symtab`.
fn tiny_cudart(version: u32) -> Vec<u8> {
    let mut text = vec![0xC7, 0x07];
    text.extend_from_slice(&version.to_le_bytes());
    text.extend_from_slice(&[0x31, 0xC0, 0xC3]);
    crate::support::tiny_runtime::tiny_runtime(62, &text, text.len() as u64) // EM_X86_64
}

/// A vendored copy with no version in its name or metadata still gets one: the constant its
/// `cudaRuntimeGetVersion` stores.
#[test]
fn vendored_cudart_version_from_its_code() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    copy_tree(&case_dir("conda-pip-toolkit").join("root"), &root);
    let vendored = root.join("root/.venv/lib/python3.11/site-packages/torch/lib/libcudart-9335f6a2.so.12");
    std::fs::write(&vendored, tiny_cudart(12040)).unwrap();
    let r = doctor_at(&root, &case_dir("conda-pip-toolkit").join("env"), &[]);
    let libs = r["host"]["facts"]["libraries"].as_array().unwrap();
    let l = libs
        .iter()
        .find(|l| l["path"].as_str().unwrap().ends_with("libcudart-9335f6a2.so.12"))
        .unwrap();
    assert_eq!(l["runtime_version"], "12.4");
    assert_eq!(l["version"], "12.4");
    assert_eq!(l["version_source"], "the constant cudaRuntimeGetVersion stores");
    assert_eq!(l["owner"]["name"], "torch");
    // near miss: the same bytes with an implausible constant give no version
    std::fs::write(&vendored, tiny_cudart(7)).unwrap();
    let r = doctor_at(&root, &case_dir("conda-pip-toolkit").join("env"), &[]);
    let libs = r["host"]["facts"]["libraries"].as_array().unwrap();
    let l = libs
        .iter()
        .find(|l| l["path"].as_str().unwrap().ends_with("libcudart-9335f6a2.so.12"))
        .unwrap();
    assert!(l["version"].is_null());
}

/// The binary ld.so.cache path: candidates in cache order, each with the version of its real file.
#[test]
fn driver_libraries_through_a_binary_ld_so_cache() {
    let r = doctor("h200-nix-open-580", &[]);
    let f = &r["host"]["facts"];
    assert_eq!(r["host"]["driver"]["version"], "580.159.04");
    assert_eq!(r["host"]["driver"]["cuda"], "13.0");
    assert_eq!(r["host"]["gpus"][0]["cc"], "9.0");
    assert_eq!(f["kernel"]["flavour"], "open");
    let paths: Vec<&str> = f["libcuda"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["/usr/local/nvidia/lib64/libcuda.so.1", "/lib/libcuda.so.1"]
    );
    assert_eq!(f["libcuda"][0]["found_via"], "ld_so_cache");
    assert_eq!(f["libcuda"][0]["version"], "580.159.04");
    assert_eq!(
        f["nvml"][0]["real_path"],
        "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04"
    );
    // the driver's directories are catalogued through the cache too
    let libs = f["libraries"].as_array().unwrap();
    assert!(libs.iter().any(
        |l| l["real_path"] == "/usr/local/nvidia/lib64/libcudadebugger.so.580.159.04"
            && l["owner"]["kind"] == "driver"
    ));
    // /dev/nvidia-caps is a directory, not a node
    let nodes = serde_json::to_string(&f["device_nodes"]).unwrap();
    assert!(!nodes.contains("nvidia-caps"));
}

#[test]
fn jetson_is_recognised() {
    let r = doctor("jetson", &[]);
    let f = &r["host"]["facts"];
    assert!(f["platform"]["jetson"].as_str().unwrap().starts_with("# R35"));
    assert_eq!(
        f["libcuda"][0]["path"],
        "/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1"
    );
    assert_eq!(f["identity"]["groups"], serde_json::json!([44, 1000]));
}

/// A Python environment found only through PATH (`/opt/app/.venv/bin/python3`, as on the H200 box where torch
/// lives in `/opt/torch/.venv`) has its wheels' libraries catalogued; without it on PATH they are not.
#[test]
fn python_on_path_is_an_environment() {
    let t = tempfile::tempdir().unwrap();
    let venv = t.path().join("opt/app/.venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(venv.join("bin/python3"), "").unwrap();
    let lib = venv.join("lib/python3.12/site-packages/nvidia/cuda_runtime/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/libkern.so"),
        lib.join("libcudart.so.12"),
    )
    .unwrap();
    let paths = |path_var: &str| -> Vec<String> {
        let out = Command::cargo_bin("cudadiag")
            .unwrap()
            .args([
                "doctor",
                "--format",
                "json",
                "--clear-env",
                "--env",
                path_var,
                "--root",
            ])
            .arg(t.path())
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["host"]["facts"]["libraries"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["path"].as_str().map(str::to_string))
            .collect()
    };
    let want = "/opt/app/.venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12";
    assert!(
        paths("PATH=/opt/app/.venv/bin:/usr/bin")
            .iter()
            .any(|p| p == want)
    );
    assert!(!paths("PATH=/usr/bin").iter().any(|p| p == want));
}

/// Issue 19, case 2: a GPU model string from `/proc/driver/nvidia/gpus/*/information` reached the terminal
/// raw in `doctor`'s human and `github` reports.
#[test]
fn hostile_gpu_model_reaches_the_terminal_escaped() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    copy_tree(&case_dir("healthy").join("root"), &root);
    let info = root.join("proc/driver/nvidia/gpus/0000:19:00.0/information");
    let text = std::fs::read_to_string(&info).unwrap();
    let text = text.replace(
        "NVIDIA H100 80GB HBM3",
        "NVIDIA \x1b]0;pwned\x07\x1b[2J\u{9b}H100",
    );
    std::fs::write(&info, text).unwrap();
    for format in ["human", "github"] {
        let mut args = vec![
            "doctor".to_string(),
            "--color".into(),
            "never".into(),
            "--format".into(),
            format.into(),
        ];
        args.extend(machine_args(&root, &case_dir("healthy").join("env"), &[]));
        let out = Command::cargo_bin("cudadiag")
            .unwrap()
            .args(&args)
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(
            !out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07) && !shown.contains('\u{9b}'),
            "{format}: {shown:?}"
        );
        if format == "human" {
            assert!(
                shown.contains("NVIDIA \\e]0;pwned\\x07\\e[2J\\u{9b}H100"),
                "{shown}"
            );
        }
    }
}

/// A root built of every escape tried so far (case 6 of issue 19): absolute links to `/`, `..` chains, links
/// to the host's `/proc`, `/sys`, `/dev` and `/etc`, link loops, a self-including `ld.so.conf`, and two canary
/// libraries outside the root that only an escaping walk could find. Returns (root, canary directory).
fn escape_tree(t: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::symlink;
    let root = t.join("root");
    let outside = t.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("libcudart.so.13"), b"\x7fELF canary").unwrap();
    for d in [
        "etc",
        "usr/lib/python3.99/site-packages",
        "usr/lib/x86_64-linux-gnu",
        "var/lib/dpkg",
        "home",
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    // `/opt` is the host's `/`; `/usr/local` climbs out by `..`; a site-packages' nvidia/ is the canary.
    symlink("/", root.join("opt")).unwrap();
    symlink("../../outside", root.join("usr/local")).unwrap();
    symlink(&outside, root.join("usr/lib/python3.99/site-packages/nvidia")).unwrap();
    symlink(&outside, root.join("usr/lib/x86_64-linux-gnu/cuda")).unwrap();
    // The host's pseudo-filesystems and configuration.
    for d in ["proc", "sys", "dev", "root", "lib64"] {
        symlink(format!("/{d}"), root.join(d)).unwrap();
    }
    symlink("/etc", root.join("etc/ld.so.conf.d")).unwrap();
    symlink("/etc/ld.so.cache", root.join("etc/ld.so.cache")).unwrap();
    symlink("/var/lib/dpkg/status", root.join("var/lib/dpkg/status")).unwrap();
    symlink("/root", root.join("home/user")).unwrap();
    symlink("loop-b", root.join("loop-a")).unwrap();
    symlink("loop-a", root.join("loop-b")).unwrap();
    symlink("/loop-a/lib", root.join("usr/lib/x86_64-linux-gnu/looped")).unwrap();
    let mut conf = String::from("include ld.so.conf.d/*.conf\n/opt/lib\n/../../../../usr/lib\n/loop-a\n");
    for _ in 0..10 {
        conf.push_str("include /etc/ld.so.conf\n");
    }
    std::fs::write(root.join("etc/ld.so.conf"), conf).unwrap();
    (root, outside)
}

/// Paths outside `allowed` that `trace` (`strace -f` output) shows opened, stat'ed or read as links
/// successfully: the path is a call's first string, resolved as the kernel resolved it (a path spelled under
/// the root may lead out through a link; the last component is not followed by `lstat`, `readlink` and
/// `AT_SYMLINK_NOFOLLOW`); a call split by another thread (`<unfinished ...>`) is judged by its result.
fn escapes(trace: &str, allowed: &[String]) -> Vec<String> {
    let inside = |path: &Path| {
        allowed
            .iter()
            .any(|a| path == Path::new(a) || path.starts_with(a))
    };
    let real = |path: &str, nofollow: bool| -> PathBuf {
        let p = Path::new(path);
        if path.starts_with("/proc/self") || path.starts_with("/proc/thread-self") {
            return p.to_path_buf(); // the traced process's own, not this one's
        }
        match (nofollow, p.parent(), p.file_name()) {
            (true, Some(dir), Some(name)) => dir.canonicalize().unwrap_or(dir.to_path_buf()).join(name),
            _ => p.canonicalize().unwrap_or(p.to_path_buf()),
        }
    };
    let mut pending: std::collections::HashMap<&str, (&str, &str)> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for line in trace.lines() {
        // strace pads the pid to a common width when pids of several lengths appear ("7372  readlink(").
        let Some((pid, call)) = line.split_once(' ') else {
            continue;
        };
        let call = call.trim_start();
        let (path, first) = if call.starts_with("<...") {
            let Some(p) = pending.remove(pid) else { continue };
            p
        } else {
            let Some(path) = call.split('"').nth(1) else {
                continue;
            };
            if call.ends_with("<unfinished ...>") {
                pending.insert(pid, (path, call));
                continue;
            }
            (path, call)
        };
        if call.contains("= -1 ") || !path.starts_with('/') {
            continue;
        }
        let nofollow = first.starts_with("lstat")
            || first.starts_with("readlink")
            || first.contains("AT_SYMLINK_NOFOLLOW");
        let r = real(path, nofollow);
        if !inside(&r) {
            out.push(format!("{} ({line})", r.display()));
        }
    }
    out
}

/// What cudadiag's own process may open outside the root: its own libraries and their loader's cache (at
/// start, before `main`), the pieces of `/proc/self` and `/sys` the Rust runtime and glibc read (stack guard,
/// thread count, cgroup CPU quota), `/proc/sys/vm/overcommit_memory` (glibc's malloc reads it the first time it
/// may give a thread arena's memory back, so only on some runs), and the test's own directory (the inspected
/// input lives there).
fn runtime_paths(test_dir: &Path) -> Vec<String> {
    let bin = env!("CARGO_BIN_EXE_cudadiag");
    let mut allowed: Vec<String> = [
        "/etc/ld.so.cache",
        "/etc/ld.so.preload",
        "/proc/self",
        "/proc/thread-self",
        "/sys/fs/cgroup",
        "/sys/devices/system/cpu",
        "/proc/sys/vm/overcommit_memory",
        "/dev/null",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    allowed.push(bin.to_string());
    allowed.push(test_dir.display().to_string());
    allowed.push(std::env::current_dir().unwrap().display().to_string());
    if let Ok(out) = std::process::Command::new("ldd").arg(bin).output() {
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            let p = l
                .split("=>")
                .last()
                .unwrap_or(l)
                .split(" (")
                .next()
                .unwrap_or("")
                .trim();
            if p.starts_with('/') {
                allowed.push(p.to_string());
                if let Ok(real) = std::fs::canonicalize(p) {
                    allowed.push(real.display().to_string());
                }
            }
        }
    }
    allowed
}

/// Case 6 of issue 19: `inspect --root R` walked the host's directories when `R/opt` linked to `/`. On a
/// tree of every escape, `doctor`, `inspect` and `snapshot` finish, name no library outside the root, and
/// (where strace is installed) open nothing outside it but their own runtime's files.
#[test]
fn nothing_outside_the_root_is_read() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let canary_dir = tempfile::tempdir().unwrap();
    let (root, outside) = escape_tree(canary_dir.path());
    // The root itself lives in the canary's directory; the inspected input in the test's own.
    let app = base.join("app");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/cudart_shared"),
        &app,
    )
    .unwrap();
    let root_s = root.display().to_string();
    let machine = [
        "--root",
        &root_s,
        "--clear-env",
        "--env",
        "HOME=/home/user",
        "--env",
        "LD_LIBRARY_PATH=/opt/lib:/../../..:/loop-a:/proc/self",
        "--env",
        "PATH=/opt/bin:/usr/local/bin",
        "--env",
        "CUDA_HOME=/opt",
    ];
    let app_s = app.display().to_string();
    let runs: [Vec<&str>; 3] = [
        [&["doctor", "--format", "json"][..], &machine[..]].concat(),
        [
            &["inspect", "--format", "json"][..],
            &machine[..],
            &[app_s.as_str()][..],
        ]
        .concat(),
        [&["snapshot", "-o", "-"][..], &machine[..]].concat(),
    ];
    let strace = std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !strace {
        crate::support::skip::required("strace is not installed: the output is checked, not what was opened");
    }
    let mut allowed = runtime_paths(&base);
    allowed.push(root_s.clone());
    if let Ok(real) = root.canonicalize() {
        allowed.push(real.display().to_string());
    }
    for args in &runs {
        let start = std::time::Instant::now();
        let out = Command::cargo_bin("cudadiag")
            .unwrap()
            .current_dir(&base)
            .args(args)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "{args:?} took {:?}",
            start.elapsed()
        );
        let text = String::from_utf8_lossy(&out.stdout);
        // The canaries are only reachable by leaving the root.
        assert!(
            !text.contains("canary") && !text.contains(&outside.display().to_string()),
            "{args:?}"
        );
        if args[0] == "inspect" {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let lib = v["libraries"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["soname"] == "libcudart.so.13")
                .unwrap();
            assert!(lib["path"].is_null(), "{lib}");
            assert_eq!(
                lib.get("copies").map_or(0, |c| c.as_array().map_or(0, Vec::len)),
                0,
                "{lib}"
            );
        }
        if !strace {
            continue;
        }
        let trace = base.join("trace.txt");
        let st = std::process::Command::new("strace")
            .args([
                "-f",
                "-qq",
                "-e",
                "trace=openat,open,stat,lstat,newfstatat,statx,readlink,readlinkat",
                "-o",
            ])
            .arg(&trace)
            .arg(env!("CARGO_BIN_EXE_cudadiag"))
            // cargo's LD_LIBRARY_PATH would have the loader look in the toolchain's directories at start.
            .env_clear()
            .args(args)
            .current_dir(&base)
            .output()
            .unwrap();
        if !matches!(st.status.code(), Some(0 | 1)) {
            // strace refused (no ptrace in this sandbox): the output checks above stand alone.
            crate::support::skip::optional(&format!("strace could not trace {args:?} (no ptrace here?)"));
            continue;
        }
        let text = std::fs::read_to_string(&trace).unwrap();
        let bad = escapes(&text, &allowed);
        assert!(
            bad.is_empty(),
            "{args:?} read outside the root:\n{}",
            bad.join("\n")
        );
    }
}

/// The `no-driver` finding's evidence line about the version file.
fn version_evidence(r: &Value) -> String {
    finding(r, "no-driver")["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|e| e.starts_with("/proc/driver/nvidia/version"))
        .unwrap_or_default()
        .to_string()
}

/// Case 9 of issue 19: a version file of 8 GiB, or a FIFO, under `--root` was reported as "does not exist"
/// (after a hang, for the FIFO). It is reported as what it is; an absent one still "does not exist".
#[test]
fn an_unreadable_driver_version_file_is_said_as_such() {
    let env = case_dir("healthy").join("env");
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    copy_tree(&case_dir("healthy").join("root"), &root);
    let version = root.join("proc/driver/nvidia/version");
    std::fs::remove_file(&version).unwrap();
    std::fs::File::create(&version).unwrap().set_len(8 << 30).unwrap();
    let r = doctor_at(&root, &env, &[]);
    assert_eq!(
        version_evidence(&r),
        "/proc/driver/nvidia/version is there but was not read: is 8 GiB, more than the 1 MiB a /proc or /sys \
         text file can be: not read"
    );
    assert!(
        finding(&r, "no-driver")["message"]
            .as_str()
            .unwrap()
            .contains("cannot be read")
    );
    std::fs::remove_file(&version).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&version)
            .status()
            .unwrap()
            .success()
    );
    let r = doctor_at(&root, &env, &[]);
    assert!(
        version_evidence(&r).ends_with("is a FIFO (named pipe), not a regular file"),
        "{r}"
    );
    // The near miss: no file at all.
    std::fs::remove_file(&version).unwrap();
    let r = doctor_at(&root, &env, &[]);
    assert_eq!(version_evidence(&r), "/proc/driver/nvidia/version does not exist");
}

/// Case 3 of issue 19: ten `include /etc/ld.so.conf` lines hung `doctor` and `snapshot`. They finish with the
/// findings of the same machine without them.
#[test]
fn a_self_including_ld_so_conf_does_not_hang() {
    let env = case_dir("healthy").join("env");
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    copy_tree(&case_dir("healthy").join("root"), &root);
    let conf = root.join("etc/ld.so.conf");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str(&"include /etc/ld.so.conf\n".repeat(10));
    std::fs::write(&conf, text).unwrap();
    let mut args = vec!["doctor".to_string(), "--format".into(), "json".into()];
    args.extend(machine_args(&root, &env, &[]));
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(&args)
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(slugs(&r).is_empty(), "{:?}", slugs(&r));
    assert_eq!(
        r["host"]["facts"]["libraries"].as_array().map(Vec::len),
        doctor("healthy", &[])["host"]["facts"]["libraries"]
            .as_array()
            .map(Vec::len)
    );
}

/// Case 11 of issue 19: a snapshot of a newer format failed on a decode error of its facts; the version is
/// read first and the message says to upgrade. The near miss: the current version decodes.
#[test]
fn a_newer_snapshot_fails_on_its_version() {
    let t = tempfile::tempdir().unwrap();
    let snap = t.path().join("new.json");
    std::fs::write(
        &snap,
        r#"{"snapshot_version": 99, "tool": "cudadiag 9.0", "facts": {"host": 7}}"#,
    )
    .unwrap();
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["doctor", "--facts", snap.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "snapshot version 99 is newer than this cudadiag understands (max 1): upgrade cudadiag"
        ),
        "{stderr}"
    );
    std::fs::write(
        &snap,
        r#"{"snapshot_version": 1, "tool": "cudadiag 0.1", "facts": {"host": 7}}"#,
    )
    .unwrap();
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["doctor", "--facts", snap.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a cudadiag snapshot"));
}

/// Golden: `doctor` on a few machines, as a person reads it.
#[test]
fn golden_doctor() {
    for case in [
        "healthy",
        "conda-pip-toolkit",
        "container-no-gpu",
        "stale-ld-cache",
    ] {
        let d = case_dir(case);
        let mut args = vec!["--color".to_string(), "never".into(), "doctor".into()];
        args.extend(machine_args(&d.join("root"), &d.join("env"), &[]));
        let out = Command::cargo_bin("cudadiag")
            .unwrap()
            .env_remove("NO_COLOR")
            .args(&args)
            .output()
            .unwrap();
        insta::assert_snapshot!(format!("doctor_{case}"), golden::transcript(&out, &[]));
    }
}

/// `doctor` with stderr not a terminal (a pipe here) writes nothing there: no progress line, no erasing
/// sequence, even when the line is asked for at once (`CUDADIAG_PROGRESS_DELAY_MS=0`).
#[test]
fn doctor_writes_nothing_to_a_stderr_that_is_not_a_terminal() {
    let d = case_dir("conda-pip-toolkit");
    let mut args = vec!["doctor".to_string()];
    args.extend(machine_args(&d.join("root"), &d.join("env"), &[]));
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .env("CUDADIAG_PROGRESS_DELAY_MS", "0")
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}
