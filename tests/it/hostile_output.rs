//! Image data that tries to write lines of its own: a RepoTag, a layer name or an Entrypoint word carrying a
//! newline and a GitHub workflow command, and names with multibyte and control characters. Whatever the format,
//! neither standard output nor standard error may carry a line the data chose, and no renderer may cut text
//! inside a character (issue 33, classes 6 and 7).

use crate::image::run;
use crate::support::cli::cudadiag;
use crate::support::image::{Image, Layer, archive, system_layer};
use serde_json::Value;
use std::path::Path;

const FORMATS: &[&str] = &["human", "json", "sarif", "junit", "github"];

/// The payload: a newline, then a line that an Actions runner would obey.
const FORGED: &str = "x\n::error file=forged.rs,line=1::forged\n::add-mask::forged\r\n\x1b[2Jforged";

/// `docker save` members of a tiny image, with the manifest's entries rewritten by `edit`.
fn docker(
    img: &Image,
    dir: &Path,
    name: &str,
    edit: impl Fn(&mut Value, &mut Vec<(String, Vec<u8>)>),
) -> String {
    let mut members = img.docker_members();
    let at = members.iter().position(|(n, _)| n == "manifest.json").unwrap();
    let mut manifest: Value = serde_json::from_slice(&members[at].1).unwrap();
    edit(&mut manifest, &mut members);
    let at = members.iter().position(|(n, _)| n == "manifest.json").unwrap();
    members[at].1 = serde_json::to_vec(&manifest).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, archive(&members)).unwrap();
    path.to_str().unwrap().to_string()
}

/// A CUDA 13 program image: the system layer and a fixture program run by `Cmd`.
fn small() -> Image {
    let app = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/multi")).unwrap();
    Image::new(vec![system_layer(), Layer::new().exe("usr/local/bin/app", &app)])
        .cuda13()
        .cmd(&["app"])
}

/// Every line of `text` is one the tool wrote: none starts with a workflow command the data chose, none is the
/// forged text, no raw control character but the newline.
fn assert_no_forged_line(what: &str, text: &str) {
    for line in text.lines() {
        let forged = line.starts_with("::error file=forged")
            || line.starts_with("::add-mask::")
            || line.starts_with("forged")
            || line.contains('\r')
            || line.contains('\x1b');
        assert!(
            !forged,
            "{what}: a line the data chose: {line:?}\n--- whole:\n{text}"
        );
    }
}

/// The three ways the attack put data on a line: two RepoTags (the "which image" error quotes them), a
/// layer the manifest names but the archive lacks, an Entrypoint word that is not in the image.
fn hostile_images(dir: &Path) -> Vec<(String, String)> {
    let img = small();
    let tags = docker(&img, dir, "tags.tar", |m, _| {
        let mut second = m[0].clone();
        second["RepoTags"] = serde_json::json!([format!("b:{FORGED}")]);
        m[0]["RepoTags"] = serde_json::json!([format!("a:{FORGED}")]);
        m.as_array_mut().unwrap().push(second);
    });
    let layer = docker(&img, dir, "layer.tar", |m, _| {
        m[0]["Layers"]
            .as_array_mut()
            .unwrap()
            .push(Value::String(format!("{FORGED}/layer.tar")));
    });
    let entry = small().entrypoint(&[FORGED]);
    let entry = docker(&entry, dir, "entry.tar", |_, _| {});
    vec![
        ("RepoTag".into(), tags),
        ("layer name".into(), layer),
        ("Entrypoint word".into(), entry),
    ]
}

#[test]
fn forged_lines_on_stderr() {
    let t = tempfile::tempdir().unwrap();
    for (what, image) in hostile_images(t.path()) {
        for format in FORMATS {
            let (code, out, err) = run(&["inspect", "--image", &image, "--no-host", "--format", format]);
            let case = format!("{what}, --format {format} (exit {code})");
            assert_ne!(code, 101, "{case}: panicked: {err}");
            assert!(
                !err.is_empty() || code != 2,
                "{case}: exit 2 with nothing on stderr"
            );
            assert_no_forged_line(&format!("{case}, stderr"), &err);
            assert_no_forged_line(&format!("{case}, stdout"), &out);
            // An error is one line.
            assert!(err.lines().count() <= 1, "{case}: {err}");
        }
    }
}

/// The OCI-style `docker save` config name `blobs/sha256/` + multibyte text: the human header cut it by bytes.
#[test]
fn a_multibyte_config_name_does_not_panic_the_image_header() {
    let t = tempfile::tempdir().unwrap();
    let img = small();
    for (i, tail) in [
        "ééééééééé",
        "aéééééééé",
        "日本語の設定ファイル名",
        "a\u{0301}\u{0301}\u{0301}\u{0301}\u{0301}\u{0301}",
        "\n\x1b]0;x\x07é\u{202e}",
    ]
    .iter()
    .enumerate()
    {
        let image = docker(&img, t.path(), &format!("mb{i}.tar"), |m, members| {
            let old = m[0]["Config"].as_str().unwrap().to_string();
            let new = format!("blobs/sha256/{tail}");
            for (n, _) in members.iter_mut() {
                if *n == old {
                    n.clone_from(&new);
                }
            }
            m[0]["Config"] = Value::String(new);
        });
        for format in FORMATS {
            let (code, out, err) = run(&[
                "inspect",
                "--image",
                &image,
                "--no-host",
                "--format",
                format,
                "-v",
            ]);
            let case = format!("config {tail:?}, --format {format}");
            assert_ne!(code, 101, "{case}: panicked: {err}");
            assert!(!err.contains("panicked"), "{case}: {err}");
            assert_no_forged_line(&format!("{case}, stdout"), &out);
            assert_no_forged_line(&format!("{case}, stderr"), &err);
        }
    }
}

/// Data that reaches the report itself: a single image whose RepoTag, program path and Entrypoint carry the
/// payload, and a binary on disk whose file name does. Every format, both streams.
#[test]
fn forged_lines_on_stdout_from_image_and_path_data() {
    let t = tempfile::tempdir().unwrap();
    let app = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cuda13/multi")).unwrap();
    let dir = format!("opt/{}", FORGED.replace('/', "_"));
    let img = Image::new(vec![
        system_layer(),
        Layer::new().exe(&format!("{dir}/app"), &app),
    ])
    .cuda13()
    .entrypoint(&[&format!("/{dir}/app"), FORGED]);
    let image = docker(&img, t.path(), "one.tar", |m, _| {
        m[0]["RepoTags"] = serde_json::json!([format!("a:{FORGED}")]);
    });
    let file = t.path().join(FORGED.replace('/', "_"));
    std::fs::write(&file, &app).unwrap();
    let file = file.to_str().unwrap();
    let policy = t.path().join("cudadiag.toml");
    std::fs::write(&policy, "[targets]\nsass = [\"sm_70\"]\n").unwrap();
    let policy = policy.to_str().unwrap();
    let runs: [&[&str]; 3] = [
        &[
            "inspect",
            "--image",
            &image,
            "--gpu",
            "7.0",
            "--driver",
            "580.159.04",
            "-v",
        ],
        &[
            "inspect",
            file,
            "--gpu",
            "7.0",
            "--driver",
            "580.159.04",
            "--no-host",
        ],
        &["audit", file, "--policy", policy],
    ];
    for args in runs {
        for format in FORMATS {
            let mut a = args.to_vec();
            a.extend(["--format", format]);
            let (code, out, err) = run(&a);
            let case = format!("{} --format {format} (exit {code})", args[0]);
            assert!(code == 0 || code == 1, "{case}: {err}");
            assert_no_forged_line(&format!("{case}, stdout"), &out);
            assert_no_forged_line(&format!("{case}, stderr"), &err);
            if *format == "github" {
                // The data is there, shown: the test looked at a finding that quotes it.
                assert!(
                    out.starts_with("::error ") && out.contains("forged"),
                    "{case}: {out}"
                );
                for line in out.lines().filter(|l| l.starts_with("::")) {
                    let known = ["::error ", "::warning ", "::notice "];
                    assert!(known.iter().any(|k| line.starts_with(k)), "{case}: {line:?}");
                    // One command per line: the properties end at the first `::` after the command.
                    let props = line.split_once(' ').unwrap().1.split_once("::").unwrap().0;
                    assert!(
                        !props.contains('\n') && !props.contains(",line=1"),
                        "{case}: {line:?}"
                    );
                }
            }
        }
    }
}

/// `CUDA_VISIBLE_DEVICES` and GPU UUIDs are data too: their prefixes were cut by bytes (`ab€`, a UUID of
/// multibyte characters) and `doctor` panicked, on the machine itself as on a snapshot.
#[test]
fn a_multibyte_cuda_visible_devices_does_not_panic() {
    let t = tempfile::tempdir().unwrap();
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts/healthy");
    let mut args = crate::support::cli::machine_args(&case.join("root"), &case.join("env"), &[]);
    let snap = t.path().join("s.json");
    args.splice(
        0..0,
        ["snapshot".to_string(), "-o".into(), snap.display().to_string()],
    );
    let out = cudadiag().args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plain: Value = serde_json::from_slice(&std::fs::read(&snap).unwrap()).unwrap();
    assert!(
        !plain["facts"]["host"]["gpus"].as_array().unwrap().is_empty(),
        "the fixture has no GPU: the UUID case would test nothing"
    );
    for (visible, uuid) in [
        ("ab€", None),
        ("MI€", None),
        ("GPU-€", None),
        ("GPU-a", Some("GPU-€€€")),
    ] {
        let mut v = plain.clone();
        v["facts"]["host"]["env"]["vars"]["CUDA_VISIBLE_DEVICES"] = Value::String(visible.into());
        if let Some(u) = uuid {
            for g in v["facts"]["host"]["gpus"].as_array_mut().unwrap() {
                g["uuid"] = Value::String(u.into());
            }
        }
        std::fs::write(&snap, serde_json::to_vec(&v).unwrap()).unwrap();
        for format in FORMATS {
            let (code, out, err) = run(&["doctor", "--facts", snap.to_str().unwrap(), "--format", format]);
            let case = format!("CUDA_VISIBLE_DEVICES={visible:?}, uuid {uuid:?}, --format {format}");
            assert!(code == 0 || code == 1, "{case}: exit {code}: {err}");
            if *format == "json" {
                assert!(out.contains("\"no-visible-devices\""), "{case}: {out}");
            }
        }
    }
}
