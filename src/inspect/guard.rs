//! Mapped inputs that shrink while they are read: SIGBUS turned into a flag.
//!
//! A read-only map of a file stays valid only as long as the file keeps its length. When another process
//! truncates it (a linker rewriting the library a CI job is auditing), touching a page past the new end
//! raises SIGBUS, whose default action kills cudadiag with exit 135 and no report.
//!
//! Reading every input whole would avoid it, and break the memory budget (a 450 MB library is read by
//! touching a few MB of headers). So every map is registered here, and a SIGBUS handler, for a fault inside a
//! registered map, puts a page of zeros over the page that faulted (`mmap` with `MAP_FIXED`: POSIX does not
//! list it as async-signal-safe, but glibc's `mmap` is a bare system call wrapper that takes no lock and
//! touches no heap, which is what the rule protects), marks the map as truncated and returns; the faulting
//! read is retried and sees zeros. The parsers are tolerant of damaged bytes, so the inspection finishes, and
//! the caller then reports the input as "changed while being read" ([`Registration::truncated`]) rather than
//! trusting what was parsed.
//!
//! A fault anywhere else is not ours: the handler puts back the action that was there before (Rust's own
//! stack-overflow handler, or the default) and lets the fault happen again, so a real bug still dies loudly.
//!
//! The handler only loads atomics, calls `mmap` and `sigaction`: nothing that allocates or locks. The table
//! is a fixed array, so registration never allocates either; when it is full, [`register`] says so and the
//! caller reads the file into memory instead (never an unguarded map).

#![allow(unsafe_code)]

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Maps guarded at once. The loader keeps one map per library for a run (a PyTorch tree: about a hundred).
const SLOTS: usize = 4096;

/// A slot being filled in.
const BUSY: usize = usize::MAX;

struct Slot {
    /// Length of the map; 0 when the slot is free, [`BUSY`] while it is claimed.
    len: AtomicUsize,
    start: AtomicUsize,
    truncated: AtomicBool,
}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        len: AtomicUsize::new(0),
        start: AtomicUsize::new(0),
        truncated: AtomicBool::new(false),
    }
}; SLOTS];

static PAGE: AtomicUsize = AtomicUsize::new(0);

/// The SIGBUS action in place before ours; `None` when installing failed (maps are then not guarded).
static PREVIOUS: OnceLock<Option<libc::sigaction>> = OnceLock::new();

/// A guarded map; dropping it ends the guard (drop it before unmapping).
#[derive(Debug)]
pub struct Registration {
    slot: usize,
}

impl Registration {
    /// Did the mapped file shrink under a read (a page past its new end was touched)?
    pub fn truncated(&self) -> bool {
        TABLE[self.slot].truncated.load(Ordering::Acquire)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let slot = &TABLE[self.slot];
        slot.len.store(BUSY, Ordering::Release);
        slot.start.store(0, Ordering::Release);
        slot.truncated.store(false, Ordering::Release);
        slot.len.store(0, Ordering::Release);
    }
}

/// Guards the read-only map of `len` bytes at `start`. `None` when it cannot be guarded (the table is full, or
/// the handler could not be installed): the caller must then not map.
pub fn register(start: *const u8, len: usize) -> Option<Registration> {
    if len == 0 || !installed() {
        return None;
    }
    for (i, slot) in TABLE.iter().enumerate() {
        if slot
            .len
            .compare_exchange(0, BUSY, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            slot.truncated.store(false, Ordering::Release);
            slot.start.store(start as usize, Ordering::Release);
            slot.len.store(len, Ordering::Release);
            return Some(Registration { slot: i });
        }
    }
    None
}

/// Installs the handler once; false when the system refused.
fn installed() -> bool {
    PREVIOUS
        .get_or_init(|| {
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            PAGE.store(usize::try_from(page).unwrap_or(4096).max(1), Ordering::Release);
            // SAFETY: both structs are plain data, zero is a valid bit pattern for them, and `sigaction` only
            // reads `action` and writes `previous`. The handler has the SA_SIGINFO signature.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_sigbus as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = std::mem::zeroed();
                (libc::sigaction(libc::SIGBUS, &action, &mut previous) == 0).then_some(previous)
            }
        })
        .is_some()
}

extern "C" fn on_sigbus(signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler; si_addr is the faulting address
    // for SIGBUS.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    // si_code > 0: raised by the kernel for a fault (BUS_ADRERR for a page past the end of a file), not sent.
    if code > 0 {
        let page = PAGE.load(Ordering::Acquire);
        for slot in &TABLE {
            let len = slot.len.load(Ordering::Acquire);
            if len == 0 || len == BUSY {
                continue;
            }
            let start = slot.start.load(Ordering::Acquire);
            if addr < start || addr - start >= len {
                continue;
            }
            let at = addr & !(page - 1);
            // SAFETY: [at, at + page) lies inside a read-only map this process owns and that stays mapped
            // while its slot is registered; replacing that page with private zeros changes only what the
            // reader sees of a file that no longer has those bytes. mmap is a plain system call.
            let zero = unsafe {
                libc::mmap(
                    at as *mut libc::c_void,
                    page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if zero != libc::MAP_FAILED {
                slot.truncated.store(true, Ordering::Release);
                return;
            }
            break;
        }
    }
    // Not a fault in a guarded map: the previous action takes it. For a fault, returning retries the access,
    // which faults again under that action; a sent signal is raised again (blocked until this handler returns).
    if let Some(Some(previous)) = PREVIOUS.get() {
        // SAFETY: `previous` is the action the kernel gave back when ours was installed.
        unsafe {
            libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut());
            if code <= 0 {
                libc::raise(signal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file truncated under its map: the read past the new end gives zeros, the process lives, the map is
    /// marked truncated.
    #[test]
    fn a_map_truncated_under_a_read_is_flagged_not_fatal() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&vec![0xabu8; 1 << 16]).unwrap();
        // SAFETY: a private file of this test; truncating it under the map is the point of the test.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        let guard = register(map.as_ptr(), map.len()).expect("a free slot");
        assert!(!guard.truncated());
        assert_eq!(map[100], 0xab);
        f.set_len(100).unwrap();
        let tail = std::hint::black_box(&map[..])[(1 << 16) - 1];
        assert_eq!(tail, 0);
        assert!(guard.truncated());
        drop(guard);
        drop(map);
    }

    #[test]
    fn an_untouched_map_is_not_flagged() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[1u8; 8192]).unwrap();
        // SAFETY: a private file of this test.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        let guard = register(map.as_ptr(), map.len()).unwrap();
        assert_eq!(map.iter().map(|&b| b as usize).sum::<usize>(), 8192);
        assert!(!guard.truncated());
    }
}
