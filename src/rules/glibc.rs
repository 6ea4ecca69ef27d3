//! `glibc-too-old`: the process needs a newer glibc than the machine has. Pure functions of a loader
//! [`Resolution`] and the machine's [`GlibcFacts`].
//!
//! ld.so checks every object's DT_VERNEED against its providers' DT_VERDEF before anything runs
//! (`_dl_check_map_versions`, glibc `elf/dl-version.c`), so a `GLIBC_2.34` need on a glibc 2.28 machine stops
//! the program with "version `GLIBC_2.34' not found". The same missing version would also be a
//! `symbol-version-missing`; for glibc's own libraries it is reported once, here, because the cause and the
//! fix differ (the binary was built on a newer system; no search path can help): [`covers`] is the predicate
//! `symbol-version-missing` uses to leave those versions to this rule.

use crate::facts::host::{GlibcFacts, GlibcSource};
use crate::facts::loader::{LoadedObject, Resolution};
use crate::findings::{Code, Finding};
use crate::glibc::{self, GlibcNeed};
use std::cmp::Ordering;

/// The glibc a process is judged against, and where its release was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Available {
    /// The release (`2.28`).
    pub version: String,
    /// The file and what was read in it, for the finding's evidence.
    pub evidence: String,
}

/// The glibc the process of `r` will get: the machine's, when its facts were read (`host`: the banner of the
/// `libc.so.6` its loader resolves, or a snapshot's), else the `libc.so.6` the resolution loads, by the
/// highest `GLIBC_x.y` it defines (what ld.so checks needs against).
pub fn available(r: &Resolution, host: Option<&GlibcFacts>) -> Option<Available> {
    if let Some(h) = host {
        let how = match h.source {
            GlibcSource::Banner => "banner",
            GlibcSource::Verdef => "version definitions",
        };
        return Some(Available {
            version: h.version.clone(),
            evidence: format!("glibc {}: {} ({how}: {})", h.version, h.path, h.evidence),
        });
    }
    let libc = r
        .objects
        .iter()
        .find(|o| o.soname.as_deref() == Some("libc.so.6"))?;
    let v = glibc::highest_defined(&libc.version_defs)?;
    Some(Available {
        evidence: format!(
            "glibc {v}: {} defines versions up to GLIBC_{v} (DT_VERDEF)",
            libc.path
        ),
        version: v,
    })
}

/// Is `o` one of glibc's own libraries (or its loader)? Their needs are glibc's internal ones (`libc.so.6`
/// needs `GLIBC_2.35` of `ld-linux-x86-64.so.2`): a glibc always satisfies its own, and on another machine
/// that machine's glibc takes their place, so they are no part of a program's floor.
pub fn is_glibc_object(o: &LoadedObject) -> bool {
    let name = o
        .soname
        .as_deref()
        .unwrap_or_else(|| o.path.rsplit('/').next().unwrap_or(&o.path));
    glibc::is_glibc_library(name)
}

/// Each object of the process with the highest glibc version it needs, in load order; glibc's own
/// libraries left out ([`is_glibc_object`]).
pub fn needs(r: &Resolution) -> Vec<(&LoadedObject, GlibcNeed)> {
    r.objects
        .iter()
        .filter(|o| !is_glibc_object(o))
        .filter_map(|o| glibc::floor(&o.version_needs).map(|n| (o, n)))
        .collect()
}

/// The glibc floor of the whole process: the highest need of any object, with the first object (in load
/// order: the binary before its libraries) that has it.
pub fn tree_floor(r: &Resolution) -> Option<(&LoadedObject, GlibcNeed)> {
    let mut best: Option<(&LoadedObject, GlibcNeed)> = None;
    for (o, n) in needs(r) {
        if best
            .as_ref()
            .is_none_or(|(_, b)| glibc::compare(&n.version, &b.version) == Ordering::Greater)
        {
            best = Some((o, n));
        }
    }
    best
}

/// Does `glibc-too-old` report the version `name` that `consumer` needs from `file`, when the process gets
/// `available`? Only a glibc library's numbered version newer than the release, needed by an object that is
/// not glibc's own (one glibc's library needing more of another is a mix of two glibc copies:
/// `symbol-version-missing`).
pub fn covers(consumer: &LoadedObject, file: &str, name: &str, available: Option<&Available>) -> bool {
    let (Some(a), Some(v)) = (available, glibc::release_of(name)) else {
        return false;
    };
    glibc::is_glibc_library(file)
        && !is_glibc_object(consumer)
        && glibc::compare(v, &a.version) == Ordering::Greater
}

/// `glibc-too-old`: some object of the process needs a newer glibc than the one it gets. One finding per
/// process, naming the highest need and every object that needs more than the machine has. `machine` is the
/// binary's architecture (`x86_64`), for the build command of the help.
pub fn glibc_too_old(r: &Resolution, host: Option<&GlibcFacts>, machine: Option<&str>) -> Option<Finding> {
    let have = available(r, host)?;
    let too_new: Vec<(&LoadedObject, GlibcNeed)> = needs(r)
        .into_iter()
        .filter(|(_, n)| glibc::compare(&n.version, &have.version) == Ordering::Greater)
        .collect();
    let (top, need) = too_new
        .iter()
        .max_by(|(_, a), (_, b)| glibc::compare(&a.version, &b.version).then(Ordering::Greater))?;
    let who = if top.path == r.binary {
        String::new()
    } else {
        format!("{} (loaded by it) ", top.path)
    };
    let mut f = Finding::new(
        Code::GlibcTooOld,
        format!(
            "{}: {who}needs {} (from {}), this machine's glibc is {}: version `{}' not found",
            r.binary, need.name, need.from, have.version, need.name
        ),
        help(&need.version, &have.version, machine),
    )
    .at(&r.binary);
    const SHOWN: usize = 8;
    for (o, n) in too_new.iter().take(SHOWN) {
        f = f.because(format!(
            "{} needs {} from {} (DT_VERNEED)",
            o.path, n.name, n.from
        ));
    }
    if too_new.len() > SHOWN {
        f = f.because(format!(
            "and {} of the process",
            crate::findings::count(too_new.len() - SHOWN, "more object", "more objects")
        ));
    }
    Some(f.because(have.evidence))
}

/// What to do: build against the machine's glibc or older, or run where glibc is new enough.
fn help(need: &str, have: &str, machine: Option<&str>) -> String {
    let arch = match machine {
        Some("aarch64") => "aarch64",
        _ => "x86_64",
    };
    let newer = glibc::distributions_with(need)
        .map(|d| format!(" (e.g. {d})"))
        .unwrap_or_default();
    format!(
        "It was built against a newer glibc than this machine's {have}, and glibc only runs programs built \
         for it or older. Rebuild it against glibc {have} or older: in a manylinux2014 container (glibc 2.17), \
         on an older distribution, or with `cargo zigbuild --target {arch}-unknown-linux-gnu.2.17` (`zig cc \
         -target {arch}-linux-gnu.2.17` for C/C++); or install a build made for older systems (a \
         manylinux2014 wheel, a conda-forge package). Otherwise run it where glibc is {need} or newer{newer}, \
         or in a container of such an image."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::VersionNeed;

    fn obj(path: &str, soname: Option<&str>, needs: &[(&str, &[&str])], defs: &[&str]) -> LoadedObject {
        LoadedObject {
            path: path.into(),
            realpath: path.into(),
            soname: soname.map(str::to_string),
            version_needs: needs
                .iter()
                .map(|(f, v)| VersionNeed {
                    file: f.to_string(),
                    versions: v.iter().map(|s| s.to_string()).collect(),
                })
                .collect(),
            version_defs: defs.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn process(libc_defs: &[&str]) -> Resolution {
        Resolution {
            binary: "./app".into(),
            objects: vec![
                obj(
                    "./app",
                    None,
                    &[("libc.so.6", &["GLIBC_2.2.5", "GLIBC_2.17"])],
                    &[],
                ),
                obj(
                    "/opt/lib/libfoo.so",
                    Some("libfoo.so"),
                    &[("libc.so.6", &["GLIBC_2.34"]), ("libm.so.6", &["GLIBC_2.29"])],
                    &[],
                ),
                obj(
                    "/lib/libc.so.6",
                    Some("libc.so.6"),
                    &[("ld-linux-x86-64.so.2", &["GLIBC_2.35"])],
                    libc_defs,
                ),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn the_tree_floor_names_the_object_that_needs_it() {
        let r = process(&["GLIBC_2.2.5"]);
        let (o, n) = tree_floor(&r).unwrap();
        assert_eq!(
            (o.path.as_str(), n.version.as_str()),
            ("/opt/lib/libfoo.so", "2.34")
        );
        assert_eq!(needs(&r).len(), 2);
    }

    #[test]
    fn fires_from_the_loaded_libc_when_the_machine_was_not_read() {
        let r = process(&["libc.so.6", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.28"]);
        let f = glibc_too_old(&r, None, Some("x86_64")).unwrap();
        assert_eq!(
            f.message,
            "./app: /opt/lib/libfoo.so (loaded by it) needs GLIBC_2.34 (from libc.so.6), this machine's glibc is \
             2.28: version `GLIBC_2.34' not found"
        );
        assert!(f.help.contains("x86_64-unknown-linux-gnu.2.17"), "{}", f.help);
        assert!(f.help.contains("RHEL/Rocky/Alma 9"), "{}", f.help);
        // The library's need above 2.28 and the libc are evidence; the binary's own 2.17 is not.
        assert_eq!(
            f.evidence,
            [
                "/opt/lib/libfoo.so needs GLIBC_2.34 from libc.so.6 (DT_VERNEED)",
                "glibc 2.28: /lib/libc.so.6 defines versions up to GLIBC_2.28 (DT_VERDEF)"
            ]
        );
        let (have, foo, libc) = (available(&r, None), &r.objects[1], &r.objects[2]);
        assert!(covers(foo, "libc.so.6", "GLIBC_2.34", have.as_ref()));
        assert!(!covers(foo, "libc.so.6", "GLIBC_2.28", have.as_ref()));
        assert!(!covers(foo, "libfoo.so", "GLIBC_2.34", have.as_ref()));
        assert!(!covers(libc, "ld-linux-x86-64.so.2", "GLIBC_2.34", have.as_ref()));
    }

    #[test]
    fn the_machines_facts_come_first_and_a_new_enough_glibc_is_quiet() {
        let r = process(&["GLIBC_2.2.5", "GLIBC_2.28"]);
        let host = GlibcFacts {
            version: "2.36".into(),
            source: GlibcSource::Banner,
            path: "/lib/libc.so.6".into(),
            real_path: "/lib/libc.so.6".into(),
            evidence: "\"GNU C Library (GNU libc) stable release version 2.36.\" at offset 0x10".into(),
        };
        assert_eq!(glibc_too_old(&r, Some(&host), None), None);
        // Exactly the release needed is enough.
        let r = process(&["GLIBC_2.2.5", "GLIBC_2.34"]);
        assert_eq!(glibc_too_old(&r, None, None), None);
        // No libc to judge against: nothing said.
        let mut r = process(&[]);
        r.objects.pop();
        assert_eq!(glibc_too_old(&r, None, None), None);
    }
}
