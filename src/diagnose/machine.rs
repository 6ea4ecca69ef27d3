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

/// [`collect`] for a judgement of binaries (`inspect`, [`super::read::read`]): the whole machine where it shows
/// an NVIDIA GPU or driver ([`nvidia_present`]); elsewhere only what such a judgement takes of it,
/// its glibc, with the facts that showed no NVIDIA. The rest (the driver's and CUDA libraries, the environment,
/// the JIT cache, the container toolkit) would be read only to be set aside: 1.1–1.3 ms of CPU time of the
/// loader tree of `libtorch_cuda.so` on 2 cores without a GPU (BENCHMARKS.md, stop 54).
pub fn collect_for_binaries(root: &Root, env: &Env) -> HostFacts {
    let mut early = host::early(root, env);
    let presence = early.presence(root);
    if nvidia_present(&presence) {
        return collect_from(root, env, early, true, &super::Quiet);
    }
    host::with_glibc(root, env, presence)
}

/// Does the machine show any NVIDIA GPU or driver (a GPU on the bus, the kernel module, `/proc/driver/nvidia`,
/// device nodes, a WSL or Jetson platform)? A stub or compat `libcuda` alone (a build container with a
/// toolkit) does not count.
pub fn nvidia_present(h: &crate::facts::HostFacts) -> bool {
    crate::rules::host::wsl(h)
        || crate::rules::host::jetson(h)
        || h.driver.is_some()
        || !h.gpus.is_empty()
        || !h.device_nodes.is_empty()
        || h.kernel.nvrm_line.is_some()
        || h.kernel
            .modules
            .iter()
            .any(|m| m.starts_with("nvidia") || m == "nouveau")
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn binaries_get_the_whole_machine_only_where_it_shows_nvidia() {
        let env = Env::empty();
        // The driver and two GPUs: all of the machine, as `doctor` reads it without the catalogue.
        let root = Root::at(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts/healthy/root"));
        let whole = collect(&root, &env, true, &super::super::Quiet);
        assert!(super::nvidia_present(&whole));
        let json = |h: &HostFacts| serde_json::to_value(h).unwrap();
        assert_eq!(json(&collect_for_binaries(&root, &env)), json(&whole));
        // Nothing of NVIDIA: not judged, so only its glibc is read (and the facts that showed no NVIDIA).
        let t = tempfile::tempdir().unwrap();
        crate::system::put(t.path(), "/etc/ld.so.conf", b"");
        let root = Root::at(t.path());
        let whole = collect(&root, &env, true, &super::super::Quiet);
        assert!(!super::nvidia_present(&whole));
        assert!(whole.observed && whole.ld_cache.is_some());
        let lean = collect_for_binaries(&root, &env);
        assert!(!super::nvidia_present(&lean));
        assert!(!lean.observed && lean.ld_cache.is_none());
        assert_eq!(lean.glibc, whole.glibc);
    }
}
