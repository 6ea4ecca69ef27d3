//! The one door to the machine being diagnosed: a filesystem root and a captured environment.
//!
//! `host` and `loader` never touch `std::fs` with absolute paths or read `std::env` directly: they go through
//! [`Root`] (`/` or `--root DIR`) and [`Env`] (the process environment, or a replayed one from
//! `--env KEY=VALUE` / `--clear-env`). That is what lets a support engineer point cudadiag at a mounted
//! customer filesystem and get the answers that machine would give.

mod env;
pub mod read;
mod root;
pub mod scratch;

pub use env::Env;
#[cfg(test)]
pub use root::put;
pub use root::{MAX_LINKS, Root};
