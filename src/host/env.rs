//! The environment variables that change what CUDA does, captured as they are: what `CUDA_VISIBLE_DEVICES`
//! selects is CUDA's semantics, judged in `rules::visibility`.

use crate::facts::host::EnvFacts;
use crate::system::{Env, Root};
use std::path::Path;

/// The variables recorded (every `NVIDIA_*` one is recorded too).
pub const RELEVANT: &[&str] = &[
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_MODULE_LOADING",
    "CUDA_FORCE_PTX_JIT",
    "CUDA_DISABLE_PTX_JIT",
    "CUDA_DISABLE_JIT",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_PATH",
    "CUDA_CACHE_MAXSIZE",
    "CONDA_PREFIX",
    "VIRTUAL_ENV",
    "PATH",
    "HOME",
];

/// Captures the relevant variables and finds `nvcc` on `PATH`.
pub fn collect(root: &Root, env: &Env) -> EnvFacts {
    let mut facts = EnvFacts::default();
    for (k, v) in env.iter() {
        if RELEVANT.contains(&k) || k.starts_with("NVIDIA_") {
            facts.vars.insert(k.to_string(), v.to_string());
        }
    }
    for dir in env.get("PATH").unwrap_or_default().split(':') {
        if dir.is_empty() || !dir.starts_with('/') {
            continue;
        }
        let p = Path::new(dir).join("nvcc");
        if root.is_file(&p) {
            let s = p.display().to_string();
            if !facts.nvcc.contains(&s) {
                facts.nvcc.push(s);
            }
        }
    }
    facts
}
