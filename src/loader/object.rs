//! Opening a candidate file the way `open_verify` in glibc's `elf/dl-load.c` does, and reading the loader facts
//! of the ones that are kept.
//!
//! `open_verify` reads the ELF header and: skips a file of the other ELF class (remembering it, for the
//! "wrong ELF class" message), skips a file for another machine (`elf_machine_matches_host`), and stops the
//! whole load with an error for anything else that is not a loadable ELF object ("invalid ELF header", "file
//! too short", "only ET_DYN and ET_EXEC can be loaded"). Files are read through [`Root`]; parsed views are
//! cached per real path, so a library reached a hundred times is read once.

use super::cache::LdCache;
use super::platform::Platform;
use crate::facts::DynSymbol;
use crate::inspect::exports::Exports;
use crate::inspect::{self, LoaderView};
use crate::parallel::{Parts, Pool};
use crate::system::Root;
use foldhash::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

pub use super::dlopen_table::DLOPEN_NEEDLES;
use super::dlopen_table::{PIECE, first_occurrences};

/// The verdict on one candidate file.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Loadable: its real path, file identity and view.
    Ok(Arc<Candidate>),
    /// No such file (or a component is not a directory, or the name is a directory).
    Absent,
    /// ELF of the other class: skipped.
    WrongClass(String),
    /// ELF for another machine: skipped.
    WrongMachine(String),
    /// Unreadable (permissions): skipped, as `open` failing is.
    Unreadable(String),
    /// Not a loadable ELF object: ld.so stops with this message.
    Invalid(String),
}

/// A file that passed `open_verify`.
#[derive(Debug)]
pub struct Candidate {
    /// The machine's real path.
    pub realpath: String,
    /// `(st_dev, st_ino)`, which ld.so compares to reuse an object loaded under another name.
    pub id: (u64, u64),
    /// Its loader facts.
    pub view: Arc<LoaderView>,
    /// Where the file is read on this host (under the root).
    pub host: std::path::PathBuf,
}

/// The entries of a directory, as far as they are known.
#[derive(Debug, Clone)]
enum Listing {
    /// Not listed yet: asked about this many times.
    Asked(u32),
    /// Every name in it (shared by the clones of a [`Files`]).
    Names(Arc<foldhash::HashSet<std::ffi::OsString>>),
    /// Not to be listed (unreadable or large): every name gets the full resolution.
    Unlisted,
}

/// What is read of a loaded object on [`Files`]' pool while the walk goes on ([`Files::read_loaded`]): the
/// search of its `.rodata` for strings that name a library it may `dlopen` ([`DLOPEN_NEEDLES`]), and its
/// versioned imports.
#[derive(Debug, Clone, Default)]
pub struct Background {
    /// Whether the `.rodata` search was started ([`Files::search_strings`]); `strings` is its result (`None`:
    /// nothing to search).
    searched: bool,
    strings: Option<Arc<Parts<(String, u64)>>>,
    /// Whether the symbols were asked for ([`Files::read_loaded`]); `symbols` is their reading (`None`:
    /// nothing to read).
    symbols_read: bool,
    symbols: Option<Arc<Parts<Symbols>>>,
}

/// The symbol side of a loaded object, read in the background.
#[derive(Debug, Clone, Default)]
pub struct Symbols {
    /// Its versioned imports, when asked for (`None`: not asked, or unreadable).
    /// Shared: each resolution that loads the object takes them, as they were read.
    pub imports: Option<Arc<[DynSymbol]>>,
    /// Its exports, for an object that defines versions (`None`: it defines none, or is unreadable).
    pub exports: Option<Arc<Exports>>,
}

/// Reads and remembers candidate files, and what is read once per machine (the platform, `ld.so.cache`).
/// One `Files` serves one root. A clone starts from everything this one has read (the parsed files are
/// shared, the maps copied) and runs its background work on the same workers: for processes of one root
/// modelled side by side.
#[derive(Debug, Default, Clone)]
pub struct Files {
    seen: HashMap<String, Arc<Candidate>>,
    /// By `e_machine`, class and interpreter (the architecture's standard one when the object names none).
    platforms: HashMap<(u16, bool, String), Arc<Platform>>,
    ld_cache: Option<Arc<(Option<LdCache>, String)>>,
    /// Directories already resolved to real paths (`None`: missing), so that a name tried in the same
    /// directory for every library costs one `lstat`, not one per component of the directory.
    dirs: HashMap<String, Option<std::path::PathBuf>>,
    /// What each host path met while resolving is ([`Root::link_of`]): the same directories are reached
    /// through many spellings (`torch/lib/../../nvidia/cu13/lib`, `nvidia/cu13/lib`).
    links: HashMap<std::path::PathBuf, Result<Option<std::path::PathBuf>, std::io::ErrorKind>>,
    /// [`super::search::Context::intended`] answers, by platform (`e_machine`, 64-bit), kind of list, list
    /// ([`Files::list_id`]) and name.
    pub(super) intended: HashMap<
        (u16, bool, crate::facts::loader::How, usize, String),
        Option<crate::facts::loader::Intended>,
    >,
    /// Every distinct list of expanded search directories, numbered: the libraries of one directory share
    /// their RUNPATH, and an answer for one holds for all.
    lists: HashMap<Vec<String>, usize>,
    /// Where the `.rodata` searches and the read-ahead run, while the tree is resolved.
    pool: Pool,
    /// Files read ahead on the pool ([`Files::read_ahead`]), by real path; taken by [`Files::verify`].
    ahead: HashMap<String, Arc<Parts<Option<Arc<LoaderView>>>>>,
    /// What is known of the entries of each real directory ([`Files::may_hold`]).
    listings: HashMap<std::path::PathBuf, Listing>,
    /// [`Files::verify`]'s answers, per loader (`e_machine`, 64-bit) and machine path.
    verdicts: HashMap<(u16, bool), HashMap<String, Verdict>>,
    /// The shared objects' names of each directory a `dlopen` stem is completed in
    /// ([`super::dlopen::completions`]): kept for the run, since every process modelled on this `Files` asks the
    /// same directories (`doctor`'s runs of a venv's frameworks filtered the same listings once each).
    pub(super) so_names: super::dlopen::Listings,
    /// [`Files::read_loaded`]'s reads of each loaded file, by host path and whether imports were asked: a
    /// framework's import and the tree of one of its files load the same libraries (PyTorch's `.rodata`
    /// alone is 25 MB), which are read once.
    loaded: HashMap<(std::path::PathBuf, bool), Background>,
}

impl Files {
    /// A `Files` whose background work runs on `threads` worker threads (the default: one per core but
    /// one). With three or more, the files a new object will likely need are read ahead
    /// ([`Files::read_ahead`]).
    pub fn with_threads(threads: usize) -> Files {
        Files {
            pool: Pool::new(threads),
            ..Files::default()
        }
    }

    /// The number of the directory list `dirs` ([`Files::intended`]'s key).
    pub(super) fn list_id(&mut self, dirs: &[String]) -> usize {
        let next = self.lists.len();
        match self.lists.get(dirs) {
            Some(&id) => id,
            None => {
                self.lists.insert(dirs.to_vec(), next);
                next
            }
        }
    }

    /// The worker threads of this run's background reads.
    pub fn pool(&mut self) -> &mut Pool {
        &mut self.pool
    }

    /// Has this `Files` workers to spare (three or more) for work beside the resolution: files read ahead
    /// ([`Files::read_ahead`]), and `doctor`'s processes of one environment modelled side by side on clones.
    /// Speculative or parallel work pays only then: on two cores the workers are busy with `.rodata`
    /// (measured: the read-ahead 2 ms slower on a 2-core box, 1-3 ms faster on 16 cores for PyTorch's tree;
    /// the clones of the runs side by side 1.3 ms of CPU on 2 cores for no time saved).
    pub fn has_spare_workers(&self) -> bool {
        self.pool.threads() >= 3
    }

    /// Starts reading, on the pool, the loader facts of the files the loader is likely to try next, so that
    /// [`Files::verify`] finds them parsed: for each of a new object's needed names, the machine paths the
    /// search will try in its RUNPATH or RPATH and in `ld.so.cache`, in that order, of which the first that
    /// exists is read (the search stops there unless the file is of the wrong class). Parsing is a pure
    /// function of the file: a file read ahead and not chosen costs only the work. Files already read and
    /// paths already queued are skipped.
    pub fn read_ahead(&mut self, root: &Root, names: impl IntoIterator<Item = Vec<String>>) {
        if !self.has_spare_workers() {
            return;
        }
        for paths in names {
            let Some(real) = paths.iter().find_map(|path| self.resolve(root, path)) else {
                continue;
            };
            let real_s = real.to_string_lossy().into_owned();
            if self.seen.contains_key(&real_s) || self.ahead.contains_key(&real_s) {
                continue;
            }
            let host = root.host_path(&real);
            let done = Arc::new(Parts::new(1));
            self.ahead.insert(real_s, done.clone());
            self.pool.submit_first(move || {
                let view = inspect::loader_view(&host, inspect::RodataScan::CudaObjects).ok();
                done.add([view.map(Arc::new)]);
            });
        }
    }

    /// Starts the background reads of an object the process loads, from `view` of the file at `host`: the
    /// search of its `.rodata` ranges for `dlopen` names, in parts of 1 MB (for a large tree this is most
    /// of the loader's reading: PyTorch's CUDA libraries hold 150 MB of read-only data, 46 MB of it in
    /// cuBLASLt), and its symbols: with `imports`, its versioned imports ([`inspect::versioned_imports`]),
    /// and, if it defines versions, its [`Exports`]. Only objects the process loads are read so: a candidate
    /// the search verifies and passes over costs only its headers.
    /// Without `strings`, the `.rodata` search waits until [`Files::search_strings`] asks for it: a Python
    /// framework's import reads no `dlopen` names of the libraries it loads unless its model asks for the
    /// run-time loads (torch's does not), and searching them anyway was a third of `import torch`'s CPU time.
    /// Without `symbols`, the symbols are not read (until a later call asks for them).
    pub fn read_loaded(
        &mut self,
        view: &LoaderView,
        host: &Path,
        imports: bool,
        strings: bool,
        symbols: bool,
    ) -> Background {
        let key = (host.to_path_buf(), imports);
        let mut b = self.loaded.get(&key).cloned().unwrap_or_default();
        // A framework's import model reads no symbols ([`super::resolve::session_loads`]); a tree resolved
        // later in the same run over the same objects starts them then.
        if symbols && !b.symbols_read {
            b.symbols = self.read_symbols(view, imports);
            b.symbols_read = true;
        }
        self.loaded.insert(key, b.clone());
        if strings {
            self.search_strings(&mut b, view, host, imports);
        }
        b
    }

    /// Starts the `.rodata` search of a loaded object read with [`Files::read_loaded`] (`view` of the file at
    /// `host`, read with `imports` or not), unless it was started already.
    pub fn search_strings(&mut self, b: &mut Background, view: &LoaderView, host: &Path, imports: bool) {
        if b.searched {
            return;
        }
        b.searched = true;
        b.strings = search_rodata(&mut self.pool, view, host);
        if let Some(known) = self.loaded.get_mut(&(host.to_path_buf(), imports)) {
            known.clone_from(b);
        }
    }

    /// Starts reading the symbols of a loaded file: with `imports`, its versioned imports, and its exports if
    /// it defines versions (`None`: nothing to read).
    fn read_symbols(&mut self, view: &LoaderView, imports: bool) -> Option<Arc<Parts<Symbols>>> {
        let exports = view.elf.as_ref().is_some_and(|e| !e.version_defs.is_empty());
        if !(imports || exports) {
            return None;
        }
        let done = Arc::new(Parts::new(1));
        let (d, data) = (done.clone(), view.data.clone());
        self.pool.submit(move || {
            d.add([Symbols {
                imports: imports.then(|| inspect::versioned_imports(&data)).flatten(),
                exports: exports.then(|| Exports::of(data)).flatten().map(Arc::new),
            }])
        });
        Some(done)
    }

    /// The `.rodata` strings of a loaded object that name a library it may `dlopen`, in file order, each once
    /// (at its first offset); waits for the search to finish, helping it along.
    pub fn dlopen_strings(&self, b: &Background) -> Vec<(String, u64)> {
        let Some(parts) = &b.strings else {
            return Vec::new();
        };
        first_occurrences(parts.wait_kept(&self.pool))
    }

    /// The symbols of a loaded object read with [`Files::read_loaded`] (waiting for them, helping the pool).
    pub fn symbols(&self, b: &Background) -> Symbols {
        b.symbols
            .as_ref()
            .and_then(|s| s.wait_kept(&self.pool).into_iter().next())
            .unwrap_or_default()
    }

    /// The loader's view of the machine for objects of `machine`/`is_64` with interpreter `interp`.
    pub fn platform(
        &mut self,
        root: &Root,
        machine: u16,
        is_64: bool,
        interp: Option<&str>,
    ) -> Arc<Platform> {
        let interp = interp.unwrap_or_else(|| super::platform::default_interpreter(machine, is_64));
        self.platforms
            .entry((machine, is_64, interp.to_string()))
            .or_insert_with(|| Arc::new(Platform::detect(root, machine, is_64, Some(interp))))
            .clone()
    }

    /// Reads ahead what every resolution on this machine starts with: `ld.so.cache` (on the pool) and, at the
    /// same time, the platform of this build's own architecture, 64-bit, standard interpreter (the common
    /// case; another is read when asked). While the binary is inspected on another thread.
    pub fn prepare(&mut self, root: &Root) {
        let Some(machine) = super::platform::own_machine() else {
            return;
        };
        let cache = self.ld_cache.is_none().then(|| {
            let cache = Arc::new(Parts::new(1));
            let (done, root) = (cache.clone(), root.clone());
            self.pool.submit_first(move || done.add([read_ld_cache(&root)]));
            cache
        });
        self.platform(root, machine, true, None);
        if let Some(cache) = cache {
            self.ld_cache = cache.wait(&self.pool).pop().map(Arc::new);
        }
    }

    /// `/etc/ld.so.cache`, parsed, with a one-line description (or why it cannot be used).
    pub fn ld_cache(&mut self, root: &Root) -> Arc<(Option<LdCache>, String)> {
        self.ld_cache
            .get_or_insert_with(|| Arc::new(read_ld_cache(root)))
            .clone()
    }

    /// The real path of the machine path `path`, its directory resolved once per run.
    fn resolve(&mut self, root: &Root, path: &str) -> Option<std::path::PathBuf> {
        let p = Path::new(path);
        let links = &mut self.links;
        let mut link_of = |host: &Path| -> std::io::Result<Option<std::path::PathBuf>> {
            links
                .entry(host.to_path_buf())
                .or_insert_with(|| root.link_of(host).map_err(|e| e.kind()))
                .clone()
                .map_err(std::io::Error::from)
        };
        let (Some(dir), Some(name)) = (p.parent(), p.file_name()) else {
            return root.resolve_from_with("/".into(), p, &mut link_of).ok();
        };
        let real_dir = match self.dirs.get(&*dir.to_string_lossy()) {
            Some(known) => known.clone(),
            None => {
                let real = root.resolve_from_with("/".into(), dir, &mut link_of).ok();
                self.dirs.insert(dir.to_string_lossy().into_owned(), real.clone());
                real
            }
        }?;
        if !Files::may_hold(&mut self.listings, root, &real_dir, name) {
            return None;
        }
        // The file through the same memo: the read-ahead, the search and the RUNPATH-intended lookup try the
        // same paths.
        root.resolve_from_with(real_dir, Path::new(name), &mut link_of)
            .ok()
    }

    /// Is the machine path `path` a directory (links followed)? Remembered for the run.
    pub fn is_dir(&mut self, root: &Root, path: &str) -> bool {
        if let Some(known) = self.dirs.get(path) {
            return known.is_some();
        }
        let Some(real) = self.resolve(root, path) else {
            self.dirs.insert(path.to_string(), None);
            return false;
        };
        let dir = root.is_dir(&real);
        self.dirs.insert(path.to_string(), dir.then_some(real));
        dir
    }

    /// Can the real directory `dir` hold an entry `name`? A directory asked about a few times is listed once
    /// (a RUNPATH directory of a wheel is tried for every name its libraries need): a name not in the list is
    /// not there, with no `lstat`. A name in it, or a directory not listed (unreadable, or too large to be
    /// worth it), gets the full resolution.
    ///
    /// Listing costs about a microsecond per entry, a failed `lstat` a few: a wheel's `lib` directory (tens
    /// of entries, asked about for every name) pays, a system directory (`/usr/lib/x86_64-linux-gnu`: a
    /// thousand entries or more, 1.2 ms to list on a 2-core box, asked about a dozen times) does not. Its size
    /// on disk tells which it is before it is read.
    fn may_hold(
        listings: &mut HashMap<std::path::PathBuf, Listing>,
        root: &Root,
        dir: &Path,
        name: &std::ffi::OsStr,
    ) -> bool {
        /// Lookups in a directory before it is listed.
        const ASKED: u32 = 4;
        /// Entries beyond which a directory is not kept listed.
        const MAX_ENTRIES: usize = 512;
        /// Size (`st_size`) beyond which a directory is not listed: on ext4, about 400 entries of library
        /// names; on file systems that report less, [`MAX_ENTRIES`] bounds the reading.
        const MAX_SIZE: u64 = 16 << 10;
        if !listings.contains_key(dir) {
            listings.insert(dir.to_path_buf(), Listing::Asked(0));
        }
        let Some(listing) = listings.get_mut(dir) else {
            return true;
        };
        if let Listing::Asked(n) = listing {
            *n += 1;
            if *n < ASKED {
                return true;
            }
            let host = root.host_path(dir);
            if std::fs::metadata(&host).map_or(true, |m| m.len() > MAX_SIZE) {
                *listing = Listing::Unlisted;
                return true;
            }
            // Through the root: a remembering root lists a directory once for the run (torch's search of its
            // wheels and the search for copies list the same `lib` directories).
            *listing = match root.read_dir_names_within(dir, MAX_ENTRIES + 1, |_| true) {
                Ok(names) if names.len() <= MAX_ENTRIES => {
                    Listing::Names(Arc::new(names.into_iter().collect()))
                }
                _ => Listing::Unlisted,
            };
        }
        match listing {
            Listing::Names(names) => names.contains(name),
            _ => true,
        }
    }

    /// Verifies `path` (a machine path) for the loader of `p`.
    pub fn verify(&mut self, root: &Root, p: &Platform, path: &str) -> Verdict {
        // The same paths come back many times (each requester's RUNPATH is tried for names already loaded,
        // for the shadowing check): the answer is a function of the path and the platform.
        if let Some(v) = self.verdicts.get(&(p.machine, p.is_64)).and_then(|m| m.get(path)) {
            return v.clone();
        }
        let v = self.verify_uncached(root, p, path);
        self.verdicts
            .entry((p.machine, p.is_64))
            .or_default()
            .insert(path.to_string(), v.clone());
        v
    }

    fn verify_uncached(&mut self, root: &Root, p: &Platform, path: &str) -> Verdict {
        use std::os::unix::fs::MetadataExt;
        let real = match self.resolve(root, path) {
            Some(r) => r,
            None => return Verdict::Absent,
        };
        let real_s = real.to_string_lossy().into_owned();
        if let Some(c) = self.seen.get(&real_s) {
            // Read before, perhaps for a loader of another class or machine (`doctor` resolves 32-bit and
            // 64-bit programs with one `Files`).
            return check_header(c.view.data.prefix(64), p).unwrap_or_else(|| Verdict::Ok(c.clone()));
        }
        let host = root.host_path(&real);
        // One open and one map per file for the whole run: the header check, the loader facts and, later, the
        // symbol reads all use this map.
        // Opened without blocking: a FIFO under a root must not hang the search.
        let (file, meta) = match crate::system::read::open(&host).map_err(std::io::Error::from) {
            Ok(x) => x,
            Err(e) if is_absent(&e) => return Verdict::Absent,
            Err(e) => return Verdict::Unreadable(e.to_string()),
        };
        if meta.is_dir() {
            return Verdict::Absent;
        }
        if !meta.is_file() {
            // A device or a pipe: its first bytes decide, as `open_verify`'s read does; nothing more is read.
            let mut head = [0u8; 64];
            let n = match read_up_to(&mut &file, &mut head) {
                Ok(n) => n,
                Err(e) => return Verdict::Unreadable(e.to_string()),
            };
            return check_header(&head[..n], p)
                .unwrap_or_else(|| Verdict::Invalid("not a regular file".into()));
        }
        let ahead = self
            .ahead
            .remove(&real_s)
            .and_then(|done| done.wait_urgent(&self.pool).into_iter().next().flatten());
        let data = match &ahead {
            Some(v) => v.data.clone(),
            None => match inspect::source::map_open_with(&file, &meta) {
                Ok(m) => Arc::new(m),
                Err(e) => return Verdict::Unreadable(e.to_string()),
            },
        };
        if let Some(v) = check_header(data.prefix(64), p) {
            return v;
        }
        let view = match ahead {
            Some(v) => v,
            None => Arc::new(inspect::loader_view_of(data, inspect::RodataScan::CudaObjects)),
        };
        if view.elf.is_none() {
            return Verdict::Invalid("invalid ELF header".into());
        }
        let c = Arc::new(Candidate {
            realpath: real_s.clone(),
            id: (meta.dev(), meta.ino()),
            view,
            host,
        });
        self.seen.insert(real_s, c.clone());
        Verdict::Ok(c)
    }
}

/// Starts the search of `view`'s `.rodata` (of the file at `host`) for `dlopen` names on `pool`, in parts of
/// 1 MB: one object's search spreads over the cores (the run-time loads found in one object are resolved, and
/// their own objects searched, before the next). `None` when there is nothing to search. A library the
/// bundled table knows ([`super::dlopen_table`]: NVIDIA's, by build ID) is not searched: the table holds
/// what the search finds in it.
fn search_rodata(pool: &mut Pool, view: &LoaderView, host: &Path) -> Option<Arc<Parts<(String, u64)>>> {
    let parts: Vec<inspect::RodataPart> = view
        .rodata
        .iter()
        .flat_map(|&(start, size)| inspect::rodata_parts(start, size, PIECE))
        .collect();
    if parts.is_empty() {
        return None;
    }
    if let Some(strings) = super::dlopen_table::known(view) {
        let found = Arc::new(Parts::new(1));
        found.add(strings);
        return Some(found);
    }
    // One open for all the parts (a path lookup per megabyte added up to a hundred opens for PyTorch's tree).
    let Ok(file) = crate::system::read::open_regular(host).map(|(f, _)| Arc::new(f)) else {
        return None;
    };
    let found = Arc::new(Parts::new(parts.len()));
    for part in parts {
        let (found, file) = (found.clone(), file.clone());
        pool.submit(move || found.add(inspect::rodata_strings(&file, part, DLOPEN_NEEDLES)));
    }
    Some(found)
}

/// `/etc/ld.so.cache` under `root`, parsed, with a one-line description (or why it cannot be used).
fn read_ld_cache(root: &Root) -> (Option<LdCache>, String) {
    match root.read(Path::new("/etc/ld.so.cache"), crate::system::read::LD_SO_CACHE) {
        Ok(d) => match LdCache::parse(&d) {
            Ok(c) => {
                let note = format!(
                    "/etc/ld.so.cache ({} format, {} entries)",
                    c.format,
                    c.entries.len()
                );
                (Some(c), note)
            }
            Err(err) => (None, format!("/etc/ld.so.cache is unusable: {}", err.0)),
        },
        Err(err) => (None, format!("/etc/ld.so.cache cannot be read: {err}")),
    }
}

/// An `open` error that means no file is there (ld.so goes on to the next directory).
fn is_absent(e: &std::io::Error) -> bool {
    // ENOENT, ENOTDIR, ENAMETOOLONG, ELOOP (Linux numbers: the loader emulation reads Linux machines).
    e.kind() == std::io::ErrorKind::NotFound || matches!(e.raw_os_error(), Some(2 | 20 | 36 | 40))
}

fn read_up_to(f: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// `open_verify`'s header checks. `None`: acceptable.
pub fn check_header(h: &[u8], p: &Platform) -> Option<Verdict> {
    if h.len() < 52 {
        return Some(Verdict::Invalid("file too short".into()));
    }
    if &h[..4] != b"\x7fELF" {
        return Some(Verdict::Invalid("invalid ELF header".into()));
    }
    let is_64 = h[4] == 2;
    if h[4] != 1 && h[4] != 2 {
        return Some(Verdict::Invalid("invalid ELF header".into()));
    }
    if is_64 != p.is_64 {
        return Some(Verdict::WrongClass(
            if is_64 { "ELFCLASS64" } else { "ELFCLASS32" }.into(),
        ));
    }
    if h[5] != 1 {
        return Some(Verdict::Invalid(
            "ELF file data encoding not little-endian".into(),
        ));
    }
    if h[6] != 1 {
        return Some(Verdict::Invalid(
            "ELF file version ident does not match current one".into(),
        ));
    }
    // ELFOSABI_SYSV or ELFOSABI_GNU.
    if h[7] != 0 && h[7] != 3 {
        return Some(Verdict::Invalid("ELF file OS ABI invalid".into()));
    }
    let machine = u16::from_le_bytes([h[18], h[19]]);
    if machine != p.machine {
        return Some(Verdict::WrongMachine(crate::inspect::elf::machine_name(machine)));
    }
    let ty = u16::from_le_bytes([h[16], h[17]]);
    // ET_EXEC (2) and ET_DYN (3).
    if ty != 2 && ty != 3 {
        return Some(Verdict::Invalid("only ET_DYN and ET_EXEC can be loaded".into()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asks `Files::may_hold` about `name` in `/lib` under `root`, `times` times; the last answer.
    fn ask(listings: &mut HashMap<std::path::PathBuf, Listing>, root: &Root, name: &str, times: u32) -> bool {
        let mut last = true;
        for _ in 0..times {
            last = Files::may_hold(listings, root, Path::new("/lib"), std::ffi::OsStr::new(name));
        }
        last
    }

    #[test]
    fn a_small_directory_asked_about_often_is_listed_once() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("lib")).unwrap();
        std::fs::write(t.path().join("lib/libfoo.so.1"), b"").unwrap();
        let root = Root::at(t.path());
        let mut listings = HashMap::default();
        // Before it is listed, every name may be there.
        assert!(ask(&mut listings, &root, "libmissing.so", 1));
        assert!(matches!(listings.get(Path::new("/lib")), Some(Listing::Asked(1))));
        assert!(!ask(&mut listings, &root, "libmissing.so", 5));
        assert!(matches!(listings.get(Path::new("/lib")), Some(Listing::Names(_))));
        assert!(ask(&mut listings, &root, "libfoo.so.1", 1));
    }

    #[test]
    fn a_large_directory_is_never_listed() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("lib")).unwrap();
        // More entries than a listing keeps, with names as long as a system directory's: larger than
        // `MAX_SIZE` on file systems that size directories by their entries (ext4), more than `MAX_ENTRIES`
        // on the others.
        for i in 0..600 {
            std::fs::write(
                t.path().join(format!("lib/libsomething-rather-long-{i}.so.12")),
                b"",
            )
            .unwrap();
        }
        let root = Root::at(t.path());
        let mut listings = HashMap::default();
        assert!(ask(&mut listings, &root, "libmissing.so", 10));
        assert!(matches!(listings.get(Path::new("/lib")), Some(Listing::Unlisted)));
        assert!(ask(&mut listings, &root, "libsomething-rather-long-599.so.12", 1));
    }
}
