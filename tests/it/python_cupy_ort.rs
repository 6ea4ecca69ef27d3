//! CuPy 13 and 14 and ONNX Runtime's CUDA provider, modelled in one process over the loader's emulation (issue
//! 31): each root is a small synthetic environment built here (a venv whose interpreter is a tiny ELF, the
//! frameworks' extension modules and the NVIDIA wheels' libraries as tiny libraries with their real sonames
//! and DT_NEEDED, the `*.dist-info` records pip writes). What each case expects is what the real wheels did
//! (`docs/framework-cupy-onnxruntime.md`): cupy-cuda12x 13.6.0 and 14.2.0, onnxruntime-gpu 1.31.1.

use crate::support::loader_build as build;

use assert_cmd::Command;
use cudadiag::imports::process::PyProcess;
use cudadiag::matrix::Matrix;
use cudadiag::python::frameworks::cupy::{self, Cupy};
use cudadiag::python::frameworks::onnxruntime::{self, OnnxRuntime};
use cudadiag::python::frameworks::{
    Ctx, Framework, Outcome, Process, Range, Selected, Step, When, env, select,
};
use cudadiag::system::{Env, Root};
use std::path::{Path, PathBuf};

const SITE: &str = "venv/lib/python3.12/site-packages";

/// A library with SONAME `soname`, no libc, linked against `deps` (their sonames become its DT_NEEDED).
pub(crate) fn lib(dir: &Path, soname: &str, deps: &[&Path]) -> PathBuf {
    build::lib(dir, soname, "f", deps, &["-nostdlib"])
}

/// A machine with a Python 3.12 at `/usr`, a venv at `/venv` on it, and a driver's `libcuda.so.1` in
/// `/usr/lib64` when `driver`.
pub(crate) struct Machine {
    _t: tempfile::TempDir,
    pub(crate) root: PathBuf,
    /// Libraries to link against that the machine does not hold.
    scratch: PathBuf,
}

impl Machine {
    pub(crate) fn new(driver: bool) -> Machine {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let scratch = t.path().join("scratch");
        build::exe(
            &root.join("usr/bin/python3.12"),
            &[],
            &["-nostdlib", "-Wl,-e,main"],
        );
        for f in ["usr/lib/python3.12/os.py", "usr/lib/python3.12/site.py"] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        std::fs::create_dir_all(root.join("usr/lib/python3.12/lib-dynload")).unwrap();
        std::fs::create_dir_all(root.join("venv/bin")).unwrap();
        std::fs::create_dir_all(root.join(SITE)).unwrap();
        std::os::unix::fs::symlink("../../usr/bin/python3.12", root.join("venv/bin/python3")).unwrap();
        std::fs::write(
            root.join("venv/pyvenv.cfg"),
            "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n",
        )
        .unwrap();
        if driver {
            lib(&root.join("usr/lib64"), "libcuda.so.1", &[]);
        }
        Machine { _t: t, root, scratch }
    }

    pub(crate) fn site(&self) -> PathBuf {
        self.root.join(SITE)
    }

    /// Libraries `sonames` in `rel` (a directory of the site), returned as paths.
    fn wheel_libs(&self, rel: &str, sonames: &[&str]) -> Vec<PathBuf> {
        sonames
            .iter()
            .map(|s| lib(&self.site().join(rel), s, &[]))
            .collect()
    }

    /// A stub to link against, outside the machine: its soname becomes a DT_NEEDED entry.
    fn stub(&self, soname: &str) -> PathBuf {
        lib(&self.scratch, soname, &[])
    }

    /// A distribution `name`-`version` in the site: METADATA with `requires`, RECORD with `files`.
    fn dist(&self, name: &str, version: &str, requires: &[&str], files: &[&str]) {
        let info = self
            .site()
            .join(format!("{}-{version}.dist-info", name.replace('-', "_")));
        std::fs::create_dir_all(&info).unwrap();
        let mut meta = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
        for r in requires {
            meta.push_str(&format!("Requires-Dist: {r}\n"));
        }
        std::fs::write(info.join("METADATA"), meta).unwrap();
        let mut record: String = files.iter().map(|f| format!("{f},,\n")).collect();
        let rel = info.strip_prefix(self.site()).unwrap().display().to_string();
        record.push_str(&format!("{rel}/METADATA,,\n{rel}/RECORD,,\n"));
        std::fs::write(info.join("RECORD"), record).unwrap();
    }

    /// An extension module at `rel` (relative to the site) needing `needs` (stubs' paths).
    fn module(&self, rel: &str, needs: &[&Path]) {
        let path = self.site().join(rel);
        let dir = path.parent().unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        lib(dir, name, needs);
    }
}

/// What one run of `imports` gave: each framework's import and first use, the objects of the process (machine
/// paths), and the fix each model names.
struct Run {
    steps: Vec<(Step, Step)>,
    loaded: Vec<String>,
    /// Of `loaded`, those mapped by an import (not a first use).
    at_import: Vec<String>,
    selected: Vec<Selected>,
    fixes: Vec<Option<String>>,
}

fn run(m: &Machine, vars: &[(&str, &str)], frameworks: &[&dyn Framework]) -> Run {
    run_on(m, vars, frameworks, cudadiag::loader::Files::default())
}

/// [`run`] reading files with `files` (its number of worker threads).
fn run_on(
    m: &Machine,
    vars: &[(&str, &str)],
    frameworks: &[&dyn Framework],
    mut files: cudadiag::loader::Files,
) -> Run {
    let root = Root::at(&m.root);
    let mut e = Env::empty();
    for (k, v) in vars {
        e.set(k, v);
    }
    let python = Path::new("/venv/bin/python3");
    let chosen = env::choose(&e, Some(python), None);
    let req = env::request(&e, &chosen);
    let py = env::collect(&root, &e, &req).unwrap();
    let matrix = Matrix::bundled().unwrap();
    let ctx = Ctx {
        root: &root,
        env: &e,
        python: &py,
        gpus: &[],
        driver: None,
        matrix: &matrix,
        provides: &|_| false,
    };
    // The loader reads the program by its path on this machine: the interpreter the venv's link names.
    let program = m.root.join("usr/bin/python3.12");
    let out = cudadiag::loader::process::process(&root, &e, &program, &mut files, |img| {
        let mut p = PyProcess::new(img);
        let mut out = Run {
            steps: Vec::new(),
            loaded: Vec::new(),
            at_import: Vec::new(),
            selected: Vec::new(),
            fixes: Vec::new(),
        };
        for fw in frameworks {
            let d = fw
                .distributions()
                .iter()
                .find_map(|n| py.dist(n))
                .expect("installed");
            let sel = select(fw.module(), d.version(), fw.models()).expect("a model");
            p.begin(fw.module(), When::Import);
            let import = fw.import(&ctx, &sel, &mut p);
            p.begin(fw.module(), When::FirstUse);
            let first = fw.first_use(&ctx, &sel, &mut p);
            out.fixes.push(match fw.module() {
                "cupy" => cupy::fix(&ctx, &sel),
                _ => onnxruntime::fix(&ctx, &sel),
            });
            out.steps.push((import, first));
            out.selected.push(sel);
        }
        out.loaded = p.loaded().iter().map(|l| l.realpath.clone()).collect();
        out.at_import = (p.loaded().iter())
            .filter(|l| l.when == When::Import)
            .map(|l| l.realpath.clone())
            .collect();
        out
    })
    .expect("the interpreter starts");
    out.expect("an x86-64 interpreter")
}

fn message(s: &Step) -> String {
    match &s.outcome {
        Outcome::Gpu => "gpu".to_string(),
        Outcome::CpuFallback { message, because } => {
            format!("cpu: {} | {because}", message.as_deref().unwrap_or(""))
        }
        Outcome::Fails { message, .. } => format!("fails: {message}"),
    }
}

// ---- CuPy ----

const CUPY_FILES: &[&str] = &[
    "cupy/__init__.py",
    "cupy/_core/core.cpython-312-x86_64-linux-gnu.so",
    "cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so",
    "cupy_backends/cuda/libs/nvrtc.cpython-312-x86_64-linux-gnu.so",
    "cupy_backends/cuda/libs/cublas.cpython-312-x86_64-linux-gnu.so",
];

/// `cupy-cuda12x` `version`: its core and runtime modules (no CUDA DT_NEEDED), its NVRTC module, and its
/// cuBLAS module (DT_NEEDED `libcublas.so.12`), as the real wheels have them.
fn cupy(m: &Machine, version: &str) {
    for f in &CUPY_FILES[1..4] {
        m.module(f, &[]);
    }
    let cublas = m.stub("libcublas.so.12");
    m.module(CUPY_FILES[4], &[&cublas]);
    let requires: &[&str] = if version.starts_with("14") {
        &[
            "cuda-pathfinder==1.*,>=1.3.4",
            "cuda-toolkit[cublas,cudart,cufft,curand,cusolver,cusparse,nvrtc]==12.*; extra == \"ctk\"",
        ]
    } else {
        &[]
    };
    m.dist("cupy-cuda12x", version, requires, CUPY_FILES);
}

/// The CUDA 12 wheels of `cupy-cuda12x[ctk]` that the model reaches: cuBLAS (with cuBLASLt) and NVRTC.
fn ctk12(m: &Machine, nvrtc: bool) {
    m.wheel_libs("nvidia/cublas/lib", &["libcublasLt.so.12", "libcublas.so.12"]);
    m.dist(
        "nvidia-cublas-cu12",
        "12.9.2.10",
        &[],
        &["nvidia/cublas/lib/libcublas.so.12"],
    );
    if nvrtc {
        m.wheel_libs("nvidia/cuda_nvrtc/lib", &["libnvrtc.so.12"]);
        m.dist(
            "nvidia-cuda-nvrtc-cu12",
            "12.9.86",
            &[],
            &["nvidia/cuda_nvrtc/lib/libnvrtc.so.12"],
        );
    }
}

fn ends(loaded: &[String], tail: &str) -> bool {
    loaded.iter().any(|l| l.ends_with(tail))
}

#[test]
fn cupy_14_with_its_ctk_wheels_maps_cublaslt_at_import_and_nvrtc_and_cublas_at_first_use() {
    let m = Machine::new(true);
    cupy(&m, "14.2.0");
    ctk12(&m, true);
    let r = run(&m, &[], &[&Cupy]);
    let (import, first) = &r.steps[0];
    assert_eq!(message(import), "gpu");
    assert_eq!(message(first), "gpu");
    for tail in [
        "nvidia/cublas/lib/libcublasLt.so.12",
        "nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
        "nvidia/cublas/lib/libcublas.so.12",
        "cupy_backends/cuda/libs/cublas.cpython-312-x86_64-linux-gnu.so",
        "usr/lib64/libcuda.so.1",
    ] {
        assert!(ends(&r.loaded, tail), "{tail} not in {:#?}", r.loaded);
    }
    // CuPy 14's runtime module opens the driver at import (the H200: libcuda.so.1 mapped after `import cupy`).
    assert!(ends(&r.at_import, "usr/lib64/libcuda.so.1"), "{:#?}", r.at_import);
    assert!(!ends(&r.at_import, "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
    assert_eq!(r.selected[0].nearest, None);
}

/// What `fw`'s process on `m` said and loaded, its files read by `threads` workers: the steps' messages,
/// the objects loaded, those loaded at import, the fixes.
fn said(m: &Machine, fw: &dyn Framework, threads: usize) -> Said {
    let r = run_on(m, &[], &[fw], cudadiag::loader::Files::with_threads(threads));
    let steps = r.steps.iter().map(|(i, f)| (message(i), message(f))).collect();
    (steps, r.loaded, r.at_import, r.fixes)
}

type Said = (
    Vec<(String, String)>,
    Vec<String>,
    Vec<String>,
    Vec<Option<String>>,
);

/// With cores to spare, the libraries each CuPy module needs are read on other threads while the process
/// loads (the loader's read-ahead); with one worker, each when it is searched: the same steps, the same
/// objects in the same order, either way (CuPy 13 and 14).
#[test]
fn cupy_read_ahead_or_each_file_at_its_load_give_the_same_process() {
    for version in ["13.6.0", "14.2.0"] {
        let m = Machine::new(true);
        cupy(&m, version);
        ctk12(&m, true);
        let (ahead, each) = (said(&m, &Cupy, 4), said(&m, &Cupy, 1));
        assert_eq!(ahead, each, "{version}");
        assert!(
            ends(&ahead.1, "cupy/_core/core.cpython-312-x86_64-linux-gnu.so"),
            "{version}: {ahead:#?}"
        );
    }
}

#[test]
fn cupy_14_without_the_nvrtc_wheel_fails_at_the_first_kernel_with_pathfinders_error() {
    let m = Machine::new(true);
    cupy(&m, "14.2.0");
    ctk12(&m, false);
    let r = run(&m, &[], &[&Cupy]);
    let (import, first) = &r.steps[0];
    // `import cupy` itself works: nothing of CUDA's is needed then.
    assert_eq!(message(import), "gpu");
    assert_eq!(
        message(first),
        "fails: DynamicLibNotFoundError: Failure finding \"libnvrtc.so.13 or libnvrtc.so.12\": No such file: \
         libnvrtc.so.13 or libnvrtc.so.12, No such file: libnvrtc.so.13 or libnvrtc.so.12"
    );
    let fix = r.fixes[0].as_deref().unwrap();
    assert!(fix.contains("pip install 'cupy-cuda12x[ctk]'"), "{fix}");
}

#[test]
fn cupy_14_with_a_cuda_11_nvrtc_older_than_its_ctk_pin_does_not_find_it() {
    let m = Machine::new(true);
    cupy(&m, "14.2.0");
    ctk12(&m, false);
    m.wheel_libs("nvidia/cuda_nvrtc/lib", &["libnvrtc.so.11.2"]);
    m.dist(
        "nvidia-cuda-nvrtc-cu11",
        "11.8.89",
        &[],
        &["nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2"],
    );
    let r = run(&m, &[], &[&Cupy]);
    assert!(message(&r.steps[0].1).starts_with("fails: DynamicLibNotFoundError"));
}

/// cuda-pathfinder loads the builtins beside the NVRTC 13.0 wheel's `libnvrtc.so.13` by path (that wheel has no
/// RUNPATH, and NVRTC's own search would take the toolkit's copy from `ld.so.cache`: the GPU machine's CuPy 14
/// mapped the wheel's). A CUDA 12 NVRTC wheel is left to NVRTC, even with builtins beside it.
#[test]
fn cupy_14_gets_the_nvrtc_13_wheels_builtins_from_pathfinder() {
    let m = Machine::new(true);
    cupy(&m, "14.2.0");
    ctk12(&m, false);
    m.wheel_libs(
        "nvidia/cu13/lib",
        &["libnvrtc.so.13", "libnvrtc-builtins.so.13.0"],
    );
    let r = run(&m, &[], &[&Cupy]);
    assert!(
        ends(&r.loaded, "nvidia/cu13/lib/libnvrtc.so.13"),
        "{:#?}",
        r.loaded
    );
    assert!(
        ends(&r.loaded, "nvidia/cu13/lib/libnvrtc-builtins.so.13.0"),
        "{:#?}",
        r.loaded
    );
    let m = Machine::new(true);
    cupy(&m, "14.2.0");
    ctk12(&m, true);
    m.wheel_libs("nvidia/cuda_nvrtc/lib", &["libnvrtc-builtins.so.12.9"]);
    let r = run(&m, &[], &[&Cupy]);
    assert!(ends(&r.loaded, "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
    assert!(!ends(&r.loaded, "libnvrtc-builtins.so.12.9"), "{:#?}", r.loaded);
}

#[test]
fn cupy_cuda12x_14_beside_cuda_13_wheels_gets_cublas_13_and_its_module_fails() {
    // Observed with cupy-cuda12x[ctk] 14.2.0, nvidia-cublas 13 and nvidia-cuda-nvrtc 13 in one venv.
    let m = Machine::new(true);
    cupy(&m, "14.2.0");
    ctk12(&m, true);
    m.wheel_libs(
        "nvidia/cu13/lib",
        &["libcublasLt.so.13", "libcublas.so.13", "libnvrtc.so.13"],
    );
    m.dist(
        "nvidia-cublas",
        "13.10.0.20",
        &[],
        &["nvidia/cu13/lib/libcublas.so.13"],
    );
    let r = run(&m, &[], &[&Cupy]);
    assert!(ends(&r.loaded, "nvidia/cu13/lib/libcublasLt.so.13"));
    assert!(ends(&r.loaded, "nvidia/cu13/lib/libnvrtc.so.13"));
    assert_eq!(
        message(&r.steps[0].1),
        "fails: ImportError: libcublas.so.12: cannot open shared object file: No such file or directory"
    );
    // NVRTC 13 serves the CUDA 12 build: said, not judged.
    assert!(
        r.steps[0].1.notes.iter().any(|n| n.contains("gives NVRTC 13")),
        "{:?}",
        r.steps[0].1.notes
    );
}

#[test]
fn cupy_14_loads_its_wheels_by_path_so_ld_library_path_does_not_shadow_them() {
    let m = Machine::new(true);
    cupy(&m, "14.2.0");
    ctk12(&m, true);
    lib(&m.root.join("old"), "libnvrtc.so.12", &[]);
    lib(&m.root.join("old"), "libcublasLt.so.12", &[]);
    lib(&m.root.join("old"), "libcublas.so.12", &[]);
    let r = run(&m, &[("LD_LIBRARY_PATH", "/old")], &[&Cupy]);
    assert_eq!(message(&r.steps[0].1), "gpu");
    assert!(ends(&r.loaded, "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
    assert!(
        !r.loaded.iter().any(|l| l.starts_with("/old/")),
        "{:#?}",
        r.loaded
    );
}

#[test]
fn cupy_13_does_not_look_for_the_wheels_and_ld_library_path_decides() {
    let m = Machine::new(true);
    cupy(&m, "13.6.0");
    ctk12(&m, true);
    let r = run(&m, &[], &[&Cupy]);
    assert_eq!(message(&r.steps[0].0), "gpu");
    assert_eq!(
        message(&r.steps[0].1),
        "fails: RuntimeError: CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared \
         object file: No such file or directory"
    );
    assert!(
        r.fixes[0]
            .as_deref()
            .unwrap()
            .contains("pip install -U 'cupy-cuda12x[ctk]'")
    );
    // With the wheels' directories in LD_LIBRARY_PATH (observed: it works).
    let dirs = format!("/{SITE}/nvidia/cuda_nvrtc/lib:/{SITE}/nvidia/cublas/lib");
    let r = run(&m, &[("LD_LIBRARY_PATH", &dirs)], &[&Cupy]);
    assert_eq!(message(&r.steps[0].1), "gpu");
    // An older copy first in LD_LIBRARY_PATH is the one CuPy 13 gets.
    lib(&m.root.join("old"), "libnvrtc.so.12", &[]);
    let r = run(&m, &[("LD_LIBRARY_PATH", &format!("/old:{dirs}"))], &[&Cupy]);
    assert!(
        r.loaded.iter().any(|l| l.ends_with("/old/libnvrtc.so.12")),
        "{:#?}",
        r.loaded
    );
}

#[test]
fn a_cupy_older_than_every_modelled_version_is_judged_with_the_nearest_and_says_so() {
    let m = Machine::new(true);
    cupy(&m, "12.3.0");
    ctk12(&m, true);
    let r = run(&m, &[], &[&Cupy]);
    let note = r.selected[0].nearest.as_deref().unwrap();
    assert!(
        note.contains("cupy 12.3.0 is older") && note.contains("13 up to 14"),
        "{note}"
    );
    // Judged as CuPy 13: the wheels are not looked for.
    assert!(message(&r.steps[0].1).starts_with("fails: RuntimeError: CuPy failed to load libnvrtc.so.12"));
}

// ---- ONNX Runtime ----

const ORT: &str = "1.31.1";

/// `onnxruntime-gpu` 1.31.1, a CUDA 13 build: its pybind module, the provider bridge, and the CUDA provider
/// with the real DT_NEEDED and no RPATH.
pub(crate) fn ort(m: &Machine) {
    let site = m.site();
    let capi = site.join("onnxruntime/capi");
    lib(
        &capi,
        "onnxruntime_pybind11_state.cpython-312-x86_64-linux-gnu.so",
        &[],
    );
    lib(&capi, "libonnxruntime_providers_shared.so", &[]);
    let needs: Vec<PathBuf> = [
        "libcublasLt.so.13",
        "libcublas.so.13",
        "libcurand.so.10",
        "libcudart.so.13",
        "libcuda.so.1",
    ]
    .iter()
    .map(|s| m.stub(s))
    .collect();
    let needs: Vec<&Path> = needs.iter().map(PathBuf::as_path).collect();
    lib(&capi, "libonnxruntime_providers_cuda.so", &needs);
    std::fs::write(
        capi.join("build_and_package_info.py"),
        format!("package_name = 'onnxruntime-gpu'\n__version__ = '{ORT}'\ncuda_version = '13.0'\n"),
    )
    .unwrap();
    m.dist(
        "onnxruntime-gpu",
        ORT,
        &[
            "nvidia-cuda-runtime~=13.0; extra == \"cuda\"",
            "nvidia-curand~=10.0; extra == \"cuda\"",
            "nvidia-cudnn-cu13~=9.0; extra == \"cudnn\"",
        ],
        &[
            "onnxruntime/__init__.py",
            "onnxruntime/capi/onnxruntime_pybind11_state.cpython-312-x86_64-linux-gnu.so",
            "onnxruntime/capi/libonnxruntime_providers_shared.so",
            "onnxruntime/capi/libonnxruntime_providers_cuda.so",
            "onnxruntime/capi/build_and_package_info.py",
        ],
    );
}

/// The CUDA 13 wheels of `[cuda,cudnn]` (and cuBLAS), all in `nvidia/cu13/lib` but `skip`.
pub(crate) fn cuda13(m: &Machine, skip: &[&str]) {
    let all = [
        "libcublasLt.so.13",
        "libcublas.so.13",
        "libnvrtc.so.13",
        "libcurand.so.10",
        "libcufft.so.12",
        "libcudart.so.13",
    ];
    let keep: Vec<&str> = all.iter().copied().filter(|s| !skip.contains(s)).collect();
    m.wheel_libs("nvidia/cu13/lib", &keep);
    m.wheel_libs("nvidia/cudnn/lib", &["libcudnn.so.9"]);
}

const WITH: OnnxRuntime = OnnxRuntime { preload: true };
const WITHOUT: OnnxRuntime = OnnxRuntime { preload: false };

#[test]
fn onnxruntime_with_preload_dlls_uses_its_wheels_and_the_gpu() {
    let m = Machine::new(true);
    ort(&m);
    cuda13(&m, &[]);
    let r = run(&m, &[], &[&WITH]);
    assert_eq!(message(&r.steps[0].0), "gpu");
    assert_eq!(message(&r.steps[0].1), "gpu");
    for tail in [
        "nvidia/cu13/lib/libcublasLt.so.13",
        "nvidia/cu13/lib/libcudart.so.13",
        "nvidia/cudnn/lib/libcudnn.so.9",
        "onnxruntime/capi/libonnxruntime_providers_cuda.so",
    ] {
        assert!(ends(&r.loaded, tail), "{tail} not in {:#?}", r.loaded);
    }
}

/// ONNX Runtime's module, provider bridge and CUDA provider are read ahead with cores to spare: the same
/// process as with each file read at its load, whether the provider loads (`preload_dlls`) or fails to.
#[test]
fn onnxruntime_read_ahead_or_each_file_at_its_load_give_the_same_process() {
    for fw in [WITH, WITHOUT] {
        let m = Machine::new(true);
        ort(&m);
        cuda13(&m, &[]);
        let (ahead, each) = (said(&m, &fw, 4), said(&m, &fw, 1));
        assert_eq!(ahead, each, "preload_dlls: {}", fw.preload);
        assert_eq!(
            ends(&ahead.1, "onnxruntime/capi/libonnxruntime_providers_cuda.so"),
            fw.preload,
            "{ahead:#?}"
        );
    }
}

#[test]
fn onnxruntime_without_preload_dlls_falls_back_to_the_cpu_though_its_wheels_are_installed() {
    let m = Machine::new(true);
    ort(&m);
    cuda13(&m, &[]);
    let r = run(&m, &[], &[&WITHOUT]);
    let got = message(&r.steps[0].1);
    assert!(
        got.starts_with("cpu: Failed to load library /venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: cannot open shared object file: No such file or directory; Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 13.*."),
        "{got}"
    );
    assert!(got.contains("has no RPATH"), "{got}");
    assert!(!ends(&r.loaded, "libonnxruntime_providers_cuda.so"));
    let fix = r.fixes[0].as_deref().unwrap();
    assert!(fix.contains("onnxruntime.preload_dlls()"), "{fix}");
}

#[test]
fn onnxruntime_missing_its_curand_wheel_falls_back_even_with_preload_dlls() {
    let m = Machine::new(true);
    ort(&m);
    cuda13(&m, &["libcurand.so.10"]);
    let r = run(&m, &[], &[&WITH]);
    let (step, got) = (&r.steps[0].1, message(&r.steps[0].1));
    assert!(
        got.contains("with error: libcurand.so.10: cannot open shared object file"),
        "{got}"
    );
    assert!(
        step.notes
            .iter()
            .any(|n| n.starts_with("Failed to load libcurand.so.10")),
        "{:?}",
        step.notes
    );
}

#[test]
fn onnxruntime_with_a_cuda_12_runtime_older_than_its_pin_misses_libcudart_13() {
    let m = Machine::new(true);
    ort(&m);
    cuda13(&m, &["libcudart.so.13"]);
    m.wheel_libs("nvidia/cuda_runtime/lib", &["libcudart.so.12"]);
    m.dist(
        "nvidia-cuda-runtime-cu12",
        "12.9.79",
        &[],
        &["nvidia/cuda_runtime/lib/libcudart.so.12"],
    );
    let r = run(&m, &[], &[&WITH]);
    let got = message(&r.steps[0].1);
    assert!(
        got.contains("with error: libcudart.so.13: cannot open shared object file"),
        "{got}"
    );
    assert!(r.fixes[0].as_deref().unwrap().contains("preload_dlls"));
}

#[test]
fn ld_library_path_shadows_onnxruntimes_wheels_unless_preload_dlls_loads_them_first() {
    let m = Machine::new(true);
    ort(&m);
    cuda13(&m, &[]);
    for s in [
        "libcublasLt.so.13",
        "libcublas.so.13",
        "libcurand.so.10",
        "libcudart.so.13",
    ] {
        lib(&m.root.join("old"), s, &[]);
    }
    let r = run(&m, &[("LD_LIBRARY_PATH", "/old")], &[&WITHOUT]);
    assert_eq!(message(&r.steps[0].1), "gpu");
    assert!(
        r.loaded.iter().any(|l| l == "/old/libcublasLt.so.13"),
        "{:#?}",
        r.loaded
    );
    let r = run(&m, &[("LD_LIBRARY_PATH", "/old")], &[&WITH]);
    assert_eq!(message(&r.steps[0].1), "gpu");
    assert!(
        !r.loaded.iter().any(|l| l.starts_with("/old/")),
        "{:#?}",
        r.loaded
    );
}

#[test]
fn an_onnxruntime_before_preload_dlls_existed_is_judged_without_it() {
    let m = Machine::new(true);
    ort(&m);
    std::fs::rename(
        m.site().join(format!("onnxruntime_gpu-{ORT}.dist-info")),
        m.site().join("onnxruntime_gpu-1.20.1.dist-info"),
    )
    .unwrap();
    let meta = m.site().join("onnxruntime_gpu-1.20.1.dist-info/METADATA");
    let text = std::fs::read_to_string(&meta).unwrap().replace(ORT, "1.20.1");
    std::fs::write(&meta, text).unwrap();
    cuda13(&m, &[]);
    let r = run(&m, &[], &[&WITH]);
    assert_eq!(r.selected[0].index, 0);
    assert!(message(&r.steps[0].1).starts_with("cpu: "));
    assert!(
        r.steps[0]
            .1
            .notes
            .iter()
            .any(|n| n.contains("has no preload_dlls()"))
    );
}

// ---- through `cudadiag import` ----

/// `cudadiag import MODULE --root ROOT --python /venv/bin/python3 --clear-env --format json`: the findings.
fn import_findings(m: &Machine, module: &str) -> Vec<serde_json::Value> {
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args([
            "--color",
            "never",
            "import",
            module,
            "--python",
            "/venv/bin/python3",
            "--clear-env",
        ])
        .args(["--format", "json", "--root"])
        .arg(&m.root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    doc["findings"].as_array().cloned().unwrap_or_default()
}

#[test]
fn cudadiag_import_onnxruntime_says_the_gpu_will_not_be_used_and_to_call_preload_dlls() {
    let m = Machine::new(true);
    ort(&m);
    cuda13(&m, &[]);
    let f = import_findings(&m, "onnxruntime");
    let cpu: Vec<_> = f
        .iter()
        .filter(|f| f["slug"] == "framework-cpu-fallback")
        .collect();
    assert_eq!(cpu.len(), 1, "{f:#?}");
    assert!(
        cpu[0]["help"]
            .as_str()
            .unwrap()
            .starts_with("Call `onnxruntime.preload_dlls()` before creating")
    );
    // The program that calls it: the wheels are loaded first, the provider finds them, no finding.
    let f = import_findings(&m, "onnxruntime.preload_dlls");
    assert!(f.iter().all(|f| f["slug"] != "framework-cpu-fallback"), "{f:#?}");
}

#[test]
fn cudadiag_import_cupy_names_the_ctk_extra_for_a_missing_nvrtc() {
    let m = Machine::new(true);
    cupy(&m, "14.2.0");
    ctk12(&m, false);
    let f = import_findings(&m, "cupy");
    let missing: Vec<_> = f.iter().filter(|f| f["slug"] == "library-not-found").collect();
    assert_eq!(missing.len(), 1, "{f:#?}");
    assert_eq!(missing[0]["sonames"], serde_json::json!(["libnvrtc.so.12"]));
    assert!(
        missing[0]["help"]
            .as_str()
            .unwrap()
            .contains("`pip install 'cupy-cuda12x[ctk]'`")
    );
}

// ---- `cudadiag explain` of their messages ----

/// The best candidate `cudadiag explain --format json TEXT` gives, and its confidence.
fn explained(text: &str) -> (String, String) {
    let out = Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["explain", "--format", "json", text])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &doc["candidates"][0];
    (
        c["slug"].as_str().unwrap_or_default().to_string(),
        c["confidence"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn explain_knows_cupys_and_onnxruntimes_own_messages() {
    // Each as the real wheels printed it (docs/framework-cupy-onnxruntime.md).
    for (text, slug) in [
        (
            "ImportError: Failure finding \"libcublasLt.so.13 or libcublasLt.so.12\": No such file: \
             libcublasLt.so.13 or libcublasLt.so.12, No such file: libcublasLt.so.13 or libcublasLt.so.12",
            "library-not-found",
        ),
        (
            "RuntimeError: CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared object \
             file: No such file or directory",
            "library-not-found",
        ),
        ("Failed to import CuPy.", "library-not-found"),
        (
            "[E:onnxruntime:Default, provider_bridge_ort.cc:2458 operator()] FAIL : Failed to load library \
             /venv/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime_providers_cuda.so with error: \
             libcublasLt.so.13: cannot open shared object file: No such file or directory",
            "library-not-found",
        ),
        (
            "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:1295 CreateExecutionProviderFactoryInstance] Failed \
             to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 13.*. Please install all dependencies as \
             mentioned in the GPU requirements page",
            "framework-cpu-fallback",
        ),
    ] {
        assert_eq!(explained(text).0, slug, "{text}");
    }
    // The provider's message with its path: the phrase matches, so the cause is named, not guessed.
    let full = "Failed to load library /x/onnxruntime/capi/libonnxruntime_providers_cuda.so with error: \
                libcurand.so.10: cannot open shared object file: No such file or directory";
    assert_eq!(
        explained(full),
        ("library-not-found".to_string(), "high".to_string())
    );
}

/// An earlier import that loads the CUDA 13 wheels of the site by path, as `import torch` does with its own.
struct Preloader;

impl Framework for Preloader {
    fn module(&self) -> &'static str {
        "preloader"
    }
    fn distributions(&self) -> &'static [&'static str] {
        &["preloader"]
    }
    fn models(&self) -> &'static [Range] {
        &[Range {
            from: "1",
            until: None,
            about: "loads nvidia/cu13/lib's libraries by path",
        }]
    }
    fn import(&self, ctx: &Ctx, _m: &Selected, p: &mut dyn Process) -> Step {
        let site = ctx.python.dist("preloader").unwrap().site.clone();
        for s in [
            "libcublasLt.so.13",
            "libcublas.so.13",
            "libcurand.so.10",
            "libcudart.so.13",
        ] {
            p.load_path("preloader", &site.join("nvidia/cu13/lib").join(s), "test", false)
                .unwrap();
        }
        Step {
            outcome: Outcome::Gpu,
            notes: Vec::new(),
        }
    }
    fn first_use(&self, _ctx: &Ctx, _m: &Selected, _p: &mut dyn Process) -> Step {
        Step {
            outcome: Outcome::Gpu,
            notes: Vec::new(),
        }
    }
    fn checks(&self, _ctx: &Ctx, _m: &Selected, _p: &dyn Process) -> Vec<cudadiag::findings::Finding> {
        Vec::new()
    }
}

#[test]
fn onnxruntime_after_an_import_that_loaded_its_libraries_uses_the_gpu_and_before_it_does_not() {
    let m = Machine::new(true);
    ort(&m);
    cuda13(&m, &[]);
    m.dist("preloader", "1.0", &[], &[]);
    let r = run(&m, &[], &[&Preloader, &WITHOUT]);
    assert_eq!(message(&r.steps[1].1), "gpu");
    let r = run(&m, &[], &[&WITHOUT, &Preloader]);
    assert!(message(&r.steps[0].1).starts_with("cpu: "));
}

#[test]
fn an_onnxruntime_older_than_every_model_is_judged_with_the_nearest_and_says_so() {
    let m = Machine::new(true);
    ort(&m);
    let info = m.site().join(format!("onnxruntime_gpu-{ORT}.dist-info"));
    let meta = info.join("METADATA");
    let text = std::fs::read_to_string(&meta).unwrap().replace(ORT, "1.18.1");
    std::fs::write(&meta, text).unwrap();
    cuda13(&m, &[]);
    let r = run(&m, &[], &[&WITHOUT]);
    let note = r.selected[0].nearest.as_deref().unwrap();
    assert!(
        note.contains("onnxruntime 1.18.1 is older") && note.contains("1.19 up to 1.21"),
        "{note}"
    );
}
