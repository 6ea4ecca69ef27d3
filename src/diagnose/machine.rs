//! The machine collector: this machine's facts (or a root's) as `doctor`, `snapshot`, `inspect` and
//! `inspect --image` read them.
//!
//! The library catalogue walks directories; when that takes long, the caller's [`Progress`] shows the count.

use super::{Progress, System, ToolError};
use crate::facts::HostFacts;
use crate::host::{self, CollectOptions};
use crate::system::{Env, Root};
use std::sync::atomic::AtomicUsize;

/// The root `system` names, refused when it is not a directory.
pub fn checked_root(system: &System) -> Result<Root, ToolError> {
    let root = system.root();
    if !root.is_host() && !root.dir().is_dir() {
        return Err(ToolError(format!(
            "--root {}: not a directory",
            root.dir().display()
        )));
    }
    Ok(root)
}

/// Collects the host facts, `progress` showing the catalogue's walk.
pub fn collect(root: &Root, env: &Env, skip_catalog: bool, progress: &dyn Progress) -> HostFacts {
    collect_from(root, env, host::early(root, env), skip_catalog, progress)
}

/// [`collect`] with the driver and GPUs already read ([`host::early`]).
pub fn collect_from(
    root: &Root,
    env: &Env,
    early: host::Early,
    skip_catalog: bool,
    progress: &dyn Progress,
) -> HostFacts {
    let counter = AtomicUsize::new(0);
    let opts = CollectOptions {
        skip_catalog,
        progress: Some(&counter),
    };
    // Without the catalogue there is nothing long to show (and `inspect` reads the machine beside its own work).
    if skip_catalog {
        return host::collect_from(root, env, &opts, early);
    }
    super::shown(
        progress,
        "scanning for CUDA libraries…",
        "directories",
        &counter,
        || host::collect_from(root, env, &opts, early),
    )
}
