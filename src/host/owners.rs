//! Who installed a library, and the version its installer recorded.
//!
//! Package metadata is the most exact source of a library's version (`docs/library-versions.md`):
//! - pip: `<site-packages>/<name>-<version>.dist-info/RECORD` lists every installed file (PEP 376, PEP 627);
//!   the directory name carries the distribution's name and version (PEP 427 escaping: `-` becomes `_`).
//! - conda: `<prefix>/conda-meta/<name>-<version>-<build>.json` has `name`, `version` and `files` (paths
//!   relative to the prefix).
//! - dpkg: `/var/lib/dpkg/info/<package>[:arch].list` lists a package's files, `/var/lib/dpkg/status` its
//!   `Version:`.
//! - A toolkit's `version.json` (CUDA 11.1+) gives the toolkit's version and each component's
//!   (`cuda_cudart`, `libcublas`, …).
//!
//! Only packages whose names look CUDA-related are read, so a site-packages with hundreds of unrelated
//! distributions costs one directory listing.

use crate::facts::host::Owner;
use crate::system::{Root, read};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Files owned by packages of one kind: machine path → owner.
pub type OwnerMap = HashMap<PathBuf, Owner>;

pub use crate::python::cuda_related;

/// pip: every file listed by the CUDA-related `*.dist-info/RECORD`s of a site-packages directory.
pub fn pip(root: &Root, site: &Path) -> OwnerMap {
    let mut map = OwnerMap::new();
    for d in root.read_dir(site).unwrap_or_default() {
        let Some(dir_name) = d.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        let Some(stem) = dir_name.strip_suffix(".dist-info") else {
            continue;
        };
        let Some((name, version)) = stem.split_once('-') else {
            continue;
        };
        if !cuda_related(name) {
            continue;
        }
        let Ok(record) = root.read_to_string(&d.join("RECORD"), read::PACKAGE_METADATA) else {
            continue;
        };
        let owner = Owner {
            kind: "pip".into(),
            name: name.replace('_', "-").to_ascii_lowercase(),
            version: Some(version.to_string()),
        };
        for line in record.lines() {
            let file = line.split(',').next().unwrap_or_default();
            if file.contains(".so") {
                map.insert(site.join(file), owner.clone());
            }
        }
    }
    map
}

pub use crate::python::conda::records as conda;

/// dpkg: every shared library listed by a CUDA-related package.
pub fn dpkg(root: &Root) -> OwnerMap {
    let mut map = OwnerMap::new();
    let Ok(status) = root.read_to_string(Path::new("/var/lib/dpkg/status"), read::DPKG_STATUS) else {
        return map;
    };
    let mut versions = HashMap::new();
    for stanza in status.split("\n\n") {
        let get = |k: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_string()))
        };
        if let (Some(p), Some(v)) = (get("Package:"), get("Version:")) {
            versions.insert(p, v);
        }
    }
    for f in root.read_dir(Path::new("/var/lib/dpkg/info")).unwrap_or_default() {
        let Some(name) = f.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        let Some(pkg) = name.strip_suffix(".list") else {
            continue;
        };
        let pkg = pkg.split(':').next().unwrap_or(pkg);
        if !cuda_related(pkg) {
            continue;
        }
        let Ok(list) = root.read_to_string(&f, read::PACKAGE_METADATA) else {
            continue;
        };
        let owner = Owner {
            kind: "deb".into(),
            name: pkg.to_string(),
            version: versions.get(pkg).cloned(),
        };
        for line in list.lines().filter(|l| l.contains(".so")) {
            map.insert(PathBuf::from(line), owner.clone());
        }
    }
    map
}

/// A toolkit's `version.json`: the toolkit version and its components' versions.
#[derive(Debug, Clone, Default)]
pub struct ToolkitVersions {
    /// `cuda.version` (`12.4.1`).
    pub toolkit: Option<String>,
    /// Component → version (`cuda_cudart` → `12.4.127`).
    pub components: HashMap<String, String>,
}

/// Reads `<dir>/version.json`.
pub fn toolkit(root: &Root, dir: &Path) -> Option<ToolkitVersions> {
    let text = root
        .read_to_string(&dir.join("version.json"), read::CONFIG_TEXT)
        .ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    let obj = doc.as_object()?;
    let mut tv = ToolkitVersions::default();
    for (k, v) in obj {
        if let Some(ver) = v["version"].as_str() {
            if k == "cuda" {
                tv.toolkit = Some(ver.to_string());
            } else {
                tv.components.insert(k.clone(), ver.to_string());
            }
        }
    }
    Some(tv)
}

/// The `version.json` component that ships a library kind.
pub fn component_of(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "cudart" => "cuda_cudart",
        "nvrtc" | "nvrtc-builtins" => "cuda_nvrtc",
        "cublas" => "libcublas",
        "cufft" | "cufftw" => "libcufft",
        "curand" => "libcurand",
        "cusolver" | "cusolvermg" => "libcusolver",
        "cusparse" => "libcusparse",
        "nvjitlink" => "libnvjitlink",
        "npp" => "libnpp",
        "nvjpeg" => "libnvjpeg",
        "cupti" => "cuda_cupti",
        "nvml" => "cuda_nvml_dev",
        "cufile" => "libcufile",
        _ => return None,
    })
}
