//! A filesystem root: every absolute path of the diagnosed machine is read under it.
//!
//! Symbolic links are resolved *inside* the root: an absolute link target (`/usr/lib/x`) is re-rooted, and
//! `..` never climbs above the root. This is what `chroot` would do, and what makes `--root /mnt/customer`
//! safe and faithful.

use super::read::{self, Limit, ReadError};
use foldhash::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

/// Symbolic links followed while resolving one path before giving up (Linux's own limit is 40).
pub const MAX_LINKS: usize = 40;

/// Directories, symbolic links and missing names remembered by [`Root::link_of`] at most (a few MB of paths):
/// past it, each lookup is a system call again. Regular files are never remembered, so the memo is bounded by
/// the directories, links and absent names a run looks up, not by the files it reads.
const MEMO_ENTRIES: usize = 1 << 16;

/// Directory entries a remembering root keeps ([`Root::read_dir_names`]), all directories together (some MB of
/// names); past them, directories are listed each time.
const MEMO_NAMES: usize = 1 << 18;

/// Entries of one directory a remembering root keeps at most: a larger one is listed each time, keeping only
/// what the caller keeps (`/usr/lib/x86_64-linux-gnu` holds a few thousand, a `site-packages` hundreds).
const MEMO_DIR_NAMES: usize = 1 << 15;

/// Bytes of text files a remembering root keeps ([`Root::read_text`]); past them, files are read each time.
const MEMO_TEXT_BYTES: u64 = 64 << 20;

/// What a remembering root ([`Root::remembering`]) has learnt: for each host path met while resolving, what
/// is there; text files read whole, by real machine path; and directories' entries, by real machine path
/// (with how many names are kept in all).
#[derive(Default)]
struct Memo {
    links: RwLock<HashMap<PathBuf, Seen>>,
    texts: Mutex<(u64, HashMap<PathBuf, Arc<String>>)>,
    listings: RwLock<(usize, Listings)>,
    derived: Mutex<(u64, Derived)>,
}

/// What callers made of files ([`Root::remember`]), by real machine path and the type made.
type Derived = HashMap<(PathBuf, std::any::TypeId), Arc<dyn std::any::Any + Send + Sync>>;

/// Directories' sorted entries, by real machine path.
type Listings = HashMap<PathBuf, Arc<[OsString]>>;

/// What a host path is, for path resolution, as a remembering root keeps it.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Dir,
    Link(PathBuf),
    /// Nothing by that name (`ENOENT`): Python's `sys.path` search and the loader's directory search ask
    /// for the same absent names again and again (`python311.zip`, `lib-dynload/nvidia`: fifty times each
    /// in one `inspect` of a PyTorch library).
    Missing,
}

/// The root of the diagnosed machine's filesystem.
#[derive(Clone)]
pub struct Root {
    dir: PathBuf,
    /// Shared by the clones of a remembering root.
    memo: Option<Arc<Memo>>,
}

impl PartialEq for Root {
    fn eq(&self, other: &Root) -> bool {
        self.dir == other.dir
    }
}

impl Eq for Root {}

impl std::fmt::Debug for Root {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Root").field("dir", &self.dir).finish()
    }
}

impl Default for Root {
    fn default() -> Self {
        Root::host()
    }
}

impl Root {
    /// The live machine: `/`.
    pub fn host() -> Root {
        Root::at("/")
    }

    /// A mounted or unpacked filesystem at `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Root {
        Root {
            dir: dir.into(),
            memo: None,
        }
    }

    /// The same root, remembering for the rest of its life (and its clones') which path components are
    /// directories, where links point and which names are absent, and what directories hold: a run that
    /// resolves thousands of paths through the same few dozen directories (a venv's `site-packages`,
    /// `/usr/lib`) asks the kernel once per component instead of once per component per path (`import torch`:
    /// 3,300 `statx` calls for 409 distinct paths), and lists a directory once however many parts of it ask
    /// (`nvidia/cu13/lib`, globbed by torch's preload of each wheel: 23 times in one `inspect`). Only for a
    /// filesystem that does not change under the run: never while a root is being written (an image's layers
    /// being applied), where a directory may become a link and a missing file appear.
    pub fn remembering(mut self) -> Root {
        self.memo = Some(Arc::default());
        self
    }

    /// Is this the live machine's own root?
    pub fn is_host(&self) -> bool {
        self.dir == Path::new("/")
    }

    /// The directory acting as `/`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the machine's absolute path `path` lives on this host, without resolving links.
    /// Relative paths are taken as relative to the root's `/`.
    pub fn host_path(&self, path: &Path) -> PathBuf {
        self.host_path_plain(path)
            .unwrap_or_else(|| self.host_path_components(path))
    }

    /// [`Root::host_path`], one component at a time: `..` stops at the root, `.` and `/` are dropped.
    fn host_path_components(&self, path: &Path) -> PathBuf {
        let mut out = self.dir.clone();
        for c in path.components() {
            match c {
                Component::Normal(n) => out.push(n),
                Component::ParentDir => {
                    if out != self.dir {
                        out.pop();
                    }
                }
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        out
    }

    /// [`Root::host_path`] of a plain absolute path (`/a/b`: no `.`, `..` or empty component, no trailing
    /// slash), the common case, as one concatenation instead of a push per component; `None` for anything
    /// else, which takes the general way. Pushing `a` then `b` onto the root's directory appends `/a/b` (or
    /// `a/b` when the directory ends in `/`), which is what this writes.
    fn host_path_plain(&self, path: &Path) -> Option<PathBuf> {
        let p = path.as_os_str().as_bytes();
        let rest = p.strip_prefix(b"/")?;
        if !rest
            .split(|&b| b == b'/')
            .all(|c| !c.is_empty() && c != b"." && c != b"..")
        {
            return None;
        }
        let dir = self.dir.as_os_str().as_bytes();
        if dir.is_empty() {
            return None;
        }
        let tail = if dir.ends_with(b"/") { rest } else { p };
        let mut out = Vec::with_capacity(dir.len() + tail.len());
        out.extend_from_slice(dir);
        out.extend_from_slice(tail);
        Some(PathBuf::from(OsString::from_vec(out)))
    }

    /// Reads a whole regular file of the machine, links followed inside the root, refusing anything larger
    /// than `limit` (see [`super::read`]: devices, FIFOs and oversized files are errors that say so).
    pub fn read(&self, path: &Path, limit: Limit) -> Result<Vec<u8>, ReadError> {
        read::read(&self.host_path(&self.resolve(path)?), limit)
    }

    /// Opens a file of the machine for reading, links followed inside the root, without blocking on a FIFO.
    /// Any file type is opened: for reading a header of whatever is there, as the loader does.
    pub fn open(&self, path: &Path) -> io::Result<std::fs::File> {
        Ok(read::open(&self.host_path(&self.resolve(path)?))?.0)
    }

    /// Reads the whole regular text file `path`, links followed inside the root, within `limit`. The directory
    /// is resolved and the last name opened as it is, refusing a link (`O_NOFOLLOW`): a file costs no `lstat`
    /// of its own (a Python environment's two hundred `METADATA` at every run). Only a link there is resolved
    /// in full.
    pub fn read_to_string(&self, path: &Path, limit: Limit) -> Result<String, ReadError> {
        if let Some(real) = self.real_unless_link(path)?
            && let Some(text) = self.read_unlinked(&real, limit)?
        {
            return Ok(text);
        }
        read::read_to_string(&self.host_path(&self.resolve(path)?), limit)
    }

    /// The text at `real` ([`Root::real_unless_link`]'s answer), or `None` when its last name is a link after
    /// all: the caller resolves it in full.
    fn read_unlinked(&self, real: &Path, limit: Limit) -> Result<Option<String>, ReadError> {
        match read::read_to_string_unlinked(&self.host_path(real), limit) {
            Err(e) if is_link(&e) => Ok(None),
            read => read.map(Some),
        }
    }

    /// The real path of `path` if its last component is not a link: its directory resolved, its last name as it
    /// is. `None` for a path that ends in `..` or names the root.
    fn real_unless_link(&self, path: &Path) -> io::Result<Option<PathBuf>> {
        match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) => Ok(Some(self.resolve(dir)?.join(name))),
            _ => Ok(None),
        }
    }

    /// [`Root::read_to_string`], shared: a remembering root reads a file once for every part of a run that
    /// asks (a Python distribution's `RECORD`, 1.3 MB for torch's, is read by the environment's model, the
    /// owner of each library and the search for copies), up to [`MEMO_TEXT_BYTES`] in all. The text is the
    /// `String` the read filled, shared as it is (an `Arc<str>` would copy torch's 1.3 MB into a new allocation).
    pub fn read_text(&self, path: &Path, limit: Limit) -> Result<Arc<String>, ReadError> {
        let Some(memo) = &self.memo else {
            return self.read_to_string(path, limit).map(Arc::new);
        };
        let remembered = |real: &Path| {
            memo.texts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .1
                .get(real)
                .cloned()
                .filter(|t| t.len() as u64 <= limit.bytes)
        };
        // As `read_to_string`, the memo asked first for the path as it is, then for a link's target.
        let leaf = self.real_unless_link(path)?;
        if let Some(text) = leaf.as_deref().and_then(remembered) {
            return Ok(text);
        }
        let unlinked = match &leaf {
            Some(real) => self.read_unlinked(real, limit)?,
            None => None,
        };
        let (real, text) = match (leaf, unlinked) {
            (Some(real), Some(text)) => (real, text),
            _ => {
                let real = self.resolve(path)?;
                if let Some(text) = remembered(&real) {
                    return Ok(text);
                }
                let text = read::read_to_string(&self.host_path(&real), limit)?;
                (real, text)
            }
        };
        let text = Arc::new(text);
        let mut texts = memo
            .texts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let size = text.len() as u64;
        if texts.0.saturating_add(size) <= MEMO_TEXT_BYTES {
            texts.0 += size;
            texts.1.insert(real, text.clone());
        }
        Ok(text)
    }

    /// Reads the regular text file `path` a piece at a time ([`read::lines_in`]: runs of whole lines, through
    /// this thread's scan buffer), links followed inside the root as [`Root::read_to_string`] follows them: for
    /// a large file of which the caller keeps little. Returns the bytes read.
    pub fn read_lines(
        &self,
        path: &Path,
        limit: Limit,
        mut each: impl FnMut(&[u8]),
    ) -> Result<u64, ReadError> {
        let unlinked = match self.real_unless_link(path)? {
            Some(real) => match read::open_regular_unlinked(&self.host_path(&real)) {
                Err(e) if is_link(&e) => None,
                opened => Some(opened?),
            },
            None => None,
        };
        let (file, meta) = match unlinked {
            Some(opened) => opened,
            None => read::open_regular(&self.host_path(&self.resolve(path)?))?,
        };
        read::with_scan_buffer(read::LINES_CHUNK, |buf| {
            read::lines_in(file, &meta, limit, buf, &mut each)
        })
    }

    /// What `make` makes of the file at `path`, made once per run by a remembering root and shared by every
    /// part of the run that asks (what pip's `RECORD` of torch lists of libraries: the owner of the inspected
    /// file, the owners of what it loads and the search for copies each ask), up to [`MEMO_TEXT_BYTES`] in
    /// all, by the bytes `make` says its answer holds. Remembered by the file's real path (its directory
    /// resolved) and the type made; a root that does not remember makes it each time.
    pub fn remember<T: Send + Sync + 'static>(&self, path: &Path, make: impl FnOnce() -> (T, u64)) -> Arc<T> {
        let key = match (&self.memo, self.real_unless_link(path)) {
            (Some(_), Ok(Some(real))) => Some((real, std::any::TypeId::of::<T>())),
            _ => None,
        };
        let (Some(memo), Some(key)) = (&self.memo, key) else {
            return Arc::new(make().0);
        };
        let lock = || {
            memo.derived
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let known = |derived: &Derived| derived.get(&key).cloned().and_then(|k| k.downcast::<T>().ok());
        if let Some(known) = known(&lock().1) {
            return known;
        }
        let (made, size) = make();
        let made = Arc::new(made);
        let mut derived = lock();
        // Another thread may have made it meanwhile: its answer is the one shared, counted once.
        if let Some(known) = known(&derived.1) {
            return known;
        }
        if derived.0.saturating_add(size) <= MEMO_TEXT_BYTES {
            derived.0 += size;
            derived.1.insert(key, made.clone());
        }
        made
    }

    /// Metadata of the file `path` names, links followed inside the root.
    pub fn metadata(&self, path: &Path) -> io::Result<std::fs::Metadata> {
        std::fs::metadata(self.host_path(&self.resolve(path)?))
    }

    /// Is `path` a directory (links followed inside the root)? A remembering root that met it as one while
    /// resolving answers without a `stat` (the frameworks' searches ask of the same `nvidia` directories
    /// again and again).
    pub fn is_dir(&self, path: &Path) -> bool {
        match self.kind_of(path) {
            Ok(None) => true,
            Ok(Some(m)) => m.is_dir(),
            Err(_) => false,
        }
    }

    /// Is `path` a regular file (links followed inside the root)? As [`Root::is_dir`], a directory the root
    /// remembers is answered without a `stat`.
    pub fn is_file(&self, path: &Path) -> bool {
        matches!(self.kind_of(path), Ok(Some(m)) if m.is_file())
    }

    /// `path` resolved: `None` when the root remembers the result as a directory, else its metadata.
    fn kind_of(&self, path: &Path) -> io::Result<Option<std::fs::Metadata>> {
        let host = self.host_path(&self.resolve(path)?);
        let known = self.memo.as_ref().is_some_and(|memo| {
            let links = memo
                .links
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            matches!(links.get(&host), Some(Seen::Dir))
        });
        if known {
            return Ok(None);
        }
        std::fs::metadata(host).map(Some)
    }

    /// Metadata of `path` itself (its last component is not followed when it is a link; the directories
    /// above it are resolved inside the root).
    pub fn symlink_metadata(&self, path: &Path) -> io::Result<std::fs::Metadata> {
        let parent = match path.parent() {
            Some(p) => self.resolve(p)?,
            None => PathBuf::from("/"),
        };
        let host = match path.file_name() {
            Some(name) => self.host_path(&parent).join(name),
            None => self.host_path(&parent),
        };
        std::fs::symlink_metadata(host)
    }

    /// Entries of a directory of the machine, as machine paths, sorted by name.
    pub fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        Ok(self
            .read_dir_names(path, |_| true)?
            .into_iter()
            .map(|n| path.join(n))
            .collect())
    }

    /// The names of a directory's entries that `keep` accepts, sorted, in [`Root::read_dir`]'s order: for a
    /// caller that chooses by name among thousands (`/var/lib/dpkg/info`, a site-packages) before it needs
    /// a path, and sorts only what it keeps.
    pub fn read_dir_names(&self, path: &Path, keep: impl FnMut(&OsStr) -> bool) -> io::Result<Vec<OsString>> {
        self.read_dir_names_within(path, usize::MAX, keep)
    }

    /// [`Root::read_dir_names`], at most `max` of them: of a directory with more, `max` of those `keep`
    /// accepts, which ones unspecified (a hostile tree's directory of millions of names is not held whole).
    pub fn read_dir_names_within(
        &self,
        path: &Path,
        max: usize,
        mut keep: impl FnMut(&OsStr) -> bool,
    ) -> io::Result<Vec<OsString>> {
        let resolved = self.resolve(path)?;
        let Some(memo) = &self.memo else {
            return self.read_dir_names_uncached(&resolved, max, keep);
        };
        let known = memo
            .listings
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .1
            .get(&resolved)
            .cloned();
        let all = match known {
            Some(all) => all,
            None => {
                let mut names = self.entries(&resolved)?;
                let mut all: Vec<OsString> = names.by_ref().take(MEMO_DIR_NAMES + 1).collect();
                // A directory of more than MEMO_DIR_NAMES entries is not remembered (it would hold all of its
                // names): what the caller keeps of the names read so far and of the rest, in the same pass.
                if all.len() > MEMO_DIR_NAMES {
                    return Ok(sorted(
                        all.into_iter()
                            .chain(names)
                            .filter(|n| keep(n))
                            .take(max)
                            .collect(),
                    ));
                }
                all.sort_unstable();
                let all: Arc<[OsString]> = all.into();
                let mut listings = memo
                    .listings
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                // Another thread may have listed it meanwhile: its names count once.
                if !listings.1.contains_key(&resolved) && listings.0.saturating_add(all.len()) <= MEMO_NAMES {
                    listings.0 += all.len();
                    listings.1.insert(resolved, all.clone());
                }
                all
            }
        };
        Ok(all.iter().filter(|n| keep(n)).take(max).cloned().collect())
    }

    /// [`Root::read_dir_names_within`] of the resolved machine path `resolved`, asked of the kernel: the first
    /// `max` names `keep` accepts, in the directory's own order, then sorted.
    fn read_dir_names_uncached(
        &self,
        resolved: &Path,
        max: usize,
        mut keep: impl FnMut(&OsStr) -> bool,
    ) -> io::Result<Vec<OsString>> {
        Ok(sorted(
            self.entries(resolved)?.filter(|n| keep(n)).take(max).collect(),
        ))
    }

    /// The names in the directory at the resolved machine path `resolved`, in the directory's own order.
    fn entries(&self, resolved: &Path) -> io::Result<impl Iterator<Item = OsString> + use<>> {
        Ok(std::fs::read_dir(self.host_path(resolved))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name()))
    }

    /// Does `path` exist (links followed inside the root)? Resolving it looks at every component, the last
    /// included (a dangling link fails there): no `stat` of the result is needed, and a remembering root
    /// answers again without any.
    pub fn exists(&self, path: &Path) -> bool {
        self.resolve(path).is_ok()
    }

    /// The machine's real path of `path` (absolute, every link resolved inside the root, no `.` or `..`).
    /// Fails on a missing component or a link loop.
    pub fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        self.resolve_from(PathBuf::from("/"), path)
    }

    /// [`Root::resolve`] of `rest` taken relative to `base`, a directory already resolved (a real path of the
    /// machine): only the components of `rest` are examined. For the loader, which tries one name in each of
    /// a few directories many times over.
    pub fn resolve_from(&self, base: PathBuf, rest: &Path) -> io::Result<PathBuf> {
        self.resolve_from_with(base, rest, &mut |host| self.link_of(host))
    }

    /// What `host` (a host path) is for path resolution: `Some(target)` for a symbolic link, `None` for
    /// anything else that exists, an error when it is missing or unreadable.
    pub fn link_of(&self, host: &Path) -> io::Result<Option<PathBuf>> {
        let Some(memo) = &self.memo else {
            return Self::link_of_uncached(host).map(|(link, _)| link);
        };
        let known = memo
            .links
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(host)
            .cloned();
        match known {
            Some(Seen::Dir) => return Ok(None),
            Some(Seen::Link(target)) => return Ok(Some(target)),
            // The error the kernel gave the first time, message and all.
            Some(Seen::Missing) => return Err(io::Error::from_raw_os_error(libc::ENOENT)),
            None => {}
        }
        let (answer, seen) = match Self::link_of_uncached(host) {
            Ok((Some(target), _)) => (Ok(Some(target.clone())), Some(Seen::Link(target))),
            Ok((None, dir)) => (Ok(None), dir.then_some(Seen::Dir)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => (Err(e), Some(Seen::Missing)),
            Err(e) => (Err(e), None),
        };
        if let Some(seen) = seen {
            let mut map = memo
                .links
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if map.len() < MEMO_ENTRIES {
                map.insert(host.to_path_buf(), seen);
            }
        }
        answer
    }

    /// [`Root::link_of`] asked of the kernel, and whether the answer may be remembered (a link or a directory).
    fn link_of_uncached(host: &Path) -> io::Result<(Option<PathBuf>, bool)> {
        let meta = std::fs::symlink_metadata(host)?;
        if meta.file_type().is_symlink() {
            std::fs::read_link(host).map(|t| (Some(t), true))
        } else {
            Ok((None, meta.is_dir()))
        }
    }

    /// [`Root::resolve_from`] with the link lookups answered by `link_of` (a caller that resolves many
    /// paths through the same directories remembers them; see [`Root::link_of`]).
    pub fn resolve_from_with(
        &self,
        base: PathBuf,
        rest: &Path,
        link_of: &mut dyn FnMut(&Path) -> io::Result<Option<PathBuf>>,
    ) -> io::Result<PathBuf> {
        // What is left to resolve: `rest` from byte `pos` on, until a link is met; then the link's target followed
        // by what was left, held here. Each component is a slice of it: no allocation per component.
        let mut owned: Option<OsString> = None;
        let mut pos = 0usize;
        let mut out = base;
        // `host` is always `self.host_path(&out)`: a name pushed onto `out` is pushed onto it too, and it is
        // computed again only when `out` shrinks (`..`, a link), so each step costs one push, not a rebuild.
        let mut host = self.host_path(&out);
        let mut links = 0usize;
        loop {
            let left = owned.as_deref().unwrap_or(rest.as_os_str()).as_bytes();
            while left.get(pos) == Some(&b'/') {
                pos += 1;
            }
            if pos >= left.len() {
                break;
            }
            let end = memchr::memchr(b'/', &left[pos..]).map_or(left.len(), |i| pos + i);
            let part = OsStr::from_bytes(&left[pos..end]);
            pos = end;
            if part == ".." {
                out.pop();
                host = self.host_path(&out);
                continue;
            }
            if part == "." {
                continue;
            }
            out.push(part);
            host.push(part);
            if let Some(target) = link_of(&host)? {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::other(format!(
                        "too many levels of symbolic links at {}",
                        out.display()
                    )));
                }
                out.pop();
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                host = self.host_path(&out);
                let mut next = target.into_os_string();
                next.push("/");
                next.push(OsStr::from_bytes(&left[pos..]));
                owned = Some(next);
                pos = 0;
            }
        }
        Ok(out)
    }
}

/// Is `e` the refusal of `O_NOFOLLOW` to open a symbolic link?
fn is_link(e: &ReadError) -> bool {
    matches!(e, ReadError::Io(e) if e.raw_os_error() == Some(libc::ELOOP))
}

/// One directory's names, sorted: ordering the names' bytes orders the paths (and costs far less than comparing
/// paths component by component in a directory of thousands).
fn sorted(mut names: Vec<OsString>) -> Vec<OsString> {
    names.sort_unstable();
    names
}

/// For unit tests that build a machine tree: writes `bytes` at the machine path `path` under the directory
/// `dir`, creating the directories on the way.
#[cfg(test)]
pub fn put(dir: &Path, path: &str, bytes: &[u8]) {
    let f = dir.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(f.parent().expect("a file path")).unwrap();
    std::fs::write(f, bytes).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative links through `.`, `..`, doubled slashes and chains resolve as the kernel resolves them
    /// (`canonicalize`), component by component of each spelling.
    #[test]
    fn spellings_resolve_as_the_kernel_resolves_them() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join("a/b/c")).unwrap();
        std::fs::create_dir_all(top.join("x/y")).unwrap();
        std::fs::write(top.join("a/b/c/f.so.1"), b"").unwrap();
        let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, top.join(at)).unwrap();
        link("../../a/b", "x/y/up");
        link("up/c/", "x/y/down");
        link("./down//f.so.1", "x/y/file");
        link("c/../c/f.so.1", "a/b/g.so");
        let root = Root::at(&top).remembering();
        for spelling in [
            "/x/y/up/c/f.so.1",
            "/x/y/down/f.so.1",
            "//x/./y//file",
            "/x/y/down/../c/./f.so.1",
            "/a/b/g.so",
            "/x/y/up/g.so",
            "/x/y/up/..//b/c",
            "/x/../x/y/down/",
        ] {
            let kernel = top
                .join(spelling.trim_start_matches('/'))
                .canonicalize()
                .expect(spelling);
            let ours = root.resolve(Path::new(spelling)).unwrap();
            assert_eq!(root.host_path(&ours), kernel, "{spelling}");
        }
    }

    #[test]
    fn links_resolve_inside_the_root() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::at(t.path());
        std::fs::create_dir_all(t.path().join("usr/lib/x86_64-linux-gnu")).unwrap();
        std::fs::write(t.path().join("usr/lib/x86_64-linux-gnu/libfoo.so.1.2"), b"x").unwrap();
        std::os::unix::fs::symlink(
            "libfoo.so.1.2",
            t.path().join("usr/lib/x86_64-linux-gnu/libfoo.so.1"),
        )
        .unwrap();
        std::os::unix::fs::symlink("/usr/lib", t.path().join("lib")).unwrap();
        std::os::unix::fs::symlink("../../../../../../etc", t.path().join("escape")).unwrap();
        assert_eq!(
            root.resolve(Path::new("/lib/x86_64-linux-gnu/libfoo.so.1"))
                .unwrap(),
            Path::new("/usr/lib/x86_64-linux-gnu/libfoo.so.1.2")
        );
        assert_eq!(
            root.read(Path::new("/lib/x86_64-linux-gnu/libfoo.so.1"), read::CONFIG_TEXT)
                .unwrap(),
            b"x"
        );
        // `..` in a link cannot climb out of the root.
        assert_eq!(
            root.resolve(Path::new("/escape")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        std::os::unix::fs::symlink("loop", t.path().join("loop")).unwrap();
        assert!(root.resolve(Path::new("/loop")).is_err());
    }

    #[test]
    fn host_paths_of_plain_paths_are_the_component_walk() {
        let roots = ["/", "/srv/root", "/srv/root/", "rel", "rel/", "/srv//root", "//"];
        let paths = [
            "/",
            "/usr",
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/",
            "/usr//lib",
            "/./usr",
            "/usr/.",
            "/usr/../etc",
            "/..",
            "usr/lib",
            "",
            ".",
            "/a b/ü/.x/..y",
            "//usr",
        ];
        let mut plain = 0;
        for r in roots {
            let root = Root::at(r);
            for p in paths {
                let p = Path::new(p);
                let want = root.host_path_components(p);
                assert_eq!(root.host_path(p), want, "root {r:?}, path {p:?}");
                plain += usize::from(root.host_path_plain(p).is_some());
            }
        }
        // The plain way answered (3 plain paths under 7 roots): the comparison is not all of the general way.
        assert_eq!(plain, 21);
    }

    #[test]
    fn a_remembering_root_resolves_as_the_kernel_does_and_forgets_only_what_it_must() {
        let t = tempfile::tempdir().unwrap();
        put(t.path(), "usr/lib/libfoo.so.1.2", b"x");
        std::os::unix::fs::symlink("libfoo.so.1.2", t.path().join("usr/lib/libfoo.so.1")).unwrap();
        std::os::unix::fs::symlink("/usr/lib", t.path().join("lib")).unwrap();
        let plain = Root::at(t.path());
        let root = Root::at(t.path()).remembering();
        assert_eq!(root, plain, "the memo is not part of what a root is");
        for p in [
            "/lib/libfoo.so.1",
            "/lib/../lib/libfoo.so.1",
            "/usr/lib",
            "/lib/missing",
        ] {
            for _ in 0..2 {
                let (a, b) = (root.resolve(Path::new(p)), plain.resolve(Path::new(p)));
                assert_eq!(a.as_ref().ok(), b.as_ref().ok(), "{p}");
            }
        }
        // A missing name is remembered as missing (the run's filesystem does not change under it): written
        // later, it stays missing for this root, while a root that does not remember finds it. The error is
        // the kernel's, message and all.
        put(t.path(), "usr/lib/missing", b"y");
        let again = root.resolve(Path::new("/lib/missing")).unwrap_err();
        assert_eq!(again.raw_os_error(), Some(libc::ENOENT));
        assert_eq!(
            again.to_string(),
            plain.resolve(Path::new("/lib/nothing")).unwrap_err().to_string()
        );
        assert_eq!(
            plain.resolve(Path::new("/lib/missing")).unwrap(),
            Path::new("/usr/lib/missing")
        );
        // A regular file is not remembered as one: replaced by a link, the link is followed.
        put(t.path(), "usr/lib/plain", b"z");
        assert_eq!(
            root.resolve(Path::new("/lib/plain")).unwrap(),
            Path::new("/usr/lib/plain")
        );
        std::fs::remove_file(t.path().join("usr/lib/plain")).unwrap();
        std::os::unix::fs::symlink("libfoo.so.1.2", t.path().join("usr/lib/plain")).unwrap();
        assert_eq!(
            root.resolve(Path::new("/lib/plain")).unwrap(),
            Path::new("/usr/lib/libfoo.so.1.2")
        );
        // Directories, links and absent names are: the memo holds `/lib` (a link), `/usr`, `/usr/lib`
        // (directories) and `/usr/lib/missing`, not the regular file.
        let memo = root.memo.as_ref().unwrap().links.read().unwrap();
        assert_eq!(
            memo.get(&t.path().join("lib")),
            Some(&Seen::Link(PathBuf::from("/usr/lib")))
        );
        assert_eq!(memo.get(&t.path().join("usr/lib")), Some(&Seen::Dir));
        assert_eq!(memo.get(&t.path().join("usr/lib/missing")), Some(&Seen::Missing));
        assert!(!memo.contains_key(&t.path().join("usr/lib/libfoo.so.1.2")));
        // `/usr/lib/plain`, a link now, is remembered as one.
        assert_eq!(
            memo.get(&t.path().join("usr/lib/plain")),
            Some(&Seen::Link(PathBuf::from("libfoo.so.1.2")))
        );
    }

    #[test]
    fn a_text_read_opens_the_last_name_as_it_is_and_resolves_only_a_link_there() {
        let t = tempfile::tempdir().unwrap();
        put(t.path(), "etc/passwd", b"inside");
        put(t.path(), "d/plain", b"plain");
        std::os::unix::fs::symlink("plain", t.path().join("d/near")).unwrap();
        // Absolute and climbing targets are taken inside the root, as for any link.
        std::os::unix::fs::symlink("/etc/passwd", t.path().join("d/abs")).unwrap();
        std::os::unix::fs::symlink("../../../../etc/passwd", t.path().join("d/up")).unwrap();
        std::os::unix::fs::symlink("nothing", t.path().join("d/dangling")).unwrap();
        std::fs::create_dir(t.path().join("d/dir")).unwrap();
        let plain = Root::at(t.path());
        let root = Root::at(t.path()).remembering();
        for r in [&plain, &root] {
            let text = |p: &str| r.read_to_string(Path::new(p), read::CONFIG_TEXT);
            let shared = |p: &str| {
                r.read_text(Path::new(p), read::CONFIG_TEXT)
                    .map(|t| t.to_string())
            };
            for (path, want) in [
                ("/d/plain", "plain"),
                ("/d/near", "plain"),
                ("/d/abs", "inside"),
                ("/d/up", "inside"),
                ("/d/dir/../plain", "plain"),
                ("/d/./plain", "plain"),
            ] {
                assert_eq!(text(path).unwrap(), want, "{path}");
                assert_eq!(shared(path).unwrap(), want, "{path}");
            }
            for path in ["/d/dangling", "/d/missing", "/d/plain/x"] {
                assert!(text(path).is_err(), "{path}");
                assert!(shared(path).is_err(), "{path}");
            }
            assert!(matches!(text("/d/dir"), Err(ReadError::NotRegular { .. })));
        }
        // The memo keeps real paths: the link and its target share one text, read once.
        let memo = root.memo.as_ref().unwrap().texts.lock().unwrap();
        assert_eq!(
            memo.1
                .keys()
                .map(|k| k.to_string_lossy().into_owned())
                .collect::<std::collections::BTreeSet<_>>(),
            ["/d/plain", "/etc/passwd"].map(String::from).into()
        );
    }

    #[test]
    fn a_remembering_root_lists_a_directory_once_and_filters_each_callers_way() {
        let t = tempfile::tempdir().unwrap();
        for name in [
            "b.dist-info/METADATA",
            "a.dist-info/METADATA",
            "c.py",
            "z.dist-info/RECORD",
        ] {
            put(t.path(), &format!("site/{name}"), b"");
        }
        std::os::unix::fs::symlink("site", t.path().join("link")).unwrap();
        let plain = Root::at(t.path());
        let root = Root::at(t.path()).remembering();
        let infos = |n: &OsStr| n.to_string_lossy().ends_with(".dist-info");
        for r in [&plain, &root] {
            assert_eq!(
                r.read_dir_names(Path::new("/site"), infos).unwrap(),
                ["a.dist-info", "b.dist-info", "z.dist-info"].map(OsString::from)
            );
            assert_eq!(
                r.read_dir(Path::new("/link")).unwrap(),
                ["a.dist-info", "b.dist-info", "c.py", "z.dist-info"].map(|n| Path::new("/link").join(n))
            );
        }
        // One listing, by the directory's real path, whichever spelling asked; a file added later is not
        // seen by the remembering root (the run's filesystem does not change under it).
        put(t.path(), "site/d.dist-info/METADATA", b"");
        assert_eq!(root.read_dir_names(Path::new("/link"), infos).unwrap().len(), 3);
        assert_eq!(plain.read_dir_names(Path::new("/link"), infos).unwrap().len(), 4);
        let listings = root.memo.as_ref().unwrap().listings.read().unwrap();
        assert_eq!(listings.1.len(), 1);
        assert_eq!(listings.0, 4);
        // A directory that cannot be listed is an error each time, remembered or not.
        drop(listings);
        assert!(root.read_dir_names(Path::new("/site/c.py"), |_| true).is_err());
        assert!(root.read_dir_names(Path::new("/nowhere"), |_| true).is_err());
    }

    #[test]
    fn a_directory_too_large_to_remember_is_listed_each_time_and_max_bounds_every_listing() {
        let t = tempfile::tempdir().unwrap();
        let big = t.path().join("big");
        std::fs::create_dir(&big).unwrap();
        for i in 0..=MEMO_DIR_NAMES {
            std::fs::File::create(big.join(format!("f{i:06}"))).unwrap();
        }
        std::fs::File::create(big.join("x.dist-info")).unwrap();
        put(t.path(), "small/a", b"");
        put(t.path(), "small/b", b"");
        put(t.path(), "small/c", b"");
        let plain = Root::at(t.path());
        let root = Root::at(t.path()).remembering();
        for r in [&plain, &root] {
            let infos = r
                .read_dir_names(Path::new("/big"), |n| {
                    n.as_encoded_bytes().ends_with(b".dist-info")
                })
                .unwrap();
            assert_eq!(infos, [OsString::from("x.dist-info")]);
            assert_eq!(
                r.read_dir_names_within(Path::new("/big"), 5, |_| true)
                    .unwrap()
                    .len(),
                5
            );
            assert_eq!(
                r.read_dir_names_within(Path::new("/small"), 2, |_| true)
                    .unwrap()
                    .len(),
                2
            );
        }
        // Only the small directory is remembered: the large one's names are not held.
        let listings = root.memo.as_ref().unwrap().listings.read().unwrap();
        assert_eq!(listings.1.len(), 1);
        assert!(listings.1.contains_key(Path::new("/small")));
        assert_eq!(listings.0, 3);
    }

    #[test]
    fn a_remembering_root_reads_a_text_once_and_keeps_each_callers_limit() {
        let t = tempfile::tempdir().unwrap();
        put(t.path(), "site/x.dist-info/RECORD", b"x/__init__.py,,\n");
        std::os::unix::fs::symlink("site", t.path().join("link")).unwrap();
        let root = Root::at(t.path()).remembering();
        let a = root
            .read_text(Path::new("/site/x.dist-info/RECORD"), read::PACKAGE_METADATA)
            .unwrap();
        // The same file by another spelling is the same text, not a second read.
        let b = root
            .read_text(Path::new("/link/x.dist-info/RECORD"), read::PACKAGE_METADATA)
            .unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*a, "x/__init__.py,,\n");
        // A caller with a smaller limit gets its own answer: the file is too large for it.
        let small = Limit {
            bytes: 4,
            what: "a test file",
        };
        assert!(matches!(
            root.read_text(Path::new("/site/x.dist-info/RECORD"), small),
            Err(ReadError::TooLarge { .. })
        ));
        // Without the memo, the same text.
        let plain = Root::at(t.path());
        assert_eq!(
            &*plain
                .read_text(Path::new("/link/x.dist-info/RECORD"), read::PACKAGE_METADATA)
                .unwrap(),
            &*a
        );
    }
}
