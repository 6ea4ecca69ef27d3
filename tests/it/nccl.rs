//! `nccl-cuda-mismatch` on programs built here with `cc`: a `libnccl.so.2` carrying NCCL's version string for
//! one CUDA, beside a `libcudart.so.N` of the same or another major, or judged against a driver's CUDA.

use crate::support::cli::{json_exiting, slugs};
use crate::support::loader_build as build;
use std::path::{Path, PathBuf};

/// A program needing a fake `libnccl.so.2` built "for" CUDA `nccl_cuda` and, when given, a fake
/// `libcudart.so.<major>`, both found through its RUNPATH.
fn program(dir: &Path, nccl_cuda: &str, cudart_major: Option<u32>) -> PathBuf {
    let lib = dir.join("lib");
    // NCCL keeps its version string in .rodata, as `strings libnccl.so.2` shows it.
    let nccl = build::lib_from(
        &lib,
        "libnccl.so.2",
        &format!(
            "const char nccl_version_string[] = \"NCCL version 2.21.5+cuda{nccl_cuda}\";\n\
             int ncclGetVersion(int *v) {{ *v = 22105; return nccl_version_string[0]; }}\n"
        ),
        &[],
        &[],
    );
    let mut deps = vec![nccl];
    if let Some(m) = cudart_major {
        deps.push(build::lib(
            &lib,
            &format!("libcudart.so.{m}"),
            "cudaRuntimeGetVersion",
            &[],
            &[],
        ));
    }
    let flag = format!("-Wl,-rpath,{}", lib.display());
    let deps: Vec<&Path> = deps.iter().map(PathBuf::as_path).collect();
    build::exe(&dir.join("app"), &deps, &["-Wl,--enable-new-dtags", &flag])
}

fn inspect(main: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["inspect", "--format", "json", "--clear-env", "--no-host"];
    args.extend_from_slice(extra);
    let main = main.display().to_string();
    args.push(&main);
    slugs(&json_exiting(&args, &[0, 1]))
}

#[test]
fn nccl_for_cuda_11_beside_the_cuda_12_runtime_is_a_mismatch() {
    let t = tempfile::tempdir().unwrap();
    let got = inspect(&program(t.path(), "11.0", Some(12)), &[]);
    assert!(got.contains(&"nccl-cuda-mismatch".to_string()), "{got:?}");
}

#[test]
fn nccl_for_the_runtime_s_own_major_is_no_finding() {
    let t = tempfile::tempdir().unwrap();
    let got = inspect(&program(t.path(), "12.4", Some(12)), &[]);
    assert!(!got.contains(&"nccl-cuda-mismatch".to_string()), "{got:?}");
}

#[test]
fn nccl_for_a_newer_cuda_major_than_the_driver_is_a_mismatch() {
    let t = tempfile::tempdir().unwrap();
    let main = program(t.path(), "12.4", None);
    // Driver 470 supports CUDA 11.4; driver 550 supports CUDA 12.4.
    let old = inspect(&main, &["--driver", "470.256.02"]);
    assert!(old.contains(&"nccl-cuda-mismatch".to_string()), "{old:?}");
    let new = inspect(&main, &["--driver", "550.90.07"]);
    assert!(!new.contains(&"nccl-cuda-mismatch".to_string()), "{new:?}");
}
