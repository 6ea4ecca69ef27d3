//! The glibc floor: the oldest GNU C Library a binary can start on, and the glibc a machine has.
//!
//! glibc versions its symbols (`memcpy@GLIBC_2.14`, `__libc_start_main@GLIBC_2.34`). The static linker records,
//! per library, every version a binary's references are bound to in its DT_VERNEED table; at start-up, before
//! any symbol is bound, `_dl_check_map_versions` (glibc `elf/dl-version.c`) looks each one up in the providing
//! object's DT_VERDEF and stops the program with "version `GLIBC_2.34' not found (required by ./app)" when it
//! is missing. The highest `GLIBC_x.y` a binary (or any object of its process) needs is therefore the oldest
//! glibc it can run on. A glibc release defines every version up to its own, so "the machine's glibc is older
//! than the need" and "its libc lacks the version" are the same question (`docs/glibc-floor.md`).
//!
//! The machine's glibc is read from its `libc.so.6` without running it: the banner glibc keeps in `.rodata`
//! (the text `libc.so.6` prints when executed: "GNU C Library (Debian GLIBC 2.36-9) stable release version
//! 2.36."), else the highest `GLIBC_x.y` its DT_VERDEF defines (a lower bound: a release that added no symbol
//! defines no version of its own). Pure functions over facts and bytes: no I/O here.

use crate::facts::VersionNeed;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// The highest glibc version some object needs, and from which glibc library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlibcNeed {
    /// The version number, `2.34` (the need is `GLIBC_2.34`).
    pub version: String,
    /// The version name as the object's DT_VERNEED spells it (`GLIBC_2.34`, `GLIBC_ABI_DT_RELR`).
    pub name: String,
    /// The glibc library it is needed from (`libc.so.6`).
    pub from: String,
}

/// Version markers glibc defines that are not numbered `GLIBC_x.y`, with the release that introduced them:
/// a binary linked with `-z pack-relative-relocs` needs `GLIBC_ABI_DT_RELR`, which glibc 2.36 added.
const ABI_MARKERS: &[(&str, &str)] = &[("GLIBC_ABI_DT_RELR", "2.36")];

/// Is `soname` a library glibc itself provides? The C library, its split-off parts (libm, libpthread, libdl,
/// librt, …), NSS modules and the dynamic loader of every architecture.
pub fn is_glibc_library(soname: &str) -> bool {
    const NAMES: &[&str] = &[
        "libc.so.6",
        "libm.so.6",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "libutil.so.1",
        "libresolv.so.2",
        "libanl.so.1",
        "libnsl.so.1",
        "libcrypt.so.1",
        "libBrokenLocale.so.1",
        "libmvec.so.1",
        "libthread_db.so.1",
        "libc_malloc_debug.so.0",
        "ld-linux.so.2",
        "ld64.so.1",
        "ld64.so.2",
    ];
    NAMES.contains(&soname) || soname.starts_with("ld-linux") || soname.starts_with("libnss_")
}

/// The numbers of a dotted version (`2.2.5` → `[2, 2, 5]`); `None` unless every part is a number.
pub fn numbers(v: &str) -> Option<Vec<u32>> {
    let parts: Option<Vec<u32>> = v.split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| !p.is_empty())
}

/// Compares two dotted versions numerically (`2.17` > `2.2.5`); unparsable ones compare as equal.
pub fn compare(a: &str, b: &str) -> Ordering {
    match (numbers(a), numbers(b)) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => Ordering::Equal,
    }
}

/// The glibc release a version name stands for: `GLIBC_2.34` → `2.34`, `GLIBC_ABI_DT_RELR` → `2.36`.
/// `None` for `GLIBC_PRIVATE` and other names that are no release.
pub fn release_of(name: &str) -> Option<&str> {
    if let Some((_, v)) = ABI_MARKERS.iter().find(|(m, _)| *m == name) {
        return Some(v);
    }
    let v = name.strip_prefix("GLIBC_")?;
    numbers(v).filter(|n| n.len() >= 2).map(|_| v)
}

/// The highest glibc version `needs` (one object's DT_VERNEED) asks of glibc's libraries, with the library.
/// Ties keep the first library (libc.so.6 comes first in most objects).
pub fn floor(needs: &[VersionNeed]) -> Option<GlibcNeed> {
    let mut best: Option<GlibcNeed> = None;
    for n in needs.iter().filter(|n| is_glibc_library(&n.file)) {
        for name in &n.versions {
            let Some(v) = release_of(name) else { continue };
            if best
                .as_ref()
                .is_none_or(|b| compare(v, &b.version) == Ordering::Greater)
            {
                best = Some(GlibcNeed {
                    version: v.to_string(),
                    name: name.clone(),
                    from: n.file.clone(),
                });
            }
        }
    }
    best
}

/// The highest `GLIBC_x.y` among the version names a library defines (its DT_VERDEF).
pub fn highest_defined(defs: &[String]) -> Option<String> {
    defs.iter()
        .filter(|d| d.starts_with("GLIBC_") && !ABI_MARKERS.iter().any(|(m, _)| m == d))
        .filter_map(|d| release_of(d))
        .max_by(|a, b| compare(a, b))
        .map(str::to_string)
}

/// glibc's banner in `bytes` (a `libc.so.6`'s `.rodata`): the first line starting "GNU C Library" that names
/// a release ("… stable release version 2.36.", "… release version 2.17, by Roland McGrath et al."), with its
/// offset in `bytes` and the version. `None` when there is no such line.
pub fn banner(bytes: &[u8]) -> Option<Banner> {
    const START: &[u8] = b"GNU C Library";
    for at in memchr::memmem::find_iter(bytes, START) {
        let rest = &bytes[at..];
        let end = rest
            .iter()
            .position(|&b| b == 0 || b == b'\n')
            .unwrap_or(rest.len())
            .min(512);
        let Ok(line) = std::str::from_utf8(&rest[..end]) else {
            continue;
        };
        let Some((_, tail)) = line.split_once("release version ") else {
            continue;
        };
        let version: String = tail
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let version = version.trim_end_matches('.');
        if numbers(version).is_some_and(|n| n.len() >= 2) {
            return Some(Banner {
                line: line.to_string(),
                version: version.to_string(),
                offset: at as u64,
            });
        }
    }
    None
}

/// glibc's banner line, as [`banner`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Banner {
    /// The whole first line ("GNU C Library (Debian GLIBC 2.36-9) stable release version 2.36.").
    pub line: String,
    /// The release (`2.36`).
    pub version: String,
    /// Its offset in the bytes searched.
    pub offset: u64,
}

/// Distributions and the glibc they ship, oldest first, for the help of a finding: the first that has at
/// least a version is one to run on (`docs/glibc-floor.md` lists the sources).
pub const DISTRIBUTIONS: &[(&str, &str)] = &[
    ("2.17", "CentOS/RHEL 7"),
    ("2.26", "Amazon Linux 2"),
    ("2.28", "RHEL/Rocky/Alma 8, Debian 10"),
    ("2.31", "Ubuntu 20.04, Debian 11"),
    ("2.34", "RHEL/Rocky/Alma 9, Amazon Linux 2023"),
    ("2.35", "Ubuntu 22.04"),
    ("2.36", "Debian 12"),
    ("2.39", "Ubuntu 24.04"),
];

/// The oldest distributions of [`DISTRIBUTIONS`] whose glibc is at least `version`.
pub fn distributions_with(version: &str) -> Option<&'static str> {
    DISTRIBUTIONS
        .iter()
        .find(|(v, _)| compare(v, version) != Ordering::Less)
        .map(|(_, d)| *d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(file: &str, versions: &[&str]) -> VersionNeed {
        VersionNeed {
            file: file.into(),
            versions: versions.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn the_floor_is_the_highest_glibc_version_numerically() {
        let needs = [
            need("libm.so.6", &["GLIBC_2.29", "GLIBC_2.2.5"]),
            need(
                "libc.so.6",
                &["GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.3.4", "GLIBC_PRIVATE"],
            ),
            need("libcudart.so.12", &["libcudart.so.12"]),
        ];
        let f = floor(&needs).unwrap();
        assert_eq!((f.version.as_str(), f.from.as_str()), ("2.29", "libm.so.6"));
        // 2.17 is newer than 2.3.4 and 2.2.5, not older.
        let f = floor(&needs[1..]).unwrap();
        assert_eq!(f.version, "2.17");
        assert_eq!(floor(&needs[2..]), None);
    }

    #[test]
    fn only_glibc_libraries_count() {
        // libxyz defining a GLIBC_-named version of its own is no glibc need.
        assert_eq!(floor(&[need("libxyz.so.1", &["GLIBC_2.40"])]), None);
        let f = floor(&[need("ld-linux-aarch64.so.1", &["GLIBC_2.17"])]).unwrap();
        assert_eq!(f.version, "2.17");
    }

    #[test]
    fn dt_relr_needs_glibc_2_36() {
        let f = floor(&[need("libc.so.6", &["GLIBC_2.34", "GLIBC_ABI_DT_RELR"])]).unwrap();
        assert_eq!(
            (f.version.as_str(), f.name.as_str()),
            ("2.36", "GLIBC_ABI_DT_RELR")
        );
    }

    #[test]
    fn highest_defined_version() {
        let defs: Vec<String> = [
            "libc.so.6",
            "GLIBC_2.2.5",
            "GLIBC_2.28",
            "GLIBC_2.3",
            "GLIBC_PRIVATE",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(highest_defined(&defs).as_deref(), Some("2.28"));
        assert_eq!(highest_defined(&defs[..1]), None);
    }

    #[test]
    fn banners_of_several_releases() {
        let debian =
            b"\0xx\0GNU C Library (Debian GLIBC 2.36-9+deb12u4) stable release version 2.36.\nCopyright";
        let b = banner(debian).unwrap();
        assert_eq!(b.version, "2.36");
        assert_eq!(b.offset, 4);
        assert_eq!(
            b.line,
            "GNU C Library (Debian GLIBC 2.36-9+deb12u4) stable release version 2.36."
        );
        let old = b"GNU C Library (GNU libc) stable release version 2.17, by Roland McGrath et al.\n";
        assert_eq!(banner(old).unwrap().version, "2.17");
        let dev = b"GNU C Library (GNU libc) development release version 2.42.9000.\n";
        assert_eq!(banner(dev).unwrap().version, "2.42.9000");
        // The name alone, with no release, is no banner; a later real one is found.
        let two = b"GNU C Library\0GNU C Library (GNU libc) stable release version 2.28.\n";
        assert_eq!(banner(two).unwrap().offset, 14);
        assert_eq!(banner(b"GNU C Library version"), None);
    }

    #[test]
    fn versions_compare_numerically() {
        assert_eq!(compare("2.17", "2.2.5"), Ordering::Greater);
        assert_eq!(compare("2.34", "2.34"), Ordering::Equal);
        assert_eq!(compare("2.28", "2.34"), Ordering::Less);
        assert_eq!(
            distributions_with("2.34"),
            Some("RHEL/Rocky/Alma 9, Amazon Linux 2023")
        );
        assert_eq!(distributions_with("2.50"), None);
    }
}
