//! The process an inspected binary becomes: the binary and every object ld.so maps for it, the libraries among
//! them whose device code was read, and the CUDA runtimes among them. The verdict is for the process
//! (`docs/verdict.md`): a Python extension with no kernel of its own fails when the `libtorch_cuda.so` it
//! loads cannot load its kernels, or when the `libcudart.so.13` it maps needs a newer driver.
//!
//! Everything is looked up by path through maps built once, so that a tree of a hundred thousand binaries is
//! judged in time linear in its size.

use crate::facts::loader::{LoadedObject, Resolution};
use crate::facts::{BinaryFacts, Facts};
use crate::findings::Finding;
use std::collections::HashMap;

/// One inspected binary as the process that loads it.
#[derive(Debug, Clone)]
pub struct Process<'a> {
    /// The inspected binary.
    pub binary: &'a BinaryFacts,
    /// Its loader tree, when it was resolved.
    pub resolution: Option<&'a Resolution>,
    /// The libraries it maps whose device code was read (`Facts::loaded`), in load order.
    pub libraries: Vec<&'a BinaryFacts>,
    /// The CUDA runtimes it maps (`Facts::runtimes`), with the object each was mapped as, in load order.
    pub runtimes: Vec<(&'a BinaryFacts, &'a LoadedObject)>,
}

impl<'a> Process<'a> {
    /// Every path a finding about this process or one of its objects may be at: the binary's, and each mapped
    /// object's as loaded and as resolved.
    pub fn paths(&self) -> Vec<&'a str> {
        let mut out = vec![self.binary.path.as_str()];
        if let Some(r) = self.resolution {
            for o in &r.objects {
                out.push(o.path.as_str());
                if o.realpath != o.path {
                    out.push(o.realpath.as_str());
                }
            }
        }
        out.extend(self.libraries.iter().map(|l| l.path.as_str()));
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Maps a path (as loaded, or resolved) of an object some resolution maps to the facts read from it.
struct ByPath<'a> {
    index: HashMap<&'a str, usize>,
}

impl<'a> ByPath<'a> {
    /// Indexes `list` by its paths, and by the real path of every object of `resolutions` loaded from one.
    fn new(list: &'a [BinaryFacts], resolutions: &'a [Resolution]) -> ByPath<'a> {
        let mut index: HashMap<&'a str, usize> = HashMap::new();
        for (i, b) in list.iter().enumerate() {
            index.entry(b.path.as_str()).or_insert(i);
        }
        for r in resolutions {
            for o in &r.objects {
                if let Some(&i) = index.get(o.path.as_str()) {
                    index.entry(o.realpath.as_str()).or_insert(i);
                }
            }
        }
        ByPath { index }
    }

    fn get(&self, o: &LoadedObject) -> Option<usize> {
        self.index
            .get(o.path.as_str())
            .or_else(|| self.index.get(o.realpath.as_str()))
            .copied()
    }
}

/// Every inspected binary as a process, in the order of `facts.binaries`.
pub fn processes(facts: &Facts) -> Vec<Process<'_>> {
    let mut resolution: HashMap<&str, &Resolution> = HashMap::new();
    for r in &facts.libraries {
        resolution.entry(r.binary.as_str()).or_insert(r);
    }
    let loaded = ByPath::new(&facts.loaded, &facts.libraries);
    let runtimes = ByPath::new(&facts.runtimes, &facts.libraries);
    facts
        .binaries
        .iter()
        .map(|b| {
            let r = resolution.get(b.path.as_str()).copied();
            let mut libraries = Vec::new();
            let mut rts = Vec::new();
            for o in r.map(|r| r.objects.iter().skip(1)).into_iter().flatten() {
                if let Some(i) = loaded.get(o) {
                    libraries.push(&facts.loaded[i]);
                }
                if let Some(i) = runtimes.get(o) {
                    rts.push((&facts.runtimes[i], o));
                }
            }
            Process {
                binary: b,
                resolution: r,
                libraries,
                runtimes: rts,
            }
        })
        .collect()
}

/// Findings by the path they are at; the findings at no path (the machine's, a GPU's) apart.
pub struct FindingIndex<'f> {
    findings: &'f [Finding],
    by_path: HashMap<&'f str, Vec<usize>>,
    general: Vec<usize>,
}

impl<'f> FindingIndex<'f> {
    /// Indexes `findings` by path.
    pub fn new(findings: &'f [Finding]) -> FindingIndex<'f> {
        let mut by_path: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut general = Vec::new();
        for (i, f) in findings.iter().enumerate() {
            match f.path.as_deref() {
                Some(p) => by_path.entry(p).or_default().push(i),
                None => general.push(i),
            }
        }
        FindingIndex {
            findings,
            by_path,
            general,
        }
    }

    /// The findings about a process: those at any of its paths and those about no input (the machine, the
    /// driver, a GPU), each once, in the order of the findings.
    pub fn of(&self, process: &Process<'_>) -> Vec<&'f Finding> {
        let mut at: Vec<usize> = self.general.clone();
        for p in process.paths() {
            if let Some(is) = self.by_path.get(p) {
                at.extend(is);
            }
        }
        at.sort_unstable();
        at.dedup();
        at.into_iter().map(|i| &self.findings[i]).collect()
    }
}

/// The Python imports judged for `binary` when it is an image's program run as Python (`inspect --image
/// --import`, `python -m torch…`): the interpreter carries no device code, the frameworks it imports do, and
/// their outcomes are findings of their own (`library-not-found`, `framework-cpu-fallback`).
pub fn python_imports<'f>(facts: &'f Facts, binary: &str) -> Option<&'f crate::facts::image::ImageImports> {
    let image = facts.image.as_ref()?;
    (image.program.as_deref() == Some(binary))
        .then_some(image.imports.as_ref())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::loader::LoadedObject;

    fn object(path: &str, realpath: &str) -> LoadedObject {
        LoadedObject {
            path: path.into(),
            realpath: realpath.into(),
            ..LoadedObject::default()
        }
    }

    #[test]
    fn a_process_gathers_the_libraries_and_runtimes_it_maps_by_path_or_real_path() {
        let bin = |p: &str| BinaryFacts {
            path: p.into(),
            ..BinaryFacts::default()
        };
        let facts = Facts {
            binaries: vec![bin("/a/app"), bin("/b/tool")],
            libraries: vec![
                Resolution {
                    binary: "/a/app".into(),
                    objects: vec![
                        object("/a/app", "/a/app"),
                        object("/a/lib/libk.so", "/real/libk.so"),
                        object("/a/lib/libcudart.so.13", "/real/libcudart.so.13"),
                    ],
                    ..Resolution::default()
                },
                Resolution {
                    binary: "/b/tool".into(),
                    objects: vec![
                        object("/b/tool", "/b/tool"),
                        // The same library under another name: found by its real path.
                        object("/b/../a/lib/libk.so", "/real/libk.so"),
                    ],
                    ..Resolution::default()
                },
            ],
            loaded: vec![bin("/a/lib/libk.so")],
            runtimes: vec![bin("/a/lib/libcudart.so.13")],
            ..Facts::default()
        };
        let ps = processes(&facts);
        assert_eq!(ps[0].libraries.len(), 1);
        assert_eq!(ps[0].runtimes.len(), 1);
        assert_eq!(ps[1].libraries.len(), 1, "by real path");
        assert!(ps[1].runtimes.is_empty());
        assert!(ps[1].paths().contains(&"/a/lib/libk.so"));
    }
}
