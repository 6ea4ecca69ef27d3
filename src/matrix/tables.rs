//! The checks of each table of `compat.toml`, in the file's order: rows in order, no gaps, each value of the
//! type its column holds, each row's sources known (see `parse.rs`, which calls them).

use super::model::*;
use super::parse::{Ctx, MatrixError, RELEASES, is_iso_date};
use super::raw::*;
use super::version::{Cc, CudaVersion};
use super::{jetson, query};

impl Ctx<'_> {
    /// `[meta]`: its date, and the CUDA versions that never had a toolkit release.
    pub(super) fn meta(&self, meta: &RawMeta) -> Result<Vec<CudaVersion>, MatrixError> {
        if let Some(date) = &meta.date
            && !is_iso_date(date)
        {
            return Err(MatrixError {
                origin: self.origin.to_string(),
                line: None,
                message: format!("meta.date \"{date}\" is not a date (YYYY-MM-DD)"),
            });
        }
        let mut no_release = Vec::new();
        for s in &meta.no_toolkit_release {
            no_release.push(self.cuda(0, s)?);
        }
        Ok(no_release)
    }

    /// `[[toolkit]]`: in release order, each needing a driver no older than the one before, no minor missing.
    pub(super) fn toolkits(
        &self,
        rows: &[toml::Spanned<RawToolkit>],
        no_release: &[CudaVersion],
    ) -> Result<Vec<ToolkitRow>, MatrixError> {
        let mut toolkits: Vec<ToolkitRow> = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            let Some(rank) = RELEASES.iter().position(|x| *x == r.release) else {
                return self.err(
                    at,
                    format!("release \"{}\" is not one of {RELEASES:?}", r.release),
                );
            };
            let row = ToolkitRow {
                cuda: self.cuda(at, &r.cuda)?,
                release: r.release.clone(),
                label: r.label.clone(),
                linux_min: self.driver(at, &r.linux_min)?,
                windows_min: r.windows_min.as_deref().map(|w| self.driver(at, w)).transpose()?,
                row: self.row(at, r.prov())?,
            };
            if let Some(prev) = toolkits.last() {
                let prev_rank = RELEASES.iter().position(|x| *x == prev.release).unwrap_or(0);
                if (row.cuda, rank) <= (prev.cuda, prev_rank) {
                    return self.err(
                        at,
                        format!("toolkit {} is out of order (after {})", row.label, prev.label),
                    );
                }
                if row.linux_min < prev.linux_min {
                    return self.err(
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
                            return self.err(at, format!("toolkit {missing} is missing (gap before {}); list it in meta.no_toolkit_release if it never shipped", row.label));
                        }
                    }
                }
            }
            if let Some(prev_win) = toolkits.iter().rev().find_map(|t| t.windows_min.as_ref())
                && let Some(w) = &row.windows_min
                && w < prev_win
            {
                return self.err(
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
            return self.err(0, "the [[toolkit]] table is empty");
        }
        Ok(toolkits)
    }

    /// `[[minor_compat]]`: one row per CUDA major, in order.
    pub(super) fn minor_compat(
        &self,
        rows: &[toml::Spanned<RawMinor>],
    ) -> Result<Vec<MinorCompat>, MatrixError> {
        let mut minor_compat: Vec<MinorCompat> = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            let row = MinorCompat {
                major: r.major,
                linux_min: self.driver(at, &r.linux_min)?,
                windows_min: r.windows_min.as_deref().map(|w| self.driver(at, w)).transpose()?,
                row: self.row(at, r.prov())?,
            };
            if let Some(prev) = minor_compat.last()
                && (row.major <= prev.major || row.linux_min <= prev.linux_min)
            {
                return self.err(at, format!("minor_compat for CUDA {} is out of order", row.major));
            }
            minor_compat.push(row);
        }
        Ok(minor_compat)
    }

    /// `[[driver_branch]]`: in order, and giving every toolkit's CUDA version (a gap is reported at `first_toolkit`, the first `[[toolkit]]` row).
    pub(super) fn branches(
        &self,
        rows: &[toml::Spanned<RawBranch>],
        toolkits: &[ToolkitRow],
        first_toolkit: usize,
    ) -> Result<Vec<BranchRow>, MatrixError> {
        let mut branches: Vec<BranchRow> = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            let row = BranchRow {
                branch: r.branch,
                cuda: self.cuda(at, &r.cuda)?,
                row: self.row(at, r.prov())?,
            };
            if let Some(prev) = branches.last()
                && (row.branch <= prev.branch || row.cuda < prev.cuda)
            {
                return self.err(
                    at,
                    format!(
                        "driver_branch {} is out of order (after {})",
                        row.branch, prev.branch
                    ),
                );
            }
            branches.push(row);
        }
        for t in toolkits {
            if !branches.iter().any(|b| b.cuda == t.cuda) {
                return self.err(
                    first_toolkit,
                    format!(
                        "no driver_branch row gives CUDA {} (gap in the branch table)",
                        t.cuda
                    ),
                );
            }
        }
        Ok(branches)
    }

    /// `[[ptx_isa]]`: in ISA order.
    pub(super) fn ptx(&self, rows: &[toml::Spanned<RawPtx>]) -> Result<Vec<PtxRow>, MatrixError> {
        let mut ptx: Vec<PtxRow> = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            let row = PtxRow {
                isa: self.cuda(at, &r.isa)?,
                cuda: self.cuda(at, &r.cuda)?,
                branch: r.branch,
                new_targets: r.new_targets.clone().unwrap_or_default(),
                row: self.row(at, r.prov())?,
            };
            if let Some(prev) = ptx.last()
                && (row.isa <= prev.isa || row.cuda < prev.cuda)
            {
                return self.err(
                    at,
                    format!("ptx_isa {} is out of order (after {})", row.isa, prev.isa),
                );
            }
            ptx.push(row);
        }
        Ok(ptx)
    }

    /// `[[toolkit_targets]]`: the SM targets each toolkit builds, in CUDA order.
    pub(super) fn targets(&self, rows: &[toml::Spanned<RawTargets>]) -> Result<Vec<TargetsRow>, MatrixError> {
        let mut targets: Vec<TargetsRow> = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            for s in [&r.min_sm, &r.max_sm]
                .into_iter()
                .chain(&r.added)
                .chain(&r.removed)
            {
                if Cc::parse(s).is_none() {
                    return self.err(at, format!("\"{s}\" is not an SM target"));
                }
            }
            let row = TargetsRow {
                cuda: self.cuda(at, &r.cuda)?,
                min_sm: r.min_sm.clone(),
                max_sm: r.max_sm.clone(),
                removed: r.removed.clone(),
                added: r.added.clone(),
                row: self.row(at, r.prov())?,
            };
            if targets.last().is_some_and(|p| row.cuda <= p.cuda) {
                return self.err(at, format!("toolkit_targets {} is out of order", row.cuda));
            }
            targets.push(row);
        }
        Ok(targets)
    }

    /// `[[arch]]`: no compute capability in two rows.
    pub(super) fn archs(&self, rows: &[toml::Spanned<RawArch>]) -> Result<Vec<ArchRow>, MatrixError> {
        let mut archs: Vec<ArchRow> = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            let ccs = r
                .ccs
                .iter()
                .map(|c| self.cc(at, c))
                .collect::<Result<Vec<_>, _>>()?;
            for c in &ccs {
                if archs.iter().any(|a| a.ccs.contains(c)) {
                    return self.err(at, format!("compute capability {c} is in two [[arch]] rows"));
                }
            }
            archs.push(ArchRow {
                name: r.name.clone(),
                ccs,
                first_cuda: self.cuda(at, &r.first_cuda)?,
                last_cuda: r.last_cuda.as_deref().map(|v| self.cuda(at, v)).transpose()?,
                last_branch: r.last_branch,
                row: self.row(at, r.prov())?,
            });
        }
        Ok(archs)
    }

    /// `[[family]]`: members ascending, never empty.
    pub(super) fn families(&self, rows: &[toml::Spanned<RawFamily>]) -> Result<Vec<Family>, MatrixError> {
        let mut families = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            let members = r
                .members
                .iter()
                .map(|c| self.cc(at, c))
                .collect::<Result<Vec<_>, _>>()?;
            if members.windows(2).any(|w| w[0] >= w[1]) || members.is_empty() {
                return self.err(
                    at,
                    format!("family {} members must be ascending and not empty", r.name),
                );
            }
            families.push(Family {
                name: r.name.clone(),
                members,
                row: self.row(at, r.prov())?,
            });
        }
        Ok(families)
    }

    /// `[[sm_rename]]`: checked, not kept (the matrix has no field for it).
    pub(super) fn sm_renames(&self, rows: &[toml::Spanned<RawRename>]) -> Result<(), MatrixError> {
        for t in rows {
            let r = t.get_ref();
            let at = t.span().start;
            if Cc::parse(&r.old).is_none() || Cc::parse(&r.new).is_none() {
                return self.err(
                    at,
                    format!("sm_rename {} -> {} does not name SM targets", r.old, r.new),
                );
            }
            self.cuda(at, &r.since_cuda)?;
            self.row(at, r.prov())?;
        }
        Ok(())
    }

    /// `[tegra]`: the compute capabilities of the integrated (Jetson) GPUs.
    pub(super) fn tegra(&self, tegra: &toml::Spanned<RawTegra>) -> Result<Tegra, MatrixError> {
        let at = tegra.span().start;
        let r = tegra.get_ref();
        let ccs = r
            .ccs
            .iter()
            .map(|c| self.cc(at, c))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Tegra {
            ccs,
            row: self.row(at, r.prov())?,
        })
    }

    /// `[[tegra_soc]]`: each SoC once, a compute capability.
    pub(super) fn tegra_socs(
        &self,
        rows: &[toml::Spanned<RawTegraSoc>],
    ) -> Result<Vec<TegraSoc>, MatrixError> {
        let mut out: Vec<TegraSoc> = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            if out.iter().any(|s| s.soc == r.soc) {
                return self.err(at, format!("tegra_soc {} is listed twice", r.soc));
            }
            out.push(TegraSoc {
                soc: r.soc.clone(),
                name: r.name.clone(),
                cc: self.cc(at, &r.cc)?,
                row: self.row(at, r.prov())?,
            });
        }
        Ok(out)
    }

    /// `[[jetpack]]`: L4T releases of one to three numbers, ascending; SoCs from `[[tegra_soc]]`.
    pub(super) fn jetpacks(
        &self,
        rows: &[toml::Spanned<RawJetpack>],
        socs: &[TegraSoc],
    ) -> Result<Vec<JetpackRow>, MatrixError> {
        let mut out: Vec<JetpackRow> = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            let Some(l4t) = jetson::parse_l4t(&r.l4t) else {
                return self.err(
                    at,
                    format!("l4t \"{}\" is not a Jetson Linux release (like 36.4)", r.l4t),
                );
            };
            if out.last().is_some_and(|p| p.l4t >= l4t) {
                return self.err(at, format!("jetpack {}: l4t releases must ascend", r.jetpack));
            }
            if let Some(bad) = r.socs.iter().find(|s| !socs.iter().any(|k| &k.soc == *s)) {
                return self.err(
                    at,
                    format!("jetpack {}: SoC {bad} is in no [[tegra_soc]] row", r.jetpack),
                );
            }
            out.push(JetpackRow {
                jetpack: r.jetpack.clone(),
                l4t,
                cuda: self.cuda(at, &r.cuda)?,
                socs: r.socs.clone(),
                cuda_compat: r.cuda_compat,
                row: self.row(at, r.prov())?,
            });
        }
        Ok(out)
    }

    /// `[[gpu]]`: each name once, each compute capability in an `[[arch]]` row, PCI ids in hex.
    pub(super) fn gpus(
        &self,
        rows: &[toml::Spanned<RawGpu>],
        archs: &[ArchRow],
    ) -> Result<Vec<GpuRow>, MatrixError> {
        let mut gpus: Vec<GpuRow> = Vec::new();
        let mut gpu_names: std::collections::HashSet<String> = std::collections::HashSet::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            let cc = self.cc(at, &r.cc)?;
            if !archs.iter().any(|a| a.ccs.contains(&cc)) {
                return self.err(
                    at,
                    format!(
                        "compute capability {cc} of {} is in no [[arch]] row",
                        r.names.join(", ")
                    ),
                );
            }
            if r.names.is_empty() {
                return self.err(at, "a [[gpu]] row needs at least one name");
            }
            // Another row's name (two spellings of one name in the same row are fine: "Tesla T4", "NVIDIA T4").
            for n in &r.names {
                if gpu_names.contains(&query::normalize(n)) {
                    return self.err(at, format!("GPU name \"{n}\" appears twice"));
                }
            }
            gpu_names.extend(r.names.iter().map(|n| query::normalize(n)));
            let mut pci_ids = Vec::new();
            for p in &r.pci_ids {
                match u16::from_str_radix(p, 16) {
                    Ok(id) => pci_ids.push(id),
                    Err(_) => return self.err(at, format!("PCI device id \"{p}\" is not 4 hex digits")),
                }
            }
            gpus.push(GpuRow {
                names: r.names.clone(),
                cc,
                pci_ids,
                row: self.row(at, r.prov())?,
            });
        }
        Ok(gpus)
    }

    /// `[forward_compat]`: the forward-compatibility package and the GPUs it supports.
    pub(super) fn forward_compat(
        &self,
        fwd_row: &toml::Spanned<RawFwd>,
    ) -> Result<ForwardCompat, MatrixError> {
        let fwd = fwd_row.get_ref();
        let forward_compat = ForwardCompat {
            supported_gpus: fwd.supported_gpus.clone(),
            package_pattern: fwd.package_pattern.clone(),
            install_dir: fwd.install_dir.clone(),
            row: self.row(fwd_row.span().start, fwd.prov())?,
        };
        let _ = (&fwd.os, fwd.new_feature_branches_supported, &fwd.errors);
        Ok(forward_compat)
    }

    /// `[[forward_compat_package]]`: in CUDA order, compatible bases ascending.
    pub(super) fn fwd_packages(
        &self,
        rows: &[toml::Spanned<RawFwdPkg>],
    ) -> Result<Vec<FwdPackage>, MatrixError> {
        let mut fwd_packages: Vec<FwdPackage> = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            let row = FwdPackage {
                package: r.package.clone(),
                cuda: self.cuda(at, &r.cuda)?,
                compatible_bases: r.compatible_bases.clone(),
                own_branch: r.own_branch,
                row: self.row(at, r.prov())?,
            };
            if fwd_packages.last().is_some_and(|p| row.cuda <= p.cuda)
                || row.compatible_bases.windows(2).any(|w| w[0] >= w[1])
            {
                return self.err(
                    at,
                    format!("forward_compat_package {} is out of order", row.package),
                );
            }
            fwd_packages.push(row);
        }
        Ok(fwd_packages)
    }

    /// `[[feature]]`: each naming a CUDA version that has a `[[toolkit]]` row.
    pub(super) fn features(
        &self,
        rows: &[toml::Spanned<RawFeature>],
        toolkits: &[ToolkitRow],
    ) -> Result<Vec<FeatureRow>, MatrixError> {
        let mut features = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            let min_cuda = self.cuda(at, &r.min_cuda)?;
            if !toolkits.iter().any(|t| t.cuda == min_cuda) {
                return self.err(
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
                row: self.row(at, r.prov())?,
            });
        }
        Ok(features)
    }

    /// `[[cuda_error]]`: in value order, no value twice, findings in the catalogue.
    pub(super) fn cuda_errors(
        &self,
        rows: &[toml::Spanned<RawError>],
    ) -> Result<Vec<CudaErrorRow>, MatrixError> {
        let mut errors: Vec<CudaErrorRow> = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            self.slugs(at, &r.findings)?;
            if errors.last().is_some_and(|e| r.value <= e.value) {
                return self.err(at, format!("cuda_error {} is out of order or repeated", r.value));
            }
            errors.push(CudaErrorRow {
                value: r.value,
                name: r.name.clone(),
                driver_name: r.driver_name.clone().filter(|s| !s.is_empty()),
                message: r.message.clone().filter(|s| !s.is_empty()),
                meaning: r.meaning.clone().filter(|s| !s.is_empty()),
                findings: r.findings.clone(),
                row: self.row(at, r.prov())?,
            });
        }
        Ok(errors)
    }

    /// `[[message]]`: a pattern that is not empty, findings in the catalogue.
    pub(super) fn messages(
        &self,
        rows: &[toml::Spanned<RawMessage>],
    ) -> Result<Vec<MessageRow>, MatrixError> {
        let mut messages = Vec::new();
        for t in rows {
            let at = t.span().start;
            let r = t.get_ref();
            self.slugs(at, &r.findings)?;
            if r.pattern.trim().is_empty() {
                return self.err(at, "a [[message]] pattern must not be empty");
            }
            messages.push(MessageRow {
                pattern: r.pattern.clone(),
                example: r.example.clone(),
                meaning: r.meaning.clone(),
                findings: r.findings.clone(),
                row: self.row(at, r.prov())?,
            });
        }
        Ok(messages)
    }

    /// `[minor_compat_limits]`: its sources are keys of `[sources]`.
    pub(super) fn limits(&self, limits: &RawLimits) -> Result<(), MatrixError> {
        for key in limits.source.split(';').map(str::trim) {
            if !self.sources.contains_key(key) {
                return self.err(
                    0,
                    format!("minor_compat_limits source \"{key}\" is not a key of [sources]"),
                );
            }
        }
        Ok(())
    }
}
