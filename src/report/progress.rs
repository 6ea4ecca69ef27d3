//! Progress on long work: one line on stderr, and only when stderr is a terminal.
//!
//! The work counts what it has done in an [`AtomicUsize`] (directories walked, files inspected, payloads
//! inflated) and knows nothing of how that is shown. [`while_running`] watches the count from a thread of its
//! own: quiet for the first second (a fast run never shows a line), then a spinner line refreshed ten times a
//! second (by `indicatif`), erased when the work ends. Standard output (the report, whatever its format) is
//! never written to; a redirected or piped stderr gets nothing at all, not even the erasing sequence.
//! The line is coloured only when `--color` and `NO_COLOR` allow colour on stderr ([`configure`]).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// Whether the progress line may be coloured, decided once by the command line.
static COLOR: OnceLock<bool> = OnceLock::new();

/// Quiet this long before the first line.
const QUIET: Duration = Duration::from_secs(1);

/// Records whether the progress line may be coloured (`--color`, `NO_COLOR`, stderr a terminal).
pub fn configure(paint: super::Paint) {
    let _ = COLOR.set(paint.enabled());
}

/// Whether a progress line would be drawn: stderr is a terminal.
pub fn shown() -> bool {
    std::io::stderr().is_terminal()
}

/// Runs `work`, showing `what` and the count (`scanning for CUDA libraries… 1,234 directories`) on stderr while
/// it runs, if it runs past a second and stderr is a terminal.
pub fn while_running<T>(what: &str, unit: &str, count: &AtomicUsize, work: impl FnOnce() -> T) -> T {
    if !shown() {
        return work();
    }
    let (done, finished) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || watch(what, unit, count, &finished));
        let out = work();
        drop(done);
        out
    })
}

/// The watching thread: waits on the channel (not a sleep, so a fast run is never held up) and draws until the
/// work's end closes it.
fn watch(what: &str, unit: &str, count: &AtomicUsize, finished: &mpsc::Receiver<()>) {
    if !matches!(finished.recv_timeout(QUIET), Err(RecvTimeoutError::Timeout)) {
        return;
    }
    let template = if COLOR.get().copied().unwrap_or(false) {
        "{spinner:.cyan} cudadiag: {msg} {pos} {prefix} {elapsed:.dim}"
    } else {
        "{spinner} cudadiag: {msg} {pos} {prefix} {elapsed}"
    };
    let style = ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner());
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10))
        .with_style(style)
        .with_message(what.to_string())
        .with_prefix(unit.to_string());
    loop {
        bar.set_position(count.load(Ordering::Relaxed) as u64);
        bar.tick();
        match finished.recv_timeout(Duration::from_millis(100)) {
            Err(RecvTimeoutError::Timeout) => continue,
            _ => break,
        }
    }
    bar.finish_and_clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_runs_and_its_value_is_returned_whether_or_not_stderr_is_a_terminal() {
        let count = AtomicUsize::new(0);
        let v = while_running("testing", "steps", &count, || {
            count.fetch_add(3, Ordering::Relaxed);
            42
        });
        assert_eq!(v, 42);
        assert_eq!(count.load(Ordering::Relaxed), 3);
    }
}
