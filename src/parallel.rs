//! Spreading independent jobs over threads, for the readers that need it: [`map`] for a batch known up front
//! (fatbin payloads, the library catalogue's directory walks), [`Pool`] for jobs that arrive while the caller
//! goes on with other work (the loader's `.rodata` searches, started as each library is found).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// `f` applied to every job, on up to `max_threads` threads (never more than the machine has, nor than there
/// are jobs); each thread takes the next job when it finishes one, so a few large jobs do not hold up the
/// rest. Results come back in job order.
pub fn map<T: Sync, R: Send>(jobs: &[T], max_threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_with(jobs, max_threads, || (), |(), job| f(job))
}

/// [`map`] with per-thread state: each thread makes its own with `init` once and hands it to `f` for every job
/// it takes (a scratch copy of facts that each job modifies and restores, instead of one copy per job).
pub fn map_with<T: Sync, S, R: Send>(
    jobs: &[T],
    max_threads: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    let threads = cores().min(max_threads).min(jobs.len());
    if threads <= 1 {
        let mut state = init();
        return jobs.iter().map(|j| f(&mut state, j)).collect();
    }
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::with_capacity(jobs.len()));
    let work = || {
        let mut state = init();
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(job) = jobs.get(i) else { break };
            mine.push((i, f(&mut state, job)));
        }
        lock(&done).append(&mut mine);
    };
    // The calling thread takes jobs too, and each worker starts the next before its first job: on the 16-core
    // GPU machine (a virtual machine) a thread takes some 60 µs to create, and creating them all here first
    // held every job back by half a millisecond.
    std::thread::scope(|s| {
        spawn_chain(s, threads - 1, &work);
        work();
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_unstable_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Starts `left` threads that run `work`, each starting the next before it runs it.
fn spawn_chain<'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    left: usize,
    work: &'scope (dyn Fn() + Sync),
) {
    if left > 0 {
        s.spawn(move || {
            spawn_chain(s, left - 1, work);
            work();
        });
    }
}

/// The cores this process may use (`available_parallelism`, 1 when unknown), asked once: std asks the kernel each
/// time (the affinity mask, then the cgroup's CPU quota: three files read), and a run of `inspect` asked it 31
/// times, once per batch of jobs and per pool.
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Set by [`exit_soon`]: [`discard`] leaves what it is given to the exit.
static EXIT_SOON: AtomicBool = AtomicBool::new(false);

/// Declares that the process exits as soon as its command is done (the `cudadiag` binary does, a library
/// caller need not): from then on [`discard`] does not free what it is given.
pub fn exit_soon() {
    EXIT_SOON.store(true, Ordering::Relaxed);
}

/// glibc's malloc gives a thread that finds the arenas in use an arena of its own, up to eight per core, and
/// keeps what each arena touched for the life of the process. `inspect` of PyTorch's `libtorch_cuda.so` on
/// 16 cores ran 26 threads and kept 26 arenas, 4.4-4.6 MiB of its 17-18 MiB peak (BENCHMARKS.md, stop 51).
/// One arena per core, never fewer than eight: threads then share arenas only where there are more of them
/// than cores, and on a machine of up to eight cores nothing changes (two arenas on 2 cores slowed the
/// loader tree by 7% there; sixteen on 16 cores took 0.4 MiB off at the same speed). For the `cudadiag`
/// binary, before its first thread: a library caller keeps its own allocator's settings.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn cap_arenas() {
    let arenas = libc::c_int::try_from(cores().max(8)).unwrap_or(libc::c_int::MAX);
    // SAFETY: mallopt sets a parameter of glibc's allocator and takes plain integers; the binary calls this
    // before any other thread of the process exists, so no allocation races with the change.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
}

/// Nothing to cap outside glibc.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn cap_arenas() {}

/// File descriptors the kernel's table is made ready for, at most (the soft `RLIMIT_NOFILE`, when lower, bounds
/// it): a run keeps dozens of files open at once (`doctor` of a venv with PyTorch, JAX and CuPy reaches
/// descriptor 73 here, a larger venv more), and 1,024 slots cost 8 KiB of kernel memory.
pub const DESCRIPTORS: u64 = 1024;

/// Grows the kernel's table of file descriptors to [`DESCRIPTORS`] slots while the process has one thread,
/// and returns the slots it now has (`None` where nothing was done).
///
/// A process starts with 64 slots. Opening a 65th file makes the kernel copy the table into a larger one, and
/// when the table is shared by threads it waits for an RCU grace period before the old one can go
/// (`expand_fdtable` in the kernel's `fs/file.c`: `synchronize_rcu()` when `files->count > 1`). A grace
/// period is short on a 2-core box but took tens of milliseconds on the 16-core GPU virtual machine: there,
/// threads of `doctor` and `import cupy` were seen blocked in `openat` and `fcntl` with `synchronize_rcu` as
/// their wait channel, and `doctor` took 42-46 ms of wall time against 15 once the table was large from the
/// start (BENCHMARKS.md, stop 53). With one thread nothing waits: the last slot's descriptor is taken and
/// given back at once, and the table, which never shrinks, keeps its size. For the `cudadiag` binary, before
/// its first thread.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub fn reserve_descriptors() -> Option<u64> {
    let slots = DESCRIPTORS.min(descriptor_limit()?);
    let last = libc::c_int::try_from(slots.checked_sub(1)?).ok()?;
    if last < 64 {
        return None;
    }
    // Any open descriptor can be copied; the standard three usually are open. None open: nothing is done.
    for fd in 0..3 {
        // SAFETY: F_DUPFD_CLOEXEC on a descriptor number only copies it to the lowest free number from `last`
        // on (or fails with EBADF when `fd` is not open); the copy is closed at once and never used.
        let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, last) };
        if copy >= 0 {
            // SAFETY: `copy` is the descriptor this function just made; nothing else knows of it.
            unsafe { libc::close(copy) };
            return Some(slots);
        }
    }
    None
}

/// The soft `RLIMIT_NOFILE`: one more than the highest descriptor the process may open.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn descriptor_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the limit into the struct it is given, which lives on this stack.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // `rlim_t` is 32 bits wide on 32-bit targets.
    Some(limit.rlim_cur as u64)
}

/// Nothing to prepare outside Linux.
#[cfg(not(target_os = "linux"))]
pub fn reserve_descriptors() -> Option<u64> {
    None
}

/// What [`discard`] may be given: a value whose drop does nothing the world outside the process's memory
/// would miss, because in a process about to exit it is never dropped. Memory and read-only maps of files
/// qualify (the kernel takes them back at exit); a temporary directory or file that its drop removes, a
/// buffered writer its drop flushes, a child its drop waits for, a lock file, do not.
///
/// Crate-private, and implemented for each type handed to [`discard`] beside the code that hands it
/// (`commands/mod.rs`), so that a value with such a drop cannot be discarded by accident: it would first need an
/// impl here, whose review asks what its drop does.
pub(crate) trait Forgettable: Send + 'static {}

/// Gets rid of what a run built up and no longer needs (thousands of strings, maps of large files) without
/// making the report and the exit wait for it:
/// - in a process about to exit ([`exit_soon`]), it is not freed at all: the kernel takes the whole address
///   space back at once when the last thread is gone. Unmapping the loader's files one by one while the pool's
///   threads are alive costs a TLB shootdown, an interrupt to every core that ran one, per map. On the 16-core
///   H200 box (a virtual machine, where those interrupts are expensive) freeing them even on a thread of their
///   own cost resolving PyTorch's tree 0.2 to 1.2 ms of its ~10;
/// - otherwise it is dropped on a thread of its own (one serves the whole process; where none can be made,
///   here).
pub(crate) fn discard<T: Forgettable>(value: T) {
    if EXIT_SOON.load(Ordering::Relaxed) {
        std::mem::forget(value);
        return;
    }
    type Garbage = Box<dyn Send>;
    static REAPER: std::sync::OnceLock<Option<Mutex<std::sync::mpsc::Sender<Garbage>>>> =
        std::sync::OnceLock::new();
    let reaper = REAPER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Garbage>();
        std::thread::Builder::new()
            .spawn(move || rx.into_iter().for_each(drop))
            .ok()
            .map(|_| Mutex::new(tx))
    });
    match reaper {
        // A send that fails hands the value back, dropped here.
        Some(tx) => drop(lock(tx).send(Box::new(value))),
        None => drop(value),
    }
}

/// The result of a scoped thread, its panic (if any) carried on to the joining thread.
pub fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// A job for a [`Pool`].
type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    /// Jobs whose result a thread will soon wait for ([`Pool::submit_first`]): run before the others, in
    /// the order they came.
    urgent: VecDeque<Job>,
    jobs: VecDeque<Job>,
    closed: bool,
    /// Workers asleep on [`Shared::ready`]: a new job wakes one only if there is one (a wake-up is a system
    /// call even when nobody sleeps, and the workers are mostly busy).
    idle: usize,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    /// Worker threads started so far.
    started: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A job that panicked poisons nothing we rely on: the queue is consistent between operations.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Worker threads that run submitted jobs in the background, in submission order, while the submitting thread
/// goes on; a thread waiting for a result can [`Pool::help`] instead of sleeping. Threads start with the first
/// job (a pool never used costs nothing) and end when the pool is dropped and the queue is drained. A clone
/// is another handle on the same workers and queue (runs side by side share one set of threads); the workers
/// end when the last handle is dropped.
#[derive(Clone)]
pub struct Pool {
    inner: Arc<Handle>,
}

/// What the handles of one [`Pool`] share.
struct Handle {
    shared: Arc<Shared>,
    threads: usize,
    /// The first worker was started (it starts the others).
    started: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("threads", &self.inner.threads)
            .finish()
    }
}

impl Default for Pool {
    /// One worker per core but one: the submitting thread has its own work, and helps when it waits.
    fn default() -> Pool {
        Pool::new(cores().saturating_sub(1).max(1))
    }
}

impl Pool {
    /// A pool of `threads` workers (at least one).
    pub fn new(threads: usize) -> Pool {
        Pool {
            inner: Arc::new(Handle {
                shared: Arc::default(),
                threads: threads.max(1),
                started: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// How many worker threads the pool runs (or will run).
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// Queues `job` behind the others.
    pub fn submit(&mut self, job: impl FnOnce() + Send + 'static) {
        self.queue(Box::new(job), false);
    }

    /// Queues `job` ahead of the others, behind the earlier such jobs: a small job whose result the caller
    /// will soon wait for ([`Parts::wait_urgent`]).
    pub fn submit_first(&mut self, job: impl FnOnce() + Send + 'static) {
        self.queue(Box::new(job), true);
    }

    fn queue(&mut self, job: Job, first: bool) {
        let Handle {
            shared,
            threads,
            started,
        } = &*self.inner;
        let sleeping = {
            let mut q = lock(&shared.queue);
            if first {
                q.urgent.push_back(job);
            } else {
                q.jobs.push_back(job);
            }
            q.idle > 0
        };
        if sleeping {
            shared.ready.notify_one();
        }
        if !started.swap(true, Ordering::Relaxed) {
            start_worker(shared.clone(), *threads);
        }
    }

    /// Runs one queued job on the calling thread; false when none is queued.
    pub fn help(&self) -> bool {
        let job = lock(&self.inner.shared.queue).next();
        job.map(|job| job()).is_some()
    }

    /// Runs one queued urgent job ([`Pool::submit_first`]) on the calling thread; false when none is queued.
    pub fn help_urgent(&self) -> bool {
        let job = lock(&self.inner.shared.queue).urgent.pop_front();
        job.map(|job| job()).is_some()
    }
}

impl Queue {
    /// The job to run next: an urgent one first.
    fn next(&mut self) -> Option<Job> {
        self.urgent.pop_front().or_else(|| self.jobs.pop_front())
    }
}

/// Starts a worker thread, unless `threads` run already. Each worker first starts the next one: the
/// submitting thread pays for one thread's creation, not for all of them (on 16 cores, creating 15 threads
/// in a row took a millisecond of the loader's critical path). Where no thread can be made, the queued jobs
/// run on the callers' [`Pool::help`].
fn start_worker(shared: Arc<Shared>, threads: usize) {
    if shared.started.fetch_add(1, Ordering::Relaxed) >= threads {
        shared.started.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let mine = shared.clone();
    let spawned = std::thread::Builder::new().spawn(move || {
        start_worker(mine.clone(), threads);
        loop {
            let job = {
                let mut q = lock(&mine.queue);
                loop {
                    if let Some(job) = q.next() {
                        break Some(job);
                    }
                    if q.closed {
                        break None;
                    }
                    q.idle += 1;
                    q = mine.ready.wait(q).unwrap_or_else(|e| e.into_inner());
                    q.idle -= 1;
                }
            };
            match job {
                Some(job) => job(),
                None => return,
            }
        }
    });
    if spawned.is_err() {
        shared.started.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for Handle {
    /// Closes the queue when the pool's last handle goes: workers finish what is queued and exit on their own.
    /// They are not joined, so that the caller does not wait for idle threads to wake up and wind down (a
    /// run's last step).
    fn drop(&mut self) {
        lock(&self.shared.queue).closed = true;
        self.shared.ready.notify_all();
    }
}

/// The result of a job split in parts that run on a [`Pool`]: parts report with [`Parts::add`], and
/// [`Parts::wait`] returns every report once all are in, helping the pool meanwhile.
#[derive(Debug)]
pub struct Parts<T> {
    state: Mutex<(usize, Vec<T>)>,
    done: Condvar,
}

impl<T> Parts<T> {
    /// Expects `parts` reports.
    pub fn new(parts: usize) -> Parts<T> {
        Parts {
            state: Mutex::new((parts, Vec::new())),
            done: Condvar::new(),
        }
    }

    /// One part's report.
    pub fn add(&self, items: impl IntoIterator<Item = T>) {
        let mut st = lock(&self.state);
        st.1.extend(items);
        st.0 = st.0.saturating_sub(1);
        if st.0 == 0 {
            self.done.notify_all();
        }
    }

    /// Every report, once all parts are in (running queued jobs of `pool` while some are not). The reports
    /// are taken: a second call returns none.
    pub fn wait(&self, pool: &Pool) -> Vec<T> {
        self.wait_helping(|| pool.help())
    }

    /// [`Parts::wait`] for the result of a small urgent job ([`Pool::submit_first`]): only other urgent jobs
    /// are run meanwhile, since a large one taken up while the awaited job runs on a worker (a megabyte of
    /// some library's `.rodata`) would keep the caller long after its result is in.
    pub fn wait_urgent(&self, pool: &Pool) -> Vec<T> {
        self.wait_helping(|| pool.help_urgent())
    }

    fn wait_helping(&self, help: impl Fn() -> bool) -> Vec<T> {
        self.wait_then(help, std::mem::take)
    }

    /// [`Parts::wait`] that leaves the reports in place for the next caller: each gets a copy.
    pub fn wait_kept(&self, pool: &Pool) -> Vec<T>
    where
        T: Clone,
    {
        self.wait_then(|| pool.help(), |reports| reports.clone())
    }

    fn wait_then(&self, help: impl Fn() -> bool, take: impl Fn(&mut Vec<T>) -> Vec<T>) -> Vec<T> {
        loop {
            {
                let mut st = lock(&self.state);
                if st.0 == 0 {
                    return take(&mut st.1);
                }
            }
            if help() {
                continue;
            }
            let mut st = lock(&self.state);
            while st.0 != 0 {
                st = self.done.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// `FDSize` of `/proc/self/status`: the slots of this process's descriptor table.
    #[cfg(target_os = "linux")]
    fn fd_slots() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("FDSize:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("FDSize")
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_descriptor_table_is_grown_to_the_reserved_slots() {
        match super::reserve_descriptors() {
            // The table holds at least what was reserved, and the descriptor taken for it is closed again.
            Some(slots) => {
                assert!(slots >= 64);
                assert!(fd_slots() >= slots, "{} < {slots}", fd_slots());
                assert!(std::fs::read_link(format!("/proc/self/fd/{}", slots - 1)).is_err());
            }
            // Only where the soft limit leaves no room above the first 64 slots.
            None => {
                let limit = super::descriptor_limit();
                assert!(
                    limit.is_none_or(|l| l <= 64),
                    "nothing reserved under a limit of {limit:?}"
                );
            }
        }
    }

    #[test]
    fn a_library_callers_discarded_values_are_dropped_on_another_thread() {
        // The test process never calls `exit_soon`: a discarded value is still dropped, on another thread.
        struct Tell(std::sync::mpsc::Sender<std::thread::ThreadId>);
        impl Drop for Tell {
            fn drop(&mut self) {
                let _ = self.0.send(std::thread::current().id());
            }
        }
        impl super::Forgettable for Tell {}
        let (tx, rx) = std::sync::mpsc::channel();
        super::discard(Tell(tx));
        let dropped_on = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("dropped");
        assert_ne!(dropped_on, std::thread::current().id());
    }

    #[test]
    fn results_keep_job_order() {
        let jobs: Vec<u64> = (0..1000).collect();
        let out = super::map(&jobs, 8, |&j| j * j);
        assert_eq!(out, jobs.iter().map(|j| j * j).collect::<Vec<_>>());
        assert!(super::map(&[] as &[u8], 8, |&b| b).is_empty());
        assert_eq!(super::map(&[3u8], 1, |&b| b + 1), [4]);
    }

    #[test]
    fn pool_runs_every_part_and_wait_collects_them() {
        use super::{Parts, Pool};
        use std::sync::Arc;
        for threads in [1, 4] {
            let mut pool = Pool::new(threads);
            let parts = Arc::new(Parts::new(100));
            for i in 0..100u32 {
                let p = parts.clone();
                pool.submit(move || p.add([i, i + 1000]));
            }
            let mut got = parts.wait(&pool);
            got.sort_unstable();
            let mut want: Vec<u32> = (0..100).chain(1000..1100).collect();
            want.sort_unstable();
            assert_eq!(got, want);
        }
        // Zero parts: nothing to wait for.
        assert!(Parts::<u8>::new(0).wait(&Pool::new(1)).is_empty());
    }

    #[test]
    fn urgent_jobs_run_first_and_a_wait_for_one_runs_no_other_kind() {
        use super::{Parts, Pool};
        use std::sync::{Arc, Mutex, mpsc};
        let mut pool = Pool::new(1);
        // Keep the one worker busy, so that every job below stays queued until the test runs it.
        let (release, gate) = mpsc::channel::<()>();
        let (started, busy) = mpsc::channel::<()>();
        pool.submit(move || {
            started.send(()).unwrap();
            gate.recv().unwrap();
        });
        busy.recv().unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        for (i, urgent) in [(0, false), (1, true), (2, false), (3, true)] {
            let o = order.clone();
            let job = move || o.lock().unwrap().push(i);
            if urgent {
                pool.submit_first(job);
            } else {
                pool.submit(job);
            }
        }
        let awaited = Arc::new(Parts::new(1));
        let a = awaited.clone();
        pool.submit_first(move || a.add([7]));
        // The wait runs the urgent jobs ahead of its own, in the order they came, and no plain one.
        assert_eq!(awaited.wait_urgent(&pool), [7]);
        assert_eq!(*order.lock().unwrap(), [1, 3]);
        while pool.help() {}
        assert_eq!(*order.lock().unwrap(), [1, 3, 0, 2]);
        release.send(()).unwrap();
    }

    #[test]
    fn clones_of_a_pool_share_its_workers_which_outlive_any_one_handle() {
        use super::{Parts, Pool};
        use std::collections::HashSet;
        use std::sync::{Arc, Mutex, mpsc};
        let mut pool = Pool::new(1);
        let mut other = pool.clone();
        assert_eq!(other.threads(), 1);
        let ran_on = Arc::new(Mutex::new(HashSet::new()));
        let parts = Arc::new(Parts::new(2));
        for handle in [&mut pool, &mut other] {
            let (p, on) = (parts.clone(), ran_on.clone());
            // Queued from either handle, each job runs on the one worker (the test thread never helps).
            let (done, finished) = mpsc::channel();
            handle.submit(move || {
                on.lock().unwrap().insert(std::thread::current().id());
                p.add([1]);
                done.send(()).unwrap();
            });
            finished.recv().unwrap();
        }
        assert_eq!(ran_on.lock().unwrap().len(), 1);
        assert_ne!(
            ran_on.lock().unwrap().iter().next(),
            Some(&std::thread::current().id())
        );
        assert_eq!(parts.wait(&pool), [1, 1]);
        // One handle gone, the queue stays open for the other.
        drop(pool);
        let (done, finished) = mpsc::channel();
        other.submit(move || done.send(()).unwrap());
        finished
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the worker still runs jobs");
    }
}
