//! `ptx-jit-disabled` and `ptx-jit-cache-only`: PTX the GPU must JIT-compile while `CUDA_DISABLE_PTX_JIT=1`
//! forbids it, and whether the JIT cache may stand in.
//!
//! CUDA C++ Programming Guide, "CUDA Environment Variables" (`docs/jit-cache.md`): with
//! `CUDA_DISABLE_PTX_JIT=1` a kernel with no compatible binary code fails to load. A compile cached by an
//! earlier run is still loaded (observed on an H200 with driver 580.159.04: a PTX-only program ran from a warm
//! cache), so with the cache on and a directory that holds entries the outcome depends on what it holds,
//! which only the driver can tell: a warning. With the cache off (`CUDA_CACHE_DISABLE=1`), missing or empty,
//! it fails: CUDA error 223 (`cudaErrorJitCompilationDisabled`), or 209 from a direct module load.

use super::kernel_image::{Image, select};
use super::target::Target;
use crate::facts::{BinaryFacts, HostFacts};
use crate::findings::{Code, Finding};
use crate::matrix::Matrix;

/// Is PTX JIT turned off for the diagnosed program (`CUDA_DISABLE_PTX_JIT` set to anything but `0`)?
pub fn jit_disabled(h: &HostFacts) -> Option<&str> {
    h.env
        .vars
        .get("CUDA_DISABLE_PTX_JIT")
        .map(|v| v.trim())
        .filter(|v| !v.is_empty() && *v != "0")
}

/// The finding for binary `b` on target `t` when the image the driver would pick is PTX and JIT is disabled.
pub fn check(b: &BinaryFacts, t: &Target, h: Option<&HostFacts>, m: &Matrix) -> Option<Finding> {
    let h = h?;
    let value = jit_disabled(h)?;
    let ptx = match select(b, t.cc, m) {
        Image::Ptx(p) | Image::LinkedPtx(p) => p,
        Image::Sass(_) | Image::None => return None,
    };
    let cache = h.jit_cache.as_ref();
    let warm = cache.is_some_and(|c| c.may_hold_compiles());
    let mut f = if warm {
        Finding::new(
            Code::PtxJitCacheOnly,
            format!(
                "{}: {} has only PTX {} to run and CUDA_DISABLE_PTX_JIT={value} forbids compiling it: it runs \
                 only if the JIT cache holds an earlier compile",
                b.path, t.label, ptx.arch
            ),
            format!(
                "Do not rely on the cache (it is per user, per driver, and evicts old entries): rebuild with SASS \
                 for this GPU (nvcc -gencode arch=compute_{sm},code=sm_{sm}), or unset CUDA_DISABLE_PTX_JIT. To \
                 see the outcome without the cache, run once with CUDA_CACHE_PATH set to an empty directory.",
                sm = t.cc.sm()
            ),
        )
    } else {
        Finding::new(
            Code::PtxJitDisabled,
            format!(
                "{}: {} has only PTX {} to run and CUDA_DISABLE_PTX_JIT={value} forbids compiling it: loading \
                 fails with CUDA error 223 (PTX JIT compilation was disabled)",
                b.path, t.label, ptx.arch
            ),
            format!(
                "Unset CUDA_DISABLE_PTX_JIT, or rebuild with SASS for this GPU (nvcc -gencode \
                 arch=compute_{sm},code=sm_{sm}).",
                sm = t.cc.sm()
            ),
        )
    };
    f = f
        .because(format!(
            "{}: no SASS runs on CC {}; the driver would JIT-compile PTX {}",
            b.path, t.cc, ptx.arch
        ))
        .because(format!("CUDA_DISABLE_PTX_JIT={value} in the environment"));
    f = f.because(match cache {
        Some(c) => c.describe(),
        None => "no JIT cache location: neither CUDA_CACHE_PATH nor HOME is set".to_string(),
    });
    for ev in &t.evidence {
        f = f.because(ev.clone());
    }
    Some(f.at(&b.path))
}
