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
    // dpkg's records (a listing of thousands of `*.list` files) only once a library needs them.
    let mut dpkg: Option<OwnerMap> = None;
    let mut pip: HashMap<PathBuf, OwnerMap> = HashMap::new();
    let mut conda: HashMap<PathBuf, OwnerMap> = HashMap::new();
    let mut toolkits: HashMap<PathBuf, Option<owners::ToolkitVersions>> = HashMap::new();
    let mut runtime: HashMap<PathBuf, Option<String>> = HashMap::new();
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
            Place::Site(site) => lookup(pip.entry(site.clone()).or_insert_with(|| owners::pip(root, site))),
            Place::Conda(prefix) => lookup(
                conda
                    .entry(prefix.clone())
                    .or_insert_with(|| owners::conda(root, prefix)),
            ),
            _ => None,
        }
        .or_else(|| lookup(dpkg.get_or_insert_with(|| owners::dpkg(root))));
        let tk = match &f.place {
            Place::Toolkit(t) => toolkits
                .entry(t.clone())
                .or_insert_with(|| owners::toolkit(root, t))
                .clone()
                .map(|v| (t.clone(), v)),
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
            runtime
                .entry(f.real.clone())
                .or_insert_with(|| runtime_constant(root, &f.real))
                .clone()
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
    use super::upstream;

    #[test]
    fn debian_versions() {
        assert_eq!(upstream("deb", "12.4.127-1"), "12.4.127");
        assert_eq!(upstream("deb", "1:550.90.07-0ubuntu1"), "550.90.07");
        assert_eq!(upstream("deb", "9.1.0.70-1+cuda12.4"), "9.1.0.70");
        assert_eq!(upstream("pip", "12.8.90"), "12.8.90");
    }
}
