//! Reading `compat.toml` into a [`Matrix`] and checking it; the checks of each table are `tables.rs`.
//!
//! The file is user data when it comes from `--matrix`, so nothing here panics: every defect becomes a
//! [`MatrixError`] naming the file and the line of the offending row. Rows are read as `toml::Spanned` so a
//! semantic error (a version out of order, a missing source) points at its row, like a syntax error does.
//!
//! `build.rs` compiles this module too (with `model`, `raw`, `version`, `query`, `jetson` and `tables`, which
//! name nothing outside the matrix), to turn the bundled file into Rust tables at build time: what the
//! finding catalogue knows is asked through [`parse`]'s `known_finding`, so nothing here names the crate.

use super::model::*;
use super::raw::*;
use super::version::{Cc, CudaVersion, DriverVersion};
use std::collections::BTreeMap;
use std::fmt;

/// A matrix that does not parse or does not validate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixError {
    /// The file.
    pub origin: String,
    /// 1-based line, when the defect has one.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for MatrixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.origin, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

/// The release order within one CUDA minor version.
pub(super) const RELEASES: &[&str] = &["rc", "ga", "ga2", "update1", "update2", "update3", "update4"];

pub(super) struct Ctx<'a> {
    /// Offsets of the line breaks of the text, for [`Ctx::line`].
    newlines: Vec<usize>,
    pub(super) origin: &'a str,
    pub(super) sources: &'a BTreeMap<String, String>,
    /// Is a slug one of the finding catalogue's?
    known_finding: &'a dyn Fn(&str) -> bool,
}

impl Ctx<'_> {
    /// The 1-based line of a byte offset (every row records one).
    pub(super) fn line(&self, offset: usize) -> usize {
        self.newlines.partition_point(|&n| n < offset) + 1
    }

    pub(super) fn err<T>(&self, offset: usize, message: impl Into<String>) -> Result<T, MatrixError> {
        Err(MatrixError {
            origin: self.origin.to_string(),
            line: Some(self.line(offset)),
            message: message.into(),
        })
    }

    pub(super) fn row(&self, at: usize, p: Prov) -> Result<Row, MatrixError> {
        let status = match p.status.as_str() {
            "nv" => Status::Nv,
            "x" => Status::X,
            "3p" => Status::ThirdParty,
            "unconfirmed" => Status::Unconfirmed,
            other => {
                return self.err(
                    at,
                    format!("status \"{other}\" is not one of nv, x, 3p, unconfirmed"),
                );
            }
        };
        for key in p.source.split(';').map(str::trim) {
            if !self.sources.contains_key(key) {
                return self.err(at, format!("source \"{key}\" is not a key of [sources]"));
            }
        }
        Ok(Row {
            source: p.source,
            status,
            note: p.note,
            line: self.line(at),
        })
    }

    pub(super) fn cuda(&self, at: usize, s: &str) -> Result<CudaVersion, MatrixError> {
        match CudaVersion::parse(s) {
            Some(v) if s.contains('.') => Ok(v),
            _ => self.err(at, format!("\"{s}\" is not a CUDA version (major.minor)")),
        }
    }

    pub(super) fn driver(&self, at: usize, s: &str) -> Result<DriverVersion, MatrixError> {
        DriverVersion::parse(s).map_or_else(
            || self.err(at, format!("\"{s}\" is not a driver version (like 535.104.05)")),
            Ok,
        )
    }

    pub(super) fn cc(&self, at: usize, s: &str) -> Result<Cc, MatrixError> {
        match Cc::parse(s) {
            Some(c) if s.contains('.') => Ok(c),
            _ => self.err(at, format!("\"{s}\" is not a compute capability (like 9.0)")),
        }
    }

    pub(super) fn slugs(&self, at: usize, slugs: &[String]) -> Result<(), MatrixError> {
        for s in slugs {
            if !(self.known_finding)(s) {
                return self.err(at, format!("finding \"{s}\" is not in the code catalogue"));
            }
        }
        Ok(())
    }
}

/// `YYYY-MM-DD` with a month 1-12 and a day 1-31.
pub(super) fn is_iso_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let num = |p: &str, len: usize, max: u32| {
        p.len() == len
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (1..=max).contains(&n))
    };
    parts.len() == 3 && num(parts[0], 4, 9999) && num(parts[1], 2, 12) && num(parts[2], 2, 31)
}

/// Parses and validates, one section at a time in the file's order (later sections are checked against
/// earlier ones): a defect is reported at the first row that has one. `known_finding` says whether a slug
/// that a row names is in the finding catalogue.
pub fn parse(text: &str, origin: &str, known_finding: &dyn Fn(&str) -> bool) -> Result<Matrix, MatrixError> {
    let raw = read(text, origin)?;
    let cx = Ctx {
        newlines: (text.bytes().enumerate())
            .filter_map(|(i, b)| (b == b'\n').then_some(i))
            .collect(),
        origin,
        sources: &raw.sources,
        known_finding,
    };
    let no_release = cx.meta(&raw.meta)?;
    let toolkits = cx.toolkits(&raw.toolkit, &no_release)?;
    let minor_compat = cx.minor_compat(&raw.minor_compat)?;
    let first_toolkit = raw.toolkit.first().map_or(0, |s| s.span().start);
    let branches = cx.branches(&raw.driver_branch, &toolkits, first_toolkit)?;
    let ptx = cx.ptx(&raw.ptx_isa)?;
    let targets = cx.targets(&raw.toolkit_targets)?;
    let archs = cx.archs(&raw.arch)?;
    let families = cx.families(&raw.family)?;
    cx.sm_renames(&raw.sm_rename)?;
    let tegra = cx.tegra(&raw.tegra)?;
    let tegra_socs = cx.tegra_socs(&raw.tegra_soc)?;
    let jetpacks = cx.jetpacks(&raw.jetpack, &tegra_socs)?;
    let gpus = cx.gpus(&raw.gpu, &archs)?;
    let forward_compat = cx.forward_compat(&raw.forward_compat)?;
    let fwd_packages = cx.fwd_packages(&raw.forward_compat_package)?;
    let features = cx.features(&raw.feature, &toolkits)?;
    let errors = cx.cuda_errors(&raw.cuda_error)?;
    let messages = cx.messages(&raw.message)?;
    cx.limits(&raw.minor_compat_limits)?;
    Ok(Matrix {
        origin: origin.to_string(),
        sources: raw.sources.clone(),
        version: raw.meta.version.clone(),
        date: raw.meta.date.clone(),
        no_toolkit_release: no_release,
        toolkits,
        minor_compat,
        minor_compat_limits: raw.minor_compat_limits.limits.clone(),
        minor_compat_limits_source: raw.minor_compat_limits.source.clone(),
        branches,
        ptx,
        targets,
        families,
        tegra,
        tegra_socs,
        jetpacks,
        archs,
        gpus,
        forward_compat,
        fwd_packages,
        features,
        errors,
        messages,
    })
}

/// The TOML, of a schema version this cudadiag reads.
fn read(text: &str, origin: &str) -> Result<Raw, MatrixError> {
    let raw: Raw = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| {
            text.as_bytes()[..s.start.min(text.len())]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1
        });
        MatrixError {
            origin: origin.to_string(),
            line,
            message: e.message().to_string(),
        }
    })?;
    if raw.meta.schema_version != 1 {
        return Err(MatrixError {
            origin: origin.to_string(),
            line: None,
            message: format!(
                "schema_version {} is not supported (this cudadiag reads 1)",
                raw.meta.schema_version
            ),
        });
    }
    Ok(raw)
}
