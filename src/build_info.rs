//! What this cudadiag is: its version, the commit and target it was built from, and the release of the
//! compatibility matrix compiled into it.
//!
//! A support engineer reading a report sent by a customer needs to know which build produced it and which
//! matrix judged it; `cudadiag --version`, the JSON report's `tool` object and a snapshot's `tool_info` say
//! the same, from the constants `build.rs` sets (`CUDADIAG_COMMIT`, `CUDADIAG_TARGET`,
//! `CUDADIAG_MATRIX_VERSION`, `CUDADIAG_MATRIX_DATE`; `unknown` where the build could not tell).

use serde::{Deserialize, Serialize};

/// The package version (`0.1.0`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The short commit hash the binary was built from, `+dirty` when its sources differed, or `unknown`.
pub const COMMIT: &str = env!("CUDADIAG_COMMIT");
/// The target triple (`x86_64-unknown-linux-gnu`).
pub const TARGET: &str = env!("CUDADIAG_TARGET");
/// The bundled matrix's `[meta] version`.
pub const MATRIX_VERSION: &str = env!("CUDADIAG_MATRIX_VERSION");
/// The bundled matrix's `[meta] date`.
pub const MATRIX_DATE: &str = env!("CUDADIAG_MATRIX_DATE");

/// What `cudadiag --version` prints after `cudadiag ` (`-V` prints the version alone).
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit: ",
    env!("CUDADIAG_COMMIT"),
    "\ntarget: ",
    env!("CUDADIAG_TARGET"),
    "\nmatrix: ",
    env!("CUDADIAG_MATRIX_VERSION"),
    " (",
    env!("CUDADIAG_MATRIX_DATE"),
    ", data/compat.toml)"
);

/// The build, as the JSON report's `tool` object and a snapshot's `tool_info` carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// Always `cudadiag`.
    pub name: String,
    /// The package version.
    pub version: String,
    /// The commit ([`COMMIT`]).
    pub commit: String,
    /// The target triple ([`TARGET`]).
    pub target: String,
    /// The bundled compatibility matrix.
    pub matrix: MatrixStamp,
}

/// Which compatibility matrix is compiled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixStamp {
    /// `[meta] version` (`2026.12.1`).
    pub version: String,
    /// `[meta] date` (`2026-12-02`).
    pub date: String,
}

impl BuildInfo {
    /// This binary's build.
    pub fn current() -> BuildInfo {
        BuildInfo {
            name: "cudadiag".to_string(),
            version: VERSION.to_string(),
            commit: COMMIT.to_string(),
            target: TARGET.to_string(),
            matrix: MatrixStamp {
                version: MATRIX_VERSION.to_string(),
                date: MATRIX_DATE.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stamped_matrix_is_the_one_the_loader_reads() {
        // build.rs stamps [meta] from its own parse of the matrix; the one the binary carries must agree.
        let m = crate::matrix::Matrix::bundled().unwrap();
        assert_eq!(m.version.as_deref(), Some(MATRIX_VERSION));
        assert_eq!(m.date.as_deref(), Some(MATRIX_DATE));
    }

    #[test]
    fn commit_is_a_hash_or_unknown() {
        let hash = COMMIT.strip_suffix("+dirty").unwrap_or(COMMIT);
        assert!(
            COMMIT == "unknown" || (hash.len() >= 7 && hash.bytes().all(|b| b.is_ascii_hexdigit())),
            "{COMMIT}"
        );
    }

    #[test]
    fn long_version_names_every_field() {
        assert!(LONG_VERSION.starts_with(VERSION));
        for needle in [COMMIT, TARGET, MATRIX_VERSION, MATRIX_DATE] {
            assert!(
                LONG_VERSION.contains(needle),
                "{needle} missing in {LONG_VERSION}"
            );
        }
        assert!(TARGET.contains("linux"), "{TARGET}");
    }

    /// `build/hot-text.ld` (build.rs hands it to the linker of release builds) stays a fragment every linker
    /// takes: one output section of input-section patterns, each a function's section by name, inserted before
    /// `.text`; nothing a linker script's tokenizer would split a name on.
    #[test]
    fn the_hot_text_script_is_a_linker_script_fragment() {
        let text = include_str!("../build/hot-text.ld");
        let body = text
            .split_once(".text.hot : {")
            .and_then(|(_, rest)| rest.split_once("}"))
            .map(|(body, _)| body)
            .expect("one .text.hot output section");
        assert!(text.trim_end().ends_with("INSERT BEFORE .text;"));
        let mut patterns = 0;
        for line in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let inner = line
                .strip_prefix("*(")
                .and_then(|l| l.strip_suffix(')'))
                .unwrap_or_else(|| panic!("not an input-section description: {line}"));
            for pattern in inner.split(' ') {
                let name = pattern
                    .strip_prefix(".text.")
                    .unwrap_or_else(|| panic!("not a code section: {line}"));
                assert!(
                    !name.is_empty()
                        && name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_.$*".contains(c)),
                    "{line}"
                );
            }
            patterns += 1;
        }
        assert!(patterns > 100, "{patterns} patterns");
    }

    /// The hot text's patterns name the crate's functions in the v0 mangling, which spells out a generic's type
    /// arguments (the legacy mangling's names differ only by the hash that a pattern leaves out): the file is
    /// recorded from such a build, and `.cargo/config.toml` builds the crate so.
    #[test]
    fn the_hot_text_names_the_crate_in_the_v0_mangling() {
        let text = include_str!("../build/hot-text.ld");
        assert!(
            !text.contains("_ZN8cudadiag"),
            "legacy names in build/hot-text.ld"
        );
        let own = text.lines().filter(|l| l.contains("8cudadiag")).count();
        assert!(own > 100, "{own} of the crate's functions");
        let config = include_str!("../.cargo/config.toml");
        assert!(
            config.contains(r#"["-C", "symbol-mangling-version=v0"]"#),
            "{config}"
        );
    }
}
