//! `jax-plugin-version-mismatch`: in one Python environment, jax, jaxlib and JAX's CUDA plugin
//! (`jax-cudaNN-plugin`, `jax-cudaNN-pjrt`) are installed at versions that their own `Requires-Dist` pins
//! rule out. The facts are `python::site`'s; docs: `data/codes/jax-plugin-version-mismatch.md`.

use super::pins::admits;
use crate::facts::Installed;
use crate::facts::loader::{MetadataLine, PipDist};
use crate::facts::python::PythonEnvFacts;
use crate::findings::{Code, Finding};
use crate::inspect::pep508::{Env, normalise, requirement};

/// The distributions of JAX's CUDA stack, PEP 503-normalised.
const JAX: &[&str] = &[
    "jax",
    "jaxlib",
    "jax-cuda12-plugin",
    "jax-cuda12-pjrt",
    "jax-cuda13-plugin",
    "jax-cuda13-pjrt",
];

/// A pin of one installed distribution that another installed one does not satisfy.
pub(super) struct Broken<'a> {
    /// The distribution that pins.
    pub by: &'a PipDist,
    /// Its `Requires-Dist` line.
    pub line: &'a MetadataLine,
    /// The specifier, without spaces (`<=0.4.35,>=0.4.34`).
    pub specifier: String,
    /// The installed distribution it names.
    pub installed: &'a PipDist,
}

/// The pins among `dists` (by `pinning` distributions, of `pinned` ones) that the installed versions break. A
/// line whose marker rules Linux out is not judged; a line of an extra is judged when the extra looks chosen
/// (see [`chosen`]: `jax[cuda12]` pins jaxlib exactly, plain `jax` by a range).
pub(super) fn broken<'a>(
    dists: &'a [PipDist],
    pinning: impl Fn(&str) -> bool,
    pinned: impl Fn(&str) -> bool,
) -> Vec<Broken<'a>> {
    let env = Env::default();
    let mut out = Vec::new();
    for by in dists.iter().filter(|d| pinning(&normalise(&d.name))) {
        let reqs: Vec<_> = by
            .requires
            .iter()
            .filter_map(|l| Some((l, requirement(&l.text, &env)?)))
            .collect();
        for (line, req) in &reqs {
            if req.installed == Installed::Never || req.specifier.is_empty() || !pinned(&req.name) {
                continue;
            }
            if req.installed == Installed::WithExtra && !chosen(req.extra.as_deref(), &reqs, dists) {
                continue;
            }
            let Some(installed) = dists.iter().find(|d| normalise(&d.name) == req.name) else {
                continue;
            };
            if admits(&req.specifier, &installed.version) == Some(false) {
                out.push(Broken {
                    by,
                    line,
                    specifier: req.specifier.clone(),
                    installed,
                });
            }
        }
    }
    out
}

/// Was a distribution installed with `extra`? Taken as chosen when a line of that extra names an installed
/// distribution that no line outside the extras names (`jax[cuda12]` brings `jax-cuda12-plugin`; jaxlib,
/// which plain `jax` requires too, says nothing). Core metadata records no extra chosen.
fn chosen(
    extra: Option<&str>,
    reqs: &[(&MetadataLine, crate::facts::Requirement)],
    dists: &[PipDist],
) -> bool {
    let Some(extra) = extra else {
        return false;
    };
    reqs.iter()
        .filter(|(_, r)| r.extra.as_deref() == Some(extra))
        .any(|(_, r)| {
            dists.iter().any(|d| normalise(&d.name) == r.name)
                && !reqs
                    .iter()
                    .any(|(_, o)| o.installed == Installed::Always && o.name == r.name)
        })
}

/// The finding, when a pin among jax, jaxlib and the CUDA plugins is broken in `env`.
pub fn jax_plugin_version_mismatch(env: &PythonEnvFacts) -> Option<Finding> {
    let is_jax = |n: &str| JAX.contains(&n);
    let broken = broken(&env.dists, is_jax, is_jax);
    if broken.is_empty() {
        return None;
    }
    let pairs: Vec<String> = broken
        .iter()
        .map(|b| {
            format!(
                "{} {} requires {}{} but {} {} is installed",
                b.by.name, b.by.version, b.installed.name, b.specifier, b.installed.name, b.installed.version
            )
        })
        .collect();
    let cuda = env
        .dists
        .iter()
        .find_map(|d| {
            let n = normalise(&d.name);
            ["cuda13", "cuda12"].into_iter().find(|c| n.contains(c))
        })
        .unwrap_or("cuda12");
    let jax = env
        .dists
        .iter()
        .find(|d| normalise(&d.name) == "jax")
        .map_or(String::new(), |d| format!("=={}", d.version));
    let mut f = Finding::new(
        Code::JaxPluginVersionMismatch,
        format!(
            "In {}, {}: `import jax` raises at its jaxlib version check, or the CUDA plugin fails to initialise \
             and JAX silently runs on the CPU",
            env.site,
            pairs.join("; ")
        ),
        format!(
            "Install jax, jaxlib and the CUDA plugin of one release together: `pip install -U \"jax[{cuda}]{jax}\"` \
             (it pins jaxlib, jax-{cuda}-plugin and jax-{cuda}-pjrt to jax's release). \
             `JAX_PLATFORMS=cuda python -c \"import jax; print(jax.devices())\"` then fails loudly instead of falling \
             back to the CPU if something is still wrong."
        ),
    );
    if let Some(object) = env.objects.first() {
        f = f.at(object);
    }
    for b in &broken {
        f = f
            .because(format!(
                "{}:{}: Requires-Dist: {}",
                b.by.metadata, b.line.line, b.line.text
            ))
            .because(format!(
                "{}: Version: {}",
                b.installed.metadata, b.installed.version
            ));
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::metadata::parse_metadata;

    fn env(metadata: &[&str]) -> PythonEnvFacts {
        PythonEnvFacts {
            site: "/v/lib/python3.12/site-packages".into(),
            objects: vec!["/v/lib/python3.12/site-packages/jaxlib/xla_extension.so".into()],
            dists: metadata
                .iter()
                .enumerate()
                .map(|(i, m)| parse_metadata(m, &format!("/m{i}/METADATA")).unwrap())
                .collect(),
        }
    }

    /// jax 0.4.35's pins (its `METADATA`): jaxlib by range, the plugin under the `cuda12` extra.
    const JAX_0435: &str = "Name: jax\nVersion: 0.4.35\nRequires-Dist: jaxlib<=0.4.35,>=0.4.34\n\
        Requires-Dist: jaxlib==0.4.35; extra == \"cuda12\"\n\
        Requires-Dist: jax-cuda12-plugin[with_cuda]<=0.4.35,>=0.4.35; extra == \"cuda12\"\n";
    const PLUGIN_0435: &str =
        "Name: jax-cuda12-plugin\nVersion: 0.4.35\nRequires-Dist: jax-cuda12-pjrt==0.4.35\n";

    #[test]
    fn an_older_jaxlib_and_pjrt_break_the_pins() {
        let e = env(&[
            JAX_0435,
            "Name: jaxlib\nVersion: 0.4.30\n",
            PLUGIN_0435,
            "Name: jax-cuda12-pjrt\nVersion: 0.4.33\n",
        ]);
        let f = jax_plugin_version_mismatch(&e).unwrap();
        assert_eq!(f.code, Code::JaxPluginVersionMismatch);
        assert!(
            f.message
                .contains("jax 0.4.35 requires jaxlib<=0.4.35,>=0.4.34 but jaxlib 0.4.30 is installed")
        );
        assert!(
            f.message
                .contains("jax-cuda12-plugin 0.4.35 requires jax-cuda12-pjrt==0.4.35")
        );
        assert!(f.help.contains("jax[cuda12]==0.4.35"));
        assert!(
            f.evidence
                .iter()
                .any(|e| e.contains("/m0/METADATA:3: Requires-Dist: jaxlib<=0.4.35"))
        );
    }

    #[test]
    fn one_release_everywhere_or_no_plugin_is_no_finding() {
        let together = env(&[
            JAX_0435,
            "Name: jaxlib\nVersion: 0.4.35\n",
            PLUGIN_0435,
            "Name: jax-cuda12-pjrt\nVersion: 0.4.35\n",
        ]);
        assert!(jax_plugin_version_mismatch(&together).is_none());
        // A pin of another major's plugin, not installed, is not judged; nor is torch's.
        let cpu = env(&[
            JAX_0435,
            "Name: jaxlib\nVersion: 0.4.34\n",
            "Name: torch\nVersion: 2.5.1\n",
        ]);
        assert!(jax_plugin_version_mismatch(&cpu).is_none());
    }
}
