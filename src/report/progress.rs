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

/// Quiet this long before the first line, unless `CUDADIAG_PROGRESS_DELAY_MS` says otherwise.
const QUIET: Duration = Duration::from_secs(1);

/// The quiet time: `CUDADIAG_PROGRESS_DELAY_MS` (milliseconds; `0` shows the line at once), else a second.
fn quiet() -> Duration {
    std::env::var("CUDADIAG_PROGRESS_DELAY_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(QUIET, Duration::from_millis)
}

/// Records whether the progress line may be coloured (`--color`, `NO_COLOR`, stderr a terminal).
pub fn configure(paint: super::paint::Paint) {
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
    watched(
        what,
        unit,
        count,
        quiet(),
        ProgressDrawTarget::stderr_with_hz(10),
        work,
    )
}

/// [`while_running`] drawing on `target` after `quiet`.
fn watched<T>(
    what: &str,
    unit: &str,
    count: &AtomicUsize,
    quiet: Duration,
    target: ProgressDrawTarget,
    work: impl FnOnce() -> T,
) -> T {
    let (done, finished) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || watch(what, unit, count, quiet, target, &finished));
        let out = work();
        drop(done);
        out
    })
}

/// The watching thread: waits on the channel (not a sleep, so a fast run is never held up) and draws until the
/// work's end closes it.
fn watch(
    what: &str,
    unit: &str,
    count: &AtomicUsize,
    quiet: Duration,
    target: ProgressDrawTarget,
    finished: &mpsc::Receiver<()>,
) {
    if !matches!(finished.recv_timeout(quiet), Err(RecvTimeoutError::Timeout)) {
        return;
    }
    let template = if COLOR.get().copied().unwrap_or(false) {
        "{spinner:.cyan} cudadiag: {msg} {pos} {prefix} {elapsed:.dim}"
    } else {
        "{spinner} cudadiag: {msg} {pos} {prefix} {elapsed}"
    };
    let style = ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner());
    let bar = ProgressBar::with_draw_target(None, target)
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
    use indicatif::TermLike;
    use std::sync::{Arc, Mutex};

    /// A terminal that records what is drawn on it.
    #[derive(Debug, Default, Clone)]
    struct Screen(Arc<Mutex<Vec<String>>>);

    impl Screen {
        fn log(&self, s: impl Into<String>) -> std::io::Result<()> {
            self.0.lock().unwrap().push(s.into());
            Ok(())
        }
        fn text(&self) -> Vec<String> {
            self.0.lock().unwrap().clone()
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            100
        }
        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            self.log(format!("<up {n}>"))
        }
        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            self.log(format!("<down {n}>"))
        }
        fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
            self.log(format!("<right {n}>"))
        }
        fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
            self.log(format!("<left {n}>"))
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.log(format!("{s}\n"))
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.log(s)
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.log("<clear>")
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn long_work_is_shown_with_its_count_and_erased_at_the_end() {
        let screen = Screen::default();
        let count = AtomicUsize::new(0);
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        watched(
            "scanning…",
            "directories",
            &count,
            Duration::ZERO,
            target,
            || {
                count.store(1234, Ordering::Relaxed);
                // The work lasts until the line is on the screen (or five seconds).
                for _ in 0..500 {
                    if screen.text().iter().any(|l| l.contains("1234 directories")) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            },
        );
        let text = screen.text();
        assert!(
            text.iter()
                .any(|l| l.contains("cudadiag: scanning… 1234 directories")),
            "{text:?}"
        );
        // Uncoloured unless configured: no escape sequence of its own.
        assert!(!text.iter().any(|l| l.contains('\u{1b}')), "{text:?}");
        // The last thing done to the line is to clear it.
        let last_drawn = text.iter().rposition(|l| l.contains("directories"));
        let last_cleared = text.iter().rposition(|l| l == "<clear>");
        assert!(last_cleared > last_drawn, "{text:?}");
    }

    #[test]
    fn fast_work_shows_nothing() {
        let screen = Screen::default();
        let count = AtomicUsize::new(0);
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        watched("scanning…", "directories", &count, QUIET, target, || ());
        assert!(screen.text().is_empty(), "{:?}", screen.text());
    }

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
