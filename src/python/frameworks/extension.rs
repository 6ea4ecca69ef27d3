//! Python's path finder for the extension modules of one package: which file `import pkg.sub.mod` opens.
//!
//! CPython's `FileFinder` tries the suffixes of `importlib.machinery.EXTENSION_SUFFIXES` in order:
//! `.cpython-XY-<platform>.so` (the interpreter's own tag), `.abi3.so`, then `.so`. A file tagged for another
//! interpreter (`.cpython-312-…` under 3.11) is not a module of this one. The tag is known when the
//! interpreter's version is; without it, any `.cpython-` file counts.

use super::Ctx;
use crate::system::Root;
use std::path::{Path, PathBuf};

/// The extension module files of one package directory, each subdirectory listed once, when first asked for.
pub struct Modules<'r> {
    root: &'r Root,
    /// The package directory (`…/site-packages/numpy`).
    base: PathBuf,
    /// `cpython-311-`: the interpreter's tag, when its version is known.
    tag: Option<String>,
    /// The `.so` names of each subdirectory read so far (`""`, `_core`, `_internal`).
    listings: Vec<(String, Vec<String>)>,
}

impl<'r> Modules<'r> {
    /// The modules of the package at `base`, for the interpreter of `ctx`.
    pub fn new(ctx: &Ctx<'r>, base: PathBuf) -> Modules<'r> {
        let tag = ctx
            .python
            .syspath
            .version
            .as_ref()
            .map(|v| format!("cpython-{}{}-", v.major, v.minor));
        Modules {
            root: ctx.root,
            base,
            tag,
            listings: Vec::new(),
        }
    }

    /// The package directory.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The file of module `rel` (`_C`, `_core/_multiarray_umath`, `_internal/driver`), by the suffixes CPython
    /// tries in order; `None` when no file answers.
    pub fn file(&mut self, rel: &str) -> Option<PathBuf> {
        let (sub, stem) = rel.rsplit_once('/').unwrap_or(("", rel));
        let at = self.listing(sub);
        let rank = |n: &str| {
            let rest = n.strip_prefix(stem)?.strip_prefix('.')?;
            if rest == "so" {
                Some(2)
            } else if rest == "abi3.so" {
                Some(1)
            } else {
                let tagged = rest.strip_prefix("cpython-")?;
                let ours = self.tag.as_deref().is_none_or(|t| rest.starts_with(t));
                (ours && tagged.ends_with(".so")).then_some(0)
            }
        };
        self.listings[at]
            .1
            .iter()
            .filter_map(|n| rank(n).map(|r| (r, n)))
            .min_by_key(|(r, _)| *r)
            .map(|(_, n)| self.base.join(sub).join(n))
    }

    /// Files of module `rel` built for another CPython (`_C.cpython-312-x86_64-linux-gnu.so` under 3.11):
    /// what explains a `ModuleNotFoundError` when [`Modules::file`] finds none. Empty without a known tag.
    pub fn for_other_interpreters(&mut self, rel: &str) -> Vec<String> {
        let Some(tag) = self.tag.clone() else {
            return Vec::new();
        };
        let (sub, stem) = rel.rsplit_once('/').unwrap_or(("", rel));
        let at = self.listing(sub);
        self.listings[at]
            .1
            .iter()
            .filter(|n| {
                n.strip_prefix(stem)
                    .and_then(|r| r.strip_prefix(".cpython-"))
                    .is_some_and(|r| !format!("cpython-{r}").starts_with(&tag))
            })
            .cloned()
            .collect()
    }

    /// The index of subdirectory `sub`'s listing, read on first use (unreadable: empty).
    fn listing(&mut self, sub: &str) -> usize {
        if let Some(i) = self.listings.iter().position(|(s, _)| s == sub) {
            return i;
        }
        let names = self
            .root
            .read_dir_names(&self.base.join(sub), |n| n.as_encoded_bytes().ends_with(b".so"))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|n| n.into_string().ok())
            .collect();
        self.listings.push((sub.to_string(), names));
        self.listings.len() - 1
    }
}
