//! cuda-pathfinder's order, step by step, in a process that loads files by path and searches `LD_LIBRARY_PATH`
//! then `/usr/lib` for a `dlopen`: each case is what cuda-pathfinder 1.9.1's code does (and what was observed on
//! real wheels where the case was tried: `docs/framework-cupy-onnxruntime.md`).

use super::*;
use crate::facts::loader::How;
use crate::python::frameworks::{Loaded, LoadedHow, PyEnv};
use crate::python::syspath::{self, Flags, Main, Target};
use crate::system::{Env, Root, put};

/// A process that loads files by path and searches `LD_LIBRARY_PATH` then `/usr/lib` for a `dlopen`: just
/// enough of the loader for pathfinder's own order to show.
struct Fake<'r> {
    root: &'r Root,
    ld_library_path: Vec<PathBuf>,
    loaded: Vec<Loaded>,
}

impl Fake<'_> {
    fn push(&mut self, path: &Path, how: LoadedHow, by: &str) -> usize {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        self.loaded.push(Loaded {
            path: path.to_string_lossy().into_owned(),
            realpath: path.to_string_lossy().into_owned(),
            soname: name,
            version: None,
            how,
            import: by.to_string(),
            when: When::Import,
        });
        self.loaded.len() - 1
    }
}

impl Process for Fake<'_> {
    fn loaded(&self) -> &[Loaded] {
        &self.loaded
    }
    fn runtime_loads(&mut self, _by: &str) {}
    fn load_path(&mut self, by: &str, path: &Path, search: &str, global: bool) -> Result<usize, LoadError> {
        if let Some(i) = self.find(&path.to_string_lossy()) {
            return Ok(i);
        }
        if !self.root.exists(path) {
            return Err(LoadError {
                name: path.display().to_string(),
                requester: by.to_string(),
                message: "cannot open shared object file".to_string(),
                library: None,
            });
        }
        let how = LoadedHow::Preloaded {
            by: by.to_string(),
            search: search.to_string(),
            global,
        };
        Ok(self.push(path, how, by))
    }
    fn load_extension(&mut self, by: &str, module: &str, path: &Path) -> Result<usize, LoadError> {
        let how = LoadedHow::Extension {
            module: module.to_string(),
        };
        Ok(self.push(path, how, by))
    }
    fn dlopen(&mut self, by: &str, caller: usize, name: &str, _when: When) -> Result<usize, LoadError> {
        if let Some(i) = self.find(name) {
            return Ok(i);
        }
        let dirs = self
            .ld_library_path
            .iter()
            .cloned()
            .chain([PathBuf::from("/usr/lib")]);
        for (n, dir) in dirs.enumerate() {
            let path = dir.join(name);
            if self.root.exists(&path) {
                let found = if n < self.ld_library_path.len() {
                    How::LdLibraryPath
                } else {
                    How::DefaultPath
                };
                let how = LoadedHow::Opened {
                    name: name.to_string(),
                    caller: self.loaded[caller].path.clone(),
                    found,
                };
                return Ok(self.push(&path, how, by));
            }
        }
        Err(LoadError {
            name: name.to_string(),
            requester: by.to_string(),
            message: format!("{name}: cannot open shared object file: No such file or directory"),
            library: None,
        })
    }
}

const VENV: &str = "/venv/lib/python3.12/site-packages";
const USER: &str = "/home/u/.local/lib/python3.12/site-packages";
const SYSTEM: &str = "/usr/lib/python3.12/site-packages";

/// A system Python 3.12 at `/usr`, a venv on it with the system site-packages, a user site.
fn machine(r: &Path) {
    put(r, "/usr/bin/python3.12", b"\x7fELF");
    std::os::unix::fs::symlink("python3.12", r.join("usr/bin/python3")).unwrap();
    put(r, "/usr/lib/python3.12/os.py", b"");
    put(r, "/usr/lib/python3.12/site.py", b"# upstream\n");
    std::fs::create_dir_all(r.join("usr/lib/python3.12/lib-dynload")).unwrap();
    std::fs::create_dir_all(r.join(SYSTEM.trim_start_matches('/'))).unwrap();
    std::fs::create_dir_all(r.join(USER.trim_start_matches('/'))).unwrap();
    put(
        r,
        "/venv/pyvenv.cfg",
        b"home = /usr/bin\ninclude-system-site-packages = true\nversion = 3.12.3\n",
    );
    std::fs::create_dir_all(r.join("venv/bin")).unwrap();
    std::os::unix::fs::symlink("/usr/bin/python3.12", r.join("venv/bin/python3")).ok();
    std::fs::create_dir_all(r.join(VENV.trim_start_matches('/'))).unwrap();
    put(r, "/work/cupy_backends/nvrtc.so", b"\x7fELF");
}

/// Runs `load(name)` in a fresh process of the machine at `r` with `vars`: the result and the process's
/// objects (paths).
fn run(r: &Path, vars: &[(&str, &str)], name: &str) -> (Result<Got, Failure>, Vec<String>) {
    run_after(r, vars, &[], name)
}

/// [`run`] in a process that has already loaded the files `before` (as an earlier import would).
fn run_after(
    r: &Path,
    vars: &[(&str, &str)],
    before: &[&str],
    name: &str,
) -> (Result<Got, Failure>, Vec<String>) {
    let root = Root::at(r);
    let mut env = Env::empty();
    env.set("HOME", "/home/u");
    for (k, v) in vars {
        env.set(k, v);
    }
    let req = syspath::Request {
        target: Target::Interpreter(PathBuf::from("/venv/bin/python3")),
        main: Main::Command,
        flags: Flags::default(),
        cwd: PathBuf::from("/work"),
        uid: None,
    };
    let sp = syspath::compute(&root, &env, &req).unwrap();
    let matrix = crate::matrix::Matrix::bundled().unwrap();
    let python = PyEnv::new(sp, Vec::new());
    let ctx = Ctx {
        root: &root,
        env: &env,
        python: &python,
        gpus: &[],
        driver: None,
        matrix: &matrix,
        provides: &|_| false,
    };
    let places = Places::of(&ctx);
    let mut p = Fake {
        root: &root,
        ld_library_path: env
            .get("LD_LIBRARY_PATH")
            .map(|v| v.split(':').map(PathBuf::from).collect())
            .unwrap_or_default(),
        loaded: Vec::new(),
    };
    let caller = p.load_extension(
        "cupy",
        "cupy_backends.nvrtc",
        Path::new("/work/cupy_backends/nvrtc.so"),
    );
    for b in before {
        p.load_path("torch", Path::new(b), "earlier", false).unwrap();
    }
    let req = Request {
        ctx: &ctx,
        places: &places,
        by: "cupy",
        when: When::FirstUse,
        caller: caller.ok(),
    };
    let got = load(&req, &mut p, name);
    let paths = p.loaded.iter().skip(1).map(|l| l.path.clone()).collect();
    (got, paths)
}

#[test]
fn the_site_directories_are_the_venv_the_user_site_then_the_system_not_pythonpath() {
    let t = tempfile::tempdir().unwrap();
    machine(t.path());
    std::fs::create_dir_all(t.path().join("extra")).unwrap();
    let root = Root::at(t.path());
    let mut env = Env::empty();
    env.set("HOME", "/home/u");
    env.set("PYTHONPATH", "/extra");
    let req = syspath::Request {
        target: Target::Interpreter(PathBuf::from("/venv/bin/python3")),
        main: Main::Command,
        flags: Flags::default(),
        cwd: PathBuf::from("/work"),
        uid: None,
    };
    let matrix = crate::matrix::Matrix::bundled().unwrap();
    let python = PyEnv::new(syspath::compute(&root, &env, &req).unwrap(), Vec::new());
    let ctx = Ctx {
        root: &root,
        env: &env,
        python: &python,
        gpus: &[],
        driver: None,
        matrix: &matrix,
        provides: &|_| false,
    };
    let site: Vec<String> = Places::of(&ctx)
        .site
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(site, [VENV, USER, SYSTEM]);
}

#[test]
fn a_cuda_13_wheel_in_the_user_site_wins_over_the_cuda_12_wheel_of_the_venv() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    machine(r);
    put(r, &format!("{VENV}/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"), b"x");
    put(r, &format!("{USER}/nvidia/cu13/lib/libnvrtc.so.13"), b"x");
    let (got, paths) = run(r, &[], "nvrtc");
    let got = got.unwrap();
    assert_eq!(
        got.via,
        Via::SitePackages(PathBuf::from(format!("{USER}/nvidia/cu13/lib")))
    );
    assert_eq!(paths, [format!("{USER}/nvidia/cu13/lib/libnvrtc.so.13")]);
}

#[test]
fn a_wheel_found_is_loaded_by_path_and_ld_library_path_does_not_shadow_it() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    machine(r);
    put(r, &format!("{VENV}/nvidia/cublas/lib/libcublasLt.so.12"), b"x");
    put(r, &format!("{VENV}/nvidia/cublas/lib/libcublas.so.12"), b"x");
    put(r, "/old/libcublas.so.12", b"x");
    put(r, "/old/libcublasLt.so.12", b"x");
    let (got, paths) = run(r, &[("LD_LIBRARY_PATH", "/old")], "cublas");
    assert!(matches!(got.unwrap().via, Via::SitePackages(_)));
    // cuBLASLt, the dependency, first.
    assert_eq!(
        paths,
        [
            format!("{VENV}/nvidia/cublas/lib/libcublasLt.so.12"),
            format!("{VENV}/nvidia/cublas/lib/libcublas.so.12"),
        ]
    );
}

#[test]
fn without_a_wheel_the_system_search_comes_before_cuda_home() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    machine(r);
    put(r, "/old/libnvrtc.so.12", b"x");
    put(r, "/usr/local/cuda/lib64/libnvrtc.so.13", b"x");
    let (got, paths) = run(
        r,
        &[("LD_LIBRARY_PATH", "/old"), ("CUDA_HOME", "/usr/local/cuda")],
        "nvrtc",
    );
    assert_eq!(got.unwrap().via, Via::SystemSearch);
    assert_eq!(paths, ["/old/libnvrtc.so.12"]);
    let (got, paths) = run(r, &[("CUDA_HOME", "/usr/local/cuda")], "nvrtc");
    assert_eq!(got.unwrap().via, Via::Variable("CUDA_HOME"));
    assert_eq!(paths, ["/usr/local/cuda/lib64/libnvrtc.so.13"]);
    // CUDA_PATH, when set, is the one read.
    let (got, _) = run(
        r,
        &[("CUDA_PATH", "/nowhere"), ("CUDA_HOME", "/usr/local/cuda")],
        "nvrtc",
    );
    assert!(matches!(got, Err(Failure::NotFound { .. })));
}

#[test]
fn conda_comes_before_the_system_search() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    machine(r);
    put(r, "/old/libnvrtc.so.12", b"x");
    put(r, "/conda/lib/libnvrtc.so.12", b"x");
    let (got, paths) = run(
        r,
        &[("LD_LIBRARY_PATH", "/old"), ("CONDA_PREFIX", "/conda")],
        "nvrtc",
    );
    assert_eq!(got.unwrap().via, Via::Conda);
    assert_eq!(paths, ["/conda/lib/libnvrtc.so.12"]);
}

#[test]
fn a_library_found_nowhere_raises_pathfinders_own_text() {
    let t = tempfile::tempdir().unwrap();
    machine(t.path());
    let (got, paths) = run(t.path(), &[], "nvrtc");
    // As CuPy 14.2.0 with cuda-pathfinder 1.9.1 printed it in a venv without the NVRTC wheel.
    assert_eq!(
        got.unwrap_err().message(),
        "Failure finding \"libnvrtc.so.13 or libnvrtc.so.12\": No such file: libnvrtc.so.13 or libnvrtc.so.12, \
         No such file: libnvrtc.so.13 or libnvrtc.so.12"
    );
    assert!(paths.is_empty());
}

#[test]
fn cutensor_absent_still_maps_its_dependency_cublaslt() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    machine(r);
    put(r, &format!("{VENV}/nvidia/cublas/lib/libcublasLt.so.12"), b"x");
    let (got, paths) = run(r, &[], "cutensor");
    assert!(matches!(got, Err(Failure::NotFound { name: "cutensor", .. })));
    assert_eq!(paths, [format!("{VENV}/nvidia/cublas/lib/libcublasLt.so.12")]);
}

#[test]
fn a_copy_already_loaded_wins_over_the_file_found() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    machine(r);
    put(r, &format!("{VENV}/nvidia/cu13/lib/libnvrtc.so.13"), b"x");
    put(r, "/old/libnvrtc.so.13", b"x");
    let (got, paths) = run_after(r, &[], &["/old/libnvrtc.so.13"], "nvrtc");
    assert_eq!(got.unwrap().via, Via::AlreadyLoaded);
    assert_eq!(paths, ["/old/libnvrtc.so.13"]);
}
