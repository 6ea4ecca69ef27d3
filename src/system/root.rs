//! A filesystem root: every absolute path of the diagnosed machine is read under it.
//!
//! Symbolic links are resolved *inside* the root: an absolute link target (`/usr/lib/x`) is re-rooted, and
//! `..` never climbs above the root. This is what `chroot` would do, and what makes `--root /mnt/customer`
//! safe and faithful.

use super::read::{self, Limit, ReadError};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

/// Symbolic links followed while resolving one path before giving up (Linux's own limit is 40).
pub const MAX_LINKS: usize = 40;

/// The root of the diagnosed machine's filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    dir: PathBuf,
}

impl Default for Root {
    fn default() -> Self {
        Root::host()
    }
}

impl Root {
    /// The live machine: `/`.
    pub fn host() -> Root {
        Root {
            dir: PathBuf::from("/"),
        }
    }

    /// A mounted or unpacked filesystem at `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Root {
        Root { dir: dir.into() }
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

    /// Reads the whole regular text file `path`, links followed inside the root, within `limit`.
    pub fn read_to_string(&self, path: &Path, limit: Limit) -> Result<String, ReadError> {
        read::read_to_string(&self.host_path(&self.resolve(path)?), limit)
    }

    /// Metadata of the file `path` names, links followed inside the root.
    pub fn metadata(&self, path: &Path) -> io::Result<std::fs::Metadata> {
        std::fs::metadata(self.host_path(&self.resolve(path)?))
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
    pub fn read_dir_names(
        &self,
        path: &Path,
        mut keep: impl FnMut(&OsStr) -> bool,
    ) -> io::Result<Vec<OsString>> {
        let resolved = self.resolve(path)?;
        let mut names: Vec<OsString> = std::fs::read_dir(self.host_path(&resolved))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .filter(|n| keep(n))
            .collect();
        // One directory's entries: ordering the names' bytes orders the paths (and costs far less than
        // comparing paths component by component in a directory of thousands).
        names.sort_unstable();
        Ok(names)
    }

    /// Does `path` exist (links followed inside the root)?
    pub fn exists(&self, path: &Path) -> bool {
        self.metadata(path).is_ok()
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
        let meta = std::fs::symlink_metadata(host)?;
        if meta.file_type().is_symlink() {
            std::fs::read_link(host).map(Some)
        } else {
            Ok(None)
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
        let mut pending: Vec<OsString> = Vec::new();
        push_components(rest, &mut pending);
        pending.reverse();
        let mut out = base;
        // `host` is always `self.host_path(&out)`: a name pushed onto `out` is pushed onto it too, and it is
        // computed again only when `out` shrinks (`..`, a link), so each step costs one push, not a rebuild.
        let mut host = self.host_path(&out);
        let mut links = 0usize;
        while let Some(part) = pending.pop() {
            if part == ".." {
                out.pop();
                host = self.host_path(&out);
                continue;
            }
            if part == "." || part.is_empty() {
                continue;
            }
            out.push(&part);
            host.push(&part);
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
                let mut more = Vec::new();
                push_components(&target, &mut more);
                more.reverse();
                pending.extend(more);
            }
        }
        Ok(out)
    }
}

fn push_components(path: &Path, out: &mut Vec<OsString>) {
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n.to_os_string()),
            Component::ParentDir => out.push("..".into()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
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
}
