//! Golden transcripts of the human report (`insta` snapshots under tests/it/snapshots/): the exit status, stdout
//! and stderr of one run, colour off, with the paths that differ between runs made stable.

use std::process::Output;

/// The run as a reviewer reads it. Each `(from, to)` is replaced everywhere (a temporary directory by
/// `[TMP]`); matrix line numbers (`compat.toml:1850`) become `compat.toml:N`, so that a matrix update does not
/// rewrite every snapshot.
pub fn transcript(out: &Output, replace: &[(&str, &str)]) -> String {
    let mut text = format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for (from, to) in replace {
        text = text.replace(from, to);
    }
    regex::Regex::new(r"compat\.toml:\d+")
        .unwrap()
        .replace_all(&text, "compat.toml:N")
        .into_owned()
}
