//! CUDA libraries that are loaded with `dlopen`, not DT_NEEDED, so that NEEDED-only tools (ldd's list,
//! libtree, lddtree, auditwheel) never show them.
//!
//! Two kinds of evidence, both read from the object itself:
//! - the CUDA runtime, linked statically (nvcc's default: the main program defines `cudaRuntimeGetVersion`)
//!   or dynamically (`libcudart.so.N`), always loads the driver with `dlopen("libcuda.so.1")`
//!   (`docs/compatibility.md`, "Binary compatibility and the environment");
//! - a library name stored as a string in the object's `.rodata` that names a CUDA library meant for
//!   `dlopen`: `libnvidia-ml.so.1` (NVML, frameworks), `libnvrtc-builtins.so.X.Y` (NVRTC), `libnvJitLink.so.N`,
//!   cuDNN's sub-libraries (`libcudnn_ops.so.9`, …), `libcupti.so.N`. Only whole strings that are a plain
//!   soname count: format strings (`libnvrtc-builtins.so.%d.%d`) and messages are ignored.
//!
//! Each request is then resolved by [`super::search`] as a `dlopen` from that object (glibc `_dl_open` with
//! `__RTLD_CALLMAP`): its RPATH chain or RUNPATH applies.

use super::cache::LdCache;
use super::platform::Platform;
use crate::facts::loader::{How, LoadedObject, Step};
use crate::system::Root;
use std::collections::HashMap;
use std::path::Path;

/// Names a CUDA library keeps for `dlopen` but opens only when a particular API of it runs, which a
/// framework's first GPU use (tensors, a matmul, a convolution through cuDNN's graph API) does not run: cuDNN 9's
/// legacy-API sub-libraries `libcudnn_adv` and `libcudnn_cnn` (RNNs, the legacy convolution API), and the
/// toolkit's `libnvrtc.so` that `libcudnn_graph` names for run-time fusion. Measured on the GPU machine: after a
/// convolution neither torch 2.11 nor JAX 0.11 with cuDNN 9.19 mapped any of them (JAX mapped `libcudnn_ops`).
/// The loader's own resolution (`inspect`) still follows them: there a missing sub-library is worth knowing.
pub fn opened_by_one_api(caller_soname: Option<&str>, name: &str) -> bool {
    let caller = caller_soname.unwrap_or("");
    (caller.starts_with("libcudnn")
        && (name.starts_with("libcudnn_adv.") || name.starts_with("libcudnn_cnn.")))
        || (caller.starts_with("libcudnn_graph.") && name.starts_with("libnvrtc."))
}

/// Is `s` a plain soname (`lib` + name + `.so` + numeric suffixes)?
pub fn is_soname(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("lib") else {
        return false;
    };
    let Some((stem, tail)) = rest.split_once(".so") else {
        return false;
    };
    !stem.is_empty()
        && stem
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'+')
        && (tail.is_empty()
            || tail.strip_prefix('.').is_some_and(|t| {
                t.split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            }))
}

/// The `dlopen`s `obj` makes, with the reason for each. `cudart_static`: `obj` is the main program and links
/// the static CUDA runtime. `strings` are its `.rodata` strings that hold a CUDA library name.
pub fn requests(obj: &LoadedObject, cudart_static: bool, strings: &[(String, u64)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, why: String| {
        if obj.needed.iter().any(|n| n == name)
            || obj.soname.as_deref() == Some(name)
            || out.iter().any(|(n, _)| n == name)
        {
            return;
        }
        out.push((name.to_string(), why));
    };
    let is_cudart = obj
        .soname
        .as_deref()
        .is_some_and(|s| s.starts_with("libcudart.so"));
    if cudart_static {
        add(
            "libcuda.so.1",
            "the statically linked CUDA runtime loads the driver with dlopen(\"libcuda.so.1\")".into(),
        );
    } else if is_cudart {
        add(
            "libcuda.so.1",
            "the CUDA runtime loads the driver with dlopen(\"libcuda.so.1\")".into(),
        );
    }
    for (s, off) in strings {
        // An unversioned `libcuda.so` is the toolkit's link-time stub name, not what anything dlopens; a
        // library's own name without its version (`libcupti.so` in `libcupti.so.13`) is about itself.
        let own = obj.soname.as_deref().is_some_and(|so| {
            so.strip_prefix(s.as_str())
                .is_some_and(|t| t.is_empty() || t.starts_with('.'))
        });
        if !is_soname(s) || s == "libcuda.so" || own {
            continue;
        }
        add(
            s,
            format!(
                "{} names \"{s}\" in .rodata (file offset 0x{off:x}), a library it loads with dlopen",
                obj.path
            ),
        );
    }
    out
}

/// Directory listings (file names) kept for a walk: several stems are looked for in the same directories.
pub type Listings = HashMap<String, Vec<String>>;

/// The versioned names of the stem `stem` (`libnvJitLink.so`, which cuSPARSE names in its `.rodata`) that a
/// `dlopen` of one of them from the object whose search for the bare stem left `trail` could find: files
/// `stem.N[.M…]` in the directories that search tried, in its order, then the names of the cache entries of
/// that form this loader accepts. Each name once, in the order first met. The library's code decides which
/// version it asks for, if any; this is what the machine offers it.
pub fn completions(
    root: &Root,
    trail: &[Step],
    cache: Option<&LdCache>,
    platform: &Platform,
    stem: &str,
    listings: &mut Listings,
) -> Vec<String> {
    let prefix = format!("{stem}.");
    let mut out: Vec<String> = Vec::new();
    let mut add = |n: &str| {
        if n.starts_with(&prefix) && is_soname(n) && !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    };
    for step in trail {
        let (Some(dir), false) = (&step.dir, step.how == How::LdSoCache) else {
            continue;
        };
        // A directory's shared objects only, for every stem asked of it (a site-packages holds hundreds of names).
        let names = listings.entry(dir.clone()).or_insert_with(|| {
            root.read_dir_names(Path::new(dir), |n| is_soname(&n.to_string_lossy()))
                .unwrap_or_default()
                .iter()
                .map(|n| n.to_string_lossy().into_owned())
                .collect()
        });
        for n in names.iter() {
            add(n);
        }
    }
    if let Some(cache) = cache {
        for e in cache.entries.iter().filter(|e| platform.cache_accepts(e)) {
            add(&e.name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonames() {
        assert!(is_soname("libcuda.so.1"));
        assert!(is_soname("libnvrtc-builtins.so.12.4"));
        assert!(is_soname("libcudnn_ops.so.9"));
        assert!(!is_soname("libnvrtc-builtins.so.%d.%d"));
        assert!(!is_soname("cannot load libcuda.so.1"));
        assert!(!is_soname("libcuda.so.1x"));
    }

    #[test]
    fn cudart_loads_libcuda() {
        let mut o = LoadedObject {
            soname: Some("libcudart.so.12".into()),
            path: "/x/libcudart.so.12".into(),
            ..LoadedObject::default()
        };
        let r = requests(&o, false, &[]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, "libcuda.so.1");
        o.soname = Some("libz.so.1".into());
        assert!(requests(&o, false, &[]).is_empty());
        let r = requests(&o, false, &[("libnvidia-ml.so.1".into(), 0x10)]);
        assert_eq!(r[0].0, "libnvidia-ml.so.1");
        // A library's own name, unversioned, is not a load.
        let cupti = LoadedObject {
            soname: Some("libcupti.so.13".into()),
            ..LoadedObject::default()
        };
        assert!(requests(&cupti, false, &[("libcupti.so".into(), 0x10)]).is_empty());
        // A program with the static runtime loads the driver too; a stub name in its strings does not count.
        let r = requests(&o, true, &[("libcuda.so".into(), 0x20)]);
        assert_eq!(r.len(), 1);
        assert!(r[0].1.contains("statically linked"));
    }
}
