//! What the toolkit does to a container on a node, as data ([`ContainerView`], its requirements and their
//! outcomes), and which of an image's forward-compatibility libraries it activates. A leaf below the rules
//! (`rules`), which read a view, and the evaluation (`mod.rs`), which builds one and has the rules judge it.

use super::caps::{Capability, CapsSource, InjectedFile};
use super::devices::DeviceSelection;
use super::run::Applied;
use crate::findings::Finding;
use serde::Serialize;

/// What the toolkit does to a container on a node.
#[derive(Debug, Clone, Serialize)]
pub struct ContainerView {
    /// Whether the toolkit acts on the container (`NVIDIA_VISIBLE_DEVICES` set to anything but empty or `void`,
    /// or unset on a legacy image).
    pub gpu_container: bool,
    /// A legacy CUDA image: `CUDA_VERSION` set and `NVIDIA_REQUIRE_CUDA` unset or empty.
    pub legacy_image: bool,
    /// How the run brings GPUs: what it adds to the image's environment, whether the toolkit's hook runs.
    pub run: Applied,
    /// The driver capabilities in force, when the toolkit acts and accepts them.
    pub capabilities: Vec<Capability>,
    /// Where they came from.
    pub capabilities_source: CapsSource,
    /// The driver files the toolkit looks for on the node for those capabilities, and where each lands in the
    /// container (the toolkit runs `ldconfig` in the container afterwards, which makes the SONAME links). A file
    /// the node's driver does not ship is skipped.
    pub injected: Vec<InjectedFile>,
    /// The devices, from `NVIDIA_VISIBLE_DEVICES`.
    pub devices: DeviceSelection,
    /// Every `NVIDIA_REQUIRE_*` (and the legacy `CUDA_VERSION` one) with its outcome on this node.
    pub requirements: Vec<Requirement>,
    /// What the node offers the requirements: the driver and its CUDA version, as cudadiag reads them.
    pub node: NodeValues,
    /// The findings.
    pub findings: Vec<Finding>,
}

/// The node's values the requirements compare against.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NodeValues {
    /// The kernel module's version.
    pub driver: Option<String>,
    /// The CUDA version the driver supports (major.minor), when the matrix settles it.
    pub cuda: Option<String>,
    /// Where each came from (`--driver`, `compat.toml:512, RN-13.2U2`).
    pub sources: Vec<String>,
}

/// One requirement and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requirement {
    /// The variable (`NVIDIA_REQUIRE_CUDA`), or `CUDA_VERSION` for the requirement a legacy image implies.
    pub variable: String,
    /// The expression, verbatim.
    pub expression: String,
    /// The outcome on this node.
    pub outcome: Outcome,
    /// The toolkit's message for a failure, or why the outcome is open or skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A requirement's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Holds for every visible GPU: the container starts.
    Satisfied,
    /// Fails: "requirement error: unsatisfied condition", the container does not start.
    Unsatisfied,
    /// The toolkit cannot read it: "requirement error: invalid expression", the container does not start.
    Invalid,
    /// The node's facts do not settle it.
    Unknown,
    /// Not checked: `NVIDIA_DISABLE_REQUIRE`, or not a GPU container.
    Skipped,
}

impl ContainerView {
    /// Which of the image's forward-compatibility libraries (file names in `/usr/local/cuda/compat`) the toolkit
    /// activates in this container: none unless it is a GPU container with the `compute` capability on a node
    /// whose driver is known. `None` when the driver is not known.
    pub fn compat_libraries_used<'a>(&self, files: &'a [String], mode: CompatMode) -> Option<Vec<&'a str>> {
        let driver = self.node.driver.as_deref()?;
        if !self.gpu_container
            || self.devices.unknown.is_some()
            || !self.capabilities.contains(&Capability::Compute)
        {
            return Some(Vec::new());
        }
        Some(
            files
                .iter()
                .map(String::as_str)
                .filter(|f| compat_library_used(f, driver, mode))
                .collect(),
        )
    }
}

/// How the toolkit treats an image's forward-compatibility libraries (its `cuda-compat-mode` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompatMode {
    /// The default since toolkit 1.17: compat libraries of a newer branch than the node's driver are put ahead
    /// of the driver's in the container's loader configuration.
    #[default]
    Ldconfig,
    /// The older behaviour: compat libraries of any other branch are mounted over the driver's.
    Mount,
    /// The toolkit leaves them alone.
    Disabled,
}

/// Whether the toolkit activates an image's forward-compatibility library (a file of
/// `/usr/local/cuda/compat`, `libcuda.so.580.95.05`) on a node whose kernel module is `driver`, with the
/// `compute` capability on. The branch in the file name is compared with the start of the driver's version as
/// text, as libnvidia-container does (`docs/container-toolkit.md`, "Forward compatibility inside the image").
pub fn compat_library_used(file_name: &str, driver: &str, mode: CompatMode) -> bool {
    let Some((_, after)) = file_name.split_once(".so.") else {
        return false;
    };
    let n = after.bytes().take_while(u8::is_ascii_digit).count();
    let ours = &driver.as_bytes()[..n.min(driver.len())];
    let theirs = &after.as_bytes()[..n];
    // strncmp over n characters, a shorter driver string comparing as if padded with NULs.
    let order = ours.cmp(theirs).then(if driver.len() < n {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Equal
    });
    match mode {
        CompatMode::Disabled => false,
        CompatMode::Ldconfig => order == std::cmp::Ordering::Less,
        CompatMode::Mount => order != std::cmp::Ordering::Equal,
    }
}
