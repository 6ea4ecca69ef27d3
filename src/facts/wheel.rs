//! What a Python wheel declares and ships: the serialisable facts `inspect::wheel` reads from `*.dist-info`.

use serde::{Deserialize, Serialize};

/// What a Python wheel declares about itself (`*.dist-info/METADATA`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WheelFacts {
    /// The wheel file.
    pub path: String,
    /// `Name:`.
    pub name: Option<String>,
    /// `Version:`.
    pub version: Option<String>,
    /// `Requires-Dist:` lines, verbatim: what pip installs beside it (`nvidia-cuda-runtime-cu12`, …).
    pub requires: Vec<String>,
    /// `requires`, parsed (PEP 508), with whether pip installs each on Linux for this wheel's tags.
    #[serde(default)]
    pub requirements: Vec<Requirement>,
    /// The CUDA libraries its binaries need and where each will come from: bundled in the wheel, installed by a
    /// declared dependency, or neither. Filled by `rules::wheel::resolve` (audit).
    #[serde(default)]
    pub cuda_libraries: Vec<WheelLibrary>,
}

/// When pip installs a declared dependency, from its environment marker evaluated for Linux and the wheel's
/// own tags (CPU, Python version).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Installed {
    /// With every `pip install` of the wheel (no marker, or one that holds).
    #[default]
    Always,
    /// Only when the user asks for an extra (`pip install pkg[ctk]`).
    WithExtra,
    /// Never on Linux for this wheel (`platform_system == "Windows"`, another Python).
    Never,
}

/// One `Requires-Dist` of a wheel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requirement {
    /// The line, verbatim.
    pub text: String,
    /// The distribution, PEP 503-normalised (`nvidia-cuda-runtime-cu12`).
    pub name: String,
    /// Extras asked of it (`cuda-toolkit[cublas,cudart]`), normalised.
    pub extras: Vec<String>,
    /// The version specifier (`==12.8.90`, `>=12,<13`); empty when none.
    pub specifier: String,
    /// When pip installs it.
    pub installed: Installed,
    /// The extra that installs it, when `installed` is `with-extra`.
    pub extra: Option<String>,
    /// What cudadiag's table of NVIDIA pip distributions knows of it (`data/pip_cuda.toml`); filled with
    /// `cuda_libraries`.
    #[serde(default)]
    pub cuda: Option<CudaDependency>,
}

/// A declared dependency that installs CUDA libraries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaDependency {
    /// The NVIDIA distributions it installs (itself, or those of `cuda-toolkit`'s extras).
    pub distributions: Vec<String>,
    /// The CUDA major of what it installs, when known (`-cu12`, the version of a CUDA 13 name).
    pub major: Option<u32>,
    /// The CUDA runtime version it pins (`12.8` for `nvidia-cuda-runtime-cu12==12.8.90`), when it installs
    /// libcudart and pins a release.
    pub runtime: Option<String>,
    /// The SONAMEs it installs.
    pub sonames: Vec<String>,
}

/// Where a CUDA library a wheel's binaries need will come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provided {
    /// A member of the wheel (file name or SONAME).
    Bundled,
    /// A dependency pip always installs.
    Dependency,
    /// A dependency pip installs only with an extra.
    Extra,
    /// Nothing the wheel ships or declares.
    Missing,
}

/// One CUDA library (DT_NEEDED) of a wheel's binaries, resolved against the wheel and its dependencies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WheelLibrary {
    /// The SONAME (`libcublas.so.12`).
    pub soname: String,
    /// The wheel's binaries that need it.
    pub needed_by: Vec<String>,
    /// Where it comes from.
    pub provided: Provided,
    /// The member that bundles it, or the `Requires-Dist` line that installs it.
    pub by: Option<String>,
    /// The NVIDIA distribution that installs it (`nvidia-cublas-cu12`), for `dependency` and `extra`.
    pub distribution: Option<String>,
    /// The CUDA major of that distribution, when known.
    pub major: Option<u32>,
}
