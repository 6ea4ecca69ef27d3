//! `inspect --image` and `audit IMAGE` end to end, on images built here (`support/image.rs`) from the CUDA 13
//! fixtures and the test machine's own C++ runtime; and the image reader's bounds on hostile archives.

use crate::support::cli::{cudadiag, slugs};
use crate::support::image::{Image, Layer, Pack, fake_cudart, system_layer};
use cudadiag::image::{Limits, open};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(root().join("fixtures/cuda13").join(name)).unwrap()
}

/// Runs cudadiag with a clean colour setting; returns exit code, stdout and stderr.
pub(crate) fn run(args: &[&str]) -> (i32, String, String) {
    let out = cudadiag()
        .env_remove("NO_COLOR")
        .args(["--color", "never"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) fn json(args: &[&str]) -> (i32, serde_json::Value) {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let (code, out, err) = run(&a);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v)
}

/// A static-cudart program image: the system layer and `fixture` as `/usr/local/bin/app`, run by `Cmd`.
fn program_image(fixture_name: &str) -> Image {
    Image::new(vec![
        system_layer(),
        Layer::new()
            .exe("usr/local/bin/app", &fixture(fixture_name))
            .packed(Pack::Gzip),
    ])
    .cuda13()
    .cmd(&["app"])
}

/// The shared-cudart program with its libcudart in `/usr/local/cuda/lib64` (on `LD_LIBRARY_PATH`).
fn shared_image(work: &Path) -> Image {
    let app = root().join("fixtures/cuda13/cudart_shared");
    let cudart = fake_cudart(work, &app);
    Image::new(vec![
        system_layer(),
        Layer::new()
            .file("usr/local/cuda/lib64/libcudart.so.13.0.96", &cudart)
            .symlink("usr/local/cuda/lib64/libcudart.so.13", "libcudart.so.13.0.96")
            .packed(Pack::Zstd),
        Layer::new().exe("opt/app/bin/app", &std::fs::read(&app).unwrap()),
    ])
    .cuda13()
    .env("LD_LIBRARY_PATH=/usr/local/cuda/lib64")
    .entrypoint(&["/usr/bin/tini", "--"])
    .cmd(&["/opt/app/bin/app", "--size", "1024"])
}

fn tini(img: Image) -> Image {
    let mut img = img;
    let l = Layer::new().exe("usr/bin/tini", &fixture("hostonly"));
    img.layers.insert(1, l);
    img
}

/// Each way the test writes an image: `docker save` (plain and gzip), OCI layout (directory, tar, zstd tar).
fn every_form(img: &Image, dir: &Path) -> Vec<PathBuf> {
    let a = dir.join("app.tar");
    img.docker_save(&a, Pack::None);
    let b = dir.join("app.tar.gz");
    img.docker_save(&b, Pack::Gzip);
    let c = dir.join("oci");
    img.oci_dir(&c);
    let d = dir.join("oci.tar");
    img.oci_tar(&d);
    let e = dir.join("oci.tar.zst");
    std::fs::write(
        &e,
        crate::support::image::pack(&std::fs::read(&d).unwrap(), Pack::Zstd),
    )
    .unwrap();
    vec![a, b, c, d, e]
}

#[test]
fn a_cuda13_image_runs_on_r580_and_not_on_r535() {
    let t = tempfile::tempdir().unwrap();
    for img in every_form(&program_image("multi"), t.path()) {
        let img = img.to_str().unwrap();
        let (code, v) = json(&[
            "inspect",
            "--image",
            img,
            "--gpu",
            "9.0",
            "--driver",
            "580.159.04",
        ]);
        assert_eq!(code, 0, "{img}: {v}");
        assert_eq!(v["binaries"][0]["path"], "/usr/local/bin/app");
        assert_eq!(v["image"]["program"], "/usr/local/bin/app");
        assert_eq!(v["image"]["platform"], "linux/amd64");
        assert_eq!(v["image"]["layers"], 2);
        assert!(
            v["image"]["config_digest"]
                .as_str()
                .unwrap()
                .starts_with("sha256:"),
            "{img}"
        );
        let (code, v) = json(&[
            "inspect",
            "--image",
            img,
            "--gpu",
            "9.0",
            "--driver",
            "535.104.05",
        ]);
        assert_eq!(code, 1, "{img}");
        assert!(
            slugs(&v).contains(&"driver-insufficient".to_string()),
            "{img}: {v}"
        );
        // The toolkit refuses to start it at all: NVIDIA_REQUIRE_CUDA=cuda>=13.0 on a CUDA 12.2 driver. That
        // comes first, and it is the verdict's reason: the program never runs.
        assert_eq!(slugs(&v)[0], "container-requirement-unmet", "{img}: {v}");
        assert_eq!(v["verdicts"][0]["outcome"], "fails", "{img}: {v}");
        assert_eq!(
            v["verdicts"][0]["codes"][0], "container-requirement-unmet",
            "{img}: {v}"
        );
        assert_eq!(
            v["verdicts"][0]["reason"], v["findings"][0]["message"],
            "{img}: {v}"
        );
    }
    // The report, with its `image` object, honours the JSON contract (the checker CI provides in ../shared).
    let checker = root().join("../shared/contract/check_report.py");
    assert!(checker.exists(), "CI provides ../shared/contract/check_report.py");
    let (_, out, _) = run(&[
        "inspect",
        "--image",
        t.path().join("app.tar").to_str().unwrap(),
        "--gpu",
        "9.0",
        "--format",
        "json",
    ]);
    let report = t.path().join("report.json");
    std::fs::write(&report, out).unwrap();
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
}

#[test]
fn an_sm80_only_image_has_no_kernel_for_cc_9_0() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("sm80.tar");
    program_image("sm80").docker_save(&a, Pack::None);
    let a = a.to_str().unwrap();
    let (code, v) = json(&["inspect", "--image", a, "--gpu", "9.0", "--driver", "580.159.04"]);
    assert_eq!(code, 1);
    assert!(slugs(&v).contains(&"no-kernel-image".to_string()), "{v}");
    // The near miss: the same image on an A100 (CC 8.0).
    let (code, v) = json(&["inspect", "--image", a, "--gpu", "8.0", "--driver", "580.159.04"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn a_shared_cudart_image_runs_and_a_whiteout_breaks_it() {
    let t = tempfile::tempdir().unwrap();
    let good = tini(shared_image(t.path()));
    for img in every_form(&good, t.path()) {
        let img = img.to_str().unwrap();
        let (code, v) = json(&[
            "inspect",
            "--image",
            img,
            "--gpu",
            "9.0",
            "--driver",
            "580.159.04",
        ]);
        assert_eq!(code, 0, "{img}: {v}");
        assert_eq!(v["image"]["program"], "/opt/app/bin/app");
        let cudart = v["libraries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["soname"] == "libcudart.so.13")
            .unwrap();
        assert_eq!(cudart["path"], "/usr/local/cuda/lib64/libcudart.so.13", "{img}");
        assert_eq!(cudart["how"], "ld_library_path");
    }
    // A later layer deletes the library: the loader cannot find it.
    let mut broken = good.clone();
    broken
        .layers
        .push(Layer::new().whiteout("usr/local/cuda/lib64/libcudart.so.13"));
    let dir = t.path().join("broken");
    std::fs::create_dir(&dir).unwrap();
    for img in every_form(&broken, &dir) {
        let img = img.to_str().unwrap();
        let (code, v) = json(&[
            "inspect",
            "--image",
            img,
            "--gpu",
            "9.0",
            "--driver",
            "580.159.04",
        ]);
        assert_eq!(code, 1, "{img}");
        assert!(slugs(&v).contains(&"library-not-found".to_string()), "{img}: {v}");
    }
    // An opaque directory in a later layer hides it the same way; one that re-adds it in the same layer does not.
    let mut opaque = good.clone();
    opaque.layers.push(
        Layer::new()
            .opaque("usr/local/cuda/lib64")
            .file("usr/local/cuda/lib64/README", b"x"),
    );
    let a = t.path().join("opaque.tar");
    opaque.docker_save(&a, Pack::None);
    let (code, v) = json(&[
        "inspect",
        "--image",
        a.to_str().unwrap(),
        "--gpu",
        "9.0",
        "--driver",
        "580.159.04",
    ]);
    assert_eq!(code, 1);
    assert!(slugs(&v).contains(&"library-not-found".to_string()), "{v}");
}

#[test]
fn paths_name_files_inside_the_image_and_env_flags_apply() {
    let t = tempfile::tempdir().unwrap();
    let img = tini(shared_image(t.path()));
    let a = t.path().join("app.tar");
    img.docker_save(&a, Pack::None);
    let a = a.to_str().unwrap();
    // A PATH inside the image: the entrypoint is not used.
    let (code, v) = json(&[
        "inspect",
        "--image",
        a,
        "--gpu",
        "9.0",
        "--driver",
        "580.159.04",
        "/usr/local/cuda/../../../opt/app/bin/app",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["binaries"][0]["path"], "/opt/app/bin/app");
    assert!(v["image"]["program"].is_null());
    // --clear-env drops the image's LD_LIBRARY_PATH: libcudart is not found; --env puts it back.
    let what_if = ["--gpu", "9.0", "--driver", "580.159.04"];
    let mut args = vec!["inspect", "--image", a, "--clear-env"];
    args.extend(what_if);
    let (code, _) = json(&args);
    assert_eq!(code, 1);
    args.extend(["--env", "LD_LIBRARY_PATH=/usr/local/cuda/lib64"]);
    // Without NVIDIA_VISIBLE_DEVICES the container is judged as run with GPUs, with a note; run without a GPU
    // request, the toolkit gives it nothing; with the variable, all is well and there is no note.
    let (code, v) = json(&args);
    assert_eq!(code, 0, "{v}");
    assert!(slugs(&v).contains(&"container-gpus-from-run".to_string()), "{v}");
    let (code, v) = json(&[&args[..], &["--gpus", "none"]].concat());
    assert_eq!(code, 1);
    assert!(slugs(&v).contains(&"container-no-gpu-access".to_string()), "{v}");
    args.extend(["--env", "NVIDIA_VISIBLE_DEVICES=all"]);
    let (code, v) = json(&args);
    assert_eq!(code, 0, "{v}");
    assert!(!slugs(&v).contains(&"container-gpus-from-run".to_string()), "{v}");
    // The human report names the image and the program first.
    let (_, text, _) = run(&[
        "inspect",
        "--image",
        a,
        "--gpu",
        "9.0",
        "--driver",
        "580.159.04",
        "-v",
    ]);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "{a} test/app:1  (docker-archive, linux/amd64, 4 layers, image ID "
        )),
        "{text}"
    );
    assert!(first.ends_with("): runs /opt/app/bin/app"), "{text}");
    assert!(
        text.contains("\n    /usr/bin/tini is the wrapper tini: it runs what follows it\n"),
        "{text}"
    );
    // A path that is not in the image is a usage error that says so.
    let (code, _, err) = run(&["inspect", "--image", a, "--no-host", "/usr/bin/nothing"]);
    assert_eq!(code, 2);
    assert!(err.contains("/usr/bin/nothing: not in the image"), "{err}");
}

#[test]
fn a_shell_entrypoint_that_needs_a_shell_says_what_to_pass() {
    let t = tempfile::tempdir().unwrap();
    let img = program_image("multi")
        .entrypoint(&["/bin/sh", "-c", "cd /srv && ./app"])
        .cmd(&[]);
    let a = t.path().join("sh.tar");
    img.docker_save(&a, Pack::None);
    let (code, _, err) = run(&["inspect", "--image", a.to_str().unwrap(), "--no-host"]);
    assert_eq!(code, 2);
    assert!(err.contains("only a shell can resolve"), "{err}");
    assert!(
        err.contains("cudadiag inspect --image IMAGE /path/in/image/app"),
        "{err}"
    );
    // `sh -c "exec app"` is plain: the program is found.
    let img = program_image("multi")
        .entrypoint(&["/bin/sh", "-c", "exec app --x 1"])
        .cmd(&[]);
    img.docker_save(&a, Pack::None);
    let (code, v) = json(&["inspect", "--image", a.to_str().unwrap(), "--no-host"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["image"]["program"], "/usr/local/bin/app");
}

#[test]
fn root_paths_may_be_written_inside_the_root() {
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("usr/local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("real"), fixture("sm80")).unwrap();
    std::os::unix::fs::symlink("/usr/local/bin/real", bin.join("app")).unwrap();
    let r = t.path().to_str().unwrap();
    let (code, v) = json(&[
        "inspect",
        "--root",
        r,
        "--no-host",
        "--gpu",
        "9.0",
        "/usr/local/bin/app",
    ]);
    assert_eq!(code, 1, "{v}");
    assert!(slugs(&v).contains(&"no-kernel-image".to_string()));
    assert!(
        v["binaries"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("usr/local/bin/real")
    );
}

#[test]
fn audit_gates_an_image_like_a_wheel() {
    let t = tempfile::tempdir().unwrap();
    let policy = t.path().join("cudadiag.toml");
    std::fs::write(&policy, "[targets]\nsass = [\"sm_90\"]\n").unwrap();
    let a = t.path().join("sm80.tar");
    program_image("sm80").docker_save(&a, Pack::Gzip);
    let (code, v) = json(&["audit", "--policy", policy.to_str().unwrap(), a.to_str().unwrap()]);
    assert_eq!(code, 1, "{v}");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["slug"] == "policy-missing-arch")
        .unwrap_or_else(|| panic!("{v}"));
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("sm80.tar!/usr/local/bin/app"),
        "{f}"
    );
    // The near miss: the image of a program with sm_90 SASS passes.
    let b = t.path().join("multi.tar");
    program_image("multi").docker_save(&b, Pack::None);
    let (code, v) = json(&["audit", "--policy", policy.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
}

// Hostile images: each a clear error, within bounds.

fn open_err(path: &Path, limits: &Limits) -> String {
    open(path, None, limits).unwrap_err().to_string()
}

#[test]
fn thousands_of_layers_stop_at_the_layer_cap() {
    let t = tempfile::tempdir().unwrap();
    let layers = (0..300)
        .map(|i| Layer::new().file(&format!("f{i}"), b"x"))
        .collect();
    let a = t.path().join("layers.tar");
    Image::new(layers).cmd(&["x"]).docker_save(&a, Pack::None);
    let (code, _, err) = run(&["inspect", "--image", a.to_str().unwrap(), "--no-host"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("300 layers, more than 256") && err.contains("max-layers"),
        "{err}"
    );
}

#[test]
fn thousands_of_files_read_and_stop_at_the_entry_cap() {
    let t = tempfile::tempdir().unwrap();
    let mut l = Layer::new();
    for i in 0..5000 {
        l = l.file(&format!("data/{}/f{i}", i % 50), b"payload");
    }
    let img = Image::new(vec![l.packed(Pack::Gzip)]).cmd(&["x"]);
    let a = t.path().join("files.tar");
    img.docker_save(&a, Pack::None);
    let opened = open(&a, None, &Limits::default()).unwrap();
    assert_eq!(opened.facts.entries, 5000);
    // Data files nobody reads are counted, not written.
    assert_eq!(opened.facts.skipped_files, 5000);
    assert!(!opened.dir().join("data/49/f4999").exists());
    let limits = Limits {
        max_entries: 1000,
        ..Limits::default()
    };
    let err = open_err(&a, &limits);
    assert!(
        err.contains("more than 1000 entries") && err.contains("max-entries"),
        "{err}"
    );
}

#[test]
fn dot_dot_names_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let img = Image::new(vec![Layer::new().exe("usr/../../escape", b"x")]).cmd(&["x"]);
    let a = t.path().join("dots.tar");
    img.docker_save(&a, Pack::None);
    let err = open_err(&a, &Limits::default());
    assert!(
        err.contains("\"usr/../../escape\"") && err.contains("climb out of the image"),
        "{err}"
    );
    assert!(!t.path().join("escape").exists());
}

#[test]
fn links_are_never_followed_out_of_the_image() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let o = outside.to_str().unwrap();
    let img = Image::new(vec![
        Layer::new()
            .symlink("abs", o)
            .symlink("rel", "../../../../../../../../..")
            .hardlink("hard", &format!("{}/x", &o[1..])),
        // Writes through the links of the layer below, and a whiteout through one.
        Layer::new()
            .exe("abs/pwned", b"x")
            .exe("rel/tmp/pwned", b"x")
            .whiteout("abs/keep"),
    ])
    .cmd(&["x"]);
    std::fs::write(outside.join("keep"), b"mine").unwrap();
    let a = t.path().join("links.tar");
    img.docker_save(&a, Pack::None);
    let opened = open(&a, None, &Limits::default()).unwrap();
    // Nothing was written or removed outside; the writes landed inside the image, links re-rooted.
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    assert!(outside.join("keep").is_file());
    assert!(opened.dir().join(&o[1..]).join("pwned").is_file());
    assert!(opened.dir().join("tmp/pwned").is_file());
    // Links stay links.
    assert!(
        std::fs::symlink_metadata(opened.dir().join("hard"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn fifos_devices_and_setuid_bits_are_not_created() {
    let t = tempfile::tempdir().unwrap();
    let mut l = Layer::new().fifo("run/fifo");
    l.entries.push(crate::support::image::Ent::File(
        "usr/bin/su".into(),
        b"x".to_vec(),
        0o4755,
    ));
    let a = t.path().join("special.tar");
    Image::new(vec![l]).cmd(&["x"]).docker_save(&a, Pack::None);
    let opened = open(&a, None, &Limits::default()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert!(!opened.dir().join("run/fifo").exists());
    assert_eq!(opened.facts.special_files, 1);
    let mode = std::fs::metadata(opened.dir().join("usr/bin/su"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7000, 0);
}

#[test]
fn a_compression_bomb_stops_at_the_ratio_and_a_huge_file_at_the_file_cap() {
    let t = tempfile::tempdir().unwrap();
    let zeros = vec![0u8; 48 << 20];
    let img = Image::new(vec![Layer::new().file("zeros", &zeros).packed(Pack::Zstd)]).cmd(&["x"]);
    let a = t.path().join("bomb.tar");
    img.docker_save(&a, Pack::None);
    let limits = Limits {
        ratio_floor: 4 << 20,
        ..Limits::default()
    };
    let err = open_err(&a, &limits);
    assert!(
        err.contains("layer 1 of 1") && err.contains("max-ratio") && err.contains("compression bomb"),
        "{err}"
    );
    // The same bomb as the whole file.
    let b = t.path().join("bomb.tar.gz");
    img.docker_save(&b, Pack::Gzip);
    let err = open_err(&b, &limits);
    assert!(err.contains("max-ratio"), "{err}");
    let limits = Limits {
        max_file: 1 << 20,
        ..Limits::default()
    };
    let err = open_err(&a, &limits);
    assert!(err.contains("\"zeros\"") && err.contains("max-file"), "{err}");
    // Under the default bounds it is read, and the data file (not a binary) is not written out.
    let opened = open(&a, None, &Limits::default()).unwrap();
    assert_eq!(opened.facts.skipped_files, 1);
    assert_eq!(opened.facts.skipped_bytes, 48 << 20);
    assert!(!opened.dir().join("zeros").exists());
    // A large executable that is not a binary exists, empty, for the PATH search.
    let img = Image::new(vec![Layer::new().exe("usr/bin/big", &vec![b'x'; 2 << 20])]).cmd(&["x"]);
    img.docker_save(&a, Pack::None);
    let opened = open(&a, None, &Limits::default()).unwrap();
    assert_eq!(
        (opened.facts.placeholders, opened.facts.placeholder_bytes),
        (1, 2 << 20)
    );
    assert_eq!(
        std::fs::metadata(opened.dir().join("usr/bin/big")).unwrap().len(),
        0
    );
}

#[test]
fn not_an_image_and_several_platforms_are_clear_errors() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("x.tar");
    std::fs::write(
        &a,
        crate::support::image::archive(&[("hello".into(), b"x".to_vec())]),
    )
    .unwrap();
    let err = open_err(&a, &Limits::default());
    assert!(err.contains("not a container image"), "{err}");
    let mut arm = program_image("multi");
    arm.arch = "arm64".into();
    let b = t.path().join("arm.tar");
    arm.docker_save(&b, Pack::None);
    // One image of another platform is read (its binaries say what they are); asking for amd64 is refused.
    assert!(open(&b, None, &Limits::default()).is_ok());
    let err = open(&b, Some("linux/amd64"), &Limits::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no image for linux/amd64 (it holds linux/arm64)"),
        "{err}"
    );
    let err = open(&b, Some("amd64"), &Limits::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected OS/ARCH"), "{err}");
}

/// A snapshot of the fixture host `case` (its driver, GPUs and device nodes), as `--facts` takes it.
pub(crate) fn node_snapshot(case: &str, out: &Path) -> String {
    let r = root().join("fixtures/hosts").join(case).join("root");
    let (code, _, err) = run(&[
        "snapshot",
        "--root",
        r.to_str().unwrap(),
        "--clear-env",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    out.to_str().unwrap().to_string()
}

/// The CUDA 13 program image with a cuda-compat libcuda of driver `version` in `/usr/local/cuda/compat`, on
/// the image's `LD_LIBRARY_PATH` as NVIDIA's older images put it.
fn compat_image(version: &str) -> Image {
    let mut img = program_image("multi");
    img.layers.push(
        Layer::new()
            .file(
                &format!("usr/local/cuda/compat/libcuda.so.{version}"),
                &cudadiag::image::stub::library("libcuda.so.1", cudadiag::image::stub::EM_X86_64),
            )
            .symlink(
                "usr/local/cuda/compat/libcuda.so.1",
                &format!("libcuda.so.{version}"),
            ),
    );
    img.env("LD_LIBRARY_PATH=/usr/local/cuda/compat:/usr/local/nvidia/lib64")
}

fn compat_findings(v: &serde_json::Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["slug"] == "compat-libcuda-unsupported")
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_image_compat_libcuda_older_than_the_node_driver_gives_803() {
    let t = tempfile::tempdir().unwrap();
    // The node: driver 550.90.07, two H100s.
    let node = node_snapshot("healthy", &t.path().join("node.json"));
    let a = t.path().join("old-compat.tar");
    compat_image("550.54.14").docker_save(&a, Pack::None);
    let (code, v) = json(&["inspect", "--image", a.to_str().unwrap(), "--facts", &node]);
    assert_eq!(code, 1, "{v}");
    let f = compat_findings(&v);
    assert_eq!(f.len(), 1, "{v}");
    assert!(
        f[0].contains("libcuda 550.54.14, older than the loaded driver 550.90.07") && f[0].contains("803"),
        "{f:?}"
    );
    // The near miss: a compat libcuda newer than the driver, on data-center GPUs, is what compat is for.
    let b = t.path().join("new-compat.tar");
    compat_image("575.57.08").docker_save(&b, Pack::None);
    let (_, v) = json(&["inspect", "--image", b.to_str().unwrap(), "--facts", &node]);
    assert!(compat_findings(&v).is_empty(), "{v}");
}

#[test]
fn an_image_compat_libcuda_newer_than_the_driver_on_a_geforce_gives_804() {
    let t = tempfile::tempdir().unwrap();
    // The node: driver 550.90.07, two GeForce RTX 4090s.
    let node = node_snapshot("compat-on-geforce", &t.path().join("node.json"));
    let a = t.path().join("new-compat.tar");
    compat_image("575.57.08").docker_save(&a, Pack::None);
    let (code, v) = json(&["inspect", "--image", a.to_str().unwrap(), "--facts", &node]);
    assert_eq!(code, 1, "{v}");
    let f = compat_findings(&v);
    assert_eq!(f.len(), 1, "{v}");
    assert!(
        f[0].contains("575.57.08 on top of driver 550.90.07") && f[0].contains("804"),
        "{f:?}"
    );
    // The same node declared instead of read: a driver and a GPU are enough for the machine rules.
    let (_, v) = json(&[
        "inspect",
        "--image",
        a.to_str().unwrap(),
        "--driver",
        "550.90.07",
        "--gpu",
        "RTX 4090",
    ]);
    let f = compat_findings(&v);
    assert_eq!(f.len(), 1, "{v}");
    assert!(f[0].contains("804"), "{f:?}");
    // The near miss: the same image on a node of data-center GPUs (two H100s, the same driver).
    let dc = node_snapshot("healthy", &t.path().join("dc.json"));
    let (_, v) = json(&["inspect", "--image", a.to_str().unwrap(), "--facts", &dc]);
    assert!(compat_findings(&v).is_empty(), "{v}");
}

#[test]
fn the_toolkit_puts_a_newer_compat_libcuda_ahead_of_the_driver() {
    let t = tempfile::tempdir().unwrap();
    let geforce = node_snapshot("compat-on-geforce", &t.path().join("geforce.json"));
    let h100 = node_snapshot("healthy", &t.path().join("h100.json"));
    // No LD_LIBRARY_PATH: the toolkit itself activates the compat directory, its branch (575) being newer
    // than the node's (550).
    let mut img = compat_image("575.57.08");
    img.env.retain(|e| !e.starts_with("LD_LIBRARY_PATH="));
    let a = t.path().join("compat.tar");
    img.docker_save(&a, Pack::None);
    let a = a.to_str().unwrap();
    let (_, v) = json(&["inspect", "--image", a, "--facts", &geforce]);
    let f = compat_findings(&v);
    assert_eq!(f.len(), 1, "{v}");
    assert!(
        f[0].contains("575.57.08 on top of driver 550.90.07") && f[0].contains("804"),
        "{f:?}"
    );
    // The near miss: on data-centre GPUs that is what forward compatibility is for; the compat libcuda loads.
    let (_, v) = json(&["inspect", "--image", a, "--facts", &h100]);
    assert!(compat_findings(&v).is_empty(), "{v}");
    let cuda = v["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == "libcuda.so.1")
        .unwrap();
    assert_eq!(
        cuda["realpath"], "/usr/local/cuda/compat/libcuda.so.575.57.08",
        "{cuda}"
    );
    // An older compat libcuda is left alone by the toolkit: the driver's is loaded.
    let mut old = compat_image("545.23.08");
    old.env.retain(|e| !e.starts_with("LD_LIBRARY_PATH="));
    old.docker_save(Path::new(a), Pack::None);
    let (_, v) = json(&["inspect", "--image", a, "--facts", &h100]);
    assert!(compat_findings(&v).is_empty(), "{v}");
    let cuda = v["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == "libcuda.so.1")
        .unwrap();
    assert_eq!(
        cuda["realpath"], "/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07",
        "{cuda}"
    );
}

#[test]
fn the_images_user_opens_the_device_nodes_or_not() {
    let t = tempfile::tempdir().unwrap();
    // A node whose GPU nodes are 0660 root:video (gid 44), as a hardened driver setup makes them.
    let node = node_snapshot("healthy", &t.path().join("raw.json"));
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&node).unwrap()).unwrap();
    for n in v["facts"]["host"]["device_nodes"].as_array_mut().unwrap() {
        n["mode"] = 0o660.into();
        n["gid"] = 44.into();
    }
    let node = t.path().join("node.json");
    std::fs::write(&node, serde_json::to_vec(&v).unwrap()).unwrap();
    let node = node.to_str().unwrap();
    let users = Layer::new()
        .file(
            "etc/passwd",
            b"root:x:0:0::/root:/bin/sh\napp:x:1000:1000::/app:/bin/sh\nother:x:1001:1001::/:/bin/sh\n",
        )
        .file(
            "etc/group",
            b"root:x:0:\nvideo:x:44:app\napp:x:1000:\nother:x:1001:\n",
        );
    let permission = |user: &str| {
        let mut img = program_image("multi");
        img.layers.push(users.clone());
        img.user = user.to_string();
        let a = t.path().join("u.tar");
        img.docker_save(&a, Pack::None);
        let (_, v) = json(&["inspect", "--image", a.to_str().unwrap(), "--facts", node]);
        slugs(&v).contains(&"device-permission-denied".to_string())
    };
    assert!(permission("other"), "uid 1001 is not in video");
    assert!(!permission("app"), "app is in video");
    assert!(!permission(""), "root opens anything");
}

/// `fleet --image` over nodes of three drivers, two GPU kinds and a file with no host facts: each node's
/// prediction is what `inspect --image IMAGE --facts NODE.json` says for that node (outcome and first code),
/// and the image is unpacked once, its mounts made and undone per distinct driver.
#[test]
fn fleet_image_predicts_what_inspect_image_says_on_each_node() {
    let t = tempfile::tempdir().unwrap();
    let nodes = t.path().join("nodes");
    std::fs::create_dir_all(&nodes).unwrap();
    // An sm_90a-only CUDA 13 program (NVIDIA_REQUIRE_CUDA=cuda>=13.0).
    let img = t.path().join("app.tar");
    program_image("sm90a").docker_save(&img, Pack::Gzip);
    let img = img.to_str().unwrap();
    // h200: driver 580.x, an H200 (9.0): runs. a100: the same with an A100 (8.0): no kernel for it.
    // r535: the H200 on 535.104.05, and h100: the healthy root (550.90.07, H100s): the toolkit refuses both.
    let base = t.path().join("h200-base.json");
    node_snapshot("h200-nix-open-580", &base);
    let h200: serde_json::Value = serde_json::from_slice(&std::fs::read(&base).unwrap()).unwrap();
    let put = |name: &str, v: &serde_json::Value| {
        std::fs::write(nodes.join(format!("{name}.json")), serde_json::to_vec(v).unwrap()).unwrap()
    };
    put("h200", &h200);
    let mut a100 = h200.clone();
    a100["facts"]["host"]["gpus"][0]["name"] = "NVIDIA A100-SXM4-80GB".into();
    a100["facts"]["host"]["gpus"][0]["pci_device_id"] = 0x20b2.into();
    put("a100", &a100);
    let mut r535 = h200.clone();
    r535["facts"]["host"]["driver"]["version"] = "535.104.05".into();
    put("r535", &r535);
    node_snapshot("healthy", &nodes.join("h100.json"));
    // A report of `inspect --no-host`: no host facts to judge on.
    let (_, mut bare) = json(&[
        "inspect",
        "--no-host",
        root().join("fixtures/cuda13/sm90a").to_str().unwrap(),
    ]);
    bare["host"] = serde_json::json!({});
    put("bare", &bare);

    let (code, fleet) = json(&["fleet", "--image", img, nodes.to_str().unwrap()]);
    assert_eq!(code, 1, "it fails on some nodes: {fleet}");
    let a = &fleet["artifact"];
    assert_eq!(a["image"]["path"], img, "{a}");
    assert_eq!(a["image"]["program"], "/usr/local/bin/app", "{a}");
    assert_eq!(a["paths"][0], img, "{a}");
    assert_eq!(a["image"]["unpacked"], 1, "one unpack: {a}");
    assert_eq!(
        a["image"]["mount_sets"], 3,
        "one set of mounts per driver (580, 550, 535): {a}"
    );
    let prediction = |n: &str| {
        fleet["per_node"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == n)
            .unwrap_or_else(|| panic!("{n}: {fleet}"))["prediction"]
            .clone()
    };
    let expect = [
        ("h200", "runs", None),
        ("a100", "fails", Some("no-kernel-image")),
        ("r535", "fails", Some("container-requirement-unmet")),
        ("h100", "fails", Some("container-requirement-unmet")),
    ];
    for (name, outcome, first) in expect {
        let p = prediction(name);
        assert_eq!(p["outcome"], outcome, "{name}: {p}");
        assert_eq!(p["codes"].get(0).and_then(|c| c.as_str()), first, "{name}: {p}");
        // The differential: `inspect --image --facts` on the same node gives the same answer.
        let file = nodes.join(format!("{name}.json"));
        let (code, v) = json(&["inspect", "--image", img, "--facts", file.to_str().unwrap()]);
        assert_eq!(code, if outcome == "fails" { 1 } else { 0 }, "{name}: {v}");
        let verdict = &v["verdicts"][0];
        assert_eq!(verdict["outcome"], outcome, "{name}: {v}");
        assert_eq!(
            verdict["codes"].get(0).and_then(|c| c.as_str()),
            first,
            "{name}: {v}"
        );
        if outcome == "fails" {
            assert_eq!(p["reason"], verdict["reason"], "{name}");
        }
    }
    assert_eq!(
        slugs(
            &json(&[
                "inspect",
                "--image",
                img,
                "--facts",
                nodes.join("r535.json").to_str().unwrap()
            ])
            .1
        )[0],
        "container-requirement-unmet"
    );
    let bare = prediction("bare");
    assert_eq!(bare["outcome"], "unknown", "{bare}");
    let (code, _, err) = run(&[
        "inspect",
        "--image",
        img,
        "--facts",
        nodes.join("bare.json").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");

    // For people: the image and its program, the outcomes, the toolkit's refusal as a group.
    let (code, out, _) = run(&["fleet", "--image", img, nodes.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains("(/usr/local/bin/app) on these nodes: 3 fails · 1 runs · 1 unknown"),
        "{out}"
    );
    assert!(out.contains("fails: container-requirement-unmet"), "{out}");
    // Where it runs everywhere, 0; --fail-on never, 0; --image and --artifact together, a usage error.
    let (code, _, err) = run(&["fleet", "--image", img, nodes.join("h200.json").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, _, _) = run(&[
        "fleet",
        "--fail-on",
        "never",
        "--image",
        img,
        nodes.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let (code, _, err) = run(&[
        "fleet",
        "--image",
        img,
        "--artifact",
        img,
        nodes.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}

/// Each node's `fleet --image` prediction against `inspect --image --facts` on that node: outcome, codes and
/// reason.
pub(crate) fn fleet_matches_inspect(img: &str, nodes: &Path) -> serde_json::Value {
    let (_, fleet) = json(&["fleet", "--image", img, nodes.to_str().unwrap()]);
    for n in fleet["per_node"].as_array().unwrap() {
        let p = &n["prediction"];
        let (_, v) = json(&["inspect", "--image", img, "--facts", n["file"].as_str().unwrap()]);
        let verdict = &v["verdicts"][0];
        assert_eq!(p["outcome"], verdict["outcome"], "{n}\n{v}");
        assert_eq!(p["codes"].get(0), verdict["codes"].get(0), "{n}\n{v}");
        if p["outcome"] != "runs" {
            assert_eq!(p["reason"], verdict["reason"], "{n}\n{v}");
        }
    }
    fleet
}

/// The toolkit activates the image's cuda-compat libcuda by the node's driver branch: nodes on different
/// drivers get different trees, and each node's answer is still the one `inspect --image --facts` gives alone.
#[test]
fn fleet_image_with_a_compat_libcuda_judges_each_driver_on_its_own_tree() {
    let t = tempfile::tempdir().unwrap();
    let nodes = t.path().join("nodes");
    std::fs::create_dir_all(&nodes).unwrap();
    node_snapshot("compat-on-geforce", &nodes.join("geforce.json"));
    node_snapshot("healthy", &nodes.join("h100.json"));
    node_snapshot("h200-nix-open-580", &nodes.join("h200.json"));
    node_snapshot("driver-upgraded-no-reboot", &nodes.join("upgraded.json"));
    let mut img = compat_image("575.57.08");
    img.env.retain(|e| !e.starts_with("LD_LIBRARY_PATH="));
    let a = t.path().join("compat.tar");
    img.docker_save(&a, Pack::None);
    let fleet = fleet_matches_inspect(a.to_str().unwrap(), &nodes);
    let drivers = fleet["drivers"].as_object().unwrap().len();
    assert!(drivers >= 2, "{fleet}");
    assert_eq!(fleet["artifact"]["image"]["unpacked"], 1, "{fleet}");
    assert_eq!(fleet["artifact"]["image"]["mount_sets"], drivers, "{fleet}");
    let geforce = fleet["per_node"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "geforce")
        .unwrap();
    assert_eq!(geforce["prediction"]["outcome"], "fails", "{geforce}");
}
