//! Running the built `cudadiag` from a test and reading what it reports: the helpers the CLI test modules share.

use assert_cmd::Command;
use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::path::Path;

/// `cudadiag` to be run in `dir`, colour left to its flags (`NO_COLOR` removed from the environment).
pub fn cudadiag_in(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("cudadiag").unwrap();
    c.env_remove("NO_COLOR").current_dir(dir);
    c
}

/// `cudadiag` to be run in the repository (fixture paths relative to it), `NO_COLOR` removed.
pub fn cudadiag() -> Command {
    cudadiag_in(Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// Runs `cmd` to completion: its exit code (-1 when killed by a signal), stdout and stderr as text.
pub fn captured(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `cudadiag --color never ARGS`, run to completion: its exit code, stdout and stderr (as [`captured`]). The
/// runner of the modules that judge synthetic environments and images (`python_import`, `inspect_env`,
/// `image_import`).
pub fn run<I, S>(args: I) -> (i32, String, String)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut c = Command::cargo_bin("cudadiag").unwrap();
    c.args(["--color", "never"]).args(args);
    captured(&mut c)
}

/// [`run`] of a command that prints JSON (`--format json`): the exit code and the document. The test fails,
/// showing stdout and stderr, when stdout is not JSON.
pub fn run_json<I, S>(args: I) -> (i32, Value)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (code, out, err) = run(args);
    let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, doc)
}

/// `--root ROOT --clear-env` and `--env KEY=VALUE` for each of `env`: a command that reads the test's root
/// with exactly that environment, none of the test process's.
pub fn on_root(root: &Path, env: &[&str]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--root".into(), root.into(), "--clear-env".into()];
    for e in env {
        args.extend(["--env".into(), OsString::from(e)]);
    }
    args
}

/// The report honours the JSON contract (DESIGN.md), as the contract's own checker beside the checkout says
/// (skipped, saying why, where it is missing outside CI).
pub fn contract(doc: &Value) {
    let Some(checker) = crate::support::skip::contract_checker() else {
        return;
    };
    let t = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(t.path(), serde_json::to_vec(doc).unwrap()).unwrap();
    let out = std::process::Command::new("python3")
        .arg(checker)
        .arg(t.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// `cudadiag ARGS`, run to completion in the test's working directory.
pub fn output<I, S>(args: I) -> std::process::Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::cargo_bin("cudadiag")
        .unwrap()
        .args(args)
        .output()
        .unwrap()
}

/// The JSON `cudadiag ARGS` prints; the test fails unless it exits with one of `codes`.
pub fn json_exiting<I, S>(args: I, codes: &[i32]) -> Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let out = output(&args);
    assert!(
        out.status.code().is_some_and(|c| codes.contains(&c)),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The JSON report of `cudadiag ARGS`, which must exit 0 or 1 (a verdict, not a usage error).
pub fn json<I, S>(args: I) -> Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    json_exiting(args, &[0, 1])
}

/// A report's finding slugs, in its order.
pub fn slugs(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["slug"].as_str().unwrap().to_string())
        .collect()
}

/// A report's finding slugs, sorted (for comparing sets).
pub fn sorted_slugs(report: &Value) -> Vec<String> {
    let mut s = slugs(report);
    s.sort();
    s
}

/// The report's first finding with `slug` (the test fails if there is none).
pub fn finding<'a>(report: &'a Value, slug: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["slug"] == slug)
        .unwrap_or_else(|| panic!("no {slug} finding in {report:#}"))
}

/// `--root`, `--clear-env` and one `--env` per line of the case's env file, then `extra` overrides.
pub fn machine_args(root: &Path, env_file: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--root".to_string(),
        root.display().to_string(),
        "--clear-env".into(),
    ];
    let text = std::fs::read_to_string(env_file).unwrap();
    for l in text.lines().filter(|l| !l.is_empty()) {
        args.extend(["--env".into(), l.to_string()]);
    }
    for e in extra {
        args.extend(["--env".into(), e.to_string()]);
    }
    args
}

/// Copies a directory tree, symbolic links as links (fixture roots hold dangling and absolute ones).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e.file_type().unwrap();
        if t.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if t.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}
