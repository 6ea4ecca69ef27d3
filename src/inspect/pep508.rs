//! PEP 508 dependency specifiers, as `Requires-Dist` lines write them: `name[extras] specifier; marker`.
//!
//! The marker is evaluated for Linux and what a wheel's file name says (its CPU and Python tags), with
//! three-valued logic: a comparison with a variable the wheel does not determine (a `py3-none-any` wheel's
//! Python) is unknown, and unknown is taken as true, so a dependency is assumed installed rather than a library
//! reported missing that is not. A marker that cannot be parsed is taken as holding, for the same reason.
//! Names are normalised as PEP 503 and PEP 685 say. Sources: PEP 508 (grammar, marker variables), PEP 440
//! (version comparison), PEP 685 (extras).

use crate::facts::{Installed, Requirement};
use std::path::Path;

/// The target environment of PEP 508 markers: Linux, with the CPU and Python the wheel's file name names.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `platform_machine` (`x86_64`, `aarch64`), from the platform tag; `None` for `any`.
    pub machine: Option<String>,
    /// `python_version` (`3.11`), from a single `cpXY` tag.
    pub python: Option<String>,
}

impl Env {
    /// From a wheel's file name, `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`.
    pub fn of_wheel(file: &Path) -> Env {
        let name = file.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        let parts: Vec<&str> = name.trim_end_matches(".whl").split('-').collect();
        if parts.len() < 5 {
            return Env::default();
        }
        let (python, platform) = (parts[parts.len() - 3], parts[parts.len() - 1]);
        let machine = platform.split('.').find_map(|p| {
            ["x86_64", "aarch64", "ppc64le", "s390x", "armv7l", "i686"]
                .into_iter()
                .find(|m| p.ends_with(m))
                .map(str::to_string)
        });
        let python = python
            .strip_prefix("cp")
            .filter(|v| v.len() >= 2 && v.chars().all(|c| c.is_ascii_digit()))
            .map(|v| format!("{}.{}", &v[..1], &v[1..]));
        Env { machine, python }
    }

    /// A marker variable's value; `None` when the wheel does not say.
    fn var(&self, name: &str, extra: Option<&str>) -> Option<Value> {
        let s = |v: &str| Some(Value::Str(v.to_string()));
        match name {
            "sys_platform" => s("linux"),
            "platform_system" => s("Linux"),
            "os_name" => s("posix"),
            "platform_machine" => self.machine.as_deref().and_then(s),
            "python_version" | "python_full_version" => self.python.as_deref().and_then(s),
            "implementation_name" if self.python.is_some() => s("cpython"),
            "platform_python_implementation" if self.python.is_some() => s("CPython"),
            "extra" => Some(Value::Extra(extra.map(normalise))),
            _ => None,
        }
    }
}

/// PEP 503 normalisation of a distribution or extra name (PEP 685): lower case, runs of `-_.` as one `-`.
pub fn normalise(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// Parses one `Requires-Dist` value (`name[extras] specifier; marker`) and decides when pip installs it.
/// `None` when there is no name to read.
pub fn requirement(text: &str, env: &Env) -> Option<Requirement> {
    let (spec, marker) = match text.split_once(';') {
        Some((s, m)) => (s.trim(), Some(m.trim())),
        None => (text.trim(), None),
    };
    let end = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(spec.len());
    if end == 0 {
        return None;
    }
    let name = normalise(&spec[..end]);
    let mut rest = spec[end..].trim_start();
    let mut extras = Vec::new();
    if let Some(inner) = rest.strip_prefix('[') {
        let close = inner.find(']')?;
        extras = inner[..close]
            .split(',')
            .map(normalise)
            .filter(|e| !e.is_empty())
            .collect();
        rest = inner[close + 1..].trim_start();
    }
    let specifier: String = rest
        .trim_start_matches('(')
        .trim_end_matches(')')
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (installed, extra) = match marker {
        None => (Installed::Always, None),
        Some(m) => installed(m, env),
    };
    Some(Requirement {
        text: text.trim().to_string(),
        name,
        extras,
        specifier,
        installed,
        extra,
        cuda: None,
    })
}

/// When a marker holds: without extras, else with the first extra it names that makes it hold, else never.
/// A marker that cannot be parsed is taken as holding (the dependency is assumed installed).
fn installed(marker: &str, env: &Env) -> (Installed, Option<String>) {
    let Some(expr) = Parser::new(marker).parse() else {
        return (Installed::Always, None);
    };
    if expr.eval(env, None) != Truth::False {
        return (Installed::Always, None);
    }
    let mut extras = Vec::new();
    expr.extras(&mut extras);
    for e in extras {
        if expr.eval(env, Some(&e)) != Truth::False {
            return (Installed::WithExtra, Some(e));
        }
    }
    (Installed::Never, None)
}

/// Three-valued logic: a comparison with a variable the wheel does not determine is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Truth {
    True,
    False,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Str(String),
    /// The `extra` variable: the extra being evaluated, or none.
    Extra(Option<String>),
}

#[derive(Debug)]
enum Operand {
    Var(String),
    Lit(String),
}

#[derive(Debug)]
enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cmp(Operand, String, Operand),
}

impl Expr {
    fn eval(&self, env: &Env, extra: Option<&str>) -> Truth {
        match self {
            Expr::And(a, b) => match (a.eval(env, extra), b.eval(env, extra)) {
                (Truth::False, _) | (_, Truth::False) => Truth::False,
                (Truth::True, Truth::True) => Truth::True,
                _ => Truth::Unknown,
            },
            Expr::Or(a, b) => match (a.eval(env, extra), b.eval(env, extra)) {
                (Truth::True, _) | (_, Truth::True) => Truth::True,
                (Truth::False, Truth::False) => Truth::False,
                _ => Truth::Unknown,
            },
            Expr::Cmp(l, op, r) => {
                let value = |o: &Operand| match o {
                    Operand::Var(v) => env.var(v, extra),
                    Operand::Lit(s) => Some(Value::Str(s.clone())),
                };
                match (value(l), value(r)) {
                    (Some(a), Some(b)) => compare(&a, op, &b),
                    _ => Truth::Unknown,
                }
            }
        }
    }

    /// The extras the marker compares `extra` with.
    fn extras(&self, out: &mut Vec<String>) {
        match self {
            Expr::And(a, b) | Expr::Or(a, b) => {
                a.extras(out);
                b.extras(out);
            }
            Expr::Cmp(Operand::Var(v), _, Operand::Lit(s))
            | Expr::Cmp(Operand::Lit(s), _, Operand::Var(v))
                if v == "extra" =>
            {
                let e = normalise(s);
                if !out.contains(&e) {
                    out.push(e);
                }
            }
            Expr::Cmp(..) => {}
        }
    }
}

fn compare(a: &Value, op: &str, b: &Value) -> Truth {
    let truth = |b: bool| if b { Truth::True } else { Truth::False };
    let (a, b) = match (a, b) {
        (Value::Extra(x), Value::Str(s)) | (Value::Str(s), Value::Extra(x)) => {
            let eq = x.as_deref() == Some(normalise(s).as_str());
            return match op {
                "==" | "===" => truth(eq),
                "!=" => truth(!eq),
                _ => Truth::Unknown,
            };
        }
        (Value::Str(a), Value::Str(b)) => (a.as_str(), b.as_str()),
        _ => return Truth::Unknown,
    };
    // PEP 508: versions compare as versions when both sides are versions, otherwise as strings.
    let version = |s: &str| -> Option<Vec<u64>> { s.split('.').map(|p| p.parse().ok()).collect() };
    match op {
        "in" => return truth(b.contains(a)),
        "not in" => return truth(!b.contains(a)),
        _ => {}
    }
    let ord = match (version(a), version(b)) {
        (Some(x), Some(y)) => {
            if op == "~=" {
                // Compatible release: >= y and the same prefix up to y's last-but-one part.
                let prefix = y.len().saturating_sub(1).max(1);
                return truth(x >= y && x.iter().take(prefix).eq(y.iter().take(prefix)));
            }
            let n = x.len().max(y.len());
            let pad = |v: &Vec<u64>| (0..n).map(|i| v.get(i).copied().unwrap_or(0)).collect::<Vec<_>>();
            pad(&x).cmp(&pad(&y))
        }
        _ => a.cmp(b),
    };
    use std::cmp::Ordering::*;
    match op {
        "==" | "===" => truth(ord == Equal),
        "!=" => truth(ord != Equal),
        "<" => truth(ord == Less),
        "<=" => truth(ord != Greater),
        ">" => truth(ord == Greater),
        ">=" => truth(ord != Less),
        _ => Truth::Unknown,
    }
}

/// Recursive descent over PEP 508's marker grammar: `or` of `and` of comparisons or parenthesised markers.
struct Parser<'a> {
    rest: &'a str,
}

impl<'a> Parser<'a> {
    fn new(s: &'a str) -> Parser<'a> {
        Parser { rest: s }
    }

    fn parse(mut self) -> Option<Expr> {
        let e = self.or()?;
        self.rest.trim().is_empty().then_some(e)
    }

    fn keyword(&mut self, k: &str) -> bool {
        let t = self.rest.trim_start();
        if let Some(after) = t.strip_prefix(k)
            && !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            self.rest = after;
            return true;
        }
        false
    }

    fn or(&mut self) -> Option<Expr> {
        let mut e = self.and()?;
        while self.keyword("or") {
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Some(e)
    }

    fn and(&mut self) -> Option<Expr> {
        let mut e = self.atom()?;
        while self.keyword("and") {
            e = Expr::And(Box::new(e), Box::new(self.atom()?));
        }
        Some(e)
    }

    fn atom(&mut self) -> Option<Expr> {
        self.rest = self.rest.trim_start();
        if let Some(inner) = self.rest.strip_prefix('(') {
            self.rest = inner;
            let e = self.or()?;
            self.rest = self.rest.trim_start().strip_prefix(')')?;
            return Some(e);
        }
        let l = self.operand()?;
        let op = self.op()?;
        let r = self.operand()?;
        Some(Expr::Cmp(l, op, r))
    }

    fn operand(&mut self) -> Option<Operand> {
        self.rest = self.rest.trim_start();
        let q = self.rest.chars().next()?;
        if q == '"' || q == '\'' {
            let body = &self.rest[1..];
            let end = body.find(q)?;
            self.rest = &body[end + 1..];
            return Some(Operand::Lit(body[..end].to_string()));
        }
        let end = self
            .rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(self.rest.len());
        if end == 0 {
            return None;
        }
        let v = self.rest[..end].to_string();
        self.rest = &self.rest[end..];
        Some(Operand::Var(v))
    }

    fn op(&mut self) -> Option<String> {
        self.rest = self.rest.trim_start();
        for op in ["===", "==", "!=", "<=", ">=", "~=", "<", ">"] {
            if let Some(after) = self.rest.strip_prefix(op) {
                self.rest = after;
                return Some(op.to_string());
            }
        }
        if self.keyword("in") {
            return Some("in".into());
        }
        if self.keyword("not") && self.keyword("in") {
            return Some("not in".into());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env::of_wheel(Path::new(
            "dist/torch-2.9.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        ))
    }

    #[test]
    fn wheel_tags_give_cpu_and_python() {
        let e = env();
        assert_eq!(e.machine.as_deref(), Some("x86_64"));
        assert_eq!(e.python.as_deref(), Some("3.11"));
        let any = Env::of_wheel(Path::new("pkg-1.0-py3-none-any.whl"));
        assert_eq!((any.machine, any.python), (None, None));
        let arm = Env::of_wheel(Path::new(
            "x-1-cp312-cp312-manylinux2014_aarch64.manylinux_2_17_aarch64.whl",
        ));
        assert_eq!(arm.machine.as_deref(), Some("aarch64"));
        assert_eq!(arm.python.as_deref(), Some("3.12"));
    }

    #[test]
    fn requirements_as_torch_and_cupy_write_them() {
        let r = requirement(
            "cuda-toolkit[cublas,cudart,cufft]==13.2.2; platform_system == \"Linux\"",
            &env(),
        )
        .unwrap();
        assert_eq!(r.name, "cuda-toolkit");
        assert_eq!(r.extras, ["cublas", "cudart", "cufft"]);
        assert_eq!(r.specifier, "==13.2.2");
        assert_eq!((r.installed, r.extra), (Installed::Always, None));
        let r = requirement("nvidia_CUDA.runtime-cu12 (==12.8.90)", &env()).unwrap();
        assert_eq!(
            (r.name.as_str(), r.specifier.as_str()),
            ("nvidia-cuda-runtime-cu12", "==12.8.90")
        );
        let r = requirement("cuda-toolkit[cublas,cudart]==12.*; extra == \"ctk\"", &env()).unwrap();
        assert_eq!(
            (r.installed, r.extra.as_deref()),
            (Installed::WithExtra, Some("ctk"))
        );
        let r = requirement("pywin32; sys_platform == 'win32'", &env()).unwrap();
        assert_eq!(r.installed, Installed::Never);
        let r = requirement(
            "cuda-bindings<14,>=13.0.3; platform_system == \"Linux\" and python_version < \"3.15\"",
            &env(),
        )
        .unwrap();
        assert_eq!(r.installed, Installed::Always);
        let r = requirement("triton; python_version >= \"3.12\"", &env()).unwrap();
        assert_eq!(r.installed, Installed::Never, "3.11 < 3.12 as versions");
        // The wheel does not say which Python: assumed installed.
        let any = Env::of_wheel(Path::new("pkg-1.0-py3-none-any.whl"));
        let r = requirement("triton; python_version >= \"3.12\"", &any).unwrap();
        assert_eq!(r.installed, Installed::Always);
        let r = requirement(
            "nvidia-nccl-cu12; platform_machine == 'aarch64' or (extra == 'Dist_Extra' and os_name == 'posix')",
            &env(),
        )
        .unwrap();
        assert_eq!(
            (r.installed, r.extra.as_deref()),
            (Installed::WithExtra, Some("dist-extra"))
        );
        let r = requirement("x; platform_machine not in 'aarch64 ppc64le'", &env()).unwrap();
        assert_eq!(r.installed, Installed::Always);
        assert!(requirement("; extra == 'a'", &env()).is_none());
    }
}
