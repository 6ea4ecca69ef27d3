//! `inspect --image` as the container is run (issue 29, item 6): judged with GPUs by default, the run described
//! with `--gpus`, `--runtime` and CDI devices, the NVIDIA Container Toolkit's `ldconfig` run replayed on the
//! image's tree, `-v --deep` honoured, and `fleet --image` sharing the judgement.

use crate::image::{fixture, fleet_matches_inspect, json, node_snapshot, run};
use crate::support::cli::slugs;
use crate::support::image::{Image, Layer, Pack, system_layer};
use std::path::Path;

const H200_580: [&str; 4] = ["--gpu", "9.0", "--driver", "580.159.04"];

/// The static-cudart program on the system layer, with no NVIDIA variable at all (an image built on a plain OS
/// or `python` base).
fn plain_image() -> Image {
    Image::new(vec![
        system_layer(),
        Layer::new().exe("usr/local/bin/app", &fixture("multi")),
    ])
    .cmd(&["app"])
}

fn inspect(img: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut a = vec!["inspect", "--image", img.to_str().unwrap()];
    a.extend(extra);
    json(&a)
}

#[test]
fn an_image_without_nvidia_visible_devices_is_judged_as_run_with_gpus() {
    let t = tempfile::tempdir().unwrap();
    let img = t.path().join("plain.tar");
    plain_image().docker_save(&img, Pack::None);
    // The default: run as `docker run --gpus all` runs it, with one note. On main: "will fail: started without
    // GPU access", three findings.
    let (code, v) = inspect(&img, &H200_580);
    assert_eq!(code, 0, "{v}");
    assert_eq!(slugs(&v), ["container-gpus-from-run"], "{v}");
    assert_eq!(v["verdicts"][0]["outcome"], "runs", "{v}");
    assert_eq!(v["image"]["toolkit"]["run"]["source"], "run-default");
    assert_eq!(v["image"]["toolkit"]["devices"]["value"], "all");
    // `--gpus none`: no GPU request, the image as it asks: it fails as before.
    let (code, v) = inspect(&img, &[&H200_580[..], &["--gpus", "none"]].concat());
    assert_eq!(code, 1, "{v}");
    let s = slugs(&v);
    assert!(s.contains(&"container-no-gpu-access".to_string()), "{s:?}");
    assert!(s.contains(&"libcuda-not-found".to_string()), "{s:?}");
    assert!(!s.contains(&"container-gpus-from-run".to_string()), "{s:?}");
    assert_eq!(v["verdicts"][0]["outcome"], "fails", "{v}");
    // An image that asks (NVIDIA's CUDA images) gets no note.
    let asks = t.path().join("asks.tar");
    plain_image()
        .env("NVIDIA_VISIBLE_DEVICES=all")
        .docker_save(&asks, Pack::None);
    let (code, v) = inspect(&asks, &H200_580);
    assert_eq!((code, slugs(&v).len()), (0, 0), "{v}");
}

#[test]
fn each_gpus_form_gives_the_gpus_docker_gives() {
    let t = tempfile::tempdir().unwrap();
    let img = t.path().join("plain.tar");
    plain_image().docker_save(&img, Pack::None);
    let two = ["--gpu", "9.0", "--gpu", "9.0", "--driver", "580.159.04"];
    let with = |gpus: &str| inspect(&img, &[&two[..], &["--gpus", gpus]].concat());
    let selected = |v: &serde_json::Value| {
        v["image"]["toolkit"]["devices"]["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["index"].as_u64().unwrap())
            .collect::<Vec<_>>()
    };
    for (gpus, want, value) in [
        ("all", vec![0, 1], "all"),
        ("2", vec![0, 1], "0,1"),
        ("1", vec![0], "0"),
        ("\"device=1\"", vec![1], "1"),
        ("\"device=0,1\"", vec![0, 1], "0,1"),
    ] {
        let (code, v) = with(gpus);
        assert_eq!(code, 0, "--gpus {gpus}: {v}");
        assert_eq!(selected(&v), want, "--gpus {gpus}");
        assert_eq!(v["image"]["toolkit"]["devices"]["value"], value, "--gpus {gpus}");
        assert_eq!(v["image"]["toolkit"]["run"]["source"], "gpus", "--gpus {gpus}");
        assert!(slugs(&v).is_empty(), "--gpus {gpus}: {v}");
    }
    // A count of 0 is `void`: no GPU; a device the node lacks stops the container.
    let (code, v) = with("0");
    assert_eq!(code, 1);
    assert!(slugs(&v).contains(&"container-no-gpu-access".to_string()), "{v}");
    let (code, v) = with("\"device=7\"");
    assert_eq!(code, 1);
    assert_eq!(slugs(&v)[0], "container-unknown-device", "{v}");
    // capabilities= replaces the image's: without compute there is no libcuda.so.1.
    let (_, v) = with("all,capabilities=utility");
    assert!(
        slugs(&v).contains(&"container-compute-missing".to_string()),
        "{v}"
    );
    // The shell ate the quotes: docker's own error, and how to write it.
    let (code, _, err) = run(&[
        "inspect",
        "--image",
        img.to_str().unwrap(),
        "--gpus",
        "device=0,1",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("'\"device=0,1\"'"), "{err}");
}

#[test]
fn runtime_runc_without_gpus_injects_nothing() {
    let t = tempfile::tempdir().unwrap();
    // An image that asks for every GPU (NVIDIA's variables): under runc only `--gpus` brings the hook.
    let img = t.path().join("cuda.tar");
    plain_image().cuda13().docker_save(&img, Pack::None);
    let (code, v) = inspect(&img, &[&H200_580[..], &["--runtime", "runc"]].concat());
    assert_eq!(code, 1, "{v}");
    assert!(slugs(&v).contains(&"container-no-gpu-access".to_string()), "{v}");
    assert_eq!(v["image"]["toolkit"]["run"]["hook"], false);
    assert_eq!(v["verdicts"][0]["outcome"], "fails");
    // Near misses: the NVIDIA runtime acts on the image's value; runc with --gpus gets the hook from docker.
    let (code, v) = inspect(&img, &[&H200_580[..], &["--runtime", "nvidia"]].concat());
    assert_eq!((code, slugs(&v).len()), (0, 0), "{v}");
    let (code, v) = inspect(
        &img,
        &[&H200_580[..], &["--runtime", "runc", "--gpus", "all"]].concat(),
    );
    assert_eq!((code, slugs(&v).len()), (0, 0), "{v}");
}

#[test]
fn cdi_devices_skip_the_requirement_check() {
    let t = tempfile::tempdir().unwrap();
    // NVIDIA_REQUIRE_CUDA=cuda>=13.0 on a CUDA 12.2 driver: the legacy hook refuses the container.
    let img = t.path().join("cuda.tar");
    plain_image().cuda13().docker_save(&img, Pack::None);
    let r535 = ["--gpu", "9.0", "--driver", "535.104.05"];
    let (_, v) = inspect(&img, &r535);
    assert_eq!(slugs(&v)[0], "container-requirement-unmet", "{v}");
    // Through CDI nothing checks it: the container starts, and the CUDA 13 program meets the old driver.
    let (code, v) = inspect(&img, &[&r535[..], &["--device", "nvidia.com/gpu=all"]].concat());
    assert_eq!(code, 1);
    let s = slugs(&v);
    assert!(!s.contains(&"container-requirement-unmet".to_string()), "{s:?}");
    assert!(s.contains(&"driver-insufficient".to_string()), "{s:?}");
    assert_eq!(v["image"]["toolkit"]["run"]["source"], "cdi");
    assert_eq!(v["image"]["toolkit"]["requirements"][0]["outcome"], "skipped");
    // On a good driver it runs; a device the node lacks does not start.
    let (code, v) = inspect(&img, &[&H200_580[..], &["--device", "nvidia.com/gpu=0"]].concat());
    assert_eq!((code, slugs(&v).len()), (0, 0), "{v}");
    let (_, v) = inspect(&img, &[&H200_580[..], &["--device", "nvidia.com/gpu=3"]].concat());
    assert_eq!(slugs(&v)[0], "container-unknown-device", "{v}");
}

fn loaded_libcuda(v: &serde_json::Value) -> serde_json::Value {
    v["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == "libcuda.so.1")
        .cloned()
        .unwrap_or_default()
}

#[test]
fn an_image_without_debian_version_finds_libcuda_through_the_regenerated_cache() {
    // A Debian-built loader (default paths /lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu) without
    // /etc/debian_version: the toolkit mounts the driver's libraries in /usr/lib64, which only its ldconfig
    // run makes the loader find. On main: libcuda-not-found.
    let t = tempfile::tempdir().unwrap();
    let img = t.path().join("nodeb.tar");
    let mut image = plain_image().cuda13();
    image.layers.push(Layer::new().whiteout("etc/debian_version"));
    image.docker_save(&img, Pack::None);
    let (code, v) = inspect(&img, &H200_580);
    assert_eq!(code, 0, "{v}");
    assert!(slugs(&v).is_empty(), "{v}");
    let cuda = loaded_libcuda(&v);
    assert_eq!(cuda["path"], "/usr/lib64/libcuda.so.1", "{v}");
    assert_eq!(cuda["how"], "ld_so_cache", "{v}");
}

#[test]
fn a_stale_ld_cache_naming_a_stub_libcuda_is_rebuilt_by_the_toolkit() {
    // The image's cache (built with the CUDA stubs directory configured) lists the toolkit's stub
    // libcuda.so.1 first: the container's loader would take it (error 34) had the toolkit not re-run
    // ldconfig with the driver's directory first on its command line. The image's own entries stay (its
    // configured directory is scanned again), after the driver's. On main: stub-libcuda.
    let t = tempfile::tempdir().unwrap();
    let src = crate::support::loader_build::source(t.path(), "stub", "int cuInit(int f) { return 34; }\n");
    let stub = t.path().join("libcuda.so");
    crate::support::loader_build::cc(&[
        "-shared",
        "-fPIC",
        "-nostdlib",
        "-Wl,-soname,libcuda.so.1",
        "-o",
        stub.to_str().unwrap(),
        src.to_str().unwrap(),
    ]);
    let stubs = "/usr/local/cuda/lib64/stubs";
    let cache = crate::support::arm_build::ld_cache(&[
        ("libcuda.so.1", &format!("{stubs}/libcuda.so.1"), 0x0303),
        ("libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x0303),
    ]);
    let img = t.path().join("stale.tar");
    let mut image = plain_image().cuda13();
    image.layers.push(
        Layer::new()
            .file(
                "usr/local/cuda/lib64/stubs/libcuda.so",
                &std::fs::read(&stub).unwrap(),
            )
            .symlink("usr/local/cuda/lib64/stubs/libcuda.so.1", "libcuda.so")
            .file("etc/ld.so.conf", b"include /etc/ld.so.conf.d/*.conf\n")
            .file(
                "etc/ld.so.conf.d/cuda-stubs.conf",
                format!("{stubs}\n").as_bytes(),
            )
            .file("etc/ld.so.cache", &cache),
    );
    image.docker_save(&img, Pack::None);
    let (code, v) = inspect(&img, &H200_580);
    assert_eq!(code, 0, "{v}");
    assert!(!slugs(&v).contains(&"stub-libcuda".to_string()), "{v}");
    let cuda = loaded_libcuda(&v);
    assert_eq!(cuda["path"], "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "{v}");
    assert_eq!(cuda["how"], "ld_so_cache", "{v}");
    // Near miss: without GPUs (`--gpus none` on an image that asks for none) nothing re-runs ldconfig, and the
    // stale cache stands (the stub is what the program would load).
    let (_, v) = inspect(&img, &[&H200_580[..], &["--runtime", "runc"]].concat());
    assert_eq!(loaded_libcuda(&v)["path"], format!("{stubs}/libcuda.so.1"), "{v}");
}

#[test]
fn deep_lists_every_kernel_name_under_image() {
    use crate::support::{Entry, PTX, container, host_with_fatbin};
    let names: Vec<String> = (0..9).map(|i| format!("kernel_{i}")).collect();
    let ptx: String = format!(
        ".version 9.0\n.target sm_90\n.address_size 64\n{}\0",
        names
            .iter()
            .map(|n| format!(".visible .entry {n}(\n)\n{{\nret;\n}}\n"))
            .collect::<String>()
    );
    let elf = host_with_fatbin(container(&[Entry::zstd(PTX, 90, ptx.as_bytes())], None));
    let t = tempfile::tempdir().unwrap();
    let img = t.path().join("kernels.tar");
    Image::new(vec![system_layer(), Layer::new().exe("usr/local/bin/app", &elf)])
        .env("NVIDIA_VISIBLE_DEVICES=all")
        .cmd(&["app"])
        .docker_save(&img, Pack::None);
    let img = img.to_str().unwrap();
    let (_, out, err) = run(&["inspect", "--image", img, "--no-host", "-v", "--deep"]);
    for n in &names {
        assert!(
            out.contains(n.as_str()),
            "{n} missing with -v --deep:\n{out}{err}"
        );
    }
    assert!(!out.contains("more (all with"), "{out}");
    // Near miss: -v alone counts them after the first few.
    let (_, out, _) = run(&["inspect", "--image", img, "--no-host", "-v"]);
    assert!(!out.contains("kernel_8"), "{out}");
}

/// `fleet --image` shares the judgement: an image that does not ask for GPUs is predicted as run with them on
/// each node, as `inspect --image --facts` says for that node alone. On main: "fails" on every node.
#[test]
fn fleet_image_judges_an_image_without_nvidia_variables_as_run_with_gpus() {
    let t = tempfile::tempdir().unwrap();
    let nodes = t.path().join("nodes");
    std::fs::create_dir_all(&nodes).unwrap();
    node_snapshot("healthy", &nodes.join("h100.json"));
    node_snapshot("h200-nix-open-580", &nodes.join("h200.json"));
    let img = t.path().join("plain.tar");
    plain_image().docker_save(&img, Pack::None);
    let fleet = fleet_matches_inspect(img.to_str().unwrap(), &nodes);
    let h200 = fleet["per_node"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "h200")
        .unwrap();
    assert_ne!(h200["prediction"]["outcome"], "fails", "{h200}");
}

/// A hostile `ld.so.conf` whose drop-ins include their own directory (and the top file) again: each file is read
/// once, and the toolkit's ldconfig replay finishes with the driver's libcuda found.
#[test]
fn an_ld_so_conf_that_includes_itself_is_read_once() {
    let t = tempfile::tempdir().unwrap();
    let mut layer = Layer::new().file("etc/ld.so.conf", b"include /etc/ld.so.conf.d/*.conf\n");
    for i in 0..40 {
        layer = layer.file(
            &format!("etc/ld.so.conf.d/{i:02}.conf"),
            b"include /etc/ld.so.conf.d/*.conf\ninclude ../ld.so.conf\n/opt/lib\n",
        );
    }
    let mut image = plain_image().cuda13();
    image.layers.push(layer);
    let img = t.path().join("loop.tar");
    image.docker_save(&img, Pack::None);
    let started = std::time::Instant::now();
    let (code, v) = inspect(&img, &H200_580);
    assert_eq!(code, 0, "{v}");
    assert_eq!(loaded_libcuda(&v)["how"], "ld_so_cache", "{v}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}
