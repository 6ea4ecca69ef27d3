//! Reading `compat.toml` into a [`Matrix`] and checking it.
//!
//! The file is user data when it comes from `--matrix`, so nothing here panics: every defect becomes a
//! [`MatrixError`] naming the file and the line of the offending row. Rows are read as `toml::Spanned` so a
//! semantic error (a version out of order, a missing source) points at its row, like a syntax error does.

use super::raw::*;
use super::version::{Cc, CudaVersion, DriverVersion};
use super::*;
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
const RELEASES: &[&str] = &["rc", "ga", "ga2", "update1", "update2", "update3", "update4"];

struct Ctx<'a> {
    /// Offsets of the line breaks of the text, for [`Ctx::line`].
    newlines: Vec<usize>,
    origin: &'a str,
    sources: &'a BTreeMap<String, String>,
}

impl Ctx<'_> {
    /// The 1-based line of a byte offset (every row records one).
    fn line(&self, offset: usize) -> usize {
        self.newlines.partition_point(|&n| n < offset) + 1
    }

    fn err<T>(&self, offset: usize, message: impl Into<String>) -> Result<T, MatrixError> {
        Err(MatrixError {
            origin: self.origin.to_string(),
            line: Some(self.line(offset)),
            message: message.into(),
        })
    }

    fn row(&self, at: usize, p: Prov) -> Result<Row, MatrixError> {
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

    fn cuda(&self, at: usize, s: &str) -> Result<CudaVersion, MatrixError> {
        match CudaVersion::parse(s) {
            Some(v) if s.contains('.') => Ok(v),
            _ => self.err(at, format!("\"{s}\" is not a CUDA version (major.minor)")),
        }
    }

    fn driver(&self, at: usize, s: &str) -> Result<DriverVersion, MatrixError> {
        DriverVersion::parse(s).map_or_else(
            || self.err(at, format!("\"{s}\" is not a driver version (like 535.104.05)")),
            Ok,
        )
    }

    fn cc(&self, at: usize, s: &str) -> Result<Cc, MatrixError> {
        match Cc::parse(s) {
            Some(c) if s.contains('.') => Ok(c),
            _ => self.err(at, format!("\"{s}\" is not a compute capability (like 9.0)")),
        }
    }

    fn slugs(&self, at: usize, slugs: &[String]) -> Result<(), MatrixError> {
        for s in slugs {
            if crate::findings::lookup(s).is_none() {
                return self.err(at, format!("finding \"{s}\" is not in the code catalogue"));
            }
        }
        Ok(())
    }
}

/// `YYYY-MM-DD` with a month 1-12 and a day 1-31.
fn is_iso_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let num = |p: &str, len: usize, max: u32| {
        p.len() == len
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (1..=max).contains(&n))
    };
    parts.len() == 3 && num(parts[0], 4, 9999) && num(parts[1], 2, 12) && num(parts[2], 2, 31)
}

/// Parses and validates.
pub fn parse(text: &str, origin: &str) -> Result<Matrix, MatrixError> {
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
    let cx = Ctx {
        newlines: memchr::memchr_iter(b'\n', text.as_bytes()).collect(),
        origin,
        sources: &raw.sources,
    };
    if let Some(date) = &raw.meta.date
        && !is_iso_date(date)
    {
        return Err(MatrixError {
            origin: origin.to_string(),
            line: None,
            message: format!("meta.date \"{date}\" is not a date (YYYY-MM-DD)"),
        });
    }
    let mut no_release = Vec::new();
    for s in &raw.meta.no_toolkit_release {
        no_release.push(cx.cuda(0, s)?);
    }

    let mut toolkits: Vec<ToolkitRow> = Vec::new();
    for t in &raw.toolkit {
        let at = t.span().start;
        let r = t.get_ref();
        let Some(rank) = RELEASES.iter().position(|x| *x == r.release) else {
            return cx.err(
                at,
                format!("release \"{}\" is not one of {RELEASES:?}", r.release),
            );
        };
        let row = ToolkitRow {
            cuda: cx.cuda(at, &r.cuda)?,
            release: r.release.clone(),
            label: r.label.clone(),
            linux_min: cx.driver(at, &r.linux_min)?,
            windows_min: r.windows_min.as_deref().map(|w| cx.driver(at, w)).transpose()?,
            row: cx.row(at, r.prov())?,
        };
        if let Some(prev) = toolkits.last() {
            let prev_rank = RELEASES.iter().position(|x| *x == prev.release).unwrap_or(0);
            if (row.cuda, rank) <= (prev.cuda, prev_rank) {
                return cx.err(
                    at,
                    format!("toolkit {} is out of order (after {})", row.label, prev.label),
                );
            }
            if row.linux_min < prev.linux_min {
                return cx.err(
                    at,
                    format!(
                        "toolkit {} needs an older Linux driver ({}) than {} ({})",
                        row.label, row.linux_min, prev.label, prev.linux_min
                    ),
                );
            }
            if row.cuda.major == prev.cuda.major && row.cuda.minor > prev.cuda.minor + 1 {
                for m in prev.cuda.minor + 1..row.cuda.minor {
                    let missing = CudaVersion {
                        major: row.cuda.major,
                        minor: m,
                    };
                    if !no_release.contains(&missing) {
                        return cx.err(at, format!("toolkit {missing} is missing (gap before {}); list it in meta.no_toolkit_release if it never shipped", row.label));
                    }
                }
            }
        }
        if let Some(prev_win) = toolkits.iter().rev().find_map(|t| t.windows_min.as_ref())
            && let Some(w) = &row.windows_min
            && w < prev_win
        {
            return cx.err(
                at,
                format!(
                    "toolkit {} needs an older Windows driver ({w}) than an earlier release ({prev_win})",
                    row.label
                ),
            );
        }
        toolkits.push(row);
    }
    if toolkits.is_empty() {
        return cx.err(0, "the [[toolkit]] table is empty");
    }

    let mut minor_compat: Vec<MinorCompat> = Vec::new();
    for t in &raw.minor_compat {
        let at = t.span().start;
        let r = t.get_ref();
        let row = MinorCompat {
            major: r.major,
            linux_min: cx.driver(at, &r.linux_min)?,
            windows_min: r.windows_min.as_deref().map(|w| cx.driver(at, w)).transpose()?,
            row: cx.row(at, r.prov())?,
        };
        if let Some(prev) = minor_compat.last()
            && (row.major <= prev.major || row.linux_min <= prev.linux_min)
        {
            return cx.err(at, format!("minor_compat for CUDA {} is out of order", row.major));
        }
        minor_compat.push(row);
    }

    let mut branches: Vec<BranchRow> = Vec::new();
    for t in &raw.driver_branch {
        let at = t.span().start;
        let r = t.get_ref();
        let row = BranchRow {
            branch: r.branch,
            cuda: cx.cuda(at, &r.cuda)?,
            row: cx.row(at, r.prov())?,
        };
        if let Some(prev) = branches.last()
            && (row.branch <= prev.branch || row.cuda < prev.cuda)
        {
            return cx.err(
                at,
                format!(
                    "driver_branch {} is out of order (after {})",
                    row.branch, prev.branch
                ),
            );
        }
        branches.push(row);
    }
    for t in &toolkits {
        if !branches.iter().any(|b| b.cuda == t.cuda) {
            return cx.err(
                raw.toolkit.first().map_or(0, |s| s.span().start),
                format!(
                    "no driver_branch row gives CUDA {} (gap in the branch table)",
                    t.cuda
                ),
            );
        }
    }

    let mut ptx: Vec<PtxRow> = Vec::new();
    for t in &raw.ptx_isa {
        let at = t.span().start;
        let r = t.get_ref();
        let row = PtxRow {
            isa: cx.cuda(at, &r.isa)?,
            cuda: cx.cuda(at, &r.cuda)?,
            branch: r.branch,
            new_targets: r.new_targets.clone().unwrap_or_default(),
            row: cx.row(at, r.prov())?,
        };
        if let Some(prev) = ptx.last()
            && (row.isa <= prev.isa || row.cuda < prev.cuda)
        {
            return cx.err(
                at,
                format!("ptx_isa {} is out of order (after {})", row.isa, prev.isa),
            );
        }
        ptx.push(row);
    }

    let mut targets: Vec<TargetsRow> = Vec::new();
    for t in &raw.toolkit_targets {
        let at = t.span().start;
        let r = t.get_ref();
        for s in [&r.min_sm, &r.max_sm]
            .into_iter()
            .chain(&r.added)
            .chain(&r.removed)
        {
            if Cc::parse(s).is_none() {
                return cx.err(at, format!("\"{s}\" is not an SM target"));
            }
        }
        let row = TargetsRow {
            cuda: cx.cuda(at, &r.cuda)?,
            min_sm: r.min_sm.clone(),
            max_sm: r.max_sm.clone(),
            removed: r.removed.clone(),
            added: r.added.clone(),
            row: cx.row(at, r.prov())?,
        };
        if targets.last().is_some_and(|p| row.cuda <= p.cuda) {
            return cx.err(at, format!("toolkit_targets {} is out of order", row.cuda));
        }
        targets.push(row);
    }

    let mut archs: Vec<ArchRow> = Vec::new();
    for t in &raw.arch {
        let at = t.span().start;
        let r = t.get_ref();
        let ccs = r
            .ccs
            .iter()
            .map(|c| cx.cc(at, c))
            .collect::<Result<Vec<_>, _>>()?;
        for c in &ccs {
            if archs.iter().any(|a| a.ccs.contains(c)) {
                return cx.err(at, format!("compute capability {c} is in two [[arch]] rows"));
            }
        }
        archs.push(ArchRow {
            name: r.name.clone(),
            ccs,
            first_cuda: cx.cuda(at, &r.first_cuda)?,
            last_cuda: r.last_cuda.as_deref().map(|v| cx.cuda(at, v)).transpose()?,
            last_branch: r.last_branch,
            row: cx.row(at, r.prov())?,
        });
    }

    let mut families = Vec::new();
    for t in &raw.family {
        let at = t.span().start;
        let r = t.get_ref();
        let members = r
            .members
            .iter()
            .map(|c| cx.cc(at, c))
            .collect::<Result<Vec<_>, _>>()?;
        if members.windows(2).any(|w| w[0] >= w[1]) || members.is_empty() {
            return cx.err(
                at,
                format!("family {} members must be ascending and not empty", r.name),
            );
        }
        families.push(Family {
            name: r.name.clone(),
            members,
            row: cx.row(at, r.prov())?,
        });
    }
    for t in &raw.sm_rename {
        let r = t.get_ref();
        let at = t.span().start;
        if Cc::parse(&r.old).is_none() || Cc::parse(&r.new).is_none() {
            return cx.err(
                at,
                format!("sm_rename {} -> {} does not name SM targets", r.old, r.new),
            );
        }
        cx.cuda(at, &r.since_cuda)?;
        cx.row(at, r.prov())?;
    }

    let tegra = {
        let at = raw.tegra.span().start;
        let r = raw.tegra.get_ref();
        let ccs = r
            .ccs
            .iter()
            .map(|c| cx.cc(at, c))
            .collect::<Result<Vec<_>, _>>()?;
        Tegra {
            ccs,
            row: cx.row(at, r.prov())?,
        }
    };
    let mut gpus: Vec<GpuRow> = Vec::new();
    let mut gpu_names: std::collections::HashSet<String> = std::collections::HashSet::new();
    for t in &raw.gpu {
        let at = t.span().start;
        let r = t.get_ref();
        let cc = cx.cc(at, &r.cc)?;
        if !archs.iter().any(|a| a.ccs.contains(&cc)) {
            return cx.err(
                at,
                format!(
                    "compute capability {cc} of {} is in no [[arch]] row",
                    r.names.join(", ")
                ),
            );
        }
        if r.names.is_empty() {
            return cx.err(at, "a [[gpu]] row needs at least one name");
        }
        // Another row's name (two spellings of one name in the same row are fine: "Tesla T4", "NVIDIA T4").
        for n in &r.names {
            if gpu_names.contains(&query::normalize(n)) {
                return cx.err(at, format!("GPU name \"{n}\" appears twice"));
            }
        }
        gpu_names.extend(r.names.iter().map(|n| query::normalize(n)));
        let mut pci_ids = Vec::new();
        for p in &r.pci_ids {
            match u16::from_str_radix(p, 16) {
                Ok(id) => pci_ids.push(id),
                Err(_) => return cx.err(at, format!("PCI device id \"{p}\" is not 4 hex digits")),
            }
        }
        gpus.push(GpuRow {
            names: r.names.clone(),
            cc,
            pci_ids,
            row: cx.row(at, r.prov())?,
        });
    }

    let fwd = raw.forward_compat.get_ref();
    let forward_compat = ForwardCompat {
        supported_gpus: fwd.supported_gpus.clone(),
        package_pattern: fwd.package_pattern.clone(),
        install_dir: fwd.install_dir.clone(),
        row: cx.row(raw.forward_compat.span().start, fwd.prov())?,
    };
    let _ = (&fwd.os, fwd.new_feature_branches_supported, &fwd.errors);
    let mut fwd_packages: Vec<FwdPackage> = Vec::new();
    for t in &raw.forward_compat_package {
        let at = t.span().start;
        let r = t.get_ref();
        let row = FwdPackage {
            package: r.package.clone(),
            cuda: cx.cuda(at, &r.cuda)?,
            compatible_bases: r.compatible_bases.clone(),
            own_branch: r.own_branch,
            row: cx.row(at, r.prov())?,
        };
        if fwd_packages.last().is_some_and(|p| row.cuda <= p.cuda)
            || row.compatible_bases.windows(2).any(|w| w[0] >= w[1])
        {
            return cx.err(
                at,
                format!("forward_compat_package {} is out of order", row.package),
            );
        }
        fwd_packages.push(row);
    }

    let mut features = Vec::new();
    for t in &raw.feature {
        let at = t.span().start;
        let r = t.get_ref();
        let min_cuda = cx.cuda(at, &r.min_cuda)?;
        if !toolkits.iter().any(|t| t.cuda == min_cuda) {
            return cx.err(
                at,
                format!(
                    "feature {} names CUDA {min_cuda}, which has no [[toolkit]] row",
                    r.name
                ),
            );
        }
        features.push(FeatureRow {
            name: r.name.clone(),
            what: r.what.clone(),
            min_cuda,
            row: cx.row(at, r.prov())?,
        });
    }

    let mut errors: Vec<CudaErrorRow> = Vec::new();
    for t in &raw.cuda_error {
        let at = t.span().start;
        let r = t.get_ref();
        cx.slugs(at, &r.findings)?;
        if errors.last().is_some_and(|e| r.value <= e.value) {
            return cx.err(at, format!("cuda_error {} is out of order or repeated", r.value));
        }
        errors.push(CudaErrorRow {
            value: r.value,
            name: r.name.clone(),
            driver_name: r.driver_name.clone().filter(|s| !s.is_empty()),
            message: r.message.clone().filter(|s| !s.is_empty()),
            meaning: r.meaning.clone().filter(|s| !s.is_empty()),
            findings: r.findings.clone(),
            row: cx.row(at, r.prov())?,
        });
    }
    let mut messages = Vec::new();
    for t in &raw.message {
        let at = t.span().start;
        let r = t.get_ref();
        cx.slugs(at, &r.findings)?;
        if r.pattern.trim().is_empty() {
            return cx.err(at, "a [[message]] pattern must not be empty");
        }
        messages.push(MessageRow {
            pattern: r.pattern.clone(),
            example: r.example.clone(),
            meaning: r.meaning.clone(),
            findings: r.findings.clone(),
            row: cx.row(at, r.prov())?,
        });
    }
    for key in raw.minor_compat_limits.source.split(';').map(str::trim) {
        if !raw.sources.contains_key(key) {
            return cx.err(
                0,
                format!("minor_compat_limits source \"{key}\" is not a key of [sources]"),
            );
        }
    }

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
        archs,
        gpus,
        forward_compat,
        fwd_packages,
        features,
        errors,
        messages,
    })
}
