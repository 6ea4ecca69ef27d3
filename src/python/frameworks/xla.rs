//! What JAX's CUDA plugin and TensorFlow share: XLA's loader (`tsl::internal::DsoLoader`), which opens CUDA
//! libraries by the sonames its build names, and XLA's cuDNN rule at the first DNN operation; and the
//! reading of a loaded copy's version and of a wheel's pins that both models' rules and fixes need.
//! Sources: `docs/framework-jax-tensorflow.md`.

use super::{Ctx, Process};
use crate::findings::{Code, Finding};
use std::path::{Component, Path, PathBuf};

/// The sonames XLA builds at run time for a CUDA `major` build (`tsl::internal::DsoLoader`, names from the
/// build's `TF_*_VERSION`): cudart, cuBLAS, cuBLASLt, cuFFT, cuSOLVER, cuSPARSE, cuDNN, in the order
/// `TryDlopenCUDALibraries` opens them.
pub fn sonames(major: u8) -> [String; 7] {
    let (fft, solver) = if major >= 13 { (12, 12) } else { (11, 11) };
    [
        format!("libcudart.so.{major}"),
        format!("libcublas.so.{major}"),
        format!("libcublasLt.so.{major}"),
        format!("libcufft.so.{fft}"),
        format!("libcusolver.so.{solver}"),
        "libcusparse.so.12".to_string(),
        "libcudnn.so.9".to_string(),
    ]
}

/// The release numbers of the copy loaded at `index`: the version of the distribution whose `RECORD` lists
/// the file (a wheel's `libcusparse.so.12` carries none in its name), else the file name's.
pub fn loaded_release(ctx: &Ctx, p: &dyn Process, index: usize) -> Option<(Vec<u64>, String)> {
    let l = p.loaded().get(index)?;
    let paths = [lexical(Path::new(&l.path)), lexical(Path::new(&l.realpath))];
    if let Some(d) = ctx.python.owner(&[&paths[0], &paths[1]]) {
        let release = d.release()?.to_vec();
        return Some((release, format!("{} {}", d.name(), d.version())));
    }
    // A soname's major alone (`libcudnn.so.9`) is not a release: only a real file name with more says one.
    let v = l.version.as_deref()?;
    let release = crate::facts::loader::release(v).filter(|r| r.len() >= 2)?;
    Some((release, format!("the file name {}", l.realpath)))
}

/// `a/b/../c` → `a/c`, without touching the file system (the loader's `$ORIGIN/..` paths).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The pin of `wheel` in the plugin's `Requires-Dist` (`nvidia-cudnn-cu12<10.0,>=9.8`), for the fix.
pub fn pin(requires: &[String], wheel: &str) -> Option<String> {
    requires.iter().find_map(|r| {
        let spec = r.split(';').next().unwrap_or(r).trim();
        let name_end = spec
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(spec.len());
        (super::normalise(&spec[..name_end]) == super::normalise(wheel)).then(|| spec.replace(' ', ""))
    })
}

fn at(r: &[u64], i: usize) -> u64 {
    r.get(i).copied().unwrap_or(0)
}

/// The lower bound of a pin (`nvidia-cudnn-cu12<10.0,>=9.8` → `[9, 8]`).
pub fn floor_of(pin: &str) -> Option<Vec<u64>> {
    let at = pin.find(">=")?;
    let rest = &pin[at + 2..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    crate::facts::loader::release(rest[..end].trim_end_matches('.'))
}

/// XLA's cuDNN rule (`CudnnSupport::Init`, at the first DNN operation): the loaded cuDNN must have the
/// compiled major and a minor no older. `compiled` is the framework's own pin's lower bound (the version it
/// was built against is compiled in; its wheel pins the cuDNN it needs).
pub fn xla_cudnn_rule(
    ctx: &Ctx,
    p: &dyn Process,
    compiled: Option<Vec<u64>>,
    framework: &str,
    help: &str,
) -> Option<Finding> {
    let compiled = compiled?;
    let index = p.find("libcudnn.so.9").or_else(|| p.find("libcudnn.so.8"))?;
    let (loaded, from) = loaded_release(ctx, p, index)?;
    let ok = at(&loaded, 0) == at(&compiled, 0) && at(&loaded, 1) >= at(&compiled, 1);
    if ok {
        return None;
    }
    let v = |r: &[u64]| format!("{}.{}.{}", at(r, 0), at(r, 1), at(r, 2));
    let message = format!(
        "{framework}'s first cuDNN operation fails: Loaded runtime CuDNN library: {} but source was compiled \
         with: {}.  CuDNN library needs to have matching major version and equal or higher minor version. If \
         using a binary install, upgrade your CuDNN library.",
        v(&loaded),
        v(&compiled)
    );
    let path = p.loaded()[index].path.clone();
    Some(
        Finding::new(Code::CudaLibraryTooOld, message, help)
            .because(format!("the process loads {path} ({from})"))
            .because(format!(
                "{framework} needs cuDNN {}.{} or a later {}.x (its pin's lower bound); the error is \
                 `FAILED_PRECONDITION: DNN library initialization failed`",
                at(&compiled, 0),
                at(&compiled, 1),
                at(&compiled, 0)
            )),
    )
}
