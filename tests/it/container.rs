//! The NVIDIA Container Toolkit model (`cudadiag::container`) through its public surface: `explain` of the
//! toolkit's error texts through the binary, and `container::evaluate`'s JSON, parsed back field by field, for
//! the node the issue names (CUDA 13 image on 580 and 535 drivers).

use cudadiag::container::{self, Outcome};
use cudadiag::facts::{DriverFacts, GpuFacts, HostFacts};
use cudadiag::matrix::Matrix;
use serde_json::Value;
use std::collections::BTreeMap;

use crate::support::cli::{json_exiting, slugs};

fn explain_json(text: &str) -> Value {
    json_exiting(["--color", "never", "explain", "--format", "json", text], &[0])
}

#[test]
fn explain_maps_the_docker_requirement_error_to_its_finding() {
    // What `docker run` prints when the hook refuses a CUDA 13 image on a 535 node.
    let v = explain_json(
        "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI \
         runtime create failed: runc create failed: unable to start container process: error during container \
         init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as \
         'legacy'\nnvidia-container-cli: requirement error: unsatisfied condition: cuda>=13.0, please update your \
         driver to a newer version, or use an earlier cuda container: unknown.",
    );
    assert_eq!(v["matches"][0]["kind"], "message");
    let s = slugs(&v);
    assert_eq!(s[0], "container-requirement-unmet", "{s:?}");
    let doc = v["findings"][0]["doc"].as_str().unwrap();
    assert!(doc.starts_with("# CD310 container-requirement-unmet"), "{doc}");
    assert!(doc.contains("NVIDIA_DISABLE_REQUIRE"));
}

#[test]
fn explain_maps_the_other_toolkit_errors() {
    assert_eq!(
        slugs(&explain_json("unsatisfied condition: brand=tesla")),
        ["container-requirement-unmet"]
    );
    assert_eq!(
        slugs(&explain_json(
            "nvidia-container-cli: device error: GPU-deadbeef: unknown device"
        )),
        ["container-unknown-device"]
    );
    assert_eq!(
        slugs(&explain_json(
            "unsupported capabilities found in 'compute,none' (allowed 'compute')"
        )),
        ["container-config-invalid"]
    );
    // A near miss: CUDA's own "invalid device ordinal" is not the toolkit's unknown device.
    assert!(
        !slugs(&explain_json("invalid device ordinal")).contains(&"container-unknown-device".to_string())
    );
}

fn node(driver: &str) -> HostFacts {
    HostFacts {
        driver: Some(DriverFacts {
            version: driver.to_string(),
            source: "--driver".to_string(),
        }),
        gpus: vec![GpuFacts {
            name: "NVIDIA H200".to_string(),
            cc: Some("9.0".to_string()),
            source: "--gpu".to_string(),
            ..GpuFacts::default()
        }],
        ..HostFacts::default()
    }
}

#[test]
fn a_cuda_13_image_starts_on_580_and_not_on_a_plain_cuda_13_requirement_at_535() {
    let m = Matrix::bundled().unwrap();
    let env: BTreeMap<String, String> = [
        ("NVIDIA_REQUIRE_CUDA", "cuda>=13.0"),
        ("NVIDIA_VISIBLE_DEVICES", "all"),
        ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
        ("CUDA_VERSION", "13.0.2"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();

    let ok = container::evaluate(&env, &node("580.159.04"), &m);
    assert!(ok.findings.is_empty(), "{:#?}", ok.findings);
    let v: Value = serde_json::to_value(&ok).unwrap();
    assert_eq!(v["gpu_container"], true);
    assert_eq!(v["legacy_image"], false);
    assert_eq!(v["capabilities"], serde_json::json!(["compute", "utility"]));
    assert_eq!(v["devices"]["request"]["kind"], "all");
    assert_eq!(v["devices"]["gpus"][0]["name"], "NVIDIA H200");
    assert_eq!(v["requirements"][0]["variable"], "NVIDIA_REQUIRE_CUDA");
    assert_eq!(v["requirements"][0]["outcome"], "satisfied");
    assert_eq!(v["node"]["cuda"], "13.0");
    let libcuda = v["injected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["soname"] == "libcuda.so.1")
        .expect("libcuda injected");
    assert_eq!(libcuda["path"], "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04");
    assert_eq!(libcuda["capability"], "compute");

    let refused = container::evaluate(&env, &node("535.104.05"), &m);
    assert_eq!(refused.requirements[0].outcome, Outcome::Unsatisfied);
    let f: Value = serde_json::to_value(&refused.findings).unwrap();
    assert_eq!(f[0]["code"], "CD310");
    assert_eq!(f[0]["severity"], "error");
    assert!(f[0]["help"].as_str().unwrap().contains("580"), "{}", f[0]["help"]);
}
