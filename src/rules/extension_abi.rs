//! `framework-extension-abi-mismatch`: in one Python environment, a compiled extension of torch (torchvision,
//! torchaudio, xformers, flash-attn, vLLM) pins in its `Requires-Dist` the exact torch release it was built
//! against (`torch==2.5.1`), and another torch is installed. The facts are `python::site`'s; docs:
//! `data/codes/framework-extension-abi-mismatch.md`.

use super::jax_versions::broken;
use crate::facts::python::PythonEnvFacts;
use crate::findings::{Code, Finding};

/// One finding per extension whose exact pin of torch the installed torch breaks. A range (`torch>=2.0`) says
/// nothing of the release the extension was compiled against, so only `==` pins are judged.
pub fn framework_extension_abi_mismatch(env: &PythonEnvFacts) -> Vec<Finding> {
    broken(&env.dists, |n| n != "torch", |n| n == "torch")
        .into_iter()
        .filter(|b| b.specifier.starts_with("==") && !b.specifier.contains(','))
        .map(|b| {
            let built = b.specifier.trim_start_matches('=');
            let mut f = Finding::new(
                Code::FrameworkExtensionAbiMismatch,
                format!(
                    "In {}, {} {} was built against torch {built} (it requires torch{}) but torch {} is installed: \
                     its compiled extension refers to torch {built}'s C++ symbols, so importing it fails with \
                     `undefined symbol: _ZN…` or it crashes at its first call",
                    env.site, b.by.name, b.by.version, b.specifier, b.installed.version
                ),
                format!(
                    "Install the {} release built for torch {}, or the torch it was built for: `pip install \
                     'torch{}' '{}=={}'` (install both in one command so pip keeps them together). `pip check` \
                     lists the broken requirement.",
                    b.by.name, b.installed.version, b.specifier, b.by.name, b.by.version
                ),
            );
            if let Some(object) = env.objects.first() {
                f = f.at(object);
            }
            f.because(format!("{}:{}: Requires-Dist: {}", b.by.metadata, b.line.line, b.line.text))
                .because(format!("{}: Version: {}", b.installed.metadata, b.installed.version))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::metadata::parse_metadata;

    fn env(metadata: &[&str]) -> PythonEnvFacts {
        PythonEnvFacts {
            site: "/v/lib/python3.12/site-packages".into(),
            objects: vec!["/v/lib/python3.12/site-packages/torchvision/_C.so".into()],
            dists: metadata
                .iter()
                .enumerate()
                .map(|(i, m)| parse_metadata(m, &format!("/m{i}/METADATA")).unwrap())
                .collect(),
        }
    }

    const TORCHVISION: &str = "Name: torchvision\nVersion: 0.20.1\nRequires-Dist: numpy\n\
        Requires-Dist: torch==2.5.1\nRequires-Dist: pillow!=8.3.*,>=5.3.0\n";

    #[test]
    fn an_exact_pin_another_torch_breaks() {
        let f = framework_extension_abi_mismatch(&env(&[TORCHVISION, "Name: torch\nVersion: 2.6.0+cu124\n"]));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message
                .contains("torchvision 0.20.1 was built against torch 2.5.1")
        );
        assert!(f[0].message.contains("but torch 2.6.0+cu124 is installed"));
        assert!(f[0].evidence[0].contains("/m0/METADATA:4: Requires-Dist: torch==2.5.1"));
    }

    #[test]
    fn the_pinned_torch_or_a_range_is_no_finding() {
        // A local label (`+cu124`) is the same release for a pin without one.
        assert!(
            framework_extension_abi_mismatch(&env(&[TORCHVISION, "Name: torch\nVersion: 2.5.1+cu124\n"]))
                .is_empty()
        );
        let ranged = "Name: flash-attn\nVersion: 2.7.0\nRequires-Dist: torch\nRequires-Dist: einops\n";
        assert!(
            framework_extension_abi_mismatch(&env(&[ranged, "Name: torch\nVersion: 2.6.0\n"])).is_empty()
        );
    }
}
