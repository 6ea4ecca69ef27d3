//! The install directory of an inspected object and the distributions in it whose versions must go together:
//! JAX, jaxlib and JAX's CUDA plugins (each pins the others in its `Requires-Dist`), and torch with the
//! extensions compiled against one torch release (torchvision, torchaudio, xformers, flash-attn, vLLM pin it);
//! and the frameworks' CPU-only builds (torch `+cpu`, tensorflow-cpu, onnxruntime without onnxruntime-gpu).
//!
//! Lazy and bounded, as [`super::dist_info`]: nothing is read unless an inspected object is under a directory
//! that holds `*.dist-info` (walking up at most [`super::dist_info::MAX_LEVELS`] directories); a directory's
//! listing keeps at most [`super::dist_info::MAX_INFOS`] `.dist-info` names; only the `METADATA` of the [`WATCHED`]
//! distributions is read (at most [`MAX_METADATA`] per directory), each within the root's cap for package
//! metadata. Nothing is imported or run.

use crate::facts::loader::Resolution;
use crate::facts::python::PythonEnvFacts;
use crate::python::dist_info::dist_infos;
use crate::python::metadata::parse_metadata;
use crate::system::{Root, read};
use std::path::{Path, PathBuf};

/// The distributions read, PEP 503-normalised.
pub const WATCHED: &[&str] = &[
    "jax",
    "jaxlib",
    "jax-cuda12-plugin",
    "jax-cuda12-pjrt",
    "jax-cuda13-plugin",
    "jax-cuda13-pjrt",
    "torch",
    "torchvision",
    "torchaudio",
    "xformers",
    "flash-attn",
    "vllm",
    "tensorflow-cpu",
    "onnxruntime",
    "onnxruntime-gpu",
];

/// `METADATA` files read per directory (a directory holding several `.dist-info` of one name, which a broken
/// install leaves, cannot make this read more).
pub const MAX_METADATA: usize = 32;

/// The environments of the inspected objects (the first object of each loader resolution: the binary), each
/// install directory once.
pub fn environments(root: &Root, resolutions: &[Resolution]) -> Vec<PythonEnvFacts> {
    let mut out: Vec<PythonEnvFacts> = Vec::new();
    for r in resolutions {
        let Some(object) = r.objects.first() else {
            continue;
        };
        let Some((site, infos)) = install_dir(root, Path::new(&object.realpath)) else {
            continue;
        };
        let site = site.to_string_lossy().into_owned();
        if let Some(env) = out.iter_mut().find(|e| e.site == site) {
            if !env.objects.contains(&object.realpath) {
                env.objects.push(object.realpath.clone());
            }
            continue;
        }
        let dists: Vec<_> = infos
            .iter()
            .filter(|i| watched(i))
            .take(MAX_METADATA)
            .filter_map(|i| {
                let metadata = i.join("METADATA");
                let text = root.read_to_string(&metadata, read::PACKAGE_METADATA).ok()?;
                parse_metadata(&text, &metadata.to_string_lossy())
            })
            .collect();
        if !dists.is_empty() {
            out.push(PythonEnvFacts {
                site,
                objects: vec![object.realpath.clone()],
                dists,
            });
        }
    }
    out
}

/// Is a `.dist-info` directory (`jax_cuda12_plugin-0.4.35.dist-info`) one of the [`WATCHED`]?
fn watched(info: &Path) -> bool {
    WATCHED.contains(&crate::python::dist_info::key_of(info).as_str())
}

/// The nearest directory above `object` that holds `*.dist-info`, with those entries (sorted).
fn install_dir(root: &Root, object: &Path) -> Option<(PathBuf, Vec<PathBuf>)> {
    let mut dir = object.parent();
    for _ in 0..super::dist_info::MAX_LEVELS {
        let d = dir?;
        let infos = dist_infos(root, d);
        if !infos.is_empty() {
            return Some((d.to_path_buf(), infos));
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::loader::LoadedObject;

    fn resolution(realpath: &str) -> Resolution {
        Resolution {
            objects: vec![LoadedObject {
                path: realpath.into(),
                realpath: realpath.into(),
                ..LoadedObject::default()
            }],
            ..Resolution::default()
        }
    }

    #[test]
    fn the_watched_distributions_of_the_objects_directory() {
        let t = tempfile::tempdir().unwrap();
        let put = |p: &str, b: &str| crate::system::put(t.path(), p, b.as_bytes());
        let site = "/v/lib/python3.12/site-packages";
        put(&format!("{site}/jaxlib/xla_extension.so"), "");
        put(
            &format!("{site}/jax-0.4.35.dist-info/METADATA"),
            "Name: jax\nVersion: 0.4.35\nRequires-Dist: jaxlib<=0.4.35,>=0.4.34\n\nbody\n",
        );
        put(
            &format!("{site}/jaxlib-0.4.30.dist-info/METADATA"),
            "Name: jaxlib\nVersion: 0.4.30\n",
        );
        put(
            &format!("{site}/numpy-2.1.0.dist-info/METADATA"),
            "Name: numpy\nVersion: 2.1.0\n",
        );
        put("/elsewhere/lib.so", "");
        let root = Root::at(t.path());
        let envs = environments(
            &root,
            &[
                resolution(&format!("{site}/jaxlib/xla_extension.so")),
                resolution("/elsewhere/lib.so"),
            ],
        );
        assert_eq!(envs.len(), 1);
        assert_eq!(envs[0].site, site);
        let names: Vec<&str> = envs[0].dists.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["jax", "jaxlib"]);
        assert_eq!(envs[0].dists[0].requires[0].text, "jaxlib<=0.4.35,>=0.4.34");
        assert_eq!(envs[0].dists[0].requires[0].line, 3);
    }
}
