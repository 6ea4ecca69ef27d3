//! The JAX and TensorFlow models (`python::frameworks::{jax,tensorflow}`) driving the real one-process loader
//! emulation (`loader::process` through `PyProcess`) on small roots built here: tiny libraries made with `cc`
//! (no libc) carrying the sonames and the DT_RPATH / DT_RUNPATH of the real wheels (jax-cuda12-plugin 0.10.2,
//! tensorflow 2.21.0, read with `readelf -d`), in a venv's site-packages. docs/framework-jax-tensorflow.md.

use crate::support::loader_build as build;

use cudadiag::imports::process::PyProcess;
use cudadiag::python::frameworks::jax::Jax;
use cudadiag::python::frameworks::tensorflow::TensorFlow;
use cudadiag::python::frameworks::{
    Ctx, Dist, Framework, Gpu, LoadedHow, Meta, Metadata, Outcome, Process, PyEnv, Range, RecordFiles, Step,
    normalise, select,
};
use cudadiag::python::syspath::{Entry, SysPath, UserSite, Why};
use cudadiag::system::{Env, Root};
use std::path::PathBuf;

const SITE: &str = "/venv/lib/python3.12/site-packages";

/// A root being built: its directory and the distributions installed in its site-packages.
struct Venv {
    _t: tempfile::TempDir,
    root: PathBuf,
    dists: Vec<Dist>,
}

impl Venv {
    fn new() -> Venv {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        // The interpreter, a dynamically linked program; the driver library in a default directory.
        let libpython = build::lib(
            &root.join("usr/lib64"),
            "libpython3.12.so.1.0",
            "py",
            &[],
            &["-nostdlib"],
        );
        build::exe(&root.join("usr/bin/python3.12"), &[&libpython], &[]);
        build::lib(
            &root.join("usr/lib64"),
            "libcuda.so.1",
            "cuInit",
            &[],
            &["-nostdlib"],
        );
        Venv {
            _t: t,
            root,
            dists: vec![],
        }
    }

    fn host(&self, machine: &str) -> PathBuf {
        self.root.join(machine.trim_start_matches('/'))
    }

    /// A library `rel` (under the site) with `flags` (an RPATH or RUNPATH), recorded in distribution `dist`.
    fn lib(&mut self, dist: (&str, &str), rel: &str, flags: &[&str], requires: &[&str]) {
        let path = self.host(SITE).join(rel);
        let soname = path.file_name().unwrap().to_str().unwrap().to_string();
        let mut all = vec!["-nostdlib"];
        all.extend_from_slice(flags);
        build::lib(path.parent().unwrap(), &soname, "f", &[], &all);
        let key = normalise(dist.0);
        match self.dists.iter_mut().find(|d| d.key == key) {
            Some(d) => {
                let mut files = d.files().to_vec();
                files.push(rel.to_string());
                d.files = RecordFiles::known(files);
            }
            None => self.dists.push(Dist {
                key,
                site: PathBuf::from(SITE),
                info: PathBuf::from(SITE).join(format!("{}-{}.dist-info", dist.0, dist.1)),
                files: RecordFiles::known(vec![rel.to_string()]),
                metadata: Metadata::known(Meta::new(
                    dist.0,
                    dist.1,
                    requires.iter().map(|s| s.to_string()).collect(),
                )),
            }),
        }
    }

    fn python(&self) -> PyEnv {
        PyEnv::new(
            SysPath {
                executable: PathBuf::from("/venv/bin/python"),
                version: None,
                prefix: PathBuf::from("/venv"),
                base_prefix: PathBuf::from("/usr"),
                base_exec_prefix: PathBuf::from("/usr"),
                platlibdir: "lib".into(),
                venv: None,
                debian_site: false,
                user_site: UserSite {
                    path: None,
                    added: false,
                    disabled_by: None,
                },
                entries: vec![Entry {
                    path: PathBuf::from(SITE),
                    why: Why::StdlibZip,
                }],
                not_modelled: vec![],
            },
            self.dists.clone(),
        )
    }

    /// `import MODULE` then its first use, in one process started from the venv's interpreter.
    fn run(&self, fw: &dyn Framework, models: &[Range], version: &str) -> (Step, Vec<(String, LoadedHow)>) {
        let files = cudadiag::loader::Files::default();
        self.run_with(fw, models, version, &Env::empty(), &[h200()], files)
    }

    /// [`Venv::run`] with the process's environment, the GPUs it sees and the `files` it reads with (their
    /// number of worker threads).
    fn run_with(
        &self,
        fw: &dyn Framework,
        models: &[Range],
        version: &str,
        env: &Env,
        gpus: &[Gpu],
        mut files: cudadiag::loader::Files,
    ) -> (Step, Vec<(String, LoadedHow)>) {
        let root = Root::at(&self.root);
        let python = self.python();
        let matrix = cudadiag::matrix::Matrix::bundled().unwrap();
        let ctx = Ctx {
            root: &root,
            env,
            python: &python,
            gpus,
            driver: None,
            matrix: &matrix,
            provides: &|_| false,
        };
        let m = select(fw.module(), version, models).unwrap();
        let program = self.host("/usr/bin/python3.12");
        let out = cudadiag::loader::process::process(&root, env, &program, &mut files, |img| {
            let mut p = PyProcess::new(img);
            let import = fw.import(&ctx, &m, &mut p);
            assert_eq!(import.outcome, Outcome::Gpu, "{import:?}");
            let first = fw.first_use(&ctx, &m, &mut p);
            let loaded = p
                .loaded()
                .iter()
                .map(|l| (l.path.clone(), l.how.clone()))
                .collect();
            (first, loaded)
        })
        .expect("the interpreter starts");
        out.expect("x86-64")
    }
}

fn h200() -> Gpu {
    Gpu {
        label: "NVIDIA H200 (CC 9.0)".into(),
        cc: cudadiag::matrix::Cc { major: 9, minor: 0 },
    }
}

const JAX_DIRS: &[&str] = &[
    "cuda_runtime",
    "cublas",
    "cudnn",
    "cufft",
    "cuda_cupti",
    "cusolver",
    "cusparse",
];

fn rpath(prefix: &str) -> String {
    let dirs: Vec<String> = JAX_DIRS
        .iter()
        .map(|d| format!("{prefix}/nvidia/{d}/lib"))
        .collect();
    format!("-Wl,--disable-new-dtags,-rpath,{}", dirs.join(":"))
}

/// `jax[cuda12]` 0.10.2: the plugin's modules with their DT_RPATH, the PJRT library, the NVIDIA wheels.
fn jax_venv(with_cudnn: bool) -> Venv {
    let mut v = Venv::new();
    let own = rpath("$ORIGIN/..");
    let pjrt = rpath("$ORIGIN/../..");
    let plugin = ("jax-cuda12-plugin", "0.10.2");
    let pins = ["nvidia-cudnn-cu12<10.0,>=9.8; sys_platform == \"linux\" and extra == \"with-cuda\""];
    for m in ["_versions", "_solver", "cuda_plugin_extension"] {
        v.lib(plugin, &format!("jax_cuda12_plugin/{m}.so"), &[&own], &pins);
    }
    v.lib(
        ("jax-cuda12-pjrt", "0.10.2"),
        "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
        &[&pjrt],
        &[],
    );
    v.lib(("jax", "0.10.2"), "jax/_src/placeholder.so", &[], &[]);
    let wheels: &[(&str, &str, &str)] = &[
        (
            "nvidia-cuda-runtime-cu12",
            "12.9.79",
            "nvidia/cuda_runtime/lib/libcudart.so.12",
        ),
        (
            "nvidia-cublas-cu12",
            "12.9.3.13",
            "nvidia/cublas/lib/libcublasLt.so.12",
        ),
        (
            "nvidia-cublas-cu12",
            "12.9.3.13",
            "nvidia/cublas/lib/libcublas.so.12",
        ),
        (
            "nvidia-cuda-cupti-cu12",
            "12.9.79",
            "nvidia/cuda_cupti/lib/libcupti.so.12",
        ),
        (
            "nvidia-cusparse-cu12",
            "12.5.10.65",
            "nvidia/cusparse/lib/libcusparse.so.12",
        ),
        (
            "nvidia-cusolver-cu12",
            "11.7.5.82",
            "nvidia/cusolver/lib/libcusolver.so.11",
        ),
        ("nvidia-cufft-cu12", "11.4.1.4", "nvidia/cufft/lib/libcufft.so.11"),
        ("nvidia-cudnn-cu12", "9.28.0.42", "nvidia/cudnn/lib/libcudnn.so.9"),
    ];
    for (name, version, rel) in wheels {
        if *name == "nvidia-cudnn-cu12" && !with_cudnn {
            continue;
        }
        v.lib((name, version), rel, &[], &[]);
    }
    for d in ["cuda_runtime", "cudnn", "cublas"] {
        std::fs::write(v.host(SITE).join(format!("nvidia/{d}/__init__.py")), "").ok();
    }
    v
}

#[test]
fn jax_cuda12_healthy_through_the_loader_emulation() {
    let v = jax_venv(true);
    let (first, loaded) = v.run(&Jax, cudadiag::python::frameworks::jax::MODELS, "0.10.2");
    assert_eq!(first.outcome, Outcome::Gpu, "{first:?}");
    let site_lib = |soname: &str| {
        loaded
            .iter()
            .find(|(p, _)| p.ends_with(&format!("/{soname}")))
            .unwrap_or_else(|| panic!("{soname} not loaded: {loaded:?}"))
    };
    // The runtime came at import through `_solver.so`'s DT_RPATH; cuDNN by the plugin's preload, by path.
    assert!(matches!(site_lib("libcudart.so.12").1, LoadedHow::Opened { .. }));
    assert!(matches!(&site_lib("libcudnn.so.9").1, LoadedHow::Preloaded { by, .. } if by == "jax"));
    assert!(site_lib("libcudnn.so.9").0.starts_with(SITE));
    site_lib("xla_cuda_plugin.so");
    site_lib("libcuda.so.1");
}

/// cuDNN's dispatcher keeps the names of all its sub-libraries, and its graph library the toolkit's
/// `libnvrtc.so`; at JAX's first GPU use (a matmul and a convolution) the GPU machine mapped `libcudnn_ops` but
/// not `libcudnn_adv`, `libcudnn_cnn` or any NVRTC (jax 0.11.2, cuDNN 9.19): those open only with the legacy
/// APIs and run-time fusion, so they are not predicted.
#[test]
fn jax_first_use_opens_cudnns_ops_not_its_legacy_api_libraries_or_nvrtc() {
    let v = jax_venv(true);
    let dir = v.host(SITE).join("nvidia/cudnn/lib");
    let runpath = ["-nostdlib", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"];
    std::fs::remove_file(dir.join("libcudnn.so.9")).unwrap();
    build::lib_from(
        &dir,
        "libcudnn.so.9",
        "const char *subs[] = {\"libcudnn_ops.so\", \"libcudnn_adv.so\", \"libcudnn_cnn.so\", \
         \"libcudnn_graph.so\"};\nconst char *f(int i) { return subs[i]; }\n",
        &[],
        &runpath,
    );
    build::lib_from(
        &dir,
        "libcudnn_graph.so.9",
        "const char *n = \"libnvrtc.so\";\nconst char *g(void) { return n; }\n",
        &[],
        &runpath,
    );
    for sub in ["libcudnn_ops.so.9", "libcudnn_adv.so.9", "libcudnn_cnn.so.9"] {
        build::lib(&dir, sub, "h", &[], &runpath);
    }
    // The toolkit's NVRTC under its development name, where the graph library's RUNPATH would find it.
    build::lib(&dir, "libnvrtc.so", "n", &[], &["-nostdlib"]);
    let (first, loaded) = v.run(&Jax, cudadiag::python::frameworks::jax::MODELS, "0.10.2");
    assert_eq!(first.outcome, Outcome::Gpu, "{first:?}");
    let has = |name: &str| loaded.iter().any(|(p, _)| p.ends_with(&format!("/{name}")));
    assert!(
        has("libcudnn_graph.so.9") && has("libcudnn_ops.so.9"),
        "{loaded:#?}"
    );
    for name in ["libcudnn_adv.so.9", "libcudnn_cnn.so.9", "libnvrtc.so"] {
        assert!(!has(name), "{name} predicted: {loaded:#?}");
    }
}

/// With cores to spare, the files of JAX's preloads are read on other threads before their loads
/// (`Process::expect_paths`); with one worker, each when it is loaded: the same step and the same loads, in
/// the same order, either way.
#[test]
fn jax_preloads_read_ahead_or_each_at_its_load_give_the_same_process() {
    let v = jax_venv(true);
    let models = cudadiag::python::frameworks::jax::MODELS;
    let run = |threads| {
        let files = cudadiag::loader::Files::with_threads(threads);
        let (first, loaded) = v.run_with(&Jax, models, "0.10.2", &Env::empty(), &[h200()], files);
        format!("{first:?}\n{loaded:#?}")
    };
    let (ahead, each) = (run(4), run(1));
    assert_eq!(ahead, each);
    assert!(ahead.contains("libcudnn.so.9"), "{ahead}");
}

#[test]
fn jax_cuda12_without_cudnn_falls_back_to_the_cpu_through_the_loader_emulation() {
    let v = jax_venv(false);
    let (first, loaded) = v.run(&Jax, cudadiag::python::frameworks::jax::MODELS, "0.10.2");
    match first.outcome {
        Outcome::CpuFallback { message, because } => {
            assert!(
                message
                    .unwrap_or_default()
                    .contains("Unable to load cuDNN. Is it installed?")
            );
            assert!(because.contains("will not use the GPU"));
        }
        other => panic!("expected a CPU fall-back: {other:?}"),
    }
    assert!(!loaded.iter().any(|(p, _)| p.ends_with("xla_cuda_plugin.so")));
}

/// `JAX_PLATFORMS=cuda` turns the plugin's failure (cuDNN missing) into an exception at the first use: with a
/// GPU visible, initialising the unregistered `cuda` backend raises `Unable to initialize backend 'cuda'`;
/// with none (no `/dev/nvidia0`, `/dev/nvidiactl`, `/dev/dxg`), `xla_bridge.backends()` skips the platform and
/// its `assert _default_backend is not None` fails: a bare `AssertionError`, as jax 0.10.2 raised it here.
#[test]
fn jax_platforms_cuda_raises_and_without_a_gpu_it_is_an_assertion_error() {
    let v = jax_venv(false);
    let mut env = Env::empty();
    env.set("JAX_PLATFORMS", "cuda");
    for (gpus, raised) in [
        (vec![h200()], "RuntimeError: Unable to initialize backend 'cuda'"),
        (vec![], "AssertionError"),
    ] {
        let (first, _) = v.run_with(
            &Jax,
            cudadiag::python::frameworks::jax::MODELS,
            "0.10.2",
            &env,
            &gpus,
            cudadiag::loader::Files::default(),
        );
        match first.outcome {
            Outcome::Fails { message, load: None } => {
                let last = message.lines().last().unwrap_or_default();
                assert!(last.starts_with(raised), "{message}");
                assert!(message.contains("Unable to load cuDNN"), "{message}");
            }
            other => panic!("expected JAX to raise: {other:?}"),
        }
    }
}

/// `tensorflow[and-cuda]` 2.21.0: the extension needs the framework library, whose DT_RUNPATH is the
/// wheel's (`with_cusolver` adds the `nvidia/cusolver/lib` entry 2.21.0 lacks).
fn tf_venv(with_cusolver: bool) -> Venv {
    let mut v = Venv::new();
    let mut dirs = vec![
        "nccl",
        "cuda_cupti",
        "cublas",
        "cudnn",
        "cufft",
        "cusparse",
        "cuda_runtime",
    ];
    if with_cusolver {
        dirs.push("cusolver");
    }
    let runpath: Vec<String> = dirs
        .iter()
        .map(|d| format!("$ORIGIN/../nvidia/{d}/lib"))
        .collect();
    let runpath = format!("-Wl,--enable-new-dtags,-rpath,{}", runpath.join(":"));
    let tf = ("tensorflow", "2.21.0");
    let pins = ["nvidia-cusolver-cu12<12.0,>=11.6.3.83; extra == \"and-cuda\""];
    v.lib(tf, "tensorflow/libtensorflow_framework.so.2", &[&runpath], &pins);
    let fw = v.host(SITE).join("tensorflow/libtensorflow_framework.so.2");
    let ext = v.host(SITE).join("tensorflow/python");
    build::lib(
        &ext,
        "_pywrap_tensorflow_internal.so",
        "f",
        &[&fw],
        &["-nostdlib", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/.."],
    );
    std::fs::write(
        v.host(SITE)
            .join("tensorflow/python/platform/build_info.py")
            .tap_dir(),
        "build_info = collections.OrderedDict([('cuda_version', '12.5.1'), ('cudnn_version', '9'), \
         ('is_cuda_build', True)])\n",
    )
    .unwrap();
    let wheels: &[(&str, &str, &str)] = &[
        (
            "nvidia-cuda-runtime-cu12",
            "12.9.79",
            "nvidia/cuda_runtime/lib/libcudart.so.12",
        ),
        (
            "nvidia-cublas-cu12",
            "12.9.3.13",
            "nvidia/cublas/lib/libcublas.so.12",
        ),
        (
            "nvidia-cublas-cu12",
            "12.9.3.13",
            "nvidia/cublas/lib/libcublasLt.so.12",
        ),
        ("nvidia-cufft-cu12", "11.4.1.4", "nvidia/cufft/lib/libcufft.so.11"),
        (
            "nvidia-cusolver-cu12",
            "11.7.5.82",
            "nvidia/cusolver/lib/libcusolver.so.11",
        ),
        (
            "nvidia-cusparse-cu12",
            "12.5.10.65",
            "nvidia/cusparse/lib/libcusparse.so.12",
        ),
        ("nvidia-cudnn-cu12", "9.28.0.42", "nvidia/cudnn/lib/libcudnn.so.9"),
    ];
    for (name, version, rel) in wheels {
        v.lib((name, version), rel, &[], &[]);
    }
    v
}

/// Creates the parent directory of a path about to be written.
trait TapDir {
    fn tap_dir(self) -> Self;
}

impl TapDir for PathBuf {
    fn tap_dir(self) -> Self {
        std::fs::create_dir_all(self.parent().unwrap()).unwrap();
        self
    }
}

#[test]
fn tensorflow_2_21s_runpath_misses_cusolver_through_the_loader_emulation() {
    let models = cudadiag::python::frameworks::tensorflow::MODELS;
    let v = tf_venv(false);
    let (first, _) = v.run(&TensorFlow, models, "2.21.0");
    match first.outcome {
        Outcome::CpuFallback { message, because } => {
            let message = message.unwrap_or_default();
            assert!(
                message.contains("Could not load dynamic library 'libcusolver.so.11'"),
                "{message}"
            );
            assert!(message.contains("Cannot dlopen some GPU libraries."));
            assert!(
                because.contains(
                    "export LD_LIBRARY_PATH=/venv/lib/python3.12/site-packages/nvidia/cusolver/lib"
                )
            );
        }
        other => panic!("expected a CPU fall-back: {other:?}"),
    }

    // Near miss: a RUNPATH that reaches nvidia/cusolver/lib registers the GPU, every library from the venv.
    let v = tf_venv(true);
    let (first, loaded) = v.run(&TensorFlow, models, "2.21.0");
    assert_eq!(first.outcome, Outcome::Gpu, "{first:?}");
    for soname in ["libcudart.so.12", "libcusolver.so.11", "libcudnn.so.9"] {
        let (path, how) = loaded.iter().find(|(p, _)| p.ends_with(soname)).expect(soname);
        assert!(path.starts_with(SITE), "{path}");
        assert!(matches!(how, LoadedHow::Opened { .. }), "{how:?}");
    }
}
