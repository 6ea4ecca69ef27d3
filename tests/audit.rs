//! `cudadiag audit` end to end: policies, wheels built in the test, waivers, and every output format.

use assert_cmd::Command;
use std::io::Write;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cudadiag(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("cudadiag").unwrap();
    c.env_remove("NO_COLOR")
        .current_dir(dir)
        .arg("--color")
        .arg("never");
    c
}

fn policy(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("cudadiag.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// A wheel with `members` (name, bytes) and a METADATA declaring `requires`.
fn wheel(dir: &Path, name: &str, members: &[(&str, Vec<u8>)], requires: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (n, bytes) in members {
        zip.start_file(*n, opts).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.start_file("pkg-1.0.dist-info/METADATA", opts).unwrap();
    let mut meta = "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n".to_string();
    for r in requires {
        meta.push_str(&format!("Requires-Dist: {r}\n"));
    }
    zip.write_all(meta.as_bytes()).unwrap();
    zip.finish().unwrap();
    path
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(root().join("fixtures/cuda13").join(name)).unwrap()
}

#[test]
fn init_writes_a_template_that_audit_accepts_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    cudadiag(dir.path()).arg("init").assert().success();
    assert!(dir.path().join("cudadiag.toml").exists());
    cudadiag(dir.path()).arg("init").assert().code(2);
    cudadiag(dir.path()).args(["init", "--force"]).assert().success();
    // The template (default ./cudadiag.toml) asks for driver 535.104.05, which a CUDA 13.0 binary cannot use.
    let out = cudadiag(dir.path())
        .arg("audit")
        .arg(root().join("fixtures/cuda13/multi"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("policy-min-driver") && text.contains("cudadiag.toml:13"),
        "{text}"
    );
}

const RELEASE: &str = "[targets]\nsass = [\"sm_80\", \"sm_90\"]\nptx = \"compute_90\"\nmin-driver = \"580.65.06\"\ncuda-majors = [13]\n";

#[test]
fn policy_passes_on_multi_arch_and_fails_on_single_arch() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(dir.path(), RELEASE);
    let out = cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(root().join("fixtures/cuda13/multi"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = cudadiag(dir.path())
        .args(["audit", "--format", "json", "--policy"])
        .arg(&p)
        .arg(root().join("fixtures/cuda13/sm80"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let slugs: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["slug"].as_str().unwrap())
        .collect();
    assert!(slugs.contains(&"policy-missing-arch"), "{slugs:?}");
    assert!(slugs.contains(&"policy-missing-ptx"), "{slugs:?}");
    let arch = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["slug"] == "policy-missing-arch")
        .unwrap();
    assert!(arch["message"].as_str().unwrap().contains("sm_90"));
    // sm_80 SASS satisfies an sm_86 target (same major, lower minor), but an sm_90a target needs an sm_90a cubin.
    let p = policy(dir.path(), "[targets]\nsass = [\"sm_86\"]\n");
    cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(root().join("fixtures/cuda13/sm80"))
        .assert()
        .success();
    let p = policy(dir.path(), "[targets]\nsass = [\"sm_90a\"]\n");
    cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(root().join("fixtures/cuda13/sm90a"))
        .assert()
        .success();
    cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(root().join("fixtures/cuda13/multi"))
        .assert()
        .code(1);
}

#[test]
fn min_driver_is_checked_against_runtime_and_compression() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(dir.path(), "[targets]\nmin-driver = \"575.57.08\"\n");
    let out = cudadiag(dir.path())
        .args(["audit", "--format", "json", "--policy"])
        .arg(&p)
        .arg(root().join("fixtures/cuda13/no_compress"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["slug"] == "policy-min-driver")
        .unwrap();
    assert!(f["message"].as_str().unwrap().contains("575.57.08"), "{f}");
    // The near miss: the R580 driver runs CUDA 13.0.
    let p = policy(dir.path(), "[targets]\nmin-driver = \"580.65.06\"\n");
    cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(root().join("fixtures/cuda13/no_compress"))
        .assert()
        .success();
}

#[test]
fn missing_or_broken_policy_is_a_usage_error_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = cudadiag(dir.path())
        .arg("audit")
        .arg(root().join("fixtures/cuda13/multi"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cudadiag init"));
    let p = policy(dir.path(), "[targets]\nsass = [\"sm_80\"]\nptx = \"sm_90\"\n");
    let out = cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(root().join("fixtures/cuda13/multi"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cudadiag.toml:3: targets.ptx"), "{err}");
}

#[test]
fn bundled_libcuda_in_a_wheel_is_forbidden() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(dir.path(), "[targets]\ncuda-majors = [13]\n");
    let whl = wheel(
        dir.path(),
        "pkg-1.0-py3-none-manylinux_2_28_x86_64.whl",
        &[
            ("pkg/libs/libcuda.so.1", fixture("libkern.so")),
            ("pkg/_ext.so", fixture("cudart_shared")),
            ("pkg/__init__.py", b"".to_vec()),
        ],
        &["nvidia-cuda-runtime-cu12"],
    );
    let out = cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(&whl)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("policy-forbidden-library"), "{text}");
    assert!(
        text.contains("!pkg/libs/libcuda.so.1: ships libcuda.so.1"),
        "{text}"
    );
    // The near miss: the same wheel without the driver library passes.
    let clean = wheel(
        dir.path(),
        "clean-1.0-py3-none-any.whl",
        &[("pkg/_ext.so", fixture("cudart_shared"))],
        &[],
    );
    cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(&clean)
        .assert()
        .success();
}

#[test]
fn waivers_silence_and_stale_waivers_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let whl = wheel(
        dir.path(),
        "w-1.0-py3-none-any.whl",
        &[("w/libcuda.so.1", fixture("libkern.so"))],
        &[],
    );
    let p = policy(
        dir.path(),
        "[[waiver]]\ncode = \"policy-forbidden-library\"\npath = \"*libcuda.so.1\"\nreason = \"test rig only\"\nexpires = \"2999-01-01\"\n\n[[waiver]]\ncode = \"CD600\"\nreason = \"no longer needed\"\n",
    );
    let out = cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(&whl)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("error[CD603]"), "{text}");
    assert!(
        text.contains("waiver-unused") && text.contains("cudadiag.toml:8"),
        "{text}"
    );
    // Expired: the finding comes back, and the waiver is an error.
    let p = policy(
        dir.path(),
        "[[waiver]]\ncode = \"policy-forbidden-library\"\nreason = \"was fine once\"\nexpires = \"2020-01-01\"\n",
    );
    let out = cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(&whl)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text.contains("policy-forbidden-library") && text.contains("waiver-expired"),
        "{text}"
    );
}

#[test]
fn absolute_and_stubs_rpaths_and_severity_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("a.c");
    std::fs::write(&src, "int main(void){return 0;}\n").unwrap();
    let bin = dir.path().join("app");
    let ok = std::process::Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .arg("-Wl,-rpath,/home/builder/cuda-12.4/lib64/stubs:/opt/build/lib:$ORIGIN/../lib")
        .status()
        .unwrap();
    assert!(ok.success());
    let p = policy(dir.path(), "[libraries]\ncudart = \"any\"\n");
    let out = cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(&bin)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(text.contains("stubs/ directory"), "{text}");
    assert!(
        text.contains("absolute RUNPATH entry /opt/build/lib")
            || text.contains("absolute RPATH entry /opt/build/lib"),
        "{text}"
    );
    assert!(!text.contains("$ORIGIN/../lib ("), "{text}");
    // Allowed by the policy: no findings; overridden to a warning: exit 0 unless --fail-on warning.
    let p = policy(
        dir.path(),
        "[libraries]\nallow-absolute-rpath = true\nallow-stubs = true\n",
    );
    cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(&bin)
        .assert()
        .success();
    let p = policy(dir.path(), "[severity]\npolicy-forbidden-library = \"warning\"\n");
    cudadiag(dir.path())
        .arg("audit")
        .arg("--policy")
        .arg(&p)
        .arg(&bin)
        .assert()
        .success();
    cudadiag(dir.path())
        .args(["audit", "--fail-on", "warning", "--policy"])
        .arg(&p)
        .arg(&bin)
        .assert()
        .code(1);
}

#[test]
fn sarif_junit_and_github_formats() {
    let dir = tempfile::tempdir().unwrap();
    let whl = wheel(
        dir.path(),
        "f-1.0-py3-none-any.whl",
        &[("f/libcuda.so.1", fixture("libkern.so"))],
        &[],
    );
    let p = policy(dir.path(), "");
    let run = |format: &str| {
        cudadiag(dir.path())
            .args(["audit", "--format", format, "--policy"])
            .arg(&p)
            .arg(&whl)
            .output()
            .unwrap()
    };
    // SARIF 2.1.0: the required top-level shape, a rule for every result, locations as URIs.
    let out = run("sarif");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], "2.1.0");
    assert!(v["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let run0 = &v["runs"][0];
    assert_eq!(run0["tool"]["driver"]["name"], "cudadiag");
    let rules = run0["tool"]["driver"]["rules"].as_array().unwrap();
    let results = run0["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for r in results {
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[idx]["id"], r["ruleId"]);
        assert!(["error", "warning", "note", "none"].contains(&r["level"].as_str().unwrap()));
        assert!(r["message"]["text"].as_str().is_some());
        let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        assert!(uri.ends_with("f-1.0-py3-none-any.whl!f/libcuda.so.1"), "{uri}");
    }
    // JUnit: well-formed XML (checked by Python's parser), one failure.
    let out = run("junit");
    let xml = dir.path().join("junit.xml");
    std::fs::write(&xml, &out.stdout).unwrap();
    let parsed = std::process::Command::new("python3")
        .arg("-c")
        .arg("import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); print(r.tag, r.get('failures'), len(r.findall('.//testcase')), len(r.findall('.//failure')))")
        .arg(&xml)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&parsed.stdout).trim(),
        "testsuites 1 1 1",
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    // GitHub annotations.
    let out = run("github");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("::error ")).unwrap();
    assert!(
        line.contains("file=") && line.contains("title=CD603 policy-forbidden-library::"),
        "{line}"
    );
    assert!(!line.contains('\n'));
}
