//! `library-not-found`, one finding per cause: the libraries that fail for one reason are one finding that
//! lists them and counts the requests they break, and its fix names what to install for how the software was
//! installed.
//!
//! The causes, in the order they are tried for each missing request:
//! 1. **a copy is on disk, off the search path** (a toolkit in `/usr/local/cuda-13.0/targets/…/lib` that no
//!    ld.so.conf line, RUNPATH or LD_LIBRARY_PATH names): one finding per directory; the fix adds it to the path;
//! 2. **the installer's packages are missing**: a CUDA library (one `data/pip_cuda.toml` or
//!    `data/cuda_packages.toml` knows) needed by an object pip, conda or the system's packages installed. One
//!    finding per installation (a pip distribution, a conda prefix, the system); for pip, the fix is the
//!    requiring distribution's own `Requires-Dist` pins when its `METADATA` is beside it;
//! 3. otherwise, **one library**: one finding per SONAME, counting every object that needs it.
//!
//! Libraries loaded with `dlopen` stay one finding each, as warnings: one may be optional.

use super::not_found::{LIBCUDA, LIBNVML, dir_of, fix_for_missing, trail_short};
use super::packages;
use crate::facts::loader::{How, Library, Resolution};
use crate::facts::loader::{Installed, PipDist};
use crate::findings::{Code, Finding, Severity};
use std::collections::BTreeSet;

/// Why a group of requests fails.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cause {
    /// A usable copy of each is in this directory, which the search does not reach.
    OffPath(String),
    /// CUDA libraries the installation of their requester(s) should have brought.
    Packages(Installed),
    /// One library, for whatever reason.
    One(String),
}

/// Every `library-not-found` of one resolution, one per cause. `driver_here`: the resolution was made on the
/// machine judged, so the driver's own libraries missing from it are that machine's fault; with a declared
/// target they are the target's ([`crate::container::is_driver_library`]) and no finding.
pub fn library_not_found(r: &Resolution, driver_here: bool) -> Vec<Finding> {
    let libcuda_found = r
        .libraries
        .iter()
        .any(|l| l.soname == LIBCUDA && l.how != How::NotFound);
    let tried = fallbacks_found(r);
    let mut groups: Vec<(Cause, Vec<&Library>)> = Vec::new();
    for l in r.libraries.iter().filter(|l| l.how == How::NotFound) {
        // The driver installs its own libraries on the machine that runs the program: judged for another
        // machine, they are there, whatever this filesystem holds.
        if !driver_here && crate::container::is_driver_library(&l.soname) {
            continue;
        }
        // A library that names several versions of one library loads the first it finds (a CUDA 13.0 build
        // that also tries `libnvrtc.so.12` after `libnvrtc.so.13`): a name it did not need is no requirement.
        if l.dlopen && stem(&l.soname).is_some_and(|s| tried.contains(&(l.needed_by_index, s))) {
            continue;
        }
        // The driver library is the driver rules' question (`libcuda-not-found`, `no-driver`): they know whether
        // this machine is meant to have one. Its resolution and trail stay in the facts for them to cite.
        if l.dlopen && l.soname == LIBCUDA {
            continue;
        }
        // NVML comes with the driver too: without libcuda as well, the driver is absent and that is the finding.
        // (NVML alone missing is real: a container given the `compute` capability but not `utility`.)
        if l.dlopen && l.soname == LIBNVML && !libcuda_found {
            continue;
        }
        // A bare `libX.so` in `.rodata` is a stem the library completes with a version before it calls dlopen
        // (cuDNN 9 adds ".9" to `libcudnn_ops.so`) or one name of several it tries; its absence is no error.
        if l.is_dlopen_stem() {
            continue;
        }
        let cause = cause(r, l);
        match groups.iter_mut().find(|(c, _)| *c == cause) {
            Some((_, ls)) => ls.push(l),
            None => groups.push((cause, vec![l])),
        }
    }
    groups
        .into_iter()
        .map(|(cause, ls)| match cause {
            Cause::OffPath(dir) => off_path(r, &dir, &ls),
            Cause::Packages(how) => packages_missing(r, &how, &ls),
            Cause::One(_) => one(r, &ls),
        })
        .collect()
}

/// The library name without its `.so` suffix and version (`libnvrtc` of `libnvrtc.so.13`).
fn stem(soname: &str) -> Option<&str> {
    soname.split_once(".so").map(|(s, _)| s).filter(|s| !s.is_empty())
}

/// (requester, stem) of every request some step answered: a `dlopen` of another name of the same library by
/// the same object was a fallback it did not need.
fn fallbacks_found(r: &Resolution) -> BTreeSet<(usize, &str)> {
    r.libraries
        .iter()
        .filter(|l| l.how != How::NotFound)
        .filter_map(|l| Some((l.needed_by_index, stem(&l.soname)?)))
        .collect()
}

fn cause(r: &Resolution, l: &Library) -> Cause {
    if l.dlopen || l.soname.contains('/') {
        return Cause::One(format!("{}\0{}", l.soname, l.dlopen));
    }
    let origin = r.origins.iter().find(|o| o.object == l.needed_by);
    // A copy pip or conda installed is a package already there: reaching it is the fix, not installing it.
    if let Some(c) = l
        .copies
        .iter()
        .find(|c| c.same_name && c.unusable.is_none() && c.package.is_some())
    {
        return Cause::OffPath(dir_of(&c.path).to_string());
    }
    // A pip distribution that declares the library wants its own pinned wheel, not a toolkit's copy that
    // happens to be on disk (the copy is named in the evidence).
    if let Some(o) = origin
        && let Installed::Pip { dist: Some(d), .. } = &o.installed
        && declared_by(d, &l.soname).is_some()
    {
        return Cause::Packages(o.installed.clone());
    }
    if let Some(c) = l.copies.iter().find(|c| c.same_name && c.unusable.is_none()) {
        return Cause::OffPath(dir_of(&c.path).to_string());
    }
    let known = packages::pip().is_some_and(|t| t.is_cuda_library(&l.soname))
        || packages::bundled().is_some_and(|t| t.row(&l.soname).is_some());
    match origin {
        Some(o) if known => Cause::Packages(o.installed.clone()),
        _ => Cause::One(l.soname.clone()),
    }
}

/// The `Requires-Dist` line of `d` that installs `soname` (through the pip table), when one does.
fn declared_by<'d>(d: &'d PipDist, soname: &str) -> Option<&'d crate::facts::loader::MetadataLine> {
    let t = packages::pip()?;
    let env = crate::inspect::pep508::Env::default();
    d.requires.iter().find(|line| {
        crate::inspect::pep508::requirement(&line.text, &env)
            .filter(|req| req.installed != crate::facts::Installed::Never)
            .and_then(|req| t.cuda_dependency(&req))
            .is_some_and(|dep| dep.sonames.iter().any(|s| s == soname))
    })
}

/// The SONAMEs of a group, each once, in request order.
fn sonames(ls: &[&Library]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    ls.iter()
        .filter(|l| seen.insert(l.soname.as_str()))
        .map(|l| l.soname.clone())
        .collect()
}

/// The objects that request `soname` in a group: "A" or "A and 2 others".
fn requesters(ls: &[&Library], soname: &str) -> String {
    let who: Vec<&str> = ls
        .iter()
        .filter(|l| l.soname == soname)
        .map(|l| l.needed_by.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    match who.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        [first, rest @ ..] => format!("{first} and {} other{}", rest.len(), plural(rest.len())),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// "libcudart.so.13" or "3 libraries (libcudart.so.13, libcublas.so.13, libcudnn.so.9)".
fn listing(names: &[String]) -> String {
    match names {
        [one] => one.clone(),
        _ => format!("{} libraries ({})", names.len(), names.join(", ")),
    }
}

/// "the CUDA 12 library libcudart.so.12 that X requires" or "3 CUDA 12 libraries that X requires (a, b, c)".
fn phrase(names: &[String], adjective: &str, tail: &str) -> String {
    match names {
        [one] => format!("the {adjective} library {one}{tail}"),
        _ => format!(
            "{} {adjective} libraries{tail} ({})",
            names.len(),
            names.join(", ")
        ),
    }
}

/// The common head of a grouped finding: its SONAMEs and request count.
fn grouped(mut f: Finding, r: &Resolution, names: Vec<String>, requests: usize) -> Finding {
    f.sonames = names;
    f.requests = Some(requests);
    f.at(&r.binary)
}

/// Requests that fail because a usable copy sits in a directory the search does not reach.
fn off_path(r: &Resolution, dir: &str, ls: &[&Library]) -> Finding {
    let names = sonames(ls);
    let cache_fix = ls
        .iter()
        .filter(|l| l.copies.iter().any(|c| c.in_ld_so_conf && dir_of(&c.path) == dir))
        .map(|l| fix_for_missing(l))
        .find(|fix| fix.contains("sudo ldconfig"));
    let help = cache_fix
        .or_else(|| installed_fix(r, dir, ls))
        .unwrap_or_else(|| {
            format!(
                "A copy exists in {dir}, which the loader does not search: add it for every program with \
             `echo {dir} | sudo tee -a /etc/ld.so.conf.d/cuda.conf && sudo ldconfig`, or for this shell with \
             `export LD_LIBRARY_PATH={dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}`."
            )
        });
    let mut f = Finding::new(
        Code::LibraryNotFound,
        format!(
            "{}: {} will not load ({} request{}): cannot open shared object file; {dir} has {}, but the search \
             does not reach it",
            r.binary,
            listing(&names),
            ls.len(),
            plural(ls.len()),
            if names.len() == 1 { "it" } else { "them" }
        ),
        help,
    );
    for name in &names {
        let l = ls.iter().find(|l| &l.soname == name);
        let copy = l
            .and_then(|l| l.copies.iter().find(|c| c.same_name && dir_of(&c.path) == dir))
            .map(|c| c.line())
            .unwrap_or_default();
        f = f.because(format!(
            "{name} (needed by {}): not on its search ({} steps); on disk: {copy}",
            requesters(ls, name),
            l.map_or(0, |l| l.trail.len())
        ));
    }
    grouped(f, r, names, ls.len())
}

/// When packages (pip's, conda's) installed the copies in `dir`: they are there, and the requesters' search does
/// not lead to them (onnxruntime-gpu's CUDA provider has no RPATH). The fix reaches that directory for the
/// program's run, not for every program of the machine, and names the framework's own preload where it has one
/// for that directory (onnxruntime's `preload_dlls()` loads the NVIDIA wheels of its own site-packages).
fn installed_fix(r: &Resolution, dir: &str, ls: &[&Library]) -> Option<String> {
    let mut packages: Vec<String> = Vec::new();
    for c in ls.iter().flat_map(|l| l.copies.iter()) {
        if let Some(p) = c
            .package
            .as_ref()
            .filter(|_| c.same_name && dir_of(&c.path) == dir)
        {
            let named = format!("{} {}", p.name, p.version.as_deref().unwrap_or_default());
            if !packages.contains(&named) {
                packages.push(named.trim_end().to_string());
            }
        }
    }
    if packages.is_empty() {
        return None;
    }
    let onnxruntime = ls.iter().any(|l| {
        r.origins.iter().any(|o| {
            o.object == l.needed_by
                && matches!(&o.installed, crate::facts::loader::Installed::Pip { site, dist: Some(d) }
                    if d.name.to_ascii_lowercase().starts_with("onnxruntime") && dir.starts_with(site.as_str()))
        })
    });
    let preload = if onnxruntime {
        " or call `onnxruntime.preload_dlls()` before creating the session (it loads the CUDA and cuDNN libraries \
         of the NVIDIA wheels in its own site-packages),"
    } else {
        ""
    };
    Some(format!(
        "They are installed ({}, in {dir}), but nothing on the search of {} leads there (no RPATH or RUNPATH \
         names it), so installing them again does not help: run the program with \
         `LD_LIBRARY_PATH={dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}`,{preload} or load them first by their \
         full paths.",
        packages.join(", "),
        requesters(ls, &ls.first().map(|l| l.soname.clone()).unwrap_or_default())
    ))
}

/// The CUDA majors a group's SONAMEs name without doubt (`libcudart.so.13` is CUDA 13; `libcudnn.so.9` is
/// either), by the pip table.
fn majors(names: &[String]) -> BTreeSet<u32> {
    let Some(t) = packages::pip() else {
        return BTreeSet::new();
    };
    let mut out = BTreeSet::new();
    for n in names {
        let m: BTreeSet<u32> = t.providers(n).iter().map(|d| d.cuda).collect();
        if m.len() == 1 {
            out.extend(m);
        }
    }
    if out.is_empty() {
        out = t.dists.iter().map(|d| d.cuda).collect();
    }
    out
}

/// CUDA libraries the requesters' installation (pip, conda, the system's packages) should have brought.
fn packages_missing(r: &Resolution, how: &Installed, ls: &[&Library]) -> Finding {
    let names = sonames(ls);
    let majors = majors(&names);
    let (what, help, evidence) = match how {
        Installed::Pip { site, dist } => pip_fix(&names, &majors, site, dist.as_ref()),
        Installed::Conda { prefix } => conda_fix(&names, &majors, prefix),
        Installed::System { manager } => system_fix(&names, &majors, *manager),
    };
    let mut f = Finding::new(
        Code::LibraryNotFound,
        format!(
            "{}: {what} will not load ({} request{}): cannot open shared object file",
            r.binary,
            ls.len(),
            plural(ls.len()),
        ),
        help,
    );
    // Who needs them, counted per requester; then, per library, only what is not "nowhere on disk".
    let mut by: Vec<(&str, usize)> = Vec::new();
    for l in ls {
        match by.iter_mut().find(|(w, _)| *w == l.needed_by) {
            Some((_, n)) => *n += 1,
            None => by.push((&l.needed_by, 1)),
        }
    }
    let steps: BTreeSet<usize> = ls.iter().map(|l| l.trail.len()).collect();
    f = f.because(format!(
        "needed by {}; each searched for in {} steps and found nowhere",
        by.iter()
            .map(|(w, n)| format!("{w} ({n})"))
            .collect::<Vec<_>>()
            .join(", "),
        steps.iter().map(usize::to_string).collect::<Vec<_>>().join("/")
    ));
    let mut nowhere = Vec::new();
    for name in &names {
        let usable: Vec<&crate::facts::loader::Copy> = ls
            .iter()
            .find(|l| &l.soname == name)
            .map(|l| l.copies.iter().filter(|c| c.unusable.is_none()).collect())
            .unwrap_or_default();
        let off_path: Vec<String> = usable.iter().filter(|c| c.same_name).map(|c| c.line()).collect();
        let others: Vec<String> = usable.iter().filter(|c| !c.same_name).map(|c| c.line()).collect();
        if !off_path.is_empty() {
            f = f.because(format!(
                "{name}: a copy is on disk, off the search path: {}",
                off_path.join(", ")
            ));
        }
        if usable.is_empty() {
            nowhere.push(name.as_str());
        } else if !others.is_empty() {
            f = f.because(format!(
                "{name}: only other versions on disk: {}",
                others.join(", ")
            ));
        }
    }
    if !nowhere.is_empty() && nowhere.len() < names.len() {
        f = f.because(format!("no copy on disk of {}", nowhere.join(", ")));
    } else if !nowhere.is_empty() {
        f = f.because("no copy of any of them on disk");
    }
    // The package directories the requesters' RPATH/RUNPATH name (a pip layout's `nvidia/*/lib`), none there.
    let dirs: BTreeSet<&str> = ls
        .iter()
        .flat_map(|l| l.trail.iter())
        .filter(|s| matches!(s.how, How::Rpath | How::Runpath))
        .filter_map(|s| s.dir.as_deref())
        .filter(|d| d.contains("/nvidia/"))
        .collect();
    if !dirs.is_empty() {
        f = f.because(format!(
            "the RPATH/RUNPATH directories of the NVIDIA packages hold none of them: {}",
            dirs.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    for e in evidence {
        f = f.because(e);
    }
    grouped(f, r, names, ls.len())
}

type Fix = (String, String, Vec<String>);

/// pip: the requiring distribution's own `Requires-Dist` pins, else the table's distributions.
fn pip_fix(names: &[String], majors: &BTreeSet<u32>, site: &str, dist: Option<&PipDist>) -> Fix {
    let Some(t) = packages::pip() else {
        return (
            String::new(),
            "Install the NVIDIA wheels that provide them.".into(),
            vec![],
        );
    };
    let mut pins: Vec<String> = Vec::new();
    // Per Requires-Dist line that provides some of them: the line and the libraries it installs.
    let mut from: Vec<(&crate::facts::loader::MetadataLine, Vec<&str>)> = Vec::new();
    let mut unpinned: Vec<&String> = Vec::new();
    for name in names {
        let by = dist.and_then(|d| declared_by(d, name));
        match by {
            Some(line) => match from.iter_mut().find(|(l, _)| *l == line) {
                Some((_, ns)) => ns.push(name),
                None => from.push((line, vec![name])),
            },
            None => unpinned.push(name),
        }
    }
    let mut evidence = Vec::new();
    for (line, ns) in from {
        let spec = line
            .text
            .split(';')
            .next()
            .unwrap_or(&line.text)
            .trim()
            .to_string();
        evidence.push(format!(
            "{}:{}: Requires-Dist: {} (installs {})",
            dist.map(|d| d.metadata.as_str()).unwrap_or_default(),
            line.line,
            line.text,
            ns.join(", ")
        ));
        if !pins.contains(&spec) {
            pins.push(spec);
        }
    }
    for name in unpinned {
        let dists: Vec<&super::wheel::Dist> = t
            .providers(name)
            .into_iter()
            .filter(|d| majors.contains(&d.cuda))
            .collect();
        for d in &dists {
            evidence.push(format!(
                "{name} is installed by {} (CUDA {}) [pip_cuda.toml: {}]",
                d.name, d.cuda, d.source
            ));
            if !pins.contains(&d.name) {
                pins.push(d.name.clone());
            }
        }
    }
    let quoted: Vec<String> = pins.iter().map(|p| format!("'{p}'")).collect();
    match dist {
        Some(d) => (
            phrase(names, "CUDA", &format!(" that {} {} requires", d.name, d.version)),
            format!(
                "Install what {} {} declares (its Requires-Dist): `pip install {}`; or reinstall it with its \
                 dependencies: `pip install --force-reinstall {}=={}`.",
                d.name,
                d.version,
                quoted.join(" "),
                d.name,
                d.version
            ),
            evidence,
        ),
        None => (
            phrase(
                names,
                &format!("CUDA {}", majors_text(majors)),
                " of NVIDIA's wheels",
            ),
            format!(
                "Install the NVIDIA wheels that provide them into the environment of {site}: `pip install {}`{}.",
                quoted.join(" "),
                toolkit_alternative(t, &pins)
            ),
            evidence,
        ),
    }
}

/// ", or `cuda-toolkit[cudart,cublas]==13.*`" when every distribution is one of cuda-toolkit's extras.
fn toolkit_alternative(t: &super::wheel::Table, pins: &[String]) -> String {
    for k in &t.toolkits {
        let extras: Option<Vec<&str>> = pins
            .iter()
            .map(|p| {
                k.extras
                    .iter()
                    .find(|(e, ds)| e.as_str() != "all" && ds.first() == Some(p))
                    .map(|(e, _)| e.as_str())
            })
            .collect();
        if let Some(extras) = extras.filter(|e| !e.is_empty()) {
            return format!(
                " (the same as `pip install 'cuda-toolkit[{}]=={}.*'`)",
                extras.join(","),
                k.cuda
            );
        }
    }
    String::new()
}

/// The system/conda rows of a group's SONAMEs, each with its package names for the majors.
fn rows(
    names: &[String],
    majors: &BTreeSet<u32>,
    label: &str,
    pick: impl Fn(&packages::Row) -> &str,
) -> (Vec<String>, Vec<String>, bool) {
    let Some(t) = packages::bundled() else {
        return (vec![], vec![], false);
    };
    let (mut pkgs, mut evidence, mut minor) = (Vec::new(), Vec::new(), false);
    for name in names {
        let Some(row) = t.row(name) else { continue };
        let pattern = pick(row);
        minor |= packages::per_minor(pattern);
        let mut these = Vec::new();
        for m in majors {
            let p = packages::name_for(pattern, *m);
            if !these.contains(&p) {
                these.push(p);
            }
        }
        evidence.push(format!(
            "{name} is in the {label} package {} [cuda_packages.toml: {}]",
            these.join(" or "),
            row.source
        ));
        pkgs.extend(
            these
                .into_iter()
                .filter(|p| !pkgs.contains(p))
                .collect::<Vec<_>>(),
        );
    }
    (pkgs, evidence, minor)
}

fn majors_text(majors: &BTreeSet<u32>) -> String {
    majors.iter().map(u32::to_string).collect::<Vec<_>>().join(" or ")
}

/// conda: the conda-forge packages, pinned to the CUDA major with `cuda-version`.
fn conda_fix(names: &[String], majors: &BTreeSet<u32>, prefix: &str) -> Fix {
    let (pkgs, evidence, _) = rows(names, majors, "conda-forge", |r| &r.conda);
    let version = match majors.iter().collect::<Vec<_>>().as_slice() {
        [m] => format!(" 'cuda-version={m}'"),
        _ => String::new(),
    };
    (
        phrase(
            names,
            &format!("CUDA {}", majors_text(majors)),
            &format!(" of the conda environment {prefix}"),
        ),
        format!(
            "Install them into the environment: `conda install -p {prefix} -c conda-forge {}{version}`.",
            pkgs.join(" ")
        ),
        evidence,
    )
}

/// The system's packages: apt or dnf names of NVIDIA's repositories, per the package manager the root has.
fn system_fix(
    names: &[String],
    majors: &BTreeSet<u32>,
    manager: Option<crate::facts::loader::PackageManager>,
) -> Fix {
    use crate::facts::loader::PackageManager;
    let (deb, deb_evidence, minor) = rows(names, majors, "deb", |r| &r.deb);
    let (rpm, rpm_evidence, _) = rows(names, majors, "rpm", |r| &r.rpm);
    let evidence = match manager {
        Some(PackageManager::Rpm) => rpm_evidence,
        _ => deb_evidence,
    };
    let first = deb.first().cloned().unwrap_or_default();
    let stem = first.strip_suffix("-N").unwrap_or(&first);
    let list = match manager {
        Some(PackageManager::Dpkg) => format!("`apt-cache search --names-only '^{stem}-'`"),
        Some(PackageManager::Rpm) => format!("`dnf list '{stem}-*'`"),
        None => format!("`apt-cache search --names-only '^{stem}-'` or `dnf list '{stem}-*'`"),
    };
    let n = if minor {
        format!(
            " (N: the CUDA {} minor release it was built with; {list} lists them)",
            majors_text(majors)
        )
    } else {
        String::new()
    };
    let how = match manager {
        Some(PackageManager::Dpkg) => format!("`sudo apt-get install {}`", deb.join(" ")),
        Some(PackageManager::Rpm) => format!("`sudo dnf install {}`", rpm.join(" ")),
        None => format!(
            "`sudo apt-get install {}` (Debian, Ubuntu) or `sudo dnf install {}` (RHEL, Fedora)",
            deb.join(" "),
            rpm.join(" ")
        ),
    };
    (
        phrase(names, &format!("CUDA {}", majors_text(majors)), ""),
        format!(
            "Install the CUDA {} libraries from NVIDIA's repository: {how}{n}; or, in a Python environment, \
             the pip wheels (`cudadiag explain \"{}: cannot open shared object file\"` names them).",
            majors_text(majors),
            names.first().map(String::as_str).unwrap_or_default()
        ),
        evidence,
    )
}

/// One library (or one dlopen'ed library), with every object that needs it.
fn one(r: &Resolution, ls: &[&Library]) -> Finding {
    let Some(l) = ls.first() else {
        return Finding::new(Code::LibraryNotFound, String::new(), String::new());
    };
    let error = l.error.as_deref().unwrap_or("cannot open shared object file");
    let kind = if l.dlopen {
        " (loaded at run time with dlopen)"
    } else if l.preload {
        " (preloaded)"
    } else {
        ""
    };
    let mut f = Finding::new(
        Code::LibraryNotFound,
        format!(
            "{}: {} needed by {}{kind} will not load: {error}",
            r.binary,
            l.soname,
            requesters(ls, &l.soname)
        ),
        fix_for_missing(l),
    );
    if l.dlopen {
        // A library loaded at run time may be optional (NVML, cuDNN sub-libraries the program never uses).
        f.severity = Severity::Warning;
    }
    if let Some(why) = &l.reason {
        f = f.because(why.clone());
    }
    // The human report shows the trail in short (`-v`: every step); every other format keeps every step.
    let trail = l.trail_lines().into_iter().map(|line| format!("search {line}"));
    f = f.because_folded(trail.collect(), trail_short(l));
    for c in &l.copies {
        f = f.because(format!("on disk: {}", c.line()));
    }
    grouped(f, r, vec![l.soname.clone()], ls.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::loader::{Origin, PackageManager};

    fn missing(soname: &str, by: &str, index: usize) -> Library {
        Library::unresolved(soname, by, index)
    }

    fn system(object: &str) -> Origin {
        Origin {
            object: object.into(),
            installed: Installed::System {
                manager: Some(PackageManager::Rpm),
            },
        }
    }

    #[test]
    fn one_library_several_requesters_is_one_finding_counting_them() {
        let r = Resolution {
            binary: "/app".into(),
            libraries: vec![
                missing("libfoo.so.1", "/app", 0),
                missing("libfoo.so.1", "/lib/a.so", 1),
                missing("libfoo.so.1", "/lib/b.so", 2),
            ],
            origins: vec![system("/app"), system("/lib/a.so"), system("/lib/b.so")],
            ..Resolution::default()
        };
        let f = library_not_found(&r, true);
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].requests, f[0].sonames.as_slice()),
            (Some(3), &["libfoo.so.1".to_string()][..])
        );
        assert!(
            f[0].message.contains("needed by /app and 2 others"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn cuda_libraries_of_the_system_are_one_finding_with_rpm_names() {
        let r = Resolution {
            binary: "/app".into(),
            libraries: vec![
                missing("libcudart.so.12", "/app", 0),
                missing("libcudnn.so.9", "/app", 0),
                missing("libfoo.so.1", "/app", 0),
            ],
            origins: vec![system("/app")],
            ..Resolution::default()
        };
        let f = library_not_found(&r, true);
        assert_eq!(f.len(), 2, "the CUDA pair, and libfoo alone: {f:#?}");
        assert_eq!(f[0].sonames, ["libcudart.so.12", "libcudnn.so.9"]);
        // libcudnn.so.9 is CUDA 12 or 13; libcudart.so.12 settles it.
        assert!(
            f[0].help
                .contains("sudo dnf install cuda-cudart-12-N libcudnn9-cuda-12"),
            "{}",
            f[0].help
        );
        assert!(!f[0].help.contains("apt-get"), "{}", f[0].help);
        // Near miss: found libraries are no finding.
        let mut ok = r.clone();
        for l in &mut ok.libraries {
            l.how = How::DefaultPath;
        }
        assert!(library_not_found(&ok, true).is_empty());
    }
}
