//! Test support for the framework models: a small synthetic Python environment in a temporary directory and
//! a [`Process`] that resolves loads from file existence alone (each file's DT_RPATH given by the test), so a
//! model's own logic is tested apart from the ELF loader emulation.

use super::{Ctx, Dist, Gpu, LoadError, Loaded, LoadedHow, Process, PyEnv, When};
use crate::facts::loader::How;
use crate::python::syspath::{Entry, SysPath, UserSite, Why};
use crate::system::{Env, Root};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A process whose loads succeed when the file exists under the root.
pub struct FakeProcess {
    root: Root,
    /// DT_RPATH of a file, by file name (`$ORIGIN` allowed).
    pub rpaths: HashMap<String, Vec<String>>,
    /// `LD_LIBRARY_PATH` directories, searched after DT_RPATH (and before DT_RUNPATH).
    pub ld_library_path: Vec<PathBuf>,
    /// DT_RUNPATH of a file, by file name (`$ORIGIN` allowed).
    pub runpaths: HashMap<String, Vec<String>>,
    /// Directories standing for `ld.so.cache`.
    pub cache: Vec<PathBuf>,
    /// DT_NEEDED of an extension module, by file name: paths loaded with it.
    pub needed: HashMap<String, Vec<PathBuf>>,
    /// The version a file's real name would give (`libcudnn.so.9.1.0`), by path.
    pub versions: HashMap<PathBuf, String>,
    /// The file the process is modelled for: [`Process::settled`] once it is loaded.
    pub until: Option<PathBuf>,
    loaded: Vec<Loaded>,
}

impl FakeProcess {
    pub fn new(root: &Root) -> FakeProcess {
        FakeProcess {
            root: root.clone(),
            rpaths: HashMap::new(),
            ld_library_path: vec![],
            runpaths: HashMap::new(),
            cache: vec![],
            needed: HashMap::new(),
            versions: HashMap::new(),
            until: None,
            loaded: vec![],
        }
    }

    fn push(&mut self, path: &Path, how: LoadedHow, by: &str, when: When) -> usize {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        self.loaded.push(Loaded {
            path: path.display().to_string(),
            realpath: lexical(path).display().to_string(),
            soname: name,
            version: self.versions.get(path).cloned(),
            how,
            import: by.to_string(),
            when,
        });
        self.loaded.len() - 1
    }

    fn missing(name: &str, by: &str) -> LoadError {
        LoadError {
            name: name.to_string(),
            requester: by.to_string(),
            message: format!("{name}: cannot open shared object file: No such file or directory"),
            library: None,
        }
    }

    /// The paths loaded, for assertions.
    pub fn paths(&self) -> Vec<String> {
        self.loaded.iter().map(|l| l.path.clone()).collect()
    }
}

impl Process for FakeProcess {
    fn loaded(&self) -> &[Loaded] {
        &self.loaded
    }

    fn settled(&self) -> bool {
        self.until.as_ref().is_some_and(|u| {
            let real = lexical(u).display().to_string();
            self.loaded.iter().any(|l| l.realpath == real)
        })
    }

    fn load_path(&mut self, by: &str, path: &Path, search: &str, global: bool) -> Result<usize, LoadError> {
        // The loader knows a file it has mapped by its device and inode, whatever the path.
        let real = lexical(path).display().to_string();
        if let Some(i) = self.loaded.iter().position(|l| l.realpath == real) {
            return Ok(i);
        }
        if !self.root.exists(path) {
            return Err(FakeProcess::missing(&path.display().to_string(), by));
        }
        let how = LoadedHow::Preloaded {
            by: by.to_string(),
            search: search.to_string(),
            global,
        };
        Ok(self.push(path, how, by, When::FirstUse))
    }

    fn load_extension(&mut self, by: &str, module: &str, path: &Path) -> Result<usize, LoadError> {
        if !self.root.exists(path) {
            return Err(FakeProcess::missing(&path.display().to_string(), by));
        }
        let how = LoadedHow::Extension {
            module: module.to_string(),
        };
        let index = self.push(path, how, by, When::Import);
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for dep in self.needed.get(&file).cloned().unwrap_or_default() {
            let how = LoadedHow::Needed {
                needed_by: path.display().to_string(),
                found: How::Runpath,
                via: None,
            };
            self.push(&dep, how, by, When::Import);
        }
        Ok(index)
    }

    fn dlopen(&mut self, by: &str, caller: usize, name: &str, when: When) -> Result<usize, LoadError> {
        if let Some(i) = self.find(name) {
            return Ok(i);
        }
        let caller_path = PathBuf::from(&self.loaded[caller].path);
        let origin = caller_path
            .parent()
            .unwrap_or(Path::new("/"))
            .display()
            .to_string();
        let file = caller_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let expand = |dirs: Option<&Vec<String>>| -> Vec<PathBuf> {
            dirs.map(|d| {
                d.iter()
                    .map(|s| PathBuf::from(s.replace("$ORIGIN", &origin)))
                    .collect()
            })
            .unwrap_or_default()
        };
        let runpath = expand(self.runpaths.get(&file));
        let rpath = if runpath.is_empty() {
            expand(self.rpaths.get(&file))
        } else {
            vec![]
        };
        let order = [
            (rpath, How::Rpath),
            (self.ld_library_path.clone(), How::LdLibraryPath),
            (runpath, How::Runpath),
            (self.cache.clone(), How::LdSoCache),
        ];
        for (dirs, how) in order {
            for d in dirs {
                let p = d.join(name);
                if self.root.exists(&p) {
                    let real = lexical(&p).display().to_string();
                    if let Some(i) = self.loaded.iter().position(|l| l.realpath == real) {
                        return Ok(i);
                    }
                    let found = LoadedHow::Opened {
                        name: name.to_string(),
                        caller: caller_path.display().to_string(),
                        found: how,
                    };
                    return Ok(self.push(&p, found, by, when));
                }
            }
        }
        Err(FakeProcess::missing(name, by))
    }

    fn runtime_loads(&mut self, _by: &str) {}
}

/// `a/b/../c` → `a/c`.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A synthetic environment: a venv's site-packages (and other `sys.path` entries) in a temporary root.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub entries: Vec<PathBuf>,
    pub dists: Vec<Dist>,
    pub env: Env,
    pub gpus: Vec<Gpu>,
}

impl TestEnv {
    /// An environment whose `sys.path` holds `site` (and later entries added with [`TestEnv::entry`]).
    pub fn new() -> TestEnv {
        let dir = tempfile::tempdir().expect("temporary directory");
        let site = dir.path().join("venv/lib/python3.12/site-packages");
        std::fs::create_dir_all(&site).expect("site");
        TestEnv {
            dir,
            entries: vec![site],
            dists: vec![],
            env: Env::empty(),
            gpus: vec![Gpu {
                label: "NVIDIA H200 (CC 9.0)".into(),
                cc: crate::matrix::Cc { major: 9, minor: 0 },
            }],
        }
    }

    /// The venv's site-packages.
    pub fn site(&self) -> PathBuf {
        self.entries[0].clone()
    }

    /// Adds a `sys.path` entry after the others (a `PYTHONPATH` or `.pth` directory).
    pub fn entry(&mut self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).expect("entry");
        self.entries.push(p.clone());
        p
    }

    /// Writes an empty file at `rel` under `site`.
    pub fn file(&self, site: &Path, rel: &str) {
        let p = site.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
        std::fs::write(&p, b"").expect("write");
    }

    /// Installs distribution `name` `version` in `site` with `files` (relative to `site`) and `requires`.
    pub fn install(&mut self, site: &Path, name: &str, version: &str, files: &[&str], requires: &[&str]) {
        for f in files {
            self.file(site, f);
        }
        self.dists.push(Dist {
            key: super::normalise(name),
            site: site.to_path_buf(),
            info: site.join(format!("{}-{version}.dist-info", name.replace('-', "_"))),
            files: super::RecordFiles::known(files.iter().map(|s| s.to_string()).collect()),
            metadata: super::Metadata::known(super::Meta::new(
                name,
                version,
                requires.iter().map(|s| s.to_string()).collect(),
            )),
        });
    }

    /// The Python environment as facts.
    pub fn python(&self) -> PyEnv {
        let entries = self
            .entries
            .iter()
            .map(|p| Entry {
                path: p.clone(),
                why: Why::StdlibZip,
            })
            .collect();
        PyEnv::new(
            SysPath {
                executable: self.dir.path().join("venv/bin/python"),
                version: None,
                prefix: self.dir.path().join("venv"),
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
                entries,
                not_modelled: vec![],
            },
            self.dists.clone(),
        )
    }

    /// Runs `f` with a context over this environment (the root is `/`: the test's paths are absolute).
    pub fn with_ctx<R>(&self, f: impl FnOnce(&Ctx, &Root) -> R) -> R {
        let root = Root::host();
        let python = self.python();
        let matrix = crate::matrix::Matrix::bundled().expect("the bundled matrix");
        let ctx = Ctx {
            root: &root,
            env: &self.env,
            python: &python,
            gpus: &self.gpus,
            driver: None,
            matrix: &matrix,
            provides: &|_| false,
        };
        f(&ctx, &root)
    }
}

/// Gives `d` the version `version` (its name and requirements kept), as if another release were installed.
pub fn set_version(d: &mut Dist, version: &str) {
    let (name, requires) = (d.name().to_string(), d.requires().to_vec());
    d.metadata = super::Metadata::known(super::Meta::new(&name, version, requires));
}
