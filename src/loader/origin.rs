//! How the objects that ask for a missing library were installed: the facts a fix needs to name what to
//! install ("`pip install nvidia-cudnn-cu13==9.19.0.56`", not "install the package that provides it").
//!
//! Read beside each requester, through the root:
//! - pip: the distribution that owns the object is the `*.dist-info` whose `RECORD` lists the file (PEP 376,
//!   PEP 627), found wherever it is ([`crate::python::dist_info`]: a `site-packages`, a `pip install --target`
//!   directory, a `PYTHONPATH` entry, a Bazel or Spack tree); an object under a `site-packages` (or
//!   `dist-packages`) directory that no `RECORD` lists is still pip's environment. The `METADATA` holds the
//!   `Requires-Dist` lines (core metadata 2.1+, PEP 566) with the exact pins pip installs beside it, and the
//!   distribution's `Version`. A `dist-info/INSTALLER` of `conda` means conda installed it: the conda rules
//!   apply then.
//! - conda: an ancestor directory has `conda-meta/` (the environment prefix).
//! - otherwise, the system's package manager: `/var/lib/dpkg/status` (Debian, Ubuntu) or `/var/lib/rpm`
//!   (RHEL, Fedora, SUSE).
//!
//! Read for the requesters of a DT_NEEDED library no step found (the fix of one loaded with `dlopen`, or by
//! a path, names no package), and, for `cuda-library-too-old`, for the requesters of
//! an NVIDIA library whose loaded copy has a version beyond its major: a toolkit's or the system's copy whose
//! file name gives it (`libcudnn.so.9.14.0`), or a pip copy (named by its SONAME alone) whose distribution's
//! `METADATA` gives it (`nvidia-cudnn-cu13` 9.14.0.64); such a pip copy gets its own origin, which carries the
//! version. Whether a copy named by its SONAME alone is pip's is asked in the same round as the rest, so its
//! requesters are asked too, and their answers dropped when the copy is not pip's. Nothing else is read: a
//! binary outside any Python environment costs a few directory listings. Each object is asked about as soon as
//! a request of the walk makes it part of the plan ([`Early`]), on the walk's pool: the answers are in when the
//! walk ends.

use crate::facts::loader::{
    How, Installed, Library, LoadedObject, Origin, PackageManager, PipDist, Resolution,
};
use crate::parallel::{Parts, Pool};
use crate::python::dist_info::{self, Records};
use crate::python::metadata::parse_metadata;
use crate::system::{Root, read};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

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

/// What [`find`] needs of a [`Resolution`], taken from it when its tree is walked: the objects that requested
/// a library no step found, each NVIDIA library ([`VERSIONED_STEMS`]) loaded with the object that asked for
/// it, and every object's paths. Owned, so that the origins are gathered while the tree is finished (its
/// symbols read and checked, the copies of missing libraries searched), none of which they depend on; most
/// were asked while it was walked ([`Early`]).
pub struct Plan {
    /// Requesters of a DT_NEEDED library no step found, and of an NVIDIA library whose loaded copy's version is
    /// known beyond its major.
    wanted: BTreeSet<usize>,
    /// (requester, loaded copy) of an NVIDIA library named by its SONAME alone (a wheel's).
    versioned: Vec<(usize, usize)>,
    /// Those copies, each once: who installed each is asked.
    asks: Vec<usize>,
    /// Each object's path as opened and its real path, by index.
    objects: Vec<(String, String)>,
}

/// What one request adds to the plan: the objects whose installation it asks about.
enum Ask {
    /// The requester's (a DT_NEEDED library no step found, or an NVIDIA library whose loaded copy's version is
    /// known beyond its major).
    Wanted(usize),
    /// (requester, loaded copy) of an NVIDIA library named by its SONAME alone: both are asked.
    Versioned(usize, usize),
}

impl Ask {
    /// What request `l` of a tree whose objects are `objects` (so far) asks about, if anything.
    fn of(objects: &[LoadedObject], l: &Library) -> Option<Ask> {
        if l.how == How::NotFound {
            // A library loaded with `dlopen`, or by a path, that is missing is told alone
            // (`library-not-found` names no package for it, and the driver's own libraries are the driver
            // rules' question): its requesters' installation is no part of the answer. On a machine without
            // a driver, `libcuda.so.1` and NVML are missing for every NVIDIA library that loads them.
            return (!l.dlopen && !l.soname.contains('/')).then_some(Ask::Wanted(l.needed_by_index));
        }
        // The NVIDIA libraries loaded, each with the object that asked for it; a copy named by its SONAME
        // alone (a wheel's) is asked who installed it.
        let stem = l.soname.split(".so").next().unwrap_or(&l.soname);
        let j = l.object.filter(|_| VERSIONED_STEMS.contains(&stem))?;
        let o = objects.get(j)?;
        Some(match o.version.as_deref().is_some_and(|v| v.contains('.')) {
            true => Ask::Wanted(l.needed_by_index),
            false => Ask::Versioned(l.needed_by_index, j),
        })
    }

    /// The objects asked about.
    fn objects(&self) -> impl Iterator<Item = usize> {
        let (a, b) = match *self {
            Ask::Wanted(i) => (i, None),
            Ask::Versioned(i, j) => (i, Some(j)),
        };
        std::iter::once(a).chain(b)
    }
}

impl Plan {
    /// The plan of `res`, a tree walked to its end.
    pub fn of(res: &Resolution) -> Plan {
        let mut wanted: BTreeSet<usize> = BTreeSet::new();
        let mut versioned: Vec<(usize, usize)> = Vec::new();
        let mut asks: Vec<usize> = Vec::new();
        for l in &res.libraries {
            match Ask::of(&res.objects, l) {
                Some(Ask::Wanted(i)) => {
                    wanted.insert(i);
                }
                Some(Ask::Versioned(i, j)) => {
                    versioned.push((i, j));
                    if !asks.contains(&j) {
                        asks.push(j);
                    }
                }
                None => {}
            }
        }
        let objects = res
            .objects
            .iter()
            .map(|o| (o.path.clone(), o.realpath.clone()))
            .collect();
        Plan {
            wanted,
            versioned,
            asks,
            objects,
        }
    }
}

/// The questions of [`find`] asked while the tree is walked: as soon as a request makes an object's
/// installation part of the plan ([`Plan::of`] would ask it), who installed it is looked for on the walk's
/// pool, beside the walk. Its answer is then in when the walk ends, instead of being looked for after it (a
/// few `RECORD`s and `METADATA` for each NVIDIA library; on the GPU machine the finish waited up to 3 ms for
/// them).
#[derive(Default)]
pub struct Early {
    asked: HashMap<usize, Arc<Parts<Answer>>>,
}

impl Early {
    /// Asks, on `pool`, about the objects request `l` makes part of the plan (`objects`: the tree's so far,
    /// `l`'s included), each once.
    pub fn request(&mut self, root: &Root, pool: &mut Pool, objects: &[LoadedObject], l: &Library) {
        let Some(ask) = Ask::of(objects, l) else {
            return;
        };
        for i in ask.objects() {
            let Some(o) = objects.get(i) else { continue };
            if self.asked.contains_key(&i) {
                continue;
            }
            let done = Arc::new(Parts::new(1));
            self.asked.insert(i, done.clone());
            let (root, path, real) = (root.clone(), o.path.clone(), o.realpath.clone());
            pool.submit(move || {
                let answer = of(&root, &path, &real);
                done.add([answer]);
            });
        }
    }

    /// Drops the questions about objects from index `objects` on, as [`super::resolve::State`]'s rollback
    /// unmaps them: an index a later load takes again is asked about afresh, never answered for the object
    /// that had it before.
    pub fn forget_from(&mut self, objects: usize) {
        self.asked.retain(|&i, _| i < objects);
    }
}

/// The origins of [`Resolution::origins`], from the plan of the resolution: for every object that requested a
/// DT_NEEDED library no step found, for every object whose NVIDIA library ([`VERSIONED_STEMS`]) was loaded from
/// a copy whose version is known beyond its major, and for each such copy that pip installed (its origin
/// carries the distribution's version).
pub fn find(root: &Root, plan: Plan, mut early: Early, pool: &Pool) -> Vec<Origin> {
    let Plan {
        mut wanted,
        versioned,
        asks,
        objects,
    } = plan;
    // Every object that may be wanted is asked about, side by side on the walk's pool ([`Early`]; a venv's
    // fifteen NVIDIA wheels and the objects that load them): whether a copy of a wheel's library is wanted
    // depends on whether a `RECORD` lists it, which its own question answers. Each question reads `RECORD`s
    // (each file once for the run: the root remembers them).
    let mut asked: BTreeSet<usize> = wanted.clone();
    asked.extend(asks.iter().copied());
    asked.extend(versioned.iter().map(|&(needed_by, _)| needed_by));
    let asked: Vec<usize> = asked.into_iter().filter(|&i| i < objects.len()).collect();
    // Each was asked while the tree was walked: its answer is waited for. One that was not (no request of
    // the walk made it part of the plan) is asked here.
    let answers: Vec<Answer> = asked
        .iter()
        .map(|&i| {
            let known = early.asked.remove(&i).and_then(|done| done.wait(pool).pop());
            known.unwrap_or_else(|| {
                let (path, real) = &objects[i];
                of(root, path, real)
            })
        })
        .collect();
    let answer = |i: usize| asked.binary_search(&i).ok().map(|k| &answers[k]);
    for (needed_by, j) in versioned {
        if answer(j).is_some_and(|a| a.recorded) {
            wanted.insert(needed_by);
            wanted.insert(j);
        }
    }
    if wanted.is_empty() {
        return Vec::new();
    }
    let manager = if root.exists(Path::new("/var/lib/dpkg/status")) {
        Some(PackageManager::Dpkg)
    } else if root.exists(Path::new("/var/lib/rpm")) {
        Some(PackageManager::Rpm)
    } else {
        None
    };
    wanted
        .into_iter()
        .filter_map(|i| {
            let a = answer(i)?;
            Some(Origin {
                object: objects[i].0.clone(),
                installed: a.installed.clone().unwrap_or(Installed::System { manager }),
            })
        })
        .collect()
}

/// What [`of`] found of one object.
struct Answer {
    /// How it was installed, when pip or conda did it.
    installed: Option<Installed>,
    /// Whether a `RECORD` lists it.
    recorded: bool,
}

/// How the object opened as `opened`, whose real path is `real`, was installed, and whether a `RECORD` lists
/// it. One question: what several questions read alike (a directory's listing, a `RECORD`'s libraries, a
/// distribution's `METADATA`) the root remembers for the run.
fn of(root: &Root, opened: &str, real: &str) -> Answer {
    match Records::default().owner_of(root, real, opened) {
        Some(owned) => Answer {
            installed: Some(recorded(root, Path::new(real), &owned)),
            recorded: true,
        },
        None => Answer {
            installed: unrecorded(root, Path::new(real)),
            recorded: false,
        },
    }
}

/// How pip or conda installed an object whose distribution's `RECORD` lists it.
fn recorded(root: &Root, path: &Path, owned: &dist_info::Owned) -> Installed {
    // The installer and `METADATA` of the `.dist-info`, once for the run by a remembering root: torch's
    // objects are asked about one by one, and all of them have torch's `METADATA`.
    let read: Arc<(String, Option<PipDist>)> = root.remember(&owned.info, || {
        let metadata = owned.info.join("METADATA");
        let text = root.read_to_string(&metadata, read::PACKAGE_METADATA).ok();
        let held = text.as_ref().map_or(0, |t| t.len() as u64);
        let dist = text.and_then(|text| parse_metadata(&text, &metadata.to_string_lossy()));
        ((dist_info::installer(root, &owned.info), dist), held)
    });
    let (installer, dist) = &*read;
    // conda installs Python packages with a dist-info too, and says so in its INSTALLER file.
    if installer == "conda"
        && let Some(prefix) = conda_prefix(root, path)
    {
        return Installed::Conda { prefix };
    }
    Installed::Pip {
        site: owned.dir.to_string_lossy().into_owned(),
        dist: dist.clone(),
    }
}

/// How pip or conda installed an object no `RECORD` lists: under a `site-packages`, pip's environment still;
/// under a conda prefix, conda's.
fn unrecorded(root: &Root, path: &Path) -> Option<Installed> {
    if let Some((site, _)) = site_packages(path) {
        return Some(Installed::Pip {
            site: site.to_string_lossy().into_owned(),
            dist: None,
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
        if root.is_dir(&d.join("conda-meta")) {
            return Some(d.to_string_lossy().into_owned());
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asked_for_the_requesters_of_a_missing_dt_needed_library_only() {
        let object = |p: &str| crate::facts::loader::LoadedObject {
            path: p.into(),
            realpath: p.into(),
            ..Default::default()
        };
        let mut driver = crate::facts::loader::Library::unresolved("libcuda.so.1", "/w/libcudart.so.13", 1);
        driver.dlopen = true;
        let mut by_path = crate::facts::loader::Library::unresolved("/opt/x/libx.so", "/w/app", 0);
        by_path.dlopen = true;
        let res = Resolution {
            objects: vec![
                object("/w/app"),
                object("/w/libcudart.so.13"),
                object("/w/libcudnn.so.9"),
            ],
            libraries: vec![
                driver,
                by_path,
                crate::facts::loader::Library::unresolved("libcudnn_ops.so.9", "/w/libcudnn.so.9", 2),
            ],
            ..Default::default()
        };
        let plan = Plan::of(&res);
        assert_eq!(plan.wanted, BTreeSet::from([2]));
        assert!(plan.asks.is_empty() && plan.versioned.is_empty());
    }

    /// The answers asked while the tree was walked are the answers asked at its end.
    #[test]
    fn asked_during_the_walk_or_at_its_end_alike() {
        let t = tempfile::tempdir().unwrap();
        let put = |p: &str, b: &str| crate::system::put(t.path(), p, b.as_bytes());
        let site = "/v/lib/python3.12/site-packages";
        put(&format!("{site}/onnxruntime/capi/libprov.so"), "");
        put(
            &format!("{site}/onnxruntime_gpu-1.31.1.dist-info/RECORD"),
            "onnxruntime/capi/libprov.so,sha256=x,0\n",
        );
        put(
            &format!("{site}/onnxruntime_gpu-1.31.1.dist-info/METADATA"),
            "Name: onnxruntime-gpu\nVersion: 1.31.1\nRequires-Dist: nvidia-cublas>=13.0\n\n",
        );
        let root = Root::at(t.path()).remembering();
        let prov = format!("{site}/onnxruntime/capi/libprov.so");
        let res = Resolution {
            objects: vec![LoadedObject {
                path: prov.clone(),
                realpath: prov.clone(),
                ..Default::default()
            }],
            libraries: vec![Library::unresolved("libcublasLt.so.13", &prov, 0)],
            ..Default::default()
        };
        let mut pool = Pool::new(2);
        let at_the_end = find(&root, Plan::of(&res), Early::default(), &pool);
        let mut early = Early::default();
        early.request(&root, &mut pool, &res.objects, &res.libraries[0]);
        assert_eq!(early.asked.len(), 1);
        let mut forgotten = Early::default();
        forgotten.request(&root, &mut pool, &res.objects, &res.libraries[0]);
        forgotten.forget_from(1);
        assert_eq!(forgotten.asked.len(), 1);
        forgotten.forget_from(0);
        assert!(forgotten.asked.is_empty());
        let during = find(&root, Plan::of(&res), early, &pool);
        assert_eq!(at_the_end, during);
        let [origin] = &during[..] else {
            panic!("one origin: {during:?}")
        };
        assert_eq!(origin.object, prov);
        let Installed::Pip {
            site: s,
            dist: Some(d),
        } = &origin.installed
        else {
            panic!("pip's: {origin:?}")
        };
        assert_eq!(
            (s.as_str(), d.name.as_str(), d.version.as_str()),
            (site, "onnxruntime-gpu", "1.31.1")
        );
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
