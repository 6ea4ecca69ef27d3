//! The crate's layering, checked: which top-level module may name which (`use crate::X`, `crate::X::`).
//!
//! The pipeline reads bytes and the machine into facts, judges facts into findings, and renders findings:
//!
//! ```text
//! layer 0  system, facts, findings, glibc, parallel    the nouns: facts (serde alone), finding codes, helpers
//! layer 1  inspect, image, loader, host, probe,        the collectors: read bytes, images and the machine into
//!          matrix, policy, build_info, python           facts
//! layer 2  rules, container, diff, bundle, fleet,      judge facts: into findings (rules; container, the
//!          explain                                      toolkit's view of a node), into differences (diff),
//!                                                      into a redacted, bounded bundle or labels (bundle),
//!                                                      nodes into groups and predictions (fleet),
//!                                                      a pasted message into ranked causes (explain)
//! layer 3  report                                      present findings and facts, never judge
//! layer 4  cli, commands, fuzzing                      glue
//! ```
//!
//! A module may name modules of its own layer or below, never above; the graph of top-level modules has no
//! cycle; and `facts` names no other module of the crate (it is the data every stage shares).
//! `cargo test --test it layering::module_graph -- --nocapture` prints the graph, one edge a line, so that a
//! change to it can be read in review (with `CUDADIAG_GRAPH_SRC=DIR`, the graph of another checkout's `src`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The allowed layering, lowest first. A module not listed here fails the test: place it when you add it.
const LAYERS: &[&[&str]] = &[
    &["system", "facts", "findings", "glibc", "parallel"],
    &[
        "inspect",
        "image",
        "loader",
        "host",
        "probe",
        "matrix",
        "policy",
        "build_info",
        "python",
    ],
    &[
        "rules",
        "container",
        "diff",
        "bundle",
        "fleet",
        "explain",
        "imports",
    ],
    &["diagnose"],
    &["report"],
    &["cli", "commands", "fuzzing"],
];

/// Edges between the top-level modules of `src/`, from the `crate::` paths in each file (comments and unit
/// tests aside).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    // `CUDADIAG_GRAPH_SRC=/other/checkout/src` prints another tree's graph, for a before/after comparison.
    let src = std::env::var_os("CUDADIAG_GRAPH_SRC")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src is readable") {
            let path = entry.expect("src entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).expect("under src");
            let first = rel
                .components()
                .next()
                .expect("a component")
                .as_os_str()
                .to_string_lossy();
            let from = first.trim_end_matches(".rs").to_string();
            if from == "lib" || from == "main" || path.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source is UTF-8");
            let text = without_test_modules(&text);
            for to in named_modules(&text) {
                if to != from {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    edges
}

/// The source without its `#[cfg(test)] mod … { … }` blocks: unit tests may reach across layers to build their
/// inputs. Braces are counted outside string literals and comments.
fn without_test_modules(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let Some(open) = after.find(['{', ';']) else {
            return out;
        };
        if after.as_bytes()[open] == b';' {
            rest = &after[open + 1..];
            continue;
        }
        let (mut depth, mut in_str, mut escaped, mut end) = (0usize, false, false, after.len());
        let mut chars = after[open..].char_indices().peekable();
        while let Some((j, c)) = chars.next() {
            if in_str {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_str = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_str = true,
                '/' if chars.peek().is_some_and(|(_, n)| *n == '/') => {
                    while chars.next_if(|(_, n)| *n != '\n').is_some() {}
                }
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Top-level modules named by `crate::X` or inside `use crate::{X, Y::…}`, outside comments.
fn named_modules(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        let preceded = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if preceded.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a::b, c, d::{e, f}}`: the first identifier of each item at depth one.
            let (mut depth, mut expecting, mut ident) = (1, true, String::new());
            for c in group.chars() {
                let word = c.is_alphanumeric() || c == '_';
                if depth == 1 && expecting && word {
                    ident.push(c);
                    continue;
                }
                if !ident.is_empty() {
                    out.insert(std::mem::take(&mut ident));
                    expecting = false;
                }
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => break,
                    '}' => depth -= 1,
                    ',' if depth == 1 => expecting = true,
                    _ => {}
                }
            }
        } else {
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !ident.is_empty() {
                out.insert(ident);
            }
        }
    }
    out
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Prints the graph: `from -> to` a line, sorted.
#[test]
fn module_graph_prints() {
    let g = graph();
    let mut text = String::new();
    for (from, tos) in &g {
        for to in tos {
            text.push_str(&format!("{from} -> {to}\n"));
        }
    }
    // The graph is this test's output (shown with --nocapture); the test harness captures it otherwise.
    #[allow(clippy::disallowed_macros)]
    {
        print!("{text}");
    }
    assert!(g.contains_key("commands"), "the walk found the crate's modules");
}

#[test]
fn modules_respect_the_layering() {
    let g = graph();
    let mut bad = Vec::new();
    for (from, tos) in &g {
        let Some(lf) = layer_of(from) else {
            bad.push(format!(
                "{from} is in no layer: add it to LAYERS in tests/it/layering.rs"
            ));
            continue;
        };
        for to in tos {
            match layer_of(to) {
                None => bad.push(format!("{to} (named by {from}) is in no layer")),
                Some(lt) if lt > lf => bad.push(format!("{from} (layer {lf}) names {to} (layer {lt})")),
                Some(_) => {}
            }
        }
    }
    assert!(bad.is_empty(), "layering violations:\n{}", bad.join("\n"));
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let g = graph();
    // Depth-first search with colours; report the first cycle found, as a path.
    fn visit<'a>(
        n: &'a str,
        g: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        state.insert(n, 1);
        path.push(n);
        for m in g.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let at = path.iter().position(|p| *p == m).unwrap_or(0);
                    let mut cycle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, g, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(n, 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if !state.contains_key(n.as_str()) {
            let mut path = Vec::new();
            if let Some(c) = visit(n, &g, &mut state, &mut path) {
                panic!("import cycle: {}", c.join(" -> "));
            }
        }
    }
}

#[test]
fn facts_depend_on_serde_alone() {
    let g = graph();
    assert_eq!(
        g.get("facts"),
        None,
        "src/facts/ must name no other module of the crate"
    );
}

#[test]
fn test_modules_are_left_out_and_what_follows_them_is_not() {
    let src = "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn f() { let s = \"}\"; }\n}\nuse crate::c;\n";
    let names: Vec<_> = named_modules(&without_test_modules(src)).into_iter().collect();
    assert_eq!(names, ["a", "c"]);
}

#[test]
fn the_parser_reads_grouped_uses() {
    let names = named_modules(
        "use crate::{facts::X, loader, host::{a, b}};\n// crate::report\nlet x = crate::rules::f();",
    );
    let names: Vec<_> = names.into_iter().collect();
    assert_eq!(names, ["facts", "host", "loader", "rules"]);
}
