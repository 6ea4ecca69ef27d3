//! The matrix file as serde reads it: strings and numbers, each row wrapped in `toml::Spanned` so validation
//! (`load.rs`) can name the line of a bad row. Unknown fields are refused, so a typo in a `--matrix` file is
//! reported instead of silently ignored.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Raw {
    pub(super) meta: RawMeta,
    pub(super) sources: BTreeMap<String, String>,
    pub(super) toolkit: Vec<Spanned<RawToolkit>>,
    pub(super) minor_compat: Vec<Spanned<RawMinor>>,
    pub(super) minor_compat_limits: RawLimits,
    pub(super) driver_branch: Vec<Spanned<RawBranch>>,
    pub(super) ptx_isa: Vec<Spanned<RawPtx>>,
    pub(super) toolkit_targets: Vec<Spanned<RawTargets>>,
    pub(super) forward_compat: Spanned<RawFwd>,
    pub(super) forward_compat_package: Vec<Spanned<RawFwdPkg>>,
    pub(super) family: Vec<Spanned<RawFamily>>,
    pub(super) tegra: Spanned<RawTegra>,
    #[serde(default)]
    pub(super) sm_rename: Vec<Spanned<RawRename>>,
    #[serde(default)]
    pub(super) tegra_soc: Vec<Spanned<RawTegraSoc>>,
    #[serde(default)]
    pub(super) jetpack: Vec<Spanned<RawJetpack>>,
    pub(super) arch: Vec<Spanned<RawArch>>,
    pub(super) gpu: Vec<Spanned<RawGpu>>,
    #[serde(default)]
    pub(super) feature: Vec<Spanned<RawFeature>>,
    pub(super) cuda_error: Vec<Spanned<RawError>>,
    #[serde(default)]
    pub(super) message: Vec<Spanned<RawMessage>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMeta {
    pub(super) schema_version: u32,
    #[allow(dead_code)]
    pub(super) compiled: String,
    #[serde(default)]
    pub(super) no_toolkit_release: Vec<String>,
    /// The data's release (`2026.12.1`); optional so that older `--matrix` files still load.
    #[serde(default)]
    pub(super) version: Option<String>,
    /// The day of the data's last change (`2026-12-02`).
    #[serde(default)]
    pub(super) date: Option<String>,
}

/// Fields every row has.
#[derive(Deserialize)]
pub(super) struct Prov {
    pub(super) status: String,
    pub(super) source: String,
    #[serde(default)]
    pub(super) note: Option<String>,
}

macro_rules! raw_row {
    ($name:ident { $($field:ident : $ty:ty),* $(,)? }) => {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct $name {
            $(pub(super) $field: $ty,)*
            pub(super) status: String,
            pub(super) source: String,
            #[serde(default)]
            pub(super) note: Option<String>,
        }
        impl $name {
            pub(super) fn prov(&self) -> Prov {
                Prov { status: self.status.clone(), source: self.source.clone(), note: self.note.clone() }
            }
        }
    };
}

raw_row!(RawToolkit { cuda: String, release: String, label: String, linux_min: String, windows_min: Option<String> });
raw_row!(RawMinor { major: u32, linux_min: String, windows_min: Option<String> });
raw_row!(RawBranch {
    branch: u32,
    cuda: String
});
raw_row!(RawPtx { isa: String, cuda: String, branch: Option<u32>, new_targets: Option<Vec<String>> });
raw_row!(RawTargets { cuda: String, min_sm: String, max_sm: String, removed: Vec<String>, added: Vec<String> });
raw_row!(RawFwd { supported_gpus: Vec<String>, os: String, package_pattern: String, install_dir: String,
    new_feature_branches_supported: bool, errors: Vec<u32> });
raw_row!(RawFwdPkg { package: String, cuda: String, compatible_bases: Vec<u32>, own_branch: Option<u32> });
raw_row!(RawTegra { ccs: Vec<String> });
raw_row!(RawFamily { name: String, members: Vec<String> });
raw_row!(RawTegraSoc {
    soc: String,
    name: String,
    cc: String
});
raw_row!(RawJetpack { jetpack: String, l4t: String, cuda: String, socs: Vec<String>, cuda_compat: bool });
raw_row!(RawRename {
    old: String,
    new: String,
    since_cuda: String
});
raw_row!(RawArch { name: String, ccs: Vec<String>, first_cuda: String, last_cuda: Option<String>, last_branch: Option<u32> });
raw_row!(RawGpu { names: Vec<String>, cc: String, pci_ids: Vec<String> });
raw_row!(RawFeature {
    name: String,
    what: String,
    min_cuda: String
});
raw_row!(RawError { value: u32, name: String, driver_name: Option<String>, message: Option<String>,
    meaning: Option<String>, findings: Vec<String> });
raw_row!(RawMessage { pattern: String, example: String, meaning: String, findings: Vec<String> });

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub(super) limits: Vec<String>,
    pub(super) source: String,
}
