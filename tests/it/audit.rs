//! `cudadiag audit` end to end: policies, wheels built in the test, waivers, and every output format.

use assert_cmd::Command;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::support::golden;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cudadiag(dir: &Path) -> Command {
    let mut c = crate::support::cli::cudadiag_in(dir);
    c.arg("--color").arg("never");
    c
}

/// `cudadiag audit --policy POLICY`, in `dir`; the inputs come after.
fn audit(dir: &Path, policy: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = cudadiag(dir);
    c.arg("audit").arg("--policy").arg(policy);
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
    let out = audit(dir.path(), &p)
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
    audit(dir.path(), &p)
        .arg(root().join("fixtures/cuda13/sm80"))
        .assert()
        .success();
    let p = policy(dir.path(), "[targets]\nsass = [\"sm_90a\"]\n");
    audit(dir.path(), &p)
        .arg(root().join("fixtures/cuda13/sm90a"))
        .assert()
        .success();
    audit(dir.path(), &p)
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
    audit(dir.path(), &p)
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
    let out = audit(dir.path(), &p)
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
        &["nvidia-cuda-runtime==13.0.96"],
    );
    let out = audit(dir.path(), &p).arg(&whl).output().unwrap();
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
        &["nvidia-cuda-runtime==13.0.96"],
    );
    audit(dir.path(), &p).arg(&clean).assert().success();
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
    let out = audit(dir.path(), &p).arg(&whl).output().unwrap();
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
    let out = audit(dir.path(), &p).arg(&whl).output().unwrap();
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
    let out = audit(dir.path(), &p).arg(&bin).output().unwrap();
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
    audit(dir.path(), &p).arg(&bin).assert().success();
    let p = policy(dir.path(), "[severity]\npolicy-forbidden-library = \"warning\"\n");
    audit(dir.path(), &p).arg(&bin).assert().success();
    cudadiag(dir.path())
        .args(["audit", "--fail-on", "warning", "--policy"])
        .arg(&p)
        .arg(&bin)
        .assert()
        .code(1);
}

/// The OASIS SARIF 2.1.0 schema, Errata 01 (`tests/data/README.md` says where it comes from), with format checks
/// on, under the draft it declares.
fn sarif_schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("tests/data/sarif-schema-2.1.0.json")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-04/schema#");
    assert!(
        schema["id"]
            .as_str()
            .unwrap()
            .ends_with("/errata01/os/schemas/sarif-schema-2.1.0.json")
    );
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

/// Every schema violation of `doc`, as "path: message".
fn violations(schema: &jsonschema::Validator, doc: &serde_json::Value) -> Vec<String> {
    schema
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Artifact locations that are not RFC 3986 URI references. The draft-04 schema names the format
/// `uri-reference`, which draft-04 validators do not know, so it is checked here with draft-07's checker.
fn bad_uris(doc: &serde_json::Value) -> Vec<String> {
    let check = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft7)
        .should_validate_formats(true)
        .build(&serde_json::json!({"type": "string", "format": "uri-reference"}))
        .unwrap();
    let mut bad = Vec::new();
    for r in doc["runs"][0]["results"].as_array().unwrap() {
        for l in r["locations"].as_array().into_iter().flatten() {
            let uri = &l["physicalLocation"]["artifactLocation"]["uri"];
            if !check.is_valid(uri) {
                bad.push(uri.to_string());
            }
        }
    }
    bad
}

#[test]
fn sarif_output_validates_against_the_oasis_schema() {
    let schema = sarif_schema();
    // A directory whose name needs percent-encoding in a URI, holding a failing wheel.
    let dir = tempfile::tempdir().unwrap();
    let dist = dir.path().join("dist & co <ü> #1");
    std::fs::create_dir(&dist).unwrap();
    let whl = wheel(
        &dist,
        "f-1.0-py3-none-any.whl",
        &[
            ("f/libcuda.so.1", fixture("libkern.so")),
            ("f/_ext.so", fixture("sm80")),
        ],
        &[],
    );
    let p = policy(dir.path(), RELEASE);
    let sarif = |inputs: &[&Path]| {
        let out = cudadiag(dir.path())
            .args(["audit", "--format", "sarif", "--policy"])
            .arg(&p)
            .args(inputs)
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), doc)
    };
    // Failing: findings with locations (a forbidden library, missing SASS and PTX, an old runtime).
    let (code, doc) = sarif(&[&whl, &root().join("fixtures/cuda13/sm80")]);
    assert_eq!(code, Some(1));
    assert_eq!(violations(&schema, &doc), Vec::<String>::new());
    assert_eq!(bad_uris(&doc), Vec::<String>::new());
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let rules = doc["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    for slug in [
        "policy-forbidden-library",
        "policy-missing-arch",
        "policy-missing-ptx",
    ] {
        assert!(rules.iter().any(|r| r["name"] == slug), "{slug}: {rules:?}");
    }
    for r in results {
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[idx]["id"], r["ruleId"]);
        assert!(
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].is_string(),
            "{r}"
        );
    }
    let uri = results
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .find(|u| u.ends_with("!f/libcuda.so.1"))
        .unwrap();
    assert!(
        uri.ends_with("/dist%20&%20co%20%3C%C3%BC%3E%20%231/f-1.0-py3-none-any.whl!f/libcuda.so.1"),
        "{uri}"
    );
    // Passing: no results, still a valid log with its tool and rules.
    let (code, pass) = sarif(&[&root().join("fixtures/cuda13/multi")]);
    assert_eq!(code, Some(0));
    assert_eq!(pass["runs"][0]["results"], serde_json::json!([]));
    assert_eq!(violations(&schema, &pass), Vec::<String>::new());
    // The validator is live: broken logs are rejected where they are broken.
    let mut fatal = doc.clone();
    fatal["runs"][0]["results"][0]["level"] = "fatal".into();
    let v = violations(&schema, &fatal);
    assert!(
        v.iter().any(|e| e.starts_with("/runs/0/results/0/level")),
        "{v:?}"
    );
    let mut no_runs = doc.clone();
    no_runs.as_object_mut().unwrap().remove("runs");
    assert!(!violations(&schema, &no_runs).is_empty());
    let mut no_message = pass.clone();
    no_message["runs"][0]["results"] = serde_json::json!([{"ruleId": "CD600"}]);
    assert!(!violations(&schema, &no_message).is_empty());
    let mut bad_uri = doc.clone();
    bad_uri["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] =
        "dist dir/a.whl".into();
    assert_eq!(bad_uris(&bad_uri), ["\"dist dir/a.whl\""]);
}

#[test]
fn junit_parses_as_xml_and_github_annotations_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let dist = dir.path().join("a&b <c>");
    std::fs::create_dir(&dist).unwrap();
    let whl = wheel(
        &dist,
        "f-1.0-py3-none-any.whl",
        &[("f/libcuda.so.1", fixture("libkern.so"))],
        &[],
    );
    let p = policy(dir.path(), "");
    let run = |format: &str, input: &Path| {
        cudadiag(dir.path())
            .args(["audit", "--format", format, "--policy"])
            .arg(&p)
            .arg(input)
            .output()
            .unwrap()
    };
    // JUnit: well-formed XML (Python's strict expat parser), one failure with the markup escaped; and a
    // passing run with none.
    let parse = |xml: &[u8]| {
        let file = dir.path().join("junit.xml");
        std::fs::write(&file, xml).unwrap();
        let parsed = std::process::Command::new("python3")
            .arg("-c")
            .arg("import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); print(r.tag, r.get('failures'), len(r.findall('.//testcase')), len(r.findall('.//failure'))); print([c.get('name') for c in r.iter('testcase')])")
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            parsed.status.success(),
            "{}",
            String::from_utf8_lossy(&parsed.stderr)
        );
        String::from_utf8_lossy(&parsed.stdout).to_string()
    };
    let out = run("junit", &whl);
    assert_eq!(out.status.code(), Some(1));
    let parsed = parse(&out.stdout);
    assert!(parsed.starts_with("testsuites 1 1 1\n"), "{parsed}");
    assert!(
        parsed.contains("a&b <c>/f-1.0-py3-none-any.whl!f/libcuda.so.1"),
        "{parsed}"
    );
    let out = run("junit", &root().join("fixtures/cuda13/multi"));
    assert_eq!(out.status.code(), Some(0));
    assert!(parse(&out.stdout).starts_with("testsuites 0 1 0\n"));
    // GitHub annotations.
    let out = run("github", &whl);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("::error ")).unwrap();
    assert!(
        line.contains("file=") && line.contains("title=CD603 policy-forbidden-library::"),
        "{line}"
    );
}

/// A shared object whose DT_NEEDED are `needed`, linked by `cc` against empty stand-ins with those SONAMEs.
fn elf_needing(needed: &[&str]) -> Vec<u8> {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("ext.c");
    std::fs::write(&src, "int ext(void) { return 0; }\n").unwrap();
    let cc = |out: &Path, extra: &[String]| {
        let ok = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(out)
            .arg(&src)
            .args(extra)
            .status()
            .unwrap();
        assert!(ok.success());
    };
    let mut args = vec![
        "-Wl,--no-as-needed".to_string(),
        format!("-L{}", work.path().display()),
    ];
    for n in needed {
        cc(&work.path().join(n), &[format!("-Wl,-soname,{n}")]);
        args.push(format!("-l:{n}"));
    }
    let out = work.path().join("ext.so");
    cc(&out, &args);
    std::fs::read(out).unwrap()
}

/// A stand-in CUDA library to bundle in a wheel: an ELF shared object with that SONAME.
fn stand_in(soname: &str) -> Vec<u8> {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("lib.c");
    std::fs::write(&src, "int lib(void) { return 0; }\n").unwrap();
    let out = work.path().join(soname);
    let ok = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&src)
        .arg(format!("-Wl,-soname,{soname}"))
        .status()
        .unwrap();
    assert!(ok.success());
    std::fs::read(out).unwrap()
}

/// `audit --format json` of `inputs`, checked against the JSON contract; (exit code, report).
fn audit_json(
    dir: &Path,
    policy: &Path,
    inputs: &[&Path],
    extra: &[&str],
) -> (Option<i32>, serde_json::Value) {
    let out = cudadiag(dir)
        .args(["audit", "--format", "json", "--policy"])
        .arg(policy)
        .args(extra)
        .args(inputs)
        .output()
        .unwrap();
    let checker = root().join("../shared/contract/check_report.py");
    assert!(checker.exists(), "CI provides ../shared/contract/check_report.py");
    let report = dir.join("report.json");
    std::fs::write(&report, &out.stdout).unwrap();
    let check = std::process::Command::new("python3")
        .arg(&checker)
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    (out.status.code(), serde_json::from_slice(&out.stdout).unwrap())
}

fn findings<'a>(v: &'a serde_json::Value, slug: &str) -> Vec<&'a serde_json::Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["slug"] == slug)
        .collect()
}

fn library<'a>(v: &'a serde_json::Value, soname: &str) -> &'a serde_json::Value {
    v["wheels"][0]["cuda_libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == soname)
        .unwrap_or_else(|| panic!("{soname}: {}", v["wheels"]))
}

#[test]
fn a_declared_dependency_provides_the_cuda_library_a_binary_needs() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(dir.path(), "[targets]\ncuda-majors = [12]\n");
    let ext = elf_needing(&["libcublas.so.12", "libcudart.so.12"]);
    let whl = wheel(
        dir.path(),
        "pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[("pkg/_ext.so", ext.clone())],
        &[
            "numpy>=2",
            "nvidia-cublas-cu12==12.4.5.8; platform_system == \"Linux\"",
            "nvidia-cuda-runtime-cu12; sys_platform == \"linux\" and python_version >= \"3.9\"",
        ],
    );
    let (code, v) = audit_json(dir.path(), &p, &[&whl], &[]);
    assert_eq!(code, Some(0), "{}", v["findings"]);
    assert!(findings(&v, "library-not-found").is_empty());
    let l = library(&v, "libcublas.so.12");
    assert_eq!(l["provided"], "dependency");
    assert_eq!(l["distribution"], "nvidia-cublas-cu12");
    assert_eq!(l["major"], 12);
    assert!(
        l["by"]
            .as_str()
            .unwrap()
            .starts_with("nvidia-cublas-cu12==12.4.5.8")
    );
    assert_eq!(library(&v, "libcudart.so.12")["provided"], "dependency");
    let reqs = v["wheels"][0]["requirements"].as_array().unwrap();
    assert_eq!(
        reqs[0]["cuda"],
        serde_json::Value::Null,
        "numpy installs no CUDA library"
    );
    assert_eq!(reqs[1]["installed"], "always");
    // The human report says where each library comes from.
    let out = cudadiag(dir.path())
        .args(["audit", "--policy"])
        .arg(&p)
        .arg(&whl)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("libcublas.so.12  from nvidia-cublas-cu12==12.4.5.8 → nvidia-cublas-cu12, CUDA 12"),
        "{text}"
    );
    // The near miss: a dependency whose marker does not hold on Linux provides nothing.
    let windows = wheel(
        dir.path(),
        "win-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[("pkg/_ext.so", ext)],
        &[
            "nvidia-cublas-cu12; platform_system == \"Windows\"",
            "nvidia-cuda-runtime-cu12",
        ],
    );
    let (code, v) = audit_json(dir.path(), &p, &[&windows], &[]);
    assert_eq!(code, Some(1));
    assert_eq!(library(&v, "libcublas.so.12")["provided"], "missing");
    assert_eq!(v["wheels"][0]["requirements"][0]["installed"], "never");
}

#[test]
fn a_cuda_library_neither_bundled_nor_declared_is_library_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(dir.path(), "");
    let ext = elf_needing(&["libcublas.so.12", "libcudart.so.12", "libm.so.6"]);
    let whl = wheel(
        dir.path(),
        "pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[("pkg/_ext.so", ext.clone())],
        &["nvidia-cuda-runtime-cu12==12.8.90"],
    );
    let (code, v) = audit_json(dir.path(), &p, &[&whl], &[]);
    assert_eq!(code, Some(1));
    let nf = findings(&v, "library-not-found");
    assert_eq!(nf.len(), 1, "{nf:?}");
    let f = nf[0];
    assert_eq!(f["severity"], "error");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("libcublas.so.12 will not be found"),
        "{f}"
    );
    // The help names the package of the binary's CUDA major (12, from libcudart.so.12), not cu13's.
    let help = f["help"].as_str().unwrap();
    assert!(
        help.contains("`nvidia-cublas-cu12`") && !help.contains("nvidia-cublas`"),
        "{help}"
    );
    assert_eq!(library(&v, "libcublas.so.12")["provided"], "missing");
    // libm is not a CUDA library: not listed, no finding.
    assert!(
        v["wheels"][0]["cuda_libraries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["soname"] != "libm.so.6")
    );
    // Bundled in the wheel: found there.
    let bundled = wheel(
        dir.path(),
        "bundled-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[
            ("pkg/_ext.so", ext.clone()),
            ("pkg.libs/libcublas.so.12", stand_in("libcublas.so.12")),
        ],
        &["nvidia-cuda-runtime-cu12==12.8.90"],
    );
    let (code, v) = audit_json(dir.path(), &p, &[&bundled], &[]);
    assert_eq!(code, Some(0), "{}", v["findings"]);
    let l = library(&v, "libcublas.so.12");
    assert_eq!(
        (l["provided"].as_str(), l["by"].as_str()),
        (Some("bundled"), Some("pkg.libs/libcublas.so.12"))
    );
    // Provided only by an extra: a warning that names the extra.
    let extra = wheel(
        dir.path(),
        "extra-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[("pkg/_ext.so", ext)],
        &[
            "nvidia-cuda-runtime-cu12==12.8.90",
            "cuda-toolkit[cublas]==12.*; extra == \"ctk\"",
        ],
    );
    let (code, v) = audit_json(dir.path(), &p, &[&extra], &[]);
    assert_eq!(code, Some(0));
    let nf = findings(&v, "library-not-found");
    assert_eq!(nf.len(), 1);
    assert_eq!(nf[0]["severity"], "warning");
    assert!(
        nf[0]["message"]
            .as_str()
            .unwrap()
            .contains("only with the [ctk] extra"),
        "{}",
        nf[0]
    );
    assert_eq!(library(&v, "libcublas.so.12")["provided"], "extra");
    let (code, _) = audit_json(dir.path(), &p, &[&extra], &["--fail-on", "warning"]);
    assert_eq!(code, Some(1));
}

#[test]
fn a_declared_dependency_counts_for_cuda_majors_and_mixed_majors() {
    let dir = tempfile::tempdir().unwrap();
    let ext = elf_needing(&["libcudart.so.13", "libcufft.so.11"]);
    let whl = wheel(
        dir.path(),
        "pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[("pkg/_ext.so", ext)],
        &["nvidia-cuda-runtime==13.0.96", "nvidia-cufft-cu12==11.4.1.4"],
    );
    // The CUDA 12 cuFFT is declared; the policy allows CUDA 13 only.
    let p = policy(dir.path(), "[targets]\ncuda-majors = [13]\n");
    let (code, v) = audit_json(dir.path(), &p, &[&whl], &[]);
    assert_eq!(code, Some(1));
    let forbidden = findings(&v, "policy-forbidden-library");
    assert_eq!(forbidden.len(), 1, "{forbidden:?}");
    let f = forbidden[0];
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("declares `nvidia-cufft-cu12`, a CUDA 12 package"),
        "{f}"
    );
    assert!(
        f["evidence"]
            .to_string()
            .contains("cudadiag.toml:2 (targets.cuda-majors)"),
        "{f}"
    );
    // libcufft.so.11 carries no CUDA major in its name; its package does: the binary mixes 12 and 13.
    let mixed = findings(&v, "multiple-cuda-majors");
    assert_eq!(mixed.len(), 1, "{mixed:?}");
    let evidence = mixed[0]["evidence"].to_string();
    assert!(
        evidence.contains("CUDA 12: libcufft.so.11 from nvidia-cufft-cu12")
            && evidence.contains("CUDA 13: shared CUDA runtime 13.0"),
        "{evidence}"
    );
    // The near misses: both majors allowed; and one major throughout.
    let p = policy(dir.path(), "[targets]\ncuda-majors = [12, 13]\n");
    let (_, v) = audit_json(dir.path(), &p, &[&whl], &[]);
    assert!(findings(&v, "policy-forbidden-library").is_empty());
    let one = wheel(
        dir.path(),
        "one-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[(
            "pkg/_ext.so",
            elf_needing(&["libcudart.so.13", "libcufft.so.12", "libcusparse.so.12"]),
        )],
        // CUDA 13's cuFFT and cuSPARSE keep sonames 12 (torch 2.15's libtorch_cuda.so needs both).
        &["cuda-toolkit[cudart,cufft,cusparse]==13.0.2"],
    );
    let p = policy(dir.path(), "[targets]\ncuda-majors = [13]\n");
    let (code, v) = audit_json(dir.path(), &p, &[&one], &[]);
    assert_eq!(code, Some(0), "{}", v["findings"]);
    assert!(findings(&v, "multiple-cuda-majors").is_empty());
    assert_eq!(library(&v, "libcufft.so.12")["distribution"], "nvidia-cufft");
    assert_eq!(library(&v, "libcusparse.so.12")["major"], 13);
}

#[test]
fn a_pinned_runtime_dependency_is_the_runtime_min_driver_checks() {
    let dir = tempfile::tempdir().unwrap();
    let ext = elf_needing(&["libcudart.so.12"]);
    let make = |name: &str, members: &[(&str, Vec<u8>)], requires: &[&str]| {
        wheel(dir.path(), name, members, requires)
    };
    let pinned = make(
        "pinned-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[("pkg/_ext.so", ext.clone())],
        &["nvidia-cuda-runtime-cu12==12.8.90"],
    );
    let range = make(
        "range-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[("pkg/_ext.so", ext.clone())],
        &["nvidia-cuda-runtime-cu12>=12.0"],
    );
    // 535.104.05 is the CUDA 12.2 driver: a 12.8 runtime runs on it only through minor-version compatibility.
    let p = policy(dir.path(), "[targets]\nmin-driver = \"535.104.05\"\n");
    let (code, v) = audit_json(dir.path(), &p, &[&pinned], &["--fail-on", "warning"]);
    assert_eq!(code, Some(1));
    assert_eq!(v["binaries"][0]["cudart"]["version"], "12.8");
    let mvc = findings(&v, "minor-version-compat");
    assert_eq!(mvc.len(), 1, "{}", v["findings"]);
    assert!(
        mvc[0]["evidence"]
            .to_string()
            .contains("`nvidia-cuda-runtime-cu12==12.8.90`, which pins runtime version 12.8"),
        "{}",
        mvc[0]
    );
    // A range pins nothing: only the major is known, which the 12.2 driver supports.
    let (code, v) = audit_json(dir.path(), &p, &[&range], &["--fail-on", "warning"]);
    assert_eq!(code, Some(0), "{}", v["findings"]);
    assert_eq!(v["binaries"][0]["cudart"]["version"], serde_json::Value::Null);
    // Below CUDA 12's floor (R520, CUDA 11.8) it is policy-min-driver, and the pinned version is what it asks for.
    let p = policy(dir.path(), "[targets]\nmin-driver = \"520.61.05\"\n");
    let (code, v) = audit_json(dir.path(), &p, &[&pinned], &[]);
    assert_eq!(code, Some(1));
    let md = findings(&v, "policy-min-driver");
    assert_eq!(md.len(), 1);
    assert!(
        md[0]["message"].as_str().unwrap().contains("CUDA 12.8 runtime"),
        "{}",
        md[0]
    );
    // A wheel that bundles libcudart loads its own copy: the dependency's pin does not apply.
    let bundled = make(
        "bundled-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        &[
            ("pkg/_ext.so", ext),
            ("pkg.libs/libcudart.so.12", stand_in("libcudart.so.12")),
        ],
        &["nvidia-cuda-runtime-cu12==12.8.90"],
    );
    let p = policy(dir.path(), "[targets]\nmin-driver = \"535.104.05\"\n");
    let (_, v) = audit_json(dir.path(), &p, &[&bundled], &[]);
    let ext_facts = v["binaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["path"].as_str().unwrap().ends_with("!pkg/_ext.so"))
        .unwrap();
    assert_eq!(ext_facts["cudart"]["version"], serde_json::Value::Null);
    assert!(findings(&v, "minor-version-compat").is_empty());
}

#[test]
fn a_large_wheel_member_is_inspected_from_a_temporary_file_with_the_same_facts() {
    // Past 32 MiB a member is inflated to an anonymous temporary file and mapped (src/inspect/wheel.rs,
    // SPILL_OVER); below, into memory. Zeros after the ELF's last byte change none of its facts but its size.
    let dir = tempfile::tempdir().unwrap();
    let small = fixture("multi");
    let mut large = small.clone();
    large.resize(40 << 20, 0);
    let whl = wheel(
        dir.path(),
        "big-1.0-py3-none-any.whl",
        &[("pkg/small.so", small), ("pkg/large.so", large)],
        &[],
    );
    let p = policy(dir.path(), "");
    let (_, v) = audit_json(dir.path(), &p, &[&whl], &[]);
    let facts = |name: &str| {
        let mut b = v["binaries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["path"].as_str().unwrap().ends_with(name))
            .unwrap()
            .clone();
        let size = b["size"].as_u64().unwrap();
        for k in ["path", "size"] {
            b.as_object_mut().unwrap().remove(k);
        }
        (size, b)
    };
    let (small_size, small) = facts("!pkg/small.so");
    let (large_size, large) = facts("!pkg/large.so");
    assert_eq!(large_size, 40 << 20);
    assert!(small_size < large_size);
    assert!(!small["device_code"].as_array().unwrap().is_empty());
    assert_eq!(small, large);
}

/// `[targets] glibc`: a program built on this machine needs `__libc_start_main@GLIBC_2.34` (every program
/// linked against glibc 2.34 or later does), so a glibc 2.17 policy fails it, in a wheel too, and a 2.34
/// policy does not.
#[test]
fn a_release_needing_a_newer_glibc_than_the_policy_fails() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("main.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let exe = dir.path().join("app");
    let built = std::process::Command::new("cc")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(built.success());
    let strict = policy(dir.path(), "[targets]\nglibc = \"2.17\"\n");
    let (code, v) = audit_json(dir.path(), &strict, &[&exe], &[]);
    assert_eq!(code, Some(1), "{}", v["findings"]);
    let f = findings(&v, "policy-glibc");
    assert_eq!(f.len(), 1, "{}", v["findings"]);
    assert_eq!(f[0]["code"], "CD606");
    let message = f[0]["message"].as_str().unwrap();
    assert!(
        message.ends_with("needs GLIBC_2.34 (from libc.so.6), the policy's oldest glibc is 2.17: version `GLIBC_2.34' not found there"),
        "{message}"
    );
    let because = f[0]["evidence"].to_string();
    assert!(because.contains("__libc_start_main@GLIBC_2.34"), "{because}");
    assert!(because.contains("cudadiag.toml:2 (targets.glibc)"), "{because}");
    assert!(
        f[0]["help"]
            .as_str()
            .unwrap()
            .contains("x86_64-unknown-linux-gnu.2.17")
    );
    assert_eq!(v["binaries"][0]["glibc"]["needs"], "2.34");
    // The same program inside a wheel is audited the same way.
    let whl = wheel(
        dir.path(),
        "pkg-1.0-py3-none-manylinux2014_x86_64.whl",
        &[("pkg/bin/app", std::fs::read(&exe).unwrap())],
        &[],
    );
    let (code, v) = audit_json(dir.path(), &strict, &[&whl], &[]);
    assert_eq!(code, Some(1));
    assert_eq!(findings(&v, "policy-glibc").len(), 1, "{}", v["findings"]);
    // Near miss: a policy of glibc 2.34 accepts it.
    let recent = policy(dir.path(), "[targets]\nglibc = \"2.34\"\n");
    let (code, v) = audit_json(dir.path(), &recent, &[&exe], &[]);
    assert!(findings(&v, "policy-glibc").is_empty(), "{}", v["findings"]);
    assert_eq!(code, Some(0), "{}", v["findings"]);
}

/// Issue 19, case 2: a wheel member's name and its METADATA reached the terminal raw in the human and `github`
/// reports.
#[test]
fn hostile_wheel_member_and_metadata_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(dir.path(), "[targets]\ncuda-majors = [12]\n");
    let path = dir.path().join("pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    zip.start_file("pkg/_ext\x1b]0;pwned\x07\u{9b}2J.so", opts)
        .unwrap();
    zip.write_all(&elf_needing(&["libcudart.so.12", "libcublas.so.12"]))
        .unwrap();
    zip.start_file("pkg-1.0.dist-info/METADATA", opts).unwrap();
    zip.write_all(
        b"Metadata-Version: 2.1\nName: pkg\x1b[2J\nVersion: 1.0\x07\nRequires-Dist: nvidia-cuda-runtime-cu12\x1b]0;x\x07\n",
    )
    .unwrap();
    zip.finish().unwrap();
    for format in ["human", "github"] {
        let out = audit(dir.path(), &p)
            .args(["--format", format])
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07) && !text.contains('\u{9b}'),
            "{format}: {text:?}"
        );
        assert!(
            text.contains("_ext\\e]0;pwned\\x07\\u{9b}2J.so"),
            "{format}: {text}"
        );
        if format == "human" {
            assert!(text.contains("pkg\\e[2J 1.0\\x07"), "{text}");
        }
    }
}

/// Issue 19, case 7: a directory whose `libbad.so` could not be read audited as "0 binaries", exit 0. Tests
/// run as root, who reads anything, so the unreadable inputs here are a dangling link and a FIFO, and, where
/// `setpriv` can drop to `nobody`, a `chmod 000` file read by an unprivileged user.
#[test]
fn unreadable_inputs_fail_the_audit_as_input_unreadable() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = policy(dir.path(), "[targets]\n");
    let dist = dir.path().join("dist");
    std::fs::create_dir(&dist).unwrap();
    std::fs::write(dist.join("libgood.so"), stand_in("libgood.so")).unwrap();
    // Near misses: a link to a file that exists and a subdirectory give nothing.
    std::os::unix::fs::symlink("libgood.so", dist.join("libgood.so.1")).unwrap();
    std::fs::create_dir(dist.join("sub")).unwrap();
    let (code, v) = audit_json(dir.path(), &p, &[&dist], &[]);
    assert_eq!(code, Some(0), "{}", v["findings"]);
    assert!(findings(&v, "input-unreadable").is_empty());

    std::os::unix::fs::symlink("missing.so", dist.join("libbad.so")).unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(dist.join("libpipe.so"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let (code, v) = audit_json(dir.path(), &p, &[&dist], &[]);
    assert_eq!(code, Some(1), "{}", v["findings"]);
    let found = findings(&v, "input-unreadable");
    let text = serde_json::to_string(&found).unwrap();
    assert_eq!(found.len(), 2, "{text}");
    assert!(
        text.contains("libbad.so") && text.contains("missing.so"),
        "{text}"
    );
    assert!(text.contains("libpipe.so") && text.contains("FIFO"), "{text}");
    assert!(
        found
            .iter()
            .all(|f| f["code"] == "CD107" && f["severity"] == "error")
    );
    let human = audit(dir.path(), &p).arg(&dist).output().unwrap();
    assert_eq!(human.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&human.stdout).contains("error[CD107] input-unreadable"));

    // A file its reader may not open, read by an unprivileged user.
    let _ = std::fs::remove_file(dist.join("libpipe.so"));
    let _ = std::fs::remove_file(dist.join("libbad.so"));
    let secret = dist.join("libsecret.so");
    std::fs::write(&secret, stand_in("libsecret.so")).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .unwrap()
        .stdout
        == b"0\n";
    if is_root && Path::new("/usr/bin/setpriv").exists() {
        let out = std::process::Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(assert_cmd::cargo::cargo_bin("cudadiag"))
            .args(["--color", "never", "audit", "--policy"])
            .arg(&p)
            .arg(&dist)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("libsecret.so: cannot be read: Permission denied"),
            "{text}"
        );
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A zip written by hand: one stored member, then `entries` central-directory records that all point at it
/// (what no zip writer does, and a zip bomb does).
fn zip_sharing_one_member(data: &[u8], entries: usize) -> Vec<u8> {
    let crc = crc32(data);
    let local_name = b"pkg/lib0.so";
    let mut z = Vec::new();
    let fixed = |z: &mut Vec<u8>, name_len: usize| {
        z.extend_from_slice(&20u16.to_le_bytes()); // version needed
        z.extend_from_slice(&0u16.to_le_bytes()); // flags
        z.extend_from_slice(&0u16.to_le_bytes()); // stored
        z.extend_from_slice(&0u32.to_le_bytes()); // time, date
        z.extend_from_slice(&crc.to_le_bytes());
        z.extend_from_slice(&(data.len() as u32).to_le_bytes());
        z.extend_from_slice(&(data.len() as u32).to_le_bytes());
        z.extend_from_slice(&(name_len as u16).to_le_bytes());
        z.extend_from_slice(&0u16.to_le_bytes()); // extra length
    };
    z.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
    fixed(&mut z, local_name.len());
    z.extend_from_slice(local_name);
    z.extend_from_slice(data);
    let cd_start = z.len();
    for i in 0..entries {
        let name = format!("pkg/lib{i}.so");
        z.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        z.extend_from_slice(&20u16.to_le_bytes()); // version made by
        fixed(&mut z, name.len());
        z.extend_from_slice(&[0u8; 6]); // comment length, disk, internal attributes
        z.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        z.extend_from_slice(&0u32.to_le_bytes()); // local header offset: all the same
        z.extend_from_slice(name.as_bytes());
    }
    let cd_len = z.len() - cd_start;
    z.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    z.extend_from_slice(&[0u8; 4]);
    z.extend_from_slice(&(entries as u16).to_le_bytes());
    z.extend_from_slice(&(entries as u16).to_le_bytes());
    z.extend_from_slice(&(cd_len as u32).to_le_bytes());
    z.extend_from_slice(&(cd_start as u32).to_le_bytes());
    z.extend_from_slice(&0u16.to_le_bytes());
    z
}

/// Issue 19, case 5: a 1 MB wheel with 40 central-directory entries pointing at one 1 GiB member wrote 40 GiB
/// to `$TMPDIR`. The wheel is now reported, and the shared data read once.
#[test]
fn zip_entries_sharing_one_members_data_are_reported_and_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(dir.path(), "[targets]\n");
    let lib = stand_in("libshared.so");
    let whl = dir.path().join("bomb-1.0-py3-none-any.whl");
    std::fs::write(&whl, zip_sharing_one_member(&lib, 40)).unwrap();
    let (code, v) = audit_json(dir.path(), &p, &[&whl], &[]);
    assert_eq!(code, Some(1), "{}", v["findings"]);
    let bad = findings(&v, "malformed-binary");
    assert_eq!(bad.len(), 1, "{}", v["findings"]);
    let message = bad[0]["message"].as_str().unwrap();
    assert!(message.contains("39 zip entries share or overlap"), "{message}");
    let read: Vec<&str> = v["binaries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["format"] == "elf")
        .map(|b| b["path"].as_str().unwrap())
        .collect();
    assert_eq!(read.len(), 1, "{read:?}");
    // Near miss: one entry per member is an ordinary wheel.
    std::fs::write(&whl, zip_sharing_one_member(&lib, 1)).unwrap();
    let (code, v) = audit_json(dir.path(), &p, &[&whl], &[]);
    assert_eq!(code, Some(0), "{}", v["findings"]);
}

/// Case 10 of issue 19: 40,000 `sass` entries (two architectures, repeated) made 40,000 target GPUs and as
/// many findings, and every forbid glob was recompiled per binary. Repeats are one requirement: one finding
/// per distinct architecture missing, whatever the number of repeats.
#[test]
fn repeated_policy_entries_are_one_requirement() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("[targets]\nsass = [\n");
    for _ in 0..20_000 {
        text.push_str("\"sm_80\", \"sm_90\",\n");
    }
    text.push_str("]\n[libraries]\nforbid = [\n");
    for _ in 0..20_000 {
        text.push_str("\"libcuda.so*\", \"libnvidia-ml.so*\",\n");
    }
    text.push_str("]\n");
    let p = policy(dir.path(), &text);
    let out = cudadiag(dir.path())
        .args(["audit", "--format", "json", "--policy"])
        .arg(&p)
        .arg(root().join("fixtures/cuda13/sm80"))
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let arch = findings(&v, "policy-missing-arch");
    assert_eq!(arch.len(), 1, "{arch:?}");
    assert!(arch[0]["message"].as_str().unwrap().contains("sm_90"));
    // Nothing else multiplies with the repeats.
    assert!(v["findings"].as_array().unwrap().len() < 10, "{}", v["findings"]);
    // The near miss: a bundled libcuda is still forbidden by the first of the repeated patterns.
    let w = wheel(
        dir.path(),
        "pkg-1.0-py3-none-manylinux2014_x86_64.whl",
        &[("pkg/libcuda.so.1", stand_in("libcuda.so.1"))],
        &[],
    );
    let out = cudadiag(dir.path())
        .args(["audit", "--format", "json", "--policy"])
        .arg(&p)
        .arg(&w)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let forbidden = findings(&v, "policy-forbidden-library");
    assert_eq!(forbidden.len(), 1, "{forbidden:?}");
    assert!(
        forbidden[0].to_string().contains("libcuda.so*"),
        "{}",
        forbidden[0]
    );
}

/// Golden: `audit` of a single-arch binary against a release policy that wants more, as a person reads it; and
/// nothing on stderr, which is not a terminal here (no progress line, even asked for at once).
#[test]
fn golden_audit_failing_policy() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(dir.path(), RELEASE);
    let out = audit(dir.path(), &p)
        .env("CUDADIAG_PROGRESS_DELAY_MS", "0")
        .arg(root().join("fixtures/cuda13/sm80"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let here = root().display().to_string();
    let tmp = dir.path().display().to_string();
    insta::assert_snapshot!(
        "audit_failing_policy",
        golden::transcript(&out, &[(&tmp, "[TMP]"), (&here, "[REPO]")])
    );
}
