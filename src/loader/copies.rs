//! Other copies of a library on disk, for a library that was not found: the answer to "where
//! is the right one?", which neither ld.so nor libtree gives.
//!
//! Looked for, under the root, in the default directories, the directories of `/etc/ld.so.conf` (and its
//! `include`s), every directory already named by the search (RPATH, LD_LIBRARY_PATH, RUNPATH), by a
//! bounded walk of `/usr/local` and `/opt` (toolkits, conda) and of the system Pythons' `site-packages/nvidia`
//! (pip wheels), and in the library directories of pip and conda layouts ([`package_dirs`]): NVIDIA's wheels'
//! `nvidia/*/lib` and a conda prefix's `lib`, beside each object that asks (the site-packages or `--target`
//! directory it sits in: onnxruntime-gpu's CUDA provider has no RPATH, and its CUDA libraries are in its own
//! site-packages' `nvidia/cu13/lib`), and in every Python environment and conda prefix of the root. Links are
//! not followed by the walk, so `/lib` → `/usr/lib` is not counted twice, and the tops of the walk are
//! resolved inside the root, so `R/opt -> /` walks `R`, never the host's `/`.
//!
//! A usable copy of the requested name is then asked who installed it ([`Copy::package`]): the pip
//! distribution whose `RECORD` lists it, or the conda package whose `conda-meta` record does. A package that
//! is already installed is not one to install again: the fix is to reach it.

use super::object::{Verdict, check_header};
use super::platform::Platform;
use crate::facts::host::Owner;
use crate::facts::loader::{Copy, How, Resolution};
use crate::python::dist_info::{MAX_LEVELS, Records};
use crate::system::{Env, Root};
use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Entries the walks visit at most, so a huge tree cannot stall a diagnosis.
const WALK_BUDGET: usize = 100_000;

/// The name's stem, `libcudart` for `libcudart.so.12`.
fn stem(name: &str) -> &str {
    name.split(".so").next().unwrap_or(name)
}

/// [`fill_with`] without an environment: the Python environments and conda prefixes named by variables
/// (`VIRTUAL_ENV`, `CONDA_PREFIX`, `PATH`, `PYTHONPATH`) are not looked in.
pub fn fill(root: &Root, platform: &Platform, res: &mut Resolution) {
    fill_with(root, &Env::default(), platform, res);
}

/// Fills [`crate::facts::loader::Library::copies`] for every library not found. (A shadowed library's other copy is known
/// already: [`crate::facts::loader::Library::intended`].) `env` names the Python environments and conda
/// prefixes to look in besides the usual places.
pub fn fill_with(root: &Root, env: &Env, platform: &Platform, res: &mut Resolution) {
    let wanted: BTreeSet<String> = res
        .libraries
        .iter()
        .filter(|l| {
            // A stem with versions of it along its search is answered by them; one without is looked for, so
            // that a version elsewhere on disk can be named.
            !l.soname.contains('/')
                && l.how == How::NotFound
                && (!l.is_dlopen_stem() || l.completions.is_empty())
        })
        .map(|l| l.soname.clone())
        .collect();
    if wanted.is_empty() {
        return;
    }
    let stems: BTreeSet<&str> = wanted.iter().map(|w| stem(w)).collect();
    let prefixes: Vec<String> = stems.iter().map(|s| format!("{s}.so")).collect();
    let matches = |name: &str| prefixes.iter().any(|p| name.starts_with(p.as_str()));
    let mut dirs: BTreeSet<&str> = res.system_dirs.iter().map(String::as_str).collect();
    let conf = ld_so_conf_dirs(root, "/etc/ld.so.conf");
    dirs.extend(conf.iter().map(String::as_str));
    for l in &res.libraries {
        for s in &l.trail {
            if let Some(d) = &s.dir {
                dirs.insert(d);
            }
        }
    }
    let layouts = package_dirs(root, env, res, &wanted);
    dirs.extend(layouts.iter().map(String::as_str));
    // The directories the loader knows of, and the trees where toolkits and wheels live, are read at once.
    let (mut found, walked) = std::thread::scope(|s| {
        let walked = s.spawn(|| walk_tops(root, &matches));
        (in_dirs(root, &dirs, &matches), crate::parallel::join(walked))
    });
    found.extend(walked);
    let mut records = Records::default();
    let mut conda: HashMap<PathBuf, HashMap<PathBuf, Owner>> = HashMap::new();
    for lib in &mut res.libraries {
        if !wanted.contains(&lib.soname) {
            continue;
        }
        let st = stem(&lib.soname);
        let chosen = lib.path.clone();
        let mut copies: Vec<Copy> = Vec::new();
        for p in &found {
            let name = p.rsplit('/').next().unwrap_or(p);
            // Only shared objects of that library (`libfoo.so`, `libfoo.so.1.2`), not `libfoo.so.1-gdb.py`.
            if !name.starts_with(&format!("{st}.so"))
                || !super::dlopen::is_soname(name)
                || Some(p) == chosen.as_ref()
            {
                continue;
            }
            let real = root
                .resolve(Path::new(p))
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_else(|_| p.clone());
            if !root.is_file(Path::new(p)) {
                continue;
            }
            let same_name = name == lib.soname;
            let unusable = unusable(root, Path::new(&real), platform);
            let package = (same_name && unusable.is_none())
                .then(|| package(root, &mut records, &mut conda, p, &real))
                .flatten();
            copies.push(Copy {
                path: p.clone(),
                same_name,
                version: super::name::version_from_name(&real).or_else(|| super::name::version_from_name(p)),
                unusable,
                in_ld_so_conf: conf
                    .iter()
                    .any(|d| p.rsplit_once('/').is_some_and(|(pd, _)| pd == d)),
                package,
            });
        }
        lib.copies = copies;
    }
}

/// The library directories of pip and conda layouts where a missing library may be: `nvidia/*/lib` (NVIDIA's
/// wheels: `nvidia/cu13/lib`, `nvidia/cudnn/lib`, CUDA 12's `nvidia/cublas/lib`) and a conda prefix's `lib`,
/// in each directory above a requester of a missing library (at most [`MAX_LEVELS`] up: the site-packages or
/// `--target` directory it was installed into, its environment's prefix) and in every Python environment and
/// conda prefix of the root ([`crate::python::envs::python_sites`]). A few `lstat`s and small listings each.
fn package_dirs(root: &Root, env: &Env, res: &Resolution, wanted: &BTreeSet<String>) -> BTreeSet<String> {
    let mut tops: BTreeSet<PathBuf> = BTreeSet::new();
    for l in res.libraries.iter().filter(|l| wanted.contains(&l.soname)) {
        let Some(o) = res.objects.get(l.needed_by_index) else {
            continue;
        };
        // The path as opened names its directories as the user sees them; one through `..` is left to the
        // real path, which names the same ones.
        for p in [&o.realpath, &o.path] {
            if p.split('/').any(|c| c == "..") {
                continue;
            }
            tops.extend(
                Path::new(p)
                    .ancestors()
                    .skip(1)
                    .take(MAX_LEVELS)
                    .map(Path::to_path_buf),
            );
        }
    }
    let prefixes = crate::python::envs::conda_prefixes(root, env);
    tops.extend(crate::python::envs::python_sites(root, env, &prefixes));
    let mut out = BTreeSet::new();
    for p in prefixes {
        out.insert(p.join("lib").to_string_lossy().into_owned());
    }
    for t in tops {
        if root.is_dir(&t.join("conda-meta")) {
            out.insert(t.join("lib").to_string_lossy().into_owned());
        }
        for d in root.read_dir(&t.join("nvidia")).unwrap_or_default() {
            out.insert(d.join("lib").to_string_lossy().into_owned());
        }
    }
    out
}

/// Who installed the copy at `path` (real path `real`): the pip distribution whose `RECORD` lists it (its name
/// and version from its `.dist-info` directory's name, PEP 427's `{name}-{version}`), else the conda package
/// whose `conda-meta` record lists it in the prefix above it.
fn package(
    root: &Root,
    records: &mut Records,
    conda: &mut HashMap<PathBuf, HashMap<PathBuf, Owner>>,
    path: &str,
    real: &str,
) -> Option<Owner> {
    if let Some(owned) = records.owner_of(root, real, path) {
        let info = owned.info.file_name()?.to_string_lossy().into_owned();
        let (name, version) = info.strip_suffix(".dist-info")?.split_once('-')?;
        return Some(Owner {
            kind: "pip".into(),
            name: crate::inspect::pep508::normalise(name),
            version: Some(version.to_string()),
        });
    }
    let prefix = Path::new(real)
        .ancestors()
        .skip(1)
        .take(MAX_LEVELS)
        .find(|d| root.is_dir(&d.join("conda-meta")))?;
    conda
        .entry(prefix.to_path_buf())
        .or_insert_with(|| crate::python::conda::records(root, prefix))
        .get(Path::new(real))
        .cloned()
}

/// Why the loader `p` would pass over the file at `real` (another class or machine, not a loadable ELF
/// object), read from its header as `open_verify` reads it; `None` when it would take it.
fn unusable(root: &Root, real: &Path, p: &Platform) -> Option<String> {
    let mut head = [0u8; 64];
    let n = root.open(real).and_then(|mut f| f.read(&mut head)).ok()?;
    match check_header(&head[..n], p)? {
        Verdict::WrongClass(c) => Some(format!("wrong ELF class: {c}")),
        Verdict::WrongMachine(m) => Some(format!("wrong machine: {m}")),
        Verdict::Invalid(why) | Verdict::Unreadable(why) => Some(why),
        Verdict::Ok(_) | Verdict::Absent => None,
    }
}

/// The entries of `dirs` whose names `matches`, as machine paths. Each directory is read once, under its
/// first spelling: `/lib/x86_64-linux-gnu` and `/usr/lib/x86_64-linux-gnu` are one directory where /lib is a
/// link. Only the names that match are kept (a system directory holds thousands).
fn in_dirs(root: &Root, dirs: &BTreeSet<&str>, matches: &dyn Fn(&str) -> bool) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut seen: BTreeSet<std::path::PathBuf> = BTreeSet::new();
    for d in dirs {
        let Ok(real) = root.resolve(Path::new(d)) else {
            continue;
        };
        if !seen.insert(real.clone()) {
            continue;
        }
        // Through the root: a remembering root lists a directory once for the run (the loader's search and
        // torch's list the same `lib` directories).
        let keep = |n: &std::ffi::OsStr| matches(&n.to_string_lossy());
        for name in root.read_dir_names(&real, keep).unwrap_or_default() {
            found.insert(format!("{}/{}", d.trim_end_matches('/'), name.to_string_lossy()));
        }
    }
    found
}

/// The files whose names `matches` under the trees where toolkits, conda and the system Python's wheels live
/// (`/usr/local`, `/opt`, `…/python3*/{site,dist}-packages/nvidia`), within [`WALK_BUDGET`] entries.
fn walk_tops(root: &Root, matches: &dyn Fn(&str) -> bool) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut budget = WALK_BUDGET;
    // Toolkits and conda live under /usr/local and /opt; pip wheels' libraries under site-packages/nvidia.
    let mut tops: Vec<(String, usize)> = vec![("/usr/local".into(), 6), ("/opt".into(), 7)];
    for base in ["/usr/lib", "/usr/local/lib"] {
        for d in root.read_dir(Path::new(base)).unwrap_or_default() {
            let name = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with("python3") {
                for sp in ["site-packages/nvidia", "dist-packages/nvidia"] {
                    tops.push((d.join(sp).to_string_lossy().into_owned(), 4));
                }
            }
        }
    }
    for (top, depth) in tops {
        // The top is resolved inside the root (`/opt` may be a link, even to `/`), and the walk below it
        // follows no link: every directory it opens is under the root.
        let Ok(real) = root.resolve(Path::new(&top)) else {
            continue;
        };
        let host = root.host_path(&real);
        for entry in walkdir::WalkDir::new(&host)
            .max_depth(depth)
            .follow_links(false)
            .follow_root_links(false)
            .into_iter()
            .flatten()
        {
            if budget == 0 {
                break;
            }
            budget -= 1;
            let name = entry.file_name().to_string_lossy();
            if matches(&name)
                && let Ok(rel) = entry.path().strip_prefix(&host)
            {
                found.insert(Path::new(&top).join(rel).to_string_lossy().into_owned());
            }
        }
    }
    found
}

/// Include levels followed, counting the top file: ldconfig has no limit (a file that includes itself
/// recurses until it runs out of file descriptors); 8 is deeper than any distribution's configuration.
const MAX_INCLUDE_DEPTH: usize = 8;

/// The directories of an `ld.so.conf` and its `include` globs (`*` and `?` in the last component, matches in
/// name order, as ldconfig's `glob` gives them), in file order: what `ldconfig` writes into the cache. glibc
/// itself never reads this file at run time.
///
/// Each file is read once, at its first include (by its real path inside the root): ldconfig's
/// `parse_conf_include` remembers nothing and would read a file that includes itself again and again, but a
/// second reading could only list directories already listed (ldconfig's `add_single_dir` drops a directory
/// it has, by device and inode), so the directories are the same, and ten `include /etc/ld.so.conf` lines
/// cost ten lookups, not 10⁸ reads.
pub fn ld_so_conf_dirs(root: &Root, file: &str) -> Vec<String> {
    let mut out = Vec::new();
    conf_dirs(root, file, 0, &mut BTreeSet::new(), &mut out);
    out
}

fn conf_dirs(
    root: &Root,
    file: &str,
    depth: usize,
    visited: &mut BTreeSet<std::path::PathBuf>,
    out: &mut Vec<String>,
) {
    if depth >= MAX_INCLUDE_DEPTH {
        return;
    }
    let Ok(real) = root.resolve(Path::new(file)) else {
        return;
    };
    if !visited.insert(real.clone()) {
        return;
    }
    let Ok(text) = root.read_to_string(&real, crate::system::read::CONFIG_TEXT) else {
        return;
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(pattern) = line.strip_prefix("include") {
            let pattern = pattern.trim();
            let pattern = if pattern.starts_with('/') {
                pattern.to_string()
            } else {
                let base = file.rsplit_once('/').map_or("", |(d, _)| d);
                format!("{base}/{pattern}")
            };
            let (dir, glob) = pattern.rsplit_once('/').unwrap_or(("/", &pattern));
            let Ok(entries) = root.read_dir(Path::new(if dir.is_empty() { "/" } else { dir })) else {
                continue;
            };
            for e in entries {
                let name = e
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if glob_match(glob, &name) {
                    conf_dirs(root, &e.to_string_lossy(), depth + 1, visited, out);
                }
            }
        } else if line.starts_with('/') {
            // `dir=TYPE` (libc5 era) still names a directory.
            let dir = line.split('=').next().unwrap_or(line).trim();
            out.push(match dir.trim_end_matches('/') {
                "" => "/".to_string(),
                d => d.to_string(),
            });
        }
    }
}

fn glob_match(p: &str, s: &str) -> bool {
    let (p, s) = (p.as_bytes(), s.as_bytes());
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < s.len() {
        if i < p.len() && (p[i] == b'?' || p[i] == s[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == b'*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(st) = star {
            i = st + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    while i < p.len() && p[i] == b'*' {
        i += 1;
    }
    i == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Case 3 of issue 19: ten `include /etc/ld.so.conf` lines in /etc/ld.so.conf gave 10⁸ reads (a hang);
    /// each file is read once and the directories are those of one reading.
    #[test]
    fn self_including_ld_so_conf_is_read_once() {
        let t = tempfile::tempdir().unwrap();
        let mut conf = String::from("/opt/a/lib\ninclude ld.so.conf.d/*.conf\n");
        for _ in 0..10 {
            conf.push_str("include /etc/ld.so.conf\n");
        }
        crate::system::put(t.path(), "/etc/ld.so.conf", conf.as_bytes());
        crate::system::put(
            t.path(),
            "/etc/ld.so.conf.d/x.conf",
            b"/opt/b/lib\ninclude /etc/ld.so.conf.d/y.conf\n",
        );
        crate::system::put(
            t.path(),
            "/etc/ld.so.conf.d/y.conf",
            b"/opt/c/lib\ninclude /etc/ld.so.conf.d/x.conf\n",
        );
        let start = std::time::Instant::now();
        let dirs = ld_so_conf_dirs(&Root::at(t.path()), "/etc/ld.so.conf");
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(dirs, ["/opt/a/lib", "/opt/b/lib", "/opt/c/lib"]);
    }

    #[test]
    fn globs() {
        assert!(glob_match("*.conf", "libc.conf"));
        assert!(!glob_match("*.conf", "libc.conf~"));
        assert!(glob_match("x?.c*", "x1.conf"));
    }
}
