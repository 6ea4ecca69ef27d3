//! How the objects that ask for a missing library were installed: the facts a fix needs to name what to
//! install ("`pip install nvidia-cudnn-cu13==9.19.0.56`", not "install the package that provides it").
//!
//! Read beside each requester, through the root:
//! - pip: the object is under a `site-packages` (or `dist-packages`) directory. The distribution that owns it
//!   is the `*.dist-info` whose `RECORD` lists the file (PEP 376, PEP 627); its `METADATA` holds the
//!   `Requires-Dist` lines (core metadata 2.1+, PEP 566) with the exact pins pip installs beside it. A
//!   `dist-info/INSTALLER` of `conda` means conda installed it: the conda rules apply then.
//! - conda: an ancestor directory has `conda-meta/` (the environment prefix).
//! - otherwise, the system's package manager: `/var/lib/dpkg/status` (Debian, Ubuntu) or `/var/lib/rpm`
//!   (RHEL, Fedora, SUSE).
//!
//! Read for the requesters of a library no step found, and for the requesters under `site-packages` of an
//! NVIDIA library whose loaded copy names its full version (`libcudnn.so.9.14.0`: a toolkit's or the system's
//! copy, not the pip one, whose file is named by its SONAME alone), for `cuda-library-too-old`. A healthy
//! pip-only tree costs nothing here.

use crate::facts::loader::{
    Floor, FloorOp, How, Installed, MetadataLine, Origin, PackageManager, PipDist, Resolution, release,
};
use crate::system::{Root, read};
use std::collections::BTreeSet;
use std::path::Path;

// Reading a floor takes the PEP 508 parser of `inspect::wheel`, so it lives with the collector, not the facts.
impl Floor {
    /// The floor of a `Requires-Dist` value (`nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"`): the
    /// highest lower bound of its clauses (`>=9.8,<10.0` → 9.8). `None` when no clause sets one, when a
    /// version is not a plain release (an epoch, a local version), or when the marker rules Linux out.
    pub fn of(text: &str) -> Option<Floor> {
        let req = crate::inspect::pep508::requirement(text, &crate::inspect::pep508::Env::default())?;
        if req.installed == crate::facts::Installed::Never {
            return None;
        }
        let mut best: Option<Floor> = None;
        for clause in req.specifier.split(',').filter(|c| !c.is_empty()) {
            let (op, rest) = if let Some(v) = clause.strip_prefix("===") {
                (FloorOp::Pinned, v)
            } else if let Some(v) = clause.strip_prefix("==") {
                (FloorOp::Pinned, v)
            } else if let Some(v) = clause.strip_prefix(">=").or_else(|| clause.strip_prefix("~=")) {
                (FloorOp::AtLeast, v)
            } else if let Some(v) = clause.strip_prefix('>') {
                (FloorOp::AtLeast, v)
            } else {
                continue;
            };
            let version = rest.strip_suffix(".*").unwrap_or(rest);
            let Some(release) = release(version) else {
                continue;
            };
            if best.as_ref().is_none_or(|b| release > b.release) {
                best = Some(Floor {
                    name: req.name.clone(),
                    op,
                    version: version.to_string(),
                    release,
                });
            }
        }
        best
    }
}

/// The NVIDIA libraries whose pinned version `cuda-library-too-old` compares with the loaded copy's: the
/// stems (the name before `.so`) of the SONAMEs `data/pip_cuda.toml` lists whose toolkit and system copies
/// carry their full version in the file name.
pub const VERSIONED_STEMS: &[&str] = &[
    "libcudart",
    "libcublas",
    "libcublasLt",
    "libcudnn",
    "libcufft",
    "libcurand",
    "libcusolver",
    "libcusparse",
    "libnccl",
    "libnvJitLink",
    "libnvrtc",
];

/// Fills [`Resolution::origins`] for every object that requested a library no step found, and for every
/// object under `site-packages` whose NVIDIA library ([`VERSIONED_STEMS`]) was loaded from a file that names a
/// version beyond the major.
pub fn fill(root: &Root, res: &mut Resolution) {
    let requesters: BTreeSet<usize> = res
        .libraries
        .iter()
        .filter(|l| l.how == How::NotFound || pinned_candidate(res, l))
        .map(|l| l.needed_by_index)
        .collect();
    if requesters.is_empty() {
        return;
    }
    let manager = if root.exists(Path::new("/var/lib/dpkg/status")) {
        Some(PackageManager::Dpkg)
    } else if root.exists(Path::new("/var/lib/rpm")) {
        Some(PackageManager::Rpm)
    } else {
        None
    };
    let mut records = Records::default();
    for i in requesters {
        let Some(o) = res.objects.get(i) else {
            continue;
        };
        let installed = of(root, &o.realpath, &mut records).unwrap_or(Installed::System { manager });
        res.origins.push(Origin {
            object: o.path.clone(),
            installed,
        });
    }
}

/// A found NVIDIA library, loaded from a file whose name gives more than its major, for a requester under
/// `site-packages`: its package's pin can be compared with the loaded version.
fn pinned_candidate(res: &Resolution, l: &crate::facts::loader::Library) -> bool {
    let stem = l.soname.split(".so").next().unwrap_or(&l.soname);
    if !VERSIONED_STEMS.contains(&stem) {
        return false;
    }
    let Some(o) = l.object.and_then(|i| res.objects.get(i)) else {
        return false;
    };
    o.version.as_deref().is_some_and(|v| v.contains('.'))
        && res
            .objects
            .get(l.needed_by_index)
            .is_some_and(|r| site_packages(Path::new(&r.realpath)).is_some())
}

/// The files each `*.dist-info/RECORD` lists, read once per run (torch's lists some twenty thousand, and
/// several of its libraries may miss a library).
#[derive(Default)]
struct Records(std::collections::HashMap<std::path::PathBuf, Option<std::collections::HashSet<String>>>);

impl Records {
    fn lists(&mut self, root: &Root, info: &Path, rel: &str) -> bool {
        self.0
            .entry(info.to_path_buf())
            .or_insert_with(|| {
                let text = root
                    .read_to_string(&info.join("RECORD"), read::PACKAGE_METADATA)
                    .ok()?;
                Some(
                    text.lines()
                        .filter_map(|l| l.split(',').next())
                        .map(str::to_string)
                        .collect(),
                )
            })
            .as_ref()
            .is_some_and(|files| files.contains(rel))
    }
}

/// How the object at `real` (a real path inside the root) was installed, when pip or conda did it.
fn of(root: &Root, real: &str, records: &mut Records) -> Option<Installed> {
    let path = Path::new(real);
    if let Some((site, rel)) = site_packages(path) {
        let dist = owning_dist(root, &site, &rel, records);
        // conda installs Python packages with a dist-info too, and says so in its INSTALLER file.
        if dist.as_ref().is_some_and(|(_, installer)| installer == "conda")
            && let Some(prefix) = conda_prefix(root, path)
        {
            return Some(Installed::Conda { prefix });
        }
        return Some(Installed::Pip {
            site: site.to_string_lossy().into_owned(),
            dist: dist.map(|(d, _)| d),
        });
    }
    conda_prefix(root, path).map(|prefix| Installed::Conda { prefix })
}

/// The `site-packages` (or `dist-packages`) ancestor of a path, and the path relative to it.
fn site_packages(path: &Path) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d.file_name()
            .is_some_and(|n| n == "site-packages" || n == "dist-packages")
        {
            let rel = path.strip_prefix(d).ok()?.to_path_buf();
            return Some((d.to_path_buf(), rel));
        }
        dir = d.parent();
    }
    None
}

/// The ancestor directory of `path` that holds `conda-meta/`.
fn conda_prefix(root: &Root, path: &Path) -> Option<String> {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if root.metadata(&d.join("conda-meta")).is_ok_and(|m| m.is_dir()) {
            return Some(d.to_string_lossy().into_owned());
        }
        dir = d.parent();
    }
    None
}

/// The distribution of `site` whose `RECORD` lists `rel`, with its installer (`pip`, `conda`, `uv`). The
/// distributions named like the top-level directory of `rel` are read first (`torch/lib/x.so` →
/// `torch-*.dist-info`), so the usual case reads one RECORD.
fn owning_dist(root: &Root, site: &Path, rel: &Path, records: &mut Records) -> Option<(PipDist, String)> {
    let top = rel
        .components()
        .next()
        .map(|c| crate::inspect::pep508::normalise(&c.as_os_str().to_string_lossy()))?;
    let rel_s = rel.to_string_lossy();
    let mut infos: Vec<(bool, std::path::PathBuf)> = root
        .read_dir(site)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|d| {
            let name = d.file_name()?.to_string_lossy().into_owned();
            let stem = name.strip_suffix(".dist-info")?;
            let dist = crate::inspect::pep508::normalise(stem.split('-').next().unwrap_or(stem));
            Some((dist != top, d))
        })
        .collect();
    infos.sort();
    for (_, info) in infos {
        if !records.lists(root, &info, &rel_s) {
            continue;
        }
        let metadata = info.join("METADATA");
        let text = root.read_to_string(&metadata, read::PACKAGE_METADATA).ok()?;
        let installer = root
            .read_to_string(&info.join("INSTALLER"), read::PACKAGE_METADATA)
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        return Some((parse_metadata(&text, &metadata.to_string_lossy())?, installer));
    }
    None
}

/// The name, version and `Requires-Dist` lines of a core-metadata file (its headers: the lines before the
/// first blank line).
pub fn parse_metadata(text: &str, path: &str) -> Option<PipDist> {
    let (mut name, mut version, mut requires) = (None, None, Vec::new());
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Version:") {
            version = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Requires-Dist:") {
            let text = v.trim().to_string();
            requires.push(MetadataLine {
                line: i + 1,
                floor: Floor::of(&text),
                text,
            });
        }
    }
    Some(PipDist {
        name: name?,
        version: version?,
        metadata: path.to_string(),
        requires,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_headers_with_line_numbers() {
        let m = parse_metadata(
            "Metadata-Version: 2.4\nName: torch\nVersion: 2.11.0\nRequires-Dist: filelock\n\
             Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n\n\
             Requires-Dist: not a header\n",
            "/sp/torch-2.11.0.dist-info/METADATA",
        )
        .unwrap();
        assert_eq!((m.name.as_str(), m.version.as_str()), ("torch", "2.11.0"));
        assert_eq!(m.requires.len(), 2);
        assert_eq!(m.requires[1].line, 5);
        assert!(m.requires[1].text.starts_with("nvidia-cudnn-cu13==9.19.0.56"));
        assert!(parse_metadata("Name: x\n", "M").is_none(), "no version");
    }

    #[test]
    fn floors_of_requirements() {
        let f = Floor::of("nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"").unwrap();
        assert_eq!(
            (f.name.as_str(), f.op, f.version.as_str(), f.release.as_slice()),
            (
                "nvidia-cudnn-cu13",
                FloorOp::Pinned,
                "9.19.0.56",
                &[9, 19, 0, 56][..]
            )
        );
        let f = Floor::of("nvidia-cudnn-cu12<10.0,>=9.8; extra == \"with-cuda\"").unwrap();
        assert_eq!((f.op, f.release.as_slice()), (FloorOp::AtLeast, &[9, 8][..]));
        assert_eq!(Floor::of("nvidia-nccl-cu12==2.21.*").unwrap().version, "2.21");
        assert_eq!(
            Floor::of("nvidia-cublas-cu12~=12.4").unwrap().op,
            FloorOp::AtLeast
        );
        assert!(Floor::of("nvidia-cudnn-cu12<10").is_none(), "no lower bound");
        assert!(Floor::of("filelock").is_none());
        assert!(
            Floor::of("nvidia-cudnn-cu12==9.1.0.70; platform_system == \"Windows\"").is_none(),
            "not on Linux"
        );
        assert_eq!(release("12.8.0rc1"), Some(vec![12, 8, 0]));
        assert_eq!(release("1!2.0"), None);
        assert_eq!(release("x"), None);
    }

    #[test]
    fn site_packages_ancestor() {
        let (site, rel) = site_packages(Path::new(
            "/v/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
        ))
        .unwrap();
        assert_eq!(site, Path::new("/v/lib/python3.12/site-packages"));
        assert_eq!(rel, Path::new("torch/lib/libtorch_cuda.so"));
        assert!(site_packages(Path::new("/usr/lib/libx.so")).is_none());
    }
}
