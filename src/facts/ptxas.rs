//! The `ptxas` assemblers found on the machine and in Python environments, with their CUDA release
//! (`inspect::ptxas`, `host::ptxas`).

use serde::{Deserialize, Serialize};

/// One `ptxas` and the CUDA release it belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ptxas {
    /// The file, as a machine path.
    pub path: String,
    /// Its CUDA release (`12.9`), from the banner it prints for `--version`, read from its read-only data.
    pub release: String,
    /// Who uses it, how it was found: `PATH`, `TRITON_PTXAS_PATH`, `the CUDA toolkit`, `triton's own`,
    /// `nvidia-cuda-nvcc (JAX, TensorFlow)`.
    pub via: String,
}
