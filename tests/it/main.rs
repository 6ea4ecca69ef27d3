//! The integration tests, one binary: each module was a binary of its own, and each linked the whole crate.
//! Run one module with `cargo test --test it host::` (or any test-name filter); the shared helpers are in
//! `support/`, the insta snapshots and the code list in `snapshots/`.

mod support;

mod arm;
mod audit;
mod bundle;
mod cli;
mod code_table;
mod compat_matrix;
mod container;
mod deploy;
mod diff;
mod explain_cli;
mod explain_corpus;
mod fixtures_cuobjdump;
mod fleet;
mod frameworks_jax_tf;
mod host;
mod host_rules;
mod hostile_output;
mod image;
mod image_hostile;
mod image_import;
mod image_run;
mod inspect_env;
mod jetson;
mod layering;
mod loader_cache;
mod loader_cli;
mod loader_differential;
mod loader_malformed;
mod loader_scenarios;
mod loader_symlink_origin;
mod malformed;
mod nccl;
mod node_services;
mod pip_layouts;
mod probe;
mod probe_live;
mod ptxas;
mod python_cupy_ort;
mod python_env;
mod python_import;
mod python_inspect_file;
mod python_syspath;
mod secure_boot;
mod verdict_agreement;
mod verdict_fixtures;
mod verdict_process;
mod verdict_table;
