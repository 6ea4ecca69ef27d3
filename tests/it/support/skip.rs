//! A test that cannot run says why, and never passes in silence.
//!
//! The reason goes straight to the process's stderr (not through the test harness's capture, so
//! `cargo test` shows it whether the test passes or fails), prefixed with the test's name (libtest names
//! each test's thread after it). Something the README's test command needs, which `.ci/run` installs (a C
//! compiler, `python3`, `nm`, `strace`, the aarch64 cross compiler, `qemu-aarch64`, the JSON contract
//! checker beside the checkout, an x86-64 glibc `ld.so` on an x86-64 machine), is [`required`]: a skip for
//! want of it is a failure when `CI` is set (as CI services and `.ci/run` set it), so CI cannot pass by
//! checking nothing. What a machine may rightly lack (a GPU, a newer glibc's output) is [`optional`].

use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether this run is CI's: `CI` set to anything but empty, `0` or `false`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

fn test_name() -> String {
    std::thread::current().name().unwrap_or("a test").to_string()
}

fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The test checks nothing here because this machine lacks something it may rightly lack: says so.
pub fn optional(why: &str) {
    say(&format!("skipped {}: {why}", test_name()));
}

/// The test cannot run without something the README's test command needs: says so, and fails under CI.
pub fn required(why: &str) {
    let line = format!("skipped {}: {why}", test_name());
    assert!(
        !in_ci(),
        "{line} (CI=true: what the tests need must be installed; .ci/run installs it)"
    );
    say(&line);
}

/// The JSON contract checker, `../shared/contract/check_report.py` beside the checkout (the README names
/// it among what the tests need): its path, or `None` after [`required`] said why not.
pub fn contract_checker() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/contract/check_report.py");
    if p.is_file() {
        return Some(p);
    }
    required(&format!(
        "no JSON contract checker at {} (it lives beside the checkout)",
        p.display()
    ));
    None
}

/// This machine's x86-64 glibc `ld.so`, to compare the loader with: `None` after saying why not (required
/// on an x86-64 glibc machine, where it is always there; optional elsewhere).
pub fn system_ldso() -> Option<PathBuf> {
    let found = crate::support::loader_build::system_ldso();
    if found.is_none() {
        let why = "no x86-64 glibc ld.so (/lib64/ld-linux-x86-64.so.2) on this machine to compare with";
        if cfg!(all(
            target_os = "linux",
            target_arch = "x86_64",
            target_env = "gnu"
        )) {
            required(why);
        } else {
            optional(why);
        }
    }
    found
}
