//! The parent side of the probe: run `cudadiag __probe` as a child, with a deadline, and turn whatever
//! happens to it into facts.
//!
//! The parent never loads a CUDA library: a driver that hangs in `cuInit`, crashes, or prints garbage takes
//! down only the child. The child gets exactly the diagnosis environment (`--env`, `--clear-env`), so
//! `CUDA_VISIBLE_DEVICES` and `LD_LIBRARY_PATH` act on it as they would on the application.

use super::cuda;
use crate::facts::probe::{ChildLine, ProbeFacts, ProbeOutcome, ProbeRequest};
use crate::system::Env;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long to wait for the child's pipes to close after it ended (a grandchild may hold them open).
const DRAIN: Duration = Duration::from_secs(2);
/// Bytes of the child's stderr kept.
const STDERR_TAIL: usize = 2048;

/// How to run the probe.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Kill the child after this long.
    pub timeout: Duration,
    /// The child's whole environment.
    pub env: Env,
    /// What the child is asked to do.
    pub request: ProbeRequest,
    /// The cudadiag executable to run as the child (default: this one).
    pub exe: Option<PathBuf>,
}

/// The environment variables recorded with the facts: those that change what CUDA or the loader does.
pub fn relevant(env: &Env) -> std::collections::BTreeMap<String, String> {
    env.iter()
        .filter(|(k, _)| k.starts_with("CUDA_") || k.starts_with("LD_") || k.starts_with("NVIDIA_"))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn millis(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Keeps the end of a text, on a line boundary where possible.
fn tail(text: &str) -> Option<String> {
    let text = text.trim_end();
    if text.is_empty() {
        return None;
    }
    let mut start = text.len().saturating_sub(STDERR_TAIL);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    if start > 0
        && let Some(nl) = text[start..].find('\n')
    {
        start += nl + 1;
    }
    Some(text[start..].to_string())
}

/// Runs the probe child and returns what it observed, or what happened to it.
pub fn run(opts: &ProbeOptions) -> ProbeFacts {
    let mut facts = ProbeFacts {
        timeout_s: opts.timeout.as_secs(),
        env: relevant(&opts.env),
        ..ProbeFacts::default()
    };
    let exe = match opts.exe.clone().map_or_else(std::env::current_exe, Ok) {
        Ok(e) => e,
        Err(e) => {
            facts.outcome = ProbeOutcome::NotStarted;
            facts.detail = Some(format!(
                "cannot find cudadiag's own executable to run the probe: {e}"
            ));
            return facts;
        }
    };
    let started = Instant::now();
    let spawned = Command::new(&exe)
        .arg("__probe")
        .env_clear()
        .envs(opts.env.iter())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            facts.outcome = ProbeOutcome::NotStarted;
            facts.detail = Some(format!("cannot start {} __probe: {e}", exe.display()));
            return facts;
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        // From a thread: a request larger than the pipe buffer must not block the deadline below if the child
        // hangs before reading it. A child that died at once closes its stdin; what happened is read below.
        let request = opts.request.clone();
        std::thread::spawn(move || {
            let _ = serde_json::to_writer(&mut stdin, &request);
            let _ = stdin.flush();
        });
    }
    let (line_tx, line_rx) = mpsc::channel::<String>();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line_tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    let (err_tx, err_rx) = mpsc::channel::<String>();
    if let Some(mut stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr.read_to_end(&mut buf);
            let _ = err_tx.send(String::from_utf8_lossy(&buf).into_owned());
        });
    }

    let mut lines = Vec::new();
    let deadline = started + opts.timeout;
    let mut timed_out = false;
    let status = loop {
        while let Ok(l) = line_rx.try_recv() {
            lines.push(l);
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        if Instant::now() >= deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    facts.elapsed_ms = millis(started);
    let drain_until = Instant::now() + DRAIN;
    loop {
        let left = drain_until.saturating_duration_since(Instant::now());
        match line_rx.recv_timeout(left) {
            Ok(l) => lines.push(l),
            Err(_) => break,
        }
    }
    let left = drain_until.saturating_duration_since(Instant::now());
    facts.stderr_tail = err_rx.recv_timeout(left).ok().and_then(|s| tail(&s));

    let mut report = None;
    let mut loaded = None;
    let mut garbage = None;
    for l in &lines {
        match serde_json::from_str::<ChildLine>(l) {
            Ok(ChildLine::Begin(what)) => facts.during = Some(what),
            Ok(ChildLine::Report(r)) => report = Some(*r),
            Ok(ChildLine::Loaded(l)) if l.source == "driver" => loaded = Some(l),
            Ok(ChildLine::Loaded(_)) => {}
            Err(e) => {
                if garbage.is_none() && !l.trim().is_empty() {
                    let shown: String = l.chars().take(120).collect();
                    garbage = Some(format!("unreadable line from the probe ({e}): {shown:?}"));
                }
            }
        }
    }
    let has_report = report.is_some();
    if let Some(r) = report {
        facts.driver = Some(r.driver);
        facts.runtime = r.runtime;
        facts.modules = r.modules;
    } else if let Some(library) = loaded {
        // No report, but the child said which libcuda it had loaded before it hung or died.
        facts.driver = Some(crate::facts::probe::DriverProbe {
            library,
            ..Default::default()
        });
    }
    facts.exit_status = status.and_then(|s| s.code());
    facts.signal = status.and_then(|s| s.signal());
    let secs = opts.timeout.as_secs_f64();
    (facts.outcome, facts.detail) = if timed_out {
        (
            ProbeOutcome::TimedOut,
            Some(format!("no answer within {secs} s; the probe was killed")),
        )
    } else if let Some(sig) = facts.signal {
        let name = cuda::signal_name(sig)
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        (
            ProbeOutcome::Crashed,
            Some(format!("killed by signal {sig}{name}")),
        )
    } else if status.is_none() {
        (
            ProbeOutcome::Exited,
            Some("cannot wait for the probe process".to_string()),
        )
    } else if facts.exit_status != Some(0) {
        let code = facts
            .exit_status
            .map_or_else(|| "?".to_string(), |c| c.to_string());
        (ProbeOutcome::Exited, Some(format!("exited with status {code}")))
    } else if !has_report {
        let why = garbage.unwrap_or_else(|| "the probe exited without a report".to_string());
        (ProbeOutcome::Garbled, Some(why))
    } else {
        (ProbeOutcome::Completed, garbage)
    };
    if facts.outcome == ProbeOutcome::Completed {
        facts.during = None;
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end_on_a_line_boundary() {
        assert_eq!(tail("  \n"), None);
        assert_eq!(tail("one\ntwo\n").as_deref(), Some("one\ntwo"));
        let long = format!("{}\nlast line", "x".repeat(5000));
        assert_eq!(tail(&long).as_deref(), Some("last line"));
    }

    #[test]
    fn only_cuda_and_loader_variables_are_recorded() {
        let env = Env::build(
            true,
            &[
                "CUDA_VISIBLE_DEVICES=7".into(),
                "LD_LIBRARY_PATH=/x".into(),
                "HOME=/root".into(),
            ],
        );
        let r = relevant(&env);
        assert_eq!(r.len(), 2);
        assert_eq!(r.get("CUDA_VISIBLE_DEVICES").map(String::as_str), Some("7"));
    }
}
