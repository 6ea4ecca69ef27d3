//! One way to spread independent jobs over threads, for the readers that need it (fatbin payloads, `.rodata`
//! searches, the library catalogue's directory walks).

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` applied to every job, on up to `max_threads` threads (never more than the machine has, nor than there
/// are jobs); each thread takes the next job when it finishes one, so a few large jobs do not hold up the
/// rest. Results come back in job order.
pub fn map<T: Sync, R: Send>(jobs: &[T], max_threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(max_threads)
        .min(jobs.len());
    if threads <= 1 {
        return jobs.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(job) = jobs.get(i) else { break };
            mine.push((i, f(job)));
        }
        mine
    };
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    done.sort_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_job_order() {
        let jobs: Vec<u64> = (0..1000).collect();
        let out = super::map(&jobs, 8, |&j| j * j);
        assert_eq!(out, jobs.iter().map(|j| j * j).collect::<Vec<_>>());
        assert!(super::map(&[] as &[u8], 8, |&b| b).is_empty());
        assert_eq!(super::map(&[3u8], 1, |&b| b + 1), [4]);
    }
}
