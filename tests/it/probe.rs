//! The live probe without a GPU: the parent/child plumbing, the timeout, crashes and garbage, and CUDA results
//! from fake libraries built here with `cc` (tests/it/support/probe/*.c) and put first on the child's
//! `LD_LIBRARY_PATH` through `--env`. Every test runs on CI (no driver, no GPU).

use crate::support::cli::cudadiag;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A directory with the fake `libcuda.so.1`, `libcudart.so.12` and `libnvidia-ml.so.1`, built once per test run,
/// under Cargo's directory for test data (`target/tmp`, gone with `cargo clean`), not the machine's `/tmp`.
/// One per test process, so that two runs at once do not read each other's half-written libraries.
fn fakes() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("probe-fakes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/probe");
        for (c, so) in [
            ("fake_libcuda.c", "libcuda.so.1"),
            ("fake_libcudart.c", "libcudart.so.12"),
            ("fake_nvml.c", "libnvidia-ml.so.1"),
        ] {
            let status = std::process::Command::new("cc")
                .args(["-shared", "-fPIC", "-O1", "-o"])
                .arg(dir.join(so))
                .arg(src.join(c))
                .status()
                .expect("a C compiler (cc) is needed to build the fake CUDA libraries");
            assert!(status.success(), "cc failed on {c}");
        }
        dir
    })
}

/// `cudadiag ARGS --format json` with the fakes first on the child's library path and `vars` in its
/// environment; returns (exit code, report, wall time).
fn probe_with(args: &[&str], vars: &[&str]) -> (i32, Value, Duration) {
    let mut c = cudadiag();
    c.args(args).args(["--format", "json"]);
    c.arg("--env")
        .arg(format!("LD_LIBRARY_PATH={}", fakes().display()));
    for v in vars {
        c.arg("--env").arg(v);
    }
    let t = Instant::now();
    let out = c.output().expect("run");
    let wall = t.elapsed();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), report, wall)
}

fn slugs(r: &Value) -> Vec<String> {
    r["findings"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter_map(|f| f["slug"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn without_libcuda_the_probe_reports_libcuda_not_found_and_exits_1() {
    // An empty library path and no libcuda on this machine (CI has no driver). If a real libcuda.so.1 is
    // installed, this test has nothing to check.
    let installed = [
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib64/libcuda.so.1",
        "/lib/libcuda.so.1",
    ];
    if installed.iter().any(|p| Path::new(p).exists()) {
        crate::support::skip::optional("a real libcuda.so.1 is installed on this machine");
        return;
    }
    let out = cudadiag()
        .args(["probe", "--format", "json", "--env", "LD_LIBRARY_PATH="])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(1),
        "findings at error exit 1 (README, exit status)"
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(slugs(&r), ["libcuda-not-found"]);
    let p = &r["probe"];
    assert_eq!(p["outcome"], "completed");
    let err = p["driver"]["library"]["error"].as_str().unwrap_or_default();
    assert!(err.contains("libcuda.so.1"), "dlerror is kept: {err}");
    assert!(p["driver"].get("init").is_none(), "no cuInit without a library");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    // The human report says the same, and --fail-on never turns it into exit 0.
    let human = cudadiag()
        .args([
            "probe",
            "--color",
            "never",
            "--env",
            "LD_LIBRARY_PATH=",
            "--fail-on",
            "never",
        ])
        .output()
        .expect("run");
    assert_eq!(human.status.code(), Some(0));
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("live probe  completed"), "{text}");
    assert!(text.contains("error[CD301] libcuda-not-found"), "{text}");
}

#[test]
fn a_libcuda_that_hangs_in_cuinit_is_killed_at_the_timeout() {
    let (code, r, wall) = probe_with(&["probe", "--probe-timeout", "2"], &["FAKE_CUDA_INIT=hang"]);
    assert_eq!(code, 1);
    let p = &r["probe"];
    assert_eq!(p["outcome"], "timed-out", "{p:#}");
    assert_eq!(p["during"], "cuInit");
    assert_eq!(p["timeout_s"], 2);
    let from = p["driver"]["library"]["loaded_from"].as_str().unwrap_or_default();
    assert_eq!(
        Path::new(from),
        fakes().join("libcuda.so.1"),
        "which libcuda hung is known"
    );
    assert!(
        p["elapsed_ms"]
            .as_u64()
            .is_some_and(|ms| (2000..10_000).contains(&ms)),
        "{p:#}"
    );
    assert!(
        wall < Duration::from_secs(10),
        "the parent did not wait for the hung child: {wall:?}"
    );
    assert_eq!(slugs(&r), ["probe-failed"]);
    let msg = r["findings"][0]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("timed-out during cuInit"), "{msg}");
}

#[test]
fn a_crash_in_the_driver_is_a_finding_not_a_crash() {
    let (code, r, _) = probe_with(&["probe"], &["FAKE_CUDA_INIT=crash"]);
    assert_eq!(code, 1);
    let p = &r["probe"];
    assert_eq!(p["outcome"], "crashed", "{p:#}");
    assert_eq!(p["signal"], 11);
    assert_eq!(p["during"], "cuInit");
    assert_eq!(slugs(&r), ["probe-failed"]);
    let msg = r["findings"][0]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("SIGSEGV"), "{msg}");
    let because = r["findings"][0]["evidence"].to_string();
    assert!(because.contains("libcuda.so.1 loaded from"), "{because}");
}

#[test]
fn garbage_on_the_childs_stdout_is_a_finding() {
    let (code, r, _) = probe_with(&["probe"], &["FAKE_CUDA_INIT=garbage"]);
    assert_eq!(code, 1);
    assert_eq!(r["probe"]["outcome"], "garbled", "{:#}", r["probe"]);
    let detail = r["probe"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("hello from a confused libcuda"), "{detail}");
    assert_eq!(slugs(&r), ["probe-failed"]);
}

#[test]
fn cuinit_results_34_100_803_reach_the_facts_with_names() {
    for (code, name, message) in [
        // 34: the fake's own cuGetErrorString answers; 100 and 803: the fake refuses, cudadiag's table answers.
        (34, "CUDA_ERROR_STUB_LIBRARY", "fake stub message"),
        (100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
        (
            803,
            "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
            "system has unsupported display driver / cuda driver combination",
        ),
    ] {
        let (rc, r, _) = probe_with(&["probe"], &[&format!("FAKE_CUDA_INIT={code}")]);
        assert_eq!(rc, 1, "{code}");
        let p = &r["probe"];
        assert_eq!(p["outcome"], "completed");
        let init = &p["driver"]["init"];
        assert_eq!(init["call"], "cuInit");
        assert_eq!(init["result"]["code"], code);
        assert_eq!(init["result"]["name"], name);
        assert_eq!(init["result"]["message"], message);
        let from = p["driver"]["library"]["loaded_from"].as_str().unwrap_or_default();
        assert_eq!(
            Path::new(from),
            fakes().join("libcuda.so.1"),
            "the file that loaded is reported"
        );
        assert!(p["driver"]["devices"].as_array().is_some_and(Vec::is_empty));
        assert_eq!(slugs(&r), ["probe-failed"]);
        let msg = r["findings"][0]["message"].as_str().unwrap_or_default();
        assert!(msg.contains(&format!("cuInit returned {code} {name}")), "{msg}");
    }
}

#[test]
fn a_working_fake_driver_passes_the_self_test_on_every_device() {
    let (code, r, _) = probe_with(&["probe"], &["FAKE_CUDA_DEVICES=2"]);
    assert_eq!(code, 0, "{r:#}");
    let d = &r["probe"]["driver"];
    assert_eq!(d["version"], 13000);
    assert_eq!(d["device_count"], 2);
    assert_eq!(d["devices"][1]["name"], "Fake GPU 1");
    assert_eq!(d["devices"][0]["cc"], "9.0");
    assert_eq!(d["devices"][0]["total_mem"], 80u64 << 30);
    assert_eq!(
        d["devices"][0]["uuid"],
        "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf"
    );
    assert_eq!(d["devices"][1]["bus_id"], "0000:1a:00.0");
    for t in d["selftests"].as_array().expect("selftests") {
        assert_eq!(t["passed"], true, "{t:#}");
        assert_eq!(t["kernel"], "PTX ISA 6.0, sm_50");
    }
    let calls: Vec<&str> = d["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter_map(|c| c["call"].as_str())
        .collect();
    for needed in [
        "cuInit",
        "cuDevicePrimaryCtxRetain",
        "cuMemAlloc_v2",
        "cuModuleLoadDataEx",
        "cuLaunchKernel",
        "cuMemcpyDtoH_v2",
        "cuMemFree_v2",
    ] {
        assert!(calls.contains(&needed), "{needed} missing from {calls:?}");
    }
    assert!(slugs(&r).is_empty());
}

#[test]
fn a_kernel_that_writes_wrong_values_fails_the_self_test() {
    let (code, r, _) = probe_with(&["probe"], &["FAKE_CUDA_DEVICES=1", "FAKE_CUDA_KERNEL=wrong"]);
    assert_eq!(code, 1);
    let t = &r["probe"]["driver"]["selftests"][0];
    assert_eq!(t["passed"], false);
    assert!(
        t["mismatch"]
            .as_str()
            .is_some_and(|m| m.contains("out[0] = 0, expected 7")),
        "{t:#}"
    );
    assert_eq!(slugs(&r), ["probe-failed"]);
}

#[test]
fn inspect_probe_loads_each_fatbin_and_reports_the_drivers_answer() {
    let bin = "fixtures/cuda13/multi";
    let (code, r, _) = probe_with(
        &["inspect", "--probe", bin],
        &["FAKE_CUDA_DEVICES=2", "FAKE_CUDA_MODULE=209"],
    );
    assert_eq!(code, 1);
    let fatbins = r["binaries"][0]["fatbins"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let modules = r["probe"]["modules"].as_array().cloned().unwrap_or_default();
    let loadable = fatbins
        .iter()
        .filter(|f| f["section"] != "__nv_relfatbin")
        .count();
    assert!(loadable > 0);
    // Once per compute capability: both fake GPUs are 9.0, so each container is loaded once.
    assert_eq!(modules.len(), loadable, "{modules:#?}");
    for m in &modules {
        assert_eq!(m["binary"], bin);
        assert_eq!(m["result"]["code"], 209);
        assert_eq!(m["jit_log"], "fake JIT log");
        let i = m["container"].as_u64().expect("container") as usize;
        assert_eq!(m["offset"], fatbins[i]["offset"]);
        assert_eq!(m["size"], fatbins[i]["size"]);
    }
    assert!(slugs(&r).contains(&"probe-failed".to_string()));
    let f = r["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["slug"] == "probe-failed"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(f["path"], bin);
    assert!(f["message"].as_str().is_some_and(|m| m.contains("209")));
    // When the driver accepts them: no finding.
    let (code, r, _) = probe_with(
        &["inspect", "--probe", bin],
        &["FAKE_CUDA_DEVICES=1", "FAKE_CUDA_MODULE=0"],
    );
    assert_eq!(code, 0, "{:#}", r["findings"]);
}

#[test]
fn the_runtime_probe_reports_what_cudagetdevicecount_returns() {
    let cudart = fakes().join("libcudart.so.12");
    let cudart = cudart.to_string_lossy();
    let (code, r, _) = probe_with(
        &["probe", "--cudart", &cudart],
        &["FAKE_CUDA_DEVICES=1", "FAKE_CUDART_RC=35"],
    );
    assert_eq!(code, 1);
    let rt = &r["probe"]["runtime"];
    assert_eq!(rt["library"]["source"], "--cudart");
    assert_eq!(rt["runtime_version"], 12040);
    assert_eq!(rt["driver_version"], 11080);
    assert_eq!(rt["get_device_count"]["result"]["code"], 35);
    assert_eq!(
        rt["get_device_count"]["result"]["name"],
        "cudaErrorInsufficientDriver"
    );
    assert_eq!(slugs(&r), ["probe-failed"]);
    let (code, r, _) = probe_with(&["probe", "--cudart", &cudart], &["FAKE_CUDA_DEVICES=1"]);
    assert_eq!(code, 0, "{:#}", r["findings"]);
    assert_eq!(r["probe"]["runtime"]["device_count"], 2);
}

#[test]
fn the_child_gets_the_diagnosis_environment_only() {
    // --clear-env: the child sees only what --env gives it, so the fakes are not found without LD_LIBRARY_PATH
    // ... unless given, and CUDA_VISIBLE_DEVICES is recorded with the facts.
    let (_, r, _) = probe_with(
        &["probe", "--clear-env"],
        &["CUDA_VISIBLE_DEVICES=7", "FAKE_CUDA_INIT=100"],
    );
    let env = &r["probe"]["env"];
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "7");
    assert_eq!(env["LD_LIBRARY_PATH"], fakes().display().to_string());
    assert!(
        env.get("HOME").is_none(),
        "only CUDA_*, LD_* and NVIDIA_* variables are recorded"
    );
    assert_eq!(r["probe"]["driver"]["init"]["result"]["code"], 100);
}

#[test]
fn probe_refuses_root_with_exit_2() {
    let out = cudadiag()
        .args(["probe", "--root", "/tmp"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--root"));
    let out = cudadiag()
        .args(["probe", "--probe-timeout", "0"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "a zero timeout is a usage error");
}

#[test]
fn probe_facts_round_trip_through_the_json_report() {
    // What `snapshot` will carry: the report's `probe` section reads back into the facts type unchanged.
    let (_, r, _) = probe_with(&["probe"], &["FAKE_CUDA_DEVICES=1"]);
    let facts: cudadiag::facts::probe::ProbeFacts =
        serde_json::from_value(r["probe"].clone()).expect("the probe section is ProbeFacts");
    assert_eq!(facts.outcome, cudadiag::facts::probe::ProbeOutcome::Completed);
    assert_eq!(facts.driver.as_ref().map(|d| d.devices.len()), Some(1));
    assert_eq!(serde_json::to_value(&facts).expect("serialise"), r["probe"]);
}

#[test]
fn the_report_with_a_probe_section_honours_the_json_contract() {
    let (_, r, _) = probe_with(
        &["inspect", "--probe", "fixtures/cuda13/multi"],
        &["FAKE_CUDA_DEVICES=1"],
    );
    let checker = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/contract/check_report.py");
    assert!(checker.exists(), "CI provides ../shared/contract/check_report.py");
    let file = fakes().join("report.json");
    std::fs::write(&file, r.to_string()).expect("write");
    let out = std::process::Command::new("python3")
        .arg(&checker)
        .arg(&file)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The probe facts recorded on the H200 (`fixtures/probe/live-h200/NAME.json`, driver 580.159.04), with
/// `has_kernels` filled from today's static inspection of the same binary, through today's rules.
fn live_findings(name: &str) -> Vec<cudadiag::findings::Finding> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("fixtures/probe/live-h200").join(format!("{name}.json")))
        .expect("recorded live report");
    let report: Value = serde_json::from_str(&text).expect("JSON");
    let mut probe: cudadiag::facts::probe::ProbeFacts =
        serde_json::from_value(report["probe"].clone()).expect("probe facts");
    let rel = format!("fixtures/cuda13/{name}");
    let mut binaries =
        cudadiag::inspect::path(&root.join(&rel), &Default::default()).expect("inspect the fixture");
    for b in &mut binaries {
        b.path = rel.clone();
    }
    for m in &mut probe.modules {
        m.has_kernels = m
            .container
            .and_then(|i| cudadiag::probe::container_has_kernels(&binaries[0], i));
    }
    let facts = cudadiag::facts::Facts {
        binaries,
        probe: Some(probe),
        ..Default::default()
    };
    cudadiag::rules::evaluate(&facts, &cudadiag::matrix::Matrix::bundled().unwrap())
}

#[test]
fn regression_live_h200_device_link_stub_209_is_not_a_failure() {
    // On the H200, nvcc 13's kernel-less device-link stub container (sm_75 SASS by nvlink) gave 209 as data
    // while `default` itself runs: the first live run reported probe-failed for it.
    let f = live_findings("default");
    assert!(f.iter().all(|f| f.slug != "probe-failed"), "{f:#?}");
    // The sm_80-only program still fails, on its kernel container alone.
    let f = live_findings("sm80");
    let failed: Vec<_> = f.iter().filter(|f| f.slug == "probe-failed").collect();
    assert_eq!(failed.len(), 1, "{f:#?}");
    assert!(
        failed[0]
            .evidence
            .iter()
            .any(|e| e.contains("fatbin #1 of fixtures/cuda13/sm80"))
    );
    assert!(
        !failed[0].evidence.iter().any(|e| e.contains("fatbin #0")),
        "{:#?}",
        failed[0].evidence
    );
}

#[test]
fn regression_live_h200_empty_container_of_a_ptx_only_program_is_not_a_failure() {
    // A PTX-only nvcc 13 program's first container is a bare 16-byte header, which the driver answers with 209
    // as data; the program runs from its second. With its PTX compressed (not read without --deep), the
    // container's kernels were "unknown" and the probe reported probe-failed and probe-disagrees (seen again
    // on the H200 by scripts/verdicts-live.sh, `ptx-jit`).
    let f = live_findings("ptx_only");
    assert!(
        f.iter()
            .all(|f| f.slug != "probe-failed" && f.slug != "probe-disagrees"),
        "{f:#?}"
    );
}

#[test]
fn mig_mode_comes_from_nvml_by_bus_id() {
    let (code, r, _) = probe_with(&["probe"], &["FAKE_CUDA_DEVICES=2", "FAKE_MIG=pending"]);
    assert_eq!(code, 0, "MIG mode is a fact, not a finding");
    let devices = &r["probe"]["driver"]["devices"];
    assert_eq!(devices[0]["mig_mode"], "disabled (pending enabled)");
    // The fake knows only the first GPU's bus id: the second's error is kept, with NVML's words.
    assert!(devices[1].get("mig_mode").is_none());
    let err = devices[1]["mig_error"].as_str().unwrap_or_default();
    assert!(
        err.contains("0000:1a:00.0") && err.contains("6 (Not Found)"),
        "{err}"
    );
    let (_, r, _) = probe_with(&["probe"], &["FAKE_CUDA_DEVICES=1", "FAKE_MIG=unsupported"]);
    assert_eq!(r["probe"]["driver"]["devices"][0]["mig_mode"], "unsupported");
}
