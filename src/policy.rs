//! `cudadiag.toml`: the release policy that `cudadiag audit` checks binaries against.
//!
//! Modelled on cargo-deny: the policy declares what the release must support (target architectures with
//! SASS, a PTX for future GPUs, the oldest driver, the allowed CUDA majors) and what it must not ship
//! (driver libraries, build-machine RPATHs, reliance on the toolkit's `stubs/`). Severities can be overridden per
//! code or slug, and findings can be waived with a reason and an expiry date; a waiver that matches nothing,
//! or has expired, is itself a finding. Every policy error names the line of the policy file.
//!
//! Stable keys (documented in `cudadiag init`'s template and tested): `[targets]` `sass`, `ptx`,
//! `min-driver`, `cuda-majors`, `glibc`; `[libraries]` `forbid`, `allow-absolute-rpath`, `allow-stubs`, `cudart`;
//! `[severity]`; `[[waiver]]` `code`, `path`, `reason`, `expires`.

use crate::findings::{self, Severity};
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// Driver libraries a release must never bundle: they belong to the machine's driver, and a bundled copy
/// shadows it (the cause of "stub-libcuda", "driver-library-mismatch" and 803/804 errors).
pub const DRIVER_LIBRARIES: &[&str] = &[
    "libcuda.so*",
    "libnvidia-ml.so*",
    "libnvidia-ptxjitcompiler.so*",
    "libnvidia-nvvm.so*",
    "libnvidia-gpucomp.so*",
    "libcudadebugger.so*",
    "libnvcuvid.so*",
    "libnvidia-encode.so*",
];

/// A value from the policy file with the line it was written on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lined<T> {
    /// The value.
    pub value: T,
    /// 1-based line in the policy file.
    pub line: usize,
}

/// Which CUDA runtime linkage the policy requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CudartRule {
    /// `libcudart_static.a` linked in.
    Static,
    /// `libcudart.so.N` loaded at run time.
    Dynamic,
    /// Either.
    Any,
}

/// A waiver: silences matching findings until it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiver {
    /// Code (`CD600`) or slug (`policy-missing-arch`) it applies to.
    pub code: String,
    /// Glob over the finding's path; `None` for every path.
    pub path: Option<String>,
    /// `path`, compiled once when the policy is read.
    pub path_glob: Option<Globs>,
    /// Why the finding is accepted (required).
    pub reason: String,
    /// Last day the waiver applies (`YYYY-MM-DD`).
    pub expires: Option<(i32, u32, u32)>,
    /// Line of `[[waiver]]`'s `code` key.
    pub line: usize,
}

/// Globs compiled once, when the policy is read: a policy is matched against every binary and every
/// finding, and compiling a glob costs far more than matching it (40,000 patterns recompiled per binary made
/// an audit quadratic).
#[derive(Debug, Clone, Default)]
pub struct Globs {
    patterns: Vec<String>,
    set: globset::GlobSet,
}

impl PartialEq for Globs {
    fn eq(&self, other: &Self) -> bool {
        self.patterns == other.patterns
    }
}

impl Eq for Globs {}

impl Globs {
    /// Compiles `patterns`; the error names the index of the pattern at fault.
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Result<Globs, (usize, globset::Error)> {
        let mut b = globset::GlobSetBuilder::new();
        let mut kept = Vec::new();
        for (i, p) in patterns.into_iter().enumerate() {
            b.add(globset::Glob::new(p).map_err(|e| (i, e))?);
            kept.push(p.to_string());
        }
        let set = b.build().map_err(|e| (0, e))?;
        Ok(Globs { patterns: kept, set })
    }

    /// The index of the first pattern that matches `s`.
    pub fn first_match(&self, s: &str) -> Option<usize> {
        self.set.matches(s).into_iter().min()
    }

    /// Does any pattern match `s`?
    pub fn is_match(&self, s: &str) -> bool {
        self.set.is_match(s)
    }
}

/// A parsed, validated policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// The policy file's name, for messages.
    pub origin: String,
    /// Architectures that must have SASS (`sm_80`, `sm_90a`).
    pub sass: Vec<Lined<String>>,
    /// A PTX that must be present (`compute_90`).
    pub ptx: Option<Lined<String>>,
    /// The oldest driver the release supports.
    pub min_driver: Option<Lined<String>>,
    /// CUDA major versions the release may use.
    pub cuda_majors: Option<Lined<Vec<u32>>>,
    /// The oldest glibc the release supports (`2.17`): no binary may need a newer `GLIBC_x.y`.
    pub glibc: Option<Lined<String>>,
    /// File-name globs of libraries that must not be shipped.
    pub forbid: Vec<Lined<String>>,
    /// `forbid`, compiled once when the policy is read (index for index).
    pub forbid_globs: Globs,
    /// Absolute RPATH/RUNPATH entries are allowed.
    pub allow_absolute_rpath: bool,
    /// RPATH/RUNPATH entries into a toolkit's `stubs/` are allowed.
    pub allow_stubs: bool,
    /// Required cudart linkage.
    pub cudart: Option<Lined<CudartRule>>,
    /// Severity overrides by code or slug; `None` means "allow" (drop the finding).
    pub severity: Vec<Lined<(String, Option<Severity>)>>,
    /// Waivers.
    pub waivers: Vec<Waiver>,
}

/// A policy that cannot be used, with the line at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// The policy file.
    pub origin: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.origin, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for PolicyError {}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPolicy {
    targets: Option<RawTargets>,
    libraries: Option<RawLibraries>,
    severity: Option<BTreeMap<String, Spanned<String>>>,
    #[serde(default)]
    waiver: Vec<RawWaiver>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawTargets {
    #[serde(default)]
    sass: Vec<Spanned<String>>,
    ptx: Option<Spanned<String>>,
    min_driver: Option<Spanned<String>>,
    cuda_majors: Option<Spanned<Vec<u32>>>,
    glibc: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawLibraries {
    forbid: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    allow_absolute_rpath: bool,
    #[serde(default)]
    allow_stubs: bool,
    cudart: Option<Spanned<CudartRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawWaiver {
    code: Spanned<String>,
    path: Option<Spanned<String>>,
    reason: Option<String>,
    expires: Option<Spanned<String>>,
}

/// Where each line of a text starts, for turning byte offsets into 1-based lines in O(log n): counting the
/// newlines before every entry made a 40,000-entry policy quadratic (minutes).
struct LineIndex(Vec<usize>);

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        LineIndex(memchr::memchr_iter(b'\n', text.as_bytes()).collect())
    }

    /// 1-based line of byte offset `at`.
    fn of(&self, at: usize) -> usize {
        self.0.partition_point(|&nl| nl < at) + 1
    }
}

/// `sm_80`, `sm_90a`, `sm_100f` (SASS) or `compute_90` (PTX): prefix, digits, optional suffix.
fn valid_arch(s: &str, prefix: &str) -> bool {
    let Some(rest) = s.strip_prefix(prefix) else {
        return false;
    };
    let rest = rest.strip_suffix(['a', 'f']).unwrap_or(rest);
    !rest.is_empty() && rest.len() <= 4 && rest.chars().all(|c| c.is_ascii_digit())
}

/// `YYYY-MM-DD`.
pub fn parse_date(s: &str) -> Option<(i32, u32, u32)> {
    let mut it = s.split('-');
    let (y, m, d) = (
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    );
    (it.next().is_none() && (1..=12).contains(&m) && (1..=31).contains(&d)).then_some((y, m, d))
}

/// A driver version as the policy accepts it: `535.104.05`, `535.104`, `535`.
fn valid_driver(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    (1..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

impl Policy {
    /// Parses and validates a policy file's text.
    pub fn parse(text: &str, origin: &str) -> Result<Policy, PolicyError> {
        let err = |line: Option<usize>, message: String| PolicyError {
            origin: origin.to_string(),
            line,
            message,
        };
        let lines = LineIndex::new(text);
        let raw: RawPolicy = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| lines.of(s.start));
            err(line, e.message().to_string())
        })?;
        let lined = |s: &Spanned<String>| Lined {
            value: s.get_ref().clone(),
            line: lines.of(s.span().start),
        };
        let mut p = Policy {
            origin: origin.to_string(),
            ..Policy::default()
        };
        let mut seen_sass = std::collections::HashSet::new();
        if let Some(t) = raw.targets {
            for s in &t.sass {
                if !valid_arch(s.get_ref(), "sm_") {
                    return Err(err(
                        Some(lines.of(s.span().start)),
                        format!(
                            "targets.sass: {:?} is not an architecture like \"sm_80\" or \"sm_90a\"",
                            s.get_ref()
                        ),
                    ));
                }
                // A repeated architecture is one requirement: kept once, at its first line (40,000 copies of
                // one entry gave 40,000 target GPUs and as many findings).
                if seen_sass.insert(s.get_ref().as_str()) {
                    p.sass.push(lined(s));
                }
            }
            if let Some(s) = &t.ptx {
                if !valid_arch(s.get_ref(), "compute_") {
                    return Err(err(
                        Some(lines.of(s.span().start)),
                        format!(
                            "targets.ptx: {:?} is not a virtual architecture like \"compute_90\"",
                            s.get_ref()
                        ),
                    ));
                }
                p.ptx = Some(lined(s));
            }
            if let Some(s) = &t.min_driver {
                if !valid_driver(s.get_ref()) {
                    return Err(err(
                        Some(lines.of(s.span().start)),
                        format!(
                            "targets.min-driver: {:?} is not a driver version like \"535.104.05\"",
                            s.get_ref()
                        ),
                    ));
                }
                p.min_driver = Some(lined(s));
            }
            if let Some(s) = &t.glibc {
                let v = s.get_ref();
                if !crate::glibc::numbers(v).is_some_and(|n| n.len() == 2 && n[0] == 2) {
                    return Err(err(
                        Some(lines.of(s.span().start)),
                        format!("targets.glibc: {v:?} is not a glibc release like \"2.17\""),
                    ));
                }
                p.glibc = Some(lined(s));
            }
            if let Some(m) = &t.cuda_majors {
                let line = lines.of(m.span().start);
                if m.get_ref().is_empty() || m.get_ref().iter().any(|&v| !(7..=99).contains(&v)) {
                    return Err(err(
                        Some(line),
                        "targets.cuda-majors: expected a list like [12, 13]".into(),
                    ));
                }
                p.cuda_majors = Some(Lined {
                    value: m.get_ref().clone(),
                    line,
                });
            }
        }
        match raw.libraries {
            Some(l) => {
                p.forbid = match &l.forbid {
                    Some(list) => list.iter().map(lined).collect(),
                    None => DRIVER_LIBRARIES
                        .iter()
                        .map(|s| Lined {
                            value: s.to_string(),
                            line: 0,
                        })
                        .collect(),
                };
                p.allow_absolute_rpath = l.allow_absolute_rpath;
                p.allow_stubs = l.allow_stubs;
                p.cudart = l.cudart.map(|c| Lined {
                    value: *c.get_ref(),
                    line: lines.of(c.span().start),
                });
            }
            None => {
                p.forbid = DRIVER_LIBRARIES
                    .iter()
                    .map(|s| Lined {
                        value: s.to_string(),
                        line: 0,
                    })
                    .collect();
            }
        }
        let mut seen_forbid = std::collections::HashSet::new();
        p.forbid.retain(|f| seen_forbid.insert(f.value.clone()));
        p.forbid_globs = Globs::new(p.forbid.iter().map(|f| f.value.as_str())).map_err(|(i, e)| {
            let f = &p.forbid[i.min(p.forbid.len().saturating_sub(1))];
            err(Some(f.line), format!("libraries.forbid: {:?}: {e}", f.value))
        })?;
        for (key, value) in raw.severity.unwrap_or_default() {
            let line = lines.of(value.span().start);
            if findings::lookup(&key).is_none() {
                return Err(err(
                    Some(line),
                    format!("severity: unknown finding code or slug {key:?} (see `cudadiag codes`)"),
                ));
            }
            let level = match value.get_ref().as_str() {
                "error" => Some(Severity::Error),
                "warning" => Some(Severity::Warning),
                "note" => Some(Severity::Note),
                "allow" => None,
                other => {
                    return Err(err(
                        Some(line),
                        format!("severity.{key}: {other:?} is not one of error, warning, note, allow"),
                    ));
                }
            };
            p.severity.push(Lined {
                value: (key, level),
                line,
            });
        }
        for w in raw.waiver {
            let line = lines.of(w.code.span().start);
            if findings::lookup(w.code.get_ref()).is_none() {
                return Err(err(
                    Some(line),
                    format!("waiver: unknown finding code or slug {:?}", w.code.get_ref()),
                ));
            }
            let reason = w.reason.filter(|r| !r.trim().is_empty()).ok_or_else(|| {
                err(
                    Some(line),
                    "waiver: every waiver needs a `reason` saying why the finding is accepted".into(),
                )
            })?;
            let path_glob =
                match &w.path {
                    Some(path) => Some(Globs::new([path.get_ref().as_str()]).map_err(|(_, e)| {
                        err(Some(lines.of(path.span().start)), format!("waiver.path: {e}"))
                    })?),
                    None => None,
                };
            let expires = match &w.expires {
                Some(e) => Some(parse_date(e.get_ref()).ok_or_else(|| {
                    err(
                        Some(lines.of(e.span().start)),
                        format!(
                            "waiver.expires: {:?} is not a date like \"2027-06-30\"",
                            e.get_ref()
                        ),
                    )
                })?),
                None => None,
            };
            p.waivers.push(Waiver {
                code: w.code.get_ref().clone(),
                path: w.path.map(|p| p.into_inner()),
                path_glob,
                reason,
                expires,
                line,
            });
        }
        Ok(p)
    }
}

/// Today's date (UTC) from the system clock, as `(year, month, day)`.
pub fn today() -> (i32, u32, u32) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_from_days((secs / 86_400) as i64)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i32, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    ((if m <= 2 { y + 1 } else { y }) as i32, m, d)
}

/// The commented policy template `cudadiag init` writes.
pub const TEMPLATE: &str = include_str!("policy_template.toml");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_parses() {
        let p = Policy::parse(TEMPLATE, "cudadiag.toml").unwrap();
        assert!(!p.sass.is_empty());
        assert!(!p.forbid.is_empty());
    }

    #[test]
    fn stable_keys() {
        let p = Policy::parse(
            "[targets]\nsass = [\"sm_80\", \"sm_90\"]\nptx = \"compute_90\"\nmin-driver = \"535.104.05\"\ncuda-majors = [12, 13]\n",
            "p.toml",
        )
        .unwrap();
        assert_eq!(
            p.sass.iter().map(|s| s.value.as_str()).collect::<Vec<_>>(),
            ["sm_80", "sm_90"]
        );
        assert_eq!(p.sass[1].line, 2);
        assert_eq!(p.ptx.unwrap().value, "compute_90");
        assert_eq!(p.min_driver.unwrap().line, 4);
        assert_eq!(p.cuda_majors.unwrap().value, [12, 13]);
        assert_eq!(p.forbid.len(), DRIVER_LIBRARIES.len());
        let p = Policy::parse("[targets]\nglibc = \"2.17\"\n", "p.toml").unwrap();
        assert_eq!(
            p.glibc,
            Some(Lined {
                value: "2.17".into(),
                line: 2
            })
        );
    }

    #[test]
    fn errors_point_at_the_line() {
        let e = Policy::parse("[targets]\n\nsass = [\"sm80\"]\n", "p.toml").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.to_string().starts_with("p.toml:3: targets.sass"), "{e}");
        let e = Policy::parse("[targets]\nmin-drivr = \"535\"\n", "p.toml").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        let e = Policy::parse("[[waiver]]\ncode = \"no-such-slug\"\nreason = \"x\"\n", "p.toml").unwrap_err();
        assert_eq!(e.line, Some(2));
        let e = Policy::parse("[[waiver]]\ncode = \"CD600\"\n", "p.toml").unwrap_err();
        assert!(e.message.contains("reason"));
        let e = Policy::parse(
            "[[waiver]]\ncode = \"CD600\"\nreason = \"r\"\nexpires = \"2027-13-01\"\n",
            "p.toml",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(4));
        for bad in ["2", "GLIBC_2.17", "2.17.1", "3.1"] {
            let e = Policy::parse(&format!("[targets]\nglibc = {bad:?}\n"), "p.toml").unwrap_err();
            assert!(e.to_string().starts_with("p.toml:2: targets.glibc"), "{e}");
        }
        let e = Policy::parse("[severity]\nptx-jit-required = \"fatal\"\n", "p.toml").unwrap_err();
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(parse_date("2027-06-30"), Some((2027, 6, 30)));
        assert_eq!(parse_date("2027-6"), None);
    }
}
