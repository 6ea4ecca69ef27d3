//! Core metadata (`*.dist-info/METADATA`): a distribution's name, version and `Requires-Dist` lines with
//! the lower bound each sets. One reader for the loader's owners (`cuda-library-too-old`'s pins) and for the
//! environment's distributions (the JAX and extension pins).

use crate::facts::loader::{Floor, FloorOp, MetadataLine, PipDist, release};

// Reading a floor takes the PEP 508 parser of `inspect`, so it lives with the reader, not the facts.
impl Floor {
    /// The floor of a `Requires-Dist` value (`nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"`): the
    /// highest lower bound of its clauses (`>=9.8,<10.0` → 9.8). `None` when no clause sets one, when a
    /// version is not a plain release (an epoch, a local version), or when the marker rules Linux out.
    pub fn of(text: &str) -> Option<Floor> {
        let req = crate::inspect::pep508::requirement(text, &crate::inspect::pep508::Env::default())?;
        if req.installed == crate::facts::Installed::Never {
            return None;
        }
        let mut best: Option<Floor> = None;
        for clause in req.specifier.split(',').filter(|c| !c.is_empty()) {
            let (op, rest) = if let Some(v) = clause.strip_prefix("===") {
                (FloorOp::Pinned, v)
            } else if let Some(v) = clause.strip_prefix("==") {
                (FloorOp::Pinned, v)
            } else if let Some(v) = clause.strip_prefix(">=").or_else(|| clause.strip_prefix("~=")) {
                (FloorOp::AtLeast, v)
            } else if let Some(v) = clause.strip_prefix('>') {
                (FloorOp::AtLeast, v)
            } else {
                continue;
            };
            let version = rest.strip_suffix(".*").unwrap_or(rest);
            let Some(release) = release(version) else {
                continue;
            };
            if best.as_ref().is_none_or(|b| release > b.release) {
                best = Some(Floor {
                    name: req.name.clone(),
                    op,
                    version: version.to_string(),
                    release,
                });
            }
        }
        best
    }
}

/// The name, version and `Requires-Dist` lines of a core-metadata file (its headers: the lines before the
/// first blank line), each requirement with the floor it sets.
pub fn parse_metadata(text: &str, path: &str) -> Option<PipDist> {
    let h = headers(text)?;
    Some(PipDist {
        name: h.name,
        version: h.version,
        metadata: path.to_string(),
        requires: h
            .requires
            .into_iter()
            .map(|(line, text)| MetadataLine {
                line,
                floor: Floor::of(&text),
                text,
            })
            .collect(),
    })
}

/// A core-metadata file's headers that name it and what it requires.
pub struct Headers {
    /// `Name:`, as written.
    pub name: String,
    /// `Version:`, as written.
    pub version: String,
    /// Each `Requires-Dist` value and its line (from 1).
    pub requires: Vec<(usize, String)>,
}

/// The headers of [`parse_metadata`] as they are written, without reading each requirement's floor (PEP 508
/// parses: a Python environment's two hundred distributions are read at every run, their floors seldom).
pub fn headers(text: &str) -> Option<Headers> {
    let (mut name, mut version, mut requires) = (None, None, Vec::new());
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Version:") {
            version = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Requires-Dist:") {
            requires.push((i + 1, v.trim().to_string()));
        }
    }
    Some(Headers {
        name: name?,
        version: version?,
        requires,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_headers_with_line_numbers() {
        let m = parse_metadata(
            "Metadata-Version: 2.4\nName: torch\nVersion: 2.11.0\nRequires-Dist: filelock\n\
             Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n\n\
             Requires-Dist: not a header\n",
            "/sp/torch-2.11.0.dist-info/METADATA",
        )
        .unwrap();
        assert_eq!((m.name.as_str(), m.version.as_str()), ("torch", "2.11.0"));
        assert_eq!(m.requires.len(), 2);
        assert_eq!(m.requires[1].line, 5);
        assert!(m.requires[1].text.starts_with("nvidia-cudnn-cu13==9.19.0.56"));
        assert!(parse_metadata("Name: x\n", "M").is_none(), "no version");
    }

    #[test]
    fn floors_of_requirements() {
        let f = Floor::of("nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"").unwrap();
        assert_eq!(
            (f.name.as_str(), f.op, f.version.as_str(), f.release.as_slice()),
            (
                "nvidia-cudnn-cu13",
                FloorOp::Pinned,
                "9.19.0.56",
                &[9, 19, 0, 56][..]
            )
        );
        let f = Floor::of("nvidia-cudnn-cu12<10.0,>=9.8; extra == \"with-cuda\"").unwrap();
        assert_eq!((f.op, f.release.as_slice()), (FloorOp::AtLeast, &[9, 8][..]));
        assert_eq!(Floor::of("nvidia-nccl-cu12==2.21.*").unwrap().version, "2.21");
        assert_eq!(
            Floor::of("nvidia-cublas-cu12~=12.4").unwrap().op,
            FloorOp::AtLeast
        );
        assert!(Floor::of("nvidia-cudnn-cu12<10").is_none(), "no lower bound");
        assert!(Floor::of("filelock").is_none());
        assert!(
            Floor::of("nvidia-cudnn-cu12==9.1.0.70; platform_system == \"Windows\"").is_none(),
            "not on Linux"
        );
        assert_eq!(release("12.8.0rc1"), Some(vec![12, 8, 0]));
        assert_eq!(release("1!2.0"), None);
        assert_eq!(release("x"), None);
    }
}
