//! The search for one name, step by step, as `_dl_map_new_object` in glibc's `elf/dl-load.c` does it.
//!
//! For a name without `/`:
//! 1. unless the requester has DT_RUNPATH: DT_RPATH of the requester, then of the object that loaded it, and
//!    on up the `l_loader` chain to the main program (an object with both RUNPATH and RPATH has its RPATH
//!    ignored, `get-dynamic-info.h`);
//! 2. `LD_LIBRARY_PATH` (separators `:` and `;`, an empty entry is the current directory; unset for
//!    secure-execution programs by `rtld.c`'s `UNSECURE_ENVVARS`);
//! 3. DT_RUNPATH of the requester only;
//! 4. `/etc/ld.so.cache` (an entry inside a default directory is refused when the requester has
//!    `DF_1_NODEFLIB`);
//! 5. the default directories, unless the requester has `DF_1_NODEFLIB`.
//!
//! In every directory the supported glibc-hwcaps subdirectories come first (`open_path`). Dynamic string
//! tokens are expanded as `_dl_dst_substitute` does: `$ORIGIN` is the directory of the path the object was
//! opened by, links not resolved (its real path only for a program the kernel starts, as `/proc/self/exe`
//! gives it: [`LoadedObject::origin`], `docs/loader-origin.md`), `$LIB`, `$PLATFORM`; an element whose token
//! cannot be expanded is dropped. A name with `/` is opened as given (after expansion).

use super::cache::LdCache;
use super::object::{Candidate, Files, Verdict};
use super::platform::Platform;
use crate::facts::loader::{How, Intended, LoadedObject, Step, StepResult};
use crate::system::Root;
use foldhash::HashMap;
use std::cell::RefCell;
use std::ops::ControlFlow;
use std::rc::Rc;
use std::sync::Arc;

/// Everything a search reads.
pub struct Context<'a> {
    /// The machine's filesystem.
    pub root: &'a Root,
    /// The loader's view of the machine.
    pub platform: &'a Platform,
    /// `ld.so.cache`, when usable.
    pub cache: Option<&'a LdCache>,
    /// `LD_LIBRARY_PATH`, or `None` when unset or ignored.
    pub ld_library_path: Option<&'a str>,
    /// Why `LD_LIBRARY_PATH` is ignored, when it is set but ignored.
    pub ld_library_path_ignored: Option<&'a str>,
    /// The current directory (for relative entries), from the captured `PWD`.
    pub cwd: &'a str,
    /// Secure-execution mode.
    pub secure: bool,
    /// Per search directory, the directories tried in it (glibc-hwcaps and legacy subdirectories, then the
    /// directory), once worked out.
    pub tries: RefCell<HashMap<String, Rc<[String]>>>,
}

/// A file found: its path, how, through whose RPATH (the object's index, when not the requester's own), and
/// the candidate.
type Found = (String, How, Option<usize>, Arc<Candidate>);

/// Where a step leaves the search: on to the next step, or stopped with the file found or ld.so's error.
type Next = ControlFlow<Result<Found, String>>;

/// What a search has gathered so far: its steps, and the other ELF class met on the way (ld.so's error names
/// it when nothing is found).
struct Walk {
    trail: Vec<Step>,
    other_class: Option<String>,
}

/// The result of one search.
pub struct Outcome {
    /// The file chosen, how, through whose RPATH, and the candidate.
    pub found: Option<Found>,
    /// Every step.
    pub trail: Vec<Step>,
    /// The error ld.so stops with when nothing is found or a bad file is met.
    pub error: Option<String>,
}

/// The `$ORIGIN` of an object: the one recorded when it was loaded ([`LoadedObject::origin`]); for facts that
/// carry none, worked out as it would have been (the main program from its real path, any other object from
/// the path it was opened by).
pub fn origin_of(obj: &LoadedObject, cwd: &str) -> String {
    if !obj.origin.is_empty() {
        return obj.origin.clone();
    }
    let path = if obj.role == crate::facts::loader::Role::Main {
        &obj.realpath
    } else {
        &obj.path
    };
    origin_from(path, cwd)
}

/// The `$ORIGIN` of an object opened by the path `opened`, as `_dl_new_object` (`elf/dl-object.c`) sets
/// `l_origin`: the directory part of the name, with the current directory put before a relative one, and
/// nothing else: no link is resolved and `..` stays (the kernel resolves both when the directory is opened,
/// links first). `/x` gives `/`.
pub fn origin_from(opened: &str, cwd: &str) -> String {
    let dir = match opened.rfind('/') {
        Some(0) => "/".to_string(),
        Some(i) => opened[..i].to_string(),
        None => String::new(),
    };
    if dir.starts_with('/') {
        dir
    } else if dir.is_empty() {
        cwd.to_string()
    } else {
        format!("{}/{dir}", cwd.trim_end_matches('/'))
    }
}

/// Expands `$ORIGIN`, `$LIB`, `$PLATFORM` (and their `${…}` forms). `None` when a token cannot be expanded.
pub fn expand(s: &str, origin: Option<&str>, p: &Platform) -> Option<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, len) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(e) => (&inner[..e], e + 2),
                None => ("", 0),
            }
        } else {
            let e = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..e], e)
        };
        match name {
            "ORIGIN" => out.push_str(origin?),
            "LIB" => out.push_str(&p.lib),
            "PLATFORM" if !p.platform.is_empty() => out.push_str(&p.platform),
            _ => {
                // Unknown token: the `$` stays, as in `_dl_dst_substitute`.
                out.push('$');
                rest = after;
                continue;
            }
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    Some(out)
}

/// Splits and expands a search path (`:`-separated; `;` too for LD_LIBRARY_PATH), dropping elements that
/// cannot be expanded and duplicates, and removing trailing slashes (`fillin_rpath`).
pub fn expand_list(entries: &[String], origin: Option<&str>, p: &Platform, secure: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in entries {
        let Some(mut d) = expand(e, origin, p) else {
            continue;
        };
        if secure && e.contains("ORIGIN") && !p.is_system_dir(&d) {
            continue;
        }
        while d.len() > 1 && d.ends_with('/') {
            d.pop();
        }
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

pub(super) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        return name.to_string();
    }
    // Called for every directory tried for every name: no formatting machinery.
    let mut path = String::with_capacity(dir.len() + 1 + name.len());
    path.push_str(dir);
    if dir != "/" {
        path.push('/');
    }
    path.push_str(name);
    path
}

impl Context<'_> {
    fn absolute<'p>(&self, path: &'p str) -> std::borrow::Cow<'p, str> {
        if path.starts_with('/') {
            path.into()
        } else {
            join(self.cwd.trim_end_matches('/'), path).into()
        }
    }

    /// Tries `name` in each of `dirs` (glibc-hwcaps subdirectories first, then, for glibc 2.26–2.36, the legacy
    /// hwcap ones), recording steps.
    fn open_path(
        &self,
        files: &mut Files,
        name: &str,
        dirs: &[String],
        how: How,
        of: Option<&str>,
        walk: &mut Walk,
    ) -> Result<Option<(String, Arc<Candidate>)>, String> {
        for dir in dirs {
            let tries = self.tries(files, dir);
            let last = tries.len() - 1;
            for (k, d) in tries.iter().enumerate() {
                let path = join(d, name);
                let verdict = files.verify(self.root, self.platform, &self.absolute(&path));
                let (result, note) = match &verdict {
                    Verdict::Ok(_) => (StepResult::Found, None),
                    Verdict::Absent if k != last => continue,
                    Verdict::Absent => (StepResult::NotPresent, None),
                    Verdict::WrongClass(c) => {
                        walk.other_class = Some(c.clone());
                        (StepResult::WrongClass, Some(format!("{c}: skipped")))
                    }
                    Verdict::WrongMachine(m) => {
                        (StepResult::WrongMachine, Some(format!("built for {m}: skipped")))
                    }
                    Verdict::Unreadable(e) => (StepResult::NotPresent, Some(format!("cannot open: {e}"))),
                    Verdict::Invalid(e) => (StepResult::Invalid, Some(e.clone())),
                };
                walk.trail.push(Step {
                    how,
                    of: of.map(str::to_string),
                    dir: Some(d.clone()),
                    path: Some(path.clone()),
                    result,
                    note,
                });
                match verdict {
                    Verdict::Ok(c) => return Ok(Some((path, c))),
                    Verdict::Invalid(e) => return Err(format!("{path}: {e}")),
                    _ => {}
                }
            }
        }
        Ok(None)
    }

    /// The directories `name` is tried in for the search directory `dir`, in order: its glibc-hwcaps
    /// subdirectories, only where `glibc-hwcaps` is there at all (a missing one would only give absent files,
    /// which the trail does not record); glibc 2.26–2.36's legacy ones whose first part (`tls`, `x86_64`, …)
    /// is there; then `dir`. Worked out once per directory for the whole walk.
    fn tries(&self, files: &mut Files, dir: &str) -> Rc<[String]> {
        if let Some(t) = self.tries.borrow().get(dir) {
            return t.clone();
        }
        let hwcaps = join(dir, "glibc-hwcaps");
        let mut tries: Vec<String> =
            if !self.platform.hwcaps.is_empty() && files.is_dir(self.root, &self.absolute(&hwcaps)) {
                self.platform.hwcaps.iter().map(|h| join(&hwcaps, h)).collect()
            } else {
                Vec::new()
            };
        let mut present: Vec<(&str, bool)> = Vec::new();
        for sub in &self.platform.legacy_subdirs {
            let first = sub.split('/').next().unwrap_or(sub);
            let there = match present.iter().find(|(f, _)| *f == first) {
                Some(&(_, there)) => there,
                None => {
                    let there = files.is_dir(self.root, &self.absolute(&join(dir, first)));
                    present.push((first, there));
                    there
                }
            };
            if there {
                tries.push(join(dir, sub));
            }
        }
        tries.push(dir.to_string());
        let tries: Rc<[String]> = tries.into();
        self.tries.borrow_mut().insert(dir.to_string(), tries.clone());
        tries
    }

    fn skipped(walk: &mut Walk, how: How, of: Option<&str>, note: String) {
        walk.trail.push(Step {
            how,
            of: of.map(str::to_string),
            dir: None,
            path: None,
            result: StepResult::Skipped,
            note: Some(note),
        });
    }

    /// Searches `name` for the object `requester` (its index in `objects`), as ld.so would.
    pub fn search(
        &self,
        files: &mut Files,
        objects: &[LoadedObject],
        requester: usize,
        name: &str,
    ) -> Outcome {
        let mut walk = Walk {
            trail: Vec::new(),
            other_class: None,
        };
        let stop = if name.contains('/') {
            self.by_path(files, &objects[requester], name, &mut walk)
        } else {
            self.by_name(files, objects, requester, name, &mut walk)
        };
        let Walk { trail, other_class } = walk;
        match stop {
            ControlFlow::Break(Ok(found)) => Outcome {
                found: Some(found),
                trail,
                error: None,
            },
            ControlFlow::Break(Err(e)) => Outcome {
                found: None,
                trail,
                error: Some(e),
            },
            ControlFlow::Continue(()) => Outcome {
                found: None,
                trail,
                error: Some(other_class.map_or_else(
                    || "cannot open shared object file: No such file or directory".into(),
                    |c| format!("wrong ELF class: {c}"),
                )),
            },
        }
    }

    /// A name with `/`: opened as given, after expansion, relative to the current directory.
    fn by_path(&self, files: &mut Files, req: &LoadedObject, name: &str, walk: &mut Walk) -> Next {
        let origin = origin_of(req, self.cwd);
        let Some(path) = expand(name, Some(&origin), self.platform) else {
            return ControlFlow::Break(Err("cannot expand dynamic string token".into()));
        };
        let file = path.rsplit('/').next().unwrap_or(&path);
        let dir =
            path.rsplit_once('/').map_or(
                String::new(),
                |(d, _)| if d.is_empty() { "/".into() } else { d.into() },
            );
        self.attempt(files, file, &[dir], How::Path, None, None, walk)
    }

    /// A name without `/`: the five steps in ld.so's order, up to the first that finds a file or stops.
    fn by_name(
        &self,
        files: &mut Files,
        objects: &[LoadedObject],
        requester: usize,
        name: &str,
        walk: &mut Walk,
    ) -> Next {
        let req = &objects[requester];
        self.step_rpath(files, objects, requester, name, walk)?;
        self.step_ld_library_path(files, objects, name, walk)?;
        self.step_runpath(files, req, name, walk)?;
        self.step_cache(files, req, name, walk)?;
        self.step_default_path(files, req, name, walk)
    }

    /// One step over a list of directories: stops with the file found there, or with the error of an invalid
    /// one; goes on when none has it.
    #[allow(clippy::too_many_arguments)]
    fn attempt(
        &self,
        files: &mut Files,
        name: &str,
        dirs: &[String],
        how: How,
        of: Option<&str>,
        via: Option<usize>,
        walk: &mut Walk,
    ) -> Next {
        match self.open_path(files, name, dirs, how, of, walk) {
            Ok(Some((path, c))) => ControlFlow::Break(Ok((path, how, via, c))),
            Ok(None) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(Err(e)),
        }
    }

    /// Step 1: the RPATH of the loader chain, unless the requester has RUNPATH.
    fn step_rpath(
        &self,
        files: &mut Files,
        objects: &[LoadedObject],
        requester: usize,
        name: &str,
        walk: &mut Walk,
    ) -> Next {
        let req = &objects[requester];
        if !req.runpath.is_empty() {
            if chain_rpath(objects, requester) {
                // Only worth saying when an RPATH of the chain would otherwise have been searched.
                Self::skipped(
                    walk,
                    How::Rpath,
                    Some(&req.path),
                    format!("rpath skipped: {} has a runpath", req.path),
                );
            }
            return ControlFlow::Continue(());
        }
        let mut at = Some(requester);
        let mut guard = 0;
        while let Some(i) = at {
            let o = &objects[i];
            if !o.rpath.is_empty() {
                let dirs = expand_list(
                    &o.rpath,
                    Some(&origin_of(o, self.cwd)),
                    self.platform,
                    self.secure,
                );
                let via = (i != requester).then_some(i);
                self.attempt(files, name, &dirs, How::Rpath, Some(o.path.as_str()), via, walk)?;
            }
            at = o.loader;
            guard += 1;
            if guard > objects.len() {
                break;
            }
        }
        // The main program's RPATH, when the chain did not reach it (objects loaded by dlopen).
        if let Some(main) = objects.first()
            && main.role == crate::facts::loader::Role::Main
            && !main.rpath.is_empty()
            && !chain_has(objects, requester, 0)
        {
            let dirs = expand_list(
                &main.rpath,
                Some(&origin_of(main, self.cwd)),
                self.platform,
                self.secure,
            );
            self.attempt(
                files,
                name,
                &dirs,
                How::Rpath,
                Some(main.path.as_str()),
                Some(0),
                walk,
            )?;
        }
        ControlFlow::Continue(())
    }

    /// Step 2: `LD_LIBRARY_PATH`, its relative entries and `$ORIGIN` taken from the main program.
    fn step_ld_library_path(
        &self,
        files: &mut Files,
        objects: &[LoadedObject],
        name: &str,
        walk: &mut Walk,
    ) -> Next {
        if let Some(llp) = self.ld_library_path {
            let entries: Vec<String> = llp.split([':', ';']).map(str::to_string).collect();
            let main_origin = objects.first().map(|m| origin_of(m, self.cwd));
            let dirs = expand_list(&entries, main_origin.as_deref(), self.platform, self.secure);
            return self.attempt(files, name, &dirs, How::LdLibraryPath, None, None, walk);
        }
        if let Some(why) = self.ld_library_path_ignored {
            Self::skipped(
                walk,
                How::LdLibraryPath,
                None,
                format!("LD_LIBRARY_PATH ignored: {why}"),
            );
        }
        ControlFlow::Continue(())
    }

    /// Step 3: the RUNPATH of the requester only.
    fn step_runpath(&self, files: &mut Files, req: &LoadedObject, name: &str, walk: &mut Walk) -> Next {
        if req.runpath.is_empty() {
            return ControlFlow::Continue(());
        }
        let dirs = expand_list(
            &req.runpath,
            Some(&origin_of(req, self.cwd)),
            self.platform,
            self.secure,
        );
        self.attempt(
            files,
            name,
            &dirs,
            How::Runpath,
            Some(req.path.as_str()),
            None,
            walk,
        )
    }

    /// Step 4: `/etc/ld.so.cache`, when the machine has one this loader reads.
    fn step_cache(&self, files: &mut Files, req: &LoadedObject, name: &str, walk: &mut Walk) -> Next {
        let (Some(cache), Some(_)) = (self.cache, self.platform.cache_id) else {
            walk.trail.push(Step {
                how: How::LdSoCache,
                of: None,
                dir: None,
                path: None,
                result: StepResult::NoCache,
                note: None,
            });
            return ControlFlow::Continue(());
        };
        let Some(e) = self.platform.cache_lookup(cache, name) else {
            walk.trail.push(Step {
                how: How::LdSoCache,
                of: None,
                dir: None,
                path: None,
                result: StepResult::NoEntry,
                note: Some("no entry for this name and architecture".into()),
            });
            return ControlFlow::Continue(());
        };
        let dir = e.path.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        if req.nodeflib && self.platform.is_system_dir(dir) {
            Self::skipped(
                walk,
                How::LdSoCache,
                None,
                format!(
                    "cache entry {} refused: {} has DF_1_NODEFLIB and it is in a default directory",
                    e.path, req.path
                ),
            );
            return ControlFlow::Continue(());
        }
        let path = e.path.clone();
        let verdict = files.verify(self.root, self.platform, &path);
        let (result, note) = match &verdict {
            Verdict::Ok(_) => (StepResult::Found, None),
            Verdict::WrongClass(c) => {
                walk.other_class = Some(c.clone());
                (StepResult::WrongClass, Some(c.clone()))
            }
            Verdict::WrongMachine(m) => (StepResult::WrongMachine, Some(m.clone())),
            Verdict::Invalid(m) => (StepResult::Invalid, Some(m.clone())),
            Verdict::Absent | Verdict::Unreadable(_) => (
                StepResult::NotPresent,
                Some("stale cache entry: the file is gone (run ldconfig)".into()),
            ),
        };
        walk.trail.push(Step {
            how: How::LdSoCache,
            of: None,
            dir: Some(dir.to_string()),
            path: Some(path.clone()),
            result,
            note,
        });
        match verdict {
            Verdict::Ok(c) => ControlFlow::Break(Ok((path, How::LdSoCache, None, c))),
            Verdict::Invalid(m) => ControlFlow::Break(Err(format!("{path}: {m}"))),
            _ => ControlFlow::Continue(()),
        }
    }

    /// Step 5: the default directories, unless the requester has `DF_1_NODEFLIB`.
    fn step_default_path(&self, files: &mut Files, req: &LoadedObject, name: &str, walk: &mut Walk) -> Next {
        if req.nodeflib {
            Self::skipped(
                walk,
                How::DefaultPath,
                None,
                format!("default path skipped: {} has DF_1_NODEFLIB", req.path),
            );
            return ControlFlow::Continue(());
        }
        self.attempt(
            files,
            name,
            &self.platform.system_dirs,
            How::DefaultPath,
            None,
            None,
            walk,
        )
    }

    /// The directories `obj`'s own RUNPATH (or, without one, its own RPATH) names, expanded: what the
    /// RUNPATH-intended lookup and the read-ahead try for each of its names. `None` when it has neither.
    pub fn own_dirs(&self, files: &mut Files, obj: &LoadedObject) -> Option<OwnDirs> {
        let (entries, how) = if !obj.runpath.is_empty() {
            (&obj.runpath, How::Runpath)
        } else if !obj.rpath.is_empty() {
            (&obj.rpath, How::Rpath)
        } else {
            return None;
        };
        let dirs = expand_list(
            entries,
            Some(&origin_of(obj, self.cwd)),
            self.platform,
            self.secure,
        );
        Some(OwnDirs {
            id: files.list_id(&dirs),
            how,
            dirs,
        })
    }

    /// The copy of `name` the requester's own RUNPATH (or, without one, its own RPATH) points at: `own` is
    /// its [`Context::own_dirs`].
    pub fn intended(&self, files: &mut Files, own: Option<&OwnDirs>, name: &str) -> Option<Intended> {
        let own = own?;
        if name.contains('/') {
            return None;
        }
        // Every library of a directory shares its RUNPATH, and most names are asked by many of them: the
        // answer depends only on the directories, the name and the platform.
        let key = (
            self.platform.machine,
            self.platform.is_64,
            own.how,
            own.id,
            name.to_string(),
        );
        if let Some(known) = files.intended.get(&key) {
            return known.clone();
        }
        let mut scratch = Walk {
            trail: Vec::new(),
            other_class: None,
        };
        let found = self
            .open_path(files, name, &own.dirs, own.how, None, &mut scratch)
            .ok()
            .flatten()
            .map(|(path, c)| Intended {
                how: own.how,
                version: super::name::version_from_name(&c.realpath),
                realpath: c.realpath.clone(),
                path,
            });
        files.intended.insert(key, found.clone());
        found
    }
}

/// An object's own search directories ([`Context::own_dirs`]), worked out once per object.
#[derive(Debug)]
pub struct OwnDirs {
    /// RUNPATH or RPATH.
    pub how: How,
    /// The directories, expanded (`$ORIGIN`, `$LIB`, `$PLATFORM`), in order.
    pub dirs: Vec<String>,
    /// Their number among the run's lists ([`Files::list_id`]).
    pub id: usize,
}

/// Does any object of `from`'s loader chain have a DT_RPATH in effect?
fn chain_rpath(objects: &[LoadedObject], from: usize) -> bool {
    let mut at = Some(from);
    let mut guard = 0;
    while let Some(i) = at {
        let Some(o) = objects.get(i) else { break };
        if !o.rpath.is_empty() {
            return true;
        }
        at = o.loader;
        guard += 1;
        if guard > objects.len() {
            break;
        }
    }
    false
}

fn chain_has(objects: &[LoadedObject], from: usize, target: usize) -> bool {
    let mut at = Some(from);
    let mut guard = 0;
    while let Some(i) = at {
        if i == target {
            return true;
        }
        at = objects.get(i).and_then(|o| o.loader);
        guard += 1;
        if guard > objects.len() {
            break;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plat() -> Platform {
        Platform {
            machine: 62,
            is_64: true,
            interpreter: String::new(),
            system_dirs: vec!["/lib64".into()],
            system_dirs_source: String::new(),
            lib: "lib64".into(),
            platform: "x86_64".into(),
            hwcaps: vec![],
            legacy_subdirs: vec![],
            legacy_hwcaps: Default::default(),
            isa_level: 1,
            cache_id: Some(0x303),
        }
    }

    #[test]
    fn tokens_expand() {
        let p = plat();
        assert_eq!(
            expand("$ORIGIN/../$LIB", Some("/opt/a"), &p).as_deref(),
            Some("/opt/a/../lib64")
        );
        assert_eq!(
            expand("${ORIGIN}/x/${PLATFORM}", Some("/o"), &p).as_deref(),
            Some("/o/x/x86_64")
        );
        assert_eq!(expand("$ORIGIN/x", None, &p), None);
        assert_eq!(expand("/a/$FOO", None, &p).as_deref(), Some("/a/$FOO"));
        assert_eq!(
            expand_list(&["/a/".into(), "".into(), "/a".into()], None, &p, false),
            vec!["/a".to_string(), String::new()]
        );
    }

    #[test]
    fn names_join_directories() {
        assert_eq!(join("/usr/lib", "libc.so.6"), "/usr/lib/libc.so.6");
        assert_eq!(join("/", "libc.so.6"), "/libc.so.6");
        // An empty RUNPATH or LD_LIBRARY_PATH element is the current directory: the name alone.
        assert_eq!(join("", "libc.so.6"), "libc.so.6");
    }
}
