//! One allowance per run for inflating compressed data: fatbin payloads (zstd, LZ4) and wheel members
//! (deflate), so that hostile inputs cannot turn a few kilobytes into gigabytes of memory, temporary files or
//! minutes of CPU.
//!
//! A decompression bomb is cheap to make: 8 KB of zstd inflates to 256 MiB, and a zip can point 40 central
//! directory entries at one member. Per-entry limits (`--max-entry-mib`, [`MAX_MEMBER`](super::wheel)) bound
//! one entry; this bounds the run: every inflation first reserves the bytes it declares, and once the
//! allowance (or the time) is spent, what is left is reported as not read rather than read. Work is done once
//! per distinct payload: fatbin payloads are remembered by a keyed hash of their compressed bytes, so the 200
//! copies of one library in a build tree (or 200 copies of one bomb) inflate once.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Bytes a run may inflate in all, by default: a large wheel (libtorch's inflate to about 4 GB) fits.
pub const DEFAULT_BYTES: u64 = 8 << 30;

/// Time a run may spend inflating, by default, counted from the start of the run.
pub const DEFAULT_TIME: Duration = Duration::from_secs(300);

/// Without `--deep`, the one compressed cubin read for a binary's toolkit is read only when it declares at
/// most this much: the toolkit note is a nicety, not worth inflating a bomb for.
pub const SAMPLE_MAX: u64 = 16 << 20;

/// What the budget has let through, for reports and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Payloads and members actually inflated.
    pub inflations: u64,
    /// Bytes they declared (and were allowed).
    pub bytes: u64,
    /// Payloads answered from an earlier inflation of the same bytes.
    pub reused: u64,
    /// Inflations refused because the allowance or the time was spent.
    pub refused: u64,
}

/// The run's allowance. Shared (`Arc`) by every inspection of one command.
#[derive(Debug)]
pub struct Budget {
    limit: u64,
    left: AtomicU64,
    deadline: Instant,
    inflations: AtomicU64,
    reused: AtomicU64,
    refused: AtomicU64,
    hasher: std::hash::RandomState,
    decoded: Mutex<HashMap<Key, Arc<OnceLock<Decoded>>>>,
}

/// A payload's identity: a hash keyed per run (not predictable by whoever made the file), its length, and
/// what it is declared to be.
type Key = (u64, usize, u64, u8);

impl Default for Budget {
    fn default() -> Self {
        Budget::new(DEFAULT_BYTES, DEFAULT_TIME)
    }
}

impl Budget {
    /// An allowance of `bytes` inflated and `time` spent.
    pub fn new(bytes: u64, time: Duration) -> Budget {
        let now = Instant::now();
        Budget {
            limit: bytes,
            left: AtomicU64::new(bytes),
            deadline: now.checked_add(time).unwrap_or(now),
            inflations: AtomicU64::new(0),
            reused: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            hasher: std::hash::RandomState::new(),
            decoded: Mutex::new(HashMap::new()),
        }
    }

    /// Takes `bytes` from the allowance before inflating them; an error saying why not otherwise.
    pub fn reserve(&self, bytes: u64) -> Result<(), String> {
        if Instant::now() > self.deadline {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err("not inflated: the run's time for decompression is spent".into());
        }
        let taken = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(bytes)
            });
        if taken.is_err() {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(format!(
                "not inflated: {bytes} bytes would exceed the run's decompression budget of {} bytes",
                self.limit
            ));
        }
        self.inflations.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// What was let through so far.
    pub fn stats(&self) -> Stats {
        Stats {
            inflations: self.inflations.load(Ordering::Relaxed),
            bytes: self.limit - self.left.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    /// The decoded form of a payload: computed by `decode` the first time these bytes are met (other threads
    /// asking for the same bytes meanwhile wait for it), remembered for the rest of the run.
    pub(super) fn decoded(
        &self,
        stored: &[u8],
        declared: u64,
        what: u8,
        decode: impl FnOnce() -> Decoded,
    ) -> Decoded {
        let mut h = self.hasher.build_hasher();
        h.write(stored);
        let key = (h.finish(), stored.len(), declared, what);
        let cell = {
            let mut map = self.decoded.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(map.entry(key).or_default())
        };
        let mut fresh = false;
        let value = cell.get_or_init(|| {
            fresh = true;
            decode()
        });
        if !fresh {
            self.reused.fetch_add(1, Ordering::Relaxed);
        }
        value.clone()
    }
}

/// What reading one payload gave (`fatbin`), as the run remembers it.
#[derive(Debug, Clone)]
pub(super) enum Decoded {
    Cubin(crate::facts::CubinFacts),
    Ptx(crate::facts::PtxFacts),
    Nothing,
    Damaged(String),
    /// Not read: the run's decompression budget said no.
    Unread(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_until_spent() {
        let b = Budget::new(100, DEFAULT_TIME);
        assert!(b.reserve(60).is_ok());
        assert!(b.reserve(60).unwrap_err().contains("budget of 100 bytes"));
        assert!(b.reserve(40).is_ok());
        assert_eq!(
            b.stats(),
            Stats {
                inflations: 2,
                bytes: 100,
                reused: 0,
                refused: 1
            }
        );
        let late = Budget::new(100, Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert!(late.reserve(1).unwrap_err().contains("time"));
    }
}
