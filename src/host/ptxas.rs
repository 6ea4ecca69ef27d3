//! The `ptxas` assemblers a tool on the machine would run: the first one on `PATH` (what TensorFlow, JAX's
//! fallback and hand-run `nvcc` find), Triton's override `TRITON_PTXAS_PATH`, and the toolkits under
//! `/usr/local/cuda*`. Each is read for its CUDA release (`inspect::ptxas`); nothing is executed.

use crate::facts::ptxas::Ptxas;
use crate::system::{Env, Root};
use std::path::Path;

/// The most `PATH` entries looked at.
const MAX_PATH_DIRS: usize = 64;

/// The most toolkits under `/usr/local` read.
const MAX_TOOLKITS: usize = 16;

/// The ptxas found, each file once (by its real path).
pub fn collect(root: &Root, env: &Env) -> Vec<Ptxas> {
    let mut out: Vec<Ptxas> = Vec::new();
    // `/usr/local/cuda` is usually a link to one `/usr/local/cuda-X.Y`: one file, listed once.
    let mut seen: Vec<std::path::PathBuf> = Vec::new();
    let mut add = |path: String, via: &str| {
        let Ok(real) = root.resolve(Path::new(&path)) else {
            return;
        };
        if !seen.contains(&real)
            && let Some(p) = crate::inspect::ptxas::at(root, &path, via)
        {
            seen.push(real);
            out.push(p);
        }
    };
    if let Some(p) = env.get("TRITON_PTXAS_PATH").filter(|p| p.starts_with('/')) {
        add(p.to_string(), "TRITON_PTXAS_PATH");
    }
    let on_path = env.get("PATH").and_then(|path| {
        path.split(':')
            .filter(|d| d.starts_with('/'))
            .take(MAX_PATH_DIRS)
            .map(|d| format!("{}/ptxas", d.trim_end_matches('/')))
            .find(|p| root.is_file(Path::new(p)))
    });
    if let Some(p) = on_path {
        add(p, "PATH");
    }
    let toolkits = root
        .read_dir(Path::new("/usr/local"))
        .unwrap_or_default()
        .into_iter()
        .filter(|d| {
            d.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == "cuda" || n.starts_with("cuda-"))
        })
        .take(MAX_TOOLKITS);
    for d in toolkits {
        add(format!("{}/bin/ptxas", d.display()), "the CUDA toolkit");
    }
    out
}
