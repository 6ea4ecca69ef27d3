//! The JAX model on small synthetic environments: the layouts and messages observed with real wheels
//! (jax 0.10.2 + jax-cuda12-plugin on a machine without a GPU; jax 0.11.2 + jax-cuda13-plugin on an H200),
//! recorded in docs/framework-jax-tensorflow.md.

use super::super::testproc::{FakeProcess, TestEnv};
use super::super::xla::{floor_of, pin};
use super::super::{Framework, Outcome, Selected, select};
use super::*;
use crate::findings::Code;

const CU12_DIRS: &[&str] = &[
    "cuda_runtime",
    "cublas",
    "cudnn",
    "cufft",
    "cuda_cupti",
    "cusolver",
    "cusparse",
    "nccl",
];

/// A healthy `pip install "jax[cuda12]"` (0.10.2), the NVIDIA wheels' versions as pip resolved them.
fn cuda12_env() -> TestEnv {
    let mut t = TestEnv::new();
    let site = t.site();
    t.install(&site, "jax", "0.10.2", &["jax/__init__.py"], &[]);
    t.install(&site, "jaxlib", "0.10.2", &["jaxlib/__init__.py"], &[]);
    let ext: Vec<String> = EXTENSIONS
        .iter()
        .map(|e| format!("jax_cuda12_plugin/{e}.so"))
        .collect();
    let ext: Vec<&str> = ext.iter().map(String::as_str).collect();
    t.install(
        &site,
        "jax-cuda12-plugin",
        "0.10.2",
        &ext,
        &[
            "jax-cuda12-pjrt==0.10.2",
            "nvidia-cudnn-cu12<10.0,>=9.8; sys_platform == \"linux\" and extra == \"with-cuda\"",
            "nvidia-cusparse-cu12>=12.1.0.106; sys_platform == \"linux\" and extra == \"with-cuda\"",
        ],
    );
    t.install(
        &site,
        "jax-cuda12-pjrt",
        "0.10.2",
        &[
            "jax_plugins/xla_cuda12/__init__.py",
            "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
        ],
        &[],
    );
    // nvidia-cuda-cccl-cu12 ships nvidia/__init__.py: `nvidia` is a regular package in this venv.
    t.install(
        &site,
        "nvidia-cuda-cccl-cu12",
        "12.9.27",
        &["nvidia/__init__.py"],
        &[],
    );
    let wheels: &[(&str, &str, &[&str])] = &[
        (
            "nvidia-cuda-runtime-cu12",
            "12.9.79",
            &["nvidia/cuda_runtime/lib/libcudart.so.12"],
        ),
        (
            "nvidia-cuda-nvrtc-cu12",
            "12.9.86",
            &["nvidia/cuda_nvrtc/lib/libnvrtc.so.12"],
        ),
        (
            "nvidia-cublas-cu12",
            "12.9.3.13",
            &[
                "nvidia/cublas/lib/libcublas.so.12",
                "nvidia/cublas/lib/libcublasLt.so.12",
            ],
        ),
        ("nvidia-nccl-cu12", "2.32.3", &["nvidia/nccl/lib/libnccl.so.2"]),
        (
            "nvidia-cuda-cupti-cu12",
            "12.9.79",
            &["nvidia/cuda_cupti/lib/libcupti.so.12"],
        ),
        (
            "nvidia-cusparse-cu12",
            "12.5.10.65",
            &["nvidia/cusparse/lib/libcusparse.so.12"],
        ),
        (
            "nvidia-cusolver-cu12",
            "11.7.5.82",
            &["nvidia/cusolver/lib/libcusolver.so.11"],
        ),
        (
            "nvidia-cufft-cu12",
            "11.4.1.4",
            &["nvidia/cufft/lib/libcufft.so.11"],
        ),
        (
            "nvidia-nvshmem-cu12",
            "3.8.0",
            &["nvidia/nvshmem/lib/libnvshmem_host.so.3"],
        ),
        (
            "nvidia-cudnn-cu12",
            "9.28.0.42",
            &["nvidia/cudnn/lib/libcudnn.so.9"],
        ),
    ];
    for (name, version, files) in wheels {
        t.install(&site, name, version, files, &[]);
    }
    let driver = t.entry("usr/lib/x86_64-linux-gnu");
    t.file(&driver, "libcuda.so.1");
    t.entries.pop(); // the driver's directory is the loader's, not sys.path's
    t
}

/// The process with the plugin's DT_RPATHs as the 0.10.2 wheels have them and the driver in the cache.
fn process(t: &TestEnv, root: &crate::system::Root) -> FakeProcess {
    let mut p = FakeProcess::new(root);
    let own: Vec<String> = CU12_DIRS
        .iter()
        .map(|d| format!("$ORIGIN/../nvidia/{d}/lib"))
        .collect();
    for e in EXTENSIONS {
        p.rpaths.insert(format!("{e}.so"), own.clone());
    }
    let pjrt: Vec<String> = CU12_DIRS
        .iter()
        .map(|d| format!("$ORIGIN/../../nvidia/{d}/lib"))
        .collect();
    p.rpaths.insert("xla_cuda_plugin.so".into(), pjrt);
    p.cache.push(t.dir.path().join("usr/lib/x86_64-linux-gnu"));
    p
}

fn model(version: &str) -> Selected {
    select("jax", version, MODELS).expect("a model")
}

/// Runs `import jax` then the first use; returns both steps, the loaded paths and the checks' findings.
fn run(t: &TestEnv) -> (Step, Step, Vec<String>, Vec<Finding>) {
    t.with_ctx(|ctx, root| {
        let mut p = process(t, root);
        let m = model("0.10.2");
        let import = Jax.import(ctx, &m, &mut p);
        let first = Jax.first_use(ctx, &m, &mut p);
        let checks = Jax.checks(ctx, &m, &p);
        (import, first, p.paths(), checks)
    })
}

fn fallback_message(s: &Step) -> String {
    match &s.outcome {
        Outcome::CpuFallback { message, .. } => message.clone().unwrap_or_default(),
        other => panic!("expected a CPU fall-back, got {other:?}"),
    }
}

#[test]
fn a_healthy_cuda12_venv_uses_the_gpu_with_every_library_from_its_wheel() {
    let t = cuda12_env();
    let (import, first, paths, checks) = run(&t);
    assert_eq!(import.outcome, Outcome::Gpu);
    assert_eq!(first.outcome, Outcome::Gpu, "{:?}", first.notes);
    assert!(checks.is_empty(), "{checks:?}");
    let site = t.site().display().to_string();
    // At import: the extension modules, then the runtime through `_solver.so`'s DT_RPATH (as observed).
    let cudart = paths
        .iter()
        .position(|p| p.ends_with("libcudart.so.12"))
        .expect("cudart");
    let solver = paths
        .iter()
        .position(|p| p.ends_with("_solver.so"))
        .expect("_solver");
    assert!(solver < cudart && cudart < paths.iter().position(|p| p.ends_with("_hybrid.so")).unwrap_or(99));
    // The preload order of `_load_nvidia_libraries`, every copy the venv's.
    let order: Vec<&str> = paths
        .iter()
        .filter(|p| p.starts_with(&site) && p.contains("/nvidia/"))
        .map(|p| p.rsplit('/').next().unwrap_or(""))
        .collect();
    assert_eq!(
        order,
        [
            "libcudart.so.12",
            "libnvrtc.so.12",
            "libcublas.so.12",
            "libcublasLt.so.12",
            "libnccl.so.2",
            "libcupti.so.12",
            "libcusparse.so.12",
            "libcusolver.so.11",
            "libcufft.so.11",
            "libnvshmem_host.so.3",
            "libcudnn.so.9"
        ]
    );
    assert!(paths.iter().any(|p| p.ends_with("xla_cuda12/xla_cuda_plugin.so")));
    assert!(paths.iter().any(|p| p.ends_with("libcuda.so.1")));
}

#[test]
fn without_the_cudnn_wheel_jax_falls_back_to_the_cpu_with_its_own_message() {
    let mut t = cuda12_env();
    t.dists.retain(|d| d.key != "nvidia-cudnn-cu12");
    std::fs::remove_dir_all(t.site().join("nvidia/cudnn")).expect("remove");
    let (_, first, paths, _) = run(&t);
    let msg = fallback_message(&first);
    assert!(msg.contains(
        "Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()"
    ));
    assert!(
        msg.contains("RuntimeError: Unable to load cuDNN. Is it installed?"),
        "{msg}"
    );
    assert!(msg.contains("Falling back to cpu."), "{msg}");
    let Outcome::CpuFallback { because, .. } = &first.outcome else {
        unreachable!()
    };
    assert!(because.contains("will not use the GPU"), "{because}");
    assert!(because.contains("pip install -U \"jax[cuda12]\""), "{because}");
    assert!(because.contains("nvidia-cudnn-cu12<10.0,>=9.8"), "{because}");
    // The backend is never registered.
    assert!(!paths.iter().any(|p| p.ends_with("xla_cuda_plugin.so")));
}

#[test]
fn a_cusparse_older_than_the_floor_gives_jaxs_outdated_message_with_its_numbers() {
    let mut t = cuda12_env();
    for d in t.dists.iter_mut().filter(|d| d.key == "nvidia-cusparse-cu12") {
        super::super::testproc::set_version(d, "12.0.2.55");
    }
    let (_, first, _, _) = run(&t);
    let msg = fallback_message(&first);
    // As jax 0.10.2 printed it with nvidia-cusparse-cu12 12.0.2.55.
    assert!(
        msg.contains("RuntimeError: Outdated cuSPARSE installation found."),
        "{msg}"
    );
    assert!(
        msg.contains("Minimum supported: 12100\nInstalled version: 12002\n"),
        "{msg}"
    );
    assert!(
        msg.contains("The local installation version must be no lower than 12100."),
        "{msg}"
    );
}

#[test]
fn near_miss_a_cusparse_at_the_floor_passes() {
    let mut t = cuda12_env();
    for d in t.dists.iter_mut().filter(|d| d.key == "nvidia-cusparse-cu12") {
        super::super::testproc::set_version(d, "12.1.0.106");
    }
    let (_, first, _, _) = run(&t);
    assert_eq!(first.outcome, Outcome::Gpu);
}

#[test]
fn jax_skip_cuda_constraints_check_skips_the_floors() {
    let mut t = cuda12_env();
    for d in t.dists.iter_mut().filter(|d| d.key == "nvidia-cusparse-cu12") {
        super::super::testproc::set_version(d, "12.0.2.55");
    }
    t.env.set("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1");
    let (_, first, _, _) = run(&t);
    assert_eq!(first.outcome, Outcome::Gpu);
    assert!(
        first
            .notes
            .iter()
            .any(|n| n.contains("JAX_SKIP_CUDA_CONSTRAINTS_CHECK"))
    );
}

#[test]
fn jax_platforms_cuda_turns_the_fall_back_into_an_exception() {
    let mut t = cuda12_env();
    std::fs::remove_dir_all(t.site().join("nvidia/cudnn")).expect("remove");
    t.env.set("JAX_PLATFORMS", "cuda");
    let (_, first, _, _) = run(&t);
    match first.outcome {
        Outcome::Fails { message, .. } => {
            assert!(message.contains("Unable to load cuDNN"), "{message}");
            assert!(
                message.contains("Unable to initialize backend 'cuda'"),
                "{message}"
            );
        }
        other => panic!("expected Fails, got {other:?}"),
    }
}

#[test]
fn cudnn_on_another_sys_path_entry_is_hidden_by_a_regular_nvidia_package() {
    // Observed with jax 0.10.2: the venv's nvidia/__init__.py makes `nvidia` a regular package, so
    // `import nvidia.cudnn` does not see a PYTHONPATH directory's nvidia/cudnn, and the plugin's DT_RPATH
    // reaches only its own site-packages.
    let mut t = cuda12_env();
    let extra = t.entry("extra");
    std::fs::rename(t.site().join("nvidia/cudnn"), extra.join("nvidia/cudnn"))
        .or_else(|_| {
            std::fs::create_dir_all(extra.join("nvidia"))?;
            std::fs::rename(t.site().join("nvidia/cudnn"), extra.join("nvidia/cudnn"))
        })
        .expect("move");
    let (_, first, _, _) = run(&t);
    assert!(fallback_message(&first).contains("Unable to load cuDNN"));
    let Outcome::CpuFallback { because, .. } = &first.outcome else {
        unreachable!()
    };
    assert!(because.contains("makes `nvidia` a regular package"), "{because}");
    assert!(because.contains(&extra.join("nvidia/cudnn/lib/libcudnn.so.9").display().to_string()));

    // Without the venv's nvidia/__init__.py, `nvidia` is a namespace package of both directories: the
    // preload finds cuDNN in the other entry and JAX uses the GPU.
    std::fs::remove_file(t.site().join("nvidia/__init__.py")).expect("remove");
    let (_, first, paths, _) = run(&t);
    assert_eq!(first.outcome, Outcome::Gpu, "{:?}", first.notes);
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with(&extra.display().to_string()) && p.ends_with("libcudnn.so.9"))
    );
}

#[test]
fn xla_rejects_a_cudnn_minor_older_than_the_plugin_needs_at_the_first_convolution() {
    let mut t = cuda12_env();
    for d in t.dists.iter_mut().filter(|d| d.key == "nvidia-cudnn-cu12") {
        super::super::testproc::set_version(d, "9.1.0.70");
    }
    let (_, first, _, checks) = run(&t);
    // The Python floor (build // 100) lets any loadable cuDNN 9 through ...
    assert_eq!(first.outcome, Outcome::Gpu);
    // ... XLA's own rule does not.
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert_eq!(checks[0].code, Code::CudaLibraryTooOld);
    assert!(
        checks[0]
            .message
            .contains("Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.8.0."),
        "{}",
        checks[0].message
    );
    assert!(checks[0].help.contains("nvidia-cudnn-cu12<10.0,>=9.8"));
}

#[test]
fn no_visible_gpu_means_the_cpu_even_when_every_library_loads() {
    let mut t = cuda12_env();
    t.gpus.clear();
    let (_, first, paths, _) = run(&t);
    assert!(matches!(first.outcome, Outcome::CpuFallback { .. }));
    // As on the H200 with CUDA_VISIBLE_DEVICES="": the libraries and the driver are mapped, not the plugin.
    assert!(paths.iter().any(|p| p.ends_with("libcudnn.so.9")));
    assert!(paths.iter().any(|p| p.ends_with("libcuda.so.1")));
    assert!(!paths.iter().any(|p| p.ends_with("xla_cuda_plugin.so")));
}

#[test]
fn the_cuda13_plugin_preloads_from_nvidia_cu13_and_xla_asks_for_cuda13_sonames() {
    let mut t = TestEnv::new();
    let site = t.site();
    t.install(&site, "jax", "0.11.2", &[], &[]);
    t.install(
        &site,
        "jax-cuda13-plugin",
        "0.11.2",
        &["jax_cuda13_plugin/_versions.so"],
        &[],
    );
    let libs = [
        "libcudart.so.13",
        "libcublas.so.13",
        "libcublasLt.so.13",
        "libcupti.so.13",
        "libcusparse.so.12",
        "libcusolver.so.12",
        "libcufft.so.12",
    ];
    for l in libs {
        t.file(&site, &format!("nvidia/cu13/lib/{l}"));
    }
    t.file(&site, "nvidia/cudnn/lib/libcudnn.so.9");
    let driver = t.dir.path().join("usr/lib");
    t.file(&driver, "libcuda.so.1");
    t.with_ctx(|ctx, root| {
        let mut p = FakeProcess::new(root);
        p.cache.push(driver.clone());
        let m = model("0.11.2");
        Jax.import(ctx, &m, &mut p);
        let first = Jax.first_use(ctx, &m, &mut p);
        // No PJRT wheel: the backend cannot register, and the model says why.
        assert!(matches!(&first.outcome, Outcome::CpuFallback { because, .. } if because.contains("jax-cuda13-pjrt")));
        let paths = p.paths();
        for l in libs {
            assert!(paths.iter().any(|x| x.ends_with(&format!("nvidia/cu13/lib/{l}"))), "{l} in {paths:?}");
        }
    });
    assert_eq!(super::super::xla::sonames(13)[3], "libcufft.so.12");
    assert_eq!(super::super::xla::sonames(12)[4], "libcusolver.so.11");
}

#[test]
fn jax_without_a_cuda_plugin_falls_back_and_says_how_to_install_one() {
    let mut t = TestEnv::new();
    let site = t.site();
    t.install(&site, "jax", "0.10.2", &[], &[]);
    t.install(&site, "jaxlib", "0.10.2", &[], &[]);
    t.with_ctx(|ctx, root| {
        let mut p = FakeProcess::new(root);
        let step = Jax.import(ctx, &model("0.10.2"), &mut p);
        match step.outcome {
            Outcome::CpuFallback { message, because } => {
                assert!(
                    message
                        .unwrap_or_default()
                        .contains("CUDA-enabled jaxlib is not installed")
                );
                assert!(because.contains("jax[cuda12]"));
            }
            other => panic!("{other:?}"),
        }
    });
}

#[test]
fn versions_outside_every_model_are_judged_with_the_nearest_and_say_so() {
    let old = model("0.4.35");
    assert_eq!(old.index, 0);
    assert!(old.nearest.unwrap_or_default().contains("older"));
    assert_eq!(model("0.6.2").index, 1);
    assert_eq!(model("0.11.2").index, 2);
    assert!(model("0.11.2").nearest.is_none());
}

#[test]
fn pins_and_floors_are_read_from_requires_dist() {
    let req = vec![
        "nvidia-cudnn-cu12<10.0,>=9.8; sys_platform == \"linux\" and extra == \"with-cuda\"".to_string(),
    ];
    assert_eq!(
        pin(&req, "nvidia_cudnn_cu12").as_deref(),
        Some("nvidia-cudnn-cu12<10.0,>=9.8")
    );
    assert_eq!(floor_of("nvidia-cudnn-cu12<10.0,>=9.8"), Some(vec![9, 8]));
    assert_eq!(pin(&req, "nvidia-cudnn-cu13"), None);
}

#[test]
fn a_sonames_major_alone_is_no_version_for_xlas_rule() {
    // Regression: a cuDNN whose wheel record is elsewhere, loaded as `libcudnn.so.9`, was judged as cuDNN 9.0.0
    // and reported older than the plugin's 9.8 (seen with `cudadiag import jax` on a real venv).
    let mut t = cuda12_env();
    t.dists.retain(|d| d.key != "nvidia-cudnn-cu12");
    let cudnn = t.site().join("nvidia/cudnn/lib/libcudnn.so.9");
    let checks = t.with_ctx(|ctx, root| {
        let mut p = process(&t, root);
        p.versions.insert(cudnn.clone(), "9".into());
        let m = model("0.10.2");
        Jax.import(ctx, &m, &mut p);
        Jax.first_use(ctx, &m, &mut p);
        assert!(p.paths().iter().any(|x| Path::new(x) == cudnn));
        Jax.checks(ctx, &m, &p)
    });
    assert!(checks.is_empty(), "{checks:?}");
}
