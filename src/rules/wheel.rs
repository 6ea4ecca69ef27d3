//! A wheel's declared dependencies as context for its binaries (`audit`).
//!
//! pip installs a wheel's `Requires-Dist` beside it, and NVIDIA ships the CUDA libraries as such distributions:
//! `nvidia-cublas-cu12` puts `libcublas.so.12` in site-packages, where the binaries that need it find it (through
//! their RUNPATH, or because the package preloads it). So a CUDA library a wheel's binary needs is resolved the
//! way it will be after `pip install`: bundled in the wheel, installed by a declared dependency (always, or only
//! with an extra), or neither, which is `library-not-found`. The table of which distribution installs which
//! libraries, and for which CUDA major, is data: `data/pip_cuda.toml`, every row sourced.
//!
//! Three more facts follow from the declared dependencies:
//! - their CUDA major (`-cu12`; for the suffix-less CUDA 13 names, the table's major or the pinned version's)
//!   counts for the policy's `cuda-majors` (`rules::policy`) and for `multiple-cuda-majors` in one binary;
//! - **the runtime pin rule**: a binary linked to the shared runtime (`DT_NEEDED libcudart.so.N`) in a wheel
//!   that does not bundle libcudart loads the libcudart a declared dependency installs. When that dependency is
//!   always installed and pins one release line — `nvidia-cuda-runtime-cu12==12.8.90`, `==12.8.*`,
//!   `~=12.8.90`, or `cuda-toolkit[cudart]==12.8.1` — the runtime is CUDA 12.8, and that version is what the
//!   driver rules (and so `min-driver`) check. A range (`>=12.4`) or a major-only pin (`==12.*`) says no more
//!   than the SONAME already does, and changes nothing.
//!
//! [`resolve`] adds these facts (it reads only the facts and the table); [`evaluate`] turns them into findings.

use crate::facts::{
    BinaryFacts, CudaDependency, CudartLinkage, Facts, Installed, Provided, Requirement, WheelLibrary,
};
use crate::findings::{Code, Finding, Severity};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The bundled table.
pub const BUNDLED: &str = include_str!("../../data/pip_cuda.toml");

/// `cuda-toolkit[extras]`: which distributions each extra installs, for one CUDA major.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolkit {
    /// The CUDA major of the cuda-toolkit releases this row describes.
    pub cuda: u32,
    /// The release whose METADATA was read.
    pub checked: String,
    /// Keys of `[sources]`.
    pub source: String,
    /// Extra -> distributions.
    pub extras: BTreeMap<String, Vec<String>>,
}

/// One NVIDIA distribution on PyPI and the libraries it installs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dist {
    /// PEP 503-normalised name.
    pub name: String,
    /// The CUDA major of its releases.
    pub cuda: u32,
    /// Its version's major is the CUDA major (a pin of another major counts as that major).
    #[serde(default)]
    pub cuda_from_version: bool,
    /// It installs libcudart: an exact pin gives the runtime version.
    #[serde(default)]
    pub runtime: bool,
    /// The SONAMEs it installs.
    pub sonames: Vec<String>,
    /// The release that was read, where one was.
    pub checked: Option<String>,
    /// Keys of `[sources]`.
    pub source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    meta: Meta,
    sources: BTreeMap<String, String>,
    toolkit: Vec<Toolkit>,
    dist: Vec<Dist>,
}

/// The `[meta]` table of the bundled package tables (`data/pip_cuda.toml`, `data/cuda_packages.toml`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read to validate the file's shape
pub(super) struct Meta {
    pub(super) schema_version: u32,
    pub(super) compiled: String,
}

/// The table of NVIDIA pip distributions.
#[derive(Debug, Clone)]
pub struct Table {
    /// `cuda-toolkit` extras per CUDA major.
    pub toolkits: Vec<Toolkit>,
    /// Distributions.
    pub dists: Vec<Dist>,
    /// Source key -> what it is.
    pub sources: BTreeMap<String, String>,
}

impl Table {
    /// The table compiled into cudadiag.
    pub fn bundled() -> Result<Table, String> {
        Table::parse(BUNDLED).map_err(|e| format!("data/pip_cuda.toml: {e}"))
    }

    /// Parses and checks a table: every source cited exists, names are normalised and unique, every extra
    /// names known distributions.
    pub fn parse(text: &str) -> Result<Table, String> {
        let raw: Raw = toml::from_str(text).map_err(|e| e.to_string())?;
        if raw.meta.schema_version != 1 {
            return Err(format!("schema_version {} is not 1", raw.meta.schema_version));
        }
        let t = Table {
            toolkits: raw.toolkit,
            dists: raw.dist,
            sources: raw.sources,
        };
        let cited = |what: &str, source: &str| -> Result<(), String> {
            for key in source.split(';').map(str::trim) {
                if !t.sources.contains_key(key) {
                    return Err(format!("{what}: source {key:?} is not in [sources]"));
                }
            }
            Ok(())
        };
        for (i, d) in t.dists.iter().enumerate() {
            cited(&d.name, &d.source)?;
            if crate::inspect::pep508::normalise(&d.name) != d.name {
                return Err(format!("{}: not a normalised name", d.name));
            }
            if t.dists[..i].iter().any(|o| o.name == d.name) {
                return Err(format!("{}: listed twice", d.name));
            }
            if d.sonames.is_empty() || d.sonames.iter().any(|s| !s.contains(".so")) {
                return Err(format!("{}: sonames must be SONAMEs", d.name));
            }
        }
        for k in &t.toolkits {
            cited(&format!("cuda-toolkit {}", k.checked), &k.source)?;
            for (extra, dists) in &k.extras {
                if let Some(d) = dists.iter().find(|d| t.dist(d).is_none_or(|d| d.cuda != k.cuda)) {
                    return Err(format!(
                        "cuda-toolkit {} [{extra}]: {d} is not a CUDA {} distribution of the table",
                        k.checked, k.cuda
                    ));
                }
            }
        }
        Ok(t)
    }

    /// A distribution by normalised name.
    pub fn dist(&self, name: &str) -> Option<&Dist> {
        self.dists.iter().find(|d| d.name == name)
    }

    /// Whether some NVIDIA distribution installs `soname`: it is a CUDA library pip can provide.
    pub fn is_cuda_library(&self, soname: &str) -> bool {
        self.dists.iter().any(|d| d.sonames.iter().any(|s| s == soname))
    }

    /// The distributions that install `soname`.
    pub fn providers(&self, soname: &str) -> Vec<&Dist> {
        self.dists
            .iter()
            .filter(|d| d.sonames.iter().any(|s| s == soname))
            .collect()
    }

    /// What a declared dependency installs, when it is an NVIDIA CUDA distribution or `cuda-toolkit`.
    pub fn cuda_dependency(&self, r: &Requirement) -> Option<CudaDependency> {
        let p = pin(&r.specifier);
        if r.name == "cuda-toolkit" {
            // The meta-package's version is the CUDA version; without a pin, any major the table knows.
            let rows: Vec<&Toolkit> = self
                .toolkits
                .iter()
                .filter(|k| p.major.is_none_or(|m| m == k.cuda))
                .collect();
            let mut dep = CudaDependency {
                major: p.major,
                ..CudaDependency::default()
            };
            for k in rows {
                for e in &r.extras {
                    for name in k.extras.get(e).into_iter().flatten() {
                        if !dep.distributions.contains(name) {
                            dep.distributions.push(name.clone());
                        }
                    }
                }
            }
            for name in &dep.distributions {
                if let Some(d) = self.dist(name) {
                    dep.sonames.extend(d.sonames.iter().cloned());
                    if d.runtime
                        && let (Some(major), Some(minor)) = (p.major, p.minor)
                    {
                        dep.runtime = Some(format!("{major}.{minor}"));
                    }
                }
            }
            return Some(dep);
        }
        let d = self.dist(&r.name)?;
        let major = if d.cuda_from_version {
            p.major.unwrap_or(d.cuda)
        } else {
            d.cuda
        };
        // A pin to a major the row does not describe (nvidia-cuda-runtime==14.*): its libraries are unknown.
        let known = major == d.cuda;
        let runtime = match (d.runtime && known, p.major, p.minor) {
            (true, Some(pm), Some(minor)) if pm == major => Some(format!("{major}.{minor}")),
            _ => None,
        };
        Some(CudaDependency {
            distributions: vec![d.name.clone()],
            major: Some(major),
            runtime,
            sonames: if known { d.sonames.clone() } else { Vec::new() },
        })
    }
}

/// What a version specifier pins: the major, and the minor when it pins one release line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pin {
    /// Every release it admits has this major.
    pub major: Option<u32>,
    /// Every release it admits has this minor too.
    pub minor: Option<u32>,
}

/// Reads a PEP 440 specifier set: `==12.8.90`, `==12.8.*`, `===12.8.90` and `~=12.8.90` pin major and minor;
/// `==12.*`, `~=12.8` and `>=12.4,<13` only the major.
pub fn pin(spec: &str) -> Pin {
    let num = |s: &str| s.parse::<u32>().ok();
    let mut lower: Option<u32> = None;
    let mut upper: Option<Vec<String>> = None;
    for clause in spec.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let Some(op) = ["===", "==", "~=", "!=", "<=", ">=", "<", ">"]
            .into_iter()
            .find(|op| clause.starts_with(op))
        else {
            continue;
        };
        let parts: Vec<String> = clause[op.len()..].trim().split('.').map(str::to_string).collect();
        let major = parts.first().and_then(|p| num(p));
        match op {
            "==" | "===" => {
                return Pin {
                    major,
                    minor: major.and(parts.get(1).and_then(|p| num(p))),
                };
            }
            "~=" => {
                return Pin {
                    major,
                    minor: if parts.len() >= 3 {
                        parts.get(1).and_then(|p| num(p))
                    } else {
                        None
                    },
                };
            }
            ">=" | ">" => lower = major,
            "<" => upper = Some(parts),
            _ => {}
        }
    }
    // `>=12.4,<13` (or `<13.0`): the major is 12.
    if let (Some(lo), Some(up)) = (lower, upper)
        && up.first().and_then(|p| num(p)) == Some(lo + 1)
        && up[1..].iter().all(|p| p == "0")
    {
        return Pin {
            major: Some(lo),
            minor: None,
        };
    }
    Pin::default()
}

/// The file name of a wheel member's path (`x.whl!pkg/lib/libfoo.so.1` -> `libfoo.so.1`).
fn file_name(path: &str) -> &str {
    let inner = path.rsplit('!').next().unwrap_or(path);
    inner.rsplit('/').next().unwrap_or(inner)
}

fn needed(b: &BinaryFacts) -> &[String] {
    b.elf.as_ref().map_or(&[], |e| e.needed.as_slice())
}

/// Annotates each wheel's requirements from the table, resolves the CUDA libraries its binaries need, and
/// applies the runtime pin rule (module docs) to its binaries linked to the shared runtime.
pub fn resolve(facts: &mut Facts, table: &Table) {
    for w in &mut facts.wheels {
        for r in &mut w.requirements {
            r.cuda = table.cuda_dependency(r);
        }
    }
    let mut pins: Vec<(String, String, String)> = Vec::new(); // (binary, runtime, evidence)
    for w in &mut facts.wheels {
        let prefix = format!("{}!", w.path);
        let members: Vec<&BinaryFacts> = facts
            .binaries
            .iter()
            .filter(|b| b.path.starts_with(&prefix))
            .collect();
        let bundled = |soname: &str| -> Option<String> {
            members
                .iter()
                .find(|b| {
                    file_name(&b.path) == soname
                        || b.elf.as_ref().and_then(|e| e.soname.as_deref()) == Some(soname)
                })
                .map(|b| b.path[prefix.len()..].to_string())
        };
        let mut libs: Vec<WheelLibrary> = Vec::new();
        for b in &members {
            for n in needed(b).iter().filter(|n| table.is_cuda_library(n)) {
                match libs.iter_mut().find(|l| l.soname == *n) {
                    Some(l) => l.needed_by.push(b.path.clone()),
                    None => libs.push(WheelLibrary {
                        soname: n.clone(),
                        needed_by: vec![b.path.clone()],
                        provided: Provided::Missing,
                        by: None,
                        distribution: None,
                        major: None,
                    }),
                }
            }
        }
        for l in &mut libs {
            if let Some(member) = bundled(&l.soname) {
                l.provided = Provided::Bundled;
                l.by = Some(member);
                continue;
            }
            let provides = |r: &&Requirement| r.cuda.as_ref().is_some_and(|c| c.sonames.contains(&l.soname));
            let found = w
                .requirements
                .iter()
                .filter(provides)
                .find(|r| r.installed == Installed::Always)
                .map(|r| (Provided::Dependency, r))
                .or_else(|| {
                    w.requirements
                        .iter()
                        .filter(provides)
                        .find(|r| r.installed == Installed::WithExtra)
                        .map(|r| (Provided::Extra, r))
                });
            if let Some((how, r)) = found {
                let c = r.cuda.as_ref();
                l.provided = how;
                l.by = Some(r.text.clone());
                l.distribution = c.and_then(|c| {
                    c.distributions
                        .iter()
                        .find(|d| table.dist(d).is_some_and(|d| d.sonames.contains(&l.soname)))
                        .cloned()
                });
                l.major = c.and_then(|c| c.major);
                if how == Provided::Dependency
                    && l.soname.starts_with("libcudart.so")
                    && let Some(rt) = c.and_then(|c| c.runtime.clone())
                {
                    for b in &l.needed_by {
                        pins.push((
                            b.clone(),
                            rt.clone(),
                            format!(
                                "{} comes from the declared dependency `{}`, which pins runtime version {rt}",
                                l.soname, r.text
                            ),
                        ));
                    }
                }
            }
        }
        w.cuda_libraries = libs;
    }
    for (path, rt, evidence) in pins {
        if let Some(b) = facts.binaries.iter_mut().find(|b| b.path == path)
            && b.cudart.linkage == CudartLinkage::Dynamic
            && b.cudart.version.is_none()
        {
            b.cudart.version = Some(rt);
            b.cudart.evidence.push(evidence);
        }
    }
}

/// `library-not-found` for CUDA libraries nothing provides (a warning when only an extra does), and
/// `multiple-cuda-majors` for binaries whose own CUDA and whose dependencies' differ.
pub fn evaluate(facts: &Facts, table: &Table) -> Vec<Finding> {
    let mut out = Vec::new();
    for w in &facts.wheels {
        let declared: Vec<String> = w
            .requirements
            .iter()
            .filter(|r| r.cuda.is_some() && r.installed != Installed::Never)
            .map(|r| format!("`{}`", r.text))
            .collect();
        let declared = if declared.is_empty() {
            format!("{} declares no CUDA library package", w.path)
        } else {
            format!("{} declares {}", w.path, declared.join(", "))
        };
        let mut wheel_majors: Vec<u32> = w
            .requirements
            .iter()
            .filter(|r| r.installed != Installed::Never)
            .filter_map(|r| r.cuda.as_ref().and_then(|c| c.major))
            .collect();
        wheel_majors.sort_unstable();
        wheel_majors.dedup();
        for l in &w.cuda_libraries {
            for b in &l.needed_by {
                let Some(binary) = facts.binaries.iter().find(|x| x.path == *b) else {
                    continue;
                };
                match l.provided {
                    Provided::Missing => out.push(missing(binary, l, &declared, &wheel_majors, table)),
                    Provided::Extra => {
                        let r = w.requirements.iter().find(|r| l.by.as_ref() == Some(&r.text));
                        out.push(extra_only(binary, l, r, w.name.as_deref()))
                    }
                    Provided::Bundled | Provided::Dependency => {}
                }
            }
        }
        let prefix = format!("{}!", w.path);
        for b in facts.binaries.iter().filter(|b| b.path.starts_with(&prefix)) {
            out.extend(mixed_majors(b, &w.cuda_libraries));
        }
    }
    out
}

/// The pip distributions that would provide `soname` for a binary of CUDA `majors` (all, when none match).
fn suggest<'a>(table: &'a Table, soname: &str, majors: &[u32]) -> Vec<&'a Dist> {
    let all = table.providers(soname);
    let matching: Vec<&Dist> = all.iter().copied().filter(|d| majors.contains(&d.cuda)).collect();
    if matching.is_empty() { all } else { matching }
}

/// `library-not-found` for a CUDA library nothing provides; the help names the package of the binary's CUDA
/// major (or, when the binary shows none, of the wheel's declared CUDA packages).
fn missing(
    b: &BinaryFacts,
    l: &WheelLibrary,
    declared: &str,
    wheel_majors: &[u32],
    table: &Table,
) -> Finding {
    let mut majors: Vec<u32> = super::policy::cuda_majors(b)
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    if majors.is_empty() {
        majors = wheel_majors.to_vec();
    }
    let dists = suggest(table, &l.soname, &majors);
    let names: Vec<String> = dists.iter().map(|d| format!("`{}`", d.name)).collect();
    let mut f = Finding::new(
        Code::LibraryNotFound,
        format!(
            "{}: {} will not be found after `pip install`: the wheel neither bundles it nor declares a dependency that installs it",
            b.path, l.soname
        ),
        format!(
            "Declare {} (it installs {}) in the wheel's dependencies (Requires-Dist), or bundle the library in the wheel.",
            names.join(" or "),
            l.soname
        ),
    )
    .because(format!("{}: DT_NEEDED {}", b.path, l.soname))
    .because(declared.to_string());
    for d in dists {
        f = f.because(format!(
            "{} installs {} (CUDA {}) [pip_cuda.toml: {}]",
            d.name,
            d.sonames.join(", "),
            d.cuda,
            d.source
        ));
    }
    f.at(&b.path)
}

/// `library-not-found` as a warning: only `pip install pkg[extra]` installs the library.
fn extra_only(
    b: &BinaryFacts,
    l: &WheelLibrary,
    r: Option<&Requirement>,
    wheel_name: Option<&str>,
) -> Finding {
    let req = l.by.as_deref().unwrap_or("?");
    let extra = r.and_then(|r| r.extra.as_deref()).unwrap_or("?");
    let name = wheel_name.unwrap_or("the wheel");
    let mut f = Finding::new(
        Code::LibraryNotFound,
        format!(
            "{}: {} is installed only with the [{extra}] extra; a plain `pip install {name}` leaves it to the machine",
            b.path, l.soname,
        ),
        format!(
            "Users who install without the extra need {} on the loader's path (a CUDA toolkit, LD_LIBRARY_PATH); \
             declare {} unconditionally if the wheel should work on its own.",
            l.soname,
            l.distribution
                .as_deref()
                .map_or_else(|| "the dependency".to_string(), |d| format!("`{d}`"))
        ),
    )
    .because(format!("{}: DT_NEEDED {}", b.path, l.soname))
    .because(format!(
        "`{req}` installs it ({}), only for `pip install {name}[{extra}]`",
        l.distribution.as_deref().unwrap_or("?")
    ));
    f.severity = Severity::Warning;
    f.at(&b.path)
}

/// `multiple-cuda-majors`: a binary whose own CUDA (its runtime, the CUDA libraries it names, its device
/// code's toolkit) and the CUDA of the dependencies that provide its libraries span several majors.
fn mixed_majors(b: &BinaryFacts, libs: &[WheelLibrary]) -> Option<Finding> {
    let mut majors: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (m, why) in super::policy::cuda_majors(b) {
        majors.entry(m).or_default().push(why);
    }
    for l in libs
        .iter()
        .filter(|l| l.provided == Provided::Dependency && l.needed_by.contains(&b.path))
    {
        if let Some(m) = l.major {
            majors.entry(m).or_default().push(format!(
                "{} from {} (CUDA {m}), declared as `{}`",
                l.soname,
                l.distribution.as_deref().unwrap_or("a declared dependency"),
                l.by.as_deref().unwrap_or("?")
            ));
        }
    }
    if majors.len() < 2 {
        return None;
    }
    let list: Vec<String> = majors.keys().map(|m| format!("CUDA {m}")).collect();
    let mut f = Finding::new(
        Code::MultipleCudaMajors,
        format!(
            "{}: will load libraries of {} into one process",
            b.path,
            list.join(" and ")
        ),
        "Use one CUDA major throughout: depend on the packages of the major the binary was built for (-cu12 \
         names for CUDA 12, the suffix-less nvidia-* names or cuda-toolkit==13.* for CUDA 13).",
    )
    .at(&b.path);
    for (m, why) in &majors {
        f = f.because(format!("CUDA {m}: {}", why.join("; ")));
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::pep508::{Env, requirement};

    fn table() -> Table {
        Table::bundled().unwrap()
    }

    fn req(text: &str) -> Requirement {
        requirement(text, &Env::default()).unwrap()
    }

    #[test]
    fn the_bundled_table_is_valid_and_covers_both_majors() {
        let t = table();
        for (soname, dist, major) in [
            ("libcudart.so.12", "nvidia-cuda-runtime-cu12", 12),
            ("libcudart.so.13", "nvidia-cuda-runtime", 13),
            ("libcublasLt.so.12", "nvidia-cublas-cu12", 12),
            ("libcufft.so.11", "nvidia-cufft-cu12", 12),
            ("libcufft.so.12", "nvidia-cufft", 13),
            ("libnvJitLink.so.13", "nvidia-nvjitlink", 13),
            ("libcusparseLt.so.0", "nvidia-cusparselt-cu13", 13),
        ] {
            let p = t.providers(soname);
            assert!(
                p.iter().any(|d| d.name == dist && d.cuda == major),
                "{soname}: {p:?}"
            );
        }
        assert!(
            !t.is_cuda_library("libcuda.so.1"),
            "the driver never comes from pip"
        );
        assert!(Table::parse(&BUNDLED.replace("source = \"WHL\"", "source = \"NOPE\"")).is_err());
    }

    #[test]
    fn pins() {
        let p = |s: &str| {
            let p = pin(s);
            (p.major, p.minor)
        };
        assert_eq!(p("==12.8.90"), (Some(12), Some(8)));
        assert_eq!(p("==12.8.*"), (Some(12), Some(8)));
        assert_eq!(p("===13.2.86"), (Some(13), Some(2)));
        assert_eq!(p("~=12.8.90"), (Some(12), Some(8)));
        assert_eq!(p("~=12.8"), (Some(12), None));
        assert_eq!(p("==12.*"), (Some(12), None));
        assert_eq!(p("<13,>=12.9.86"), (Some(12), None));
        assert_eq!(p(">=12.4"), (None, None));
        assert_eq!(p(""), (None, None));
    }

    #[test]
    fn dependencies_what_they_install_and_which_major() {
        let t = table();
        let d = t
            .cuda_dependency(&req("cuda-toolkit[cublas,cudart]==13.2.2"))
            .unwrap();
        assert_eq!(d.major, Some(13));
        assert_eq!(d.runtime.as_deref(), Some("13.2"));
        assert!(d.sonames.contains(&"libcublasLt.so.13".to_string()));
        assert!(
            d.sonames.contains(&"libnvrtc.so.13".to_string()),
            "cublas pulls nvrtc in 13.x"
        );
        let d = t
            .cuda_dependency(&req("cuda-toolkit[cufft,cusolver]==12.*"))
            .unwrap();
        assert_eq!((d.major, d.runtime.as_deref()), (Some(12), None));
        assert!(d.sonames.contains(&"libcusolver.so.11".to_string()));
        assert!(!d.sonames.contains(&"libcudart.so.12".to_string()));
        let d = t
            .cuda_dependency(&req("nvidia-cuda-runtime-cu12==12.8.90"))
            .unwrap();
        assert_eq!((d.major, d.runtime.as_deref()), (Some(12), Some("12.8")));
        let d = t.cuda_dependency(&req("nvidia-cufft==12.2.0.57")).unwrap();
        assert_eq!(d.major, Some(13), "cuFFT 12.x is CUDA 13's");
        let d = t.cuda_dependency(&req("nvidia-cuda-runtime==14.*")).unwrap();
        assert_eq!(d.major, Some(14));
        assert!(d.sonames.is_empty());
        assert!(t.cuda_dependency(&req("numpy>=2")).is_none());
    }
}
