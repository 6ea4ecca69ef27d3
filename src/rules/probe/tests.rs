//! The probe rules over synthetic probe facts and synthetic static findings (the static rules live in other
//! modules; the comparison only knows their slugs).

use super::*;
use crate::facts::HostFacts;
use crate::facts::probe::{DriverProbe, LibraryLoad, ModuleProbe, RuntimeProbe, SelfTest};

fn err(code: i32) -> Option<CudaError> {
    Some(CudaError {
        code,
        name: crate::probe::cuda::known(code).map(|k| k.0.to_string()),
        message: None,
    })
}

fn call(name: &str, code: i32) -> Call {
    Call {
        call: name.into(),
        device: None,
        result: err(code),
        error: None,
        elapsed_us: 5,
    }
}

/// A completed probe whose cuInit returned `init` and that saw `devices` devices.
fn probe(init: i32, devices: i32) -> ProbeFacts {
    ProbeFacts {
        timeout_s: 30,
        driver: Some(DriverProbe {
            library: LibraryLoad {
                requested: "libcuda.so.1".into(),
                loaded_from: Some("/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04".into()),
                ..LibraryLoad::default()
            },
            init: Some(call("cuInit", init)),
            device_count: (init == 0).then_some(devices),
            selftests: (0..devices)
                .map(|d| SelfTest {
                    device: d,
                    passed: true,
                    kernel: Some("PTX ISA 6.0, sm_50".into()),
                    ..SelfTest::default()
                })
                .collect(),
            ..DriverProbe::default()
        }),
        ..ProbeFacts::default()
    }
}

fn module(binary: &str, container: usize, code: i32) -> ModuleProbe {
    ModuleProbe {
        binary: binary.into(),
        container: Some(container),
        offset: 0x1000,
        size: 100,
        device: 0,
        cc: Some("9.0".into()),
        result: err(code),
        ..ModuleProbe::default()
    }
}

fn static_finding(code: Code, path: Option<&str>) -> Finding {
    let f = Finding::new(code, "static", "help");
    match path {
        Some(p) => f.at(p),
        None => f,
    }
}

fn facts(p: ProbeFacts, host: bool) -> Facts {
    Facts {
        probe: Some(p),
        host: host.then(HostFacts::default),
        ..Facts::default()
    }
}

fn run(facts: &Facts, mut findings: Vec<Finding>) -> Vec<Finding> {
    evaluate(facts, &mut findings);
    findings
}

fn slugs(f: &[Finding]) -> Vec<&str> {
    f.iter().map(|f| f.slug.as_str()).collect()
}

#[test]
fn every_slug_in_the_table_is_a_catalogue_slug() {
    for e in expectations() {
        assert!(
            crate::findings::lookup(e.slug).is_some(),
            "{} is not in the catalogue",
            e.slug
        );
        assert!(!e.results.is_empty());
    }
    // The catalogue's own predicted error must be among the table's results for that slug.
    for e in expectations() {
        if let Some(c) = crate::findings::lookup(e.slug).and_then(|c| c.cuda_error)
            && e.slug != "libcuda-not-found"
            && e.slug != "no-driver"
            && e.slug != "driver-insufficient"
        {
            let all: Vec<Expect> = rows(e.slug).flat_map(|r| r.results.iter().copied()).collect();
            assert!(all.contains(&C(c as i32)), "{}: catalogue says {c}", e.slug);
        }
    }
}

#[test]
fn no_probe_no_findings() {
    let mut f = vec![static_finding(Code::StubLibcuda, None)];
    evaluate(&Facts::default(), &mut f);
    assert_eq!(f.len(), 1);
    assert!(f[0].evidence.is_empty());
}

#[test]
fn a_healthy_probe_adds_nothing() {
    let f = run(&facts(probe(0, 1), true), vec![]);
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn stub_predicted_and_34_observed_is_confirmed_not_repeated() {
    let f = run(
        &facts(probe(34, 0), true),
        vec![static_finding(Code::StubLibcuda, None)],
    );
    assert_eq!(slugs(&f), ["stub-libcuda"]);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.starts_with("confirmed by the live probe: cuInit returned 34")),
        "{:?}",
        f[0].evidence
    );
}

#[test]
fn stub_predicted_but_init_succeeded_disagrees() {
    let f = run(
        &facts(probe(0, 1), true),
        vec![static_finding(Code::StubLibcuda, None)],
    );
    assert_eq!(slugs(&f), ["stub-libcuda", "probe-disagrees"]);
    assert!(
        f[1].message
            .contains("predicted stub-libcuda (34 CUDA_ERROR_STUB_LIBRARY)"),
        "{}",
        f[1].message
    );
    assert!(f[1].help.contains("bug in cudadiag"));
}

#[test]
fn unpredicted_100_is_probe_failed_and_disagrees_only_with_host_facts() {
    let with_host = run(&facts(probe(100, 0), true), vec![]);
    assert_eq!(slugs(&with_host), ["probe-failed", "probe-disagrees"]);
    assert!(with_host[0].message.contains("cuInit returned 100"));
    assert!(
        with_host[0]
            .evidence
            .iter()
            .any(|e| e.contains("no-visible-devices"))
    );
    // Without host facts the static rules could not have predicted it: no disagreement.
    let without = run(&facts(probe(100, 0), false), vec![]);
    assert_eq!(slugs(&without), ["probe-failed"]);
}

#[test]
fn no_visible_devices_is_confirmed_by_100_and_by_a_zero_count() {
    for p in [probe(100, 0), probe(0, 0)] {
        let f = run(
            &facts(p, true),
            vec![static_finding(Code::NoVisibleDevices, None)],
        );
        assert_eq!(slugs(&f), ["no-visible-devices"]);
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.starts_with("confirmed by the live probe"))
        );
    }
}

#[test]
fn compat_predicted_but_a_different_error_disagrees() {
    let f = run(
        &facts(probe(999, 0), true),
        vec![static_finding(Code::CompatLibcudaUnsupported, None)],
    );
    // The 999 is both unexplained (probe-failed + disagreement) and a contradiction of the 803/804 prediction.
    assert_eq!(
        slugs(&f),
        [
            "compat-libcuda-unsupported",
            "probe-disagrees",
            "probe-failed",
            "probe-disagrees"
        ]
    );
    assert!(
        f[1].message
            .contains("803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH or 804")
    );
    let f = run(
        &facts(probe(804, 0), true),
        vec![static_finding(Code::CompatLibcudaUnsupported, None)],
    );
    assert_eq!(slugs(&f), ["compat-libcuda-unsupported"]);
}

#[test]
fn libcuda_missing_is_reported_as_libcuda_not_found() {
    let mut p = probe(0, 0);
    if let Some(d) = p.driver.as_mut() {
        d.library.loaded_from = None;
        d.library.error = Some("libcuda.so.1: cannot open shared object file".into());
        d.init = None;
    }
    let f = run(&facts(p.clone(), false), vec![]);
    assert_eq!(slugs(&f), ["libcuda-not-found"]);
    assert!(f[0].evidence[0].contains("cannot open shared object file"));
    // A static no-driver finding explains it.
    let f = run(&facts(p, true), vec![static_finding(Code::NoDriver, None)]);
    assert_eq!(slugs(&f), ["no-driver"]);
}

#[test]
fn module_209_confirms_no_kernel_image_of_that_binary_only() {
    let mut p = probe(0, 1);
    p.modules = vec![module("./sm80", 0, 209), module("./ok", 0, 0)];
    let f = run(
        &facts(p.clone(), true),
        vec![static_finding(Code::NoKernelImage, Some("./sm80"))],
    );
    assert_eq!(slugs(&f), ["no-kernel-image"]);
    assert!(f[0].evidence.iter().any(|e| e.contains("fatbin #0 of ./sm80")));
    // Predicted for the wrong binary: the prediction is contradicted and the 209 is unexplained.
    let f = run(
        &facts(p, true),
        vec![static_finding(Code::NoKernelImage, Some("./ok"))],
    );
    assert_eq!(
        slugs(&f),
        [
            "no-kernel-image",
            "probe-disagrees",
            "probe-failed",
            "probe-disagrees"
        ]
    );
    assert_eq!(f[2].path.as_deref(), Some("./sm80"));
}

#[test]
fn a_failed_container_without_kernels_is_not_what_the_application_meets() {
    let mut p = probe(0, 1);
    let mut stub = module("./default", 0, 209);
    stub.has_kernels = Some(false);
    let mut kernels = module("./default", 1, 0);
    kernels.has_kernels = Some(true);
    p.modules = vec![stub.clone(), kernels];
    let f = run(&facts(p.clone(), true), vec![]);
    assert!(f.is_empty(), "{f:?}");
    // Unknown (payloads not read) counts: the failure is reported.
    stub.has_kernels = None;
    p.modules[0] = stub;
    let f = run(&facts(p, false), vec![]);
    assert_eq!(slugs(&f), ["probe-failed"]);
}

#[test]
fn predicted_no_kernel_image_but_every_module_loaded_disagrees() {
    let mut p = probe(0, 1);
    p.modules = vec![module("./app", 0, 0), module("./app", 1, 0)];
    let f = run(
        &facts(p, true),
        vec![static_finding(Code::NoKernelImage, Some("./app"))],
    );
    assert_eq!(slugs(&f), ["no-kernel-image", "probe-disagrees"]);
    assert_eq!(
        f[1].evidence.len(),
        3,
        "the static finding and both loads: {:?}",
        f[1].evidence
    );
}

#[test]
fn ptx_too_new_vs_222_and_one_finding_per_binary_and_code() {
    let mut p = probe(0, 1);
    p.modules = vec![module("./new", 0, 222), module("./new", 1, 222)];
    let f = run(
        &facts(p.clone(), true),
        vec![static_finding(Code::PtxTooNew, Some("./new"))],
    );
    assert_eq!(slugs(&f), ["ptx-too-new"]);
    let f = run(&facts(p, false), vec![]);
    assert_eq!(slugs(&f), ["probe-failed"], "two containers, one finding");
    assert_eq!(
        f[0].evidence
            .iter()
            .filter(|e| e.contains("returned 222"))
            .count(),
        2
    );
}

#[test]
fn runtime_35_is_checked_against_driver_insufficient() {
    let mut p = probe(0, 1);
    p.runtime = Some(RuntimeProbe {
        get_device_count: Some(call("cudaGetDeviceCount", 35)),
        ..RuntimeProbe::default()
    });
    let f = run(
        &facts(p.clone(), true),
        vec![static_finding(Code::DriverInsufficient, None)],
    );
    assert_eq!(slugs(&f), ["driver-insufficient"]);
    let f = run(&facts(p, true), vec![]);
    assert_eq!(slugs(&f), ["probe-failed", "probe-disagrees"]);
    assert!(f[0].help.contains("newer than the driver"));
}

#[test]
fn runtime_errors_after_a_failed_driver_are_consequences() {
    let mut p = probe(34, 0);
    p.runtime = Some(RuntimeProbe {
        get_device_count: Some(call("cudaGetDeviceCount", 34)),
        ..RuntimeProbe::default()
    });
    let f = run(&facts(p, false), vec![]);
    assert_eq!(slugs(&f), ["probe-failed"]);
}

#[test]
fn process_failures_are_probe_failed_with_what_happened() {
    let p = ProbeFacts {
        outcome: ProbeOutcome::TimedOut,
        detail: Some("no answer within 2 s; the probe was killed".into()),
        during: Some("cuInit".into()),
        timeout_s: 2,
        elapsed_ms: 2003,
        ..ProbeFacts::default()
    };
    let f = run(&facts(p, true), vec![static_finding(Code::StubLibcuda, None)]);
    // Nothing observed: the static finding is neither confirmed nor contradicted.
    assert_eq!(slugs(&f), ["stub-libcuda", "probe-failed"]);
    assert!(
        f[1].message.contains("timed-out during cuInit"),
        "{}",
        f[1].message
    );
    assert!(f[1].help.contains("2 s"));
    assert!(f[0].evidence.is_empty());
}

#[test]
fn a_failed_self_test_is_probe_failed() {
    let mut p = probe(0, 1);
    if let Some(d) = p.driver.as_mut() {
        d.selftests[0] = SelfTest {
            device: 0,
            mismatch: Some("256 of 256 elements wrong".into()),
            kernel: Some("PTX ISA 6.0, sm_50".into()),
            ..SelfTest::default()
        };
    }
    let f = run(&facts(p, true), vec![]);
    assert_eq!(slugs(&f), ["probe-failed"]);
    assert!(f[0].message.contains("wrote wrong results"));
}

#[test]
fn the_same_self_test_failure_on_every_gpu_is_one_finding() {
    let mut p = probe(0, 3);
    if let Some(d) = p.driver.as_mut() {
        for t in &mut d.selftests {
            t.passed = false;
            t.failed_call = Some(Call {
                device: Some(t.device),
                ..call("cuMemAlloc_v2", 2)
            });
        }
        d.selftests[2].failed_call = Some(call("cuLaunchKernel", 719));
    }
    let f = run(&facts(p, true), vec![]);
    assert_eq!(slugs(&f), ["probe-failed", "probe-failed"]);
    assert!(
        f[0].message.contains("self-test on devices 0, 1 failed"),
        "{}",
        f[0].message
    );
    assert!(
        f[1].message.contains("self-test on device 2 failed"),
        "{}",
        f[1].message
    );
}

/// Issue 21: under CUDA_DISABLE_PTX_JIT=1 a PTX-only program ran from a warm JIT cache while the probe's module
/// load failed with 209. `ptx-jit-cache-only` explains the failure, and a success does not contradict it.
#[test]
fn the_jit_cache_explains_a_module_load_either_way() {
    let mut p = probe(0, 1);
    p.modules = vec![module("./ptx", 0, 209)];
    let f = run(
        &facts(p.clone(), true),
        vec![static_finding(Code::PtxJitCacheOnly, Some("./ptx"))],
    );
    assert_eq!(slugs(&f), ["ptx-jit-cache-only"]);
    assert!(f[0].evidence.iter().any(|e| e.starts_with("confirmed by")));
    p.modules = vec![module("./ptx", 0, 0)];
    let f = run(
        &facts(p.clone(), true),
        vec![static_finding(Code::PtxJitCacheOnly, Some("./ptx"))],
    );
    assert_eq!(slugs(&f), ["ptx-jit-cache-only"], "{f:?}");
    // near miss: with an empty cache the failure is certain, and a success is a disagreement
    let f = run(
        &facts(p, true),
        vec![static_finding(Code::PtxJitDisabled, Some("./ptx"))],
    );
    assert_eq!(slugs(&f), ["ptx-jit-disabled", "probe-disagrees"]);
}

#[test]
fn a_self_test_refused_because_jit_is_disabled_is_no_failure() {
    // CUDA_DISABLE_PTX_JIT=1 in the probe's environment: the PTX self-test kernel gets 223 on every GPU.
    let mut p = probe(0, 2);
    if let Some(d) = p.driver.as_mut() {
        for t in &mut d.selftests {
            t.passed = false;
            t.failed_call = Some(Call {
                device: Some(t.device),
                ..call("cuModuleLoadDataEx", 223)
            });
        }
    }
    let f = run(&facts(p.clone(), true), vec![]);
    assert!(slugs(&f).is_empty(), "{f:#?}");
    // Near miss: another error from the same call is the machine's.
    if let Some(d) = p.driver.as_mut() {
        d.selftests[1].failed_call = Some(Call {
            device: Some(1),
            ..call("cuModuleLoadDataEx", 218)
        });
    }
    let f = run(&facts(p, true), vec![]);
    assert_eq!(slugs(&f), ["probe-failed"]);
    assert!(f[0].message.contains("device 1"), "{}", f[0].message);
}
