//! The NCCL a process loads and the CUDA it was built for (`inspect::nccl`).

use serde::{Deserialize, Serialize};

/// One `libnccl.so.2` in a binary's loader tree, with the version string NCCL keeps in its read-only data
/// (`NCCL version 2.21.5+cuda12.4`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclBuild {
    /// The inspected binary whose process loads it.
    pub binary: String,
    /// The path ld.so loads it from.
    pub path: String,
    /// NCCL's own version (`2.21.5`).
    pub version: String,
    /// The CUDA it was built with (`12.4`): the CUDA runtime it links statically and the driver API it calls.
    pub cuda: String,
}

impl NcclBuild {
    /// The CUDA major NCCL was built for.
    pub fn cuda_major(&self) -> Option<u32> {
        self.cuda.split('.').next()?.parse().ok()
    }
}
