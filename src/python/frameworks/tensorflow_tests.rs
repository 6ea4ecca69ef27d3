//! The TensorFlow model on small synthetic environments shaped as `pip install "tensorflow[and-cuda]"` 2.21.0
//! installs them (docs/framework-jax-tensorflow.md records what was observed there).

use super::super::testproc::{FakeProcess, TestEnv};
use super::super::{Framework, Outcome, select};
use super::*;
use crate::findings::Code;
use std::path::Path;

/// build_info.py of the tensorflow 2.21.0 wheel, verbatim.
const BUILD_INFO_2_21: &str = "build_info = collections.OrderedDict([('cpu_compiler', 'clang'), \
     ('cuda_compute_capabilities', ['sm_60', 'sm_70', 'sm_80', 'sm_89', 'compute_90']), ('cuda_version', \
     '12.5.1'), ('cudnn_version', '9'), ('is_cuda_build', True), ('is_rocm_build', False), \
     ('is_tensorrt_build', False)])\n";

/// libtensorflow_framework.so.2's DT_RUNPATH in 2.21.0, each entry once (it has no nvidia/cusolver/lib).
const RUNPATH_2_21: &[&str] = &[
    "nccl",
    "cuda_cupti",
    "cublas",
    "cudnn",
    "cufft",
    "cusparse",
    "cuda_runtime",
    "nvshmem",
];

const WHEELS: &[(&str, &str, &[&str])] = &[
    (
        "nvidia-cuda-runtime-cu12",
        "12.9.79",
        &["nvidia/cuda_runtime/lib/libcudart.so.12"],
    ),
    (
        "nvidia-cublas-cu12",
        "12.9.3.13",
        &[
            "nvidia/cublas/lib/libcublas.so.12",
            "nvidia/cublas/lib/libcublasLt.so.12",
        ],
    ),
    (
        "nvidia-cufft-cu12",
        "11.4.1.4",
        &["nvidia/cufft/lib/libcufft.so.11"],
    ),
    (
        "nvidia-cusolver-cu12",
        "11.7.5.82",
        &["nvidia/cusolver/lib/libcusolver.so.11"],
    ),
    (
        "nvidia-cusparse-cu12",
        "12.5.10.65",
        &["nvidia/cusparse/lib/libcusparse.so.12"],
    ),
    (
        "nvidia-cudnn-cu12",
        "9.28.0.42",
        &["nvidia/cudnn/lib/libcudnn.so.9"],
    ),
];

fn tf_env() -> TestEnv {
    let mut t = TestEnv::new();
    let site = t.site();
    t.install(
        &site,
        "tensorflow",
        "2.21.0",
        &[
            "tensorflow/python/_pywrap_tensorflow_internal.so",
            "tensorflow/libtensorflow_framework.so.2",
        ],
        &[
            "nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == \"and-cuda\"",
            "nvidia-cusolver-cu12<12.0,>=11.6.3.83; extra == \"and-cuda\"",
        ],
    );
    t.file(&site, "tensorflow/python/platform/build_info.py");
    std::fs::write(
        site.join("tensorflow/python/platform/build_info.py"),
        BUILD_INFO_2_21,
    )
    .expect("write");
    for (name, version, files) in WHEELS {
        t.install(&site, name, version, files, &[]);
    }
    let driver = t.dir.path().join("usr/lib");
    t.file(&driver, "libcuda.so.1");
    t
}

/// The process: the extension needs the framework library, whose RUNPATH is `runpath`.
fn process(t: &TestEnv, root: &crate::system::Root, runpath: &[&str]) -> FakeProcess {
    let mut p = FakeProcess::new(root);
    let fw = t.site().join("tensorflow/libtensorflow_framework.so.2");
    p.needed.insert("_pywrap_tensorflow_internal.so".into(), vec![fw]);
    let dirs = runpath
        .iter()
        .map(|d| format!("$ORIGIN/../nvidia/{d}/lib"))
        .collect();
    p.runpaths.insert("libtensorflow_framework.so.2".into(), dirs);
    p.cache.push(t.dir.path().join("usr/lib"));
    p
}

fn run(
    t: &TestEnv,
    runpath: &[&str],
    setup: impl FnOnce(&mut FakeProcess),
) -> (Step, Step, Vec<String>, Vec<Finding>) {
    t.with_ctx(|ctx, root| {
        let mut p = process(t, root, runpath);
        setup(&mut p);
        let m = select("tensorflow", "2.21.0", MODELS).expect("model");
        let import = TensorFlow.import(ctx, &m, &mut p);
        let first = TensorFlow.first_use(ctx, &m, &mut p);
        let checks = TensorFlow.checks(ctx, &m, &p);
        (import, first, p.paths(), checks)
    })
}

fn with_cusolver() -> Vec<&'static str> {
    let mut r = RUNPATH_2_21.to_vec();
    r.push("cusolver");
    r
}

#[test]
fn build_info_gives_the_sonames_tensorflow_dlopens() {
    let b = parse_build_info(BUILD_INFO_2_21).expect("parsed");
    assert_eq!(
        b,
        Build {
            cuda: true,
            cuda_major: 12,
            cudnn_major: 9
        }
    );
    assert_eq!(
        sonames(&b),
        [
            "libcudart.so.12",
            "libcublas.so.12",
            "libcublasLt.so.12",
            "libcufft.so.11",
            "libcusolver.so.11",
            "libcusparse.so.12",
            "libcudnn.so.9"
        ]
    );
    let cuda11 = Build {
        cuda: true,
        cuda_major: 11,
        cudnn_major: 8,
    };
    assert_eq!(sonames(&cuda11)[0], "libcudart.so.11.0");
    assert_eq!(sonames(&cuda11)[3], "libcufft.so.10");
    assert!(parse_build_info("build_info = {}").is_none());
}

#[test]
fn a_runpath_that_reaches_every_wheel_uses_the_gpu() {
    let t = tf_env();
    let (import, first, paths, checks) = run(&t, &with_cusolver(), |_| {});
    assert_eq!(import.outcome, Outcome::Gpu);
    assert_eq!(first.outcome, Outcome::Gpu);
    assert!(checks.is_empty(), "{checks:?}");
    // cudart at import, from the framework's RUNPATH.
    let cudart = paths
        .iter()
        .position(|p| p.ends_with("nvidia/cuda_runtime/lib/libcudart.so.12"));
    let fw = paths
        .iter()
        .position(|p| p.ends_with("libtensorflow_framework.so.2"));
    assert!(fw < cudart && cudart.is_some());
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("nvidia/cudnn/lib/libcudnn.so.9"))
    );
}

#[test]
fn tensorflow_2_21s_runpath_misses_cusolver_and_the_gpu_is_skipped() {
    // Observed without a GPU: DsoLoader::GetCusolverDsoHandle() in a clean 2.21.0 venv logs
    // "Could not load dynamic library 'libcusolver.so.11'" while the other six load from the wheels.
    let t = tf_env();
    let (_, first, _, _) = run(&t, RUNPATH_2_21, |_| {});
    let Outcome::CpuFallback { message, because } = first.outcome else {
        panic!("expected a CPU fall-back");
    };
    let message = message.unwrap_or_default();
    assert!(
        message.starts_with(
            "Could not load dynamic library 'libcusolver.so.11'; dlerror: libcusolver.so.11: cannot open shared \
             object file: No such file or directory\nCannot dlopen some GPU libraries."
        ),
        "{message}"
    );
    assert!(message.ends_with("Skipping registering GPU devices..."));
    assert!(because.contains("will not use the GPU"));
    // The wheel is installed: the fix is the directory TensorFlow's RUNPATH does not reach.
    let dir = t.site().join("nvidia/cusolver/lib");
    assert!(
        because.contains(&format!("export LD_LIBRARY_PATH={}", dir.display())),
        "{because}"
    );
}

#[test]
fn a_missing_cudnn_wheel_is_named_with_tensorflows_pin() {
    let mut t = tf_env();
    t.dists.retain(|d| d.key != "nvidia-cudnn-cu12");
    std::fs::remove_dir_all(t.site().join("nvidia/cudnn")).expect("remove");
    let (_, first, _, _) = run(&t, &with_cusolver(), |_| {});
    let Outcome::CpuFallback { message, because } = first.outcome else {
        panic!("expected a CPU fall-back");
    };
    assert!(
        message
            .unwrap_or_default()
            .contains("Could not load dynamic library 'libcudnn.so.9'")
    );
    assert!(because.contains("nvidia-cudnn-cu12<10.0,>=9.3.0.75"), "{because}");
}

#[test]
fn wheels_on_another_sys_path_entry_are_out_of_the_runpaths_reach() {
    let mut t = tf_env();
    let extra = t.entry("extra");
    std::fs::create_dir_all(extra.join("nvidia")).expect("dir");
    std::fs::rename(t.site().join("nvidia/cudnn"), extra.join("nvidia/cudnn")).expect("move");
    for d in t.dists.iter_mut().filter(|d| d.key == "nvidia-cudnn-cu12") {
        d.site = extra.clone();
    }
    let (_, first, _, _) = run(&t, &with_cusolver(), |_| {});
    let Outcome::CpuFallback { because, .. } = first.outcome else {
        panic!("expected a CPU fall-back");
    };
    assert!(
        because.contains(&format!("{}", extra.join("nvidia/cudnn/lib").display())),
        "{because}"
    );
}

#[test]
fn an_older_cudnn_on_ld_library_path_beats_the_runpath_and_fails_xlas_rule() {
    let mut t = tf_env();
    let old = t.entry("opt/cudnn-9.1/lib");
    t.entries.pop();
    t.file(&old, "libcudnn.so.9");
    t.env.set("LD_LIBRARY_PATH", &old.display().to_string());
    let old_copy = old.join("libcudnn.so.9");
    let (_, first, paths, checks) = run(&t, &with_cusolver(), |p| {
        p.ld_library_path.push(old.clone());
        p.versions.insert(old_copy.clone(), "9.1.0".into());
    });
    assert_eq!(first.outcome, Outcome::Gpu);
    assert!(paths.iter().any(|p| Path::new(p) == old_copy));
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert_eq!(checks[0].code, Code::CudaLibraryTooOld);
    assert!(
        checks[0]
            .message
            .contains("Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.3.0.")
    );
    assert!(checks[0].help.contains("LD_LIBRARY_PATH"));
}

#[test]
fn no_driver_library_means_tensorflows_no_driver_message() {
    let t = tf_env();
    std::fs::remove_file(t.dir.path().join("usr/lib/libcuda.so.1")).expect("remove");
    let (_, first, _, _) = run(&t, &with_cusolver(), |_| {});
    assert!(
        matches!(first.outcome, Outcome::CpuFallback { message: Some(m), .. }
        if m == "Could not find cuda drivers on your machine, GPU will not be used.")
    );
}

#[test]
fn versions_outside_every_model_say_so() {
    let s = select("tensorflow", "2.4.1", MODELS).expect("model");
    assert_eq!(s.index, 0);
    assert!(s.nearest.unwrap_or_default().contains("older"));
    assert!(
        select("tensorflow", "2.21.0", MODELS)
            .expect("model")
            .nearest
            .is_none()
    );
}
