//! The compatibility matrix: what NVIDIA (and, where it is silent, cross-checked public sources) says about
//! which toolkit needs which driver, which driver JITs which PTX, which GPU has which compute capability and
//! which driver branch still supports it.
//!
//! The data is `data/compat.toml`, validated when it is compiled in (`build.rs` turns it into Rust tables with
//! the loader's own parser, [`load`]): versions parse, tables are ordered, release and branch tables have no
//! gaps, every row names a source from `[sources]`. `--matrix FILE` replaces it for a newer CUDA release
//! without a rebuild, parsed at run time by the same code. Rules never hard-code a version: they ask the
//! matrix, and every finding cites the row it used ([`Row::cite`]). The research behind the rows, and how
//! disagreements between sources were settled, is `docs/compatibility.md`.

mod jetson;
mod load;
mod model;
mod parse;
mod query;
mod raw;
mod tables;
mod version;

pub use load::BUNDLED;
pub use model::{
    ArchRow, BranchRow, CudaErrorRow, Family, FeatureRow, ForwardCompat, FwdPackage, GpuRow, JetpackRow,
    Matrix, MessageRow, MinorCompat, PtxRow, Row, Status, TargetsRow, Tegra, TegraSoc, ToolkitRow,
};
pub use parse::MatrixError;
pub use query::{DriverCuda, GpuMatch};
pub use version::{Cc, CudaVersion, DriverVersion};
