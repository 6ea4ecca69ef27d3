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
//!
//! Inside a module the same holds file by file: no file imports, directly or through others, a file that
//! imports it (shared types live in leaf files; a `mod.rs` declares, re-exports and calls its children, and
//! no child calls back up). `cargo test --test it layering::file_graph -- --nocapture` prints the file graph,
//! each edge with the first path that makes it, and its knots. The paths are read by `source.rs` beside
//! this file, which tests its own reading of raw strings, char literals, lifetimes and `super::` paths below.

mod source;

use source::Crate;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// The `src` whose graph is drawn: this checkout's, or `CUDADIAG_GRAPH_SRC=/other/checkout/src` for a
/// before/after comparison.
fn src_dir() -> PathBuf {
    std::env::var_os("CUDADIAG_GRAPH_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The top-level module a file belongs to: `rules` for `rules/compat.rs`, `loader` for `loader.rs`.
fn top_of(file: &Path) -> String {
    let first = file
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    first.unwrap_or_default().trim_end_matches(".rs").to_string()
}

/// Edges between the top-level modules of `src/`: `from -> to` when a file of `from` names a path into `to`
/// (the module it names, as written: a re-export by `to` of another module's item is still an edge to `to`).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    graph_of(&Crate::read(&src_dir()))
}

fn graph_of(krate: &Crate) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in &krate.references {
        let from = top_of(&r.file);
        let Some(to) = krate
            .resolve(&r.scope, &r.segments, 0)
            .and_then(|t| t.named.first().cloned())
        else {
            continue;
        };
        if from != "lib" && to != from {
            edges.entry(from).or_default().insert(to);
        }
    }
    edges
}

/// How one file reaches another: the first path (with its line) that makes the edge.
type FileEdges = BTreeMap<String, BTreeMap<String, String>>;

/// Edges between the files of `src/` (relative names, `rules/compat.rs`): `from -> to` when `from` names an
/// item that `to` defines (re-exports followed to the defining file), or module `to` itself.
fn file_graph(krate: &Crate) -> FileEdges {
    let mut edges = FileEdges::new();
    for r in &krate.references {
        let Some(t) = krate.resolve(&r.scope, &r.segments, 0) else {
            continue;
        };
        if t.file == r.file {
            continue;
        }
        let (from, to) = (r.file.display().to_string(), t.file.display().to_string());
        let evidence = format!("line {}: {}", r.line, r.segments.join("::"));
        edges.entry(from).or_default().entry(to).or_insert(evidence);
    }
    edges
}

/// The knots of a graph: its strongly connected components of more than one node (Tarjan's algorithm), each
/// sorted, in the order of their smallest node.
fn knots(g: &FileEdges) -> Vec<Vec<String>> {
    struct Walk<'a> {
        g: &'a FileEdges,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, n: &'a str) {
        let i = w.index.len();
        w.index.insert(n, (i, i));
        w.stack.push(n);
        w.on_stack.insert(n);
        for m in w.g.get(n).into_iter().flat_map(|e| e.keys()) {
            if !w.index.contains_key(m.as_str()) {
                visit(w, m);
                let low = w.index[m.as_str()].1;
                let e = w.index.get_mut(n).expect("indexed");
                e.1 = e.1.min(low);
            } else if w.on_stack.contains(m.as_str()) {
                let idx = w.index[m.as_str()].0;
                let e = w.index.get_mut(n).expect("indexed");
                e.1 = e.1.min(idx);
            }
        }
        let (idx, low) = w.index[n];
        if idx == low {
            let mut knot = Vec::new();
            while let Some(m) = w.stack.pop() {
                w.on_stack.remove(m);
                knot.push(m.to_string());
                if m == n {
                    break;
                }
            }
            if knot.len() > 1 {
                knot.sort();
                w.out.push(knot);
            }
        }
    }
    let mut w = Walk {
        g,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for n in g.keys() {
        if !w.index.contains_key(n.as_str()) {
            visit(&mut w, n);
        }
    }
    w.out.sort();
    w.out
}

/// The shortest circle through the first file of `knot`, each step with the path that makes it:
/// `a.rs -> b.rs (line 3: super::b::X)`.
fn circle(g: &FileEdges, knot: &[String]) -> Vec<String> {
    let start = knot[0].as_str();
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(n) = queue.pop_front() {
        for m in g.get(n).into_iter().flat_map(|e| e.keys()) {
            if !knot.contains(m) || came_from.contains_key(m.as_str()) {
                continue;
            }
            came_from.insert(m, n);
            if m == start {
                queue.clear();
                break;
            }
            queue.push_back(m);
        }
    }
    let mut path = vec![start];
    let mut at = came_from.get(start).copied();
    while let Some(n) = at {
        if n == start {
            break;
        }
        path.push(n);
        at = came_from.get(n).copied();
    }
    path.push(start);
    path.reverse();
    path.windows(2)
        .map(|w| format!("{} -> {} ({})", w[0], w[1], g[w[0]][w[1]]))
        .collect()
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

/// Prints the file graph, `from -> to (line N: the path)` a line, then its knots (files that import each other
/// in a circle), each with one circle through it.
#[test]
fn file_graph_prints() {
    let g = file_graph(&Crate::read(&src_dir()));
    let mut text = String::new();
    for (from, tos) in &g {
        for (to, evidence) in tos {
            text.push_str(&format!("{from} -> {to} ({evidence})\n"));
        }
    }
    let knots = knots(&g);
    text.push_str(&format!(
        "{} knots of files importing each other in a circle\n",
        knots.len()
    ));
    for knot in &knots {
        text.push_str(&format!("knot of {}: {}\n", knot.len(), knot.join(", ")));
    }
    // The graph is this test's output (shown with --nocapture); the test harness captures it otherwise.
    #[allow(clippy::disallowed_macros)]
    {
        print!("{text}");
    }
    let edges: usize = g.values().map(BTreeMap::len).sum();
    assert!(edges > 300, "the walk found the crate's files ({edges} edges)");
}

/// No file imports, directly or through others, a file that imports it: each circle is printed as the paths
/// that make it, so that it can be broken where it is weakest (a shared type moved to a leaf module).
#[test]
fn no_import_circle_between_files() {
    let g = file_graph(&Crate::read(&src_dir()));
    let failing: Vec<String> = knots(&g)
        .into_iter()
        .map(|k| {
            format!(
                "knot of {} files: {}\n  {}",
                k.len(),
                k.join(", "),
                circle(&g, &k).join("\n  ")
            )
        })
        .collect();
    assert!(
        failing.is_empty(),
        "{} import circles between files:\n{}",
        failing.len(),
        failing.join("\n")
    );
}

/// Every path that starts at this crate (`crate::`, `self::`, `super::`) leads to a module the walk found, so
/// that the graphs above cannot lose an edge to a path the resolver did not understand.
#[test]
fn every_path_into_the_crate_resolves() {
    let krate = Crate::read(&src_dir());
    let mut lost = Vec::new();
    let mut checked = 0;
    for r in &krate.references {
        if !matches!(r.segments[0].as_str(), "crate" | "self" | "super") {
            continue;
        }
        checked += 1;
        if krate.resolve(&r.scope, &r.segments, 0).is_none() {
            lost.push(format!(
                "{}:{}: {}",
                r.file.display(),
                r.line,
                r.segments.join("::")
            ));
        }
    }
    assert!(checked > 1000, "the walk read the crate's paths ({checked})");
    assert!(
        lost.is_empty(),
        "paths the resolver does not follow:\n{}",
        lost.join("\n")
    );
}

/// `rules` judges and returns one judgement; `report` presents it and `commands` glue: neither names a rule
/// module, so that no judgement is re-derived where it is shown.
#[test]
fn report_and_commands_name_no_rules_module() {
    let krate = Crate::read(&src_dir());
    let mut bad = Vec::new();
    for r in &krate.references {
        let top = top_of(&r.file);
        if top != "report" && top != "commands" {
            continue;
        }
        if krate
            .resolve(&r.scope, &r.segments, 0)
            .is_some_and(|t| t.named.first().is_some_and(|m| m == "rules"))
        {
            bad.push(format!(
                "{}:{}: {}",
                r.file.display(),
                r.line,
                r.segments.join("::")
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "report/ and commands/ name rules:\n{}",
        bad.join("\n")
    );
}

/// The modules each module of a one-file crate names (by the module its path walks to), for the parser's tests.
fn names(src: &str) -> BTreeMap<String, BTreeSet<String>> {
    let krate = Crate::from_text(src);
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in &krate.references {
        if let Some(t) = krate.resolve(&r.scope, &r.segments, 0)
            && t.named != r.scope
        {
            out.entry(r.scope.join("::"))
                .or_default()
                .insert(t.named.join("::"));
        }
    }
    out
}

fn expect(pairs: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
        .collect()
}

#[test]
fn test_modules_are_left_out_and_what_follows_them_is_not() {
    let src = "mod a {} mod b {} mod c {}\nmod m {\n use crate::a;\n #[cfg(test)]\n mod tests {\n use crate::b;\n fn f() { let s = \"}\"; }\n }\n use crate::c;\n}\n";
    assert_eq!(names(src), expect(&[("m", &["a", "c"])]));
}

#[test]
fn the_parser_reads_grouped_uses() {
    let src = "mod facts { pub mod x {} } mod loader {} mod host { pub mod a {} pub mod b {} } mod rules {}\nmod m {\n use crate::{facts::x, loader, host::{a, b}};\n // crate::report\n fn f() { let x = crate::rules::f(); }\n}";
    assert_eq!(
        names(src),
        expect(&[("m", &["facts::x", "host::a", "host::b", "loader", "rules"])])
    );
}

#[test]
fn paths_in_field_types_and_attributes_are_read_and_extern_paths_are_not() {
    let src = "mod a { pub struct A; } mod b { pub const V: &str = \"\"; } mod c {}\nmod m {\n #[command(version = crate::b::V)]\n struct S { x: crate::a::A, y: ::c::D }\n}";
    assert_eq!(names(src), expect(&[("m", &["a", "b"])]));
}

#[test]
fn raw_strings_hide_their_paths() {
    // A raw string holds quotes and backslashes that an escaped-string reader would take for its end.
    let src = "mod a {} mod b {} mod c {}\nmod m {\n fn f() {\n let s = r#\"crate::b::g() \"# ; let t = r\"\\\"; let u = br##\"crate::c\"#\"##;\n crate::a::f();\n }\n}";
    assert_eq!(names(src), expect(&[("m", &["a"])]));
}

#[test]
fn char_literals_are_not_braces_or_quotes_and_lifetimes_are_not_chars() {
    let src = "mod a {} mod b {}\nmod m {\n #[cfg(test)]\n mod tests {\n fn f() { let c = '{'; let q = '\"'; }\n }\n struct S<'a>(&'a u8);\n fn g<'b>(x: &'b str) -> char { crate::a::f(); '\\'' }\n fn h() { let q = '\"'; crate::b::f(); }\n}";
    assert_eq!(names(src), expect(&[("m", &["a", "b"])]));
}

#[test]
fn super_and_self_paths_resolve_to_the_module_they_name() {
    let src = "mod a {\n pub fn f() {}\n pub mod inner {\n pub fn h() { super::super::b::g(); self::x(); super::f(); }\n fn x() {}\n }\n}\nmod b {\n use super::a::inner as i;\n pub fn g() { i::h(); }\n}";
    assert_eq!(
        names(src),
        expect(&[("a::inner", &["a", "b"]), ("b", &["a::inner"])])
    );
}

#[test]
fn a_re_export_leads_to_the_module_that_defines_the_item() {
    let src = "mod facts {\n mod binary { pub struct Facts; }\n pub use binary::*;\n pub use self::host::Host as H;\n pub mod host { pub struct Host; }\n}\nmod rules { use crate::facts::{Facts, H}; }";
    let krate = Crate::from_text(src);
    let defined: BTreeSet<String> = krate
        .references
        .iter()
        .filter(|r| r.scope == ["rules"])
        .filter_map(|r| krate.resolve(&r.scope, &r.segments, 0))
        .map(|t| format!("{} in {}", t.named.join("::"), t.defined_in.join("::")))
        .collect();
    let want: BTreeSet<String> = ["facts in facts::binary", "facts in facts::host"]
        .map(String::from)
        .into();
    assert_eq!(defined, want);
}

#[test]
fn a_circle_is_found_and_printed_with_the_paths_that_make_it() {
    let mut g = FileEdges::new();
    for (from, to) in [
        ("a.rs", "b.rs"),
        ("b.rs", "c.rs"),
        ("c.rs", "a.rs"),
        ("c.rs", "d.rs"),
        ("d.rs", "e.rs"),
    ] {
        g.entry(from.into())
            .or_default()
            .insert(to.into(), format!("line 1: {}", to.trim_end_matches(".rs")));
    }
    let k = knots(&g);
    assert_eq!(k, [["a.rs", "b.rs", "c.rs"]]);
    assert_eq!(
        circle(&g, &k[0]),
        [
            "a.rs -> b.rs (line 1: b)",
            "b.rs -> c.rs (line 1: c)",
            "c.rs -> a.rs (line 1: a)"
        ]
    );
}
