//! Temporary trees (an image's unpacked files): one owner each, removed on every way out.
//!
//! A [`Scratch`] is a private directory under `$TMPDIR`, removed when it is dropped (a normal return, an error,
//! a panic that unwinds). Signals are the other way out: a terminal's Ctrl-C (`SIGINT`), a scheduler's or
//! `timeout`'s `SIGTERM`, a closed SSH session's `SIGHUP`. While a tree exists those three are caught (the
//! `signal-hook` crate's self-pipe: the handler itself only writes a byte; everything else happens on a thread
//! of ours). On one, the unpacker is told to stop ([`check`], polled per tar entry and per MiB copied), every
//! live tree is removed, and the process exits with `128 + N`, the status a shell gives a command killed by
//! signal N. A tree a run left behind when it was killed by what no program can catch (`SIGKILL`, the
//! machine's power) is found by the next run and removed: its name carries its owner's PID, the process's
//! start time (PIDs are reused) and its PID namespace (a PID means nothing in another one); it is removed only
//! when that process is gone, and only when it is a real directory (not a link) owned by the same user.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// The start of every tree's name: `cudadiag-<kind>-<pidns>.<pid>.<start>-<random>`.
const PREFIX: &str = "cudadiag-";
/// Entries of `$TMPDIR` looked at for stale trees (a shared `/tmp` can hold very many).
const MAX_SCAN: usize = 100_000;
/// How long the signal path waits for the unpacker to stop writing into a tree it removes.
const REMOVE_TRIES: usize = 100;

/// The trees alive now (the signal path removes them).
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// The signal received, 0 for none.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

/// A private temporary directory, removed with everything in it when dropped or on a signal.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// A new tree `cudadiag-<kind>-…` in `$TMPDIR` (mode 0700). On the first call, stale trees of earlier
    /// killed runs are removed and the signal handling is installed.
    pub fn new(kind: &str) -> io::Result<Scratch> {
        install();
        check()?;
        let me = Owner::this();
        let name = format!("{PREFIX}{kind}-{}.{}.{}-", me.ns, me.pid, me.start);
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        let path = tempfile::Builder::new().prefix(&name).tempdir()?.keep();
        live.push(path.clone());
        drop(live);
        // Once a run: `$TMPDIR` may be a shared `/tmp` of many entries.
        static SWEPT: std::sync::Once = std::sync::Once::new();
        if let Some(tmp) = path.parent() {
            SWEPT.call_once(|| remove_stale(tmp, &path, &me));
        }
        Ok(Scratch { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        let _ = std::fs::remove_dir_all(&self.path);
        live.retain(|p| p != &self.path);
    }
}

/// The signal that interrupted the run (`SIGINT`, `SIGTERM`, `SIGHUP`), if one did.
pub fn signalled() -> Option<i32> {
    match SIGNALLED.load(Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// An error once a signal asked the run to stop: what long loops that write into a tree poll.
pub fn check() -> io::Result<()> {
    match signalled() {
        None => Ok(()),
        // Not `ErrorKind::Interrupted`: `read_exact` and `io::copy` retry those.
        Some(n) => Err(io::Error::other(format!("interrupted by signal {n}"))),
    }
}

/// Catches `SIGINT`, `SIGTERM` and `SIGHUP` from now on (once per process): on one, live trees are removed
/// and the process exits `128 + N`. Where the handler cannot be installed the signals keep their default
/// action (a tree may then be left, and the next run removes it).
fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("cudadiag-signals".into())
            .spawn(move || {
                if let Some(n) = signals.forever().next() {
                    SIGNALLED.store(n, Ordering::Relaxed);
                    exit_on_signal(n);
                }
            });
    });
}

/// Removes every live tree (waiting a little for the unpacker, which stops at its next [`check`], to stop
/// writing into it) and exits `128 + n`. The list stays locked: no new tree can start meanwhile.
fn exit_on_signal(n: i32) -> ! {
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    for _ in 0..REMOVE_TRIES {
        for p in live.iter() {
            let _ = std::fs::remove_dir_all(p);
        }
        if live.iter().all(|p| std::fs::symlink_metadata(p).is_err()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::process::exit(128 + n)
}

/// Who owns a tree: a process, told apart from a later one with the same PID by its start time, in a PID
/// namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    ns: u64,
    pid: u32,
    start: u64,
}

impl Owner {
    /// This process (namespace and start time 0 where `/proc` cannot tell: such trees are never judged
    /// stale by others).
    fn this() -> Owner {
        let pid = std::process::id();
        Owner {
            ns: pid_namespace().unwrap_or(0),
            pid,
            start: start_time(pid).unwrap_or(0),
        }
    }

    /// The owner a tree's file name records.
    fn of_name(name: &str) -> Option<Owner> {
        // `<kind>-<ns>.<pid>.<start>-<random>`: the kind has no `-`.
        let rest = name.strip_prefix(PREFIX)?.split_once('-')?.1;
        let (ids, _random) = rest.split_once('-')?;
        let mut it = ids.split('.');
        let owner = Owner {
            ns: it.next()?.parse().ok()?,
            pid: it.next()?.parse().ok()?,
            start: it.next()?.parse().ok()?,
        };
        it.next().is_none().then_some(owner)
    }

    /// Is the process that made the tree gone? Only answered for a tree of this PID namespace, with a start
    /// time known.
    fn gone(&self, me: &Owner) -> bool {
        if self.ns != me.ns || self.ns == 0 || self.start == 0 || self.pid == me.pid {
            return false;
        }
        start_time(self.pid) != Some(self.start)
    }
}

/// The inode of this process's PID namespace (`/proc/self/ns/pid` reads `pid:[4026531836]`).
fn pid_namespace() -> Option<u64> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let s = link.to_str()?;
    s.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// When process `pid` started, in clock ticks after boot: field 22 of `/proc/PID/stat` (proc(5)), counted after
/// the command name's closing parenthesis (the name may hold spaces and parentheses).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Removes the trees in `tmp` whose owner is gone: real directories (never a link, never followed: std's
/// `remove_dir_all` does not follow links inside either), owned by the same user as `ours`.
fn remove_stale(tmp: &Path, ours: &Path, me: &Owner) {
    use std::os::unix::fs::MetadataExt;
    let Ok(mine) = std::fs::symlink_metadata(ours) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.take(MAX_SCAN).flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(owner) = Owner::of_name(name) else {
            continue;
        };
        if !owner.gone(me) {
            continue;
        }
        let path = e.path();
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if m.file_type().is_dir() && m.uid() == mine.uid() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_record_their_owner() {
        let me = Owner::this();
        let s = Scratch::new("test").unwrap();
        let name = s.path().file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(Owner::of_name(&name), Some(me.clone()));
        assert!(!me.gone(&me), "a live process's tree is not stale");
        assert_eq!(Owner::of_name("cudadiag-image-1.2-x"), None);
        assert_eq!(Owner::of_name("other-image-1.2.3-x"), None);
        let path = s.path().to_path_buf();
        drop(s);
        assert!(!path.exists());
    }

    #[test]
    fn a_dead_owners_tree_goes_and_a_link_or_a_live_ones_stays() {
        // An owner of its own namespace number, so that the test does not depend on /proc telling ours.
        let me = Owner {
            ns: 7,
            pid: std::process::id(),
            start: 5,
        };
        let tmp = tempfile::tempdir().unwrap();
        // No process started at tick u64::MAX: PIDs 1 and 2 with that start time are gone.
        let dead = tmp
            .path()
            .join(format!("cudadiag-image-{}.1.{}-abc", me.ns, u64::MAX));
        std::fs::create_dir_all(dead.join("usr/lib")).unwrap();
        std::fs::write(dead.join("usr/lib/x"), b"x").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), b"k").unwrap();
        std::os::unix::fs::symlink(outside.path(), dead.join("link")).unwrap();
        let linked = tmp
            .path()
            .join(format!("cudadiag-image-{}.2.{}-lnk", me.ns, u64::MAX));
        std::os::unix::fs::symlink(outside.path(), &linked).unwrap();
        let live = tmp
            .path()
            .join(format!("cudadiag-image-{}.{}.{}-live", me.ns, me.pid, me.start));
        std::fs::create_dir(&live).unwrap();
        let other_ns = tmp
            .path()
            .join(format!("cudadiag-image-{}.1.{}-ns", me.ns + 1, u64::MAX));
        std::fs::create_dir(&other_ns).unwrap();
        let ours = tmp.path().join("ours");
        std::fs::create_dir(&ours).unwrap();
        remove_stale(tmp.path(), &ours, &me);
        assert!(!dead.exists(), "the dead owner's tree is removed");
        assert!(outside.path().join("keep").exists(), "never through a link");
        assert!(std::fs::symlink_metadata(&linked).is_ok(), "a link is not a tree");
        assert!(live.exists(), "a live owner's tree stays");
        assert!(other_ns.exists(), "another PID namespace's tree stays");
    }
}
