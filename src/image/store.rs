//! Where an image's files (`manifest.json`, `index.json`, blobs, `docker save`'s `<id>/layer.tar`) are: a
//! directory, or the members of a tar archive, indexed once by name and read by seeking to their data. A gzip
//! or zstd image file is first unpacked, within the bounds, into an anonymous temporary file (`O_TMPFILE`: it
//! has no name and vanishes when closed), which is then read as the tar it holds.

use super::decode::{self, Bounded, Compression};
use super::{ImageError, Limits};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Largest JSON document of an image (manifest, index, config): real ones are a few KiB, a config with a long
/// history a few hundred.
pub const MAX_DOCUMENT: u64 = 16 << 20;

/// Links followed from one name inside an archive.
const MAX_LINKS: usize = 16;

/// One member of an image tar.
#[derive(Debug, Clone)]
pub enum Member {
    /// A regular file's data: offset and size.
    File(u64, u64),
    /// A symbolic or hard link (legacy `docker save` links repeated layers: `<id>/layer.tar -> ../<id2>/…`).
    Link(String),
}

/// The files of an image.
pub enum Store {
    /// A directory (an OCI layout or an unpacked `docker save`): names resolved inside it.
    Dir(crate::system::Root),
    /// A tar archive and its members.
    Tar(File, HashMap<String, Member>),
}

/// A part of a file read as a file of its own (a member of the image tar, or a whole blob).
pub struct Region {
    file: File,
    start: u64,
    len: u64,
    pos: u64,
}

impl Region {
    fn new(mut file: File, start: u64, len: u64) -> io::Result<Region> {
        file.seek(SeekFrom::Start(start))?;
        Ok(Region {
            file,
            start,
            len,
            pos: 0,
        })
    }

    /// Its size.
    pub fn len(&self) -> u64 {
        self.len
    }
}

impl Read for Region {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        if left == 0 {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.file.read(&mut buf[..want])?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Region {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
        }
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        self.file
            .seek(SeekFrom::Start(self.start.saturating_add(target)))?;
        self.pos = target;
        Ok(target)
    }
}

/// Does `path` look like an image (see [`super::looks_like_image`])?
pub fn looks_like_image(path: &Path) -> bool {
    if path.is_dir() {
        return path.join("oci-layout").is_file() || path.join("manifest.json").is_file();
    }
    let Ok((mut f, _)) = crate::system::read::open_regular(path) else {
        return false;
    };
    let Ok(head) = decode::head(&mut f, 8) else {
        return false;
    };
    let Ok(c) = Compression::sniff(&head) else {
        return false;
    };
    let limits = Limits::default();
    let Ok(mut r) = Bounded::new(decode::rejoin(head, f), c, &limits, String::new()) else {
        return false;
    };
    decode::head(&mut r, 512).is_ok_and(|h| is_tar_header(&h))
}

/// Whether a 512-byte block is a tar header: its checksum is right, whatever its magic (POSIX `ustar\0`, GNU
/// `ustar  `, or none: an old v7 archive, which `docker load` and every tar reader accept).
fn is_tar_header(h: &[u8]) -> bool {
    super::tarwalk::checksum_ok(h)
}

impl Store {
    /// Opens the image at `path`: a directory as it is, a tar by indexing its members, a compressed file by
    /// unpacking it first. Returns the store, the format (`oci-layout` or `docker-archive`) and the file's
    /// compression.
    pub fn open(path: &Path, limits: &Limits) -> Result<(Store, &'static str, Compression), ImageError> {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| ImageError(format!("{shown}: {e}")))?;
        if meta.is_dir() {
            let store = Store::Dir(crate::system::Root::at(path));
            let format = store.format(&shown)?;
            return Ok((store, format, Compression::None));
        }
        let (mut f, _) =
            crate::system::read::open_regular(path).map_err(|e| ImageError(format!("{shown}: {e}")))?;
        let head = decode::head(&mut f, 8).map_err(|e| ImageError::from_io(&shown, e))?;
        let c = Compression::sniff(&head).map_err(|name| {
            ImageError(format!(
                "{shown}: {name}-compressed: unpack it first (images are read plain, gzip- or zstd-compressed)"
            ))
        })?;
        let file = match c {
            Compression::None => {
                f.seek(SeekFrom::Start(0))
                    .map_err(|e| ImageError::from_io(&shown, e))?;
                f
            }
            _ => {
                let mut spill = tempfile::tempfile()
                    .map_err(|e| ImageError(format!("{shown}: cannot make a temporary file: {e}")))?;
                let mut r = Bounded::new(decode::rejoin(head, f), c, limits, shown.clone())
                    .map_err(|e| ImageError::from_io(&shown, e))?;
                io::copy(&mut r, &mut spill).map_err(|e| ImageError::from_io(&shown, e))?;
                spill
                    .seek(SeekFrom::Start(0))
                    .map_err(|e| ImageError::from_io(&shown, e))?;
                spill
            }
        };
        let store = Store::Tar(
            file.try_clone().map_err(|e| ImageError::from_io(&shown, e))?,
            index(file, limits, &shown)?,
        );
        let format = store.format(&shown)?;
        Ok((store, format, c))
    }

    /// `docker-archive` when `manifest.json` is there (the file `docker load` reads), else `oci-layout` when
    /// `index.json` is; neither is not an image.
    fn format(&self, shown: &str) -> Result<&'static str, ImageError> {
        if self.has("manifest.json") {
            Ok("docker-archive")
        } else if self.has("index.json") {
            Ok("oci-layout")
        } else {
            Err(ImageError(format!(
                "{shown}: not a container image: no manifest.json (`docker save`) and no index.json (OCI image \
                 layout)"
            )))
        }
    }

    /// Is there a file called `name`?
    pub fn has(&self, name: &str) -> bool {
        match self {
            Store::Dir(root) => root.is_file(Path::new(name)),
            Store::Tar(_, members) => find(members, name).is_ok(),
        }
    }

    /// The file `name`, to read (and seek in).
    pub fn member(&self, name: &str) -> Result<Region, String> {
        checked_name(name)?;
        match self {
            Store::Dir(root) => {
                let real = root
                    .resolve(Path::new(name))
                    .map_err(|e| format!("{name}: {e}"))?;
                let (f, meta) = crate::system::read::open_regular(&root.host_path(&real))
                    .map_err(|e| format!("{name}: {e}"))?;
                Region::new(f, 0, meta.len()).map_err(|e| format!("{name}: {e}"))
            }
            Store::Tar(file, members) => {
                let (start, len) = find(members, name)?;
                let f = file.try_clone().map_err(|e| format!("{name}: {e}"))?;
                Region::new(f, start, len).map_err(|e| format!("{name}: {e}"))
            }
        }
    }

    /// The whole small file `name` (a JSON document), refused past [`MAX_DOCUMENT`].
    pub fn read(&self, name: &str) -> Result<Vec<u8>, String> {
        let r = self.member(name)?;
        if r.len() > MAX_DOCUMENT {
            return Err(format!(
                "{name}: {} bytes, more than the {MAX_DOCUMENT} a manifest or config can be",
                r.len()
            ));
        }
        let mut out = Vec::new();
        r.take(MAX_DOCUMENT)
            .read_to_end(&mut out)
            .map_err(|e| format!("{name}: {e}"))?;
        Ok(out)
    }
}

/// A name the manifest gives must stay inside the image: no `..`, no absolute path.
fn checked_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.starts_with('/') || name.split('/').any(|c| c == "..") {
        return Err(format!("{name:?}: not a file name inside the image"));
    }
    Ok(())
}

/// The data of member `name`, links followed inside the archive.
fn find(members: &HashMap<String, Member>, name: &str) -> Result<(u64, u64), String> {
    let mut current = normalise(name).ok_or_else(|| format!("{name:?}: not a file name inside the image"))?;
    for _ in 0..MAX_LINKS {
        match members.get(&current) {
            Some(Member::File(start, len)) => return Ok((*start, *len)),
            Some(Member::Link(target)) => {
                let base = Path::new(&current).parent().unwrap_or(Path::new(""));
                let joined = if target.starts_with('/') {
                    PathBuf::from(target)
                } else {
                    base.join(target)
                };
                current = normalise(&joined.to_string_lossy())
                    .ok_or_else(|| format!("{name}: its link {target:?} leaves the image"))?;
            }
            None => return Err(format!("{name}: not in the image")),
        }
    }
    Err(format!("{name}: more than {MAX_LINKS} links"))
}

/// `./a/b/../c` as `a/c`; `None` when `..` climbs above the top.
fn normalise(name: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for c in name.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(parts.join("/"))
}

/// Every member of the image tar, by name.
fn index(file: File, limits: &Limits, shown: &str) -> Result<HashMap<String, Member>, ImageError> {
    use super::tarwalk::{self, Kind, Seekable};
    let mut members = HashMap::new();
    let len = file.metadata().map_err(|e| ImageError::from_io(shown, e))?.len();
    let mut src = Seekable::new(file, len).map_err(|e| ImageError::from_io(shown, e))?;
    let mut count = 0u64;
    tarwalk::walk(&mut src, shown, limits, &mut count, |item, _| {
        let Some(name) = normalise(&String::from_utf8_lossy(&item.name)) else {
            return Ok(());
        };
        let target = || String::from_utf8_lossy(item.link.as_deref().unwrap_or_default()).into_owned();
        match item.kind {
            // A sparse member cannot be read as one run of the file: no image tool writes one.
            Kind::File if !item.sparse => {
                members.insert(name, Member::File(item.offset, item.size));
            }
            Kind::Symlink => {
                members.insert(name, Member::Link(target()));
            }
            // A hard link names its target from the archive's top.
            Kind::Link => {
                members.insert(name, Member::Link(format!("/{}", target())));
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside() {
        assert_eq!(normalise("./blobs/sha256/ab").as_deref(), Some("blobs/sha256/ab"));
        assert_eq!(normalise("a/../b").as_deref(), Some("b"));
        assert_eq!(normalise("../b"), None);
        assert!(checked_name("../x").is_err());
        assert!(checked_name("/etc/passwd").is_err());
        assert!(checked_name("blobs/sha256/ab").is_ok());
    }
}
