//! The serialisable facts model, one module per source: what cudadiag learnt, as owned data.
//!
//! Collectors (`inspect`, `loader`, `host`, `probe`) fill these types; `rules` judge them; `report` shows
//! them. They depend on serde and the standard library alone, never on a stage, so that a snapshot (`--facts`)
//! carries exactly what the rules read, and so that the layering test (`tests/it/layering.rs`) can hold every
//! stage above them.
//!
//! - [`binary`]: what a file holds (ELF, fatbins, cubins, PTX, cudart linkage);
//! - [`wheel`]: what a Python wheel declares and ships;
//! - [`loader`]: what glibc's loader would map for each library, step by step;
//! - [`host`]: what the machine shows (driver, GPUs, device nodes, environment, libraries on disk);
//! - [`probe`]: what the live probe observed;
//! - [`image`]: which container image was read, and its config.
//!
//! [`Facts`], the root that holds them all, lives here rather than in one of them: every source module is a
//! leaf below it, and none needs another's root.

pub mod binary;
pub mod host;
pub mod image;
pub mod loader;
pub mod nccl;
pub mod probe;
pub mod ptxas;
pub mod python;
pub mod secure_boot;
pub mod wheel;

pub use binary::*;
pub use host::{DriverFacts, GpuFacts, HostFacts};
pub use wheel::*;

use serde::{Deserialize, Serialize};

/// Everything cudadiag knows for one run: the input of the rules.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Facts {
    /// Every inspected binary (archive members separately).
    pub binaries: Vec<BinaryFacts>,
    /// The machine (or the what-if target), when collected.
    #[serde(default)]
    pub host: Option<HostFacts>,
    /// Python wheels read by `audit`, with what they declare.
    #[serde(default)]
    pub wheels: Vec<WheelFacts>,
    /// What the live probe observed (`probe`, `inspect --probe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<probe::ProbeFacts>,
    /// The loader's resolution of each ELF binary's libraries (`loader::resolve`), one per binary.
    #[serde(default)]
    pub libraries: Vec<loader::Resolution>,
    /// Device code of the libraries the binaries load (cuBLAS, cuDNN, a project's own `.so`): each found by the
    /// loader and inspected like a binary, kept when it carries device code. `path` is the path ld.so loads.
    #[serde(default)]
    pub loaded: Vec<BinaryFacts>,
    /// The CUDA runtimes (`libcudart.so.N`) the binaries' processes map, each found by the loader and read
    /// like a binary for its exact version (the constant its `cudaRuntimeGetVersion` stores): the runtime the
    /// driver must serve is the one the process loads, not the major its name carries. `path` is the path
    /// ld.so loads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtimes: Vec<BinaryFacts>,
    /// The loader trees were resolved on the machine whose host facts are judged (`inspect` reading this
    /// machine): only then is a driver library (`libcuda.so.1`, `libnvidia-ml.so.1`, …) missing from them a
    /// fault of that machine. With a declared target (`--gpu`/`--driver`, `--facts`, `--no-host`, a fleet's
    /// node, an image's node), the driver's libraries are the target's.
    #[serde(skip)]
    pub loader_on_host: bool,
    /// Why no machine is judged (`inspect` on a machine without NVIDIA GPU or driver), for the report.
    #[serde(skip)]
    pub host_note: Option<String>,
    /// The machine's glibc when its other facts are not judged (`inspect` on a machine without NVIDIA GPU or
    /// driver): a binary's glibc floor is a question for any machine. [`Facts::glibc`] reads either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unjudged_glibc: Option<host::GlibcFacts>,
    /// The container image the binaries were read from (`inspect --image`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<image::ImageFacts>,
    /// The Python environments the inspected objects live in, with the distributions whose versions must go
    /// together (`python::site`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub python: Vec<python::PythonEnvFacts>,
    /// The NCCL libraries the binaries' processes map, with the CUDA each was built for (`inspect::nccl`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nccl: Vec<nccl::NcclBuild>,
    /// The ptxas the inspected objects' Python environments ship (Triton's own, `nvidia-cuda-nvcc`'s), with
    /// their CUDA release (`inspect::ptxas`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ptxas: Vec<ptxas::Ptxas>,
}

impl Facts {
    /// The glibc of the machine the binaries are judged for: its host facts' (read or from a snapshot), else
    /// the one kept when the rest of the machine is not judged.
    pub fn glibc(&self) -> Option<&host::GlibcFacts> {
        self.host
            .as_ref()
            .and_then(|h| h.glibc.as_ref())
            .or(self.unjudged_glibc.as_ref())
    }
}
