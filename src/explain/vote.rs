//! One recogniser's vote ([`Hit`]) and the slug it names, resolved against the catalogue of findings and the
//! causes only `explain` knows ([`resolve`]). A leaf below the recognisers (`known`) and the ranking
//! (`mod.rs`), which calls them.

use super::{causes, sonames};
use crate::findings;

/// One recogniser's vote.
#[derive(Debug, Clone)]
pub(super) struct Hit {
    pub(super) slug: &'static str,
    pub(super) score: u32,
    pub(super) why: String,
    pub(super) check: String,
    pub(super) libraries: Vec<sonames::Identified>,
}

/// The slug's catalogue entry or cause: its static slug, finding code and CUDA error.
pub(super) fn resolve(slug: &str) -> Option<(&'static str, Option<&'static str>, Option<u32>)> {
    if let Some(c) = findings::lookup(slug) {
        return Some((c.slug, Some(c.code), c.cuda_error));
    }
    causes::lookup(slug).map(|c| (c.slug, None, c.cuda_error))
}
