//! A library that no search found, told in short: the names of the driver libraries the rules single out,
//! the search's summary ([`trail_short`]) and the one-line fix ([`fix_for_missing`]). A leaf below both the
//! `library-not-found` rule (`missing`) and the loader's other rules (`loader`), which calls it.

use crate::facts::loader::{How, Library, StepResult};
use std::collections::BTreeSet;

/// The driver library, loaded with `dlopen` by every CUDA runtime.
pub const LIBCUDA: &str = "libcuda.so.1";

/// NVML, the driver's management library, loaded with `dlopen` by frameworks, NCCL and cuFile.
pub const LIBNVML: &str = "libnvidia-ml.so.1";

/// A missing library's search in short, for the human report without `-v`: how many places were searched, of
/// which kinds; the steps that found a file and refused it; and the step that would find a copy on disk once
/// `ldconfig` has run. The copies themselves are evidence lines of their own.
pub fn trail_short(l: &Library) -> Vec<String> {
    let lines = l.trail_lines();
    let mut kinds: Vec<(String, usize)> = Vec::new();
    for s in &l.trail {
        let what = s.how.label(s.of.as_deref(), &l.needed_by);
        match kinds.iter_mut().find(|(k, _)| *k == what) {
            Some((_, n)) => *n += 1,
            None => kinds.push((what, 1)),
        }
    }
    let kinds: Vec<String> = kinds
        .into_iter()
        .map(|(k, n)| if n == 1 { k } else { format!("{k} ×{n}") })
        .collect();
    let n = l.trail.len();
    let mut out = vec![format!(
        "search: {n} place{} searched ({}), none gives it; -v lists each step",
        if n == 1 { "" } else { "s" },
        kinds.join(", ")
    )];
    for (s, line) in l.trail.iter().zip(&lines) {
        if matches!(
            s.result,
            StepResult::WrongClass | StepResult::WrongMachine | StepResult::Invalid
        ) {
            out.push(format!("search {line}"));
        }
    }
    let in_cache_dir = l
        .copies
        .iter()
        .find(|c| c.unusable.is_none() && c.same_name && c.in_ld_so_conf);
    if let (Some(c), Some(i)) = (in_cache_dir, l.trail.iter().position(|s| s.how == How::LdSoCache)) {
        out.push(format!(
            "search step {} [ld.so.cache] would give {} once `ldconfig` has run",
            i + 1,
            c.path
        ));
    }
    out
}

/// The directory of a path, as the loader's messages name it.
pub(super) fn dir_of(p: &str) -> &str {
    p.rsplit_once('/')
        .map_or(".", |(d, _)| if d.is_empty() { "/" } else { d })
}

/// Why the cache step of a library's search missed a directory `ldconfig` would have put in the cache: no
/// entry (a cache older than the library or its ld.so.conf line) or no usable cache at all. `None` when the
/// cache step failed for another reason (an entry refused under DF_1_NODEFLIB, a wrong-class entry).
fn cache_missed(l: &Library) -> Option<&'static str> {
    let step = l.trail.iter().find(|s| s.how == How::LdSoCache)?;
    match step.result {
        StepResult::NoEntry => Some("/etc/ld.so.cache has no entry for it (ldconfig has not run since)"),
        StepResult::NoCache => Some("there is no usable /etc/ld.so.cache (ldconfig never wrote one)"),
        _ => None,
    }
}

/// The one-line fix for a library that is not found. Copies this loader would pass over (another ELF class or
/// machine) are never offered as the answer.
pub fn fix_for_missing(l: &Library) -> String {
    let usable = |c: &&crate::facts::loader::Copy| c.unusable.is_none();
    if l.is_dlopen_stem() {
        if let Some(first) = l.completions.first() {
            return format!(
                "{} names {} without a version, and only versioned files of it are along its search; if it \
                 fails to load it, it asks for the bare name: link that to the version it was built for \
                 (in the directory of {first}: ln -s {first} {}), or install the package that has the \
                 development link.",
                l.needed_by, l.soname, l.soname
            );
        }
        let elsewhere: BTreeSet<&str> = l.copies.iter().filter(usable).map(|c| dir_of(&c.path)).collect();
        return if elsewhere.is_empty() {
            format!(
                "{} loads {} (or a versioned name of it) only on demand, and no version of it is on this \
                 machine: install it if the program uses it (an optional library it never asks for is no error).",
                l.needed_by, l.soname
            )
        } else {
            format!(
                "{} loads {} (or a versioned name of it) on demand; versions of it are only in {}, which its \
                 search does not reach: if the program uses it, run with LD_LIBRARY_PATH set to that directory.",
                l.needed_by,
                l.soname,
                elsewhere.into_iter().collect::<Vec<_>>().join(", ")
            )
        };
    }
    if let Some(c) = l.copies.iter().filter(usable).find(|c| c.same_name) {
        let d = dir_of(&c.path);
        if let (true, Some(why)) = (c.in_ld_so_conf, cache_missed(l)) {
            return format!(
                "{} is in {d}, which /etc/ld.so.conf lists, but the loader searches that list only through its \
                 cache, and {why}: run `sudo ldconfig` (or LD_LIBRARY_PATH={d} for one run).",
                l.soname
            );
        }
        return format!(
            "{} is in {d}: run with LD_LIBRARY_PATH={d}, or add it to {}'s RUNPATH (patchelf --add-rpath {d}), \
             or list it in /etc/ld.so.conf.d/ and run ldconfig.",
            l.soname, l.needed_by
        );
    }
    if l.copies.iter().any(|c| usable(&c)) {
        let others: BTreeSet<String> = l
            .copies
            .iter()
            .filter(usable)
            .map(|c| c.path.rsplit('/').next().unwrap_or(&c.path).to_string())
            .collect();
        return format!(
            "Only other versions are on this machine ({}): install the {} that {} was built against, or rebuild \
             it against the installed one.",
            others.into_iter().collect::<Vec<_>>().join(", "),
            l.soname,
            l.needed_by
        );
    }
    // Only copies this loader passes over: name one, the requested name first.
    if let Some(c) = l.copies.iter().find(|c| c.same_name).or(l.copies.first()) {
        return format!(
            "No copy of {} that {} can load is on this machine ({}: {}). Install the build for its \
             architecture.",
            l.soname,
            l.needed_by,
            c.path,
            c.unusable.as_deref().unwrap_or_default()
        );
    }
    format!(
        "No copy of {} is on this machine: install the package (or wheel) that provides it.",
        l.soname
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::loader::{Copy, Step};

    fn step(how: How, dir: &str, result: StepResult) -> Step {
        Step {
            how,
            of: None,
            dir: Some(dir.into()),
            path: None,
            result,
            note: None,
        }
    }

    fn missing(trail: Vec<Step>, copies: Vec<Copy>) -> Library {
        Library {
            trail,
            copies,
            ..Library::unresolved("libcudart.so.12", "/app", 0)
        }
    }

    #[test]
    fn the_steps_are_counted_by_kind_and_a_refused_file_is_named() {
        let l = missing(
            vec![
                step(How::Runpath, "/app/a", StepResult::NotPresent),
                step(How::Runpath, "/app/b", StepResult::WrongClass),
                step(How::LdSoCache, "/etc/ld.so.cache", StepResult::NoEntry),
                step(How::DefaultPath, "/lib", StepResult::NotPresent),
                step(How::DefaultPath, "/usr/lib", StepResult::NotPresent),
            ],
            Vec::new(),
        );
        let short = trail_short(&l);
        assert_eq!(
            short[0],
            "search: 5 places searched (runpath ×2, ld.so.cache, default path ×2), none gives it; -v lists each step"
        );
        assert_eq!(short.len(), 2, "{short:?}");
        assert!(short[1].starts_with("search 2. [runpath] /app/b"), "{short:?}");
    }

    #[test]
    fn a_copy_in_a_directory_ld_so_conf_lists_names_the_cache_step() {
        let copy = |in_ld_so_conf| Copy {
            path: "/usr/local/cuda/lib64/libcudart.so.12".into(),
            same_name: true,
            version: None,
            unusable: None,
            in_ld_so_conf,
            package: None,
        };
        let trail = || {
            vec![
                step(How::LdSoCache, "/etc/ld.so.cache", StepResult::NoEntry),
                step(How::DefaultPath, "/lib", StepResult::NotPresent),
            ]
        };
        let short = trail_short(&missing(trail(), vec![copy(true)]));
        assert_eq!(
            short.last().unwrap(),
            "search step 1 [ld.so.cache] would give /usr/local/cuda/lib64/libcudart.so.12 once `ldconfig` has run"
        );
        // Near miss: a copy elsewhere is its own evidence line, not a step of the search.
        assert_eq!(trail_short(&missing(trail(), vec![copy(false)])).len(), 1);
    }

    #[test]
    fn a_missing_cache_is_told_from_its_type_and_a_refused_entry_is_not() {
        let no_cache = Step {
            dir: None,
            ..step(How::LdSoCache, "", StepResult::NoCache)
        };
        let l = missing(vec![no_cache], Vec::new());
        assert_eq!(
            cache_missed(&l),
            Some("there is no usable /etc/ld.so.cache (ldconfig never wrote one)")
        );
        assert_eq!(
            l.trail_lines(),
            ["1. [ld.so.cache] skipped (no usable /etc/ld.so.cache)"]
        );
        // Near miss: a cache step skipped for another reason (DF_1_NODEFLIB) is not a missing cache.
        let refused = Step {
            dir: None,
            note: Some("cache entry /lib/libcudart.so.12 refused".into()),
            ..step(How::LdSoCache, "", StepResult::Skipped)
        };
        assert_eq!(cache_missed(&missing(vec![refused], Vec::new())), None);
    }
}
