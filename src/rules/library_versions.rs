//! `cuda-library-too-old`: a pip package states, in its `Requires-Dist`, the lowest release of an NVIDIA
//! library it works with (torch 2.11.0: `nvidia-cudnn-cu13==9.19.0.56`; jax-cuda12-plugin:
//! `nvidia-cudnn-cu12>=9.8,<10.0`), and the copy of that library the loader resolves for the package's own
//! object is older: a toolkit's or the system's copy found through `LD_LIBRARY_PATH`, `ld.so.cache` or the
//! default directories before (or instead of) the pip one.
//!
//! The built-against version is not in the ELF; the package's metadata is where it is stated
//! ([`crate::loader::origin`] reads it beside the requester, with each line's parsed [`Floor`]). The pip
//! distribution is matched to the library through `data/pip_cuda.toml` (which SONAMEs it installs), and the two
//! versions compare as the libraries number themselves: an NVIDIA distribution's version is the full version of
//! the library it installs (`nvidia-cudnn-cu13 9.19.0.56` installs cuDNN 9.19.0, whose toolkit file is
//! `libcudnn.so.9.19.0`; `nvidia-cublas-cu12 12.4.5.8` installs `libcublas.so.12.4.5.8`; `nvidia-nccl-cu12
//! 2.21.5` installs `libnccl.so.2.21.5`), so only as many numbers are compared as the loaded file's name gives
//! (`docs/library-versions.md` has the mapping and its sources). `cuda-toolkit[...]` is not compared: its
//! version is the CUDA release's, not its libraries'.
//!
//! An error: the frameworks check the loaded library against the one they were built with and stop (JAX's
//! start-up version check refuses an older cuDNN, cuBLAS, cuFFT, cuSPARSE, cuSOLVER or NCCL; torch raises
//! "cuDNN version incompatibility" for an older cuDNN minor), and a library without such a check fails later,
//! at the first call into a function the old copy lacks.

use crate::facts::loader::{Floor, FloorOp, Installed, MetadataLine, PipDist};
use crate::facts::loader::{How, Library, Resolution};
use crate::findings::{Code, Finding};

/// One finding per package requirement and loaded copy older than the requirement's floor; the objects of
/// the package that request it are named in the evidence.
pub fn cuda_library_too_old(r: &Resolution) -> Vec<Finding> {
    let Some(table) = super::packages::pip() else {
        return Vec::new();
    };
    // Keyed by the METADATA line and the loaded file: a package's several objects requesting it are one cause.
    let mut out: Vec<((String, usize, String), Finding)> = Vec::new();
    for l in &r.libraries {
        let Some(loaded) = l.object.and_then(|i| r.objects.get(i)) else {
            continue;
        };
        let Some(have) = loaded.version.as_deref() else {
            continue;
        };
        let Some(origin) = r.origins.iter().find(|o| o.object == l.needed_by) else {
            continue;
        };
        let Installed::Pip { dist: Some(dist), .. } = &origin.installed else {
            continue;
        };
        for line in &dist.requires {
            let Some(floor) = &line.floor else { continue };
            let installs = table
                .dist(&floor.name)
                .is_some_and(|d| d.sonames.contains(&l.soname));
            if !installs || !older(have, floor) {
                continue;
            }
            let key = (dist.metadata.clone(), line.line, loaded.realpath.clone());
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some((_, f)) => f.evidence.push(format!("{} also requests it", l.needed_by)),
                None => out.push((key, finding(r, l, dist, line, floor, have))),
            }
        }
    }
    out.into_iter().map(|(_, f)| f).collect()
}

/// The loaded version is older than the floor, compared on as many numbers as the loaded file's name gives.
/// A different major is another SONAME's business (the pin describes another library), and says nothing.
fn older(have: &str, floor: &Floor) -> bool {
    let Some(have) = crate::facts::loader::release(have) else {
        return false;
    };
    if have.first() != floor.release.first() {
        return false;
    }
    let n = have.len().min(floor.release.len());
    have[..n] < floor.release[..n]
}

fn finding(
    r: &Resolution,
    l: &Library,
    dist: &PipDist,
    line: &MetadataLine,
    floor: &Floor,
    have: &str,
) -> Finding {
    let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let loaded = l.object.and_then(|i| r.objects.get(i));
    let path = loaded.map_or("", |o| o.path.as_str());
    let real = loaded.map_or("", |o| o.realpath.as_str());
    let (how, dir) = found(r, l);
    let requirement = line.text.split(';').next().unwrap_or(&line.text).trim();
    let shown = if real != path {
        format!("{real}, as {path}")
    } else {
        real.to_string()
    };
    let message = format!(
        "{}'s package {} {} requires {requirement}; the loaded {} is {have} ({shown}, found through {})",
        name(&l.needed_by),
        dist.name,
        dist.version,
        l.soname,
        how.label(None, &l.needed_by)
    );
    let want = match floor.op {
        FloorOp::Pinned => format!("{} {}", floor.name, floor.version),
        FloorOp::AtLeast => format!("{} {} or later", floor.name, floor.version),
    };
    let place = match (how, dir.as_deref()) {
        (How::LdLibraryPath, Some(d)) => format!(
            "Take {d} off LD_LIBRARY_PATH (or put the directory of the pip copy before it) so the loader finds {want}; "
        ),
        (How::LdSoCache | How::DefaultPath, _) => format!(
            "The system's older copy {real} is what the loader finds: remove that copy (or its package) or give the \
             requester a search path to {want} first; "
        ),
        _ => format!("Make the loader find {want} before {real}; "),
    };
    let help = format!(
        "{place}install the release the package asks for with `pip install '{requirement}'` (torch and the other \
         frameworks find the pip copy through their RPATH once no other copy comes first)."
    );
    Finding::new(Code::CudaLibraryTooOld, message, help)
        .at(&r.binary)
        .because(format!(
            "{}:{}: Requires-Dist: {} ({} {} owns {} by its RECORD)",
            dist.metadata, line.line, line.text, dist.name, dist.version, l.needed_by
        ))
        .because(format!(
            "{} → {real}: found through {}{}",
            l.soname,
            how.label(None, &l.needed_by),
            dir.map(|d| format!(" ({d})")).unwrap_or_default()
        ))
        .because(format!(
            "version {have} read from the file name {}, compared with {} on {} number{}",
            name(real),
            floor.version,
            have.split('.').count().min(floor.release.len()),
            if have.split('.').count().min(floor.release.len()) == 1 {
                ""
            } else {
                "s"
            }
        ))
}

/// How the loaded object was found, and in which directory: for a request answered by an object already
/// loaded, the request that loaded it.
fn found(r: &Resolution, l: &Library) -> (How, Option<String>) {
    let first = if l.how == How::AlreadyLoaded {
        r.libraries
            .iter()
            .find(|o| o.object == l.object && o.how != How::AlreadyLoaded)
            .unwrap_or(l)
    } else {
        l
    };
    let dir = first
        .trail
        .iter()
        .rev()
        .find(|s| s.result == crate::facts::loader::StepResult::Found)
        .and_then(|s| s.dir.clone());
    (first.how, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(text: &str) -> Floor {
        Floor::of(text).unwrap()
    }

    #[test]
    fn compares_as_many_numbers_as_the_file_name_gives() {
        let cudnn = floor("nvidia-cudnn-cu13==9.19.0.56");
        assert!(older("9.14.0", &cudnn));
        assert!(
            !older("9.19.0", &cudnn),
            "9.19.0 is the pinned 9.19.0.56's library"
        );
        assert!(!older("9", &cudnn), "the pip file names only the major");
        assert!(!older("9.20.1", &cudnn));
        assert!(!older("8.9.7", &cudnn), "another major: another SONAME");
        let ranged = floor("nvidia-cudnn-cu12>=9.8,<10.0");
        assert!(!older("9.14.0", &ranged));
        assert!(older("9.1.0", &ranged));
        let cublas = floor("nvidia-cublas-cu12==12.4.5.8");
        assert!(older("12.4.2.65", &cublas));
        assert!(!older("12.4.5.8", &cublas));
        let nccl = floor("nvidia-nccl-cu12==2.21.5");
        assert!(older("2.18.1", &nccl));
        assert!(!older("2.21.5", &nccl));
    }
}
