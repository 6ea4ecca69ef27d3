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
use crate::inspect::{self, LoaderView};
use crate::parallel::{Parts, Pool};
use crate::system::Root;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

/// Strings searched in `.rodata` for `dlopen` names (see [`super::dlopen`]).
pub const DLOPEN_NEEDLES: &[&[u8]] = &[
    b"libcuda.so",
    b"libnvidia-ml.so",
    b"libnvrtc-builtins",
    b"libnvJitLink.so",
    b"libcudnn",
    b"libnvrtc.so",
    b"libcupti.so",
];

/// The verdict on one candidate file.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Loadable: its real path, file identity and view.
    Ok(Rc<Candidate>),
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
    /// The search of its `.rodata` for strings that name a library it may `dlopen` ([`DLOPEN_NEEDLES`]),
    /// running on [`Files`]' pool from the moment the file was read; `None`: nothing to search.
    pub strings: Option<Arc<Parts<(String, u64)>>>,
}

impl Candidate {
    /// Its `.rodata` strings that name a library it may `dlopen`, in file order, each once (at its first
    /// offset); waits for the search to finish, helping it along.
    pub fn dlopen_strings(&self, files: &Files) -> Vec<(String, u64)> {
        let Some(parts) = &self.strings else {
            return Vec::new();
        };
        let mut list: Vec<(String, u64)> = Vec::new();
        for (s, off) in parts.wait(&files.pool) {
            match list.iter_mut().find(|(x, _)| *x == s) {
                // The first occurrence in the file, whichever part saw it.
                Some(e) => e.1 = e.1.min(off),
                None => list.push((s, off)),
            }
        }
        list.sort_by_key(|&(_, off)| off);
        list
    }
}

/// Reads and remembers candidate files, and what is read once per machine (the platform, `ld.so.cache`).
/// One `Files` serves one root.
#[derive(Debug, Default)]
pub struct Files {
    seen: HashMap<String, Rc<Candidate>>,
    platforms: HashMap<(u16, bool, Option<String>), Rc<Platform>>,
    ld_cache: Option<Rc<(Option<LdCache>, String)>>,
    /// Directories already resolved to real paths (`None`: missing), so that a name tried in the same
    /// directory for every library costs one `lstat`, not one per component of the directory.
    dirs: HashMap<String, Option<std::path::PathBuf>>,
    /// What each host path met while resolving is ([`Root::link_of`]): the same directories are reached
    /// through many spellings (`torch/lib/../../nvidia/cu13/lib`, `nvidia/cu13/lib`).
    links: HashMap<std::path::PathBuf, Result<Option<std::path::PathBuf>, std::io::ErrorKind>>,
    /// [`super::search::Context::intended`] answers, by platform, directories and name.
    pub(super) intended: HashMap<String, Option<super::Intended>>,
    /// Where the `.rodata` searches and the read-ahead run, while the tree is resolved.
    pool: Pool,
    /// Files read ahead on the pool ([`Files::read_ahead`]), by real path; taken by [`Files::verify`].
    ahead: HashMap<String, Arc<Parts<Option<Arc<LoaderView>>>>>,
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

    /// The worker threads of this run's background reads.
    pub fn pool(&mut self) -> &mut Pool {
        &mut self.pool
    }

    /// Starts reading, on the pool, the loader facts of the files at `paths` (machine paths the loader is
    /// likely to try next: a new object's needed names in its RUNPATH or RPATH and in `ld.so.cache`), so that
    /// [`Files::verify`] finds them parsed. Parsing is a pure function of the file: a file read ahead and not
    /// chosen costs only the work. Missing files, files already read and paths already queued are skipped.
    pub fn read_ahead(&mut self, root: &Root, paths: impl IntoIterator<Item = String>) {
        // Speculative work pays only with cores to spare: on two, the workers are busy with `.rodata`
        // (measured: 2 ms slower on a 2-core box, 1-3 ms faster on 16 cores for PyTorch's tree).
        if self.pool.threads() < 3 {
            return;
        }
        for path in paths {
            let Some(real) = self.resolve(root, &path) else {
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

    /// Starts searching the `.rodata` ranges of `view` (in the file at `host`) for `dlopen` names, on the
    /// pool, in parts of a few MB: for a large tree (PyTorch's CUDA libraries hold 150 MB of read-only data,
    /// 46 MB of it in cuBLASLt) this is most of the loader's reading, and it runs while the rest of the tree
    /// is resolved.
    pub fn search_rodata(&mut self, view: &LoaderView, host: &Path) -> Option<Arc<Parts<(String, u64)>>> {
        const PIECE: u64 = 4 << 20;
        let parts: Vec<inspect::RodataPart> = view
            .rodata
            .iter()
            .flat_map(|&(start, size)| inspect::rodata_parts(start, size, PIECE))
            .collect();
        if parts.is_empty() {
            return None;
        }
        let found = Arc::new(Parts::new(parts.len()));
        for part in parts {
            let (found, host) = (found.clone(), host.to_path_buf());
            self.pool
                .submit(move || found.add(inspect::rodata_strings(&host, part, DLOPEN_NEEDLES)));
        }
        Some(found)
    }

    /// The loader's view of the machine for objects of `machine`/`is_64` with interpreter `interp`.
    pub fn platform(&mut self, root: &Root, machine: u16, is_64: bool, interp: Option<&str>) -> Rc<Platform> {
        self.platforms
            .entry((machine, is_64, interp.map(str::to_string)))
            .or_insert_with(|| Rc::new(Platform::detect(root, machine, is_64, interp)))
            .clone()
    }

    /// `/etc/ld.so.cache`, parsed, with a one-line description (or why it cannot be used).
    pub fn ld_cache(&mut self, root: &Root) -> Rc<(Option<LdCache>, String)> {
        self.ld_cache
            .get_or_insert_with(|| {
                Rc::new(match root.read(Path::new("/etc/ld.so.cache")) {
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
                })
            })
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
        // The file through the same memo: the read-ahead, the search and the RUNPATH-intended lookup try the
        // same paths.
        root.resolve_from_with(real_dir, Path::new(name), &mut link_of)
            .ok()
    }

    /// Verifies `path` (a machine path) for the loader of `p`.
    pub fn verify(&mut self, root: &Root, p: &Platform, path: &str) -> Verdict {
        use std::os::unix::fs::MetadataExt;
        let real = match self.resolve(root, path) {
            Some(r) => r,
            None => return Verdict::Absent,
        };
        let real_s = real.to_string_lossy().into_owned();
        if let Some(c) = self.seen.get(&real_s) {
            return Verdict::Ok(c.clone());
        }
        let host = root.host_path(&real);
        let meta = match std::fs::metadata(&host) {
            Ok(m) => m,
            Err(_) => return Verdict::Absent,
        };
        if meta.is_dir() {
            return Verdict::Absent;
        }
        let mut head = [0u8; 64];
        let n = match std::fs::File::open(&host).and_then(|mut f| read_up_to(&mut f, &mut head)) {
            Ok(n) => n,
            Err(e) => return Verdict::Unreadable(e.to_string()),
        };
        if let Some(v) = check_header(&head[..n], p) {
            return v;
        }
        let ahead = self
            .ahead
            .remove(&real_s)
            .and_then(|done| done.wait(&self.pool).into_iter().next().flatten());
        let view = match ahead {
            Some(v) => v,
            None => match inspect::loader_view(&host, inspect::RodataScan::CudaObjects) {
                Ok(v) => Arc::new(v),
                Err(e) => return Verdict::Unreadable(e.to_string()),
            },
        };
        if view.elf.is_none() {
            return Verdict::Invalid("invalid ELF header".into());
        }
        let strings = self.search_rodata(&view, &host);
        let c = Rc::new(Candidate {
            realpath: real_s.clone(),
            id: (meta.dev(), meta.ino()),
            view,
            host,
            strings,
        });
        self.seen.insert(real_s, c.clone());
        Verdict::Ok(c)
    }
}

fn read_up_to(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
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
