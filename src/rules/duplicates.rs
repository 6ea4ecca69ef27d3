//! `duplicate-cuda-library`: two copies of one CUDA library (same library, same major) are loaded into one
//! process from different files.
//!
//! ld.so loads a soname once and reuses it for every later request (ld.so(8); glibc `_dl_map_object` matches
//! names against loaded objects), so two copies come from different names for the same library: a framework's
//! vendored, renamed copy (PyTorch wheels ship `libcudart-<hash>.so.12`, `libnvToolsExt-<hash>.so.1`, as
//! auditwheel renames bundled libraries) next to the plain `libcudart.so.12` another extension needs, or a
//! `dlopen` by full path. Each copy keeps its own state: two CUDA runtimes in one process do not share
//! their contexts' runtime bookkeeping, streams or memory pools, which gives the "invalid resource handle" and
//! "initialization error" reports of mixed torch / JAX / CuPy processes. A warning, not an error: many such
//! processes work. Sources: `docs/duplicate-libraries.md`.
//!
//! This reads the loader's resolution only; it lives apart from `rules::loader` on purpose.

use crate::facts::loader::Resolution;
use crate::findings::{Code, Finding};
use std::collections::BTreeMap;

/// The CUDA libraries whose duplicates matter (their state is per copy).
const LIBS: &[&str] = &[
    "libcudart",
    "libcublas",
    "libcublasLt",
    "libcudnn",
    "libnccl",
    "libnvrtc",
    "libnvJitLink",
    "libcufft",
    "libcusparse",
    "libcusolver",
    "libcurand",
];

/// `libcudart-9335f6a2.so.12` → (`libcudart`, `12`): the library with an auditwheel hash suffix removed, and its
/// major.
pub fn family(name: &str) -> Option<(&str, &str)> {
    let (stem, tail) = name.split_once(".so.")?;
    let major = tail
        .split('.')
        .next()
        .filter(|m| m.bytes().all(|b| b.is_ascii_digit()))?;
    let base = match stem.rsplit_once('-') {
        Some((b, hash)) if hash.len() == 8 && hash.bytes().all(|c| c.is_ascii_hexdigit()) => b,
        _ => stem,
    };
    LIBS.contains(&base).then_some((base, major))
}

/// One finding per library with two or more copies in the resolution of one binary.
pub fn duplicate_cuda_libraries(r: &Resolution) -> Vec<Finding> {
    // An object is loaded for sure when some request for it is not a run-time `dlopen` of a name its caller
    // keeps in its data (a DT_NEEDED entry, a preload), or when nothing requested it (the binary itself): such a
    // `dlopen` happens only when the caller takes that path (cuDNN opens `libnvrtc.so` for its run-time compiled
    // engines alone). One pass over the requests.
    let (mut asked, mut sure) = (vec![false; r.objects.len()], vec![false; r.objects.len()]);
    for l in &r.libraries {
        if let Some(i) = l.object.filter(|&i| i < r.objects.len()) {
            asked[i] = true;
            sure[i] |= !l.dlopen || l.preload;
        }
    }
    let mut copies: BTreeMap<(&str, &str), Vec<(&crate::facts::loader::LoadedObject, bool)>> =
        BTreeMap::new();
    for (i, o) in r.objects.iter().enumerate() {
        let name = o
            .soname
            .as_deref()
            .unwrap_or_else(|| o.path.rsplit('/').next().unwrap_or(&o.path));
        if let Some(key) = family(name) {
            let list = copies.entry(key).or_default();
            if !list.iter().any(|(c, _)| c.realpath == o.realpath) {
                list.push((o, sure[i] || !asked[i]));
            }
        }
    }
    copies
        .into_iter()
        .filter(|(_, list)| list.len() > 1)
        .map(|((lib, major), list)| {
            let certain = list.iter().filter(|(_, sure)| *sure).count();
            if certain < 2 {
                let mut f = Finding::new(
                    Code::DuplicateCudaLibrary,
                    format!(
                        "{}: a second copy of {lib} (CUDA {major}) may be loaded into the process: one is opened \
                         at run time by name, only when its caller needs it",
                        r.binary
                    ),
                    format!(
                        "Nothing to do while the process works. To be sure of one copy, put the directory of the \
                         loaded {lib} first where the run-time open searches (LD_LIBRARY_PATH), or take the other \
                         copy's directory off the loader's path."
                    ),
                )
                .at(&r.binary);
                f.severity = crate::findings::Severity::Note;
                for (o, sure) in list {
                    f = f.because(format!(
                        "{} ({})",
                        o.path,
                        if sure { "loaded" } else { "opened at run time by name, when needed" }
                    ));
                }
                return f;
            }
            let mut f = Finding::new(
                Code::DuplicateCudaLibrary,
                format!(
                    "{}: {} copies of {lib} (CUDA {major}) are loaded into one process, each with its own state",
                    r.binary,
                    list.len()
                ),
                format!(
                    "Load one copy: install the frameworks from builds that share the pip `nvidia-*` packages \
                     (instead of bundling their own {lib}), or take the directory of the other copy off \
                     LD_LIBRARY_PATH. If the process works, this is a warning only."
                ),
            )
            .at(&r.binary);
            for (o, _) in list {
                f = f.because(format!(
                    "{} ({}{})",
                    o.path,
                    o.soname.as_deref().map(|s| format!("SONAME {s}")).unwrap_or_else(|| "no SONAME".into()),
                    if o.dlopen { ", dlopen" } else { "" }
                ));
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(family("libcudart-9335f6a2.so.12"), Some(("libcudart", "12")));
        assert_eq!(family("libcudart.so.12.4.127"), Some(("libcudart", "12")));
        assert_eq!(family("libcublasLt.so.13"), Some(("libcublasLt", "13")));
        assert_eq!(family("libcudart-abc.so.12"), None, "not a hash: another library");
        assert_eq!(family("libc.so.6"), None);
    }
}
