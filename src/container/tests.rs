//! The evaluator against the `NVIDIA_REQUIRE_CUDA` strings NVIDIA's CUDA images set, on real drivers and GPUs.
//! Each expected outcome follows from the toolkit's rules (`docs/container-toolkit.md`): spaces separate
//! alternatives, commas join conditions, `cuda` is the driver's CUDA version (the matrix's for its branch).

use super::*;
use crate::facts::{DriverFacts, GpuFacts};

/// `nvidia/cuda:12.4.*` (the vLLM 0.8 image's base): CUDA 12.4, or a forward-compatible 470, 525 or 535
/// driver on any of ten brands, GeForce included.
const CUDA_12_4: &str = "cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 \
brand=nvidia,driver>=470,driver<471 brand=nvidiartx,driver>=470,driver<471 brand=geforce,driver>=470,driver<471 \
brand=geforcertx,driver>=470,driver<471 brand=quadro,driver>=470,driver<471 brand=quadrortx,driver>=470,driver<471 \
brand=titan,driver>=470,driver<471 brand=titanrtx,driver>=470,driver<471 brand=tesla,driver>=525,driver<526 \
brand=unknown,driver>=525,driver<526 brand=nvidia,driver>=525,driver<526 brand=nvidiartx,driver>=525,driver<526 \
brand=geforce,driver>=525,driver<526 brand=geforcertx,driver>=525,driver<526 brand=quadro,driver>=525,driver<526 \
brand=quadrortx,driver>=525,driver<526 brand=titan,driver>=525,driver<526 brand=titanrtx,driver>=525,driver<526 \
brand=tesla,driver>=535,driver<536 brand=unknown,driver>=535,driver<536 brand=nvidia,driver>=535,driver<536 \
brand=nvidiartx,driver>=535,driver<536 brand=geforce,driver>=535,driver<536 brand=geforcertx,driver>=535,driver<536 \
brand=quadro,driver>=535,driver<536 brand=quadrortx,driver>=535,driver<536 brand=titan,driver>=535,driver<536 \
brand=titanrtx,driver>=535,driver<536";

/// `nvidia/cuda:13.0.*` (vLLM 0.23's base), verbatim: CUDA 13.0, or a 535, 550, 565, 570 or 575 driver on
/// data-centre, workstation and virtual-GPU brands; no GeForce or TITAN.
const CUDA_13_0: &str = "cuda>=13.0 brand=unknown,driver>=535,driver<536 brand=grid,driver>=535,driver<536 \
brand=tesla,driver>=535,driver<536 brand=nvidia,driver>=535,driver<536 \
brand=quadro,driver>=535,driver<536 brand=quadrortx,driver>=535,driver<536 \
brand=nvidiartx,driver>=535,driver<536 brand=vapps,driver>=535,driver<536 \
brand=vpc,driver>=535,driver<536 brand=vcs,driver>=535,driver<536 brand=vws,driver>=535,driver<536 \
brand=cloudgaming,driver>=535,driver<536 brand=unknown,driver>=550,driver<551 \
brand=grid,driver>=550,driver<551 brand=tesla,driver>=550,driver<551 \
brand=nvidia,driver>=550,driver<551 brand=quadro,driver>=550,driver<551 \
brand=quadrortx,driver>=550,driver<551 brand=nvidiartx,driver>=550,driver<551 \
brand=vapps,driver>=550,driver<551 brand=vpc,driver>=550,driver<551 brand=vcs,driver>=550,driver<551 \
brand=vws,driver>=550,driver<551 brand=cloudgaming,driver>=550,driver<551 \
brand=unknown,driver>=565,driver<566 brand=grid,driver>=565,driver<566 \
brand=tesla,driver>=565,driver<566 brand=nvidia,driver>=565,driver<566 \
brand=quadro,driver>=565,driver<566 brand=quadrortx,driver>=565,driver<566 \
brand=nvidiartx,driver>=565,driver<566 brand=vapps,driver>=565,driver<566 \
brand=vpc,driver>=565,driver<566 brand=vcs,driver>=565,driver<566 brand=vws,driver>=565,driver<566 \
brand=cloudgaming,driver>=565,driver<566 brand=unknown,driver>=570,driver<571 \
brand=grid,driver>=570,driver<571 brand=tesla,driver>=570,driver<571 \
brand=nvidia,driver>=570,driver<571 brand=quadro,driver>=570,driver<571 \
brand=quadrortx,driver>=570,driver<571 brand=nvidiartx,driver>=570,driver<571 \
brand=vapps,driver>=570,driver<571 brand=vpc,driver>=570,driver<571 brand=vcs,driver>=570,driver<571 \
brand=vws,driver>=570,driver<571 brand=cloudgaming,driver>=570,driver<571 \
brand=unknown,driver>=575,driver<576 brand=grid,driver>=575,driver<576 \
brand=tesla,driver>=575,driver<576 brand=nvidia,driver>=575,driver<576 \
brand=quadro,driver>=575,driver<576 brand=quadrortx,driver>=575,driver<576 \
brand=nvidiartx,driver>=575,driver<576 brand=vapps,driver>=575,driver<576 \
brand=vpc,driver>=575,driver<576 brand=vcs,driver>=575,driver<576 brand=vws,driver>=575,driver<576 \
brand=cloudgaming,driver>=575,driver<576";

fn matrix() -> Matrix {
    Matrix::bundled().expect("bundled matrix")
}

fn node(driver: Option<&str>, gpus: &[(&str, &str)]) -> HostFacts {
    HostFacts {
        driver: driver.map(|v| DriverFacts {
            version: v.to_string(),
            source: "--driver".to_string(),
        }),
        gpus: gpus
            .iter()
            .enumerate()
            .map(|(i, (name, cc))| GpuFacts {
                name: name.to_string(),
                cc: Some(cc.to_string()),
                uuid: Some(format!("GPU-{i:08}-1111-2222-3333-444444444444")),
                source: "--gpu".to_string(),
                ..GpuFacts::default()
            })
            .collect(),
        ..HostFacts::default()
    }
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A CUDA base image's environment.
fn cuda_image(require: &str, version: &str) -> BTreeMap<String, String> {
    env(&[
        ("NVIDIA_REQUIRE_CUDA", require),
        ("CUDA_VERSION", version),
        ("NVIDIA_VISIBLE_DEVICES", "all"),
        ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
    ])
}

fn outcome(e: &BTreeMap<String, String>, n: &HostFacts) -> Outcome {
    let v = evaluate(e, n, &matrix());
    assert_eq!(v.requirements.len(), 1, "{:?}", v.requirements);
    v.requirements[0].outcome
}

fn slugs(v: &ContainerView) -> Vec<&str> {
    v.findings.iter().map(|f| f.slug.as_str()).collect()
}

const H200: (&str, &str) = ("NVIDIA H200", "9.0");
const RTX4090: (&str, &str) = ("NVIDIA GeForce RTX 4090", "8.9");
const A100: (&str, &str) = ("NVIDIA A100-SXM4-80GB", "8.0");

#[test]
fn real_image_constraints_against_real_drivers() {
    use Outcome::*;
    /// (image CUDA, NVIDIA_REQUIRE_CUDA, driver, GPU, expected, why).
    type Case<'a> = (
        &'a str,
        &'a str,
        Option<&'a str>,
        (&'a str, &'a str),
        Outcome,
        &'a str,
    );
    let cases: &[Case<'_>] = &[
        // 580 supports CUDA 13.0: the first term holds.
        (
            "13.0",
            CUDA_13_0,
            Some("580.159.04"),
            H200,
            Satisfied,
            "cuda 13.0 >= 13.0",
        ),
        (
            "13.0",
            CUDA_13_0,
            Some("580.159.04"),
            RTX4090,
            Satisfied,
            "cuda term needs no brand",
        ),
        // 535 supports CUDA 12.2; the 535 alternatives hold for data-centre brands (tesla or nvidia).
        (
            "13.0",
            CUDA_13_0,
            Some("535.104.05"),
            H200,
            Satisfied,
            "brand=tesla|nvidia,driver 535",
        ),
        // ... but the 13.0 list has no GeForce: every brand a GeForce may report fails.
        (
            "13.0",
            CUDA_13_0,
            Some("535.104.05"),
            RTX4090,
            Unsatisfied,
            "no geforce alternative",
        ),
        // 470 supports CUDA 11.4 and is in no 13.0 alternative.
        (
            "13.0",
            CUDA_13_0,
            Some("470.256.02"),
            A100,
            Unsatisfied,
            "470 not listed",
        ),
        // 12.4: 535 is listed for GeForce too.
        (
            "12.4",
            CUDA_12_4,
            Some("535.104.05"),
            RTX4090,
            Satisfied,
            "brand=geforce,driver 535",
        ),
        (
            "12.4",
            CUDA_12_4,
            Some("470.256.02"),
            A100,
            Satisfied,
            "brand=tesla|nvidia,driver 470",
        ),
        (
            "12.4",
            CUDA_12_4,
            Some("580.159.04"),
            H200,
            Satisfied,
            "cuda 13.0 >= 12.4",
        ),
        // 545 is between listed branches and below CUDA 12.4 (its CUDA is 12.3): fails on any brand.
        (
            "12.4",
            CUDA_12_4,
            Some("545.29.06"),
            H200,
            Unsatisfied,
            "545 not listed, cuda 12.3",
        ),
    ];
    for (ver, req, driver, gpu, want, why) in cases {
        let n = node(*driver, &[*gpu]);
        assert_eq!(
            outcome(&cuda_image(req, ver), &n),
            *want,
            "{ver} image on {driver:?} {}: {why}",
            gpu.0
        );
    }
}

#[test]
fn an_unsatisfied_cuda_requirement_is_a_finding_with_the_toolkit_message() {
    let e = env(&[
        ("NVIDIA_REQUIRE_CUDA", "cuda>=13.0"),
        ("NVIDIA_VISIBLE_DEVICES", "all"),
    ]);
    let v = evaluate(&e, &node(Some("535.104.05"), &[H200]), &matrix());
    assert_eq!(slugs(&v), ["container-requirement-unmet"]);
    let f = &v.findings[0];
    assert!(f.evidence.iter().any(|l| l.contains(
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=13.0, please update your driver to a \
         newer version, or use an earlier cuda container"
    )), "{:#?}", f.evidence);
    assert!(
        f.evidence.iter().any(|l| l.contains("supports CUDA 12.2")),
        "{:#?}",
        f.evidence
    );
    assert!(f.help.contains("580"), "{}", f.help);
    assert!(f.help.contains("12.2"), "{}", f.help);
    // Near miss: the same image on a 580 driver.
    let v = evaluate(&e, &node(Some("580.159.04"), &[H200]), &matrix());
    assert!(v.findings.is_empty(), "{:#?}", v.findings);
    assert_eq!(v.requirements[0].outcome, Outcome::Satisfied);
}

#[test]
fn a_driver_requirement_names_itself_without_the_cuda_advice() {
    let e = env(&[
        ("NVIDIA_REQUIRE_DRIVER", "driver>=550"),
        ("NVIDIA_VISIBLE_DEVICES", "0"),
    ]);
    let v = evaluate(&e, &node(Some("535.104.05"), &[H200]), &matrix());
    assert_eq!(slugs(&v), ["container-requirement-unmet"]);
    assert_eq!(
        v.requirements[0].detail.as_deref(),
        Some("requirement error: unsatisfied condition: driver>=550")
    );
}

#[test]
fn disable_require_and_jetpack_are_skipped() {
    let mut e = cuda_image("cuda>=13.0", "13.0.2");
    e.insert("NVIDIA_DISABLE_REQUIRE".into(), "1".into());
    e.insert("NVIDIA_REQUIRE_JETPACK".into(), "csv-mounts=all".into());
    let v = evaluate(&e, &node(Some("535.104.05"), &[H200]), &matrix());
    assert!(v.findings.is_empty(), "{:#?}", v.findings);
    assert_eq!(v.requirements.len(), 1);
    assert_eq!(v.requirements[0].outcome, Outcome::Skipped);
    // Anything but a Go boolean leaves the check on.
    e.insert("NVIDIA_DISABLE_REQUIRE".into(), "yes".into());
    let v = evaluate(&e, &node(Some("535.104.05"), &[H200]), &matrix());
    assert_eq!(slugs(&v), ["container-requirement-unmet"]);
}

#[test]
fn a_legacy_image_requires_its_cuda_version_and_gets_everything() {
    let e = env(&[("CUDA_VERSION", "12.4.1")]);
    let v = evaluate(&e, &node(Some("535.104.05"), &[H200]), &matrix());
    assert!(v.legacy_image && v.gpu_container);
    assert_eq!(v.requirements[0].variable, "CUDA_VERSION");
    assert_eq!(v.requirements[0].expression, "cuda>=12.4");
    assert_eq!(v.capabilities.len(), 7);
    assert_eq!(slugs(&v), ["container-requirement-unmet"]);
    let v = evaluate(&e, &node(Some("550.54.14"), &[H200]), &matrix());
    assert!(v.findings.is_empty(), "{:#?}", v.findings);
    // Not a version: the hook gives up.
    let v = evaluate(
        &env(&[("CUDA_VERSION", "twelve")]),
        &node(Some("550.54.14"), &[H200]),
        &matrix(),
    );
    assert_eq!(slugs(&v), ["container-config-invalid"]);
}

#[test]
fn unknown_brand_or_driver_leaves_the_outcome_open() {
    // Only a driver is known (a what-if target): whether a 535 alternative holds depends on the GPU.
    let e = cuda_image(CUDA_13_0, "13.0.2");
    let v = evaluate(&e, &node(Some("535.104.05"), &[]), &matrix());
    assert_eq!(v.requirements[0].outcome, Outcome::Unknown);
    assert!(v.findings.is_empty(), "{:#?}", v.findings);
    // A GPU whose name settles no brand.
    let v = evaluate(&e, &node(Some("535.104.05"), &[("Orin", "8.7")]), &matrix());
    assert_eq!(v.requirements[0].outcome, Outcome::Unknown);
    // No driver known at all.
    let v = evaluate(&e, &node(None, &[H200]), &matrix());
    assert_eq!(v.requirements[0].outcome, Outcome::Unknown);
}

#[test]
fn invalid_expressions_stop_the_container() {
    let e = env(&[
        ("NVIDIA_REQUIRE_ARCH", "arch>=sm_80"),
        ("NVIDIA_VISIBLE_DEVICES", "all"),
    ]);
    let v = evaluate(&e, &node(Some("580.159.04"), &[H200]), &matrix());
    assert_eq!(slugs(&v), ["container-config-invalid"]);
    assert!(
        v.findings[0]
            .evidence
            .iter()
            .any(|l| l.contains("invalid expression"))
    );
    // Near miss: the same property written as a version.
    let e = env(&[
        ("NVIDIA_REQUIRE_ARCH", "arch>=8.0"),
        ("NVIDIA_VISIBLE_DEVICES", "all"),
    ]);
    let v = evaluate(&e, &node(Some("580.159.04"), &[H200]), &matrix());
    assert!(v.findings.is_empty(), "{:#?}", v.findings);
    assert_eq!(v.requirements[0].outcome, Outcome::Satisfied);
}

#[test]
fn capabilities_decide_what_is_injected() {
    let mut e = cuda_image("cuda>=12.0", "12.0.1");
    let v = evaluate(&e, &node(Some("580.159.04"), &[H200]), &matrix());
    let cuda = v
        .injected
        .iter()
        .find(|f| f.name == "libcuda.so")
        .expect("libcuda");
    assert_eq!(cuda.path, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04");
    assert!(v.injected.iter().any(|f| f.path == "/usr/bin/nvidia-smi"));
    assert_eq!(
        v.devices.device_nodes,
        [
            "/dev/nvidiactl",
            "/dev/nvidia-uvm",
            "/dev/nvidia-uvm-tools",
            "/dev/nvidia0"
        ]
    );
    assert!(v.findings.is_empty());
    // utility alone: NVML but no libcuda.
    e.insert("NVIDIA_DRIVER_CAPABILITIES".into(), "utility".into());
    let v = evaluate(&e, &node(Some("580.159.04"), &[H200]), &matrix());
    assert!(!v.injected.iter().any(|f| f.name == "libcuda.so"));
    assert_eq!(v.devices.device_nodes, ["/dev/nvidiactl", "/dev/nvidia0"]);
    assert_eq!(slugs(&v), ["container-compute-missing"]);
    // A name the hook does not know.
    e.insert("NVIDIA_DRIVER_CAPABILITIES".into(), "compute,gpu".into());
    let v = evaluate(&e, &node(Some("580.159.04"), &[H200]), &matrix());
    assert_eq!(slugs(&v), ["container-config-invalid"]);
    // Unset: utility,compute.
    e.remove("NVIDIA_DRIVER_CAPABILITIES");
    let v = evaluate(&e, &node(Some("580.159.04"), &[H200]), &matrix());
    assert_eq!(v.capabilities_source, CapsSource::Default);
    assert!(v.findings.is_empty(), "{:#?}", v.findings);
}

#[test]
fn visible_devices_decide_whether_the_toolkit_acts() {
    let n = node(Some("580.159.04"), &[H200, H200]);
    // A non-CUDA image without the variable: nothing happens, and no requirement is checked.
    let e = env(&[("NVIDIA_REQUIRE_CUDA", "cuda>=99.0")]);
    let v = evaluate(&e, &n, &matrix());
    assert!(!v.gpu_container && v.injected.is_empty());
    assert_eq!(v.requirements[0].outcome, Outcome::Skipped);
    assert_eq!(slugs(&v), ["container-no-gpu-access"]);
    // void and none.
    let v = evaluate(&env(&[("NVIDIA_VISIBLE_DEVICES", "void")]), &n, &matrix());
    assert_eq!(slugs(&v), ["container-no-gpu-access"]);
    let v = evaluate(&env(&[("NVIDIA_VISIBLE_DEVICES", "none")]), &n, &matrix());
    assert_eq!(slugs(&v), ["container-no-gpu-access"]);
    assert!(v.injected.iter().any(|f| f.name == "libcuda.so"));
    assert!(v.devices.gpus.is_empty());
    // An index the node lacks.
    let v = evaluate(&env(&[("NVIDIA_VISIBLE_DEVICES", "0,2")]), &n, &matrix());
    assert_eq!(slugs(&v), ["container-unknown-device"]);
    assert!(
        v.findings[0]
            .evidence
            .iter()
            .any(|l| l.contains("device error: 2: unknown device"))
    );
    // Near misses: indices and a UUID it has.
    let v = evaluate(&env(&[("NVIDIA_VISIBLE_DEVICES", "1")]), &n, &matrix());
    assert!(v.findings.is_empty(), "{:#?}", v.findings);
    assert_eq!(v.devices.gpus[0].index, 1);
    let uuid = n.gpus[1].uuid.clone().unwrap();
    let v = evaluate(&env(&[("NVIDIA_VISIBLE_DEVICES", &uuid)]), &n, &matrix());
    assert!(v.findings.is_empty(), "{:#?}", v.findings);
}

#[test]
fn requirements_are_checked_per_visible_gpu() {
    // A node with a data-centre GPU and a GeForce on a 535 driver: the 13.0 image fails when it sees the
    // GeForce, and starts when it sees only the H200.
    let n = node(Some("535.104.05"), &[H200, RTX4090]);
    let mut e = cuda_image(CUDA_13_0, "13.0.2");
    assert_eq!(outcome(&e, &n), Outcome::Unsatisfied);
    e.insert("NVIDIA_VISIBLE_DEVICES".into(), "0".into());
    assert_eq!(outcome(&e, &n), Outcome::Satisfied);
    // No GPU visible: brand conditions hold, so a 535 alternative does.
    e.insert("NVIDIA_VISIBLE_DEVICES".into(), "none".into());
    assert_eq!(outcome(&e, &n), Outcome::Satisfied);
}

#[test]
fn legacy_versions_parse_as_semantic_versions() {
    assert_eq!(legacy_major_minor("12.4.1").as_deref(), Some("12.4"));
    assert_eq!(legacy_major_minor("v11.8").as_deref(), Some("11.8"));
    assert_eq!(legacy_major_minor("12").as_deref(), Some("12.0"));
    assert_eq!(legacy_major_minor("12.4.1-rc1").as_deref(), Some("12.4"));
    assert_eq!(legacy_major_minor("12.4.1.5"), None);
    assert_eq!(legacy_major_minor("twelve"), None);
    assert_eq!(legacy_major_minor(""), None);
}

#[test]
fn compat_libraries_are_used_only_from_a_newer_branch() {
    use CompatMode::*;
    assert!(compat_library_used(
        "libcuda.so.580.95.05",
        "535.104.05",
        Ldconfig
    ));
    assert!(!compat_library_used(
        "libcuda.so.550.54.15",
        "580.159.04",
        Ldconfig
    ));
    assert!(!compat_library_used(
        "libcuda.so.580.95.05",
        "580.159.04",
        Ldconfig
    ));
    // The SONAME link and unversioned names never count.
    assert!(!compat_library_used("libcuda.so.1", "535.104.05", Ldconfig));
    assert!(!compat_library_used("libcuda.so", "535.104.05", Ldconfig));
    // Mount mode takes any other branch, older ones included; disabled takes none.
    assert!(compat_library_used("libcuda.so.550.54.15", "580.159.04", Mount));
    assert!(!compat_library_used("libcuda.so.580.95.05", "580.159.04", Mount));
    assert!(!compat_library_used(
        "libcuda.so.580.95.05",
        "535.104.05",
        Disabled
    ));
}

#[test]
fn a_huge_device_list_stays_bounded() {
    let mut n = node(Some("580.159.04"), &[H200]);
    n.mig = vec!["/proc/driver/nvidia/capabilities/gpu0/mig/gi1".into()];
    let ids = vec!["0:0"; 100_000].join(",");
    let mut e = cuda_image(CUDA_13_0, "13.0.2");
    e.insert("NVIDIA_VISIBLE_DEVICES".into(), ids);
    let v = evaluate(&e, &n, &matrix());
    assert_eq!(v.devices.gpus.len(), 1);
    assert_eq!(v.requirements[0].outcome, Outcome::Satisfied);
}

#[test]
fn hostile_values_never_panic() {
    let n = node(Some("580.159.04"), &[H200, RTX4090]);
    let weird = [
        "",
        " ",
        ",",
        "é>=1",
        "cuda>=é",
        "cuda>=1.é",
        "brand=ü,driver>=\u{0}",
        "\u{1b}[31mcuda>=13.0",
        "<>=!",
        "cuda>=99999999999999999999999999.0",
        "MIG-é",
        "GPU-",
        "0:",
        ":1",
        "00000000:zz:00.0",
        "arch>=9.0 arch<9.0,brand!geforce",
    ];
    for w in weird {
        let e = env(&[
            ("NVIDIA_REQUIRE_X", w),
            ("NVIDIA_VISIBLE_DEVICES", w),
            ("NVIDIA_DRIVER_CAPABILITIES", w),
            ("CUDA_VERSION", w),
            ("NVIDIA_DISABLE_REQUIRE", w),
        ]);
        let _ = evaluate(&e, &n, &matrix());
        let _ = compat_library_used(w, w, CompatMode::Mount);
    }
}

#[test]
fn the_view_says_which_image_compat_libraries_the_toolkit_activates() {
    let files: Vec<String> = [
        "libcuda.so.1",
        "libcuda.so.580.95.05",
        "libnvidia-ptxjitcompiler.so.580.95.05",
    ]
    .map(String::from)
    .to_vec();
    let e = cuda_image(CUDA_13_0, "13.0.2");
    let v = evaluate(&e, &node(Some("535.104.05"), &[H200]), &matrix());
    assert_eq!(
        v.compat_libraries_used(&files, CompatMode::Ldconfig),
        Some(vec![
            "libcuda.so.580.95.05",
            "libnvidia-ptxjitcompiler.so.580.95.05"
        ])
    );
    // Same branch as the node: the driver's own libraries serve.
    let v = evaluate(&e, &node(Some("580.159.04"), &[H200]), &matrix());
    assert_eq!(
        v.compat_libraries_used(&files, CompatMode::Ldconfig),
        Some(vec![])
    );
    // Without compute the toolkit leaves them alone.
    let mut u = e.clone();
    u.insert("NVIDIA_DRIVER_CAPABILITIES".into(), "utility".into());
    let v = evaluate(&u, &node(Some("535.104.05"), &[H200]), &matrix());
    assert_eq!(
        v.compat_libraries_used(&files, CompatMode::Ldconfig),
        Some(vec![])
    );
    let v = evaluate(&e, &node(None, &[H200]), &matrix());
    assert_eq!(v.compat_libraries_used(&files, CompatMode::Ldconfig), None);
}

#[test]
fn the_run_decides_what_the_hook_sees() {
    let n = node(Some("535.104.05"), &[H200, H200]);
    let layout = ImageLayout::default();
    let image = env(&[
        ("NVIDIA_VISIBLE_DEVICES", "all"),
        ("NVIDIA_REQUIRE_CUDA", "cuda>=13.0"),
    ]);
    let with = |run: &Run| evaluate_run(&image, &n, &matrix(), &layout, run);
    // As the image says (the NVIDIA runtime): the requirement stops it.
    assert_eq!(slugs(&with(&Run::default())), ["container-requirement-unmet"]);
    // runc, whatever --gpus none says: no hook, no GPU, no requirement check.
    let runc = Run {
        gpus: Some(run::parse_gpus("none").unwrap()),
        runtime: Some(run::parse_runtime("runc").unwrap()),
        cdi: Vec::new(),
    };
    let v = with(&runc);
    assert!(!v.gpu_container && v.injected.is_empty() && !v.run.hook);
    assert_eq!(slugs(&v), ["container-no-gpu-access"]);
    // CDI: the GPUs and the driver come from the spec; nothing checks the requirement.
    let cdi = Run {
        cdi: vec!["1".into()],
        ..Run::default()
    };
    let v = with(&cdi);
    assert!(v.findings.is_empty(), "{:#?}", v.findings);
    assert_eq!(v.requirements[0].outcome, Outcome::Skipped);
    assert_eq!(v.devices.gpus.len(), 1);
    assert_eq!(v.devices.gpus[0].index, 1);
    assert!(v.injected.iter().any(|f| f.name == "libcuda.so"));
    // A device the node lacks: the engine cannot resolve it.
    let v = with(&Run {
        cdi: vec!["5".into()],
        ..Run::default()
    });
    assert_eq!(slugs(&v), ["container-unknown-device"]);
    assert!(v.findings[0].message.contains("CDI"));
}
