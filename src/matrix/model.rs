//! The matrix as the rules read it: every table's rows, each with its provenance ([`Row`]), and the validated
//! [`Matrix`] that holds them. A leaf: loading (`load`), the questions (`query`, `jetson`) and `mod.rs`, which
//! re-exports it, all import it.

use super::version::{Cc, CudaVersion, DriverVersion};
use serde::Serialize;
use std::collections::BTreeMap;

/// How well a row is sourced (`status` in the TOML).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// NVIDIA documentation or NVIDIA code.
    Nv,
    /// Cross-checked against independent public code or data.
    X,
    /// Third-party material only.
    ThirdParty,
    /// No source settles it.
    Unconfirmed,
}

impl Status {
    /// The TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Nv => "nv",
            Status::X => "x",
            Status::ThirdParty => "3p",
            Status::Unconfirmed => "unconfirmed",
        }
    }
}

/// Provenance shared by every row: its source keys, how well sourced it is, and where it is in the file.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Keys of `[sources]`, as written (`"PTX-RN; CUDAPY"`).
    pub source: String,
    /// How well sourced.
    pub status: Status,
    /// A note from the matrix (disagreements, caveats).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// 1-based line of the row's header in the matrix file.
    pub line: usize,
}

impl Row {
    /// `compat.toml:80, RN-13.2U2` (plus the status when the row is not NVIDIA-sourced): what a finding's
    /// "because" line cites.
    pub fn cite(&self, m: &Matrix) -> String {
        let status = match self.status {
            Status::Nv => String::new(),
            Status::X => ", cross-checked, not NVIDIA-stated".to_string(),
            Status::ThirdParty => ", third-party source only".to_string(),
            Status::Unconfirmed => ", UNCONFIRMED".to_string(),
        };
        format!("{}:{}, {}{status}", m.origin_name(), self.line, self.source)
    }
}

/// Toolkit release → minimum ("corresponding") driver, release notes Table 3.
#[derive(Debug, Clone, Serialize)]
pub struct ToolkitRow {
    /// The CUDA version.
    pub cuda: CudaVersion,
    /// `ga`, `update1`, `rc`, …
    pub release: String,
    /// `12.2 Update 2`.
    pub label: String,
    /// Minimum Linux x86_64 driver (one component: the first driver of that branch).
    pub linux_min: DriverVersion,
    /// Minimum Windows driver, when NVIDIA lists one.
    pub windows_min: Option<DriverVersion>,
    /// Provenance.
    pub row: Row,
}

/// Minor-version compatibility floor of one major family (CUDA 11+).
#[derive(Debug, Clone, Serialize)]
pub struct MinorCompat {
    /// The major family (`12`).
    pub major: u32,
    /// Minimum Linux driver for any runtime of the family.
    pub linux_min: DriverVersion,
    /// Minimum Windows driver.
    pub windows_min: Option<DriverVersion>,
    /// Provenance.
    pub row: Row,
}

/// Driver branch → the newest CUDA version it supports (`cuDriverGetVersion`).
#[derive(Debug, Clone, Serialize)]
pub struct BranchRow {
    /// Branch (`535`).
    pub branch: u32,
    /// Highest CUDA version (`12.2`).
    pub cuda: CudaVersion,
    /// Provenance.
    pub row: Row,
}

/// PTX ISA version → the CUDA release (and so driver) that introduced it.
#[derive(Debug, Clone, Serialize)]
pub struct PtxRow {
    /// ISA (`8.7`).
    pub isa: CudaVersion,
    /// CUDA release (`12.8`).
    pub cuda: CudaVersion,
    /// The driver branch PTX-RN names, when it names one.
    pub branch: Option<u32>,
    /// Targets this ISA added.
    pub new_targets: Vec<String>,
    /// Provenance.
    pub row: Row,
}

/// SM targets nvcc of one toolkit accepts.
#[derive(Debug, Clone, Serialize)]
pub struct TargetsRow {
    /// Toolkit.
    pub cuda: CudaVersion,
    /// Lowest target.
    pub min_sm: String,
    /// Highest target.
    pub max_sm: String,
    /// Targets removed in this release.
    pub removed: Vec<String>,
    /// Targets added in this release.
    pub added: Vec<String>,
    /// Provenance.
    pub row: Row,
}

/// A family of compute capabilities for `f` targets.
#[derive(Debug, Clone, Serialize)]
pub struct Family {
    /// `sm_10x`.
    pub name: String,
    /// Members, ascending.
    pub members: Vec<Cc>,
    /// Provenance.
    pub row: Row,
}

/// Tegra (Jetson) compute capabilities: SASS must match them exactly.
#[derive(Debug, Clone, Serialize)]
pub struct Tegra {
    /// The compute capabilities.
    pub ccs: Vec<Cc>,
    /// Provenance.
    pub row: Row,
}

/// A GPU architecture and the drivers that support it.
#[derive(Debug, Clone, Serialize)]
pub struct ArchRow {
    /// `Pascal`.
    pub name: String,
    /// Its compute capabilities.
    pub ccs: Vec<Cc>,
    /// First CUDA version that supports it.
    pub first_cuda: CudaVersion,
    /// Last CUDA version that supports it, when support ended.
    pub last_cuda: Option<CudaVersion>,
    /// Newest driver branch that supports it, when support ended.
    pub last_branch: Option<u32>,
    /// Provenance.
    pub row: Row,
}

/// GPU names and PCI ids → compute capability.
#[derive(Debug, Clone, Serialize)]
pub struct GpuRow {
    /// Names (`GeForce RTX 4090`).
    pub names: Vec<String>,
    /// Compute capability.
    pub cc: Cc,
    /// PCI device ids (vendor 0x10de).
    pub pci_ids: Vec<u16>,
    /// Provenance.
    pub row: Row,
}

/// One forward-compatibility package and the base driver branches it supports.
#[derive(Debug, Clone, Serialize)]
pub struct FwdPackage {
    /// `cuda-compat-13-4`.
    pub package: String,
    /// The CUDA version it brings.
    pub cuda: CudaVersion,
    /// Base (kernel-mode) driver branches it is supported on.
    pub compatible_bases: Vec<u32>,
    /// The package's own branch (no compat package needed there).
    pub own_branch: Option<u32>,
    /// Provenance.
    pub row: Row,
}

/// Forward compatibility in general.
#[derive(Debug, Clone, Serialize)]
pub struct ForwardCompat {
    /// Which systems may use it.
    pub supported_gpus: Vec<String>,
    /// Package name pattern.
    pub package_pattern: String,
    /// Where the package installs.
    pub install_dir: String,
    /// Provenance.
    pub row: Row,
}

/// A feature with its own driver floor (zstd-compressed fatbins).
#[derive(Debug, Clone, Serialize)]
pub struct FeatureRow {
    /// `zstd-fatbin`.
    pub name: String,
    /// What it is.
    pub what: String,
    /// Drivers older than this CUDA version's cannot use it.
    pub min_cuda: CudaVersion,
    /// Provenance.
    pub row: Row,
}

/// A CUDA error code.
#[derive(Debug, Clone, Serialize)]
pub struct CudaErrorRow {
    /// Value (`209`).
    pub value: u32,
    /// Runtime name (`cudaErrorNoKernelImageForDevice`).
    pub name: String,
    /// Driver API name (`CUDA_ERROR_NO_BINARY_FOR_GPU`), when the driver API has the code.
    pub driver_name: Option<String>,
    /// `cudaGetErrorString` text, when sourced.
    pub message: Option<String>,
    /// What it means.
    pub meaning: Option<String>,
    /// Slugs of the findings that predict it.
    pub findings: Vec<String>,
    /// Provenance.
    pub row: Row,
}

/// A non-CUDA message people paste (loader, NVML, container runtime).
#[derive(Debug, Clone, Serialize)]
pub struct MessageRow {
    /// Case-insensitive substring.
    pub pattern: String,
    /// A full example.
    pub example: String,
    /// What it means.
    pub meaning: String,
    /// Slugs of the findings that predict it.
    pub findings: Vec<String>,
    /// Provenance.
    pub row: Row,
}

/// The validated matrix.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    /// Where it was read from (`data/compat.toml (bundled)` or a path).
    pub origin: String,
    /// Source keys → where to read them.
    pub sources: BTreeMap<String, String>,
    /// The data's release (`[meta] version`, `2026.12.1`), when the file gives one.
    pub version: Option<String>,
    /// The day of the data's last change (`[meta] date`, `2026-12-02`), when the file gives one.
    pub date: Option<String>,
    /// CUDA minor releases that never shipped a toolkit (12.7).
    pub no_toolkit_release: Vec<CudaVersion>,
    /// Table 3, ascending.
    pub toolkits: Vec<ToolkitRow>,
    /// Minor-version-compat floors, ascending.
    pub minor_compat: Vec<MinorCompat>,
    /// The documented limits of minor-version compatibility.
    pub minor_compat_limits: Vec<String>,
    /// Source of the limits.
    pub minor_compat_limits_source: String,
    /// Driver branches, ascending.
    pub branches: Vec<BranchRow>,
    /// PTX ISA versions, ascending.
    pub ptx: Vec<PtxRow>,
    /// Targets per toolkit, ascending.
    pub targets: Vec<TargetsRow>,
    /// `f`-target families.
    pub families: Vec<Family>,
    /// Tegra compute capabilities.
    pub tegra: Tegra,
    /// Jetson SoCs (device-tree names) and their integrated GPUs.
    pub tegra_socs: Vec<TegraSoc>,
    /// JetPack and Jetson Linux releases, ascending.
    pub jetpacks: Vec<JetpackRow>,
    /// Architectures.
    pub archs: Vec<ArchRow>,
    /// GPUs.
    pub gpus: Vec<GpuRow>,
    /// Forward compatibility.
    pub forward_compat: ForwardCompat,
    /// Forward-compatibility packages, ascending.
    pub fwd_packages: Vec<FwdPackage>,
    /// Features with their own driver floor.
    pub features: Vec<FeatureRow>,
    /// CUDA error codes, ascending.
    pub errors: Vec<CudaErrorRow>,
    /// Other messages.
    pub messages: Vec<MessageRow>,
}

/// A Jetson SoC and its integrated GPU.
#[derive(Debug, Clone, Serialize)]
pub struct TegraSoc {
    /// The device-tree name (`tegra234`, from `nvidia,tegra234`).
    pub soc: String,
    /// The SoC and the modules that carry it (`Orin (Jetson AGX Orin, Orin NX, Orin Nano)`).
    pub name: String,
    /// Its GPU's compute capability.
    pub cc: Cc,
    /// Provenance.
    pub row: Row,
}

/// A JetPack release line and the Jetson Linux releases it covers.
#[derive(Debug, Clone, Serialize)]
pub struct JetpackRow {
    /// `6.1`.
    pub jetpack: String,
    /// The leading components of the L4T releases it covers (`[36, 4]` covers 36.4.0 to 36.4.4).
    pub l4t: Vec<u32>,
    /// The CUDA version its driver supports.
    pub cuda: CudaVersion,
    /// The SoCs it supports.
    pub socs: Vec<String>,
    /// Newer CUDA runs on it through the cuda-compat package.
    pub cuda_compat: bool,
    /// Provenance.
    pub row: Row,
}

impl JetpackRow {
    /// `R36.4`: the L4T releases the row covers, as NVIDIA writes them.
    pub fn l4t_label(&self) -> String {
        let parts: Vec<String> = self.l4t.iter().map(u32::to_string).collect();
        format!("R{}", parts.join("."))
    }
}

impl Matrix {
    /// The short file name used in citations (`compat.toml`).
    pub fn origin_name(&self) -> &str {
        let first = self.origin.split(" (").next().unwrap_or(&self.origin);
        first.rsplit('/').next().unwrap_or(first)
    }
}
