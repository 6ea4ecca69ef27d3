//! Build script: stamps the binary with what `cudadiag --version` and the JSON report's `tool` object say
//! about the build (`src/build_info.rs`).
//!
//! - `CUDADIAG_COMMIT`: the short commit hash of the checkout, with `+dirty` when a tracked file that goes
//!   into the binary (`src/`, `data/`, `Cargo.toml`, `Cargo.lock`, `build.rs`) differs from that commit.
//!   `CUDADIAG_BUILD_COMMIT` in the environment overrides it (a packager building from a tarball that knows
//!   its commit); without git, or outside a git checkout of this crate (a crates.io or source tarball that
//!   happens to be unpacked inside some other repository), it is `unknown`. A build never fails for want of git.
//! - `CUDADIAG_TARGET`: the target triple cargo builds for (`TARGET`; `cargo zigbuild`'s `.2.17` glibc suffix
//!   is not part of it).
//! - `CUDADIAG_MATRIX_VERSION`, `CUDADIAG_MATRIX_DATE`: `version` and `date` of the `[meta]` table of the
//!   bundled `data/compat.toml`, read here with a line scan so that `--version` is a constant and costs no
//!   parse; a unit test in `build_info` checks they are what the matrix loader reads.

// Cargo reads a build script's instructions from its standard output: printing is the protocol here.
#![allow(clippy::disallowed_macros)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The paths whose content is the binary: a change in them makes the build `+dirty`.
const BUILD_INPUTS: &[&str] = &["src", "data", "Cargo.toml", "Cargo.lock", "build.rs"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    for p in BUILD_INPUTS {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rerun-if-env-changed=CUDADIAG_BUILD_COMMIT");

    let commit = match std::env::var("CUDADIAG_BUILD_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => git_commit(&manifest).unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=CUDADIAG_COMMIT={commit}");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=CUDADIAG_TARGET={target}");

    let compat = std::fs::read_to_string(manifest.join("data/compat.toml")).unwrap_or_default();
    let meta = |key: &str| meta_value(&compat, key).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=CUDADIAG_MATRIX_VERSION={}", meta("version"));
    println!("cargo:rustc-env=CUDADIAG_MATRIX_DATE={}", meta("date"));
}

/// Runs git in `dir`; `None` when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `abc1234` or `abc1234+dirty`, when `manifest` is the top of a git work tree.
fn git_commit(manifest: &Path) -> Option<String> {
    let top = git(manifest, &["rev-parse", "--show-toplevel"])?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(Path::new(&top), manifest) {
        return None;
    }
    // Rebuild when HEAD moves: HEAD itself (a checkout) and the branch it points at (a commit), wherever this
    // work tree keeps them (a linked worktree has its own HEAD and shares the refs).
    // A path that does not exist would make cargo rerun this script on every build: only existing ones.
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watch.extend(git(manifest, &["symbolic-ref", "-q", "HEAD"]));
    for name in &watch {
        if let Some(p) = git(manifest, &["rev-parse", "--git-path", name]) {
            let p = manifest.join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    let hash = git(manifest, &["rev-parse", "--short=9", "HEAD"])?;
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend_from_slice(BUILD_INPUTS);
    let dirty = git(manifest, &status).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{hash}+dirty") } else { hash })
}

/// The string value of `key` in the `[meta]` table of a TOML text (`key = "value"` on one line).
fn meta_value(toml: &str, key: &str) -> Option<String> {
    let mut in_meta = false;
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_meta = line == "[meta]";
            continue;
        }
        if !in_meta {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if k.trim() == key {
            let v = v.trim();
            return v.strip_prefix('"')?.split('"').next().map(str::to_string);
        }
    }
    None
}
