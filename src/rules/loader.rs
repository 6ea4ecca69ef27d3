//! Findings about the loader's resolution (`loader::resolve`): libraries that will not be found, copies that
//! win over the one a binary's RUNPATH/RPATH meant, symbol versions the chosen provider lacks, and several CUDA
//! majors in one process. Pure functions over [`Resolution`]s: no I/O.

use crate::facts::loader::{How, Resolution};
use crate::findings::{Code, Finding};
use std::collections::BTreeMap;

/// Every loader finding for every resolution, judged against the glibc of the `libc.so.6` each loads, on the
/// machine they were resolved on ([`evaluate_on`] with no machine facts).
pub fn evaluate(resolutions: &[Resolution]) -> Vec<Finding> {
    evaluate_on(resolutions, None, &[], true)
}

/// Every loader finding for every resolution on a machine whose glibc is `host` (when read), with the
/// inspected binaries (for their architecture). `driver_here`: the resolutions were made on the machine
/// judged (`Facts::loader_on_host`); otherwise the driver's own libraries are the target machine's.
pub fn evaluate_on(
    resolutions: &[Resolution],
    host: Option<&crate::facts::host::GlibcFacts>,
    binaries: &[crate::facts::BinaryFacts],
    driver_here: bool,
) -> Vec<Finding> {
    let machines: std::collections::HashMap<&str, &str> = binaries
        .iter()
        .filter_map(|b| Some((b.path.as_str(), b.elf.as_ref()?.machine_name.as_str())))
        .collect();
    let mut out = Vec::new();
    for r in resolutions {
        let machine = machines.get(r.binary.as_str()).copied();
        // Not this machine's architecture: its tree was not searched, and this machine's glibc is not its.
        if r.foreign.is_some() {
            out.extend(foreign_architecture(r));
            continue;
        }
        let glibc = super::glibc::available(r, host);
        out.extend(super::missing::library_not_found(r, driver_here));
        out.extend(library_shadowed(r));
        out.extend(super::glibc::glibc_too_old(r, host, machine));
        out.extend(symbol_version_missing(r, glibc.as_ref()));
        out.extend(multiple_cuda_majors(r));
        out.extend(loaded_by_framework(r));
    }
    out
}

/// `loaded-by-framework` (a note): the binary belongs to a Python framework's distribution and was judged in
/// the process that framework's import builds, after the libraries it loads first (`imports::file`), not
/// alone; the note says which framework, which model of its loading, and what came first.
pub fn loaded_by_framework(r: &Resolution) -> Option<Finding> {
    let fw = r.framework.as_ref()?;
    let before = match fw.before.len() {
        0 => "nothing loaded before it".to_string(),
        1 => "1 library loaded before it".to_string(),
        n => format!("{n} libraries loaded before it"),
    };
    let help = fw.fix.clone().unwrap_or_else(|| {
        format!(
            "`cudadiag import {}` models the whole import and its first GPU use, with how each library came in",
            fw.module
        )
    });
    let mut f = Finding::new(
        Code::LoadedByFramework,
        format!(
            "{}: judged as `import {}` loads it ({}: {}; {before}): docs/python-frameworks.md",
            r.binary, fw.module, fw.installed, fw.model
        ),
        help,
    )
    .at(&r.binary);
    if let Some(n) = &fw.nearest {
        f = f.because(n.clone());
    }
    for path in &fw.before {
        f = f.because(format!("loaded first by {}: {path}", fw.module));
    }
    Some(f)
}

/// One-line fixes of missing libraries, by binary, requester and name.
pub type Fixes = BTreeMap<(String, String, String), String>;

/// The one-line fix of every library no search found, by binary, requester and name: what the loader tree
/// shows under each (`report::Report::fixes`).
pub fn missing_fixes(resolutions: &[Resolution]) -> Fixes {
    resolutions
        .iter()
        .flat_map(|r| {
            r.libraries.iter().filter(|l| l.how == How::NotFound).map(|l| {
                (
                    (r.binary.clone(), l.needed_by.clone(), l.soname.clone()),
                    super::not_found::fix_for_missing(l),
                )
            })
        })
        .collect()
}

/// `library-not-found`: a NEEDED (or preloaded, or dlopen'ed CUDA) library no step finds; one finding per
/// cause ([`super::missing`]), on the machine the resolution was made on.
pub fn library_not_found(r: &Resolution) -> Vec<Finding> {
    super::missing::library_not_found(r, true)
}

/// `library-shadowed`: the copy ld.so picks is not the one the requester's own RUNPATH/RPATH names (an
/// LD_LIBRARY_PATH entry, an ancestor's RPATH or an object loaded earlier came first).
pub fn library_shadowed(r: &Resolution) -> Vec<Finding> {
    let mut out = Vec::new();
    for l in &r.libraries {
        let (Some(intended), Some(obj)) = (&l.intended, l.object.and_then(|i| r.objects.get(i))) else {
            continue;
        };
        if obj.realpath == intended.realpath || matches!(l.how, How::Runpath) {
            continue;
        }
        let winner = match l.how {
            How::AlreadyLoaded => "an object already loaded under that name".to_string(),
            How::Rpath => format!("[{}]", How::Rpath.label(l.via.as_deref(), &l.needed_by)),
            other => format!("[{}]", other.label(None, &l.needed_by)),
        };
        let v = |x: Option<&str>| x.map(|v| format!(" (version {v})")).unwrap_or_default();
        let mut f = Finding::new(
            Code::LibraryShadowed,
            format!(
                "{}: {} for {} loads {}{} through {winner}, not {}{} that its {} names",
                r.binary,
                l.soname,
                l.needed_by,
                obj.path,
                v(obj.version.as_deref()),
                intended.path,
                v(intended.version.as_deref()),
                intended.how.label(None, &l.needed_by).to_uppercase(),
            ),
            match l.how {
                How::LdLibraryPath => format!(
                    "Remove {} from LD_LIBRARY_PATH (it is searched before RUNPATH), or run with env -u \
                     LD_LIBRARY_PATH.",
                    super::not_found::dir_of(&obj.path)
                ),
                How::AlreadyLoaded => {
                    "Another library loaded it first; load the intended copy first, or make both \
                                       agree on one copy."
                        .to_string()
                }
                _ => format!(
                    "Make {} use DT_RUNPATH only, or remove the earlier copy from the search path.",
                    l.needed_by
                ),
            },
        )
        .at(&r.binary);
        for line in l.trail_lines() {
            f = f.because(format!("search {line}"));
        }
        f = f.because(format!(
            "{}'s {} finds {}",
            l.needed_by,
            intended.how.label(None, &l.needed_by),
            intended.path
        ));
        out.push(f);
    }
    out
}

/// `symbol-version-missing`: the provider ld.so picks lacks a version (`version 'V' not found`, fatal at load,
/// `_dl_check_map_versions` in `elf/dl-version.c`) or no object of the process defines a versioned symbol the
/// consumer needs (`undefined symbol: NAME, version V`; the loader's lookup fills `unbound`). A glibc library's
/// `GLIBC_x.y` newer than the process's glibc (`glibc`) is `glibc-too-old`'s, reported there once.
pub fn symbol_version_missing(r: &Resolution, glibc: Option<&super::glibc::Available>) -> Vec<Finding> {
    let mut out = Vec::new();
    // The object each request gave, by requester and name (the first request, as ld.so answers the rest
    // from it).
    let mut answered: std::collections::HashMap<(usize, &str), Option<usize>> =
        std::collections::HashMap::new();
    for l in &r.libraries {
        answered
            .entry((l.needed_by_index, l.soname.as_str()))
            .or_insert(l.object);
    }
    for (ci, consumer) in r.objects.iter().enumerate() {
        let mut missing_symbols: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for need in &consumer.version_needs {
            let Some(pi) = answered.get(&(ci, need.file.as_str())).copied().flatten() else {
                continue;
            };
            let Some(provider) = r.objects.get(pi) else {
                continue;
            };
            // An object without DT_VERDEF accepts any version (glibc only warns in `match_symbol`).
            if provider.version_defs.is_empty() {
                continue;
            }
            for v in need
                .versions
                .iter()
                .filter(|v| !provider.version_defs.contains(v))
                .filter(|v| !super::glibc::covers(consumer, &need.file, v, glibc))
            {
                out.push(
                    Finding::new(
                        Code::SymbolVersionMissing,
                        format!(
                            "{}: {}: version `{v}' not found (required by {})",
                            r.binary, provider.path, consumer.path
                        ),
                        format!(
                            "{} needs a newer {} than {}; put the matching copy first on the search path.",
                            consumer.path, need.file, provider.path
                        ),
                    )
                    .because(format!(
                        "{} needs version {v} from {} (DT_VERNEED)",
                        consumer.path, need.file
                    ))
                    .because(format!(
                        "{} defines only {} (DT_VERDEF)",
                        provider.path,
                        provider.version_defs.join(", ")
                    ))
                    .at(&r.binary),
                );
            }
        }
        // The loader looked each versioned reference up in the objects defining its version.
        for s in &consumer.unbound {
            if let Some(v) = s.version.as_deref() {
                missing_symbols.entry(v).or_default().push(&s.name);
            }
        }
        for (v, names) in missing_symbols {
            let providers: Vec<String> = r
                .objects
                .iter()
                .filter(|o| o.version_defs.iter().any(|d| d == v))
                .map(|o| {
                    format!(
                        "{}{}",
                        o.path,
                        o.version
                            .as_deref()
                            .map(|x| format!(" (version {x})"))
                            .unwrap_or_default()
                    )
                })
                .collect();
            let shown: Vec<&str> = names.iter().take(5).copied().collect();
            let more = names.len().saturating_sub(shown.len());
            out.push(
                Finding::new(
                    Code::SymbolVersionMissing,
                    format!(
                        "{}: {}: undefined symbol: {}, version {v}{}",
                        r.binary,
                        consumer.path,
                        shown[0],
                        if names.len() > 1 {
                            format!(" (and {} more)", names.len() - 1)
                        } else {
                            String::new()
                        }
                    ),
                    format!(
                        "{} is older than {} needs: load the copy it was built against first (check \
                         LD_LIBRARY_PATH and the order of the search path).",
                        providers.join(", "),
                        consumer.path
                    ),
                )
                .because(format!(
                    "{} needs {}@{v}{}",
                    consumer.path,
                    shown.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ))
                .because(format!(
                    "{} defines version {v} but not these symbols",
                    providers.join(", ")
                ))
                .at(&r.binary),
            );
        }
    }
    out
}

/// `foreign-architecture`: the binary is for an architecture the machine (or root) has no loader for, so its
/// libraries were not looked up; said once per binary, with what was read.
pub fn foreign_architecture(r: &Resolution) -> Option<Finding> {
    let f = r.foreign.as_ref()?;
    let here = f
        .here
        .as_deref()
        .map_or("this machine".to_string(), |h| format!("this {h} machine"));
    let mut finding = Finding::new(
        Code::ForeignArchitecture,
        format!(
            "{}: built for {}; {here} cannot load it, so its libraries were not looked up (its device code and \
             CUDA runtime are still judged)",
            r.binary, f.needs
        ),
        format!(
            "To judge its libraries too, inspect it where it runs (`cudadiag inspect {bin}` on an {needs} \
             machine) or in a filesystem of its architecture: `cudadiag inspect --root /path/to/{needs}-root {bin}` \
             (a sysroot or an unpacked image).",
            bin = r.binary,
            needs = f.needs
        ),
    )
    .at(&r.binary);
    for e in &f.evidence {
        finding = finding.because(e.clone());
    }
    Some(finding)
}

/// CUDA libraries whose soname major is the CUDA major (cuFFT, cuRAND, cuSOLVER, cuSPARSE number theirs apart).
const CUDA_MAJOR_LIBS: &[&str] = &[
    "libcudart",
    "libcublas",
    "libcublasLt",
    "libnvrtc",
    "libnvJitLink",
    "libcupti",
    "libnppc",
    "libnvblas",
];

/// `multiple-cuda-majors`: libraries of several CUDA majors mapped into one process.
pub fn multiple_cuda_majors(r: &Resolution) -> Option<Finding> {
    let mut majors: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for o in &r.objects {
        let Some(soname) = &o.soname else { continue };
        let Some((stem, tail)) = soname.split_once(".so.") else {
            continue;
        };
        if !CUDA_MAJOR_LIBS.contains(&stem) {
            continue;
        }
        if let Some(m) = tail.split('.').next().and_then(|m| m.parse().ok()) {
            majors
                .entry(m)
                .or_default()
                .push(format!("{soname} ({})", o.path));
        }
    }
    if majors.len() < 2 {
        return None;
    }
    let list: Vec<String> = majors.keys().map(|m| format!("CUDA {m}")).collect();
    let mut f = Finding::new(
        Code::MultipleCudaMajors,
        format!("{}: libraries of {} are loaded into one process", r.binary, list.join(" and ")),
        "Use one CUDA major throughout: rebuild or reinstall the components built for the other one (pip wheels \
         named -cu12/-cu13, conda cuda-version pins).",
    )
    .at(&r.binary);
    for (m, libs) in &majors {
        f = f.because(format!("CUDA {m}: {}", libs.join(", ")));
    }
    Some(f)
}
