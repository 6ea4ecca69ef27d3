//! `NVIDIA_DRIVER_CAPABILITIES`: which of the driver's user-space files the toolkit mounts into a GPU container,
//! and where (`nvidia-container-runtime-hook`'s capability handling, libnvidia-container `src/nvc_info.c` and
//! `src/nvc_container.c`; `docs/container-toolkit.md`, "Driver capabilities").

use serde::Serialize;

/// One driver capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Capability {
    /// CUDA and OpenCL: `libcuda.so.1`, the PTX JIT, NVVM, the MPS binaries.
    Compute,
    /// NVML and `nvidia-smi`.
    Utility,
    /// Video encode and decode (NVENC, NVDEC, VDPAU).
    Video,
    /// OpenGL, EGL, Vulkan, OptiX.
    Graphics,
    /// X11 display: the `/dev/nvidia-modeset` device, no library of its own.
    Display,
    /// 32-bit copies of the selected libraries.
    Compat32,
    /// NGX (DLSS).
    Ngx,
}

impl Capability {
    /// Every capability, in the toolkit's `all` order.
    pub const ALL: [Capability; 7] = [
        Capability::Compute,
        Capability::Compat32,
        Capability::Graphics,
        Capability::Utility,
        Capability::Video,
        Capability::Display,
        Capability::Ngx,
    ];

    /// The name in `NVIDIA_DRIVER_CAPABILITIES`.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Compute => "compute",
            Capability::Utility => "utility",
            Capability::Video => "video",
            Capability::Graphics => "graphics",
            Capability::Display => "display",
            Capability::Compat32 => "compat32",
            Capability::Ngx => "ngx",
        }
    }

    fn parse(s: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// Where the capability set came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapsSource {
    /// `NVIDIA_DRIVER_CAPABILITIES` unset or empty: `utility,compute`.
    Default,
    /// `NVIDIA_DRIVER_CAPABILITIES` as set.
    Env,
    /// Unset on a legacy image (`CUDA_VERSION` without `NVIDIA_REQUIRE_CUDA`): every capability.
    LegacyAll,
}

/// The capabilities the toolkit will use, or the hook's refusal of a name it does not know.
pub fn resolve(value: Option<&str>, legacy: bool) -> Result<(Vec<Capability>, CapsSource), String> {
    let (mut caps, source) = match value {
        None if legacy => (Capability::ALL.to_vec(), CapsSource::LegacyAll),
        None | Some("") => (
            vec![Capability::Utility, Capability::Compute],
            CapsSource::Default,
        ),
        Some(v) => {
            let names: Vec<&str> = v.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            if names.contains(&"all") {
                (Capability::ALL.to_vec(), CapsSource::Env)
            } else {
                let known: Vec<Capability> = names.iter().filter_map(|n| Capability::parse(n)).collect();
                let unknown: Vec<&str> = names
                    .iter()
                    .copied()
                    .filter(|n| Capability::parse(n).is_none())
                    .collect();
                if !unknown.is_empty() {
                    return Err(unknown.join(","));
                }
                (known, CapsSource::Env)
            }
        }
    };
    caps.sort();
    caps.dedup();
    Ok((caps, source))
}

/// What kind of file is injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    /// A shared library, mounted into the image's library directory; `ldconfig` then makes its SONAME link.
    Library,
    /// A 32-bit shared library (`compat32`).
    Library32,
    /// A program, mounted into `/usr/bin`.
    Binary,
}

/// One driver file the toolkit looks for on the node and mounts when the node has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InjectedFile {
    /// The file's name as the toolkit looks it up (`libcuda.so`, `nvidia-smi`).
    pub name: String,
    /// The name programs load it by, once `ldconfig` has run in the container (`libcuda.so.1`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soname: Option<String>,
    /// The file mounted, with the node's driver version when known (`libcuda.so.580.159.04`).
    pub file: String,
    /// The path inside the container.
    pub path: String,
    /// The capability that brings it.
    pub capability: Capability,
    /// Library or binary.
    pub kind: FileKind,
}

/// (library the toolkit looks for, SONAME when it is stable across drivers).
const COMPUTE_LIBS: &[(&str, Option<&str>)] = &[
    ("libcuda.so", Some("libcuda.so.1")),
    ("libcudadebugger.so", Some("libcudadebugger.so.1")),
    ("libnvidia-opencl.so", Some("libnvidia-opencl.so.1")),
    ("libnvidia-gpucomp.so", None),
    (
        "libnvidia-ptxjitcompiler.so",
        Some("libnvidia-ptxjitcompiler.so.1"),
    ),
    ("libnvidia-fatbinaryloader.so", None),
    ("libnvidia-allocator.so", Some("libnvidia-allocator.so.1")),
    ("libnvidia-compiler.so", None),
    ("libnvidia-pkcs11.so", None),
    ("libnvidia-pkcs11-openssl3.so", None),
    ("libnvidia-nvvm.so", Some("libnvidia-nvvm.so.4")),
    ("libnvidia-tileiras.so", None),
];
const UTILITY_LIBS: &[(&str, Option<&str>)] = &[
    ("libnvidia-ml.so", Some("libnvidia-ml.so.1")),
    ("libnvidia-cfg.so", Some("libnvidia-cfg.so.1")),
    ("libnvidia-nscq.so", None),
];
const VIDEO_LIBS: &[(&str, Option<&str>)] = &[
    ("libvdpau_nvidia.so", Some("libvdpau_nvidia.so.1")),
    ("libnvidia-encode.so", Some("libnvidia-encode.so.1")),
    ("libnvidia-opticalflow.so", Some("libnvidia-opticalflow.so.1")),
    ("libnvcuvid.so", Some("libnvcuvid.so.1")),
];
const GRAPHICS_LIBS: &[(&str, Option<&str>)] = &[
    ("libnvidia-eglcore.so", None),
    ("libnvidia-glcore.so", None),
    ("libnvidia-tls.so", None),
    ("libnvidia-glsi.so", None),
    ("libnvidia-fbc.so", Some("libnvidia-fbc.so.1")),
    ("libnvidia-ifr.so", Some("libnvidia-ifr.so.1")),
    ("libnvidia-rtcore.so", None),
    ("libnvoptix.so", Some("libnvoptix.so.1")),
    ("libGLX_nvidia.so", Some("libGLX_nvidia.so.0")),
    ("libEGL_nvidia.so", Some("libEGL_nvidia.so.0")),
    ("libGLESv2_nvidia.so", Some("libGLESv2_nvidia.so.2")),
    ("libGLESv1_CM_nvidia.so", Some("libGLESv1_CM_nvidia.so.1")),
    ("libnvidia-glvkspirv.so", None),
    ("libnvidia-cbl.so", None),
];
const NGX_LIBS: &[(&str, Option<&str>)] = &[("libnvidia-ngx.so", Some("libnvidia-ngx.so.1"))];
const UTILITY_BINS: &[&str] = &[
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nv-fabricmanager",
];
const COMPUTE_BINS: &[&str] = &["nvidia-cuda-mps-control", "nvidia-cuda-mps-server"];

fn libs_of(c: Capability) -> &'static [(&'static str, Option<&'static str>)] {
    match c {
        Capability::Compute => COMPUTE_LIBS,
        Capability::Utility => UTILITY_LIBS,
        Capability::Video => VIDEO_LIBS,
        Capability::Graphics => GRAPHICS_LIBS,
        Capability::Ngx => NGX_LIBS,
        Capability::Display | Capability::Compat32 => &[],
    }
}

/// Whether `soname` names one of the driver's own user-space libraries, of any capability (`libcuda.so.1`,
/// `libnvidia-ml.so.1`, `libnvidia-ptxjitcompiler.so.1`, …): the driver installs them on the machine that runs
/// the program (and the toolkit mounts them into its containers), so they are that machine's, never a
/// package's. The one list is the toolkit's above.
pub fn is_driver_library(soname: &str) -> bool {
    Capability::ALL.iter().flat_map(|c| libs_of(*c)).any(|(name, _)| {
        soname
            .strip_prefix(name)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    })
}

fn bins_of(c: Capability) -> &'static [&'static str] {
    match c {
        Capability::Compute => COMPUTE_BINS,
        Capability::Utility => UTILITY_BINS,
        _ => &[],
    }
}

/// How the image lays out its libraries, which decides where the toolkit mounts the driver's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageLayout {
    /// The image is Debian-like (`/etc/debian_version` exists): libraries go into the multiarch directory
    /// (`/usr/lib/x86_64-linux-gnu`), otherwise into `/usr/lib64`.
    pub multiarch: bool,
    /// The image's machine: `x86_64` or `aarch64`.
    pub machine: String,
}

impl Default for ImageLayout {
    /// An Ubuntu x86-64 image, as NVIDIA's CUDA images mostly are.
    fn default() -> ImageLayout {
        ImageLayout {
            multiarch: true,
            machine: "x86_64".to_string(),
        }
    }
}

impl ImageLayout {
    /// Where the driver's libraries land.
    pub fn lib_dir(&self) -> String {
        if self.multiarch {
            format!("/usr/lib/{}-linux-gnu", self.machine)
        } else {
            "/usr/lib64".to_string()
        }
    }

    /// Where 32-bit libraries land (`compat32`); `None` where the machine has no 32-bit ABI the driver ships.
    pub fn lib32_dir(&self) -> Option<&'static str> {
        (self.machine == "x86_64").then_some(if self.multiarch {
            "/usr/lib/i386-linux-gnu"
        } else {
            "/usr/lib"
        })
    }
}

/// The files the toolkit looks for on the node for `caps`, and where each lands in the container.
pub fn injected(caps: &[Capability], driver: Option<&str>, layout: &ImageLayout) -> Vec<InjectedFile> {
    let file = |name: &str| match driver {
        Some(v) => format!("{name}.{v}"),
        None => format!("{name}.<driver version>"),
    };
    let lib_dir = layout.lib_dir();
    let mut out = Vec::new();
    for &c in caps {
        for (name, soname) in libs_of(c) {
            let f = file(name);
            out.push(InjectedFile {
                name: name.to_string(),
                soname: soname.map(str::to_string),
                path: format!("{lib_dir}/{f}"),
                file: f,
                capability: c,
                kind: FileKind::Library,
            });
        }
        for bin in bins_of(c) {
            out.push(InjectedFile {
                name: bin.to_string(),
                soname: None,
                file: bin.to_string(),
                path: format!("/usr/bin/{bin}"),
                capability: c,
                kind: FileKind::Binary,
            });
        }
    }
    if caps.contains(&Capability::Compat32)
        && let Some(dir32) = layout.lib32_dir()
    {
        let libs32: Vec<InjectedFile> = out
            .iter()
            .filter(|f| f.kind == FileKind::Library)
            .map(|f| InjectedFile {
                path: format!("{dir32}/{}", f.file),
                capability: Capability::Compat32,
                kind: FileKind::Library32,
                ..f.clone()
            })
            .collect();
        out.extend(libs32);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_legacy() {
        assert_eq!(
            resolve(None, false),
            Ok((
                vec![Capability::Compute, Capability::Utility],
                CapsSource::Default
            ))
        );
        assert_eq!(resolve(Some(""), true).map(|r| r.1), Ok(CapsSource::Default));
        assert_eq!(resolve(None, true).map(|r| r.0.len()), Ok(7));
        assert_eq!(resolve(Some("all"), false).map(|r| r.0.len()), Ok(7));
        assert_eq!(
            resolve(Some(" utility , video"), false).map(|r| r.0),
            Ok(vec![Capability::Utility, Capability::Video])
        );
        assert_eq!(resolve(Some("compute,gpu"), false), Err("gpu".into()));
        // "none" is not a capability the hook accepts.
        assert_eq!(resolve(Some("none"), false), Err("none".into()));
    }

    #[test]
    fn libraries_land_in_the_image_library_directory() {
        let files = injected(
            &[Capability::Compute, Capability::Utility],
            Some("580.159.04"),
            &ImageLayout::default(),
        );
        let cuda = files.iter().find(|f| f.name == "libcuda.so").unwrap();
        assert_eq!(cuda.soname.as_deref(), Some("libcuda.so.1"));
        assert_eq!(cuda.path, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04");
        assert!(files.iter().any(|f| f.path == "/usr/bin/nvidia-smi"));
        assert!(files.iter().any(|f| f.name == "libnvidia-nvvm.so"));
        let rhel = ImageLayout {
            multiarch: false,
            machine: "x86_64".into(),
        };
        let files = injected(&[Capability::Utility, Capability::Compat32], None, &rhel);
        assert!(
            files
                .iter()
                .any(|f| f.path == "/usr/lib64/libnvidia-ml.so.<driver version>")
        );
        assert!(
            files
                .iter()
                .any(|f| f.path == "/usr/lib/libnvidia-ml.so.<driver version>")
        );
        assert!(!files.iter().any(|f| f.name == "libcuda.so"));
    }
}
