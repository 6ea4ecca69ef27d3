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
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Files owned by packages of one kind: machine path → owner.
pub type OwnerMap = HashMap<PathBuf, Owner>;

pub use crate::python::cuda_related;

/// pip: every file listed by the CUDA-related `*.dist-info/RECORD`s of a site-packages directory.
pub fn pip(root: &Root, site: &Path) -> OwnerMap {
    let mut map = OwnerMap::new();
    // The name is all it takes to choose: a site-packages of hundreds of distributions is one listing.
    let related =
        |n: &OsStr| dist_info_name(&n.to_string_lossy()).is_some_and(|(name, _)| cuda_related(name));
    for d in root.read_dir_names(site, related).unwrap_or_default() {
        let dir_name = d.to_string_lossy();
        let Some((name, version)) = dist_info_name(&dir_name) else {
            continue;
        };
        let owner = Owner {
            kind: "pip".into(),
            name: name.replace('_', "-").to_ascii_lowercase(),
            version: Some(version.to_string()),
        };
        // Only its libraries are kept, read a piece at a time and shared with the import models through the
        // root's memo (torch's `RECORD` is 1.3 MB, of which fourteen lines name a `.so`).
        crate::python::dist_info::with_record_libraries(root, &site.join(&d).join("RECORD"), |files| {
            for file in files {
                map.insert(site.join(&**file), owner.clone());
            }
        });
    }
    map
}

/// `nvidia_cublas_cu12-12.4.5.8.dist-info` → (`nvidia_cublas_cu12`, `12.4.5.8`).
fn dist_info_name(dir_name: &str) -> Option<(&str, &str)> {
    dir_name.strip_suffix(".dist-info")?.split_once('-')
}

pub use crate::python::conda::records as conda;

/// dpkg: every shared library listed by a CUDA-related package, with the version `status` records for it.
pub fn dpkg(root: &Root) -> OwnerMap {
    let mut map = OwnerMap::new();
    // The packages first, by their `*.list` names: a machine without CUDA packages reads no `status` (the
    // whole of it is hundreds of KB, a stanza for every package).
    let info = Path::new("/var/lib/dpkg/info");
    let lists = root.read_dir_names(info, |n| {
        package_of_list(&n.to_string_lossy()).is_some_and(cuda_related)
    });
    let lists = lists.unwrap_or_default();
    if lists.is_empty() {
        return map;
    }
    let Ok(status) = root.read_to_string(Path::new("/var/lib/dpkg/status"), read::DPKG_STATUS) else {
        return map;
    };
    let names: Vec<String> = lists.iter().map(|n| n.to_string_lossy().into_owned()).collect();
    let wanted: HashSet<&str> = names.iter().filter_map(|n| package_of_list(n)).collect();
    let versions = dpkg_versions(&status, &wanted);
    for (file, name) in lists.iter().zip(&names) {
        let Some(pkg) = package_of_list(name) else {
            continue;
        };
        let Ok(list) = root.read_to_string(&info.join(file), read::PACKAGE_METADATA) else {
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

/// `libcublas-12-4.list` and `libcudnn9:amd64.list` → `libcublas-12-4`, `libcudnn9`.
fn package_of_list(file_name: &str) -> Option<&str> {
    let pkg = file_name.strip_suffix(".list")?;
    Some(pkg.split(':').next().unwrap_or(pkg))
}

/// `Package:` → `Version:` of the stanzas of dpkg's `status` that name a `wanted` package (the last stanza
/// wins, as for a package installed for two architectures). A stanza's first line is its `Package:`
/// (deb822(5) does not order fields; dpkg writes it first): a stanza of another package is left at its
/// first line; one that does not start so is searched whole.
fn dpkg_versions(status: &str, wanted: &HashSet<&str>) -> HashMap<String, String> {
    let mut versions = HashMap::new();
    let mut start = 0;
    let ends = memchr::memmem::find_iter(status.as_bytes(), b"\n\n").chain([status.len()]);
    for end in ends {
        // `\n\n` is ASCII: both ends are character boundaries.
        let stanza = &status[start..end];
        start = (end + 2).min(status.len());
        let first = stanza.lines().next().unwrap_or_default();
        if first
            .strip_prefix("Package:")
            .is_some_and(|p| !wanted.contains(p.trim()))
        {
            continue;
        }
        let get = |k: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_string()))
        };
        if let (Some(p), Some(v)) = (get("Package:"), get("Version:")) {
            versions.insert(p, v);
        }
    }
    versions
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stanza's `Package:` → `Version:`, as the status was read before it was read only for the
    /// packages asked about.
    fn every_version(status: &str) -> HashMap<String, String> {
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
        versions
    }

    #[test]
    fn dpkg_versions_of_the_packages_asked_about() {
        let status = "Package: libc6\nArchitecture: amd64\nVersion: 2.39-0ubuntu8\n\n\
            Package: cuda-cudart-12-4\nStatus: install ok installed\nVersion: 12.4.127-1\n\n\
            Package: libcudnn9\r\nVersion: 9.1.0.70-1\r\n\r\n\n\
            Package: libnccl2\nArchitecture: amd64\nVersion: 2.21.5-1+cuda12.4\n\n\
            Package: libnccl2\nArchitecture: i386\nVersion: 2.21.5-2+cuda12.4\n\n\n\
            Status: install ok installed\nPackage: libcublas-12-4\nVersion: 12.4.5.8-1\n\n\
            Package:   libnvjitlink-12-4  \nDescription: x\n Version: 1\nVersion: 12.4.127-1\n\n\
            Package: libcufft-12-4\n\n";
        let asked = [
            "libc6",
            "cuda-cudart-12-4",
            "libcudnn9",
            "libnccl2",
            "libcublas-12-4",
            "libnvjitlink-12-4",
            "libcufft-12-4",
            "absent",
        ];
        let every = every_version(status);
        for n in 0..asked.len() {
            let wanted: HashSet<&str> = asked[n..].iter().copied().collect();
            let got = dpkg_versions(status, &wanted);
            for w in &wanted {
                assert_eq!(got.get(*w), every.get(*w), "{w}, asking for {wanted:?}");
            }
        }
        let all: HashSet<&str> = asked.into_iter().collect();
        let got = dpkg_versions(status, &all);
        assert_eq!(got["libnccl2"], "2.21.5-2+cuda12.4");
        assert_eq!(got["libcublas-12-4"], "12.4.5.8-1");
        assert_eq!(got["libcudnn9"], "9.1.0.70-1");
        assert!(!got.contains_key("libcufft-12-4"));
        // A stanza of a package nobody asked about is passed over at its first line, and does not land in
        // the map; one whose first line is not its `Package:` is read whole (libcublas-12-4).
        let one: HashSet<&str> = ["libcudnn9"].into_iter().collect();
        let mut keys: Vec<String> = dpkg_versions(status, &one).into_keys().collect();
        keys.sort();
        assert_eq!(keys, ["libcublas-12-4", "libcudnn9"]);
    }

    #[test]
    fn dpkg_owners_only_for_cuda_packages() {
        let t = tempfile::tempdir().unwrap();
        let put = |p: &str, s: &str| crate::system::put(t.path(), p, s.as_bytes());
        put(
            "var/lib/dpkg/status",
            "Package: cuda-cudart-12-4\nVersion: 12.4.127-1\n\nPackage: libc6\nVersion: 2.39-0ubuntu8\n",
        );
        put(
            "var/lib/dpkg/info/cuda-cudart-12-4.list",
            "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127\n/usr/share/doc/x\n",
        );
        put(
            "var/lib/dpkg/info/libc6:amd64.list",
            "/usr/lib/x86_64-linux-gnu/libc.so.6\n",
        );
        let root = Root::at(t.path());
        let map = dpkg(&root);
        assert_eq!(map.len(), 1);
        let o = &map[Path::new("/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127")];
        assert_eq!(
            (o.name.as_str(), o.version.as_deref()),
            ("cuda-cudart-12-4", Some("12.4.127-1"))
        );
        // No status: no owners, as before (the lists alone name no version).
        std::fs::remove_file(t.path().join("var/lib/dpkg/status")).unwrap();
        assert!(dpkg(&root).is_empty());
    }
}
