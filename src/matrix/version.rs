//! Version numbers the matrix compares: CUDA versions (`12.4`), driver versions (`535.104.05`) and compute
//! capabilities (`9.0`).
//!
//! Driver versions are compared numerically per dotted component (`570.26` < `570.124.06`), never as strings,
//! and never across operating systems: Linux and Windows number their drivers independently (release notes
//! Table 3, 11.8: Linux 520.61.05, Windows 520.06).

use serde::Serialize;
use std::fmt;

/// A CUDA version, `major.minor` (`12.4`). Patch levels (`12.4.127`) are accepted and dropped: every
/// compatibility rule NVIDIA documents is stated per minor release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CudaVersion {
    /// Major (`12`).
    pub major: u32,
    /// Minor (`4`).
    pub minor: u32,
}

impl CudaVersion {
    /// Parses `12`, `12.4` or `12.4.127` (also the `cudaRuntimeGetVersion` encoding `12040`).
    pub fn parse(s: &str) -> Option<CudaVersion> {
        let s = s.trim();
        if !s.contains('.') {
            let n: u32 = s.parse().ok()?;
            // 1000*major + 10*minor, as cudaRuntimeGetVersion / cuDriverGetVersion return it.
            if n >= 1000 {
                return Some(CudaVersion {
                    major: n / 1000,
                    minor: (n % 1000) / 10,
                });
            }
            return Some(CudaVersion { major: n, minor: 0 });
        }
        let mut it = s.split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        if let Some(patch) = it.next() {
            patch.parse::<u32>().ok()?;
        }
        if it.next().is_some() {
            return None;
        }
        Some(CudaVersion { major, minor })
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A driver version (`535.104.05`): one to three numeric components. One component (`615`) stands for the
/// first driver of that branch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct DriverVersion {
    parts: Vec<u32>,
    text: String,
}

impl DriverVersion {
    /// Parses `535.104.05`, `570.26` or `615`.
    pub fn parse(s: &str) -> Option<DriverVersion> {
        let text = s.trim();
        if text.is_empty() {
            return None;
        }
        let parts: Option<Vec<u32>> = text.split('.').map(|p| p.parse().ok()).collect();
        let parts = parts?;
        if parts.len() > 4 {
            return None;
        }
        Some(DriverVersion {
            parts,
            text: text.to_string(),
        })
    }

    /// A version of these components, written `text`: for the matrix `build.rs` compiles, whose versions
    /// were parsed when it was built.
    pub(super) fn from_parts(parts: &[u32], text: &str) -> DriverVersion {
        DriverVersion {
            parts: parts.to_vec(),
            text: text.to_string(),
        }
    }

    /// The numeric components (`[535, 104, 5]`).
    pub fn parts(&self) -> &[u32] {
        &self.parts
    }

    /// The branch (`535` for `535.104.05`).
    pub fn branch(&self) -> u32 {
        self.parts.first().copied().unwrap_or(0)
    }

    /// Whether only the branch is known (`615`).
    pub fn is_branch_only(&self) -> bool {
        self.parts.len() == 1
    }

    /// The version as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl PartialOrd for DriverVersion {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DriverVersion {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let n = self.parts.len().max(other.parts.len());
        for i in 0..n {
            let a = self.parts.get(i).copied().unwrap_or(0);
            let b = other.parts.get(i).copied().unwrap_or(0);
            match a.cmp(&b) {
                std::cmp::Ordering::Equal => continue,
                o => return o,
            }
        }
        std::cmp::Ordering::Equal
    }
}

impl fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A compute capability (`9.0`, `12.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Cc {
    /// Major (`9`).
    pub major: u32,
    /// Minor (`0`).
    pub minor: u32,
}

impl Cc {
    /// Parses `9.0`, `12.1`, `sm_90`, `sm_90a`, `compute_120f` or `90` (the SM number).
    pub fn parse(s: &str) -> Option<Cc> {
        let s = s.trim().to_ascii_lowercase();
        let digits = s
            .strip_prefix("sm_")
            .or_else(|| s.strip_prefix("compute_"))
            .or_else(|| s.strip_prefix("lto_"));
        if let Some(d) = digits {
            let d = d.trim_end_matches(['a', 'f']);
            return Cc::from_sm(d.parse().ok()?);
        }
        if let Some((a, b)) = s.split_once('.') {
            let major = a.parse().ok()?;
            let minor: u32 = b.parse().ok()?;
            if minor > 9 {
                return None;
            }
            return Some(Cc { major, minor });
        }
        Cc::from_sm(s.parse().ok()?)
    }

    /// The CC of an SM number (`90` → 9.0, `121` → 12.1).
    pub fn from_sm(sm: u32) -> Option<Cc> {
        if sm < 10 {
            return None;
        }
        Some(Cc {
            major: sm / 10,
            minor: sm % 10,
        })
    }

    /// The SM number (`9.0` → 90).
    pub fn sm(self) -> u32 {
        self.major * 10 + self.minor
    }
}

impl fmt::Display for Cc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_compare_per_component() {
        let v = |s| DriverVersion::parse(s).unwrap();
        assert!(v("570.26") < v("570.124.06"));
        assert!(v("535.104.05") > v("535.86.09"));
        assert!(v("615") < v("615.71.09"));
        assert_eq!(v("580.65.06").branch(), 580);
        assert!(DriverVersion::parse("5a0").is_none());
    }

    #[test]
    fn cuda_versions_parse_all_spellings() {
        assert_eq!(CudaVersion::parse("13000"), CudaVersion::parse("13.0"));
        assert_eq!(CudaVersion::parse("12.4.127").map(|v| v.minor), Some(4));
        assert!(CudaVersion::parse("12.x").is_none());
    }

    #[test]
    fn compute_capabilities_parse_all_spellings() {
        let nine = Some(Cc { major: 9, minor: 0 });
        assert_eq!(Cc::parse("sm_90a"), nine);
        assert_eq!(Cc::parse("9.0"), nine);
        assert_eq!(Cc::parse("90"), nine);
        assert_eq!(
            Cc::parse("compute_121f").map(|c| c.to_string()),
            Some("12.1".into())
        );
        assert!(Cc::parse("9.10").is_none());
    }
}
