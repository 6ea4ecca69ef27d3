//! cudadiag: explains CUDA environment failures before anything runs.
//!
//! Stages are verbs and facts are nouns: [`inspect`] reads binaries into [`facts`], [`rules`] turn facts into
//! [`findings`], and [`report`] renders them. The binary (`main.rs`) is thin glue around [`commands::run`].
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod build_info;
pub mod bundle;
pub mod cli;
pub mod commands;
pub mod container;
pub mod diff;
pub mod explain;
pub mod facts;
pub mod findings;
pub mod fleet;
#[doc(hidden)]
pub mod fuzzing;
pub mod glibc;
pub mod host;
pub mod image;
pub mod imports;
pub mod inspect;
pub mod loader;
pub mod matrix;
pub mod parallel;
pub mod policy;
pub mod probe;
pub mod python;
pub mod report;
pub mod rules;
pub mod system;
