//! The Python environment an inspected object lives in: the distributions of its install directory whose
//! versions must go together (JAX and its CUDA plugins; torch and the extensions compiled against it), each
//! with its `METADATA`'s `Requires-Dist` lines. Read by `python::site`; judged by `rules::jax_versions` and
//! `rules::extension_abi`; their CPU-only builds by `rules::cpu_only`.

use super::loader::PipDist;
use serde::{Deserialize, Serialize};

/// One install directory (a `site-packages`, a `pip install --target` directory) that holds an inspected object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonEnvFacts {
    /// The directory, as a path of the machine: the nearest one above the object that holds `*.dist-info`.
    pub site: String,
    /// The inspected objects inside it (real paths).
    pub objects: Vec<String>,
    /// Its watched distributions (`python::site::WATCHED`), by `.dist-info` name.
    pub dists: Vec<PipDist>,
}
