//! Container images, read without a container engine: `docker save` tarballs, OCI image layouts (a directory
//! or a tar of one), and either compressed with gzip or zstd.
//!
//! [`open`] finds the image's manifest (`manifest.json` of `docker save`, else the OCI `index.json`, indexes
//! followed to the manifest of the wanted platform), reads its config (`Env`, `Entrypoint`, `Cmd`,
//! `WorkingDir`, `User`, `architecture`, `os`) and applies its layers in order into a private temporary
//! directory (removed when the [`Image`] is dropped), with the whiteouts of the OCI image spec. The result is an
//! ordinary root: everything downstream reads it through [`crate::system::Root`], as it reads `--root DIR`.
//!
//! Nothing in an image is trusted (`docs/container-images.md` says what each bound is for):
//! - every entry name is taken relative to the image's `/` (a leading `/` is dropped); a name with a `..`
//!   component is refused;
//! - links are created as links and never followed while extracting: a link in a *parent* directory of an
//!   entry is resolved inside the image (as containerd does), never outside; hard links become symbolic links
//!   to their target inside the image;
//! - device nodes, FIFOs and sockets are not created; no setuid, setgid or sticky bit is kept;
//! - the number of layers, entries, the bytes unpacked, the bytes written, the size of one file and the
//!   compression ratio are capped ([`Limits`]), each with an error that names its cap;
//! - only what an inspection can read is written whole: ELF files, archives, device code, scripts, anything
//!   under `/etc`, package metadata, and executables and library-named files up to [`Limits::small_file`].
//!   Larger executables and library-named files of other kinds are created empty, so that the `PATH` and the
//!   loader's searches find them as in the image ([`ImageFacts::placeholders`]); other data (documentation,
//!   sources, models) is not written at all ([`ImageFacts::skipped_files`]): creating tens of thousands of
//!   files nobody reads would cost more than everything else.
//!
//! Digests are taken as the manifest declares them (the blob names are their digests); blobs are not hashed.

mod decode;
pub mod entry;
mod layer;
mod limits;
mod manifest;
mod store;
pub mod stub;
mod tarwalk;

pub use decode::Compression;
pub use limits::{ImageError, Limits};
pub use manifest::RunConfig;

use std::path::{Path, PathBuf};

pub use crate::facts::image::ImageFacts;

/// An opened image: its facts and its files under a private temporary directory, removed on drop.
#[derive(Debug)]
pub struct Image {
    /// What the report says about it.
    pub facts: ImageFacts,
    /// Its run configuration.
    pub config: RunConfig,
    /// The tree's owner: `root/` is the image's `/`, `aside/` keeps what mounts hid.
    scratch: crate::system::scratch::Scratch,
    root: PathBuf,
    /// The mounts made, in order, to undo ([`Image::unmount`]).
    mounts: std::sync::Mutex<Vec<Mounted>>,
}

/// One mount: where it was put (a host path) and what it hid, moved aside.
#[derive(Debug)]
struct Mounted {
    at: PathBuf,
    hidden: Option<PathBuf>,
}

impl Image {
    /// The image's files as a root.
    pub fn root(&self) -> crate::system::Root {
        crate::system::Root::at(&self.root)
    }

    /// The directory acting as the image's `/`.
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// Adds what the container gets from outside the image at `path` (an absolute path inside it): a symbolic
    /// link to `link` when given, else a file holding `text`. What the image had there is hidden (as a mount
    /// hides it: moved aside, back on [`Image::unmount`]), directories are made and links followed inside the
    /// image, never outside.
    pub fn mount(&self, path: &Path, text: &[u8], link: Option<&str>) -> Result<(), ImageError> {
        let limits = Limits::default();
        let mut tree = layer::Tree::new(self.root.clone(), &limits);
        let rel: PathBuf = path
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        if path.components().any(|c| c == std::path::Component::ParentDir) {
            return Err(ImageError(format!(
                "{}: not a path inside the image",
                path.display()
            )));
        }
        let mut mounts = self.mounts.lock().unwrap_or_else(|p| p.into_inner());
        let aside = self.scratch.path().join("aside").join(mounts.len().to_string());
        let (at, hidden) = tree
            .place(&rel, text, link.map(str::as_bytes), &aside)
            .map_err(|e| ImageError(format!("cannot add {} to the image's tree: {e}", path.display())))?;
        mounts.push(Mounted {
            at,
            hidden: hidden.then_some(aside),
        });
        Ok(())
    }

    /// Undoes every mount, last first: the tree is the image's own again (the directories a mount made
    /// aside), ready for another node's mounts without unpacking the image again.
    pub fn unmount(&self) -> Result<(), ImageError> {
        let mut mounts = self.mounts.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(m) = mounts.pop() {
            let undo = || -> std::io::Result<()> {
                if std::fs::symlink_metadata(&m.at).is_ok() {
                    layer::remove_host(&m.at)?;
                }
                if let Some(h) = &m.hidden {
                    std::fs::rename(h, &m.at)?;
                }
                Ok(())
            };
            undo().map_err(|e| ImageError(format!("cannot undo the mount at {}: {e}", m.at.display())))?;
        }
        Ok(())
    }
}

/// The platform to pick from an index: `os/arch[/variant]` as given, else this machine's.
pub fn wanted_platform(given: Option<&str>) -> Result<manifest::Platform, ImageError> {
    match given {
        Some(p) => manifest::Platform::parse(p).ok_or_else(|| {
            ImageError(format!(
                "--platform {p}: expected OS/ARCH[/VARIANT], such as linux/amd64 or linux/arm64/v8"
            ))
        }),
        None => Ok(manifest::Platform::host()),
    }
}

/// Does `path` look like an image: a directory with `oci-layout` or `manifest.json`, or a file whose bytes
/// (once decompressed, for gzip and zstd) begin a tar archive? Reads at most a few KiB.
pub fn looks_like_image(path: &Path) -> bool {
    store::looks_like_image(path)
}

/// Opens the image at `path`: picks the manifest for `platform` (`--platform`, or this machine's when the
/// image holds several), reads the config and applies the layers into a new temporary directory.
pub fn open(path: &Path, platform: Option<&str>, limits: &Limits) -> Result<Image, ImageError> {
    open_counting(path, platform, limits, &std::sync::atomic::AtomicUsize::new(0))
}

/// [`open`], counting the layers applied in `layers` (for a progress line).
pub fn open_counting(
    path: &Path,
    platform: Option<&str>,
    limits: &Limits,
    layers: &std::sync::atomic::AtomicUsize,
) -> Result<Image, ImageError> {
    let shown = path.display().to_string();
    let wanted = wanted_platform(platform)?;
    let (store, format, compression) = store::Store::open(path, limits)?;
    let chosen = manifest::choose(&store, &wanted, platform.is_some(), limits, &shown)?;
    let scratch = crate::system::scratch::Scratch::new("image")
        .map_err(|e| ImageError(format!("cannot make a temporary directory for {shown}: {e}")))?;
    let dir = scratch.path().join("root");
    std::fs::create_dir(&dir)
        .map_err(|e| ImageError(format!("cannot make a temporary directory for {shown}: {e}")))?;
    let mut facts = ImageFacts {
        path: shown.clone(),
        format: format.to_string(),
        compression: compression.name().map(str::to_string),
        reference: chosen.reference.clone(),
        config_digest: chosen.config_digest.clone(),
        manifest_digest: chosen.manifest_digest.clone(),
        platform: chosen.platform.to_string(),
        layers: chosen.layers.len(),
        entrypoint: chosen.config.entrypoint.clone(),
        cmd: chosen.config.cmd.clone(),
        working_dir: chosen.config.working_dir.clone(),
        user: chosen.config.user.clone(),
        env: chosen.config.env.clone(),
        ..ImageFacts::default()
    };
    let mut tree = layer::Tree::new(dir.clone(), limits);
    for (i, name) in chosen.layers.iter().enumerate() {
        let what = format!("{shown}: layer {} of {} ({name})", i + 1, chosen.layers.len());
        let reader = store
            .member(name)
            .map_err(|e| ImageError(format!("{what}: {e}")))?;
        tree.apply(reader, &what)?;
        layers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let totals = tree.totals();
    facts.entries = totals.entries;
    facts.placeholders = totals.placeholders;
    facts.placeholder_bytes = totals.placeholder_bytes;
    facts.skipped_files = totals.skipped;
    facts.skipped_bytes = totals.skipped_bytes;
    facts.special_files = totals.special;
    facts.user_problem = entry::lookup(&crate::system::Root::at(&dir), &chosen.config.user).err();
    Ok(Image {
        facts,
        config: chosen.config,
        scratch,
        root: dir,
        mounts: std::sync::Mutex::new(Vec::new()),
    })
}

/// Picks the image's manifest (for `platform`, else this machine's) and reads its config, unpacking nothing:
/// returns the chosen image's platform and layer count. The chooser alone, for its fuzz target and tests.
pub fn choose_only(path: &Path, platform: Option<&str>) -> Result<(String, usize), ImageError> {
    let limits = Limits::default();
    let shown = path.display().to_string();
    let wanted = wanted_platform(platform)?;
    let (store, _, _) = store::Store::open(path, &limits)?;
    let chosen = manifest::choose(&store, &wanted, platform.is_some(), &limits, &shown)?;
    Ok((chosen.platform.to_string(), chosen.layers.len()))
}

/// A path the user gave for a file inside the image or root, as the machine path it names: absolute as
/// given, relative to `/`.
pub fn machine_path(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new("/").join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `docker save` tarball of one layer holding `/app`, plain or gzip.
    fn small_image(gzip_layer: bool) -> Vec<u8> {
        let tar_of = |members: &[(&str, &[u8])]| {
            let mut b = tar::Builder::new(Vec::new());
            for (name, data) in members {
                let mut h = tar::Header::new_ustar();
                h.set_size(data.len() as u64);
                h.set_mode(0o755);
                b.append_data(&mut h, name, *data).unwrap();
            }
            b.into_inner().unwrap()
        };
        let mut layer = tar_of(&[("app", b"\x7fELF....."), ("etc/x", b"y"), ("usr/.wh.z", b"")]);
        if gzip_layer {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&layer).unwrap();
            layer = e.finish().unwrap();
        }
        let config = br#"{"architecture":"amd64","os":"linux","config":{"Cmd":["/app"]}}"#;
        let manifest = br#"[{"Config":"c.json","RepoTags":["t:1"],"Layers":["l/layer.tar"]}]"#;
        tar_of(&[
            ("l/layer.tar", &layer),
            ("c.json", config),
            ("manifest.json", manifest),
        ])
    }

    #[test]
    fn damaged_images_are_errors_never_panics() {
        for gz in [false, true] {
            let good = small_image(gz);
            crate::fuzzing::image(&good);
            let t = tempfile::tempdir().unwrap();
            let f = t.path().join("i.tar");
            std::fs::write(&f, &good).unwrap();
            assert!(open(&f, None, &Limits::default()).is_ok());
            // Every seventh byte of the headers and the first data, changed; and the file cut at every 211th byte.
            let mut rng = 0x2545_f491_4f6c_dd1du64;
            for i in (0..good.len().min(4096)).step_by(7) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let mut bad = good.clone();
                bad[i] ^= (rng as u8) | 1;
                crate::fuzzing::image(&bad);
            }
            for cut in (0..good.len()).step_by(211) {
                crate::fuzzing::image(&good[..cut]);
            }
        }
    }
}
