//! What each library file the catalogue found is: kind, soname, exact version and where it came from, owner.
//!
//! Version sources, most exact first (`docs/library-versions.md`): for the driver's libraries the
//! real file name (`libcuda.so.550.90.07`); otherwise the metadata of the package that installed the file (pip
//! `*.dist-info`, `conda-meta/*.json`, dpkg; a framework wheel that merely vendors a copy, such as torch, says
//! nothing about that copy's version); a toolkit's `version.json` component; the real file name
//! (`libcudart.so.12.4.127`); and, for a libcudart, the constant its `cudaRuntimeGetVersion` stores, read from
//! its code (`inspect::elf::version_from_function`).

use super::catalog::{Found, Place, kind_of_name, lib_name};
use super::libcuda;
use super::owners::{self, OwnerMap};
use crate::facts::host::{LibKind, LibraryEntry, Owner};
use crate::system::Root;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Owners and versions for every found file.
pub(super) fn describe(root: &Root, found: Vec<Found>) -> Vec<LibraryEntry> {
    let Sources {
        mut dpkg,
        pip,
        conda,
        toolkits,
        runtime,
    } = Sources::read(root, &found);
    let mut out = Vec::new();
    for f in found {
        let lib_kind = crate::facts::host::LibKind::of(&f.path, &f.real);
        let name_kind = kind_of_name(&f.base);
        let kind = match lib_kind {
            LibKind::Stub => "stub".to_string(),
            LibKind::Compat => "compat".to_string(),
            _ => name_kind.clone(),
        };
        let major = f
            .suffix
            .trim_start_matches('.')
            .split('.')
            .next()
            .unwrap_or_default();
        let soname = if major.is_empty() {
            format!("{}.so", f.base)
        } else {
            format!("{}.so.{major}", f.base)
        };
        let lookup = |m: &OwnerMap| m.get(&f.path).or_else(|| m.get(&f.real)).cloned();
        let pkg_owner = match &f.place {
            Place::Site(site) => pip.get(site).and_then(lookup),
            Place::Conda(prefix) => conda.get(prefix).and_then(lookup),
            _ => None,
        }
        .or_else(|| lookup(dpkg.get_or_insert_with(|| owners::dpkg(root))));
        let tk = match &f.place {
            Place::Toolkit(t) => toolkits.get(t).cloned().flatten().map(|v| (t.clone(), v)),
            _ => None,
        };
        let real_name = f
            .real
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name_version = lib_name(&real_name)
            .map(|(_, suffix)| suffix.trim_start_matches('.').to_string())
            .filter(|v| !v.is_empty());
        let mut version = None;
        if driver_library(&name_kind) {
            version = libcuda::version_in_name(&f.real, &format!("{}.so", f.base))
                .map(|v| (v, format!("file name {real_name}")));
        }
        if version.is_none()
            && let Some(o) = pkg_owner
                .as_ref()
                .filter(|o| o.kind != "pip" || owners::cuda_related(&o.name) && !o.name.contains("torch"))
            && let Some(v) = &o.version
        {
            version = Some((upstream(&o.kind, v), format!("{} package {} {v}", o.kind, o.name)));
        }
        if version.is_none()
            && let Some((t, tv)) = &tk
            && let Some(c) = owners::component_of(&name_kind)
            && let Some(v) = tv.components.get(c)
        {
            version = Some((v.clone(), format!("{}/version.json {c}", t.display())));
        }
        if version.is_none()
            && let Some(v) = name_version.as_ref().filter(|v| v.contains('.'))
        {
            version = Some((v.clone(), format!("file name {real_name}")));
        }
        let runtime_version = if name_kind == "cudart" {
            runtime.get(&f.real).cloned().flatten()
        } else {
            None
        };
        if version.is_none()
            && let Some(v) = &runtime_version
        {
            version = Some((v.clone(), "the constant cudaRuntimeGetVersion stores".to_string()));
        }
        let owner = pkg_owner
            .or_else(|| {
                tk.as_ref().map(|(t, tv)| Owner {
                    kind: "toolkit".into(),
                    name: t.display().to_string(),
                    version: tv.toolkit.clone(),
                })
            })
            .or_else(|| {
                (driver_library(&name_kind) && lib_kind == LibKind::Driver && f.place == Place::Loader).then(
                    || Owner {
                        kind: "driver".into(),
                        name: "NVIDIA driver".into(),
                        version: version.as_ref().map(|v| v.0.clone()),
                    },
                )
            });
        out.push(LibraryEntry {
            soname,
            path: f.path.display().to_string(),
            real_path: f.real.display().to_string(),
            kind,
            version: version.as_ref().map(|v| v.0.clone()),
            version_source: version.map(|v| v.1),
            runtime_version,
            owner,
            scan_root: f.scan_root.display().to_string(),
        });
    }
    out
}

/// What [`describe`] looks up once per place rather than per library: the owners recorded by each
/// site-packages, conda environment and dpkg, each toolkit's `version.json`, each libcudart's run-time
/// constant. They are independent reads (dpkg's `*.list` files, a venv's `RECORD`s, a whole libcudart), done
/// side by side: one after another they were half of the catalogue's thread of `doctor` on the GPU machine
/// (8–10 ms of 16–20, with apt's cuDNN, a toolkit and a venv of 197 distributions).
#[derive(Default)]
struct Sources {
    /// `None` until a library needs it: dpkg's records are read only for a file outside every
    /// site-packages and conda environment, or one their records do not list.
    dpkg: Option<OwnerMap>,
    pip: HashMap<PathBuf, OwnerMap>,
    conda: HashMap<PathBuf, OwnerMap>,
    toolkits: HashMap<PathBuf, Option<owners::ToolkitVersions>>,
    runtime: HashMap<PathBuf, Option<String>>,
}

/// One read of [`Sources`].
#[derive(Clone, PartialEq, Eq, Hash)]
enum Source {
    Dpkg,
    Pip(PathBuf),
    Conda(PathBuf),
    Toolkit(PathBuf),
    Runtime(PathBuf),
}

/// What a [`Source`] gave, with the place it was read for.
enum Answer {
    Dpkg(OwnerMap),
    Pip(PathBuf, OwnerMap),
    Conda(PathBuf, OwnerMap),
    Toolkit(PathBuf, Option<owners::ToolkitVersions>),
    Runtime(PathBuf, Option<String>),
}

impl Sources {
    /// Every source some file of `found` asks, read on up to eight threads. dpkg is read here only when a
    /// file lies outside the site-packages and conda environments (the rest of the time it is needed only
    /// for a file their records miss, and [`describe`] reads it then).
    fn read(root: &Root, found: &[Found]) -> Sources {
        let mut jobs = Vec::new();
        let mut asked = std::collections::HashSet::new();
        let mut add = |job: Source| {
            if asked.insert(job.clone()) {
                jobs.push(job);
            }
        };
        for f in found {
            match &f.place {
                Place::Site(site) => add(Source::Pip(site.clone())),
                Place::Conda(prefix) => add(Source::Conda(prefix.clone())),
                Place::Toolkit(t) => {
                    add(Source::Toolkit(t.clone()));
                    add(Source::Dpkg);
                }
                Place::Loader => add(Source::Dpkg),
            }
            if kind_of_name(&f.base) == "cudart" {
                add(Source::Runtime(f.real.clone()));
            }
        }
        let answers = crate::parallel::map(&jobs, 8, |job| match job {
            Source::Dpkg => Answer::Dpkg(owners::dpkg(root)),
            Source::Pip(site) => Answer::Pip(site.clone(), owners::pip(root, site)),
            Source::Conda(prefix) => Answer::Conda(prefix.clone(), owners::conda(root, prefix)),
            Source::Toolkit(t) => Answer::Toolkit(t.clone(), owners::toolkit(root, t)),
            Source::Runtime(real) => Answer::Runtime(real.clone(), runtime_constant(root, real)),
        });
        let mut s = Sources::default();
        for answer in answers {
            match answer {
                Answer::Dpkg(m) => s.dpkg = Some(m),
                Answer::Pip(site, m) => _ = s.pip.insert(site, m),
                Answer::Conda(prefix, m) => _ = s.conda.insert(prefix, m),
                Answer::Toolkit(t, v) => _ = s.toolkits.insert(t, v),
                Answer::Runtime(real, v) => _ = s.runtime.insert(real, v),
            }
        }
        s
    }
}

/// The upstream part of a package version: Debian's `[epoch:]upstream[-revision]` (deb-version(7)) gives
/// `12.4.127` for `12.4.127-1`; pip and conda versions are upstream already.
fn upstream(kind: &str, v: &str) -> String {
    if kind != "deb" {
        return v.to_string();
    }
    let v = v.split_once(':').map_or(v, |(_, rest)| rest);
    v.rsplit_once('-').map_or(v, |(up, _)| up).to_string()
}

/// Libraries the driver installs (their file names carry the driver version).
fn driver_library(kind: &str) -> bool {
    matches!(kind, "libcuda" | "nvml" | "cudadebugger") || kind.starts_with("nvidia-")
}

/// The runtime version a libcudart's `cudaRuntimeGetVersion` stores (`12.4`), read from its code.
fn runtime_constant(root: &Root, real: &Path) -> Option<String> {
    let bytes = root.read(real, crate::system::read::LIBRARY).ok()?;
    if !bytes.starts_with(b"\x7fELF") {
        return None;
    }
    crate::inspect::elf::library_runtime_version(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_versions() {
        assert_eq!(upstream("deb", "12.4.127-1"), "12.4.127");
        assert_eq!(upstream("deb", "1:550.90.07-0ubuntu1"), "550.90.07");
        assert_eq!(upstream("deb", "9.1.0.70-1+cuda12.4"), "9.1.0.70");
        assert_eq!(upstream("pip", "12.8.90"), "12.8.90");
    }

    fn write(root: &Path, path: &str, text: &str) {
        let p = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn found(path: &str, base: &str, suffix: &str, place: Place) -> Found {
        Found {
            path: path.into(),
            real: path.into(),
            base: base.into(),
            suffix: suffix.into(),
            place,
            scan_root: Path::new(path).parent().unwrap().into(),
        }
    }

    /// dpkg is read ahead only for files outside the Python environments; a site-packages file its pip
    /// records do not list (Debian's `python3-*` packages put wheels' files under `dist-packages`) still gets
    /// its dpkg owner, read when that file asks.
    #[test]
    fn a_file_no_pip_record_lists_gets_its_dpkg_owner() {
        let t = tempfile::tempdir().unwrap();
        let site = "/usr/lib/python3/dist-packages";
        let lib = format!("{site}/nvidia/cudnn/lib/libcudnn.so.9");
        write(t.path(), &lib, "");
        write(
            t.path(),
            "/var/lib/dpkg/info/libcudnn9-cuda-12.list",
            &format!("/usr\n{lib}\n"),
        );
        write(
            t.path(),
            "/var/lib/dpkg/status",
            "Package: bash\nVersion: 5.2\n\nPackage: libcudnn9-cuda-12\nStatus: install ok installed\nVersion: 9.1.0.70-1\n",
        );
        // A pip-owned file beside it: its owner comes from the RECORD, read side by side with the rest.
        let owned = format!("{site}/nvidia/cublas/lib/libcublas.so.12");
        write(t.path(), &owned, "");
        write(
            t.path(),
            &format!("{site}/nvidia_cublas_cu12-12.4.5.8.dist-info/RECORD"),
            "nvidia/cublas/lib/libcublas.so.12,sha256=x,1\n",
        );
        let root = Root::at(t.path());
        let place = Place::Site(site.into());
        let out = describe(
            &root,
            vec![
                found(&lib, "libcudnn", ".9", place.clone()),
                found(&owned, "libcublas", ".12", place),
            ],
        );
        let owner = out[0].owner.as_ref().expect("dpkg owns it");
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("deb", "libcudnn9-cuda-12")
        );
        assert_eq!(out[0].version.as_deref(), Some("9.1.0.70"));
        let owner = out[1].owner.as_ref().expect("pip owns it");
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("pip", "nvidia-cublas-cu12")
        );
        assert_eq!(out[1].version.as_deref(), Some("12.4.5.8"));
    }
}
