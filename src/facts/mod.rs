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
