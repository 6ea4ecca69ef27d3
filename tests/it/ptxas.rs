//! `ptxas-too-old` on copies of the healthy host tree (two H100s, sm_90) with a `ptxas` built here with `cc`:
//! a program whose read-only data holds the `--version` banner of one CUDA release, as NVIDIA's does.

use crate::support::cli::{copy_tree, finding, json_exiting, machine_args, slugs};
use crate::support::loader_build as build;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The healthy tree with a ptxas of CUDA `release` at `at` (a path inside the root).
fn machine(dir: &Path, at: &str, release: &str) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts/healthy");
    let root = dir.join("root");
    copy_tree(&fixture.join("root"), &root);
    let src = build::source(
        dir,
        "ptxas",
        &format!(
            "#include <stdio.h>\n\
             static const char banner[] = \"ptxas: NVIDIA (R) Ptx optimizing assembler\\n\
             Cuda compilation tools, release {release}, V{release}.99\\n\";\n\
             int main(void) {{ fputs(banner, stdout); return 0; }}\n"
        ),
    );
    let out = root.join(at);
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    build::cc(&["-o", &out.to_string_lossy(), &src.to_string_lossy()]);
    root
}

fn doctor(root: &Path, extra: &[&str]) -> Value {
    let env = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts/healthy/env");
    let mut args = vec!["doctor".to_string(), "--format".into(), "json".into()];
    args.extend(machine_args(root, &env, extra));
    json_exiting(&args, &[0, 1])
}

#[test]
fn a_cuda_11_7_ptxas_on_path_is_too_old_for_an_h100() {
    let t = tempfile::tempdir().unwrap();
    let r = doctor(&machine(t.path(), "usr/local/cuda/bin/ptxas", "11.7"), &[]);
    let f = finding(&r, "ptxas-too-old");
    let m = f["message"].as_str().unwrap();
    assert!(m.contains("CUDA 11.7") && m.contains("sm_90"), "{f}");
}

#[test]
fn a_ptxas_new_enough_for_the_gpu_is_no_finding() {
    let t = tempfile::tempdir().unwrap();
    let r = doctor(&machine(t.path(), "usr/local/cuda/bin/ptxas", "12.4"), &[]);
    assert!(
        !slugs(&r).contains(&"ptxas-too-old".to_string()),
        "{:?}",
        slugs(&r)
    );
}

#[test]
fn triton_ptxas_path_is_read_too() {
    let t = tempfile::tempdir().unwrap();
    let root = machine(t.path(), "opt/old/ptxas", "11.0");
    let r = doctor(&root, &["TRITON_PTXAS_PATH=/opt/old/ptxas"]);
    let f = finding(&r, "ptxas-too-old");
    assert!(
        f["message"].as_str().unwrap().contains("TRITON_PTXAS_PATH"),
        "{f}"
    );
    // Off PATH and unnamed, the same file is not a ptxas any tool runs.
    let r = doctor(&root, &[]);
    assert!(
        !slugs(&r).contains(&"ptxas-too-old".to_string()),
        "{:?}",
        slugs(&r)
    );
}
