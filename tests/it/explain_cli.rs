//! `cudadiag codes`, `explain` and `matrix` through the binary: exit codes, stdout, and JSON parsed back field
//! by field. Every catalogue code must have its explanation (tests/it/cli.rs snapshots the list itself).

use assert_cmd::Command;
use cudadiag::findings::CATALOGUE;
use serde_json::Value;

use crate::support::cli::captured;
use crate::support::golden;

use crate::support::loader_build as build;

fn cudadiag() -> Command {
    let mut c = Command::cargo_bin("cudadiag").unwrap();
    c.env_remove("NO_COLOR").arg("--color").arg("never");
    c
}

fn run(args: &[&str]) -> (i32, String, String) {
    captured(cudadiag().args(args))
}

fn json(args: &[&str]) -> Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn every_code_has_its_document() {
    for c in CATALOGUE {
        let path = format!("{}/data/codes/{}.md", env!("CARGO_MANIFEST_DIR"), c.slug);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(
            text.starts_with(&format!("# {} {}\n", c.code, c.slug)),
            "{path}: title"
        );
        let mut at = 0;
        for h in [
            "## What it means",
            "## Why it happens",
            "## How to check",
            "## How to fix",
            "## Facts used",
        ] {
            let pos = text[at..]
                .find(h)
                .unwrap_or_else(|| panic!("{path}: missing or misplaced {h}"));
            at += pos + h.len();
        }
        assert_eq!(
            cudadiag::commands::explain_doc(c.slug),
            Some(text.as_str()),
            "{}: not compiled in",
            c.slug
        );
        let (code, out, _) = run(&["explain", c.code]);
        assert_eq!(code, 0);
        assert!(
            out.contains("## What it means") && out.contains(c.slug),
            "explain {}",
            c.code
        );
    }
}

#[test]
fn explain_pasted_runtime_error() {
    let (code, out, _) = run(&[
        "explain",
        "no kernel image is available for execution on the device",
    ]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("CUDA error 209: cudaErrorNoKernelImageForDevice / CUDA_ERROR_NO_BINARY_FOR_GPU"),
        "{out}"
    );
    assert!(out.contains("CD100  no-kernel-image"));
}

#[test]
fn explain_json_lists_matches_and_findings() {
    let v = json(&[
        "explain",
        "--format",
        "json",
        "CUDA driver version is insufficient for CUDA runtime version",
    ]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["matches"][0]["kind"], "cuda-error");
    assert_eq!(v["matches"][0]["value"], 35);
    let slugs: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs[0], "driver-insufficient");
    assert!(
        v["findings"][0]["doc"]
            .as_str()
            .unwrap()
            .contains("## How to fix")
    );
    let v = json(&[
        "explain",
        "--format",
        "json",
        "Failed to initialize NVML: Driver/library version mismatch",
    ]);
    assert_eq!(v["matches"][0]["kind"], "message");
    assert_eq!(v["findings"][0]["slug"], "driver-library-mismatch");
}

#[test]
fn explain_unknown_text_is_a_usage_error() {
    let (code, _, err) = run(&["explain", "the weather is fine"]);
    assert_eq!(code, 2);
    assert!(err.contains("nothing known matches"), "{err}");
}

#[test]
fn matrix_queries_answer_with_sources() {
    let (code, out, _) = run(&["matrix", "--toolkit", "12.4"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("12.4 GA") && out.contains("550.54.14") && out.contains("551.61"),
        "{out}"
    );
    assert!(out.contains("525.60.13"), "minor-compat floor: {out}");
    let v = json(&["matrix", "--format", "json", "--driver", "535.104.05"]);
    assert_eq!(v["driver"]["cuda"], "12.2");
    assert_eq!(v["driver"]["max_ptx_isa"], "8.2");
    assert_eq!(v["driver"]["minor_compat_majors"][0], 12);
    let v = json(&["matrix", "--format", "json", "--ptx", "8.7"]);
    assert_eq!(v["ptx"]["cuda"], "12.8");
    assert_eq!(v["ptx"]["min_branch"], 570);
    let v = json(&["matrix", "--format", "json", "--gpu", "RTX 4090"]);
    assert_eq!(v["gpu"]["cc"], "8.9");
    assert_eq!(v["gpu"]["architecture"], "Ada");
    let v = json(&["matrix", "--format", "json", "--driver", "590.44.01"]);
    let dropped: Vec<&str> = v["driver"]["unsupported_architectures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        dropped.contains(&"Pascal") && !dropped.contains(&"Turing"),
        "{dropped:?}"
    );
}

#[test]
fn broken_matrix_file_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.toml");
    let text = cudadiag::matrix::BUNDLED.replacen("cuda = \"12.4\"", "cuda = \"12.four\"", 1);
    std::fs::write(&path, &text).unwrap();
    let line = text.lines().position(|l| l.contains("12.four")).unwrap();
    let (code, _, err) = run(&["matrix", "--toolkit", "12.4", "--matrix", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("m.toml:") && err.contains("12.four"), "{err}");
    let reported: usize = err
        .split("m.toml:")
        .nth(1)
        .unwrap()
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        reported <= line + 1 && line + 1 - reported < 6,
        "{err} (field on line {})",
        line + 1
    );
}

#[test]
fn what_if_targets_on_inspect() {
    let dir = tempfile::tempdir().unwrap();
    let ptx = dir.path().join("k.ptx");
    std::fs::write(
        &ptx,
        ".version 8.7\n.target sm_80\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n",
    )
    .unwrap();
    let p = ptx.to_str().unwrap();
    let (code, out, _) = run(&["inspect", "--gpu", "9.0", "--driver", "565.57.01", p]);
    assert_eq!(code, 1);
    assert!(out.contains("error[CD102] ptx-too-new"), "{out}");
    assert!(out.contains("on CC 9.0 GPU: will fail"), "{out}");
    let (code, out, _) = run(&["inspect", "--gpu", "RTX 4090", "--driver", "570.26", p]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("GeForce RTX 4090 (CC 8.9): will run after JIT"),
        "{out}"
    );
    let v = json(&[
        "inspect",
        "--format",
        "json",
        "--fail-on",
        "never",
        "--gpu",
        "sm_75",
        "--driver",
        "580.159.04",
        p,
    ]);
    let slugs: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["no-kernel-image"]);
    assert_eq!(v["verdicts"][0]["outcome"], "fails");
    assert_eq!(v["verdicts"][0]["gpu"], "CC 7.5 GPU");
    assert_eq!(v["verdicts"][0]["codes"][0], "no-kernel-image");
    // Repeatable --gpu: one verdict per GPU.
    let (code, out, _) = run(&[
        "inspect",
        "--gpu",
        "8.0",
        "--gpu",
        "NVIDIA H200",
        "--driver",
        "575.57.08",
        p,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("on CC 8.0 GPU: will run after JIT"), "{out}");
    assert!(
        out.contains("on NVIDIA H200 (CC 9.0): will run after JIT"),
        "{out}"
    );
    let (code, _, err) = run(&["inspect", "--gpu", "RTX 9999", p]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown GPU"), "{err}");
    let (code, _, err) = run(&["inspect", "--driver", "latest", p]);
    assert_eq!(code, 2);
    assert!(err.contains("not a driver version"), "{err}");
}

#[test]
fn explain_checks_a_binary_against_the_target() {
    let root = env!("CARGO_MANIFEST_DIR");
    let sm80 = format!("{root}/fixtures/cuda13/sm80");
    let multi = format!("{root}/fixtures/cuda13/multi");
    // sm80 on an H200 fails with 209 (fixtures/cuda13/sm80.run.txt): confirmed, exit 1.
    let (code, out, _) = run(&[
        "explain",
        "209",
        "--check",
        &sm80,
        "--gpu",
        "NVIDIA H200",
        "--driver",
        "580.159.04",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("confirmed    no-kernel-image"), "{out}");
    // multi carries sm_90 SASS: 209 is ruled out there.
    let v = json(&[
        "explain",
        "--format",
        "json",
        "209",
        "--check",
        &multi,
        "--gpu",
        "9.0",
        "--driver",
        "580.159.04",
    ]);
    assert_eq!(v["checked"][0]["slug"], "no-kernel-image");
    assert_eq!(v["checked"][0]["status"], "ruled-out");
    // Without a GPU (none given, this machine not read) the kernel-image rule cannot run.
    let v = json(&[
        "explain",
        "--format",
        "json",
        "209",
        "--check",
        &multi,
        "--no-host",
    ]);
    assert_eq!(v["checked"][0]["status"], "not-checked");
    assert_eq!(v["checked"][0]["details"][0], "needs --gpu (no GPU was read)");
}

/// `app` needs `libgone.so.1` and `libkeep.so.1` from `dir/lib` (its RUNPATH); `gone` says whether the first
/// is removed.
fn program_needing_libgone(dir: &std::path::Path, gone: bool) -> std::path::PathBuf {
    let dep = build::lib(&dir.join("lib"), "libgone.so.1", "gone", &[], &[]);
    let keep = build::lib(&dir.join("lib"), "libkeep.so.1", "keep", &[], &[]);
    let flag = format!("-Wl,-rpath,{}", dir.join("lib").display());
    let main = build::exe(
        &dir.join("app"),
        &[&dep, &keep],
        &["-Wl,--enable-new-dtags", &flag],
    );
    if gone {
        std::fs::remove_file(&dep).unwrap();
    }
    main
}

const LIBGONE_MESSAGE: &str =
    "./app: error while loading shared libraries: libgone.so.1: cannot open shared object file";

/// The loader's message, checked on the program: the loader tree is resolved as `inspect` resolves it, and
/// the finding is shown with every step of its search, not in short.
#[test]
fn explain_check_confirms_a_missing_library_with_its_whole_trail() {
    let t = tempfile::tempdir().unwrap();
    let app = program_needing_libgone(t.path(), true);
    let app = app.to_str().unwrap();
    let lib = t.path().join("lib").display().to_string();
    let (code, out, err) = run(&[
        "explain",
        LIBGONE_MESSAGE,
        "--check",
        app,
        "--clear-env",
        "--no-host",
    ]);
    assert_eq!(code, 1, "a confirmed error fails: {out}{err}");
    assert!(out.contains("  confirmed    library-not-found\n"), "{out}");
    assert!(
        out.contains("error[CD200] library-not-found: ") && out.contains("libgone.so.1"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "  because search 1. [runpath] {lib}/libgone.so.1: not present\n"
        )),
        "{out}"
    );
    assert!(out.contains("  because search 2. [ld.so.cache] "), "{out}");
    assert!(out.contains("[default path] "), "{out}");
    assert!(!out.contains("-v lists each step"), "no trail in short: {out}");
    // Every step of the trail, numbered from 1 without a gap.
    let steps: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  because search "))
        .collect();
    assert!(steps.len() >= 3, "{out}");
    for (i, l) in steps.iter().enumerate() {
        assert!(l.starts_with(&format!("  because search {}. [", i + 1)), "{l}");
    }
    // The JSON carries the confirmed finding whole, its trail included.
    let out = cudadiag()
        .args(["explain", "--format", "json", LIBGONE_MESSAGE, "--check", app])
        .args(["--clear-env", "--no-host"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["checked"][0];
    assert_eq!(c["slug"], "library-not-found");
    assert_eq!(c["status"], "confirmed");
    let evidence = c["findings"][0]["evidence"].as_array().unwrap();
    assert!(
        evidence
            .iter()
            .any(|e| e.as_str() == Some(&format!("search 1. [runpath] {lib}/libgone.so.1: not present"))),
        "{c}"
    );
    assert_eq!(c["findings"][0]["sonames"][0], "libgone.so.1");
    // libcuda-not-found is the machine's: not read with --no-host, so not checked, and said why.
    let libcuda = v["checked"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["slug"] == "libcuda-not-found")
        .unwrap();
    assert_eq!(libcuda["status"], "not-checked");
    assert_eq!(libcuda["details"][0], "this machine is not read with --no-host");
    // A message about another library: the program fails the same way, but not on the library named.
    let (code, out, _) = run(&[
        "explain",
        "libcudart.so.12: cannot open shared object file",
        "--check",
        app,
        "--clear-env",
        "--no-host",
    ]);
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "  confirmed    library-not-found: missing here: libgone.so.1; not libcudart.so.12, which the \
             message names\n"
        ),
        "{out}"
    );
}

/// Near miss: the library is there, so the message does not apply to this program.
#[test]
fn explain_check_rules_out_a_library_that_is_found() {
    let t = tempfile::tempdir().unwrap();
    let app = program_needing_libgone(t.path(), false);
    let (code, out, err) = run(&[
        "explain",
        LIBGONE_MESSAGE,
        "--check",
        app.to_str().unwrap(),
        "--clear-env",
        "--no-host",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("  ruled-out    library-not-found\n"), "{out}");
    assert!(!out.contains("error[CD200]"), "{out}");
}

/// The loader is emulated in the environment given: `--env LD_LIBRARY_PATH` finds a copy the RUNPATH does
/// not, and the finding is ruled out; a file with no loader tree leaves it unchecked.
#[test]
fn explain_check_uses_the_environment_and_says_when_there_is_no_loader_tree() {
    let t = tempfile::tempdir().unwrap();
    let app = program_needing_libgone(t.path(), true);
    let elsewhere = build::lib(&t.path().join("other"), "libgone.so.1", "gone", &[], &[]);
    let env = format!("LD_LIBRARY_PATH={}", elsewhere.parent().unwrap().display());
    let v = json(&[
        "explain",
        "--format",
        "json",
        LIBGONE_MESSAGE,
        "--check",
        app.to_str().unwrap(),
        "--clear-env",
        "--env",
        &env,
        "--no-host",
    ]);
    assert_eq!(v["checked"][0]["status"], "ruled-out", "{v}");
    let ptx = t.path().join("k.ptx");
    std::fs::write(&ptx, ".version 8.0\n.target sm_80\n.address_size 64\n").unwrap();
    let v = json(&[
        "explain",
        "--format",
        "json",
        LIBGONE_MESSAGE,
        "--check",
        ptx.to_str().unwrap(),
        "--no-host",
    ]);
    assert_eq!(v["checked"][0]["status"], "not-checked", "{v}");
    assert!(
        v["checked"][0]["details"][0]
            .as_str()
            .unwrap()
            .starts_with("no loader tree"),
        "{v}"
    );
}

/// The loader's glibc message maps to glibc-too-old alone: the more specific message wins over the general
/// "version `" one, which still answers for other libraries' versions.
#[test]
fn explain_glibc_version_not_found() {
    let v = json(&[
        "explain",
        "--format",
        "json",
        "./app: /lib64/libc.so.6: version `GLIBC_2.34' not found (required by ./app)",
    ]);
    let slugs: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["glibc-too-old"]);
    assert_eq!(v["findings"][0]["code"], "CD204");
    let (code, out, _) = run(&["explain", "version `GLIBC_2.34' not found"]);
    assert_eq!(code, 0);
    assert!(out.contains("CD204 glibc-too-old"), "{out}");
    let v = json(&[
        "explain",
        "--format",
        "json",
        "libfoo.so: version `libcudart.so.12' not found (required by ./app)",
    ]);
    let slugs: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["symbol-version-missing", "library-shadowed"]);
}

/// A pasted loader error names a library: its CUDA major, its packages, and its copies under `--root`.
#[test]
fn explain_a_missing_library_names_its_packages_and_copies() {
    let t = tempfile::tempdir().unwrap();
    let lib = t.path().join("usr/local/cuda-13.0/targets/x86_64-linux/lib");
    std::fs::create_dir_all(&lib).unwrap();
    let src = t.path().join("s.c");
    std::fs::write(&src, "int f(void) { return 1; }\n").unwrap();
    let out = lib.join("libcudart.so.13.0.96");
    let ok = std::process::Command::new("cc")
        .args([
            "-shared",
            "-fPIC",
            "-nostdlib",
            "-Wl,-soname,libcudart.so.13",
            "-o",
        ])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(ok.success());
    let root = t.path().to_str().unwrap();
    let query =
        "./app: error while loading shared libraries: libcudart.so.12: cannot open shared object file";
    let (code, text, err) = run(&["explain", "--root", root, query]);
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with("libcudart.so.12: a CUDA 12 library\n"), "{text}");
    assert!(
        text.contains("pip install nvidia-cuda-runtime-cu12 (or 'cuda-toolkit[cudart]==12.*')"),
        "{text}"
    );
    assert!(
        text.contains("conda install -c conda-forge cuda-cudart 'cuda-version=12'"),
        "{text}"
    );
    assert!(text.contains("sudo apt-get install cuda-cudart-12-N"), "{text}");
    assert!(text.contains("sudo dnf install cuda-cudart-12-N"), "{text}");
    assert!(
        text.contains("another version: /usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96"),
        "{text}"
    );
    assert!(text.contains("CD200  library-not-found"), "{text}");
    // JSON: the same, field by field.
    let v = json(&["explain", "--format", "json", "--root", root, query]);
    let l = &v["libraries"][0];
    assert_eq!(l["library"], "libcudart.so.12");
    assert_eq!(l["majors"], serde_json::json!([12]));
    assert_eq!(l["pip"][0]["name"], "nvidia-cuda-runtime-cu12");
    assert_eq!(l["conda"], "cuda-cudart");
    assert_eq!(l["deb"], serde_json::json!(["cuda-cudart-12-N"]));
    assert_eq!(l["copies"][0]["same_name"], false);
    // Its CUDA 13 counterpart is found where it is, by its own name; a library no table knows says so.
    let (_, text, _) = run(&[
        "explain",
        "--root",
        root,
        "libcudart.so.13: cannot open shared object file",
    ]);
    assert!(
        text.contains("pip install nvidia-cuda-runtime (or 'cuda-toolkit[cudart]==13.*')"),
        "{text}"
    );
    let (_, text, _) = run(&[
        "explain",
        "--root",
        root,
        "libfoo.so.1: cannot open shared object file",
    ]);
    assert!(text.contains("libfoo.so.1: not a CUDA library"), "{text}");
    assert!(text.contains("no copy found"), "{text}");
}

/// Golden: `explain` of a code, as a person reads it.
#[test]
fn golden_explain_code() {
    let out = cudadiag().args(["explain", "CD100"]).output().unwrap();
    insta::assert_snapshot!("explain_cd100", golden::transcript(&out, &[]));
}

fn candidates(v: &Value) -> Vec<&str> {
    v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap())
        .collect()
}

/// Regression (issue 34): `libcublas.so.11` was "a CUDA 12 and 13 library" with CUDA 12/13 packages as the fix.
#[test]
fn explain_libcublas_so_11_is_cuda_11_not_12_and_13() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().to_str().unwrap();
    let q = "ImportError: libcublas.so.11: cannot open shared object file: No such file or directory";
    let v = json(&["explain", "--format", "json", "--root", root, q]);
    let l = &v["libraries"][0];
    assert_eq!(l["majors"], serde_json::json!([11]));
    assert_eq!(l["pip"][0]["name"], "nvidia-cublas-cu11");
    assert_eq!(l["deb"], serde_json::json!(["libcublas-11-N"]));
    assert_eq!(candidates(&v)[0], "library-not-found");
    assert_eq!(
        v["candidates"][0]["libraries"][0]["cuda"],
        serde_json::json!([11])
    );
    let (_, text, _) = run(&["explain", "--root", root, q]);
    assert!(text.starts_with("libcublas.so.11: a CUDA 11 library\n"), "{text}");
    assert!(
        text.contains("conda install -c conda-forge 'cudatoolkit=11'"),
        "{text}"
    );
    // Older still: CUDA 10.1's runtime has no pip wheel, its system package is per release.
    let v = json(&[
        "explain",
        "--format",
        "json",
        "--root",
        root,
        "libcudart.so.10.1: cannot open shared object file",
    ]);
    assert_eq!(v["libraries"][0]["majors"], serde_json::json!([10]));
    assert_eq!(v["libraries"][0]["pip"], serde_json::json!([]));
    assert_eq!(v["libraries"][0]["deb"], serde_json::json!(["cuda-cudart-10-1"]));
}

/// Regression (issue 34): `(35 vs. 0)` was read as error 0, success.
#[test]
fn explain_check_failed_35_vs_0_is_error_35() {
    let v = json(&[
        "explain",
        "--format",
        "json",
        "Check failed: error == cudaSuccess (35 vs. 0)  CUDA driver version is insufficient for CUDA runtime version",
    ]);
    assert_eq!(v["matches"][0]["kind"], "cuda-error");
    assert_eq!(v["matches"][0]["value"], 35);
    assert!(v["matches"].as_array().unwrap().iter().all(|m| m["value"] != 0));
    assert_eq!(candidates(&v)[0], "driver-insufficient");
}

/// Regression (issue 34): NVML's "Unknown Error" in a running container was answered nvidia-uvm-missing; it
/// is the container's lost device rules, a cause no rule observes, with its own document.
#[test]
fn explain_nvml_unknown_error_is_lost_device_rules_not_uvm() {
    let v = json(&[
        "explain",
        "--format",
        "json",
        "Failed to initialize NVML: Unknown Error",
    ]);
    let c = &v["candidates"][0];
    assert_eq!(c["slug"], "container-lost-device-rules");
    assert_eq!(c["code"], Value::Null);
    assert_ne!(c["confidence"], "high");
    assert!(c["check"].as_str().unwrap().contains("new container"));
    assert!(!candidates(&v).contains(&"nvidia-uvm-missing"));
    // The cause explains itself by its slug, as a finding does.
    let (code, out, _) = run(&["explain", "container-lost-device-rules"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("# container-lost-device-rules\n"), "{out}");
    let v = json(&["explain", "--format", "json", "wsl-libcuda-not-symlink"]);
    assert_eq!(v["cause"]["slug"], "wsl-libcuda-not-symlink");
    assert!(v["cause"]["doc"].as_str().unwrap().contains("## How to fix"));
}

/// Regression (issue 34): `driver error: failed to process request` was answered driver-insufficient.
#[test]
fn explain_failed_to_process_request_is_the_driver_root() {
    let v = json(&[
        "explain",
        "--format",
        "json",
        "nvidia-container-cli: initialization error: driver error: failed to process request",
    ]);
    assert_eq!(candidates(&v)[0], "container-driver-root-empty");
    assert!(!candidates(&v).contains(&"driver-insufficient"));
}

/// Regression (issue 34): a torch extension built for another torch was answered as a CUDA library mix-up.
#[test]
fn explain_torch_library_symbol_is_an_extension_built_for_another_torch() {
    let v = json(&[
        "explain",
        "--format",
        "json",
        "ImportError: /x/_C.so: undefined symbol: _ZN5torch7Library4_defEN3c1014FunctionSchemaEPNS_11CppFunctionE",
    ]);
    assert_eq!(candidates(&v)[0], "framework-extension-abi-mismatch");
    assert_eq!(v["candidates"][0]["confidence"], "high");
    // The human text says why and what to check, most likely first.
    let (_, out, _) = run(&["explain", "undefined symbol: _ZN3c104cuda9SetDeviceEi"]);
    assert!(
        out.contains(
            "Likely causes, most likely first:\n  1. framework-extension-abi-mismatch (CD208, high)"
        ),
        "{out}"
    );
    assert!(
        out.contains("because the missing symbol is a C++ symbol of the framework itself"),
        "{out}"
    );
}
