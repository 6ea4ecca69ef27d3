//! Causes that `explain` names but no rule of cudadiag observes (yet): what a pasted message points at when
//! the cause is in the history of the machine (a systemd reload), in where a tool looks for the driver, or in
//! a harmless warning. Each has a document in
//! `data/causes/<slug>.md`, in the template of the findings' documents, compiled in. Their slugs never collide
//! with a finding's: when a rule comes to observe one, the cause becomes a finding of the same slug and leaves
//! this list.

/// One cause only `explain` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cause {
    /// Stable public name, kebab-case.
    pub slug: &'static str,
    /// One line saying what it is.
    pub summary: &'static str,
    /// The CUDA error it gives, when it gives one.
    pub cuda_error: Option<u32>,
    /// `data/causes/<slug>.md`.
    pub doc: &'static str,
}

macro_rules! causes {
    ($($slug:literal, $err:expr, $summary:literal;)*) => {
        /// Every cause, by slug.
        pub const CAUSES: &[Cause] = &[
            $(Cause {
                slug: $slug,
                summary: $summary,
                cuda_error: $err,
                doc: include_str!(concat!("../../data/causes/", $slug, ".md")),
            },)*
        ];
    };
}

causes! {
    "container-lost-device-rules", Some(999),
        "a running container lost its GPU device rules (a systemd reload on the host rewrote its cgroup)";
    "container-driver-root-empty", None,
        "the container toolkit looks for the driver in a root that no driver fills";
    "wsl-libcuda-not-symlink", None,
        "WSL's warning that libcuda.so.1 is not a symbolic link: harmless";
    "tensorrt-optional", None,
        "TensorFlow's or ONNX Runtime's warning that TensorRT is missing: harmless unless TensorRT is wanted";
}

/// The cause of a slug.
pub fn lookup(slug: &str) -> Option<&'static Cause> {
    let slug = slug.trim();
    CAUSES.iter().find(|c| c.slug == slug)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_have_documents_and_never_a_findings_slug() {
        for c in CAUSES {
            assert!(
                crate::findings::lookup(c.slug).is_none(),
                "{} is a finding's slug",
                c.slug
            );
            assert!(c.doc.starts_with(&format!("# {}\n", c.slug)), "{}: title", c.slug);
            let mut at = 0;
            for h in [
                "## What it means",
                "## Why it happens",
                "## How to check",
                "## How to fix",
                "## Sources",
            ] {
                let pos = c.doc[at..]
                    .find(h)
                    .unwrap_or_else(|| panic!("{}: missing or misplaced {h}", c.slug));
                at += pos + h.len();
            }
        }
        assert_eq!(
            lookup("wsl-libcuda-not-symlink").map(|c| c.slug),
            Some("wsl-libcuda-not-symlink")
        );
        assert!(lookup("no-kernel-image").is_none());
    }
}
