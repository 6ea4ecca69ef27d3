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
//! The loaded copy's version is the most exact one known: for a copy pip installed (the distribution whose
//! `RECORD` lists the file, wherever it is: [`crate::python::dist_info`]), that distribution's `Version`
//! (`nvidia-cudnn-cu13` 9.14.0.64, whose `libcudnn.so.9` names only its major); otherwise what the file name
//! gives. Two versions of one distribution compare on every number.
//!
//! What fails, and when, decides the severity:
//! - an older **minor** release (9.14 under a 9.26 pin) is an error. torch checks cuDNN lazily, at its first
//!   cuDNN use (the first convolution, `torch.backends.cudnn.version()`), not at import, and refuses a runtime
//!   cuDNN of another major or of an older minor than the one it was compiled with ("cuDNN version
//!   incompatibility"; `torch/backends/cudnn/__init__.py`); JAX's CUDA plugin checks cuDNN, cuBLAS, cuFFT,
//!   cuSPARSE, cuSOLVER and NCCL at start-up on major and minor; a library without such a check fails at the
//!   first call into a function the old copy lacks;
//! - an older release of the **same minor** (9.26.0.10 under 9.26.0.51) is a warning: the pin is not met (`pip
//!   check` says so), but the frameworks' own checks compare major and minor only, and pass.

use crate::facts::loader::{Floor, FloorOp, Installed, LoadedObject, MetadataLine, PipDist};
use crate::facts::loader::{How, Library, Resolution};
use crate::findings::{Code, Finding, Severity};

/// Where the loaded copy's version was read.
enum Source<'a> {
    /// The file name (`libcudnn.so.9.14.0`).
    FileName,
    /// The pip distribution that installed the file, and the directory it was installed into.
    Dist(&'a PipDist, &'a str),
}

/// The loaded copy's version, as exactly as it is known.
struct Have<'a> {
    version: &'a str,
    source: Source<'a>,
}

/// The version of `loaded` for a request of `soname`: its pip distribution's, when the distribution that
/// installed the file is one that installs this SONAME; else its file name's.
fn have<'a>(r: &'a Resolution, loaded: &'a LoadedObject, soname: &str) -> Option<Have<'a>> {
    let table = super::packages::pip()?;
    let pip = r.origins.iter().find_map(|o| match &o.installed {
        Installed::Pip { site, dist: Some(d) } if o.object == loaded.path => Some((d, site.as_str())),
        _ => None,
    });
    if let Some((d, site)) = pip
        && table
            .dist(&crate::inspect::pep508::normalise(&d.name))
            .is_some_and(|t| t.sonames.iter().any(|s| s == soname))
    {
        return Some(Have {
            version: &d.version,
            source: Source::Dist(d, site),
        });
    }
    loaded.version.as_deref().map(|version| Have {
        version,
        source: Source::FileName,
    })
}

/// How much older the loaded copy is than the floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gap {
    /// An older minor release (or major.minor is all that could be compared): refused.
    Minor,
    /// The same major and minor, an older patch or build: the pin is not met, the checks pass.
    Patch,
}

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
        let Some(have) = have(r, loaded, &l.soname) else {
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
            let Some(gap) = installs.then(|| older(have.version, floor)).flatten() else {
                continue;
            };
            let key = (dist.metadata.clone(), line.line, loaded.realpath.clone());
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some((_, f)) => f.evidence.push(format!("{} also requests it", l.needed_by)),
                None => out.push((key, finding(r, l, dist, line, floor, &have, gap))),
            }
        }
    }
    out.into_iter().map(|(_, f)| f).collect()
}

/// How much older the loaded version is than the floor, compared on as many numbers as both give (a file
/// name may give three, a distribution's version four). A different major is another SONAME's business (the
/// pin describes another library), and says nothing.
fn older(have: &str, floor: &Floor) -> Option<Gap> {
    let have = crate::facts::loader::release(have)?;
    if have.first() != floor.release.first() {
        return None;
    }
    let n = have.len().min(floor.release.len());
    if have[..n] >= floor.release[..n] {
        return None;
    }
    let m = n.min(2);
    Some(if have[..m] < floor.release[..m] || n < 2 {
        Gap::Minor
    } else {
        Gap::Patch
    })
}

/// Is this torch's pin of a cuDNN library (checked by torch's own Python code, not at load)?
fn torch_cudnn(dist: &PipDist, soname: &str) -> bool {
    crate::inspect::pep508::normalise(&dist.name) == "torch" && soname.starts_with("libcudnn")
}

/// What the older copy does to the program, and when: torch's cuDNN check, else the general rule.
fn consequence(dist: &PipDist, soname: &str, floor: &Floor, have: &str, gap: Gap) -> String {
    let mm = |v: &[u64]| v.iter().take(2).map(u64::to_string).collect::<Vec<_>>().join(".");
    let have_mm = crate::facts::loader::release(have)
        .map(|v| mm(&v))
        .unwrap_or_default();
    match (torch_cudnn(dist, soname), gap) {
        (true, Gap::Minor) => format!(
            "torch raises \"cuDNN version incompatibility\" when torch.backends.cudnn.version() or \
             is_acceptable() runs (a cuDNN RNN: nn.LSTM, nn.GRU or nn.RNN on the GPU; code that asks for the cuDNN \
             version), not at import, and convolutions run on the older copy (cuDNN {have_mm} is older than the {} \
             it was compiled with)",
            mm(&floor.release)
        ),
        (true, Gap::Patch) => format!(
            "the pin is not met, but torch's own cuDNN check compares major and minor only ({have_mm}) and passes"
        ),
        (false, Gap::Minor) => {
            "a framework that checks it refuses it (JAX's CUDA plugin at start-up); a library \
             without such a check fails at the first call into a function the old copy lacks"
                .to_string()
        }
        (false, Gap::Patch) => {
            "the pin is not met (`pip check` reports it); the same minor release keeps its \
             interface, and the frameworks' checks (major and minor) pass"
                .to_string()
        }
    }
}

fn finding(
    r: &Resolution,
    l: &Library,
    dist: &PipDist,
    line: &MetadataLine,
    floor: &Floor,
    have: &Have<'_>,
    gap: Gap,
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
    let what = match &have.source {
        Source::Dist(d, _) => format!("{} {} (installed by pip: ", d.name, d.version),
        Source::FileName => format!("{} (", have.version),
    };
    let message = format!(
        "{}'s package {} {} requires {requirement}; the loaded {} is {what}{shown}, found through {}): {}",
        name(&l.needed_by),
        dist.name,
        dist.version,
        l.soname,
        how.label(None, &l.needed_by),
        consequence(dist, &l.soname, floor, have.version, gap)
    );
    let want = match floor.op {
        FloorOp::Pinned => format!("{} {}", floor.name, floor.version),
        FloorOp::AtLeast => format!("{} {} or later", floor.name, floor.version),
    };
    let help = match &have.source {
        // The pip copy is the one found: the environment's own package is too old.
        Source::Dist(d, site) => {
            // pip installs into a `--target` directory (no site-packages of an interpreter) only when told.
            let site_packages = site.ends_with("/site-packages") || site.ends_with("/dist-packages");
            let install = if site_packages {
                format!(
                    "pip install '{requirement}'` (with that environment's pip: `python -m pip`, or `uv pip install --python …`)"
                )
            } else {
                format!("pip install --upgrade --target {site} '{requirement}'`")
            };
            format!(
                "Install the release {} {} pins into its environment ({site}), replacing {} {}: `{install}.",
                dist.name, dist.version, d.name, d.version
            )
        }
        Source::FileName => {
            let place = match (how, dir.as_deref()) {
                (How::LdLibraryPath, Some(d)) => format!(
                    "Take {d} off LD_LIBRARY_PATH (or put the directory of the pip copy before it) so the loader \
                     finds {want}; "
                ),
                (How::LdSoCache | How::DefaultPath, _) => format!(
                    "The system's older copy {real} is what the loader finds: remove that copy (or its package) or \
                     give the requester a search path to {want} first; "
                ),
                _ => format!("Make the loader find {want} before {real}; "),
            };
            format!(
                "{place}install the release the package asks for with `pip install '{requirement}'` (torch and the \
                 other frameworks find the pip copy through their RPATH once no other copy comes first)."
            )
        }
    };
    let mut f = Finding::new(Code::CudaLibraryTooOld, message, help)
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
        ));
    let numbers = have.version.split('.').count().min(floor.release.len());
    let plural = if numbers == 1 { "" } else { "s" };
    f = f.because(match &have.source {
        Source::Dist(d, _) => format!(
            "version {} of {}, whose RECORD lists {real} ({}: Version), compared with {} on {numbers} number{plural}",
            have.version, d.name, d.metadata, floor.version
        ),
        Source::FileName => format!(
            "version {} read from the file name {}, compared with {} on {numbers} number{plural}",
            have.version,
            name(real),
            floor.version
        ),
    });
    if torch_cudnn(dist, &l.soname) {
        f = f.because(
            "torch.backends.cudnn checks in Python, lazily, at torch.backends.cudnn.version() and is_acceptable() \
             (which nn.RNN's flatten_parameters calls): the runtime cuDNN must have the compiled major and a minor \
             no older (PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK=1 skips the check); a convolution goes straight to \
             the C++ library and does not check (observed: torch 2.11 built against cuDNN 9.19 ran conv2d on an \
             H200 with the system's cuDNN 9.14)",
        );
    }
    // torch's cuDNN check stops only the code paths that ask it (above); a patch-level gap passes every check.
    if gap == Gap::Patch || torch_cudnn(dist, &l.soname) {
        f.severity = Severity::Warning;
    }
    f
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
        assert_eq!(older("9.14.0", &cudnn), Some(Gap::Minor));
        assert_eq!(
            older("9.19.0", &cudnn),
            None,
            "9.19.0 is the pinned 9.19.0.56's library"
        );
        assert_eq!(older("9", &cudnn), None, "the pip file names only the major");
        assert_eq!(older("9.20.1", &cudnn), None);
        assert_eq!(older("8.9.7", &cudnn), None, "another major: another SONAME");
        let ranged = floor("nvidia-cudnn-cu12>=9.8,<10.0");
        assert_eq!(older("9.14.0", &ranged), None);
        assert_eq!(older("9.1.0", &ranged), Some(Gap::Minor));
        let cublas = floor("nvidia-cublas-cu12==12.4.5.8");
        assert_eq!(older("12.4.2.65", &cublas), Some(Gap::Patch));
        assert_eq!(older("12.4.5.8", &cublas), None);
        let nccl = floor("nvidia-nccl-cu12==2.21.5");
        assert_eq!(older("2.18.1", &nccl), Some(Gap::Minor));
        assert_eq!(older("2.21.5", &nccl), None);
    }

    /// A distribution's version has every number: 9.14.0.64 under 9.26.0.51 is a minor behind (torch refuses
    /// it), 9.26.0.10 only a build behind (torch's check passes).
    #[test]
    fn a_distributions_version_compares_on_every_number() {
        let cudnn = floor("nvidia-cudnn-cu13==9.26.0.51");
        assert_eq!(older("9.14.0.64", &cudnn), Some(Gap::Minor));
        assert_eq!(older("9.26.0.10", &cudnn), Some(Gap::Patch));
        assert_eq!(older("9.26.0.51", &cudnn), None);
        assert_eq!(older("9.27.0.1", &cudnn), None);
    }
}
