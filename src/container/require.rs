//! The constraint language of `NVIDIA_REQUIRE_*`, as `nvidia-container-cli configure --require=EXPR` reads and
//! judges it (libnvidia-container `src/cli/dsl.c` and `src/cli/configure.c`; `docs/container-toolkit.md`,
//! "Requirements").
//!
//! An expression is a list of terms separated by single spaces, and any one term that holds is enough (OR); a
//! term is a list of conditions separated by commas, all of which must hold (AND). A condition is
//! `PROPERTY OPERATOR VALUE` with no spaces: `cuda>=12.4`, `driver<471`, `brand=tesla`, `arch>=8.0`. Properties
//! are `cuda` (the CUDA version the node's driver supports), `driver` (the kernel module's version), `arch` (a
//! visible GPU's compute capability) and `brand` (its NVML brand); names and brands compare without regard to
//! case. Anything else is an "invalid expression" and the container does not start.
//!
//! The evaluation mirrors the toolkit's, quirks included: it stops at the first term that holds and, inside a
//! term, at the first condition that fails, so a malformed condition the evaluation never reaches is harmless;
//! a term made only of commas ends the evaluation with the result so far. What the node's facts cannot settle
//! (a GPU whose brand is not known, a driver newer than the matrix) is carried as [`Tri::Unknown`] rather than
//! guessed.

use serde::Serialize;

/// A comparison operator. `!` alone reads as `!=` (the toolkit matches operators by the operator characters'
/// prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A node property a condition names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prop {
    /// The CUDA version the driver supports (`nvmlSystemGetCudaDriverVersion`, major.minor).
    Cuda,
    /// The kernel module's version (`535.104.05`).
    Driver,
    /// A visible GPU's compute capability (`9.0`).
    Arch,
    /// A visible GPU's NVML brand (`tesla`, `geforce`, `nvidia`, …).
    Brand,
}

/// One condition, or why it is malformed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    /// `prop op value`.
    Cond {
        /// The property.
        prop: Prop,
        /// The operator.
        op: Op,
        /// The value, verbatim.
        value: String,
    },
    /// The condition as written, which the toolkit cannot parse.
    Bad(String),
}

/// A parsed expression: terms (OR) of conditions (AND). A term may be empty (only commas), which matters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    /// The terms, in order.
    pub terms: Vec<Vec<Atom>>,
}

/// Operators in the order the toolkit tries them.
const OPERATORS: [(&str, Op); 6] = [
    ("=", Op::Eq),
    ("!=", Op::Ne),
    ("<", Op::Lt),
    ("<=", Op::Le),
    (">", Op::Gt),
    (">=", Op::Ge),
];

const OP_CHARS: &[char] = &['<', '>', '=', '!'];

/// Parses an expression. Never fails: malformed conditions become [`Atom::Bad`] and fail only if reached.
pub fn parse(text: &str) -> Expr {
    let mut terms = Vec::new();
    // Single spaces separate terms; runs of spaces give empty pieces, which are skipped. Tabs are not separators.
    for term in text.split(' ').filter(|t| !t.is_empty()) {
        terms.push(
            term.split(',')
                .filter(|c| !c.is_empty())
                .map(parse_atom)
                .collect(),
        );
    }
    Expr { terms }
}

fn parse_atom(cond: &str) -> Atom {
    let bad = || Atom::Bad(cond.to_string());
    let Some(start) = cond.find(OP_CHARS) else {
        return bad();
    };
    if start == 0 {
        return bad();
    }
    let rest = &cond[start..];
    let run = rest.len() - rest.trim_start_matches(OP_CHARS).len();
    let ops = &rest[..run];
    // The toolkit compares the first `run` characters: an operator matches when it starts with all of them.
    let Some(op) = OPERATORS
        .iter()
        .find(|(s, _)| s.len() >= run && s[..run] == *ops)
        .map(|(_, op)| *op)
    else {
        return bad();
    };
    let value = &rest[run..];
    if value.is_empty() {
        return bad();
    }
    let name = &cond[..start];
    let prop = match name.to_ascii_lowercase().as_str() {
        "cuda" => Prop::Cuda,
        "driver" => Prop::Driver,
        "arch" => Prop::Arch,
        "brand" => Prop::Brand,
        _ => return bad(),
    };
    Atom::Cond {
        prop,
        op,
        value: value.to_string(),
    }
}

/// A truth value the node's facts may leave open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tri {
    /// Holds.
    True,
    /// Does not hold.
    False,
    /// The facts do not settle it.
    Unknown,
}

/// What the toolkit would compare a condition against on one GPU (or with no GPU visible).
#[derive(Debug, Clone, Default)]
pub struct Props {
    /// The driver's CUDA version (`12.2`), `None` when not known.
    pub cuda: Option<String>,
    /// The kernel module's version, `None` when not known.
    pub driver: Option<String>,
    /// The GPU being checked.
    pub device: Device,
}

/// The GPU a requirement is checked against.
#[derive(Debug, Clone, Default)]
pub enum Device {
    /// No GPU is visible: the toolkit assumes `arch` and `brand` conditions hold.
    #[default]
    Absent,
    /// A GPU whose compute capability and brand may each be unknown.
    Gpu {
        /// Compute capability (`9.0`).
        arch: Option<String>,
        /// The NVML brand, lower-case (`tesla`); `None` when not known.
        brand: Option<String>,
    },
    /// Whether a GPU is visible, and which, is not known.
    Unknown,
}

/// Why an expression is rejected: the condition the toolkit could not read or compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

/// Evaluates `expr` against one set of properties, as the toolkit does. `Err` when the toolkit certainly
/// reaches a condition it cannot read ("invalid expression"); a malformed condition reached only in some of the
/// worlds the facts allow makes the answer [`Tri::Unknown`].
pub fn evaluate(expr: &Expr, props: &Props) -> Result<Tri, Invalid> {
    // The OR so far; `None` before any term was evaluated (the toolkit then answers "holds").
    let mut acc: Option<Tri> = None;
    let mut certain = true;
    for term in &expr.terms {
        if term.is_empty() {
            return Ok(acc.unwrap_or(Tri::True));
        }
        let mut all = Tri::True;
        for atom in term {
            let v = match condition(atom, props) {
                Ok(v) => v,
                Err(e) if certain && all == Tri::True => return Err(e),
                Err(_) => Tri::Unknown,
            };
            match v {
                Tri::False => {
                    all = Tri::False;
                    break;
                }
                Tri::Unknown => all = Tri::Unknown,
                Tri::True => {}
            }
        }
        match all {
            Tri::True => return Ok(Tri::True),
            Tri::False => acc = Some(or(acc, Tri::False)),
            Tri::Unknown => {
                acc = Some(Tri::Unknown);
                certain = false;
            }
        }
    }
    Ok(acc.unwrap_or(Tri::True))
}

fn or(acc: Option<Tri>, v: Tri) -> Tri {
    match (acc, v) {
        (None, v) => v,
        (Some(Tri::True), _) | (_, Tri::True) => Tri::True,
        (Some(Tri::Unknown), _) | (_, Tri::Unknown) => Tri::Unknown,
        _ => Tri::False,
    }
}

fn condition(atom: &Atom, p: &Props) -> Result<Tri, Invalid> {
    let (prop, op, value) = match atom {
        Atom::Bad(text) => return Err(Invalid(text.clone())),
        Atom::Cond { prop, op, value } => (*prop, *op, value.as_str()),
    };
    let invalid = || Invalid(format!("{}{}{value}", prop_name(prop), op_text(op)));
    let known = |v: Option<bool>| v.map(Tri::from).ok_or_else(invalid);
    match prop {
        Prop::Cuda => match &p.cuda {
            None => Ok(Tri::Unknown),
            Some(c) => known(compare_version(c, op, value)),
        },
        Prop::Driver => match &p.driver {
            None => Ok(Tri::Unknown),
            Some(d) => known(compare_version(d, op, value)),
        },
        Prop::Arch => match &p.device {
            Device::Absent => Ok(Tri::True),
            Device::Unknown | Device::Gpu { arch: None, .. } => Ok(Tri::Unknown),
            Device::Gpu { arch: Some(a), .. } => known(compare_version(a, op, value)),
        },
        Prop::Brand => match &p.device {
            Device::Absent => Ok(Tri::True),
            Device::Unknown | Device::Gpu { brand: None, .. } => Ok(Tri::Unknown),
            Device::Gpu { brand: Some(b), .. } => known(match op {
                Op::Eq => Some(b.eq_ignore_ascii_case(value)),
                Op::Ne => Some(!b.eq_ignore_ascii_case(value)),
                _ => None,
            }),
        },
    }
}

impl From<bool> for Tri {
    fn from(b: bool) -> Tri {
        if b { Tri::True } else { Tri::False }
    }
}

/// The property's name as written in expressions.
pub fn prop_name(p: Prop) -> &'static str {
    match p {
        Prop::Cuda => "cuda",
        Prop::Driver => "driver",
        Prop::Arch => "arch",
        Prop::Brand => "brand",
    }
}

/// The operator as written.
pub fn op_text(op: Op) -> &'static str {
    match op {
        Op::Eq => "=",
        Op::Ne => "!=",
        Op::Lt => "<",
        Op::Le => "<=",
        Op::Gt => ">",
        Op::Ge => ">=",
    }
}

/// Compares two dotted versions component by component, as the toolkit does: only digits and dots are allowed
/// (`None` otherwise, "invalid expression"), missing trailing components count as zero (`12.4` = `12.4.0`).
pub fn compare_version(left: &str, op: Op, right: &str) -> Option<bool> {
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit() || c == '.');
    if !digits(left) || !digits(right) {
        return None;
    }
    let (mut a, mut b) = (left, right);
    while !a.is_empty() && !b.is_empty() {
        let (n1, r1) = leading_number(a)?;
        let (n2, r2) = leading_number(b)?;
        if n1 != n2 {
            return Some(match op {
                Op::Eq => false,
                Op::Ne => true,
                Op::Lt | Op::Le => n1 < n2,
                Op::Gt | Op::Ge => n1 > n2,
            });
        }
        a = r1.trim_start_matches('.');
        b = r2.trim_start_matches('.');
    }
    // What is left of the longer one counts only if it holds something other than dots and zeros.
    let a_more = !a.trim_start_matches(['.', '0']).is_empty();
    let b_more = !b.trim_start_matches(['.', '0']).is_empty();
    Some(match op {
        Op::Ne => a_more || b_more,
        Op::Eq => !a_more && !b_more,
        Op::Le => !a_more,
        Op::Ge => !b_more,
        Op::Lt => !a_more && b_more,
        Op::Gt => a_more && !b_more,
    })
}

/// The number at the start of `s` and what follows it; `None` when `s` does not start with a digit or the
/// number does not fit (the toolkit's `strtoumax` check).
fn leading_number(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let n: u64 = s[..end].parse().ok()?;
    if n == u64::MAX {
        return None;
    }
    Some((n, &s[end..]))
}

/// The text the toolkit prints when the expression does not hold: the first space-separated piece of the
/// expression, with advice when it is a `cuda>=` condition.
pub fn unsatisfied_message(text: &str) -> String {
    let first = text.split(' ').next().unwrap_or("");
    if first.starts_with("cuda>=") {
        format!(
            "unsatisfied condition: {first}, please update your driver to a newer version, or use an earlier cuda \
             container"
        )
    } else {
        format!("unsatisfied condition: {first}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(arch: &str, brand: &str) -> Props {
        Props {
            cuda: Some("12.2".into()),
            driver: Some("535.104.05".into()),
            device: Device::Gpu {
                arch: Some(arch.into()),
                brand: Some(brand.into()),
            },
        }
    }

    #[test]
    fn versions_compare_like_the_toolkit() {
        use Op::*;
        assert_eq!(compare_version("12.2", Ge, "12.4"), Some(false));
        assert_eq!(compare_version("13.0", Ge, "13.0"), Some(true));
        assert_eq!(compare_version("12.4", Eq, "12.4.0"), Some(true));
        assert_eq!(compare_version("535.104.05", Ge, "535"), Some(true));
        assert_eq!(compare_version("535.104.05", Lt, "536"), Some(true));
        assert_eq!(compare_version("535.104.05", Lt, "535"), Some(false));
        assert_eq!(compare_version("470.256.02", Lt, "471"), Some(true));
        assert_eq!(compare_version("580.159.04", Gt, "580.159"), Some(true));
        assert_eq!(compare_version("9.0", Ge, "8.0"), Some(true));
        assert_eq!(compare_version("12.2", Ne, "12.2.0"), Some(false));
        assert_eq!(compare_version("12.2", Ge, "sm_80"), None);
        assert_eq!(compare_version("12.2", Ge, ".5"), None);
        assert_eq!(compare_version("12.2", Ge, "99999999999999999999999"), None);
    }

    #[test]
    fn operators_parse_by_prefix() {
        let op = |s: &str| match parse_atom(s) {
            Atom::Cond { op, .. } => Some(op),
            Atom::Bad(_) => None,
        };
        assert_eq!(op("cuda>=12.4"), Some(Op::Ge));
        assert_eq!(op("driver<471"), Some(Op::Lt));
        assert_eq!(op("brand!tesla"), Some(Op::Ne));
        assert_eq!(op("CUDA>12"), Some(Op::Gt));
        assert_eq!(op("cuda==12"), None);
        assert_eq!(op("cuda=>12"), None);
        assert_eq!(op("cuda>="), None);
        assert_eq!(op(">=12"), None);
        assert_eq!(op("cuda"), None);
        assert_eq!(op("jetpack>=5"), None);
    }

    #[test]
    fn spaces_are_or_and_commas_are_and() {
        let e = parse("cuda>=12.4 brand=tesla,driver>=535,driver<536");
        assert_eq!(e.terms.len(), 2);
        assert_eq!(e.terms[1].len(), 3);
        // cuda 12.2 fails the first term; the second holds on a Tesla with a 535 driver.
        assert_eq!(evaluate(&e, &gpu("9.0", "tesla")), Ok(Tri::True));
        assert_eq!(evaluate(&e, &gpu("9.0", "geforce")), Ok(Tri::False));
        // No GPU visible: brand conditions are assumed to hold.
        let mut p = gpu("9.0", "geforce");
        p.device = Device::Absent;
        assert_eq!(evaluate(&e, &p), Ok(Tri::True));
        // Brand unknown: the facts do not settle it.
        p.device = Device::Gpu {
            arch: Some("9.0".into()),
            brand: None,
        };
        assert_eq!(evaluate(&e, &p), Ok(Tri::Unknown));
    }

    #[test]
    fn malformed_conditions_fail_only_when_reached() {
        let p = gpu("9.0", "tesla");
        assert_eq!(
            evaluate(&parse("cuda>=sm_80"), &p),
            Err(Invalid("cuda>=sm_80".into()))
        );
        assert_eq!(evaluate(&parse("foo>=1"), &p), Err(Invalid("foo>=1".into())));
        // The first term holds: the second is never read.
        assert_eq!(evaluate(&parse("cuda>=12.0 foo>=1"), &p), Ok(Tri::True));
        // The first condition fails: the rest of the term is never read.
        assert_eq!(evaluate(&parse("cuda>=13.0,foo>=1"), &p), Ok(Tri::False));
        // Brand accepts only = and !=.
        assert!(evaluate(&parse("brand>=tesla"), &p).is_err());
        // Not reached with no GPU visible.
        let mut none = p.clone();
        none.device = Device::Absent;
        assert_eq!(evaluate(&parse("brand>=tesla"), &none), Ok(Tri::True));
    }

    #[test]
    fn empty_and_comma_only_terms_follow_the_toolkit() {
        let p = gpu("9.0", "tesla");
        assert_eq!(evaluate(&parse(""), &p), Ok(Tri::True));
        assert_eq!(evaluate(&parse("   "), &p), Ok(Tri::True));
        assert_eq!(evaluate(&parse(","), &p), Ok(Tri::True));
        // A comma-only term ends the evaluation with the result so far.
        assert_eq!(evaluate(&parse("cuda>=13.0 , cuda>=12.0"), &p), Ok(Tri::False));
        assert_eq!(evaluate(&parse("cuda>=13.0  cuda>=12.0"), &p), Ok(Tri::True));
    }

    #[test]
    fn the_message_names_the_first_piece() {
        assert_eq!(
            unsatisfied_message("cuda>=13.0 brand=tesla,driver>=535,driver<536"),
            "unsatisfied condition: cuda>=13.0, please update your driver to a newer version, or use an earlier \
             cuda container"
        );
        assert_eq!(
            unsatisfied_message("driver>=580"),
            "unsatisfied condition: driver>=580"
        );
    }
}
