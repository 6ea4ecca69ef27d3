//! `cpu-only-framework-build`: in the inspected object's Python environment, a framework is installed as its
//! build without CUDA (torch `+cpu`, `tensorflow-cpu`, `onnxruntime` without `onnxruntime-gpu`, jax/jaxlib
//! without a CUDA plugin) while the machine judged has an NVIDIA GPU, and the inspected object is loaded by a
//! process that imports that framework (it lies in the framework's own package directories). Another
//! framework's CPU build in the same environment does not touch that process: a torch venv that also holds the
//! CPU `onnxruntime` (common, for exporting models) runs torch on the GPU. The facts are `python::site`'s;
//! docs: `data/codes/cpu-only-framework-build.md`.

use crate::facts::host::GpuFacts;
use crate::facts::loader::PipDist;
use crate::facts::python::PythonEnvFacts;
use crate::findings::{Code, Finding};
use crate::inspect::pep508::normalise;
use std::path::Path;

/// One finding per CPU-only framework build of `env` whose process loads an inspected object, when `gpus` holds
/// at least one GPU. No GPU known: the CPU build may be the right one, so nothing is said.
pub fn cpu_only_framework_build(env: &PythonEnvFacts, gpus: &[GpuFacts]) -> Vec<Finding> {
    let Some(gpu) = gpus.first() else {
        return Vec::new();
    };
    let has = |name: &str| env.dists.iter().any(|d| normalise(&d.name) == name);
    let jax_plugin = has("jax-cuda12-plugin") || has("jax-cuda13-plugin");
    let mut out = Vec::new();
    for d in &env.dists {
        let name = normalise(&d.name);
        if !loads_an_object(env, &name) {
            continue;
        }
        let help = match name.as_str() {
            "torch" if local_label(&d.version) == Some("cpu") => {
                "Install torch's CUDA build from PyTorch's CUDA index, in place of the `+cpu` one: `pip install \
                 --force-reinstall torch --index-url https://download.pytorch.org/whl/cu126` (the index of a \
                 CUDA the driver supports and the torch release ships: cu126 from torch 2.6 (still in 2.12), cu130 from \
                 2.9, cu132 from 2.12, cu118 only up to 2.7; pytorch.org/get-started/locally lists the current ones; \
                 the same index for torchvision and torchaudio)."
            }
            "tensorflow-cpu" => {
                "Replace it with TensorFlow's GPU build: `pip uninstall tensorflow-cpu` then `pip install \
                 'tensorflow[and-cuda]'` (Linux)."
            }
            "onnxruntime" if !has("onnxruntime-gpu") => {
                "Replace it with ONNX Runtime's CUDA build: `pip uninstall onnxruntime` then `pip install \
                 onnxruntime-gpu` (both installed, `onnxruntime` shadows the GPU build: remove it first)."
            }
            "jaxlib" if !jax_plugin => {
                "Install JAX with its CUDA plugin: `pip install -U \"jax[cuda12]\"` (or `jax[cuda13]` for a \
                 CUDA 13 driver)."
            }
            "jax" if !jax_plugin && !has("jaxlib") => {
                "Install JAX with its CUDA plugin: `pip install -U \"jax[cuda12]\"` (or `jax[cuda13]` for a \
                 CUDA 13 driver)."
            }
            _ => continue,
        };
        out.push(finding(env, d, gpu, gpus.len(), help));
    }
    out
}

fn finding(env: &PythonEnvFacts, d: &PipDist, gpu: &GpuFacts, n: usize, help: &str) -> Finding {
    let gpus = if n == 1 {
        format!("an NVIDIA GPU ({})", gpu.name)
    } else {
        format!("{n} NVIDIA GPUs ({}, …)", gpu.name)
    };
    let mut f = Finding::new(
        Code::CpuOnlyFrameworkBuild,
        format!(
            "In {}, {} {} is a build without CUDA but the machine has {gpus}: the framework silently runs on \
             the CPU and the GPU is not used",
            env.site, d.name, d.version
        ),
        help.to_string(),
    );
    if let Some(object) = env.objects.first() {
        f = f.at(object);
    }
    f.because(format!(
        "{}: Name: {}, Version: {}",
        d.metadata, d.name, d.version
    ))
}

/// The top-level import packages whose objects are loaded by a process that imports `framework` (a
/// distribution's normalised name): its own, and its extension packages that import it first.
fn packages(framework: &str) -> &'static [&'static str] {
    match framework {
        "torch" => &["torch", "torchvision", "torchaudio"],
        "tensorflow-cpu" => &["tensorflow"],
        "onnxruntime" => &["onnxruntime"],
        "jax" | "jaxlib" => &["jax", "jaxlib"],
        _ => &[],
    }
}

/// Does an inspected object of `env` lie in one of `framework`'s package directories (the first directory
/// under the install directory)?
fn loads_an_object(env: &PythonEnvFacts, framework: &str) -> bool {
    env.objects.iter().any(|o| {
        Path::new(o)
            .strip_prefix(&env.site)
            .ok()
            .and_then(|rel| rel.components().next())
            .and_then(|top| top.as_os_str().to_str())
            .is_some_and(|top| packages(framework).contains(&top))
    })
}

/// The local label of a version (`cpu` of `2.5.1+cpu`), lowercased by PEP 440 already in wheels' METADATA.
fn local_label(version: &str) -> Option<&str> {
    version.split_once('+').map(|(_, l)| l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::metadata::parse_metadata;

    const SITE: &str = "/v/lib/python3.12/site-packages";

    /// An environment with an inspected object in each framework's package.
    fn env(metadata: &[&str]) -> PythonEnvFacts {
        let objects = [
            "torch/lib/libtorch.so",
            "tensorflow/libtensorflow_framework.so.2",
            "onnxruntime/capi/onnxruntime_pybind11_state.so",
            "jaxlib/xla_extension.so",
        ];
        PythonEnvFacts {
            site: SITE.into(),
            objects: objects.iter().map(|o| format!("{SITE}/{o}")).collect(),
            dists: metadata
                .iter()
                .enumerate()
                .map(|(i, m)| parse_metadata(m, &format!("/m{i}/METADATA")).unwrap())
                .collect(),
        }
    }

    fn h100() -> Vec<GpuFacts> {
        vec![GpuFacts {
            name: "NVIDIA H100".into(),
            ..GpuFacts::default()
        }]
    }

    fn slugs(metadata: &[&str], gpus: &[GpuFacts]) -> Vec<String> {
        cpu_only_framework_build(&env(metadata), gpus)
            .iter()
            .map(|f| f.message.clone())
            .collect()
    }

    #[test]
    fn each_cpu_build_on_a_gpu_machine() {
        let f = cpu_only_framework_build(&env(&["Name: torch\nVersion: 2.5.1+cpu\n"]), &h100());
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("torch 2.5.1+cpu is a build without CUDA"));
        assert!(f[0].message.contains("NVIDIA H100"));
        assert!(f[0].help.contains("https://download.pytorch.org/whl/cu126"));
        assert_eq!(f[0].evidence[0], "/m0/METADATA: Name: torch, Version: 2.5.1+cpu");
        for (m, help) in [
            ("Name: tensorflow-cpu\nVersion: 2.18.0\n", "tensorflow[and-cuda]"),
            (
                "Name: onnxruntime\nVersion: 1.20.1\n",
                "pip install onnxruntime-gpu",
            ),
            ("Name: jaxlib\nVersion: 0.4.35\n", "jax[cuda12]"),
            ("Name: jax\nVersion: 0.4.35\n", "jax[cuda12]"),
        ] {
            let f = cpu_only_framework_build(&env(&[m]), &h100());
            assert_eq!(f.len(), 1, "{m}");
            assert!(f[0].help.contains(help), "{m}: {}", f[0].help);
        }
        // jax and jaxlib, no plugin: one finding (jaxlib's), not two.
        assert_eq!(
            slugs(
                &["Name: jax\nVersion: 0.4.35\n", "Name: jaxlib\nVersion: 0.4.35\n"],
                &h100()
            )
            .len(),
            1
        );
    }

    #[test]
    fn gpu_builds_or_no_gpu_are_no_finding() {
        for m in [
            &["Name: torch\nVersion: 2.5.1\n"][..],
            &["Name: torch\nVersion: 2.5.1+cu124\n"],
            &["Name: tensorflow\nVersion: 2.18.0\n"],
            &["Name: onnxruntime-gpu\nVersion: 1.20.1\n"],
            &[
                "Name: onnxruntime\nVersion: 1.20.1\n",
                "Name: onnxruntime-gpu\nVersion: 1.20.1\n",
            ],
            &[
                "Name: jax\nVersion: 0.4.35\n",
                "Name: jaxlib\nVersion: 0.4.35\n",
                "Name: jax-cuda12-plugin\nVersion: 0.4.35\n",
            ],
            &[
                "Name: jaxlib\nVersion: 0.4.35\n",
                "Name: jax_cuda13_plugin\nVersion: 0.7.0\n",
            ],
        ] {
            assert!(slugs(m, &h100()).is_empty(), "{m:?}");
        }
        assert!(slugs(&["Name: torch\nVersion: 2.5.1+cpu\n"], &[]).is_empty());
    }

    /// Found on an H200's torch venv: the CPU `onnxruntime` beside torch's CUDA build made every file of
    /// `torch/lib` "will fail". Only the process that imports ONNX Runtime runs on the CPU.
    #[test]
    fn another_frameworks_cpu_build_does_not_concern_torchs_objects() {
        let mut e = env(&[
            "Name: torch\nVersion: 2.11.0\n",
            "Name: onnxruntime\nVersion: 1.30.0\n",
        ]);
        e.objects = vec![format!("{SITE}/torch/lib/libtorch_cuda.so")];
        assert!(cpu_only_framework_build(&e, &h100()).is_empty());
        e.objects
            .push(format!("{SITE}/onnxruntime/capi/libonnxruntime.so.1"));
        assert_eq!(cpu_only_framework_build(&e, &h100()).len(), 1);
        // An object outside the install directory concerns no framework.
        e.objects = vec!["/usr/lib/libfoo.so".into()];
        assert!(cpu_only_framework_build(&e, &h100()).is_empty());
    }
}
