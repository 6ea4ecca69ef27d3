//! [`crate::python::frameworks::Process`] over the loader's emulation of one process ([`crate::loader::process`]): every load a
//! framework model makes is a `dlopen` there, so its DT_NEEDED tree is resolved against every object already
//! loaded, and every object keeps how it came in.

use crate::facts::loader::{How, Role};
use crate::loader::process::{Failed, Image};
use crate::python::frameworks::{LoadError, Loaded, LoadedHow, When};
use std::path::Path;

/// The Python process: the loader's image and, per object (same index), how it came in.
pub struct PyProcess<'i, 's, 'a> {
    img: &'i mut Image<'s, 'a>,
    loaded: Vec<Loaded>,
    /// The import (or first use) being modelled, for the records of what it brings in.
    import: String,
    /// At import or at first use.
    when: When,
    /// Objects before this index have made their run-time loads already.
    scanned: usize,
    /// The real path of the file the process is modelled for ([`PyProcess::until`]).
    until: Option<String>,
}

impl<'i, 's, 'a> PyProcess<'i, 's, 'a> {
    /// The process as the interpreter started it: its own objects are [`LoadedHow::Start`] or DT_NEEDED.
    pub fn new(img: &'i mut Image<'s, 'a>) -> Self {
        let mut p = PyProcess {
            img,
            loaded: Vec::new(),
            import: "python".into(),
            when: When::Import,
            scanned: 0,
            until: None,
        };
        p.sync(None);
        p
    }

    /// The process is modelled for the file at real path `real`: it is
    /// [`crate::python::frameworks::Process::settled`] once that file is loaded.
    pub fn until(&mut self, real: &str) {
        self.until = Some(real.to_string());
    }

    /// What follows belongs to `import` (`torch`), at import or at first use.
    pub fn begin(&mut self, import: &str, when: When) {
        self.import = import.to_string();
        self.when = when;
    }

    /// The loader's image (every request, with its search trail).
    pub fn image(&self) -> &Image<'s, 'a> {
        self.img
    }

    /// Records the objects added since the last call: the first is `first`'s when given (the object the
    /// model's own load opened), the rest by the request that brought each in.
    fn sync(&mut self, first: Option<(usize, LoadedHow)>) {
        for i in self.loaded.len()..self.img.objects().len() {
            let o = &self.img.objects()[i];
            let how = match &first {
                Some((at, how)) if *at == i => how.clone(),
                _ if o.role != Role::Library => LoadedHow::Start,
                _ => self.brought_in(i),
            };
            self.loaded.push(Loaded {
                path: o.path.clone(),
                realpath: o.realpath.clone(),
                soname: o.soname.clone(),
                version: o.version.clone(),
                how,
                import: self.import.clone(),
                when: self.when,
            });
        }
    }

    /// How object `i` came in, by the request that mapped it.
    fn brought_in(&self, i: usize) -> LoadedHow {
        let Some(l) = self
            .img
            .libraries()
            .iter()
            .find(|l| l.object == Some(i) && l.how != How::AlreadyLoaded)
        else {
            return LoadedHow::Start;
        };
        if l.dlopen {
            LoadedHow::Opened {
                name: l.soname.clone(),
                caller: l.needed_by.clone(),
                found: l.how,
            }
        } else {
            LoadedHow::Needed {
                needed_by: l.needed_by.clone(),
                found: l.how,
                via: l.via.clone(),
            }
        }
    }

    fn open(
        &mut self,
        caller: usize,
        name: &str,
        reason: String,
        how: LoadedHow,
    ) -> Result<usize, LoadError> {
        let before = self.img.objects().len();
        match self.img.dlopen(caller, name, reason) {
            Ok(i) => {
                self.sync((i >= before).then_some((i, how)));
                self.constructors(before);
                Ok(i)
            }
            Err(Failed { message, library }) => Err(LoadError {
                name: name.to_string(),
                requester: self.import.clone(),
                message,
                library: Some(library),
            }),
        }
    }
}

impl PyProcess<'_, '_, '_> {
    /// The loads the constructors of the objects from `from` on make as they are loaded: cuBLASLt's opens the
    /// driver (`dlopen("libcuda.so.1")`; glibc's `LD_DEBUG=libs` of `import torch` 2.11 on an H200 shows
    /// `libcuda.so.1` searched and initialised inside `libcublasLt.so.13`'s initialiser, before cuBLAS's). A
    /// driver found nowhere is no error there: cuBLASLt tolerates it until it is used.
    fn constructors(&mut self, from: usize) {
        let lts: Vec<usize> = (from..self.img.objects().len())
            .filter(|&i| {
                self.img.objects()[i]
                    .soname
                    .as_deref()
                    .is_some_and(|s| s.starts_with("libcublasLt.so."))
            })
            .collect();
        for i in lts {
            let reason = "cuBLASLt's initialiser opens the driver".to_string();
            if self.img.dlopen(i, "libcuda.so.1", reason).is_ok() {
                self.sync(None);
            }
        }
    }
}

impl crate::python::frameworks::Process for PyProcess<'_, '_, '_> {
    fn loaded(&self) -> &[Loaded] {
        &self.loaded
    }

    fn settled(&self) -> bool {
        self.until
            .as_deref()
            .is_some_and(|real| self.loaded.iter().any(|l| l.realpath == real))
    }

    fn runtime_loads(&mut self, by: &str) {
        let (was, when) = (std::mem::replace(&mut self.import, by.to_string()), self.when);
        self.when = When::FirstUse;
        self.img.runtime_loads(self.scanned);
        self.scanned = self.img.objects().len();
        self.sync(None);
        (self.import, self.when) = (was, when);
    }

    fn load_path(&mut self, by: &str, path: &Path, search: &str, global: bool) -> Result<usize, LoadError> {
        let how = LoadedHow::Preloaded {
            by: by.to_string(),
            search: search.to_string(),
            global,
        };
        let reason = format!("{by} loads it by path (ctypes.CDLL): {search}");
        self.open(0, &path.to_string_lossy(), reason, how)
    }

    fn expect_paths(&mut self, paths: &[std::path::PathBuf]) {
        let paths: Vec<String> = paths.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        self.img.read_ahead(&paths);
    }

    fn load_extension(&mut self, by: &str, module: &str, path: &Path) -> Result<usize, LoadError> {
        let how = LoadedHow::Extension {
            module: module.to_string(),
        };
        let reason = format!("import {module} (for {by}) opens the extension module by path");
        self.open(0, &path.to_string_lossy(), reason, how)
    }

    fn dlopen(&mut self, by: &str, caller: usize, name: &str, when: When) -> Result<usize, LoadError> {
        let was = self.when;
        self.when = when;
        let caller_path = self
            .loaded
            .get(caller)
            .map(|l| l.path.clone())
            .unwrap_or_default();
        let how = LoadedHow::Opened {
            name: name.to_string(),
            caller: caller_path,
            found: How::NotFound,
        };
        let reason = format!("{by} opens it by name at run time");
        let before = self.loaded.len();
        let out = self.open(caller, name, reason, how);
        // The search's answer, now that it is known, for an object this call mapped.
        if let Ok(i) = out
            && i >= before
            && let Some(found) = self
                .img
                .libraries()
                .iter()
                .rev()
                .find(|l| l.object == Some(i))
                .map(|l| l.how)
            && let Some(LoadedHow::Opened { found: f, .. }) = self.loaded.get_mut(i).map(|l| &mut l.how)
        {
            *f = found;
        }
        self.when = was;
        out
    }
}
