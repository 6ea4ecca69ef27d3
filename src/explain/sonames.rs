//! Which CUDA release a library name belongs to, for every CUDA major from 9 to 13, and what installs it
//! for that major (docs/cuda-packages.md, "Library names across CUDA releases", gives the sources).
//!
//! A SONAME's number is the library's own version, not CUDA's: cuFFT 10 (`libcufft.so.10`) ships with CUDA
//! 10.1 to 11.8, cuFFT 11 with CUDA 12, cuFFT 12 with CUDA 13; cuSOLVER 10 with CUDA 10.1 to 11.0 and 11
//! with 11.1 to 12.9. Up to CUDA 10.0 the toolkit's libraries carried the release itself
//! (`libcublas.so.10.0`, `libcudart.so.9.2`), and the runtime did up to 10.2 (`libcudart.so.10.1`); CUDA 11's
//! runtime is `libcudart.so.11.0` for every 11.x. cuDNN, NCCL and TensorRT have their own majors, each built
//! for several CUDA majors.

use crate::rules::packages::{self, PipProvider, Providers};

/// What a library name says about the CUDA release it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Identified {
    /// The name as written (`libcudart.so.10.1`).
    pub soname: String,
    /// The component, as NVIDIA names it (`cuBLAS`, `the CUDA runtime`, `cuDNN 8`).
    pub component: String,
    /// The CUDA majors whose releases ship it (`libcufft.so.10`: 10 and 11). Empty for a driver library.
    pub cuda: Vec<u32>,
    /// The releases in words (`CUDA 10.1 to 11.8`), when narrower than whole majors or worth saying.
    pub releases: String,
    /// What kind of library it is.
    pub kind: Kind,
}

/// The families that decide what installs a library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A library of the CUDA toolkit (runtime, math libraries, NVRTC, nvJitLink, CUPTI).
    Toolkit,
    /// cuDNN (its own major, built for several CUDA majors).
    Cudnn,
    /// NCCL.
    Nccl,
    /// TensorRT (optional for TensorFlow and ONNX Runtime).
    TensorRt,
    /// A library of the NVIDIA driver (`libcuda.so.1`, `libnvidia-ml.so.1`): never from pip or the toolkit.
    Driver,
    /// Another CUDA-related library (cuSPARSELt, cuTENSOR, cuFile, NVSHMEM).
    Other,
}

/// The toolkit's libraries: stem, the component's name, and for each number after `.so.` the CUDA majors
/// that ship it and the releases in words. Numbers with a minor (`9.2`, `10.0`) are handled before this table:
/// they are CUDA releases themselves.
/// One SONAME number of a library: the number, the CUDA majors that ship it, the releases in words.
type Number = (u32, &'static [u32], &'static str);

/// SONAME majors 10 (CUDA 10.1 and 10.2) to 13, the toolkit's major from 11 on: cuBLAS, cuBLASLt, NVBLAS and
/// nvJPEG share them.
const MAJORS_10_TO_13: &[Number] = &[
    (10, &[10], "CUDA 10.1 and 10.2"),
    (11, &[11], ""),
    (12, &[12], ""),
    (13, &[13], ""),
];

const TOOLKIT: &[(&str, &str, &[Number])] = &[
    (
        "libcudart",
        "the CUDA runtime",
        &[
            (11, &[11], "CUDA 11.x (libcudart.so.11.0)"),
            (12, &[12], ""),
            (13, &[13], ""),
        ],
    ),
    ("libcublas", "cuBLAS", MAJORS_10_TO_13),
    ("libcublasLt", "cuBLASLt", MAJORS_10_TO_13),
    ("libnvblas", "NVBLAS", MAJORS_10_TO_13),
    (
        "libcufft",
        "cuFFT",
        &[
            (10, &[10, 11], "CUDA 10.1 to 11.8"),
            (11, &[12], "CUDA 12.x"),
            (12, &[13], "CUDA 13.x"),
        ],
    ),
    (
        "libcufftw",
        "cuFFTW",
        &[
            (10, &[10, 11], "CUDA 10.1 to 11.8"),
            (11, &[12], "CUDA 12.x"),
            (12, &[13], "CUDA 13.x"),
        ],
    ),
    (
        "libcurand",
        "cuRAND",
        &[(10, &[10, 11, 12, 13], "CUDA 10.1 to 13.x")],
    ),
    (
        "libcusolver",
        "cuSOLVER",
        &[
            (10, &[10, 11], "CUDA 10.1 to 11.0"),
            (11, &[11, 12], "CUDA 11.1 to 12.x"),
            (12, &[13], "CUDA 13.x"),
        ],
    ),
    (
        "libcusolverMg",
        "cuSOLVERMg",
        &[
            (10, &[10, 11], "CUDA 10.1 to 11.0"),
            (11, &[11, 12], "CUDA 11.1 to 12.x"),
            (12, &[13], "CUDA 13.x"),
        ],
    ),
    (
        "libcusparse",
        "cuSPARSE",
        &[
            (10, &[10], "CUDA 10.1 and 10.2"),
            (11, &[11], ""),
            (12, &[12, 13], "CUDA 12.x and 13.x"),
        ],
    ),
    (
        "libnvrtc",
        "NVRTC",
        &[(11, &[11], ""), (12, &[12], ""), (13, &[13], "")],
    ),
    (
        "libnvrtc-builtins",
        "NVRTC's builtins",
        &[(12, &[12], ""), (13, &[13], "")],
    ),
    ("libnvJitLink", "nvJitLink", &[(12, &[12], ""), (13, &[13], "")]),
    ("libnvfatbin", "nvFatbin", &[(12, &[12], ""), (13, &[13], "")]),
    (
        "libcupti",
        "CUPTI",
        &[(11, &[11], ""), (12, &[12], ""), (13, &[13], "")],
    ),
    ("libnvjpeg", "nvJPEG", MAJORS_10_TO_13),
    ("libnvToolsExt", "NVTX", &[(1, &[9, 10, 11, 12], "CUDA 9 to 12")]),
    ("libnvtx3interop", "NVTX", &[(1, &[12, 13], "")]),
];

/// NPP's libraries (`libnppc`, `libnppig`, …) follow the toolkit's major from CUDA 10.1 on.
fn npp(stem: &str, n: u32) -> Option<(&'static str, Vec<u32>, &'static str)> {
    (stem.starts_with("libnpp") && (10..=13).contains(&n))
        .then(|| ("NPP", vec![n], if n == 10 { "CUDA 10.1 and 10.2" } else { "" }))
}

/// What the name of a library says (`libcudart.so.10.1`, `libcudnn_ops.so.9`, `libcublas.so`). `None` for a
/// name that is no CUDA library.
pub fn identify(soname: &str) -> Option<Identified> {
    let (stem, tail) = soname.split_once(".so")?;
    let nums: Vec<u32> = tail
        .split('.')
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect::<Option<Vec<u32>>>()?;
    let id = |component: &str, cuda: Vec<u32>, releases: &str, kind: Kind| Identified {
        soname: soname.to_string(),
        component: component.to_string(),
        cuda,
        releases: releases.to_string(),
        kind,
    };
    // The driver's own libraries.
    match stem {
        "libcuda" => return Some(id("the driver's CUDA library", vec![], "", Kind::Driver)),
        "libnvidia-ml" => {
            return Some(id(
                "NVML (the driver's management library)",
                vec![],
                "",
                Kind::Driver,
            ));
        }
        "libnvcuvid" | "libnvidia-encode" | "libnvidia-ptxjitcompiler" | "libnvidia-nvvm" => {
            return Some(id("a library of the NVIDIA driver", vec![], "", Kind::Driver));
        }
        _ => {}
    }
    let major = nums.first().copied();
    // cuDNN and its sub-libraries (`libcudnn_ops_infer.so.8`, `libcudnn_cnn.so.9`).
    if stem == "libcudnn" || stem.starts_with("libcudnn_") {
        return Some(match major {
            Some(3 | 4) => id(
                &format!("cuDNN {}", major.unwrap_or(0)),
                vec![7],
                "cuDNN 3 and 4 are built for CUDA 7.0 and 7.5",
                Kind::Cudnn,
            ),
            Some(5) => id(
                "cuDNN 5",
                vec![7, 8],
                "cuDNN 5 is built for CUDA 7.5 and 8.0",
                Kind::Cudnn,
            ),
            Some(6) => id(
                "cuDNN 6",
                vec![7, 8],
                "cuDNN 6 is built for CUDA 7.5 and 8.0",
                Kind::Cudnn,
            ),
            Some(7) => id(
                "cuDNN 7",
                vec![8, 9, 10],
                "cuDNN 7 is built for CUDA 8.0 to 10.2",
                Kind::Cudnn,
            ),
            Some(8) => id(
                "cuDNN 8",
                vec![10, 11, 12],
                "cuDNN 8 is built for CUDA 10.2, 11.x and 12.x",
                Kind::Cudnn,
            ),
            Some(9) => id(
                "cuDNN 9",
                vec![11, 12, 13],
                "cuDNN 9 is built for CUDA 11.8, 12.x and 13.x",
                Kind::Cudnn,
            ),
            Some(n) => id(&format!("cuDNN {n}"), vec![], "", Kind::Cudnn),
            None => id("cuDNN", vec![], "", Kind::Cudnn),
        });
    }
    if stem == "libnccl" {
        return Some(id(
            "NCCL",
            vec![],
            "NCCL 2 is built for each CUDA major",
            Kind::Nccl,
        ));
    }
    if stem.starts_with("libnvinfer")
        || stem.starts_with("libnvonnxparser")
        || stem.starts_with("libnvparsers")
    {
        let (cuda, words): (Vec<u32>, &str) = match major {
            Some(6) => (vec![10], "TensorRT 6 is built for CUDA 10.x"),
            Some(7) => (vec![10, 11], "TensorRT 7 is built for CUDA 10.2 and 11.0 to 11.1"),
            Some(8) => (
                vec![10, 11, 12],
                "TensorRT 8 is built for CUDA 10.2, 11.x and 12.x",
            ),
            Some(10) => (
                vec![11, 12, 13],
                "TensorRT 10 is built for CUDA 11.8, 12.x and 13.x",
            ),
            _ => (vec![], ""),
        };
        let name = major.map_or("TensorRT".to_string(), |n| format!("TensorRT {n}"));
        return Some(id(&name, cuda, words, Kind::TensorRt));
    }
    for (s, name) in [
        ("libcusparseLt", "cuSPARSELt"),
        ("libcutensor", "cuTENSOR"),
        ("libcutensorMg", "cuTENSORMg"),
        ("libcufile", "cuFile"),
        ("libnvshmem_host", "NVSHMEM"),
    ] {
        if stem == s {
            return Some(id(name, vec![], "", Kind::Other));
        }
    }
    let row = TOOLKIT.iter().find(|(s, _, _)| *s == stem);
    let component = row.map(|r| r.1).or_else(|| npp(stem, 10).map(|n| n.0))?;
    // `libcudart.so.10.1`, `libcublas.so.10.0`, `libnvrtc.so.11.2`, `libcupti.so.11.8`: a CUDA release.
    if let [a, b, ..] = nums[..]
        && (6..=11).contains(&a)
        && !(a == 10 && stem.starts_with("libnvToolsExt"))
    {
        let words = if a == 11 && b == 0 && stem == "libcudart" {
            "CUDA 11.x (every 11 release names its runtime libcudart.so.11.0)".to_string()
        } else if a == 11 && b == 2 && stem == "libnvrtc" {
            "CUDA 11.2 to 11.8 (libnvrtc.so.11.2)".to_string()
        } else {
            format!("CUDA {a}.{b}")
        };
        return Some(id(component, vec![a], &words, Kind::Toolkit));
    }
    let Some(n) = major else {
        return Some(id(component, vec![], "", Kind::Toolkit));
    };
    if let Some((_, cuda, words)) = npp(stem, n) {
        return Some(id(component, cuda, words, Kind::Toolkit));
    }
    let (_, cuda, words) = row?.2.iter().find(|(v, _, _)| *v == n)?;
    Some(id(component, cuda.to_vec(), words, Kind::Toolkit))
}

/// A pip distribution of CUDA 11 for a library stem (NVIDIA published `nvidia-*-cu11` wheels for CUDA 11;
/// nothing earlier is on PyPI).
fn pip_cu11(stem: &str, kind: Kind) -> Option<&'static str> {
    Some(match stem {
        "libcudart" => "nvidia-cuda-runtime-cu11",
        "libcublas" | "libcublasLt" | "libnvblas" => "nvidia-cublas-cu11",
        "libcufft" | "libcufftw" => "nvidia-cufft-cu11",
        "libcurand" => "nvidia-curand-cu11",
        "libcusolver" | "libcusolverMg" => "nvidia-cusolver-cu11",
        "libcusparse" => "nvidia-cusparse-cu11",
        "libnvrtc" | "libnvrtc-builtins" => "nvidia-cuda-nvrtc-cu11",
        "libcupti" => "nvidia-cuda-cupti-cu11",
        "libnvjpeg" => "nvidia-nvjpeg-cu11",
        "libnccl" => "nvidia-nccl-cu11",
        _ if kind == Kind::Cudnn => "nvidia-cudnn-cu11",
        _ if stem.starts_with("libnpp") => "nvidia-npp-cu11",
        _ => return None,
    })
}

/// The Debian/RPM package of NVIDIA's repository for a toolkit library of a CUDA major before 12 (`N`: the
/// minor release). Up to CUDA 10.2 every component was `cuda-<name>-<major>-<minor>`, cuBLAS from 10.1 on
/// `libcublas10`; CUDA 11 named the math libraries `lib<name>-11-<minor>`, as 12 and 13 do.
fn system_old(stem: &str, major: u32, minor: Option<u32>) -> Option<String> {
    let minor = minor.map_or("N".to_string(), |m| m.to_string());
    let name = match stem {
        "libcudart" => "cudart",
        "libcublas" | "libcublasLt" | "libnvblas" => "cublas",
        "libcufft" | "libcufftw" => "cufft",
        "libcurand" => "curand",
        "libcusolver" | "libcusolverMg" => "cusolver",
        "libcusparse" => "cusparse",
        "libnvrtc" | "libnvrtc-builtins" => "nvrtc",
        "libcupti" => "cupti",
        "libnvjpeg" => "nvjpeg",
        s if s.starts_with("libnpp") => "npp",
        _ => return None,
    };
    let toolkit_named = matches!(name, "cudart" | "nvrtc" | "cupti");
    Some(if major == 10 && name == "cublas" && minor != "0" {
        "libcublas10".to_string()
    } else if major <= 10 || toolkit_named {
        format!("cuda-{name}-{major}-{minor}")
    } else {
        format!("lib{name}-{major}-{minor}")
    })
}

/// What installs `soname`, for the CUDA majors its name belongs to: the bundled tables for CUDA 12 and 13
/// (`rules::packages`), the naming rules above for CUDA 9 to 11. `None` for a name that is no CUDA library.
pub fn providers(soname: &str) -> Option<Providers> {
    let ided = identify(soname)?;
    let stem = soname.split(".so").next().unwrap_or(soname);
    let base = packages::providers(soname);
    let majors: Vec<u32> = if ided.cuda.is_empty() {
        base.as_ref().map(|b| b.majors.clone()).unwrap_or_default()
    } else {
        ided.cuda.clone()
    };
    let mut p = base.unwrap_or(Providers {
        soname: soname.to_string(),
        majors: Vec::new(),
        pip: Vec::new(),
        conda: None,
        deb: Vec::new(),
        rpm: Vec::new(),
        source: None,
    });
    if ided.kind == Kind::Driver {
        // The driver's libraries come with the driver, never from a package of the toolkit.
        return Some(Providers {
            majors: Vec::new(),
            pip: Vec::new(),
            conda: None,
            deb: Vec::new(),
            rpm: Vec::new(),
            source: None,
            ..p
        });
    }
    if ided.kind == Kind::Cudnn {
        // cuDNN's libraries (`libcudnn_ops.so.9` too) come from one package per cuDNN major and CUDA major:
        // `nvidia-cudnn-cuNN` on PyPI (the 8.x releases for CUDA 11 and 12, 9.x for 11 to 13), `libcudnn7`,
        // `libcudnn8` and `libcudnn9-cuda-NN` in NVIDIA's repositories.
        let own = ided.component.trim_start_matches("cuDNN ").to_string();
        let pip = ided.cuda.iter().filter(|m| **m >= 11).map(|m| PipProvider {
            name: format!("nvidia-cudnn-cu{m}"),
            cuda: *m,
            toolkit_extra: None,
            source: p.pip.iter().find(|d| d.cuda == *m).map_or(
                "PyPI: nvidia-cudnn-cu11, -cu12, -cu13 (docs/cuda-packages.md)".to_string(),
                |d| d.source.clone(),
            ),
        });
        let sys: Vec<String> = if own == "9" {
            ided.cuda.iter().map(|m| format!("libcudnn9-cuda-{m}")).collect()
        } else {
            vec![format!("libcudnn{own}")]
        };
        return Some(Providers {
            majors,
            pip: pip.collect(),
            conda: Some("cudnn".to_string()),
            deb: sys.clone(),
            rpm: sys,
            ..p
        });
    }
    // The tables list CUDA 12 and 13; a name of another major keeps only what installs that major.
    p.pip.retain(|d| majors.contains(&d.cuda));
    let keep = |names: &mut Vec<String>| {
        names.retain(|n| {
            majors
                .iter()
                .any(|m| n.contains(&format!("-{m}-")) || n.ends_with(&format!("-{m}")))
        });
    };
    keep(&mut p.deb);
    keep(&mut p.rpm);
    let minor = soname
        .split(".so.")
        .nth(1)
        .and_then(|t| t.split('.').nth(1))
        .and_then(|m| m.parse().ok())
        .filter(|_| ided.kind == Kind::Toolkit);
    for &m in majors.iter().filter(|m| **m <= 11) {
        if m == 11
            && let Some(name) = pip_cu11(stem, ided.kind)
        {
            p.pip.push(PipProvider {
                name: name.to_string(),
                cuda: 11,
                toolkit_extra: None,
                source: "PyPI: NVIDIA's nvidia-*-cu11 distributions (docs/cuda-packages.md)".to_string(),
            });
        }
        let sys = match ided.kind {
            Kind::Toolkit => system_old(stem, m, minor),
            Kind::Cudnn => match ided.component.as_str() {
                "cuDNN 7" => Some("libcudnn7".to_string()),
                "cuDNN 8" => Some("libcudnn8".to_string()),
                _ => Some(format!("libcudnn9-cuda-{m}")),
            },
            _ => None,
        };
        if let Some(s) = sys {
            if !p.deb.contains(&s) {
                p.deb.push(s.clone());
            }
            if !p.rpm.contains(&s) {
                p.rpm.push(s);
            }
        }
    }
    if majors.iter().all(|m| *m <= 11) && ided.kind == Kind::Toolkit {
        // CUDA up to 11 came to conda as one package, `cudatoolkit`, one build per release.
        p.conda = Some("cudatoolkit".to_string());
    }
    p.majors = majors;
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuda(s: &str) -> Vec<u32> {
        identify(s).map(|i| i.cuda).unwrap_or_default()
    }

    #[test]
    fn every_cuda_major_from_9_to_13() {
        assert_eq!(cuda("libcudart.so.9.0"), [9]);
        assert_eq!(cuda("libcudart.so.10.1"), [10]);
        assert_eq!(identify("libcudart.so.10.1").unwrap().releases, "CUDA 10.1");
        assert_eq!(cuda("libcudart.so.11.0"), [11]);
        assert_eq!(cuda("libcudart.so.12"), [12]);
        assert_eq!(cuda("libcudart.so.13"), [13]);
        assert_eq!(cuda("libcublas.so.10.0"), [10]);
        assert_eq!(cuda("libcublas.so.11"), [11]);
        assert_eq!(cuda("libcusparse.so.11"), [11]);
        assert_eq!(cuda("libcusparse.so.12"), [12, 13]);
        assert_eq!(cuda("libcusolver.so.10"), [10, 11]);
        assert_eq!(cuda("libcusolver.so.11"), [11, 12]);
        assert_eq!(cuda("libcufft.so.11"), [12]);
        assert_eq!(cuda("libnvrtc.so.11.2"), [11]);
        assert_eq!(cuda("libnppc.so.11"), [11]);
        assert_eq!(cuda("libcudnn.so.8"), [10, 11, 12]);
        assert_eq!(cuda("libcudnn_ops_infer.so.8"), [10, 11, 12]);
        assert_eq!(cuda("libcudnn.so.7"), [8, 9, 10]);
        assert_eq!(cuda("libcudnn.so.5"), [7, 8]);
        assert_eq!(cuda("libcudart.so.7.5"), [7]);
        assert_eq!(cuda("libcudart.so.8.0"), [8]);
        assert_eq!(identify("libcudnn.so.9").unwrap().component, "cuDNN 9");
        assert_eq!(identify("libcuda.so.1").unwrap().kind, Kind::Driver);
        assert!(identify("libfoo.so.1").is_none());
        assert!(identify("libstdc++.so.6").is_none());
    }

    #[test]
    fn packages_follow_the_major_of_the_name() {
        let p = providers("libcublas.so.11").unwrap();
        assert_eq!(p.majors, [11]);
        assert_eq!(
            p.pip.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            ["nvidia-cublas-cu11"]
        );
        assert_eq!(p.deb, ["libcublas-11-N"]);
        assert_eq!(p.conda.as_deref(), Some("cudatoolkit"));
        let p = providers("libcudart.so.10.1").unwrap();
        assert!(p.pip.is_empty());
        assert_eq!(p.deb, ["cuda-cudart-10-1"]);
        let p = providers("libcublas.so.10").unwrap();
        assert_eq!(p.deb, ["libcublas10"]);
        let p = providers("libcudnn.so.8").unwrap();
        assert!(p.deb.contains(&"libcudnn8".to_string()));
        assert!(p.pip.iter().any(|d| d.name == "nvidia-cudnn-cu11"));
        // CUDA 12 and 13 come from the bundled tables, unchanged.
        let p = providers("libcudart.so.12").unwrap();
        assert_eq!(p.pip[0].name, "nvidia-cuda-runtime-cu12");
        assert_eq!(p.deb, ["cuda-cudart-12-N"]);
        let p = providers("libcusolver.so.11").unwrap();
        assert_eq!(p.majors, [11, 12]);
        assert!(p.pip.iter().any(|d| d.name == "nvidia-cusolver-cu12"));
        assert!(p.pip.iter().any(|d| d.name == "nvidia-cusolver-cu11"));
        assert!(providers("libcuda.so.1").unwrap().pip.is_empty());
    }
}
