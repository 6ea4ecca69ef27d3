//! The matcher on messages as the tools print them (the corpus test, tests/it/explain_corpus.rs, measures it
//! on real threads; these pin the reading of each form).

use super::*;

fn dx(text: &str) -> Diagnosis {
    let m = Matrix::bundled().unwrap();
    diagnose(text, &m)
}

fn top(text: &str) -> (&'static str, Confidence) {
    let d = dx(text);
    let c = d
        .candidates
        .first()
        .unwrap_or_else(|| panic!("nothing for {text:?}"));
    (c.slug, c.confidence)
}

fn slugs(text: &str) -> Vec<&'static str> {
    dx(text).candidates.iter().map(|c| c.slug).collect()
}

#[test]
fn the_phrase_table_is_valid() {
    let p = known::parse_phrases(known::PHRASES_TOML).unwrap();
    assert!(p.len() > 50);
    let bad = known::PHRASES_TOML.replacen("slug = \"no-driver\"", "slug = \"no-such-cause\"", 1);
    assert!(known::parse_phrases(&bad).unwrap_err().contains("no-such-cause"));
    let upper = known::PHRASES_TOML.replacen("found no nvidia driver", "Found no NVIDIA driver", 1);
    assert!(known::parse_phrases(&upper).is_err());
}

#[test]
fn nvml_unknown_error_in_a_container_is_lost_device_rules_not_uvm() {
    let d = dx("root@098b49afe624:/# nvidia-smi\nFailed to initialize NVML: Unknown Error");
    assert_eq!(d.candidates[0].slug, "container-lost-device-rules");
    // NVML's "Unknown Error" is not CUDA's 999.
    assert!(d.read.errors.is_empty(), "{:?}", d.read.errors);
    assert!(!slugs("Failed to initialize NVML: Unknown Error").contains(&"nvidia-uvm-missing"));
}

#[test]
fn driver_error_failed_to_process_request_is_the_driver_root_not_an_old_driver() {
    let text = "docker: Error response from daemon: failed to create task for container: OCI runtime create \
                failed: nvidia-container-cli: initialization error: driver error: failed to process request: unknown.";
    assert_eq!(top(text).0, "container-driver-root-empty");
    assert!(!slugs(text).contains(&"driver-insufficient"));
}

#[test]
fn torch_extension_undefined_symbol_is_the_framework_abi_not_cuda() {
    let text = "ImportError: /venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: \
                undefined symbol: _ZN3c104cuda9SetDeviceEi";
    assert_eq!(top(text), ("framework-extension-abi-mismatch", Confidence::High));
    let text = "undefined symbol: _ZN5torch7Library4_defEN3c1014FunctionSchemaEPNS_11CppFunctionE";
    assert_eq!(top(text).0, "framework-extension-abi-mismatch");
    // Near miss: a CUDA symbol is a CUDA library mix-up.
    assert_eq!(
        top("libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12").0,
        "symbol-version-missing"
    );
}

#[test]
fn old_cuda_majors_name_their_release() {
    let d = dx("ImportError: libcublas.so.11: cannot open shared object file: No such file or directory");
    let c = &d.candidates[0];
    assert_eq!(c.slug, "library-not-found");
    assert_eq!(c.libraries[0].cuda, [11]);
    assert!(c.why[0].contains("cuBLAS of CUDA 11"), "{:?}", c.why);
    let d = dx(
        "Could not load dynamic library 'libcudart.so.10.1'; dlerror: libcudart.so.10.1: cannot open shared object file",
    );
    assert_eq!(d.candidates[0].libraries[0].releases, "CUDA 10.1");
    let d = dx(
        "Could not load dynamic library 'libcusparse.so.11'; dlerror: libcusparse.so.11: cannot open shared object file: No such file or directory",
    );
    assert_eq!(d.candidates[0].libraries[0].cuda, [11]);
    let d = dx("OSError: libcudnn.so.8: cannot open shared object file: No such file or directory");
    assert_eq!(d.candidates[0].libraries[0].component, "cuDNN 8");
    assert_eq!(d.candidates[0].libraries[0].cuda, [10, 11, 12]);
}

#[test]
fn the_library_that_failed_is_the_one_before_cannot_open() {
    // ONNX Runtime names its provider first and the missing library after `error:`.
    let d = dx(
        "Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open shared object file: No such file or directory",
    );
    let libs: Vec<&str> = d.candidates[0]
        .libraries
        .iter()
        .map(|l| l.soname.as_str())
        .collect();
    assert_eq!(libs, ["libcublasLt.so.11"]);
    // torch's glob.
    let d = dx("ValueError: libcublas.so.*[0-9] not found in the system path ['/usr/lib/python3.10']");
    assert_eq!(d.candidates[0].slug, "library-not-found");
    // A library that loaded is no failure.
    assert!(
        dx("Successfully opened dynamic library libcudart.so.11.0")
            .candidates
            .is_empty()
    );
}

#[test]
fn error_numbers_pick_the_error_not_success() {
    let d = dx("Check failed: error == cudaSuccess (35 vs. 0)");
    assert_eq!(d.read.errors[0].value, 35);
    assert_eq!(d.candidates[0].slug, "driver-insufficient");
    assert_eq!(
        top("numba.cuda.cudadrv.driver.CudaAPIError: [34] Call to cuInit results in CUDA_ERROR_STUB_LIBRARY")
            .0,
        "stub-libcuda"
    );
    assert_eq!(top("cuInit failed: error 804").0, "compat-libcuda-unsupported");
    assert_eq!(
        top("CUDA error: system not yet initialized").0,
        "fabric-manager-not-running"
    );
}

#[test]
fn versions_carried_in_the_message_decide() {
    let d = dx(
        "The NVIDIA driver on your system is too old (found version 10010). Please update your GPU driver",
    );
    assert_eq!(d.candidates[0].slug, "driver-insufficient");
    assert!(
        d.candidates[0].why.iter().any(|w| w.contains("CUDA 10.1")),
        "{:?}",
        d.candidates[0].why
    );
    let d = dx(
        "Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0.  CuDNN library needs to have matching major version and equal or higher minor version.",
    );
    assert_eq!(d.candidates[0].slug, "cuda-library-too-old");
    assert_eq!(d.read.implied_sonames(), ["libcudnn.so.8"]);
    // A newer major loaded is another copy winning, not one too old.
    let d = dx(
        "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 9, 2) but found runtime version (9, 1, 0).",
    );
    assert_eq!(d.candidates[0].slug, "library-shadowed");
    let d = dx(
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
    );
    assert_eq!(d.candidates[0].slug, "no-kernel-image");
    assert!(
        d.candidates[0]
            .why
            .iter()
            .any(|w| w.contains("sm_120") && w.contains("sm_90"))
    );
    assert_eq!(
        top("TensorFlow was not built with CUDA kernel binaries compatible with compute capability 9.0. CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer.").0,
        "ptx-jit-required"
    );
}

#[test]
fn framework_and_tool_messages() {
    for (text, want) in [
        (
            "UserWarning: CUDA initialization: Found no NVIDIA driver on your system.",
            "no-driver",
        ),
        ("RuntimeError: No CUDA GPUs are available", "no-visible-devices"),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
            "no-driver",
        ),
        (
            "docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].",
            "container-toolkit-missing",
        ),
        (
            "Failed to initialize NVML: Insufficient Permissions",
            "device-permission-denied",
        ),
        (
            "NVRM: The NVIDIA probe routine was not called for 1 device(s). ... NVRM: nouveau has obtained ownership of the device",
            "nouveau-loaded",
        ),
        (
            "RuntimeError: Unable to load cuDNN. Is it installed?",
            "library-not-found",
        ),
        (
            "W gpu_device.cc:1850] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly",
            "library-not-found",
        ),
        (
            "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}",
            "library-not-found",
        ),
        (
            "cuda.pathfinder._dynamic_libs.load_dl_common.DynamicLibNotFoundError: Failure finding \"libnvrtc.so\"",
            "library-not-found",
        ),
        (
            "ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link",
            "wsl-libcuda-not-symlink",
        ),
        (
            "AssertionError: Torch not compiled with CUDA enabled",
            "cpu-only-framework-build",
        ),
        (
            "ptxas fatal   : Value 'sm_89' is not defined for option 'gpu-name'",
            "ptxas-too-old",
        ),
        (
            "RuntimeError: jaxlib version 0.4.20 is newer than and incompatible with jax version 0.4.14. Please update your jax and/or jaxlib packages.",
            "jax-plugin-version-mismatch",
        ),
        (
            "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service",
            "secure-boot-blocks-module",
        ),
        (
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
            "gpu-fallen-off-bus",
        ),
        (
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled cuda error",
            "nccl-cuda-mismatch",
        ),
        (
            "Failed to initialize NVML: Driver/library version mismatch",
            "driver-library-mismatch",
        ),
    ] {
        assert_eq!(top(text).0, want, "{text}");
    }
}

#[test]
fn ambiguous_texts_are_not_stated_with_certainty() {
    // 100 has several causes: the first is not "high".
    let d = dx("cudaGetDeviceCount returned 100 -> no CUDA-capable device is detected");
    assert!(d.candidates.len() > 2);
    assert_ne!(d.candidates[0].confidence, Confidence::High);
    // Nothing known: nothing said.
    assert!(dx("the weather is fine today").candidates.is_empty());
}

#[test]
fn every_slug_voted_for_resolves() {
    // `rank` drops a slug nothing knows; every slug the recognisers use must resolve.
    let src = include_str!("known.rs");
    for part in src.split("hit(\"").skip(1) {
        let slug = part.split('"').next().unwrap_or("");
        assert!(resolve(slug).is_some(), "{slug}");
    }
}

#[test]
fn non_ascii_around_a_library_name_is_no_panic() {
    // The windows around a name are cut on character boundaries.
    let text = format!("{}libcudart.so.12{}", "é".repeat(30), "ü".repeat(30));
    let _ = dx(&text);
    let text = format!(
        "é{}libcudart.so.12: cannot open shared object file",
        "€".repeat(17)
    );
    assert_eq!(dx(&text).candidates[0].slug, "library-not-found");
}

#[test]
fn other_wordings_of_the_same_causes() {
    for (text, want) in [
        (
            "NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)\n    NVRM: has the version 595.84, but this kernel module has",
            "driver-library-mismatch",
        ),
        (
            "XlaRuntimeError: UNIMPLEMENTED: ptxas too old. Falling back to the driver to compile.",
            "ptxas-too-old",
        ),
        (
            "No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
            "cpu-only-framework-build",
        ),
        (
            "torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister",
            "cuda-library-too-old",
        ),
        (
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked against (8, 0, 3)",
            "cuda-library-too-old",
        ),
        (
            "Loading of module with unavailable key is rejected",
            "secure-boot-blocks-module",
        ),
    ] {
        assert_eq!(top(text).0, want, "{text}");
    }
}

#[test]
fn a_paste_of_thousands_of_library_names_stays_bounded() {
    let text: String = (0..20_000)
        .map(|i| format!("libx{i}.so.1: cannot open shared object file\n"))
        .collect();
    let t = std::time::Instant::now();
    let d = dx(&text);
    assert!(d.read.sonames.len() <= read::MAX_NAMES);
    assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
}

#[test]
fn wrapped_lines_read_as_one() {
    assert_eq!(
        top("flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined\n symbol: _ZN3c104impl3cow11cow_deleterEPv").0,
        "framework-extension-abi-mismatch"
    );
    // A prebuilt program's invalid image is most often an older driver (zstd-compressed fatbins need R550).
    assert_eq!(
        top("CUDA error: device kernel image is invalid").0,
        "driver-insufficient"
    );
}

#[test]
fn jax_and_tensorflow_cpu_fall_backs_name_their_cause() {
    // Each printed by a real run (docs/framework-jax-tensorflow.md); none had a candidate before.
    let tf = "cuda_executor.cc:1737] INTERNAL: CUDA Runtime error: Failed call to cudaGetRuntimeVersion: Error \
              loading CUDA libraries. GPU will not be used.";
    assert_eq!(top(tf).0, "library-not-found");
    let jax = "Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()";
    assert_eq!(slugs(jax)[..2], ["library-not-found", "cuda-library-too-old"]);
    let cuinit = "RuntimeError: jaxlib/cuda/versions_helpers.cc:135: operation cuInit(0) failed: Unknown CUDA \
                  error 303; cuGetErrorName failed. This probably means that JAX was unable to load the CUDA \
                  libraries.";
    assert_eq!(top(cuinit).0, "libcuda-not-found");
    let xla = "Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.8.0.  CuDNN library needs to \
               have matching major version and equal or higher minor version.";
    let d = dx(xla);
    assert_eq!(d.candidates[0].slug, "cuda-library-too-old");
    assert!(d.candidates[0].why.iter().any(|w| w.contains("XLA's cuDNN rule")));
}
