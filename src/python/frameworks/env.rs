//! The Python environment as facts: which interpreter, its `sys.path` (`python::syspath`), and every
//! distribution installed on that path with its version, its `RECORD` and its `Requires-Dist`, each file read
//! when a model first asks for it. Read through the root, never run.

use super::{Dist, Metadata, PyEnv, RecordFiles};
use crate::python::syspath::{self, Flags, Main, Request, SysPathError, Target};
use crate::system::{Env, Root};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of `RECORD`s read at most for one environment (torch 2.15's is 1.3 MB): past it, distributions are
/// listed without their files.
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// The interpreter a question is about, and why that one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Chosen {
    /// The interpreter or environment.
    #[serde(skip)]
    pub target: Target,
    /// Its path as given or found (`/opt/venv`, `python3`).
    pub path: PathBuf,
    /// Why it (`--python`, `--venv`, `VIRTUAL_ENV`, `CONDA_PREFIX`, `python3 on PATH`).
    pub because: String,
}

/// The interpreter: `--python PATH`, else `--venv DIR`, else the active environment (`VIRTUAL_ENV`, then
/// `CONDA_PREFIX`), else `python3` on `PATH`, each inside the root.
pub fn choose(env: &Env, python: Option<&Path>, dir: Option<&Path>) -> Chosen {
    let chosen = |target: Target, path: &Path, because: &str| Chosen {
        target,
        path: path.to_path_buf(),
        because: because.to_string(),
    };
    if let Some(p) = python {
        return chosen(Target::Interpreter(p.to_path_buf()), p, "--python");
    }
    if let Some(d) = dir {
        return chosen(Target::Environment(d.to_path_buf()), d, "--venv");
    }
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = env.get(var).filter(|v| v.starts_with('/')) {
            return chosen(Target::Environment(PathBuf::from(v)), Path::new(v), var);
        }
    }
    chosen(
        Target::Interpreter(PathBuf::from("python3")),
        Path::new("python3"),
        "python3 on PATH",
    )
}

/// The request `python -c` makes for `chosen` in `env`, started in `PWD` (else `/`).
pub fn request(env: &Env, chosen: &Chosen) -> Request {
    Request {
        target: chosen.target.clone(),
        main: Main::Command,
        flags: Flags::default(),
        cwd: PathBuf::from(env.get("PWD").filter(|p| p.starts_with('/')).unwrap_or("/")),
        uid: None,
    }
}

/// The environment of `req`: its `sys.path`, then the distributions of each of its directories.
pub fn collect(root: &Root, env: &Env, req: &Request) -> Result<PyEnv, SysPathError> {
    collect_within(root, env, req, MAX_RECORD_BYTES)
}

/// [`collect`], the distributions of `site` listed while `sys.path` is computed: a caller that knows the
/// environment's `site-packages` (the directory of the file it judges) does not wait for one and then the
/// other (a data-science venv's lists hundreds of entries). They are used only if `sys.path` holds `site`
/// spelled so.
pub fn collect_expecting(root: &Root, env: &Env, req: &Request, site: &Path) -> Result<PyEnv, SysPathError> {
    collect_with(root, env, req, MAX_RECORD_BYTES, Some(site))
}

/// [`collect`], reading at most `record_bytes` of `RECORD`s (0 lists the distributions without their files).
/// A `RECORD` is read only when a model asks for the distribution's files.
pub fn collect_within(
    root: &Root,
    env: &Env,
    req: &Request,
    record_bytes: u64,
) -> Result<PyEnv, SysPathError> {
    let site = site_of(root, env, req);
    collect_with(root, env, req, record_bytes, site.as_deref())
}

/// The `site-packages` an environment's `sys.path` most likely holds, to read while `sys.path` is computed
/// ([`collect_expecting`]): `PREFIX/lib/pythonX.Y/site-packages` when there is exactly one, for an interpreter
/// that `sys.path`'s model finds as `PREFIX/bin/python…` (an environment directory's, a path given, `python3` on
/// `PATH`). Without an interpreter (a `VIRTUAL_ENV` left behind) `sys.path` fails at once: nothing is read
/// beside it. A wrong guess costs only the reads.
fn site_of(root: &Root, env: &Env, req: &Request) -> Option<PathBuf> {
    let exe = syspath::interpreter(root, env, req).ok()?;
    let prefix = exe
        .parent()
        .filter(|bin| bin.file_name().is_some_and(|n| n == "bin"))?
        .parent()?;
    let lib = prefix.join("lib");
    let python = |n: &std::ffi::OsStr| n.as_encoded_bytes().starts_with(b"python");
    let mut sites = root
        .read_dir_names_within(&lib, 8, python)
        .ok()?
        .into_iter()
        .map(|n| lib.join(n).join("site-packages"))
        .filter(|site| root.is_dir(site));
    let site = sites.next()?;
    sites.next().is_none().then_some(site)
}

/// [`collect_within`], the distributions of `early` listed beside `sys.path` ([`collect_expecting`]).
fn collect_with(
    root: &Root,
    env: &Env,
    req: &Request,
    record_bytes: u64,
    early: Option<&Path>,
) -> Result<PyEnv, SysPathError> {
    let budget = Arc::new(AtomicU64::new(record_bytes));
    let (syspath, mut early) = std::thread::scope(|s| {
        let early = early.map(|site| {
            let budget = &budget;
            let read = s.spawn(move || {
                let infos: Vec<_> = crate::python::dist_info::dist_infos(root, site)
                    .into_iter()
                    .map(|info| (site.to_path_buf(), info))
                    .collect();
                dists(root, &infos, budget)
            });
            (site, read)
        });
        let syspath = syspath::compute(root, env, req);
        (
            syspath,
            early.map(|(site, read)| (site, crate::parallel::join(read))),
        )
    });
    let mut py = PyEnv::new(syspath?, Vec::new());
    let dirs: Vec<PathBuf> = py.dirs().map(Path::to_path_buf).collect();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut infos: Vec<(PathBuf, PathBuf)> = Vec::new();
    // Each directory's distributions, in sys.path order: so many of `infos`, or (`None`) the early ones.
    let mut order: Vec<Option<usize>> = Vec::new();
    for dir in dirs {
        // One directory listed twice on sys.path (a `.pth` naming its own site) holds the same distributions.
        let real = root.resolve(&dir).unwrap_or_else(|_| dir.clone());
        if seen.contains(&real) {
            continue;
        }
        seen.push(real);
        if early.as_ref().is_some_and(|(site, _)| *site == dir) {
            order.push(None);
            continue;
        }
        let before = infos.len();
        for info in crate::python::dist_info::dist_infos(root, &dir) {
            infos.push((dir.clone(), info));
        }
        order.push(Some(infos.len() - before));
    }
    let mut read = dists(root, &infos, &budget).into_iter();
    for part in order {
        match part {
            Some(n) => py.listed.extend(read.by_ref().take(n)),
            None => py.listed.extend(early.take().into_iter().flat_map(|(_, d)| d)),
        }
    }
    Ok(py)
}

/// The distributions of `infos` (each `.dist-info` with the directory it is in), in order, their `METADATA`
/// and `RECORD` read when a model asks.
fn dists(root: &Root, infos: &[(PathBuf, PathBuf)], budget: &Arc<AtomicU64>) -> Vec<Dist> {
    infos
        .iter()
        .map(|(site, info)| dist(root, site, info, budget))
        .collect()
}

/// One `.dist-info`, named by its directory (`nvidia_cudnn_cu13-9.19.0.56.dist-info`: `nvidia-cudnn-cu13`).
fn dist(root: &Root, site: &Path, info: &Path, budget: &Arc<AtomicU64>) -> Dist {
    // `doctor`, which asks for no files, reads no `RECORD`; others read one when a model asks for it.
    let files = if budget.load(Ordering::Relaxed) == 0 {
        RecordFiles::known(Vec::new())
    } else {
        RecordFiles::lazy(root.clone(), info.join("RECORD"), budget.clone())
    };
    Dist {
        key: crate::python::dist_info::key_of(info),
        site: site.to_path_buf(),
        info: info.to_path_buf(),
        files,
        metadata: Metadata::lazy(root.clone(), info.join("METADATA")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A venv at `/venv` under `dir`, of a Python 3.11 at `/usr`.
    fn venv(dir: &Path) {
        use crate::system::put;
        put(dir, "/usr/bin/python3.11", b"");
        put(dir, "/usr/lib/python3.11/os.py", b"");
        std::fs::create_dir_all(dir.join("usr/lib/python3.11/lib-dynload")).unwrap();
        put(dir, "/venv/pyvenv.cfg", b"home = /usr/bin\nversion = 3.11.7\n");
        std::fs::create_dir_all(dir.join("venv/bin")).unwrap();
        std::os::unix::fs::symlink("/usr/bin/python3.11", dir.join("venv/bin/python3")).unwrap();
    }

    /// An environment is read with a `site-packages` expected (its distributions read while `sys.path` is
    /// computed: a file's own, an environment's): the same distributions in the same order as without, whether
    /// `sys.path` holds that directory spelled so, under another spelling (a link), or not at all.
    #[test]
    fn an_expected_site_changes_nothing_of_the_environment_read() {
        use crate::system::put;
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        venv(dir);
        let site = "/venv/lib/python3.11/site-packages";
        for (at, name) in [
            (site, "torch"),
            (site, "numpy"),
            ("/extra", "jax"),
            ("/extra", "numpy"),
        ] {
            let metadata = format!("Name: {name}\nVersion: 1.0\nRequires-Dist: filelock\n\nText.\n");
            put(
                dir,
                &format!("{at}/{name}-1.0.dist-info/METADATA"),
                metadata.as_bytes(),
            );
        }
        put(dir, &format!("{site}/extra.pth"), b"/extra\n");
        std::os::unix::fs::symlink(site, dir.join("spelled")).unwrap();
        let root = Root::at(dir).remembering();
        let mut env = Env::empty();
        env.set("VIRTUAL_ENV", "/venv");
        let req = request(&env, &choose(&env, None, None));
        let listed = |py: Result<PyEnv, SysPathError>| {
            py.unwrap()
                .dists()
                .map(|d| format!("{} {} {}", d.name(), d.site.display(), d.requires().join(",")))
                .collect::<Vec<_>>()
        };
        let read = |early: Option<&str>| {
            listed(collect_with(
                &root,
                &env,
                &req,
                MAX_RECORD_BYTES,
                early.map(Path::new),
            ))
        };
        let want = read(None);
        assert_eq!(
            want,
            [
                "numpy /venv/lib/python3.11/site-packages filelock",
                "torch /venv/lib/python3.11/site-packages filelock",
                "jax /extra filelock",
                "numpy /extra filelock",
            ]
        );
        for early in [site, "/spelled", "/extra", "/elsewhere"] {
            assert_eq!(read(Some(early)), want, "{early}");
        }
        // `collect` expects the environment's own site-packages.
        assert_eq!(site_of(&root, &env, &req).as_deref(), Some(Path::new(site)));
        assert_eq!(listed(collect(&root, &env, &req)), want);
        // No interpreter, nothing expected.
        env.set("VIRTUAL_ENV", "/usr/lib");
        assert_eq!(
            site_of(&root, &env, &request(&env, &choose(&env, None, None))),
            None
        );
    }

    /// A distribution's `METADATA` is read when it is asked for: by name, only that one's. A `.dist-info`
    /// without readable `METADATA`, or whose headers lack a version, is no distribution, but is still counted
    /// among the directories listed. The key is the directory's name, as `importlib.metadata` finds it.
    #[test]
    fn only_the_metadata_of_the_distributions_asked_for_is_read() {
        use crate::system::put;
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        venv(dir);
        let site = "/venv/lib/python3.11/site-packages";
        for (info, metadata) in [
            (
                "Nvidia_CUDNN_cu13-9.19.0.56",
                "Name: nvidia-cudnn-cu13\nVersion: 9.19.0.56\n",
            ),
            ("numpy-2.1.0", "Name: numpy\nVersion: 2.1.0\n"),
            (
                "torch-2.11.0",
                "Name: torch\nVersion: 2.11.0+cu130\nRequires-Dist: filelock\n",
            ),
            ("broken-1.0", "Name: broken\n"),
        ] {
            put(
                dir,
                &format!("{site}/{info}.dist-info/METADATA"),
                metadata.as_bytes(),
            );
        }
        std::fs::create_dir_all(dir.join("venv/lib/python3.11/site-packages/unread-1.0.dist-info")).unwrap();
        let root = Root::at(dir);
        let mut env = Env::empty();
        env.set("VIRTUAL_ENV", "/venv");
        let py = collect(&root, &env, &request(&env, &choose(&env, None, None))).unwrap();
        let read = |py: &PyEnv| -> Vec<String> {
            py.listed
                .iter()
                .filter(|d| d.metadata.read.get().is_some())
                .map(|d| d.key.clone())
                .collect()
        };
        assert_eq!(read(&py), Vec::<String>::new(), "nothing read while listing");
        let torch = py.dist("Torch").unwrap();
        assert_eq!(
            (torch.name(), torch.version(), torch.release(), torch.requires()),
            (
                "torch",
                "2.11.0+cu130",
                Some([2, 11, 0].as_slice()),
                ["filelock".to_string()].as_slice()
            )
        );
        assert_eq!(py.dist("nvidia_cudnn.cu13").unwrap().version(), "9.19.0.56");
        assert_eq!(read(&py), ["nvidia-cudnn-cu13", "torch"]);
        assert!(py.dist("broken").is_none() && py.dist("unread").is_none() && py.dist("jax").is_none());
        assert_eq!(py.listed(), 5);
        let all: Vec<&str> = py.dists().map(Dist::name).collect();
        assert_eq!(all, ["nvidia-cudnn-cu13", "numpy", "torch"]);
    }

    #[test]
    fn the_interpreter_is_the_one_named_else_the_active_environment_else_python3() {
        let mut env = Env::empty();
        assert_eq!(choose(&env, None, None).because, "python3 on PATH");
        env.set("CONDA_PREFIX", "/opt/conda");
        env.set("VIRTUAL_ENV", "/v");
        let c = choose(&env, None, None);
        assert_eq!(
            (c.because.as_str(), c.target),
            ("VIRTUAL_ENV", Target::Environment("/v".into()))
        );
        env.remove("VIRTUAL_ENV");
        assert_eq!(choose(&env, None, None).because, "CONDA_PREFIX");
        assert_eq!(choose(&env, None, Some(Path::new("/e"))).because, "--venv");
        let c = choose(
            &env,
            Some(Path::new("/usr/bin/python3.12")),
            Some(Path::new("/e")),
        );
        assert_eq!(c.target, Target::Interpreter("/usr/bin/python3.12".into()));
    }
}
