//! The verdicts on the real CUDA 13.0 fixtures against what those binaries did on the machine they were run on
//! (an NVIDIA H200, driver 580.159.04): `fixtures/cuda13/<name>.run.txt` records each plain run's output and
//! exit code, `TOOLKIT.txt` the machine's `nvidia-smi` line. The GPU and driver are read from those records, so
//! the test checks cudadiag's prediction against the outcome, not against itself.

use cudadiag::facts::{DriverFacts, Facts, GpuFacts, HostFacts};
use cudadiag::inspect::{self, InspectOptions};
use cudadiag::matrix::{CudaVersion, DriverVersion, Matrix};
use cudadiag::rules::{self, Outcome};
use std::path::Path;

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13")
}

/// `NVIDIA H200, 580.159.04, 9.0` from the `nvidia-smi --query-gpu=name,driver_version,compute_cap` record.
fn machine() -> (String, String) {
    let text = std::fs::read_to_string(dir().join("TOOLKIT.txt")).unwrap();
    let mut lines = text.lines().skip_while(|l| !l.contains("nvidia-smi --query-gpu"));
    let row = lines
        .find(|l| l.contains(',') && !l.starts_with("name") && !l.starts_with('$'))
        .unwrap();
    let cols: Vec<&str> = row.split(',').map(str::trim).collect();
    (cols[0].to_string(), cols[1].to_string())
}

#[test]
fn verdicts_match_the_recorded_runs() {
    let m = Matrix::bundled().unwrap();
    let (gpu_name, driver) = machine();
    assert_eq!(gpu_name, "NVIDIA H200");
    // The runs print `driver 13000` (cudaDriverGetVersion): the matrix must map the driver to the same CUDA.
    let dv = DriverVersion::parse(&driver).unwrap();
    assert_eq!(m.driver_cuda(&dv).map(|d| d.cuda), CudaVersion::parse("13000"));

    let mut checked = 0;
    let mut report = Vec::new();
    for e in std::fs::read_dir(dir()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let Some(bin) = name.strip_suffix(".run.txt") else {
            continue;
        };
        let run = std::fs::read_to_string(&p).unwrap();
        let ok = run.contains("exit code: 0");
        let binaries = inspect::path(&dir().join(bin), &InspectOptions::default()).unwrap();
        let facts = Facts {
            binaries,
            host: Some(HostFacts {
                driver: Some(DriverFacts {
                    version: driver.clone(),
                    source: "TOOLKIT.txt".into(),
                }),
                gpus: vec![GpuFacts {
                    name: gpu_name.clone(),
                    source: "TOOLKIT.txt".into(),
                    ..GpuFacts::default()
                }],
                ..HostFacts::default()
            }),
            ..Facts::default()
        };
        let verdicts = rules::judge(&facts, &m).verdicts;
        assert_eq!(verdicts.len(), 1, "{bin}: {verdicts:?}");
        let v = &verdicts[0];
        let predicted_ok = matches!(
            v.outcome,
            Outcome::Runs | Outcome::RunsAfterJit | Outcome::NoDeviceCode
        );
        if predicted_ok != ok {
            report.push(format!(
                "{bin}: predicted {:?} ({}), but the run says:\n{run}",
                v.outcome, v.reason
            ));
        }
        if run.contains("CUDA error 209") && !v.codes.iter().any(|c| c == "no-kernel-image") {
            report.push(format!(
                "{bin}: the run failed with 209 but cudadiag predicted {:?}",
                v.codes
            ));
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} recorded runs found");
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// The human report for a what-if H200 target: findings, verdict lines and fixes. Matrix line numbers are
/// masked so that editing `data/compat.toml` does not churn the snapshot.
#[test]
fn human_verdict_snapshot() {
    let out = assert_cmd::Command::cargo_bin("cudadiag")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("NO_COLOR")
        .args([
            "--color",
            "never",
            "inspect",
            "--gpu",
            "NVIDIA H200",
            "--driver",
            "580.159.04",
        ])
        .args([
            "fixtures/cuda13/multi",
            "fixtures/cuda13/sm80",
            "fixtures/cuda13/ptx_only",
            "fixtures/cuda13/rdc",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let mask = |s: &str| {
        regex::Regex::new(r"compat\.toml:\d+")
            .unwrap()
            .replace_all(s, "compat.toml:N")
            .into_owned()
    };
    let got = mask(&String::from_utf8_lossy(&out.stdout));
    let want = mask(include_str!("snapshots/verdict_h200.txt"));
    assert_eq!(got, want);
}

/// Issue 21: the real PTX-only fixture on the recorded H200 under `CUDA_DISABLE_PTX_JIT=1`: it fails with an
/// empty (or disabled) JIT cache, and runs only if the cache holds an earlier compile when one holds entries.
#[test]
fn ptx_only_under_disabled_jit_depends_on_the_cache() {
    use cudadiag::facts::host::{CacheDir, JitCacheFacts};
    let m = Matrix::bundled().unwrap();
    let (gpu_name, driver) = machine();
    let binaries = inspect::path(&dir().join("ptx_only"), &InspectOptions::default()).unwrap();
    let facts_with = |env: &[(&str, &str)], cache: Option<JitCacheFacts>| {
        let mut host = HostFacts {
            driver: Some(DriverFacts {
                version: driver.clone(),
                source: "TOOLKIT.txt".into(),
            }),
            gpus: vec![GpuFacts {
                name: gpu_name.clone(),
                source: "TOOLKIT.txt".into(),
                ..GpuFacts::default()
            }],
            jit_cache: cache,
            ..HostFacts::default()
        };
        for (k, v) in env {
            host.env.vars.insert(k.to_string(), v.to_string());
        }
        Facts {
            binaries: binaries.clone(),
            host: Some(host),
            ..Facts::default()
        }
    };
    let cache = |dir: CacheDir, disabled: bool| JitCacheFacts {
        path: "/root/.nv/ComputeCache".into(),
        from: "HOME".into(),
        disabled,
        max_size: None,
        dir,
    };
    let warm = cache(CacheDir::Holds { entries: 17 }, false);
    let off = [("CUDA_DISABLE_PTX_JIT", "1")];
    let outcome = |f: &Facts| {
        let v = rules::judge(f, &m).verdicts;
        (v[0].outcome, v[0].codes.clone())
    };
    let (o, codes) = outcome(&facts_with(&off, Some(warm.clone())));
    assert_eq!(o, Outcome::RunsAfterJit);
    assert!(codes.contains(&"ptx-jit-cache-only".to_string()), "{codes:?}");
    let (o, codes) = outcome(&facts_with(&off, Some(cache(CacheDir::Empty, false))));
    assert_eq!((o, codes[0].as_str()), (Outcome::Fails, "ptx-jit-disabled"));
    let (o, _) = outcome(&facts_with(
        &off,
        Some(cache(CacheDir::Holds { entries: 3 }, true)),
    ));
    assert_eq!(
        o,
        Outcome::Fails,
        "CUDA_CACHE_DISABLE=1: nothing is read from the cache"
    );
    // near miss: JIT allowed (unset, or `0`): runs after JIT, no cache finding
    for env in [&[][..], &[("CUDA_DISABLE_PTX_JIT", "0")][..]] {
        let (o, codes) = outcome(&facts_with(env, Some(cache(CacheDir::Empty, false))));
        assert_eq!(o, Outcome::RunsAfterJit);
        assert!(
            !codes
                .iter()
                .any(|c| c.starts_with("ptx-jit-disabled") || c == "ptx-jit-cache-only")
        );
    }
    // near miss: a binary with SASS for the H200 is not touched by the setting
    let sm90 = inspect::path(&dir().join("multi"), &InspectOptions::default()).unwrap();
    let mut f = facts_with(&off, None);
    f.binaries = sm90;
    assert_eq!(outcome(&f).0, Outcome::Runs);
}
