//! One process that goes on loading after it starts, as an interpreter does: `dlopen` of a path
//! (`ctypes.CDLL`, Python's import of an extension module) or of a name, from an object already there, each
//! with its DT_NEEDED tree resolved against every object already loaded.
//!
//! glibc's `_dl_open` (`elf/dl-open.c`) maps the object and its dependencies with `_dl_map_object` and
//! `_dl_map_object_deps`, exactly as at start-up, so [`super::resolve`]'s walk serves: a name an object
//! already answers to is not searched again, whoever loaded that object, which is why the first copy of a
//! soname wins for the whole process. A `dlopen`'d object has no `l_loader` (`__RTLD_CALLMAP`): its own
//! dependencies do not inherit its caller's RPATH. When a dependency is missing, `_dl_open` fails and
//! `_dl_close_worker` unmaps every object that call added: [`Image::dlopen`] takes them out again.

use super::Files;
use super::resolve::State;
use crate::facts::loader::{Library, LoadedObject};
use crate::system::{Env, Root};
use std::path::Path;

/// The process while it runs: what the body of [`process`] drives.
pub struct Image<'s, 'a> {
    st: &'s mut State<'a>,
}

/// A `dlopen` that fails: `dlerror()`'s text, and the requests of that call (the failed ones with their
/// search trails), which are no longer in the process.
#[derive(Debug, Clone)]
pub struct Failed {
    /// `libcudnn.so.9: cannot open shared object file: No such file or directory`.
    pub message: String,
    /// The first request that failed.
    pub library: Box<Library>,
}

impl Image<'_, '_> {
    /// Every object, in load order (the program first).
    pub fn objects(&self) -> &[LoadedObject] {
        self.st.objects()
    }

    /// Every request so far, in order.
    pub fn libraries(&self) -> &[Library] {
        self.st.libraries()
    }

    /// Starts reading, on other threads, the files at the machine paths `paths`, about to be opened by path
    /// (a framework's preloads): see [`Files::read_ahead`]. What the opens find is the same without it.
    pub fn read_ahead(&mut self, paths: &[String]) {
        self.st.read_ahead_paths(paths);
    }

    /// `dlopen(name)` by object `caller` (`name` with a `/` is a path, expanded and opened as given), with its
    /// DT_NEEDED tree. The object's index, or ld.so's error, with every object this call added taken out.
    pub fn dlopen(&mut self, caller: usize, name: &str, reason: String) -> Result<usize, Failed> {
        let (objects, libraries) = (self.st.objects().len(), self.st.libraries().len());
        self.st.open(caller, name, reason);
        let failed = self.st.libraries()[libraries..]
            .iter()
            .find(|l| l.path.is_none() && !l.is_dlopen_stem())
            .cloned();
        if let Some(library) = failed {
            let error = library
                .error
                .clone()
                .unwrap_or_else(|| "cannot open shared object file: No such file or directory".into());
            self.st.rollback(objects, libraries);
            return Err(Failed {
                message: format!("{}: {error}", library.soname),
                library: Box::new(library),
            });
        }
        // The object is the one answering to the request this call made first.
        self.st.libraries()[libraries].object.ok_or_else(|| Failed {
            message: format!("{name}: cannot open shared object file: No such file or directory"),
            library: Box::new(self.st.libraries()[libraries].clone()),
        })
    }

    /// The run-time loads of the CUDA libraries ([`super::dlopen::requests`]: the driver from the CUDA
    /// runtime, the names objects keep for `dlopen`) of every object from `from` on, at a framework's first GPU
    /// use: the names only one API of their library opens are left out
    /// ([`super::dlopen::opened_by_one_api`]).
    pub fn runtime_loads(&mut self, from: usize) {
        self.st.runtime_loads(from, false, true);
    }
}

/// Runs `body` in the process of the program at `program` (an interpreter) on the machine at `root` with
/// environment `env`: it starts as ld.so starts it, then `body` loads more. `body`'s result (`None` for a
/// program of another architecture, which does not start here); `None` when `program` is not a dynamically
/// loadable ELF file. What `body` makes of the loads is the answer: the process is not finished as a
/// [`Resolution`] (symbol checks, copies of missing libraries, origins), work no caller read.
pub fn process<R>(
    root: &Root,
    env: &Env,
    program: &Path,
    files: &mut Files,
    body: impl FnOnce(&mut Image) -> R,
) -> Option<Option<R>> {
    super::resolve::session_loads(root, env, program, files, |st| {
        st.defer_strings();
        body(&mut Image { st })
    })
}
