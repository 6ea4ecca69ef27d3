//! Every finding code, one input that fires it and one near miss that does not, in one table.
//!
//! A row is either a pair of command lines run here (the fixtures, a few files made in a temporary directory,
//! a snapshot edited field by field), or, where firing needs inputs another module builds (programs compiled
//! with `cc`, a fake libcuda, a copy of a host tree with other file modes), the tests in that module that hold
//! the firing case and the near miss, and why they live there. `every_code_has_a_row` fails when a code of the
//! catalogue has none; `referenced_tests_name_their_code` when a named test is renamed away, is not a test, or
//! its body (or a helper of its file that it calls) never names the code it is said to fire or miss.

use assert_cmd::Command;
use cudadiag::findings::{CATALOGUE, Code};
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::support::cli;
use crate::support::rust_source::{Source, mentions};

/// How a code is shown to fire and not to.
enum Case {
    /// `cudadiag ARGS --format json`, twice: the code is among the first run's findings and not the second's.
    /// Arguments: `@host:CASE` expands to the host fixture's `--root`, `--clear-env` and `--env` lines,
    /// `@tmp/` to the test's temporary directory, a leading `fixtures/` to the repository's fixtures.
    Run {
        fire: &'static [&'static str],
        miss: &'static [&'static str],
    },
    /// Tested in another module: `file::test` of the firing case and of the near miss, and why there.
    Elsewhere {
        fire: &'static str,
        miss: &'static str,
        why: &'static str,
    },
}

const TABLE: &[(&str, Case)] = &[
    (
        "no-kernel-image",
        Case::Run {
            fire: &[
                "inspect",
                "--no-host",
                "--gpu",
                "9.0",
                "--driver",
                "580.65.06",
                "fixtures/cuda13/sm80",
            ],
            miss: &[
                "inspect",
                "--no-host",
                "--gpu",
                "8.0",
                "--driver",
                "580.65.06",
                "fixtures/cuda13/sm80",
            ],
        },
    ),
    (
        "ptx-jit-required",
        Case::Run {
            fire: &[
                "inspect",
                "--no-host",
                "--gpu",
                "8.0",
                "--driver",
                "580.65.06",
                "fixtures/cuda13/default",
            ],
            miss: &[
                "inspect",
                "--no-host",
                "--gpu",
                "7.5",
                "--driver",
                "580.65.06",
                "fixtures/cuda13/default",
            ],
        },
    ),
    (
        "ptx-too-new",
        Case::Run {
            fire: &[
                "inspect",
                "--no-host",
                "--gpu",
                "9.0",
                "--driver",
                "550.90.07",
                "fixtures/cuda13/ptx_only",
            ],
            miss: &[
                "inspect",
                "--no-host",
                "--gpu",
                "9.0",
                "--driver",
                "580.65.06",
                "fixtures/cuda13/ptx_only",
            ],
        },
    ),
    (
        "no-device-code",
        Case::Run {
            fire: &["inspect", "@host:healthy", "fixtures/cuda13/uses_libkern"],
            miss: &["inspect", "@host:healthy", "fixtures/cuda13/default"],
        },
    ),
    (
        "malformed-device-code",
        Case::Run {
            fire: &["inspect", "--no-host", "@tmp/bad.fatbin"],
            miss: &["inspect", "--no-host", "fixtures/cuda13/kern.fatbin"],
        },
    ),
    (
        "malformed-binary",
        Case::Run {
            fire: &["inspect", "--no-host", "@tmp/truncated"],
            miss: &["inspect", "--no-host", "fixtures/cuda13/default"],
        },
    ),
    (
        "unrecognized-input",
        Case::Run {
            fire: &["inspect", "--no-host", "@tmp/notes.txt"],
            miss: &["inspect", "--no-host", "fixtures/cuda13/kern.fatbin"],
        },
    ),
    (
        "input-unreadable",
        Case::Elsewhere {
            fire: "audit.rs::unreadable_inputs_fail_the_audit_as_input_unreadable",
            miss: "audit.rs::unreadable_inputs_fail_the_audit_as_input_unreadable",
            why: "an unreadable file needs a mode root ignores; the audit test makes one where the walk meets it",
        },
    ),
    (
        "ptx-jit-disabled",
        Case::Run {
            fire: &[
                "inspect",
                "@host:healthy",
                "--env",
                "CUDA_DISABLE_PTX_JIT=1",
                "fixtures/cuda13/ptx_only",
            ],
            miss: &["inspect", "@host:healthy", "fixtures/cuda13/ptx_only"],
        },
    ),
    (
        "ptx-jit-cache-only",
        Case::Elsewhere {
            fire: "verdict_fixtures.rs::ptx_only_under_disabled_jit_depends_on_the_cache",
            miss: "verdict_fixtures.rs::ptx_only_under_disabled_jit_depends_on_the_cache",
            why: "needs a JIT cache directory with entries, which that test writes beside the facts",
        },
    ),
    (
        "foreign-architecture",
        Case::Run {
            fire: &["inspect", "@host:jetson", "fixtures/cuda13/default"],
            miss: &["inspect", "@host:healthy", "fixtures/cuda13/default"],
        },
    ),
    (
        "ptxas-too-old",
        Case::Elsewhere {
            fire: "ptxas.rs::a_cuda_11_7_ptxas_on_path_is_too_old_for_an_h100",
            miss: "ptxas.rs::a_ptxas_new_enough_for_the_gpu_is_no_finding",
            why: "needs a ptxas built with cc (its --version banner in .rodata) in a copy of the healthy tree",
        },
    ),
    (
        "library-not-found",
        Case::Run {
            fire: &["inspect", "@host:healthy", "fixtures/cuda13/default"],
            miss: &["inspect", "@host:jetson", "fixtures/cuda13/default"],
        },
    ),
    (
        "library-shadowed",
        Case::Elsewhere {
            fire: "loader_scenarios.rs::ld_library_path_shadows_a_wheel_runpath_and_a_symbol_goes_missing",
            miss: "loader_scenarios.rs::rpath_before_ld_library_path_before_runpath",
            why: "needs programs and libraries built with cc (support::loader_build)",
        },
    ),
    (
        "symbol-version-missing",
        Case::Elsewhere {
            fire: "loader_scenarios.rs::a_versioned_symbol_missing_from_the_provider",
            miss: "loader_scenarios.rs::a_version_the_provider_does_not_define",
            why: "needs programs and libraries built with cc (support::loader_build)",
        },
    ),
    (
        "multiple-cuda-majors",
        Case::Elsewhere {
            fire: "loader_scenarios.rs::two_cuda_majors_in_one_process",
            miss: "audit.rs::a_declared_dependency_counts_for_cuda_majors_and_mixed_majors",
            why: "needs libraries of two CUDA majors built with cc",
        },
    ),
    (
        "glibc-too-old",
        Case::Elsewhere {
            fire: "loader_scenarios.rs::a_glibc_older_than_the_process_needs",
            miss: "loader_scenarios.rs::a_libc_missing_an_older_version_is_symbol_version_missing",
            why: "needs a libc built with cc that defines fewer GLIBC_ versions",
        },
    ),
    (
        "duplicate-cuda-library",
        Case::Elsewhere {
            fire: "loader_scenarios.rs::a_vendored_and_a_plain_cudart_are_two_copies",
            miss: "loader_scenarios.rs::a_vendored_and_a_plain_cudart_are_two_copies",
            why: "needs two cudart copies built with cc loaded into one tree",
        },
    ),
    (
        "cuda-library-too-old",
        Case::Elsewhere {
            fire: "loader_cli.rs::an_older_cudnn_than_torch_pins_is_cuda_library_too_old",
            miss: "loader_cli.rs::a_cudnn_that_meets_the_requirement_is_not_too_old",
            why: "needs a pip site-packages tree with METADATA pins and RECORDs, and libraries built with cc",
        },
    ),
    (
        "jax-plugin-version-mismatch",
        Case::Elsewhere {
            fire: "python_env.rs::jax_upgraded_alone_is_jax_plugin_version_mismatch",
            miss: "python_env.rs::jax_of_one_release_is_no_mismatch",
            why: "needs a site-packages tree with dist-info METADATA pins around a library built with cc",
        },
    ),
    (
        "framework-extension-abi-mismatch",
        Case::Elsewhere {
            fire: "python_env.rs::torch_upgraded_under_torchvision_is_framework_extension_abi_mismatch",
            miss: "python_env.rs::the_pinned_torch_or_no_exact_pin_is_no_abi_mismatch",
            why: "needs a site-packages tree with dist-info METADATA pins around a library built with cc",
        },
    ),
    (
        "cpu-only-framework-build",
        Case::Elsewhere {
            fire: "python_env.rs::torch_cpu_wheel_on_a_gpu_machine_is_cpu_only_framework_build",
            miss: "python_env.rs::torch_cpu_without_a_gpu_or_a_cuda_build_is_no_cpu_only_finding",
            why: "needs a site-packages tree with dist-info METADATA around a library built with cc",
        },
    ),
    (
        "nccl-cuda-mismatch",
        Case::Elsewhere {
            fire: "nccl.rs::nccl_for_cuda_11_beside_the_cuda_12_runtime_is_a_mismatch",
            miss: "nccl.rs::nccl_for_the_runtime_s_own_major_is_no_finding",
            why: "needs a libnccl.so.2 with NCCL's version string and a libcudart.so.N, built with cc",
        },
    ),
    (
        "framework-cpu-fallback",
        Case::Elsewhere {
            fire: "python_import.rs::no_driver_library_is_a_cpu_fallback",
            miss: "python_import.rs::a_healthy_torch_venv_imports_and_uses_the_gpu_with_no_finding",
            why: "needs a venv with torch's layout and its NVIDIA wheels, libraries built with cc",
        },
    ),
    (
        "framework-version-check",
        Case::Elsewhere {
            fire: "python_import.rs::a_missing_cudnn_wheel_with_an_older_system_copy_is_a_version_check_warning_not_a_failure",
            miss: "python_import.rs::a_healthy_torch_venv_imports_and_uses_the_gpu_with_no_finding",
            why: "needs a venv with torch's layout and its NVIDIA wheels, libraries built with cc, and an ld.so.cache",
        },
    ),
    (
        "loaded-by-framework",
        Case::Elsewhere {
            fire: "python_inspect_file.rs::a_torch_extension_is_judged_with_the_wheels_torch_preloads",
            miss: "python_inspect_file.rs::a_framework_file_outside_any_environment_is_judged_alone",
            why: "needs a venv with torch's layout, its NVIDIA wheels and an interpreter, libraries built with cc",
        },
    ),
    (
        "framework-not-installed",
        Case::Elsewhere {
            fire: "python_import.rs::a_venv_without_torch_is_framework_not_installed_and_fails",
            miss: "python_import.rs::a_venv_without_torch_is_framework_not_installed_and_fails",
            why: "needs a venv with an interpreter, libraries built with cc, and an ld.so.cache",
        },
    ),
    (
        "framework-raises",
        Case::Elsewhere {
            fire: "image_import.rs::image_python_import_that_raises_with_no_finding_of_its_own_fails_naming_the_exception",
            miss: "image_import.rs::image_python_import_that_raises_with_no_finding_of_its_own_fails_naming_the_exception",
            why: "needs an image with a venv, an interpreter built with cc and JAX's dist-infos, as a docker save tarball",
        },
    ),
    (
        "no-driver",
        Case::Run {
            fire: &["doctor", "@host:nouveau"],
            miss: &["doctor", "@host:healthy"],
        },
    ),
    (
        "libcuda-not-found",
        Case::Run {
            fire: &["doctor", "@host:ld-cache-missing"],
            miss: &["doctor", "@host:healthy"],
        },
    ),
    (
        "driver-insufficient",
        Case::Run {
            fire: &[
                "inspect",
                "--no-host",
                "--driver",
                "550.90.07",
                "fixtures/cuda13/default",
            ],
            miss: &[
                "inspect",
                "--no-host",
                "--driver",
                "580.65.06",
                "fixtures/cuda13/default",
            ],
        },
    ),
    (
        "minor-version-compat",
        Case::Run {
            fire: &[
                "inspect",
                "--no-host",
                "--driver",
                "535.104.05",
                "fixtures/old/cu124_sm90.cubin",
            ],
            miss: &[
                "inspect",
                "--no-host",
                "--driver",
                "550.90.07",
                "fixtures/old/cu124_sm90.cubin",
            ],
        },
    ),
    (
        "driver-library-mismatch",
        Case::Run {
            fire: &["doctor", "@host:driver-upgraded-no-reboot"],
            miss: &["doctor", "@host:healthy"],
        },
    ),
    (
        "compat-libcuda-unsupported",
        Case::Run {
            fire: &["doctor", "@host:compat-on-geforce"],
            miss: &["doctor", "@host:healthy"],
        },
    ),
    (
        "stub-libcuda",
        Case::Run {
            fire: &["doctor", "@host:stub-first"],
            miss: &["doctor", "@host:healthy"],
        },
    ),
    (
        "gpu-unsupported-by-driver",
        Case::Run {
            fire: &[
                "inspect",
                "--no-host",
                "--gpu",
                "3.5",
                "--driver",
                "580.65.06",
                "fixtures/cuda13/default",
            ],
            miss: &[
                "inspect",
                "--no-host",
                "--gpu",
                "9.0",
                "--driver",
                "580.65.06",
                "fixtures/cuda13/default",
            ],
        },
    ),
    (
        "driver-library-damaged",
        Case::Elsewhere {
            fire: "host.rs::empty_or_truncated_driver_libraries_are_damaged",
            miss: "host.rs::empty_or_truncated_driver_libraries_are_damaged",
            why: "needs a copy of a host tree with empty and cut-short driver libraries, which that test writes",
        },
    ),
    (
        "cdi-spec-stale",
        Case::Elsewhere {
            fire: "host.rs::a_cdi_spec_for_another_driver_is_stale",
            miss: "host.rs::a_cdi_spec_for_another_driver_is_stale",
            why: "needs a CDI spec written into a copy of the healthy tree",
        },
    ),
    (
        "secure-boot-blocks-module",
        Case::Elsewhere {
            fire: "secure_boot.rs::an_unsigned_module_under_secure_boot_is_refused",
            miss: "secure_boot.rs::a_signed_module_or_secure_boot_off_is_no_finding",
            why: "needs a copy of a host tree with the EFI variable and a module file written into it",
        },
    ),
    (
        "container-toolkit-missing",
        Case::Elsewhere {
            fire: "node_services.rs::docker_without_the_container_toolkit_is_reported",
            miss: "node_services.rs::the_container_toolkit_installed_or_inside_a_container_is_no_finding",
            why: "needs a copy of a host tree with an engine's and the toolkit's files written into it",
        },
    ),
    (
        "fabric-manager-not-running",
        Case::Elsewhere {
            fire: "node_services.rs::nvswitches_without_fabric_manager_fail_cuda_with_802",
            miss: "node_services.rs::fabric_manager_running_or_no_nvswitch_is_no_finding",
            why: "needs a copy of a host tree with an NVSwitch's PCI function and /proc processes written into it",
        },
    ),
    (
        "no-visible-devices",
        Case::Run {
            fire: &["doctor", "@host:healthy", "--env", "CUDA_VISIBLE_DEVICES=7"],
            miss: &["doctor", "@host:healthy", "--env", "CUDA_VISIBLE_DEVICES=0"],
        },
    ),
    (
        "device-nodes-missing",
        Case::Run {
            fire: &["doctor", "@host:container-no-gpu"],
            miss: &["doctor", "@host:healthy"],
        },
    ),
    (
        "device-permission-denied",
        Case::Elsewhere {
            fire: "host.rs::device_permission_denied_on_a_copy_of_the_healthy_tree",
            miss: "host.rs::device_permission_denied_on_a_copy_of_the_healthy_tree",
            why: "needs a copy of the healthy tree with another uid and node modes (git keeps no file modes)",
        },
    ),
    (
        "nvidia-uvm-missing",
        Case::Run {
            fire: &["doctor", "@host:uvm-missing"],
            miss: &["doctor", "@host:healthy"],
        },
    ),
    (
        "nouveau-loaded",
        Case::Run {
            fire: &["doctor", "@host:nouveau"],
            miss: &["doctor", "@host:healthy"],
        },
    ),
    (
        "no-gpu",
        Case::Elsewhere {
            fire: "host_rules.rs::no_gpu_fires_when_nothing_is_visible",
            miss: "host.rs::a_container_without_sys_or_driver_is_no_driver_not_no_gpu",
            why: "needs a PCI bus that was read and lists no NVIDIA device, which those tests build as facts",
        },
    ),
    (
        "device-order-mismatch",
        Case::Run {
            fire: &["doctor", "--facts", "@tmp/two-models.json"],
            miss: &["doctor", "--facts", "@tmp/two-models-pci-order.json"],
        },
    ),
    (
        "probe-failed",
        Case::Elsewhere {
            fire: "probe.rs::a_crash_in_the_driver_is_a_finding_not_a_crash",
            miss: "probe.rs::inspect_probe_loads_each_fatbin_and_reports_the_drivers_answer",
            why: "needs the live probe, run against fake CUDA libraries built with cc",
        },
    ),
    (
        "probe-disagrees",
        Case::Elsewhere {
            fire: "probe/tests.rs::stub_predicted_but_init_succeeded_disagrees",
            miss: "probe/tests.rs::module_209_confirms_no_kernel_image_of_that_binary_only",
            why: "needs probe facts beside static findings; the rule's unit tests build both",
        },
    ),
    (
        "policy-missing-arch",
        Case::Run {
            fire: &[
                "audit",
                "--policy",
                "@tmp/sass-sm90a.toml",
                "fixtures/cuda13/sm80",
            ],
            miss: &["audit", "--policy", "@tmp/sass-sm80.toml", "fixtures/cuda13/sm80"],
        },
    ),
    (
        "policy-missing-ptx",
        Case::Run {
            fire: &[
                "audit",
                "--policy",
                "@tmp/ptx-compute90.toml",
                "fixtures/cuda13/ptx_only",
            ],
            miss: &[
                "audit",
                "--policy",
                "@tmp/ptx-compute80.toml",
                "fixtures/cuda13/ptx_only",
            ],
        },
    ),
    (
        "policy-min-driver",
        Case::Run {
            fire: &[
                "audit",
                "--policy",
                "@tmp/driver-535.toml",
                "fixtures/cuda13/sm80",
            ],
            miss: &[
                "audit",
                "--policy",
                "@tmp/driver-580.toml",
                "fixtures/cuda13/sm80",
            ],
        },
    ),
    (
        "policy-forbidden-library",
        Case::Run {
            fire: &["audit", "--policy", "@tmp/empty.toml", "@tmp/ships-libcuda"],
            miss: &["audit", "--policy", "@tmp/empty.toml", "@tmp/ships-libkern"],
        },
    ),
    (
        "waiver-unused",
        Case::Run {
            fire: &[
                "audit",
                "--policy",
                "@tmp/waive-forbidden.toml",
                "@tmp/ships-libkern",
            ],
            miss: &[
                "audit",
                "--policy",
                "@tmp/waive-forbidden.toml",
                "@tmp/ships-libcuda",
            ],
        },
    ),
    (
        "waiver-expired",
        Case::Run {
            fire: &[
                "audit",
                "--policy",
                "@tmp/waive-forbidden-expired.toml",
                "@tmp/ships-libcuda",
            ],
            miss: &[
                "audit",
                "--policy",
                "@tmp/waive-forbidden.toml",
                "@tmp/ships-libcuda",
            ],
        },
    ),
    (
        "policy-glibc",
        Case::Run {
            fire: &[
                "audit",
                "--policy",
                "@tmp/glibc-2.17.toml",
                "fixtures/cuda13/default",
            ],
            miss: &[
                "audit",
                "--policy",
                "@tmp/glibc-2.39.toml",
                "fixtures/cuda13/default",
            ],
        },
    ),
    (
        "container-requirement-unmet",
        Case::Elsewhere {
            fire: "container/tests.rs::an_unsatisfied_cuda_requirement_is_a_finding_with_the_toolkit_message",
            miss: "container/tests.rs::an_unsatisfied_cuda_requirement_is_a_finding_with_the_toolkit_message",
            why: "the toolkit's rules are a pure function of an image's environment and a node's facts; the unit \
                  tests run the real base images' NVIDIA_REQUIRE_CUDA against real drivers and GPUs",
        },
    ),
    (
        "container-config-invalid",
        Case::Elsewhere {
            fire: "container/tests.rs::invalid_expressions_stop_the_container",
            miss: "container/tests.rs::invalid_expressions_stop_the_container",
            why: "an image environment the toolkit rejects; the unit test holds the same property written validly",
        },
    ),
    (
        "container-compute-missing",
        Case::Elsewhere {
            fire: "container/tests.rs::capabilities_decide_what_is_injected",
            miss: "container/tests.rs::capabilities_decide_what_is_injected",
            why: "NVIDIA_DRIVER_CAPABILITIES=utility against the default utility,compute, in one unit test",
        },
    ),
    (
        "container-no-gpu-access",
        Case::Elsewhere {
            fire: "container/tests.rs::visible_devices_decide_whether_the_toolkit_acts",
            miss: "container/tests.rs::visible_devices_decide_whether_the_toolkit_acts",
            why: "NVIDIA_VISIBLE_DEVICES void, none and unset against indices and UUIDs the node has",
        },
    ),
    (
        "container-unknown-device",
        Case::Elsewhere {
            fire: "container/tests.rs::visible_devices_decide_whether_the_toolkit_acts",
            miss: "container/tests.rs::visible_devices_decide_whether_the_toolkit_acts",
            why: "an index the node lacks against one it has, in one unit test",
        },
    ),
    (
        "container-user-unknown",
        Case::Elsewhere {
            fire: "image_hostile.rs::class8_an_image_user_absent_from_its_passwd_is_reported",
            miss: "image_hostile.rs::class8_an_image_user_absent_from_its_passwd_is_reported",
            why: "an image is built for it: User app absent from its passwd, against a numeric User",
        },
    ),
    (
        "container-user-unchecked",
        Case::Elsewhere {
            fire: "image_hostile.rs::class8_a_passwd_over_the_cap_gives_a_note",
            miss: "image_hostile.rs::class8_an_image_user_absent_from_its_passwd_is_reported",
            why: "an image is built for it: a 1.9 MB passwd, against a small one",
        },
    ),
    (
        "container-gpus-from-run",
        Case::Elsewhere {
            fire: "image_run.rs::an_image_without_nvidia_visible_devices_is_judged_as_run_with_gpus",
            miss: "image_run.rs::an_image_without_nvidia_visible_devices_is_judged_as_run_with_gpus",
            why: "an image without NVIDIA_VISIBLE_DEVICES run by default against the same image with it, and with --gpus none",
        },
    ),
    (
        "gpu-fallen-off-bus",
        Case::Elsewhere {
            fire: "node_services.rs::xid_79_since_the_last_boot_is_a_gpu_fallen_off_the_bus",
            miss: "node_services.rs::xid_79_before_the_last_boot_is_no_finding",
            why: "needs a copy of a host tree with a kernel log written into it",
        },
    ),
    (
        "gpu-xid-reported",
        Case::Elsewhere {
            fire: "node_services.rs::other_xids_are_reported_with_their_catalogue_meaning",
            miss: "node_services.rs::a_kernel_log_without_xid_is_no_finding",
            why: "needs a copy of a host tree with a kernel log written into it",
        },
    ),
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files the `@tmp/` arguments name.
fn write_inputs(tmp: &Path) {
    let fixture = |p: &str| std::fs::read(repo().join(p)).unwrap();
    let mut fatbin = fixture("fixtures/cuda13/kern.fatbin");
    // The first entry's payload size, far past the end of the file.
    fatbin[40..48].copy_from_slice(&[0xff; 8]);
    std::fs::write(tmp.join("bad.fatbin"), fatbin).unwrap();
    std::fs::write(tmp.join("truncated"), &fixture("fixtures/cuda13/default")[..200]).unwrap();
    std::fs::write(tmp.join("notes.txt"), "release notes\n").unwrap();
    for (dir, name) in [("ships-libcuda", "libcuda.so.1"), ("ships-libkern", "libkern.so")] {
        std::fs::create_dir_all(tmp.join(dir)).unwrap();
        std::fs::write(tmp.join(dir).join(name), fixture("fixtures/cuda13/libkern.so")).unwrap();
    }
    let waiver = "[[waiver]]\ncode = \"policy-forbidden-library\"\nreason = \"test rig only\"\n";
    for (name, text) in [
        ("sass-sm90a.toml", "[targets]\nsass = [\"sm_90a\"]\n".to_string()),
        ("sass-sm80.toml", "[targets]\nsass = [\"sm_80\"]\n".into()),
        ("ptx-compute90.toml", "[targets]\nptx = \"compute_90\"\n".into()),
        ("ptx-compute80.toml", "[targets]\nptx = \"compute_80\"\n".into()),
        (
            "driver-535.toml",
            "[targets]\nmin-driver = \"535.104.05\"\n".into(),
        ),
        (
            "driver-580.toml",
            "[targets]\nmin-driver = \"580.65.06\"\n".into(),
        ),
        ("glibc-2.17.toml", "[targets]\nglibc = \"2.17\"\n".into()),
        ("glibc-2.39.toml", "[targets]\nglibc = \"2.39\"\n".into()),
        ("empty.toml", String::new()),
        ("waive-forbidden.toml", waiver.to_string()),
        (
            "waive-forbidden-expired.toml",
            format!("{waiver}expires = \"2020-01-01\"\n"),
        ),
    ] {
        std::fs::write(tmp.join(name), text).unwrap();
    }
    // A snapshot of the healthy machine with two GPU models and an index in CUDA_VISIBLE_DEVICES.
    let mut snap: Value = serde_json::from_slice(
        &Command::cargo_bin("cudadiag")
            .unwrap()
            .args(["snapshot", "-o", "-"])
            .args(expand(&["@host:healthy"], tmp))
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let host = snap
        .pointer_mut("/facts/host")
        .expect("a snapshot has host facts");
    host["gpus"][1]["name"] = "NVIDIA L4".into();
    host["env"]["vars"]["CUDA_VISIBLE_DEVICES"] = "0".into();
    std::fs::write(tmp.join("two-models.json"), snap.to_string()).unwrap();
    snap["facts"]["host"]["env"]["vars"]["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID".into();
    std::fs::write(tmp.join("two-models-pci-order.json"), snap.to_string()).unwrap();
}

fn expand(args: &[&str], tmp: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for a in args {
        if let Some(case) = a.strip_prefix("@host:") {
            let dir = repo().join("fixtures/hosts").join(case);
            out.extend([
                "--root".to_string(),
                dir.join("root").display().to_string(),
                "--clear-env".into(),
            ]);
            let env = std::fs::read_to_string(dir.join("env")).unwrap();
            for l in env.lines().filter(|l| !l.is_empty()) {
                out.extend(["--env".to_string(), l.to_string()]);
            }
        } else if let Some(rest) = a.strip_prefix("@tmp/") {
            out.push(tmp.join(rest).display().to_string());
        } else if a.starts_with("fixtures/") {
            out.push(repo().join(a).display().to_string());
        } else {
            out.push(a.to_string());
        }
    }
    out
}

fn slugs(args: &[String]) -> Vec<String> {
    cli::slugs(&cli::json(
        args.iter().map(String::as_str).chain(["--format", "json"]),
    ))
}

#[test]
fn every_code_has_a_row() {
    let missing: Vec<&str> = CATALOGUE
        .iter()
        .filter(|c| !TABLE.iter().any(|(s, _)| *s == c.slug))
        .map(|c| c.slug)
        .collect();
    assert!(
        missing.is_empty(),
        "codes with no row in tests/it/code_table.rs: {missing:?}"
    );
    for (slug, _) in TABLE {
        assert!(
            CATALOGUE.iter().any(|c| c.slug == *slug),
            "{slug} is not a catalogue slug"
        );
    }
}

#[test]
fn each_code_fires_on_its_input_and_not_on_its_near_miss() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let mut wrong = Vec::new();
    for (slug, case) in TABLE {
        let Case::Run { fire, miss } = case else { continue };
        let fired = slugs(&expand(fire, dir.path()));
        if !fired.iter().any(|s| s == slug) {
            wrong.push(format!("{slug} does not fire on {fire:?} (got {fired:?})"));
        }
        let missed = slugs(&expand(miss, dir.path()));
        if missed.iter().any(|s| s == slug) {
            wrong.push(format!("{slug} fires on its near miss {miss:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The source file a reference `file::test` points into: integration tests here, a rule's or the container
/// module's unit tests under `src/`.
fn referenced_file(file: &str) -> PathBuf {
    if file.starts_with("probe/") {
        repo().join("src/rules").join(file)
    } else if file.starts_with("container/") {
        repo().join("src").join(file)
    } else {
        repo().join("tests/it").join(file)
    }
}

/// What is wrong with `reference` as the test that fires (or misses) `slug`: it must be a `#[test]`, not
/// ignored, whose body (comments removed), or the body of a function of its file that it calls, names the
/// code (its slug, `Code::Variant` or `CDnnn`) that it checks for. A function merely existing under that name
/// proves nothing about the code.
fn reference_problem(slug: &str, reference: &str) -> Option<String> {
    let entry = CATALOGUE.iter().find(|c| c.slug == slug)?;
    let Some((file, test)) = reference.split_once("::") else {
        return Some(format!("{slug}: {reference} is not file.rs::test"));
    };
    let path = referenced_file(file);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return Some(format!("{slug}: {}: {e}", path.display())),
    };
    let src = Source::new(&text);
    let Some(f) = src.function(test) else {
        return Some(format!("{slug}: no function {test} in {}", path.display()));
    };
    if !f.attributes.lines().any(|l| l.trim() == "#[test]") || f.attributes.contains("ignore") {
        return Some(format!(
            "{slug}: {reference} is not a test that runs: {:?}",
            f.attributes
        ));
    }
    let variant = Code::parse(slug).map(|c| format!("Code::{c:?}"));
    let names = [Some(slug.to_string()), variant, Some(entry.code.to_string())];
    let names: Vec<String> = names.into_iter().flatten().collect();
    let says = |body: &str| names.iter().any(|n| mentions(body, n));
    if says(&f.body) {
        return None;
    }
    // One level of the file's own helpers (`too_old(&doc)` filtering findings by slug).
    let called = src
        .function_names()
        .into_iter()
        .filter(|n| n != test && calls(&f.body, n))
        .filter_map(|n| src.function(&n))
        .any(|h| says(&h.body));
    (!called).then(|| format!("{slug}: the body of {reference} never names {names:?}"))
}

/// Whether `body` calls the function `name` (`name(`, not as the tail of a longer name or a method).
fn calls(body: &str, name: &str) -> bool {
    body.match_indices(&format!("{name}(")).any(|(p, _)| {
        let before = body[..p].chars().next_back();
        before.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
    })
}

#[test]
fn referenced_tests_name_their_code() {
    let mut wrong = Vec::new();
    for (slug, case) in TABLE {
        let Case::Elsewhere { fire, miss, why } = case else {
            continue;
        };
        if why.is_empty() {
            wrong.push(format!("{slug}: say why the case lives elsewhere"));
        }
        wrong.extend(
            [fire, miss]
                .into_iter()
                .filter_map(|r| reference_problem(slug, r)),
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The check itself: a test that exists but never produces the code is refused (the old CD206 row named
/// `golden_missing_library`, a golden transcript of `library-not-found`), as is a function that is no test.
#[test]
fn a_reference_to_a_test_that_does_not_produce_the_code_is_refused() {
    let refused = reference_problem("cuda-library-too-old", "loader_cli.rs::golden_missing_library");
    assert!(refused.is_some_and(|p| p.contains("never names")));
    let helper = reference_problem("cuda-library-too-old", "loader_cli.rs::too_old");
    assert!(helper.is_some_and(|p| p.contains("not a test")));
    let gone = reference_problem("no-gpu", "host.rs::no_such_test");
    assert!(gone.is_some_and(|p| p.contains("no function")));
    assert_eq!(
        reference_problem(
            "cuda-library-too-old",
            "loader_cli.rs::a_cudnn_that_meets_the_requirement_is_not_too_old"
        ),
        None,
        "a near miss that filters by the slug in a helper of its file counts"
    );
}
