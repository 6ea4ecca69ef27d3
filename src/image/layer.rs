//! Applying a layer (a tar of filesystem changes) onto the image's tree, as the OCI image spec's "Applying
//! Changesets" says: entries in order, a later one replacing what is there; `.wh.NAME` deletes `NAME` from
//! the layers below; `.wh..wh..opq` in a directory hides everything the layers below put in it (OCI image
//! spec, `layer.md`, "Whiteouts"). A whiteout never hides what its own layer adds.
//!
//! The tar is read by the one walk every command shares ([`super::tarwalk`]): long names, PAX records and
//! sparse maps applied, each within a small bound, and the data every entry declares checked to be there.

use super::decode::{self, Bounded, Compression};
use super::store::Region;
use super::tarwalk::{self, Data, Item, Kind, Seekable, Source, Streamed};
use super::{ImageError, Limits};
use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};

/// Longest entry name.
const MAX_NAME: usize = 4096;

/// What applying the layers did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Totals {
    /// Entries read.
    pub entries: u64,
    /// Bytes written.
    pub written: u64,
    /// Files created empty.
    pub placeholders: u64,
    /// Their bytes.
    pub placeholder_bytes: u64,
    /// Data files not written at all (not executable, not named like a library, nothing reads them).
    pub skipped: u64,
    /// Their bytes.
    pub skipped_bytes: u64,
    /// Device nodes, FIFOs, sockets not created.
    pub special: u64,
    /// Bytes of tar unpacked.
    pub unpacked: u64,
}

/// The image's tree under construction.
pub struct Tree<'a> {
    dir: PathBuf,
    limits: &'a Limits,
    totals: Totals,
    /// Directories already known to be real directories of the tree: the image path to its real (link-free)
    /// image path. Cleared whenever anything is removed.
    dirs: HashMap<PathBuf, PathBuf>,
}

impl<'a> Tree<'a> {
    /// An empty tree in `dir`.
    pub fn new(dir: PathBuf, limits: &'a Limits) -> Tree<'a> {
        Tree {
            dir,
            limits,
            totals: Totals::default(),
            dirs: HashMap::new(),
        }
    }

    /// What was done so far.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    fn root(&self) -> crate::system::Root {
        crate::system::Root::at(&self.dir)
    }

    /// Applies one layer (its file, any compression).
    pub fn apply(&mut self, mut layer: Region, what: &str) -> Result<(), ImageError> {
        let head = decode::head(&mut layer, 8).map_err(|e| ImageError::from_io(what, e))?;
        let c = Compression::sniff(&head).map_err(|name| {
            ImageError(format!(
                "{what}: {name}-compressed, which layers cannot be (the OCI image spec allows gzip and zstd)"
            ))
        })?;
        layer
            .seek(SeekFrom::Start(0))
            .map_err(|e| ImageError::from_io(what, e))?;
        let mut this_layer = HashSet::new();
        let mut count = self.totals.entries;
        let result = if c == Compression::None {
            // A plain layer is read in place: the data of files not written is skipped by seeking.
            let len = layer.len();
            let mut src = Seekable::new(layer, len).map_err(|e| ImageError::from_io(what, e))?;
            let r = tarwalk::walk(&mut src, what, self.limits, &mut count, |item, entry| {
                self.entry(item, entry, what, &mut this_layer)
            });
            self.totals.unpacked += len;
            r
        } else {
            let bounded = Bounded::new(layer, c, self.limits, what.to_string())
                .map_err(|e| ImageError::from_io(what, e))?;
            let mut src = Streamed::new(bounded);
            let r = tarwalk::walk(&mut src, what, self.limits, &mut count, |item, entry| {
                self.entry(item, entry, what, &mut this_layer)
            });
            self.totals.unpacked += src.into_inner().produced();
            r
        };
        self.totals.entries = count;
        if self.totals.unpacked > self.limits.max_unpacked {
            return Err(ImageError::cap(
                what,
                "max-unpacked",
                format!(
                    "the layers unpack to more than {} bytes",
                    self.limits.max_unpacked
                ),
            ));
        }
        result
    }

    /// Applies one entry.
    fn entry<S: Source>(
        &mut self,
        item: &Item,
        entry: &mut Data<'_, S>,
        what: &str,
        this_layer: &mut HashSet<PathBuf>,
    ) -> Result<(), ImageError> {
        let shown = String::from_utf8_lossy(&item.name).into_owned();
        let at = |msg: String| ImageError(format!("{what}: entry {shown:?}: {msg}"));
        let Some(rel) = entry_path(&item.name).map_err(at)? else {
            return Ok(());
        };
        let Some(file_name) = rel.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            return Ok(());
        };
        let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        // Whiteouts.
        if file_name == ".wh..wh..opq" {
            return self.opaque(&parent, this_layer).map_err(|e| at(e.to_string()));
        }
        if let Some(hidden) = file_name.strip_prefix(".wh.") {
            if hidden.starts_with(".wh.") {
                // AUFS bookkeeping (`.wh..wh.plnk`, `.wh..wh.aufs`): not part of the filesystem.
                return Ok(());
            }
            let target = parent.join(hidden);
            if !this_layer.contains(&target) {
                return self.remove(&target).map_err(|e| at(e.to_string()));
            }
            return Ok(());
        }
        let kind = item.kind;
        if kind == Kind::Special {
            self.totals.special += 1;
            return Ok(());
        }
        if kind == Kind::Other {
            // Volume labels, GNU dump directories, vendor types: nothing a program needs.
            return Ok(());
        }
        if item.size > self.limits.max_file && kind != Kind::Dir {
            return Err(ImageError::cap(
                &format!("{what}: entry {shown:?}"),
                "max-file",
                format!(
                    "a file of {} bytes, more than {}",
                    item.size, self.limits.max_file
                ),
            ));
        }
        this_layer.insert(rel.clone());
        // What a lower layer left at this path goes (a directory over a directory merges). Nothing is made yet.
        if let Some(there) = self.existing(&parent, &file_name) {
            let keep = kind == Kind::Dir && std::fs::symlink_metadata(&there).is_ok_and(|m| m.is_dir());
            if !keep {
                remove_host(&there).map_err(|e| at(e.to_string()))?;
                self.dirs.clear();
            }
        }
        let target = match kind {
            // Directories are made when something is put in them: images hold thousands that only hold data.
            Kind::Dir => return Ok(()),
            Kind::Symlink => Some(item.link.clone().unwrap_or_default()),
            Kind::Link => {
                // A hard link names a path from the image's top: a symbolic link to it, resolved in the image.
                let Some(t) = entry_path(item.link.as_deref().unwrap_or_default()).map_err(at)? else {
                    return Ok(());
                };
                Some(Path::new("/").join(t).into_os_string().into_encoded_bytes())
            }
            _ => None,
        };
        if let Some(target) = target {
            let dir = self.parent_dir(&parent).map_err(|e| at(e.to_string()))?;
            let host = self.root().host_path(&dir).join(&file_name);
            return symlink(&target, &host).map_err(|e| at(e.to_string()));
        }
        self.file(item, entry, &rel, &parent, &file_name)
            .map_err(|e| match e.get_ref() {
                Some(r) if r.is::<ImageError>() => ImageError::from_io(what, e),
                _ => at(e.to_string()),
            })
    }

    /// Puts a file from outside the image at `rel` (what the container runtime mounts into the container):
    /// `link` as a symbolic link when given, else a regular file holding `text`; what was there is replaced,
    /// directories are made and links followed inside the image, as for a layer's entry.
    /// What was there is moved to `aside` (outside the tree). Returns the host path written and whether
    /// something was moved aside.
    pub fn place(
        &mut self,
        rel: &Path,
        text: &[u8],
        link: Option<&[u8]>,
        aside: &Path,
    ) -> io::Result<(PathBuf, bool)> {
        let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        let Some(name) = rel.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            return Err(io::Error::other("not a file's path"));
        };
        let mut hidden = false;
        if let Some(there) = self.existing(&parent, &name) {
            if let Some(dir) = aside.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::rename(&there, aside)?;
            hidden = true;
            self.dirs.clear();
        }
        let dir = self.parent_dir(&parent)?;
        let host = self.root().host_path(&dir).join(&name);
        match link {
            Some(target) => symlink(target, &host)?,
            None => std::fs::write(&host, text)?,
        }
        Ok((host, hidden))
    }

    /// The host path of `parent/name` when `parent` exists in the tree (links resolved inside the image);
    /// `None` when it does not. Makes nothing.
    fn existing(&mut self, parent: &Path, name: &str) -> Option<PathBuf> {
        let dir = match self.dirs.get(parent) {
            Some(d) => d.clone(),
            None => {
                let real = self.root().resolve(&Path::new("/").join(parent)).ok()?;
                if std::fs::symlink_metadata(self.root().host_path(&real)).is_ok_and(|m| m.is_dir()) {
                    self.dirs.insert(parent.to_path_buf(), real.clone());
                }
                real
            }
        };
        let host = self.root().host_path(&dir).join(name);
        std::fs::symlink_metadata(&host).is_ok().then_some(host)
    }

    /// Writes a regular file: whole when an inspection could read it, else empty (see the module docs).
    fn file<S: Source>(
        &mut self,
        item: &Item,
        entry: &mut Data<'_, S>,
        rel: &Path,
        parent: &Path,
        name: &str,
    ) -> io::Result<()> {
        let head = decode::head(entry, 8)?;
        // Executables and anything named like a library are looked up by name (PATH, the loader's search):
        // they exist, whole when small or when their first bytes say binary. Other data is not written.
        let looked_up = item.mode & 0o111 != 0
            || rel
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".so"));
        let whole = wanted(&head, rel) || (looked_up && item.size <= self.limits.small_file);
        if !whole && !looked_up {
            self.totals.skipped += 1;
            self.totals.skipped_bytes += item.size;
            return Ok(());
        }
        let dir = self.parent_dir(parent)?;
        let host = self.root().host_path(&dir).join(name);
        let mode = (item.mode & 0o755) | 0o600;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode_bits(mode)
            .open(&host)?;
        if !whole {
            self.totals.placeholders += 1;
            self.totals.placeholder_bytes += item.size;
            return Ok(());
        }
        self.totals.written += item.size;
        if self.totals.written > self.limits.max_extracted {
            return Err(ImageError::cap(
                "the image",
                "max-extracted",
                format!("more than {} bytes to write", self.limits.max_extracted),
            )
            .into_io());
        }
        f.write_all(&head)?;
        let copied = copy_polled(&mut entry.take(item.size), &mut f)?;
        if copied + head.len() as u64 != item.size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the layer ends inside this file",
            ));
        }
        Ok(())
    }

    /// The real image path of the directory `parent` (made when missing, links in it resolved inside the
    /// image, a file in the way replaced by a directory).
    fn parent_dir(&mut self, parent: &Path) -> io::Result<PathBuf> {
        if let Some(d) = self.dirs.get(parent) {
            return Ok(d.clone());
        }
        let cur = self.make_dirs(parent, 0)?;
        self.dirs.insert(parent.to_path_buf(), cur.clone());
        Ok(cur)
    }

    /// [`Tree::parent_dir`] without the memo; `depth` counts the links followed to directories still to make.
    fn make_dirs(&mut self, parent: &Path, depth: usize) -> io::Result<PathBuf> {
        let root = self.root();
        let mut cur = PathBuf::from("/");
        for c in parent.components() {
            let Component::Normal(n) = c else { continue };
            let next = cur.join(n);
            let host = root.host_path(&next);
            match std::fs::symlink_metadata(&host) {
                Ok(m) if m.is_dir() => cur = next,
                Ok(m) if m.file_type().is_symlink() => {
                    let real = match root.resolve(&next) {
                        Ok(real) => real,
                        // A link to a directory no layer made yet: made inside the image, where the link
                        // points once re-rooted (as containerd's applier does).
                        Err(e) if e.kind() == io::ErrorKind::NotFound && depth < crate::system::MAX_LINKS => {
                            let target = std::fs::read_link(&host)?;
                            let lexical = lexical(&cur.join(target));
                            self.make_dirs(&lexical, depth + 1)?
                        }
                        Err(e) => return Err(e),
                    };
                    if !root.is_dir(&real) {
                        return Err(io::Error::other(format!(
                            "{} is a link to {}, not a directory",
                            next.display(),
                            real.display()
                        )));
                    }
                    cur = real;
                }
                Ok(_) => {
                    std::fs::remove_file(&host)?;
                    make_dir(&host)?;
                    cur = next;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    make_dir(&host)?;
                    cur = next;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(cur)
    }

    /// `.wh.NAME`: removes `target` (nothing when it is not there).
    fn remove(&mut self, target: &Path) -> io::Result<()> {
        let root = self.root();
        let parent = target.parent().unwrap_or(Path::new(""));
        let Ok(dir) = root.resolve(&Path::new("/").join(parent)) else {
            return Ok(());
        };
        let Some(name) = target.file_name() else {
            return Ok(());
        };
        let host = root.host_path(&dir).join(name);
        if std::fs::symlink_metadata(&host).is_ok() {
            remove_host(&host)?;
            self.dirs.clear();
        }
        Ok(())
    }

    /// `.wh..wh..opq`: empties `dir` of what the layers below put there.
    fn opaque(&mut self, dir: &Path, this_layer: &HashSet<PathBuf>) -> io::Result<()> {
        let root = self.root();
        let Ok(real) = root.resolve(&Path::new("/").join(dir)) else {
            return Ok(());
        };
        let host = root.host_path(&real);
        if !std::fs::symlink_metadata(&host).is_ok_and(|m| m.is_dir()) {
            return Ok(());
        }
        for e in std::fs::read_dir(&host)? {
            let e = e?;
            if !this_layer.contains(&dir.join(e.file_name())) {
                remove_host(&e.path())?;
            }
        }
        self.dirs.clear();
        Ok(())
    }
}

/// `io::copy`, a signal polled every MiB (a file of gigabytes is not waited for).
fn copy_polled(from: &mut impl Read, to: &mut impl Write) -> io::Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0;
    loop {
        crate::system::scratch::check()?;
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e)
                if e.kind() == io::ErrorKind::Interrupted
                    && crate::system::scratch::signalled().is_none() =>
            {
                continue;
            }
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// `path` without `.` and `..` (never above `/`), as a path relative to the image's top.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// Should a file be written whole, whatever its size? ELF files, archives, fatbins, wheels; device code by name;
/// scripts (an entrypoint script is recognised by its `#!`); and what the machine's reading uses as text:
/// `/etc`, dpkg's database, conda's and pip's metadata, toolkit versions.
fn wanted(head: &[u8], rel: &Path) -> bool {
    if crate::inspect::wheel::looks_binary(head, &rel.to_string_lossy()) || head.starts_with(b"#!") {
        return true;
    }
    let s = rel.to_string_lossy();
    // A wheel (a zip named `*.whl`) is opened by `audit` as any wheel is: the libraries inside it are what a
    // `pip install` in the container would load.
    if s.ends_with(".whl") && head.starts_with(b"PK\x03\x04") {
        return true;
    }
    s.starts_with("etc/")
        || s.starts_with("var/lib/dpkg/")
        || s.contains("/conda-meta/")
        || s.contains(".dist-info/")
        || s.ends_with("version.json")
        || s.ends_with("version.txt")
        || python_env_file(&s)
}

/// The files of a Python environment its `sys.path` and the frameworks' loading models read
/// (`python::syspath`, `python::frameworks`): a venv's `pyvenv.cfg`, `.pth` files, the standard library's
/// landmark `os.py` and its `site.py`, `sitecustomize.py`/`usercustomize.py` (reported as not modelled), a
/// package's `__init__.py` (what makes it importable), and the modules whose constants the models read
/// (torch's `version.py`, TensorFlow's `build_info.py`, ONNX Runtime's `build_and_package_info.py`). Small
/// text files; the rest of the Python code stays out.
fn python_env_file(s: &str) -> bool {
    let name = s.rsplit('/').next().unwrap_or(s);
    name == "pyvenv.cfg"
        || name.ends_with(".pth")
        || (s.contains("/python3")
            && matches!(
                name,
                "os.py"
                    | "site.py"
                    | "sitecustomize.py"
                    | "usercustomize.py"
                    | "__init__.py"
                    | "version.py"
                    | "build_info.py"
                    | "build_and_package_info.py"
            ))
}

/// The entry's path relative to the image's `/`: a leading `/` or `./` dropped, `None` for the top itself; a
/// `..` component or an overlong name is refused.
fn entry_path(name: &[u8]) -> Result<Option<PathBuf>, String> {
    if name.len() > MAX_NAME {
        return Err(format!("a name of {} bytes, more than {MAX_NAME}", name.len()));
    }
    let p = Path::new(std::ffi::OsStr::from_encoded_bytes_unchecked_safe(name));
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                return Err("a name with `..` would climb out of the image: refused".into());
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// `OsStr` from bytes on Unix, without `unsafe`.
trait FromBytes {
    fn from_encoded_bytes_unchecked_safe(b: &[u8]) -> &std::ffi::OsStr;
}

impl FromBytes for std::ffi::OsStr {
    fn from_encoded_bytes_unchecked_safe(b: &[u8]) -> &std::ffi::OsStr {
        std::os::unix::ffi::OsStrExt::from_bytes(b)
    }
}

fn make_dir(host: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o755).create(host)
}

fn symlink(target: &[u8], host: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), host)
}

/// Removes a file, a link (not what it points to) or a whole directory.
pub(super) fn remove_host(host: &Path) -> io::Result<()> {
    let m = std::fs::symlink_metadata(host)?;
    if m.is_dir() {
        std::fs::remove_dir_all(host)
    } else {
        std::fs::remove_file(host)
    }
}

trait ModeBits {
    fn mode_bits(&mut self, mode: u32) -> &mut Self;
}

impl ModeBits for std::fs::OpenOptions {
    fn mode_bits(&mut self, mode: u32) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::mode(self, mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_contained() {
        assert_eq!(
            entry_path(b"/usr/bin/x").unwrap(),
            Some(PathBuf::from("usr/bin/x"))
        );
        assert_eq!(entry_path(b"./usr/").unwrap(), Some(PathBuf::from("usr")));
        assert_eq!(entry_path(b"./").unwrap(), None);
        assert!(entry_path(b"usr/../../etc/passwd").is_err());
        assert!(entry_path(&vec![b'a'; 5000]).is_err());
    }
}
