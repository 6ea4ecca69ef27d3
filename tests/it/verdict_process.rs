//! The verdict is for the process (issue 29): a program is judged with every object ld.so maps for it (the
//! device code of each, the CUDA runtime it really loads, each library's own needs), and the first line, the
//! JSON outcome, the findings and the exit status come from that one judgement.
//!
//! The process here is built with `cc` the way a PyTorch install is laid out: a program with no device code
//! of its own (`_C.so`'s place) needs `libkern.so` and `libkern_shmem.so` (`libtorch_cuda.so`'s and
//! `libtorch_nvshmem.so`'s: zstd-compressed SASS for sm_90, built by CUDA 13), which need `libcudart.so.13`, a CUDA 13.2 runtime (its `cudaRuntimeGetVersion` stores 13020, as
//! the `nvidia-cuda-runtime` 13.2.86 wheel's does).

use crate::support::cli::{cudadiag, json_exiting};
use crate::support::loader_build::{cc, lib_from};
use crate::support::{ELF, Entry, container, cubin};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The process: `dir/app` → `dir/lib/libkern{,_shmem}.so` → `dir/lib/libcudart.so.13`. Returns the program's path.
fn torch_like(dir: &Path) -> PathBuf {
    let lib = dir.join("lib");
    let cudart = lib_from(
        &lib,
        "libcudart.so.13",
        "int cudaRuntimeGetVersion(int *v) { *v = 13020; return 0; }\n",
        &[],
        &["-O2"],
    );
    let fatbin = container(&[Entry::zstd(ELF, 90, &cubin(90, "V13.0.88"))], None);
    let bytes: Vec<String> = fatbin.iter().map(|b| b.to_string()).collect();
    // Two libraries with compressed kernels (`libtorch_cuda.so` and `libtorch_nvshmem.so`).
    let kern = |name: &str, func: &str| {
        lib_from(
            &lib,
            name,
            &format!(
                "__attribute__((section(\".nv_fatbin\"), used)) static const unsigned char fatbin[] = {{{}}};\n\
                 int {func}(void) {{ return fatbin[0]; }}\n",
                bytes.join(",")
            ),
            &[&cudart],
            &["-Wl,-rpath,$ORIGIN"],
        )
    };
    let (kern, shmem) = (kern("libkern.so", "kern"), kern("libkern_shmem.so", "shmem"));
    let app = dir.join("app");
    let main = crate::support::loader_build::source(
        dir,
        "main",
        "int kern(void);\nint shmem(void);\nint main(void) { return kern() + shmem(); }\n",
    );
    cc(&[
        "-o",
        app.to_str().unwrap(),
        main.to_str().unwrap(),
        kern.to_str().unwrap(),
        shmem.to_str().unwrap(),
        "-Wl,-rpath,$ORIGIN/lib",
    ]);
    app
}

fn inspect(app: &Path, driver: &str, code: i32) -> (Value, String) {
    let mut args: Vec<String> = vec![
        "inspect".into(),
        "--gpu".into(),
        "9.0".into(),
        "--driver".into(),
        driver.into(),
    ];
    args.push(app.to_string_lossy().into_owned());
    let mut json_args = args.clone();
    json_args.extend(["--format".into(), "json".into()]);
    let report = json_exiting(&json_args, &[code]);
    let human = cudadiag()
        .args(["--color", "never"])
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(human.status.code(), Some(code));
    (report, String::from_utf8_lossy(&human.stdout).into_owned())
}

fn with_slug<'a>(report: &'a Value, slug: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["slug"] == slug)
        .collect()
}

/// Issue 29: `inspect torch/_C…so --driver 535.104.05` printed "will run" above two `driver-insufficient`
/// errors, exit 1, and never named the CUDA 13 runtime the process loads.
#[test]
fn will_run_was_printed_above_the_driver_insufficient_of_a_library_the_process_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let app = torch_like(tmp.path());
    let (report, human) = inspect(&app, "535.104.05", 1);
    let first = human.lines().next().unwrap();
    assert!(first.contains("will fail"), "{first}");
    assert!(first.contains("CUDA 13.2 runtime the process loads"), "{first}");
    assert_eq!(report["verdicts"][0]["outcome"], "fails");
    assert_eq!(report["headlines"][0]["standing"], "fails");
}

/// Issue 29: one driver gave `driver-insufficient` three times (the runtime and each library's compressed
/// code): one cause, one finding, led by the need whose floor is newest.
#[test]
fn driver_insufficient_came_once_per_cause_not_once_per_object() {
    let tmp = tempfile::tempdir().unwrap();
    let app = torch_like(tmp.path());
    let (report, _) = inspect(&app, "535.104.05", 1);
    let di = with_slug(&report, "driver-insufficient");
    assert_eq!(di.len(), 1, "{:#?}", report["findings"]);
    assert_eq!(report["summary"]["errors"], 1, "{:#?}", report["findings"]);
    // The compressed code of both libraries is folded into it, as evidence.
    let evidence = di[0]["evidence"].to_string();
    assert!(evidence.contains("libkern.so: 1 entry uses zstd"), "{evidence}");
    assert!(
        evidence.contains("libkern_shmem.so: 1 entry uses zstd"),
        "{evidence}"
    );
}

/// Issue 29: the only fix was "Upgrade the driver to ≥ 550.54.14" (what zstd needs), which would not help: the
/// CUDA 13 runtime needs 580.65.06 at least.
#[test]
fn the_fix_named_a_driver_that_would_not_help() {
    let tmp = tempfile::tempdir().unwrap();
    let app = torch_like(tmp.path());
    let (report, _) = inspect(&app, "535.104.05", 1);
    let di = with_slug(&report, "driver-insufficient")[0];
    let help = di["help"].as_str().unwrap();
    assert!(help.starts_with("Upgrade the driver to ≥ "), "{help}");
    assert!(help.contains("≥ 580.65.06"), "{help}");
    assert!(!help.contains("550.54.14"), "{help}");
    assert!(
        di["message"].as_str().unwrap().contains("CUDA 13.2 runtime"),
        "{di}"
    );
}

/// Issue 29: "minor version unknown" was said of a `libcudart.so.13` whose exact version its file gives.
#[test]
fn the_loaded_runtime_was_minor_version_unknown() {
    let tmp = tempfile::tempdir().unwrap();
    let app = torch_like(tmp.path());
    let (report, _) = inspect(&app, "535.104.05", 1);
    let text = report["findings"].to_string();
    assert!(!text.contains("minor version unknown"), "{text}");
    assert!(text.contains("stores version 13020"), "{text}");
    // Near miss: on a 580 driver (CUDA 13.0) the same 13.2 runtime runs through minor-version compatibility.
    let (report, human) = inspect(&app, "580.159.04", 0);
    assert!(human.lines().next().unwrap().contains("will run"), "{human}");
    assert_eq!(report["summary"]["errors"], 0, "{:#?}", report["findings"]);
    assert_eq!(with_slug(&report, "minor-version-compat").len(), 1);
    assert_eq!(report["verdicts"][0]["outcome"], "runs");
}

/// Issue 33: `audit` of an image of 100,000 small ELF files did not finish in 2 minutes: the headlines compared
/// every binary's path with every finding and every verdict, and the verdicts every binary with every loader
/// tree. Judged here in memory, with a loader tree per binary and an error for half of them; linear work takes
/// seconds, the old quadratic work minutes (no time is asserted: the counts are).
#[test]
fn headlines_of_100000_binaries_compared_every_path_with_every_finding() {
    use cudadiag::facts::loader::{LoadedObject, Resolution};
    use cudadiag::facts::{
        BinaryFacts, CodeKind, DeviceCode, DriverFacts, Facts, Format, GpuFacts, HostFacts,
    };
    use cudadiag::rules::{self, Standing};
    const N: usize = 100_000;
    let code = |sm: u32| DeviceCode {
        kind: CodeKind::Sass,
        arch: format!("sm_{sm}"),
        sm,
        suffix: None,
        ptx_isa: None,
        code_version: [1, 8],
        compression: cudadiag::facts::Compression::None,
        size: 100,
        stored_size: 100,
        flags: 0,
        debug: false,
        bits64: true,
        host: None,
        identifier: None,
        options: None,
        toolkit: None,
        toolkit_source: None,
        unread: None,
        relocatable: false,
        container: 0,
        offset: 0,
        cubin: None,
        ptx: None,
    };
    let mut facts = Facts {
        host: Some(HostFacts {
            driver: Some(DriverFacts {
                version: "580.159.04".into(),
                source: "test".into(),
            }),
            gpus: vec![GpuFacts {
                name: "NVIDIA H200".into(),
                cc: Some("9.0".into()),
                source: "test".into(),
                ..GpuFacts::default()
            }],
            ..HostFacts::default()
        }),
        ..Facts::default()
    };
    for i in 0..N {
        let path = format!("/image/bin/tool{i}");
        facts.binaries.push(BinaryFacts {
            path: path.clone(),
            format: Some(Format::Elf),
            device_code: vec![code(if i % 2 == 0 { 90 } else { 80 })],
            ..BinaryFacts::default()
        });
        let object = |p: &str| LoadedObject {
            path: p.into(),
            realpath: p.into(),
            ..LoadedObject::default()
        };
        facts.libraries.push(Resolution {
            binary: path.clone(),
            objects: vec![object(&path), object("/usr/lib/libc.so.6")],
            ..Resolution::default()
        });
    }
    let judgement = rules::judge(&facts, &cudadiag::matrix::Matrix::bundled().unwrap());
    let headlines = rules::headlines(&facts, &judgement.findings, &judgement.verdicts);
    assert_eq!(judgement.verdicts.len(), N);
    assert_eq!(headlines.len(), N);
    let failing = headlines.iter().filter(|h| h.standing == Standing::Fails).count();
    assert_eq!(failing, N / 2);
    assert!(headlines.iter().all(|h| h.more_errors == 0));
}

/// A loader tree in memory: `binary` requests each (name, found, dlopen) from itself.
fn tree(binary: &str, requests: &[(&str, bool, bool)]) -> cudadiag::facts::loader::Resolution {
    use cudadiag::facts::loader::{How, Library, LoadedObject, Resolution};
    Resolution {
        binary: binary.into(),
        objects: vec![LoadedObject {
            path: binary.into(),
            realpath: binary.into(),
            ..LoadedObject::default()
        }],
        libraries: requests
            .iter()
            .map(|(name, found, dlopen)| Library {
                how: if *found { How::Rpath } else { How::NotFound },
                path: found.then(|| format!("/lib/{name}")),
                dlopen: *dlopen,
                ..Library::unresolved(name, binary, 0)
            })
            .collect(),
        ..Resolution::default()
    }
}

fn not_found(r: &cudadiag::facts::loader::Resolution, driver_here: bool) -> Vec<String> {
    cudadiag::rules::loader::evaluate_on(std::slice::from_ref(r), None, &[], driver_here)
        .into_iter()
        .filter(|f| f.slug == "library-not-found")
        .flat_map(|f| {
            if f.sonames.is_empty() {
                vec![f.message]
            } else {
                f.sonames
            }
        })
        .collect()
}

/// Issue 29: judged for another machine, a program that needs `libcuda.so.1` (and NVML, the PTX JIT) got
/// `library-not-found` for it, with "install the package (or wheel) that provides it": the driver provides
/// them on that machine.
#[test]
fn the_target_machines_driver_libraries_were_library_not_found() {
    let r = tree(
        "/app",
        &[
            ("libcuda.so.1", false, false),
            ("libnvidia-ml.so.1", false, false),
            ("libnvidia-ptxjitcompiler.so.1", false, false),
            ("libfoo.so.1", false, false),
        ],
    );
    // Judged for a declared target: only the package's own library is missing.
    let got = not_found(&r, false);
    assert_eq!(got, ["libfoo.so.1"], "{got:?}");
    // Near miss: resolved on the machine judged, its driver libraries missing are that machine's fault.
    let got = not_found(&r, true);
    assert!(got.iter().any(|s| s.contains("libcuda.so.1")), "{got:?}");
    assert!(
        got.iter().any(|s| s.contains("libnvidia-ptxjitcompiler.so.1")),
        "{got:?}"
    );
}

/// The same through the CLI: a program built with `cc` that needs `libcuda.so.1` (linked against a stand-in,
/// then removed), judged with `--gpu`/`--driver` and with `--no-host`, gets no `library-not-found` for it; a
/// library of its own that is missing still gets one.
#[test]
fn a_what_if_target_gets_no_library_not_found_for_libcuda() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cuda = crate::support::loader_build::lib(&dir.join("gone"), "libcuda.so.1", "cuInit", &[], &[]);
    let foo = crate::support::loader_build::lib(&dir.join("gone"), "libfoo.so.1", "foo", &[], &[]);
    let app = crate::support::loader_build::exe(&dir.join("app"), &[&cuda, &foo], &[]);
    std::fs::remove_dir_all(dir.join("gone")).unwrap();
    for target in [
        &["--gpu", "9.0", "--driver", "580.159.04"][..],
        &["--no-host"][..],
    ] {
        let mut args: Vec<String> = vec!["inspect".into(), "--format".into(), "json".into()];
        args.extend(target.iter().map(|s| s.to_string()));
        args.push(app.to_string_lossy().into_owned());
        let report = json_exiting(&args, &[1]);
        let missing: Vec<&str> = with_slug(&report, "library-not-found")
            .iter()
            .flat_map(|f| f["sonames"].as_array().unwrap().iter().filter_map(|s| s.as_str()))
            .collect();
        assert_eq!(missing, ["libfoo.so.1"], "{target:?}: {:#?}", report["findings"]);
    }
}

/// Issue 29: a library that tries several names of one library (a CUDA 13.0 build that also tries
/// `libnvrtc.so.12` after `libnvrtc.so.13`) got "install the libnvrtc.so.12 it was built against" although
/// the first name was found.
#[test]
fn a_fallback_soname_after_a_found_one_was_a_requirement() {
    let r = tree(
        "/lib/libcusparseLt.so.0",
        &[("libnvrtc.so.13", true, true), ("libnvrtc.so.12", false, true)],
    );
    assert!(not_found(&r, true).is_empty(), "{:?}", not_found(&r, true));
    // Near miss: with no name of it found, the library the program asks for is missing.
    let r = tree("/lib/libcusparseLt.so.0", &[("libnvrtc.so.12", false, true)]);
    assert_eq!(not_found(&r, true).len(), 1);
    // Near miss: another library's name found does not excuse it.
    let r = tree(
        "/lib/libcusparseLt.so.0",
        &[
            ("libnvJitLink.so.13", true, true),
            ("libnvrtc.so.12", false, true),
        ],
    );
    assert_eq!(not_found(&r, true).len(), 1);
}

/// Issue 29: "will run" stood above a `cuda-library-too-old` error (torch pins cuDNN 9.19, the process loads
/// 9.14): the verdict re-ran the compatibility rules alone and never saw the loader's or the packages'
/// findings. The verdict now reads every finding about the process, whichever rule gave it.
#[test]
fn will_run_stood_above_a_cuda_library_too_old_error() {
    use cudadiag::facts::{BinaryFacts, DriverFacts, Facts, Format, GpuFacts, HostFacts};
    use cudadiag::findings::{Code, Finding};
    use cudadiag::rules::{self, Outcome, Standing};
    let m = cudadiag::matrix::Matrix::bundled().unwrap();
    let lib = "/venv/torch/lib/libtorch_cuda.so";
    let facts = Facts {
        binaries: vec![BinaryFacts {
            path: lib.into(),
            format: Some(Format::Elf),
            ..BinaryFacts::default()
        }],
        host: Some(HostFacts {
            driver: Some(DriverFacts {
                version: "580.159.04".into(),
                source: "test".into(),
            }),
            gpus: vec![GpuFacts {
                name: "NVIDIA H200".into(),
                cc: Some("9.0".into()),
                source: "test".into(),
                ..GpuFacts::default()
            }],
            ..HostFacts::default()
        }),
        ..Facts::default()
    };
    let mut findings = rules::judge(&facts, &m).findings;
    // Near miss: nothing stops it.
    let v = rules::verdicts(&facts, &findings, &m);
    assert_ne!(v[0].outcome, Outcome::Fails, "{v:?}");
    findings.insert(
        0,
        Finding::new(
            Code::CudaLibraryTooOld,
            format!("{lib}: loads cuDNN 9.14.0, older than torch 2.11.0 requires (==9.19.0.56)"),
            "Install the cuDNN torch pins.",
        )
        .at(lib),
    );
    let v = rules::verdicts(&facts, &findings, &m);
    assert_eq!(v[0].outcome, Outcome::Fails);
    assert_eq!(v[0].codes[0], "cuda-library-too-old");
    let h = rules::headlines(&facts, &findings, &v);
    assert_eq!(h[0].standing, Standing::Fails);
    assert!(h[0].why.starts_with("loads cuDNN 9.14.0"), "{h:?}");
}

/// Issue 29 (seen on the H200): `inspect torch/_C…so` noted "no CUDA device code … Nothing to run on a GPU
/// here" although the process it becomes maps `libtorch_cuda.so`'s kernels and is judged on them. A program
/// whose process maps no device code at all keeps the note.
#[test]
fn no_device_code_was_noted_for_a_program_whose_process_maps_kernels() {
    let tmp = tempfile::tempdir().unwrap();
    let app = torch_like(tmp.path());
    let (report, _) = inspect(&app, "580.159.04", 0);
    assert!(
        with_slug(&report, "no-device-code").is_empty(),
        "{:#}",
        report["findings"]
    );
    let cudart = tmp.path().join("lib/libcudart.so.13");
    let (report, _) = inspect(&cudart, "580.159.04", 0);
    assert_eq!(
        with_slug(&report, "no-device-code").len(),
        1,
        "{:#}",
        report["findings"]
    );
}

/// `--deep` reads the device code of the libraries a program loads while the program's own payloads are
/// inflated (stop 42): the process is judged on the same kernels as at the default depth, each library once
/// however many of the programs given load it.
#[test]
fn deep_judges_the_loaded_libraries_kernels_as_the_default_depth_does() {
    let tmp = tempfile::tempdir().unwrap();
    let app = torch_like(tmp.path());
    let kern = tmp.path().join("lib/libkern.so");
    let no_kernel = |extra: &[&str], programs: &[&Path]| -> Vec<String> {
        let mut args = vec![
            "inspect",
            "--gpu",
            "8.0",
            "--driver",
            "580.159.04",
            "--format",
            "json",
        ];
        args.extend(extra);
        let programs: Vec<String> = programs
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        args.extend(programs.iter().map(String::as_str));
        let report = json_exiting(&args, &[1]);
        let mut messages: Vec<String> = with_slug(&report, "no-kernel-image")
            .iter()
            .map(|f| f["message"].as_str().unwrap().to_string())
            .collect();
        messages.sort();
        messages
    };
    let default = no_kernel(&[], &[&app]);
    assert_eq!(default.len(), 2, "{default:#?}");
    assert!(default.iter().any(|m| m.contains("libkern.so:")), "{default:#?}");
    assert!(
        default.iter().any(|m| m.contains("libkern_shmem.so:")),
        "{default:#?}"
    );
    assert_eq!(no_kernel(&["--deep"], &[&app]), default);
    // Two programs that both load libkern_shmem.so (the second is libkern.so itself, judged as a program).
    let both = no_kernel(&["--deep"], &[&app, &kern]);
    assert_eq!(both, no_kernel(&[], &[&app, &kern]), "{both:#?}");
}

/// `resolve_after` shows its caller every object of the process once the walk is done (the device code of the
/// libraries is read from then on, while the tree is finished): the same objects, in the same order, as the
/// finished resolution holds.
#[test]
fn the_walk_shows_every_object_the_finished_tree_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let app = torch_like(tmp.path());
    let root = cudadiag::system::Root::host();
    let env = cudadiag::system::Env::empty();
    let mut files = cudadiag::loader::Files::default();
    let mut shown = Vec::new();
    let res = cudadiag::loader::resolve_after(
        &root,
        &env,
        &app,
        &mut files,
        &[],
        cudadiag::loader::MainSymbols::default,
        |objects| shown = objects.iter().map(|o| o.realpath.clone()).collect(),
    )
    .expect("an ELF program");
    let kept: Vec<String> = res.objects.iter().map(|o| o.realpath.clone()).collect();
    assert_eq!(shown, kept);
    for lib in ["libkern.so", "libkern_shmem.so", "libcudart.so.13"] {
        assert!(
            kept.iter().any(|p| p.ends_with(&format!("/lib/{lib}"))),
            "{lib}: {kept:#?}"
        );
    }
}
