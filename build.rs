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
//! - `$OUT_DIR/compat.rs`: the bundled `data/compat.toml`, parsed and validated here by the matrix loader's own
//!   parser (`src/matrix/parse.rs` and the modules it uses, compiled into this script too) and written as Rust
//!   code (`build/compat.rs`), so that the binary builds its matrix without a TOML parse. A matrix that does
//!   not validate fails the build with its file and line. (Which findings a `[[cuda_error]]` or `[[message]]`
//!   row names is checked against the catalogue by the test that compares these tables with a run-time parse.)
//! - `CUDADIAG_MATRIX_VERSION`, `CUDADIAG_MATRIX_DATE`: `version` and `date` of its `[meta]` table, so that
//!   `--version` is a constant.
//! - The link of a release build for Linux takes `build/hot-text.ld`: the functions the everyday commands run,
//!   first in the executable's code (`scripts/gen-hot-text`).

// Cargo reads a build script's instructions from its standard output: printing is the protocol here.
#![allow(clippy::disallowed_macros)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The matrix's model and parser, as the crate has them (`build/matrix.rs`).
#[path = "build/matrix.rs"]
mod matrix;

#[path = "build/compat.rs"]
mod compat;

/// The paths whose content is the binary: a change in them makes the build `+dirty`.
const BUILD_INPUTS: &[&str] = &["src", "data", "Cargo.toml", "Cargo.lock", "build.rs", "build"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    for p in BUILD_INPUTS {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rerun-if-env-changed=CUDADIAG_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=CUDADIAG_HOT_TEXT");

    let commit = match std::env::var("CUDADIAG_BUILD_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => git_commit(&manifest).unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=CUDADIAG_COMMIT={commit}");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=CUDADIAG_TARGET={target}");

    let m = compiled_matrix(&manifest);
    let meta = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=CUDADIAG_MATRIX_VERSION={}", meta(&m.version));
    println!("cargo:rustc-env=CUDADIAG_MATRIX_DATE={}", meta(&m.date));

    hot_text(&manifest);
}

/// Release builds (`dist` too) of the executable for Linux place the functions the everyday commands run first
/// in its code: `build/hot-text.ld`, a linker-script fragment (`INSERT BEFORE .text`) that LLD, GNU ld and zig's
/// linker all take. The kernel maps a whole page-cache folio around each page of code a run touches, so code
/// run together costs less memory together (`scripts/gen-hot-text` says how the file is made). Its patterns name
/// the crate's functions in the v0 mangling, which `.cargo/config.toml` asks for. A debug build
/// is left as the linker lays it out, and so is a build with `CUDADIAG_HOT_TEXT=0`: the one `scripts/gen-hot-text`
/// records (valgrind names only the functions of `.text`, so a build with `.text.hot` cannot be recorded).
fn hot_text(manifest: &Path) {
    let script = manifest.join("build/hot-text.ld");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let wanted = std::env::var("CUDADIAG_HOT_TEXT").map_or(true, |v| v != "0");
    if release && linux && wanted && script.is_file() {
        // `-Xlinker` passes the path as one argument: `-Wl,` would split one with a comma in it.
        println!("cargo:rustc-link-arg-bins=-Xlinker");
        println!("cargo:rustc-link-arg-bins=--script={}", script.display());
    }
}

/// Parses and validates `data/compat.toml` and writes it as Rust to `$OUT_DIR/compat.rs`; a matrix that cannot be
/// read or does not validate stops the build, saying where.
fn compiled_matrix(manifest: &Path) -> matrix::model::Matrix {
    let file = manifest.join("data/compat.toml");
    let fail = |message: String| -> ! {
        eprintln!("{message}");
        std::process::exit(1)
    };
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| fail(format!("cannot read {}: {e}", file.display())));
    // The origin the run-time parse gives the bundled text (rows cite it, errors name it).
    let m = matrix::parse::parse(&text, "data/compat.toml (bundled)", &|_| true)
        .unwrap_or_else(|e| fail(e.to_string()));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("compat.rs");
    if let Err(e) = std::fs::write(&out, compat::rust(&m)) {
        fail(format!("cannot write {}: {e}", out.display()));
    }
    m
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
