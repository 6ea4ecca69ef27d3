//! The whole process image: which objects ld.so maps for a binary, in its order.
//!
//! Mirrors glibc: `elf/rtld.c` (`dl_main`: the main program, the interpreter already in the list,
//! `LD_PRELOAD` then `/etc/ld.so.preload` loaded with the main program as loader; `LD_LIBRARY_PATH` and
//! `LD_PRELOAD` paths with `/` dropped for secure-execution programs) and `elf/dl-deps.c`
//! (`_dl_map_object_deps`: breadth-first over DT_NEEDED, each new object appended to the list).
//! `_dl_map_object` first asks `_dl_lookup_map`: an object already loaded under that name, its path or its
//! DT_SONAME satisfies the request without a search, and `_dl_map_object_from_fd` reuses an object whose
//! file (device and inode) was already mapped under another name. Then the CUDA `dlopen`s of [`super::dlopen`]
//! run, each as `_dl_open` from its caller: the caller's RPATH/RUNPATH rules apply, and the new object has no
//! `l_loader` (`__RTLD_CALLMAP`), so its own dependencies do not inherit the caller's RPATH.

use super::object::{Background, Candidate, Files, Verdict};
use super::search::{Context, OwnDirs};
use crate::facts::loader::{How, Library, LoadedObject, Resolution, Role, Step, StepResult};
use crate::facts::{BinaryFacts, ElfClass, ElfFacts};
use crate::inspect::exports::Exports;
use crate::system::{Env, Root};
use foldhash::HashMap;
use std::path::Path;
use std::sync::Arc;

fn object_from(path: String, realpath: String, origin: String, e: &ElfFacts, role: Role) -> LoadedObject {
    LoadedObject {
        version: super::name::version_from_name(&realpath),
        path,
        realpath,
        origin,
        soname: e.soname.clone(),
        loader: None,
        dlopen: false,
        role,
        needed: e.needed.clone(),
        // get-dynamic-info.h: with DT_RUNPATH present, DT_RPATH is ignored.
        rpath: if e.runpath.is_empty() {
            e.rpath.clone()
        } else {
            Vec::new()
        },
        runpath: e.runpath.clone(),
        nodeflib: e.nodeflib,
        version_needs: e.version_needs.clone(),
        version_defs: e.version_defs.clone(),
        needs: e.versioned_undefined.clone(),
        unbound: Vec::new(),
    }
}

pub(super) struct State<'a> {
    ctx: Context<'a>,
    files: &'a mut Files,
    res: Resolution,
    /// The names objects answer to (`l_libname` + `l_name` + soname), each with the first object answering
    /// to it.
    by_name: HashMap<String, usize>,
    ids: Vec<Option<(u64, u64)>>,
    views: Vec<Option<Arc<Candidate>>>,
    /// Per object, what is read of it in the background ([`Files::read_loaded`]).
    reads: Vec<Background>,
    /// Whether an object's `.rodata` search starts when it is loaded ([`State::defer_strings`]).
    eager_strings: bool,
    /// Whether the session ends with its objects loaded ([`session_loads`]): their symbols are not read, and
    /// [`State::finish`] leaves the resolution as loaded.
    loads_only: bool,
    /// Per object, its own RUNPATH or RPATH directories, once asked for ([`State::own_dirs`]).
    own: Vec<Option<Option<Arc<OwnDirs>>>>,
    missing: HashMap<String, usize>,
    /// Who installed the objects the requests so far make part of the origins' plan, asked on the pool.
    early: super::origin::Early,
}

/// How a request came about.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Needed,
    Preload,
    Dlopen,
}

impl State<'_> {
    fn lookup(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Object `i`'s own RUNPATH (or RPATH) directories, expanded once for all its names.
    fn own_dirs(&mut self, i: usize) -> Option<Arc<OwnDirs>> {
        if self.own.len() <= i {
            self.own.resize(i + 1, None);
        }
        if let Some(known) = &self.own[i] {
            return known.clone();
        }
        let own = self.ctx.own_dirs(self.files, &self.res.objects[i]).map(Arc::new);
        self.own[i] = Some(own.clone());
        own
    }

    /// Adds request `lib`, answered, to the resolution; who installed the objects it makes part of the
    /// origins' plan is asked beside the walk ([`super::origin::Early`]).
    fn push(&mut self, lib: Library) {
        if !self.loads_only {
            let pool = self.files.pool();
            self.early.request(self.ctx.root, pool, &self.res.objects, &lib);
        }
        self.res.libraries.push(lib);
    }

    fn request(&mut self, requester: usize, name: &str, kind: Kind, reason: Option<String>) {
        self.request_searched(requester, name, kind, reason, None);
    }

    /// [`State::request`], with the search for `name` from `requester` already made when `searched` holds it.
    fn request_searched(
        &mut self,
        requester: usize,
        name: &str,
        kind: Kind,
        reason: Option<String>,
        searched: Option<super::search::Outcome>,
    ) {
        let needed_by = self.res.objects[requester].path.clone();
        // The copy the requester's own RUNPATH (or RPATH) points at, for the shadowing check.
        let intended = |st: &mut Self| {
            let own = st.own_dirs(requester);
            st.ctx.intended(st.files, own.as_deref(), name)
        };
        let mut lib = Library {
            dlopen: kind == Kind::Dlopen,
            preload: kind == Kind::Preload,
            reason,
            ..Library::unresolved(name, &needed_by, requester)
        };
        if let Some(i) = self.lookup(name) {
            lib.intended = intended(self);
            let o = &self.res.objects[i];
            lib.path = Some(o.path.clone());
            lib.how = How::AlreadyLoaded;
            lib.object = Some(i);
            lib.trail.push(Step {
                how: How::AlreadyLoaded,
                of: None,
                dir: None,
                path: Some(o.path.clone()),
                result: StepResult::Found,
                note: Some(format!("already loaded as {}", o.path)),
            });
            self.push(lib);
            return;
        }
        if let Some(&first) = self.missing.get(name) {
            lib.intended = intended(self);
            let prev = &self.res.libraries[first];
            lib.trail = prev.trail.clone();
            lib.error = prev.error.clone();
            self.push(lib);
            return;
        }
        let out = searched.unwrap_or_else(|| self.ctx.search(self.files, &self.res.objects, requester, name));
        lib.trail = out.trail;
        lib.error = out.error;
        match out.found {
            None => {
                lib.intended = intended(self);
                self.missing.insert(name.to_string(), self.res.libraries.len());
            }
            Some((path, how, via, cand)) => {
                // Found through the requester's own RUNPATH (or RPATH): that is the intended copy, no second
                // search needed.
                lib.intended = if how == How::Runpath || (how == How::Rpath && via.is_none()) {
                    Some(crate::facts::loader::Intended {
                        how,
                        path: path.clone(),
                        realpath: cand.realpath.clone(),
                        version: super::name::version_from_name(&cand.realpath),
                    })
                } else {
                    intended(self)
                };
                lib.how = how;
                lib.via = via.map(|v| self.res.objects[v].path.clone());
                lib.path = Some(path.clone());
                if let Some(i) = self.ids.iter().position(|id| *id == Some(cand.id)) {
                    // Same file under another name: `_dl_map_object_from_fd` reuses the loaded object.
                    self.name(i, name);
                    lib.object = Some(i);
                } else if let Some(e) = &cand.view.elf {
                    // `$ORIGIN` from the name it was opened by, the link's directory, not its target's.
                    let origin = super::search::origin_from(&path, self.ctx.cwd);
                    let mut o = object_from(path.clone(), cand.realpath.clone(), origin, e, Role::Library);
                    o.loader = (kind != Kind::Dlopen).then_some(requester);
                    o.dlopen = kind == Kind::Dlopen;
                    let mut names = vec![name.to_string(), path];
                    names.extend(o.soname.clone());
                    lib.object = Some(self.res.objects.len());
                    self.load(o, names, cand);
                    self.read_ahead(self.res.objects.len() - 1);
                }
            }
        }
        self.push(lib);
    }

    /// The name a library that completes the stem of one of its own sub-libraries (same family: `libcudnn`
    /// for `libcudnn_graph.so.9` and `libcudnn_ops.so`) with its own version would load, as cuDNN 9 does: it
    /// asks for `libcudnn_ops.so.9.19.0`, then `.9.19`, then `.9`, never the bare stem (glibc's
    /// `LD_DEBUG=libs` on PyTorch 2.11 with cuDNN 9.19). The first of those the process already has (no
    /// search) or the search from `requester` finds (with that search, for [`State::request_searched`]);
    /// `None` for a stem of another library, or when none is there (the bare stem is then resolved as it is).
    fn own_version_completion(
        &mut self,
        requester: usize,
        stem: &str,
    ) -> Option<(String, Option<super::search::Outcome>)> {
        let o = &self.res.objects[requester];
        let own = o
            .soname
            .as_deref()
            .unwrap_or(o.path.rsplit('/').next().unwrap_or(""));
        let family = |n: &str| -> String {
            let base = n.split(".so").next().unwrap_or(n);
            base.split('_').next().unwrap_or(base).to_string()
        };
        if family(own) != family(stem) || family(own).len() <= "lib".len() {
            return None;
        }
        let version = o.version.clone()?;
        let parts: Vec<&str> = version.split('.').collect();
        for k in (1..=parts.len()).rev() {
            let name = format!("{stem}.{}", parts[..k].join("."));
            if self.lookup(&name).is_some() {
                return Some((name, None));
            }
            let out = self.ctx.search(self.files, &self.res.objects, requester, &name);
            if out.found.is_some() {
                return Some((name, Some(out)));
            }
        }
        None
    }

    /// When the request just made (the last library) is a `dlopen` stem (`libnvJitLink.so`) that no step
    /// finds under its bare name, records the versioned names of it along the search. None is loaded: whether
    /// the library adds a version (and which) or asks for the bare name and fails (cuDNN 8's `libnvrtc.so`)
    /// is in its code, not its data.
    fn complete_stem(&mut self) {
        let Some(l) = self.res.libraries.last() else {
            return;
        };
        if !l.is_dlopen_stem() || l.how != How::NotFound {
            return;
        }
        let names = super::dlopen::completions(
            self.ctx.root,
            &l.trail,
            self.ctx.cache,
            self.ctx.platform,
            &l.soname,
            &mut self.files.so_names,
        );
        if let Some(l) = self.res.libraries.last_mut() {
            l.completions = names;
        }
    }

    /// Object `i` answers to `name` too.
    fn name(&mut self, i: usize, name: &str) {
        self.by_name.entry(name.to_string()).or_insert(i);
    }

    /// Adds a library (or the interpreter) answering to `names` to the process, and starts reading on the
    /// pool what the walk does not wait for: its `.rodata` strings, its versioned imports and exports.
    fn load(&mut self, o: LoadedObject, names: Vec<String>, cand: Arc<Candidate>) {
        let i = self.res.objects.len();
        for n in names {
            self.by_name.entry(n).or_insert(i);
        }
        let (eager, symbols) = (self.eager_strings, !self.loads_only);
        self.reads.push(
            self.files
                .read_loaded(&cand.view, &cand.host, true, eager, symbols),
        );
        self.res.objects.push(o);
        self.ids.push(Some(cand.id));
        self.views.push(Some(cand));
    }

    /// Starts reading the files at the machine paths `paths` on other threads ([`Files::read_ahead`]): the
    /// libraries a framework is about to load by path. The opens are unchanged; they only find them parsed.
    pub fn read_ahead_paths(&mut self, paths: &[String]) {
        self.files
            .read_ahead(self.ctx.root, paths.iter().map(|p| vec![p.clone()]));
    }

    /// Starts reading the files object `i`'s needed libraries are most likely found in (its own RUNPATH, or
    /// RPATH, and `ld.so.cache`), on other threads, while the breadth-first walk goes on: see
    /// [`Files::read_ahead`]. The search itself is unchanged; it only finds them parsed.
    fn read_ahead(&mut self, i: usize) {
        if !self.files.has_spare_workers() {
            return;
        }
        let own = self.own_dirs(i);
        let dirs = own.as_ref().map_or(&[][..], |o| &o.dirs[..]);
        let o = &self.res.objects[i];
        let mut names = Vec::new();
        for name in o.needed.iter().filter(|n| !n.contains('/')) {
            if self.lookup(name).is_some() {
                continue;
            }
            // In the order the search tries them.
            let mut paths: Vec<String> = dirs.iter().map(|d| super::search::join(d, name)).collect();
            if let Some(cache) = self.ctx.cache {
                paths.extend(
                    self.ctx
                        .platform
                        .cache_lookup(cache, name)
                        .map(|e| e.path.clone()),
                );
            }
            names.push(paths);
        }
        self.files.read_ahead(self.ctx.root, names);
    }

    /// Breadth-first over DT_NEEDED of every object from `from` on.
    fn deps_from(&mut self, from: usize) {
        let mut i = from;
        while i < self.res.objects.len() {
            if self.res.objects[i].role != Role::Interpreter {
                let needed = self.res.objects[i].needed.clone();
                for n in needed {
                    self.request(i, &n, Kind::Needed, None);
                }
            }
            i += 1;
        }
    }
}

/// Resolves every library of the binary `b` (read from `path`) as ld.so would on the machine at `root` with
/// environment `env`. `None` when `b` is not a dynamically loadable ELF file.
pub fn resolve(root: &Root, env: &Env, path: &Path, b: &BinaryFacts) -> Option<Resolution> {
    resolve_with(root, env, path, b, &mut Files::default())
}

/// [`resolve`], sharing the files already read with earlier resolutions (many binaries of one machine).
pub fn resolve_with(
    root: &Root,
    env: &Env,
    path: &Path,
    b: &BinaryFacts,
    files: &mut Files,
) -> Option<Resolution> {
    let e = b.elf.as_ref()?;
    if e.elf_type != "exec" && e.elf_type != "dyn" {
        return None;
    }
    resolve_alongside(root, env, path, files, || MainSymbols::of(b))
}

/// What the loader takes from the full inspection of the main program ([`crate::inspect::path`]), which can
/// run while the tree is walked: it is asked for only when the run-time loads are resolved.
#[derive(Debug, Clone, Default)]
pub struct MainSymbols {
    /// Its versioned imports, for the symbol checks.
    pub versioned_undefined: std::sync::Arc<[crate::facts::DynSymbol]>,
    /// It links the static CUDA runtime, which loads the driver with `dlopen("libcuda.so.1")`.
    pub cudart_static: bool,
}

impl MainSymbols {
    /// Taken from the program's facts.
    pub fn of(b: &BinaryFacts) -> MainSymbols {
        MainSymbols {
            versioned_undefined: b
                .elf
                .as_ref()
                .map(|e| e.versioned_undefined.clone())
                .unwrap_or_default(),
            cudart_static: b.cudart.linkage == crate::facts::CudartLinkage::Static,
        }
    }
}

/// [`resolve_with`] for the program at `path`, read here for what the walk needs (its dynamic section and
/// version tables): `main` gives the rest when the walk is done, so that the program's full inspection
/// (tens of thousands of symbols in a framework library) need not come first. `None` when `path` is not a
/// dynamically loadable ELF file.
pub fn resolve_alongside(
    root: &Root,
    env: &Env,
    path: &Path,
    files: &mut Files,
    main: impl FnOnce() -> MainSymbols,
) -> Option<Resolution> {
    resolve_after(root, env, path, files, &[], main, |_| ())
}

/// An object a process loaded before it opened the one resolved: a library a Python framework loads by path
/// (`ctypes.CDLL`) or opens by name before the file of its own that is inspected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    /// Its path as the process opened it (a machine path).
    pub path: String,
    /// Who loaded it and how (`torch loads it by path: …`), kept as the request's reason.
    pub reason: String,
}

/// [`resolve_alongside`] for an object opened into a process that already holds `earlier` (each with its own
/// DT_NEEDED tree, loaded in order): a soname one of them answers to is not searched for again, as
/// `_dl_map_object` finds it with `_dl_lookup_map`. With `earlier` empty, [`resolve_alongside`] itself.
/// `walked` is shown every object the process maps as soon as they are known, before the symbol checks,
/// copies and origins that finish the resolution: what a caller starts on them runs meanwhile.
pub fn resolve_after(
    root: &Root,
    env: &Env,
    path: &Path,
    files: &mut Files,
    earlier: &[Earlier],
    main: impl FnOnce() -> MainSymbols,
    walked: impl FnOnce(&[LoadedObject]),
) -> Option<Resolution> {
    let (res, _) = session_after(root, env, path, files, earlier, false, |st| {
        let main = main();
        st.res.objects[0].needs = main.versioned_undefined;
        st.runtime_loads(0, main.cudart_static, false);
        walked(&st.res.objects);
    })?;
    Some(res)
}

/// The process of the program at `path` as ld.so starts it (the program, the interpreter, `LD_PRELOAD` and
/// `/etc/ld.so.preload`, the DT_NEEDED tree), then `body`'s further loads in the same process: `body`'s
/// result, for a caller that keeps only what `body` made of the loads (a framework's import model). The
/// symbol checks, the copies of missing libraries and the objects' origins that finish a [`Resolution`] are
/// not done, nor are the loaded objects' symbols read for them. `body` is not run for a program of another
/// architecture (`Some(None)`). `None` when `path` is not a dynamically loadable ELF file.
pub(super) fn session_loads<R>(
    root: &Root,
    env: &Env,
    path: &Path,
    files: &mut Files,
    body: impl FnOnce(&mut State) -> R,
) -> Option<Option<R>> {
    session_after(root, env, path, files, &[], true, body).map(|(res, out)| {
        // Not kept: freed on the reaper's thread, not on the walk's (a framework's import model, before the
        // file's own walk).
        crate::parallel::discard(res);
        out
    })
}

/// A resolution is memory only: nothing in its drop has to happen before the run goes on.
impl crate::parallel::Forgettable for Resolution {}

/// The process of the program or library at `path`, opened into a process that holds `earlier` first
/// ([`State::after`]), then `body`'s further loads; unless `loads_only` ([`session_loads`]), finished as a
/// [`Resolution`] with its symbol checks, copies and origins.
fn session_after<R>(
    root: &Root,
    env: &Env,
    path: &Path,
    files: &mut Files,
    earlier: &[Earlier],
    loads_only: bool,
    body: impl FnOnce(&mut State) -> R,
) -> Option<(Resolution, Option<R>)> {
    // The binary's `.rodata` is searched whatever it is: its own strings are worth reading.
    let view = Arc::new(crate::inspect::loader_view(path, crate::inspect::RodataScan::Always).ok()?);
    let e = view.elf.as_ref()?;
    // A cubin is an ELF executable too, for the GPU: nothing loads it on the host.
    if (e.elf_type != "exec" && e.elf_type != "dyn") || e.machine == crate::inspect::cubin::EM_CUDA {
        return None;
    }
    let is_64 = e.class == ElfClass::Elf64;
    let platform = files.platform(root, e.machine, is_64, e.interpreter.as_deref());
    let cached = files.ld_cache(root);
    let (cache, cache_note) = (&cached.0, cached.1.clone());
    let cwd = env.get("PWD").unwrap_or("/").to_string();
    let main_path = path.to_string_lossy().into_owned();
    let main_real = main_realpath(root, path);
    let secure = is_secure(path);
    let llp = env.get("LD_LIBRARY_PATH").map(str::to_string);
    let ctx = Context {
        root,
        platform: &platform,
        cache: cache.as_ref(),
        ld_library_path: if secure { None } else { llp.as_deref() },
        ld_library_path_ignored: (secure && llp.is_some())
            .then_some("the program is setuid/setgid (secure-execution mode)"),
        cwd: &cwd,
        secure,
        tries: Default::default(),
    };
    let main_origin = main_origin(root, path, e.interpreter.is_some(), &main_real, &cwd);
    let main_object = object_from(main_path.clone(), main_real, main_origin, e, Role::Main);
    // A program of another architecture: no loader here would start it, so its tree is not searched
    // among this machine's libraries.
    if let Some(foreign) = super::foreign::check(root, &platform, cache.as_ref()) {
        let res = Resolution {
            binary: main_path,
            system_dirs: platform.system_dirs.clone(),
            system_dirs_source: platform.system_dirs_source.clone(),
            cache: cache_note,
            secure,
            objects: vec![main_object],
            foreign: Some(foreign),
            ..Resolution::default()
        };
        return Some((res, None));
    }
    // Its versioned imports come with `main`: only its `.rodata` is read in the background.
    let main_reads = files.read_loaded(&view, path, false, true, !loads_only);
    let main_view = Some(Arc::new(Candidate {
        realpath: String::new(),
        id: (0, 0),
        view: view.clone(),
        host: path.to_path_buf(),
    }));
    let mut st = State {
        ctx,
        files,
        res: Resolution {
            binary: main_path.clone(),
            system_dirs: platform.system_dirs.clone(),
            system_dirs_source: platform.system_dirs_source.clone(),
            hwcaps: platform.hwcaps.clone(),
            cache: cache_note,
            secure,
            objects: vec![main_object],
            libraries: Vec::new(),
            origins: Vec::new(),
            foreign: None,
            framework: None,
        },
        by_name: HashMap::from_iter([(main_path, 0)]),
        ids: vec![file_id(path)],
        views: vec![main_view],
        reads: vec![main_reads],
        eager_strings: true,
        loads_only,
        own: Vec::new(),
        missing: HashMap::default(),
        early: Default::default(),
    };
    if let Some(s) = &e.soname {
        st.name(0, s);
    }
    st.start(env, &platform, secure, earlier);
    let out = body(&mut st);
    Some((st.finish(root, env, &platform), Some(out)))
}

impl State<'_> {
    /// What ld.so maps before the program runs: the interpreter (in the list from the start), `LD_PRELOAD`
    /// (space or colon separated) then `/etc/ld.so.preload`, then the DT_NEEDED tree.
    fn start(&mut self, env: &Env, platform: &super::platform::Platform, secure: bool, earlier: &[Earlier]) {
        let root = self.ctx.root;
        if let Verdict::Ok(c) = self.files.verify(root, platform, &platform.interpreter)
            && let Some(ie) = &c.view.elf
        {
            let o = object_from(
                platform.interpreter.clone(),
                c.realpath.clone(),
                super::search::origin_from(&platform.interpreter, self.ctx.cwd),
                ie,
                Role::Interpreter,
            );
            let mut names = vec![platform.interpreter.clone()];
            names.extend(o.soname.clone());
            self.load(o, names, c.clone());
        }
        let preloaded_from = self.res.objects.len();
        let mut preloads: Vec<(String, String)> = Vec::new();
        if let Some(p) = env.get("LD_PRELOAD") {
            for n in p.split([' ', ':']).filter(|s| !s.is_empty()) {
                if secure && n.contains('/') {
                    continue;
                }
                preloads.push((n.to_string(), "LD_PRELOAD".into()));
            }
        }
        if let Ok(t) = root.read_to_string(Path::new("/etc/ld.so.preload"), crate::system::read::CONFIG_TEXT)
        {
            for n in t
                .split(|c: char| c.is_whitespace() || c == ':')
                .filter(|s| !s.is_empty())
            {
                preloads.push((n.to_string(), "/etc/ld.so.preload".into()));
            }
        }
        for (n, why) in preloads {
            self.request(0, &n, Kind::Preload, Some(format!("listed in {why}")));
        }
        self.read_ahead(0);
        if earlier.is_empty() {
            self.deps_from(0);
        } else {
            self.after(preloaded_from, earlier);
        }
    }

    /// The process an interpreter built before it opened the object at index 0: the trees of the LD_PRELOAD
    /// objects (from index `from`), mapped as it started; then each of `earlier` with its tree, in order, as
    /// `dlopen` maps them (no `l_loader`, so their dependencies do not inherit anyone's RPATH), each request
    /// marked as a preload with its reason; then the object's own DT_NEEDED tree, breadth-first, which finds
    /// every soname already loaded without a search.
    fn after(&mut self, from: usize, earlier: &[Earlier]) {
        self.deps_from(from);
        for e in earlier {
            let (objects, at) = (self.res.objects.len(), self.res.libraries.len());
            self.request(0, &e.path, Kind::Dlopen, Some(e.reason.clone()));
            if let Some(l) = self.res.libraries.get_mut(at) {
                l.preload = true;
            }
            if self.res.objects.len() > objects {
                self.deps_from(objects);
            }
        }
        let own = self.res.objects.len();
        for n in self.res.objects[0].needed.clone() {
            self.request(0, &n, Kind::Needed, None);
        }
        self.deps_from(own);
    }

    /// Every object, in load order.
    pub(super) fn objects(&self) -> &[LoadedObject] {
        &self.res.objects
    }

    /// Every request, in order.
    pub(super) fn libraries(&self) -> &[Library] {
        &self.res.libraries
    }

    /// `dlopen(name)` by object `caller`, with the DT_NEEDED tree of what it adds.
    pub(super) fn open(&mut self, caller: usize, name: &str, reason: String) {
        let before = self.res.objects.len();
        self.request(caller, name, Kind::Dlopen, Some(reason));
        if self.res.objects.len() > before {
            self.deps_from(before);
        }
    }

    /// Takes out every object from index `objects` on and every request from index `libraries` on, as
    /// `_dl_close_worker` unmaps what a failed `dlopen` mapped.
    pub(super) fn rollback(&mut self, objects: usize, libraries: usize) {
        self.res.objects.truncate(objects);
        self.res.libraries.truncate(libraries);
        self.ids.truncate(objects);
        self.views.truncate(objects);
        self.reads.truncate(objects);
        self.own.truncate(objects);
        self.by_name.retain(|_, i| *i < objects);
        self.missing.retain(|_, i| *i < libraries);
        self.early.forget_from(objects);
    }

    /// Objects loaded from now on have their `.rodata` searched for `dlopen` names only when
    /// [`State::runtime_loads`] asks (a Python framework's import session, whose model may never ask).
    pub(super) fn defer_strings(&mut self) {
        self.eager_strings = false;
    }

    /// Starts the `.rodata` search of object `i` if it has not started.
    fn search_strings(&mut self, i: usize) {
        if let (Some(Some(cand)), Some(b)) = (self.views.get(i), self.reads.get_mut(i)) {
            self.files.search_strings(b, &cand.view, &cand.host, true);
        }
    }

    /// The run-time loads ([`super::dlopen::requests`]) of every object from `from` on, including the ones
    /// these loads bring in. `cudart_static`: the main program links the static CUDA runtime.
    pub(super) fn runtime_loads(&mut self, from: usize, cudart_static: bool, first_use: bool) {
        // Searches not started at load ([`State::defer_strings`]) start now, all at once, to run side by side.
        for i in from..self.res.objects.len() {
            self.search_strings(i);
        }
        let mut i = from;
        while i < self.res.objects.len() {
            let before = self.res.objects.len();
            self.search_strings(i);
            let strings = self.files.dlopen_strings(&self.reads[i]);
            let cudart_static = i == 0 && cudart_static;
            for (name, reason) in super::dlopen::requests(&self.res.objects[i], cudart_static, &strings) {
                if first_use && super::dlopen::opened_by_one_api(self.res.objects[i].soname.as_deref(), &name)
                {
                    continue;
                }
                if crate::facts::loader::is_stem(&name)
                    && let Some((full, searched)) = self.own_version_completion(i, &name)
                {
                    let asked = self
                        .res
                        .libraries
                        .iter()
                        .any(|l| l.needed_by_index == i && l.soname == full);
                    if !asked {
                        let why = format!(
                            "{reason}; it completes the name of its own sub-library with its own version before it \
                             calls dlopen, longest first (cuDNN 9 asks for libcudnn_ops.so.9.19.0, then .9.19, then \
                             .9): {full} is the first there"
                        );
                        self.request_searched(i, &full, Kind::Dlopen, Some(why), searched);
                    }
                    continue;
                }
                self.request(i, &name, Kind::Dlopen, Some(reason));
                self.complete_stem();
            }
            if self.res.objects.len() > before {
                self.deps_from(before);
            }
            i += 1;
        }
    }

    /// The end of a walk: the symbol checks, the copies of missing libraries and the objects' origins.
    fn finish(mut self, root: &Root, env: &Env, platform: &super::platform::Platform) -> Resolution {
        if self.loads_only {
            return self.res;
        }
        // The origins depend only on what was loaded and from where: each was asked on the pool as soon as a
        // request made it part of the plan, and they are gathered on a thread of their own while the symbols
        // are read and checked and the copies of missing libraries searched.
        let plan = super::origin::Plan::of(&self.res);
        let (early, pool) = (std::mem::take(&mut self.early), self.files.pool().clone());
        std::thread::scope(|s| {
            let origins = s.spawn(move || super::origin::find(root, plan, early, &pool));
            let mut exports = Vec::new();
            for (o, reads) in self.res.objects.iter_mut().zip(&self.reads) {
                let s = self.files.symbols(reads);
                if let Some(needs) = s.imports {
                    o.needs = needs;
                }
                exports.push(s.exports);
            }
            // The symbol checks run on the pool while the copies of missing libraries are looked for here.
            let binding = bind_versioned(&mut self.res, exports, self.files.pool());
            super::copies::fill_with(root, env, platform, &mut self.res);
            self.res.origins.extend(crate::parallel::join(origins));
            binding.finish(&mut self.res, self.files.pool());
        });
        self.res
    }
}

/// Looks up every versioned symbol each object needs in the objects that define its version, as ld.so's
/// symbol lookup (`check_match` in `elf/dl-lookup.c`) accepts a definition of the right name and version from
/// any object in scope: first in the object its `DT_VERNEED` entry names (`memcpy@GLIBC_2.14` of libc.so.6),
/// then, if not found there, in the other objects defining that version (glibc 2.34 moved
/// `pthread_create@GLIBC_2.2.5` from libpthread into libc). A symbol is bound when any of them defines it;
/// the order of asking only saves lookups. A provider that could not be read proves nothing:
/// its symbols count as there. Each consumer is one job on the pool, asking the providers' [`Exports`] (their
/// hash tables, located once); [`Binding::finish`] fills [`LoadedObject::unbound`].
fn bind_versioned(
    res: &mut Resolution,
    exports: Vec<Option<Arc<Exports>>>,
    pool: &mut crate::parallel::Pool,
) -> Binding {
    struct Scope {
        /// Version name → the objects defining it.
        defining: HashMap<String, Vec<usize>>,
        sonames: Vec<Option<String>>,
        exports: Vec<Option<Arc<Exports>>>,
    }
    let mut defining: HashMap<String, Vec<usize>> = HashMap::default();
    for (pi, p) in res.objects.iter().enumerate() {
        for d in &p.version_defs {
            defining.entry(d.clone()).or_default().push(pi);
        }
    }
    let scope = Arc::new(Scope {
        defining,
        sonames: res.objects.iter().map(|o| o.soname.clone()).collect(),
        exports,
    });
    let consumers: Vec<usize> = (0..res.objects.len())
        .filter(|&ci| !res.objects[ci].needs.is_empty())
        .collect();
    let done = Arc::new(crate::parallel::Parts::new(consumers.len()));
    for &ci in &consumers {
        let o = &mut res.objects[ci];
        let needs = std::mem::take(&mut o.needs);
        // Which file the consumer's DT_VERNEED names for each version (the first, as a version name may be
        // needed of two files).
        let mut file_of: HashMap<String, String> = HashMap::default();
        for n in &o.version_needs {
            for v in &n.versions {
                file_of.entry(v.clone()).or_insert_with(|| n.file.clone());
            }
        }
        let (scope, done) = (scope.clone(), done.clone());
        pool.submit(move || {
            let defines = |pi: usize, name: &str, v: &str| {
                scope.exports[pi].as_ref().is_none_or(|e| e.defines(name, v))
            };
            let mut unbound = Vec::new();
            // The provider that defined the last symbol of each version is asked first: a consumer's
            // `GLIBC_2.2.5` imports are nearly all libc's, though its `DT_VERNEED` may name libm's
            // `GLIBC_2.2.5` first. Whether a symbol is bound does not depend on the order of the asking.
            let mut last: HashMap<&str, usize> = HashMap::default();
            for (si, s) in needs.iter().enumerate() {
                let Some(v) = s.version.as_deref() else { continue };
                // Only versions the consumer needs from another file; weak references may stay unresolved.
                let Some(file) = file_of.get(v) else { continue };
                if s.weak {
                    continue;
                }
                let Some(providers) = scope.defining.get(v) else {
                    continue;
                };
                let named = |pi: &usize| scope.sonames[*pi].as_deref() == Some(file.as_str());
                let tried = last.get(v).copied();
                let untried = |pi: &usize| Some(*pi) != tried;
                let hit = |pi: &usize| defines(*pi, &s.name, v);
                let found = tried.filter(hit).or_else(|| {
                    // Then the file the consumer's `DT_VERNEED` names, then the others.
                    let mut order = providers
                        .iter()
                        .filter(|pi| named(pi))
                        .chain(providers.iter().filter(|pi| !named(pi)));
                    order.find(|pi| untried(pi) && hit(pi)).copied()
                });
                match found {
                    Some(pi) => {
                        last.insert(v, pi);
                    }
                    None => unbound.push(si),
                }
            }
            done.add([(ci, needs, unbound)]);
        });
    }
    Binding { done }
}

/// The symbol checks of [`bind_versioned`], running: per consumer, its needs (moved out of the object while
/// they are checked) and the indexes of the unbound ones.
type Checked = (usize, std::sync::Arc<[crate::facts::DynSymbol]>, Vec<usize>);

/// [`bind_versioned`]'s jobs, on the pool.
struct Binding {
    done: Arc<crate::parallel::Parts<Checked>>,
}

impl Binding {
    /// Waits for every consumer's check (helping the pool) and fills [`LoadedObject::unbound`].
    fn finish(self, res: &mut Resolution, pool: &crate::parallel::Pool) {
        for (ci, needs, unbound) in self.done.wait(pool) {
            let o = &mut res.objects[ci];
            o.unbound = unbound.iter().map(|&si| needs[si].clone()).collect();
            o.needs = needs;
        }
    }
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    // The inspected binary is named on the command line: read where the user pointed.
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The main program's real path as the machine sees it (like `/proc/self/exe`). A binary inside `--root` is
/// given its path inside the root.
fn main_realpath(root: &Root, path: &Path) -> String {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if !root.is_host()
        && let Ok(r) = std::fs::canonicalize(root.dir())
        && let Ok(inside) = real.strip_prefix(&r)
    {
        return Path::new("/").join(inside).to_string_lossy().into_owned();
    }
    real.to_string_lossy().into_owned()
}

/// The inspected binary's `$ORIGIN`. A program the kernel starts (`started`: it names an interpreter,
/// `PT_INTERP`) has no name of its own in ld.so's list (`l_name` is empty), so `_dl_get_origin` reads
/// `/proc/self/exe`, which the kernel gives resolved: the directory of its real path, `real`. Anything else is
/// a library some process opens by a path (Python importing an extension module, `dlopen`): `_dl_new_object`
/// takes `$ORIGIN` from that name as it was written, links not resolved, so from the path the user named,
/// made absolute without resolving anything (and, for a file inside `--root`, taken as a path inside the
/// root).
fn main_origin(root: &Root, path: &Path, started: bool, real: &str, cwd: &str) -> String {
    if started {
        return super::search::origin_from(real, cwd);
    }
    let opened = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    if !root.is_host() {
        let dirs = [
            std::path::absolute(root.dir()).ok(),
            std::fs::canonicalize(root.dir()).ok(),
        ];
        for dir in dirs.iter().flatten() {
            if let Ok(inside) = opened.strip_prefix(dir) {
                let machine = Path::new("/").join(inside);
                return super::search::origin_from(&machine.to_string_lossy(), cwd);
            }
        }
    }
    super::search::origin_from(&opened.to_string_lossy(), cwd)
}

/// Secure-execution (`AT_SECURE`): the kernel sets it for setuid and setgid programs. (File capabilities set
/// it too; reading `security.capability` needs an xattr call cudadiag does not make.)
fn is_secure(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o6000 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_has_the_origin_of_its_real_path_a_library_of_the_name_it_is_opened_by() {
        let t = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(dir.join("real/lib")).unwrap();
        std::fs::create_dir_all(dir.join("farm/lib")).unwrap();
        std::fs::write(dir.join("real/lib/libx.so"), b"").unwrap();
        std::os::unix::fs::symlink(dir.join("real/lib/libx.so"), dir.join("farm/lib/libx.so")).unwrap();
        let link = dir.join("farm/lib/../lib/libx.so");
        let s = |p: std::path::PathBuf| p.to_string_lossy().into_owned();
        let host = Root::host();
        let real = main_realpath(&host, &link);
        assert_eq!(real, s(dir.join("real/lib/libx.so")));
        assert_eq!(
            main_origin(&host, &link, true, &real, "/"),
            s(dir.join("real/lib"))
        );
        // Opened by its name: neither the link nor `..` resolved, as `_dl_new_object` keeps it.
        assert_eq!(
            main_origin(&host, &link, false, &real, "/"),
            s(dir.join("farm/lib/../lib"))
        );
        // Inside `--root`: the same name, as a path of the machine the root is.
        let root = Root::at(&dir);
        let real = main_realpath(&root, &link);
        assert_eq!(real, "/real/lib/libx.so");
        assert_eq!(main_origin(&root, &link, true, &real, "/"), "/real/lib");
        assert_eq!(main_origin(&root, &link, false, &real, "/"), "/farm/lib/../lib");
    }
}
