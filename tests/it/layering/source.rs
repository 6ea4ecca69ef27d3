//! The crate's imports read from its source: which file names which, through `use` items and paths.
//!
//! Files are lexed by `proc_macro2` (Rust's own token grammar: comments, raw strings, char literals and
//! lifetimes are told apart as the compiler tells them), so nothing inside a literal or a comment is taken for
//! a path. The module tree is walked from `lib.rs` along its `mod` items, leaving out what `#[cfg(test)]`
//! guards (unit tests may reach across layers to build their inputs). A path is resolved as rustc would for
//! the cases this crate uses: `crate::`, `self::`, `super::`, a child module's name, a name bound by a `use`
//! (an alias is followed), and an item re-exported by a `use` or a glob (followed to the file that defines
//! it, so that `use crate::facts::Facts` names the file of `Facts`, not the `facts/mod.rs` that re-exports it).

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module by its path from the crate root: `["rules", "compat"]`; the root is `[]`.
pub type ModPath = Vec<String>;

/// A token with the little the walk needs: identifiers (with their line), punctuation (`joint` when glued to
/// the next one, as the first `:` of `::`), literals (kept for `#[path = "…"]`) and delimited groups.
#[derive(Clone, Debug)]
pub enum Tok {
    Ident(String, usize),
    Punct(char, bool),
    Lit(String),
    Group(Delimiter, Vec<Tok>),
}

impl Tok {
    fn ident(&self) -> Option<&str> {
        match self {
            Tok::Ident(s, _) => Some(s),
            _ => None,
        }
    }
    fn is_punct(&self, c: char) -> bool {
        matches!(self, Tok::Punct(p, _) if *p == c)
    }
}

/// The tokens of `text`, with every item that `#[cfg(test)]` guards left out.
pub fn lex(text: &str) -> Result<Vec<Tok>, String> {
    let stream: TokenStream = text.parse().map_err(|e| format!("{e:?}"))?;
    Ok(convert(stream))
}

fn convert(stream: TokenStream) -> Vec<Tok> {
    let raw: Vec<TokenTree> = stream.into_iter().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        if is_cfg_test(&raw, i) {
            // The attribute, the item's other outer attributes, then the item: up to its `;` or its body.
            i += 2;
            while matches!((raw.get(i), raw.get(i + 1)), (Some(TokenTree::Punct(p)), Some(TokenTree::Group(g)))
                if p.as_char() == '#' && g.delimiter() == Delimiter::Bracket)
            {
                i += 2;
            }
            while let Some(t) = raw.get(i) {
                i += 1;
                match t {
                    TokenTree::Punct(p) if p.as_char() == ';' => break,
                    TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => break,
                    _ => {}
                }
            }
            continue;
        }
        out.push(match &raw[i] {
            TokenTree::Ident(x) => Tok::Ident(x.to_string(), x.span().start().line),
            TokenTree::Punct(p) => Tok::Punct(p.as_char(), p.spacing() == proc_macro2::Spacing::Joint),
            TokenTree::Literal(l) => Tok::Lit(l.to_string()),
            TokenTree::Group(g) => Tok::Group(g.delimiter(), convert(g.stream())),
        });
        i += 1;
    }
    out
}

fn is_cfg_test(raw: &[TokenTree], i: usize) -> bool {
    let (Some(TokenTree::Punct(p)), Some(TokenTree::Group(g))) = (raw.get(i), raw.get(i + 1)) else {
        return false;
    };
    p.as_char() == '#'
        && g.delimiter() == Delimiter::Bracket
        && g.stream().to_string().replace(' ', "") == "cfg(test)"
}

/// `t[i]` and `t[i + 1]` are the two colons of `::`.
fn colon2(t: &[Tok], i: usize) -> bool {
    matches!(t.get(i), Some(Tok::Punct(':', true))) && t.get(i + 1).is_some_and(|n| n.is_punct(':'))
}

/// The leaves of a use tree (`a::{b, c::d as e, f::*}`): each full path, with the name it binds (`None` for
/// `as _` and for a glob) and whether it is a glob.
pub fn use_leaves(t: &[Tok], prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>, bool)>) {
    let mut segs = prefix.to_vec();
    let mut k = 0;
    if prefix.is_empty() && colon2(t, 0) {
        return; // `use ::extern_crate::…`
    }
    while let Some(tok) = t.get(k) {
        match tok {
            Tok::Ident(x, _) => {
                segs.push(x.clone());
                k += 1;
                if colon2(t, k) {
                    k += 2;
                    continue;
                }
                let mut bind = Some(x.clone());
                if x == "self" {
                    segs.pop();
                    bind = segs.last().cloned();
                }
                if t.get(k).and_then(Tok::ident) == Some("as") {
                    bind = t
                        .get(k + 1)
                        .and_then(Tok::ident)
                        .filter(|n| *n != "_")
                        .map(str::to_string);
                }
                out.push((segs, bind, false));
                return;
            }
            Tok::Punct('*', _) => {
                out.push((segs, None, true));
                return;
            }
            Tok::Group(Delimiter::Brace, inner) => {
                for part in inner.split(|x| x.is_punct(',')) {
                    if !part.is_empty() {
                        use_leaves(part, &segs, out);
                    }
                }
                return;
            }
            _ => return,
        }
    }
}

/// What one module declares: where it is written, its child modules, the items it defines, the names its `use`
/// items bind (to the path they stand for) and its globs.
#[derive(Debug, Default)]
pub struct Module {
    pub file: PathBuf,
    pub children: BTreeSet<String>,
    pub items: BTreeSet<String>,
    pub bindings: BTreeMap<String, Vec<String>>,
    pub globs: Vec<Vec<String>>,
}

/// A path named in code (or by a `use`), where it was named.
#[derive(Debug)]
pub struct Reference {
    pub file: PathBuf,
    pub scope: ModPath,
    pub segments: Vec<String>,
    pub line: usize,
}

/// The crate as its source declares it: every module, every path it names.
#[derive(Debug, Default)]
pub struct Crate {
    pub modules: BTreeMap<ModPath, Module>,
    pub references: Vec<Reference>,
}

/// Where a path leads: the module its walk ends in (`named`: what the importer wrote), the module that defines
/// the item (`defined_in`: re-exports followed) and that module's file.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub named: ModPath,
    pub defined_in: ModPath,
    pub file: PathBuf,
}

/// Keywords after which the next identifier is an item the module defines.
const DEFINES: &[&str] = &[
    "struct", "enum", "union", "fn", "type", "const", "static", "trait",
];

impl Crate {
    /// Reads the crate whose root is `src/lib.rs`; file names are kept relative to `src`.
    pub fn read(src: &Path) -> Crate {
        let mut krate = Crate::default();
        krate.load(src, Path::new("lib.rs"), Vec::new(), PathBuf::new());
        krate
    }

    /// A crate of one file, `text` as its `lib.rs` (its modules inline), for the parser's own tests.
    pub fn from_text(text: &str) -> Crate {
        let mut krate = Crate::default();
        let tokens = lex(text).expect("test source lexes");
        let nowhere = Path::new("/nonexistent");
        krate.scan(&tokens, nowhere, &[], Path::new("lib.rs"), Path::new(""), true);
        krate
    }

    fn load(&mut self, src: &Path, file: &Path, module: ModPath, child_dir: PathBuf) {
        let path = src.join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (a `mod` item names it)", path.display()));
        let tokens = lex(&text).unwrap_or_else(|e| panic!("{}: does not lex: {e}", path.display()));
        self.scan(&tokens, src, &module, file, &child_dir, true);
    }

    /// Records what `t` (the tokens of module `scope`, written in `file`) declares and names. `child_dir` is
    /// where the files of its child modules are; `item_level` is false inside bodies.
    fn scan(
        &mut self,
        t: &[Tok],
        src: &Path,
        scope: &[String],
        file: &Path,
        child_dir: &Path,
        item_level: bool,
    ) {
        self.modules.entry(scope.to_vec()).or_insert_with(|| Module {
            file: file.to_path_buf(),
            ..Module::default()
        });
        let mut path_attr: Option<String> = None;
        let mut i = 0;
        while i < t.len() {
            let next = t.get(i + 1);
            match &t[i] {
                Tok::Punct('#', _) if matches!(next, Some(Tok::Group(Delimiter::Bracket, _))) => {
                    if let Some(Tok::Group(_, a)) = next
                        && let [Tok::Ident(k, _), Tok::Punct('=', _), Tok::Lit(v)] = a.as_slice()
                        && k == "path"
                    {
                        path_attr = Some(v.trim_matches('"').to_string());
                    }
                    // An attribute names paths too: `#[command(long_version = crate::build_info::X)]`.
                    if let Some(Tok::Group(_, a)) = next {
                        self.scan(a, src, scope, file, child_dir, false);
                    }
                    i += 2;
                    continue;
                }
                Tok::Ident(k, _) if k == "mod" && item_level => {
                    if let Some(Tok::Ident(name, _)) = next {
                        self.child(name, t.get(i + 2), src, scope, file, child_dir, path_attr.take());
                        i += 3;
                        continue;
                    }
                }
                Tok::Ident(k, line) if k == "use" && !next.is_some_and(|n| n.is_punct('<')) => {
                    let end = t[i..]
                        .iter()
                        .position(|x| x.is_punct(';'))
                        .map_or(t.len(), |p| i + p);
                    let mut leaves = Vec::new();
                    use_leaves(&t[i + 1..end], &[], &mut leaves);
                    let module = self.modules.get_mut(scope).expect("entered above");
                    for (segments, bind, glob) in leaves {
                        if glob {
                            module.globs.push(segments.clone());
                        } else if let Some(b) = bind {
                            module.bindings.entry(b).or_insert_with(|| segments.clone());
                        }
                        self.references.push(Reference {
                            file: file.to_path_buf(),
                            scope: scope.to_vec(),
                            segments,
                            line: *line,
                        });
                    }
                    i = end + 1;
                    continue;
                }
                Tok::Ident(k, _) if item_level && (DEFINES.contains(&k.as_str()) || k == "macro_rules") => {
                    let name = if k == "macro_rules" { t.get(i + 2) } else { next };
                    if let Some(Tok::Ident(name, _)) = name {
                        self.modules
                            .get_mut(scope)
                            .expect("entered")
                            .items
                            .insert(name.clone());
                    }
                }
                Tok::Ident(first, line) if colon2(t, i + 1) => {
                    let before = i.checked_sub(1).map(|b| &t[b]);
                    // `x.method::<T>()`, `$crate::…` (a macro's own crate) and `::extern::…` are not paths to
                    // this crate's modules as written here (a single `:`, as in `field: crate::X`, is no `::`).
                    let skip = before.is_some_and(|b| b.is_punct('.') || b.is_punct('$'))
                        || i.checked_sub(2).is_some_and(|b| colon2(t, b));
                    let mut segments = vec![first.clone()];
                    let mut j = i + 1;
                    while colon2(t, j) {
                        match t.get(j + 2) {
                            Some(Tok::Ident(s, _)) => segments.push(s.clone()),
                            _ => break,
                        }
                        j += 3;
                    }
                    if !skip {
                        self.references.push(Reference {
                            file: file.to_path_buf(),
                            scope: scope.to_vec(),
                            segments,
                            line: *line,
                        });
                    }
                    i = j;
                    continue;
                }
                Tok::Group(_, inner) => self.scan(inner, src, scope, file, child_dir, false),
                _ => {}
            }
            i += 1;
        }
    }

    /// A `mod name;` (its file is read) or `mod name { … }` (scanned as a module of its own).
    #[allow(clippy::too_many_arguments)]
    fn child(
        &mut self,
        name: &str,
        after: Option<&Tok>,
        src: &Path,
        scope: &[String],
        file: &Path,
        child_dir: &Path,
        path_attr: Option<String>,
    ) {
        let mut module = scope.to_vec();
        module.push(name.to_string());
        match after {
            Some(t) if t.is_punct(';') => {
                let (child_file, dir) = match path_attr {
                    // `#[path]` on a `mod` outside an inline module is relative to the declaring file's folder.
                    Some(p) => {
                        let f = file.parent().unwrap_or(Path::new("")).join(p);
                        let d = f.parent().unwrap_or(Path::new("")).to_path_buf();
                        (f, d)
                    }
                    None => {
                        let flat = child_dir.join(format!("{name}.rs"));
                        let f = if src.join(&flat).is_file() {
                            flat
                        } else {
                            child_dir.join(name).join("mod.rs")
                        };
                        (f, child_dir.join(name))
                    }
                };
                self.modules
                    .get_mut(scope)
                    .expect("entered")
                    .children
                    .insert(name.to_string());
                self.load(src, &child_file, module, dir);
            }
            Some(Tok::Group(Delimiter::Brace, inner)) => {
                self.modules
                    .get_mut(scope)
                    .expect("entered")
                    .children
                    .insert(name.to_string());
                self.scan(inner, src, &module, file, &child_dir.join(name), true);
            }
            _ => {}
        }
    }

    /// What `segments`, named in module `scope`, reaches: the module its walk ends in (the module it names)
    /// and the file that defines the item (re-exports followed). `None` for a path outside the crate (`std::`,
    /// `serde::`), a generic or a local name.
    pub fn resolve(&self, scope: &[String], segments: &[String], depth: usize) -> Option<Target> {
        if depth > 16 {
            return None;
        }
        let first = segments.first()?.as_str();
        let (mut m, rest): (ModPath, &[String]) = match first {
            "crate" => (Vec::new(), &segments[1..]),
            "self" => (scope.to_vec(), &segments[1..]),
            "super" => {
                let mut m = scope.to_vec();
                let supers = segments.iter().take_while(|s| *s == "super").count();
                for _ in 0..supers {
                    m.pop()?;
                }
                (m, &segments[supers..])
            }
            _ => {
                let module = self.modules.get(scope)?;
                if module.children.contains(first) {
                    let mut m = scope.to_vec();
                    m.push(first.to_string());
                    (m, &segments[1..])
                } else {
                    // A name a `use` bound: the path it stands for, followed by the rest.
                    let bound = module.bindings.get(first)?;
                    let mut full = bound.clone();
                    full.extend_from_slice(&segments[1..]);
                    return self.resolve(scope, &full, depth + 1);
                }
            }
        };
        for seg in rest {
            if seg == "self" {
                continue;
            }
            if self.modules.get(&m)?.children.contains(seg) {
                m.push(seg.clone());
                continue;
            }
            let defined_in = self.defining_module(&m, seg, depth + 1);
            let file = self.modules[&defined_in].file.clone();
            return Some(Target {
                named: m,
                defined_in,
                file,
            });
        }
        let file = self.modules.get(&m)?.file.clone();
        Some(Target {
            named: m.clone(),
            defined_in: m,
            file,
        })
    }

    /// The module that defines item `name` of module `m`: `m` itself, unless `m` only re-exports it.
    fn defining_module(&self, m: &[String], name: &str, depth: usize) -> ModPath {
        let module = &self.modules[m];
        if module.items.contains(name) || depth > 16 {
            return m.to_vec();
        }
        if let Some(bound) = module.bindings.get(name) {
            return self
                .resolve(m, bound, depth + 1)
                .map_or_else(|| m.to_vec(), |t| t.defined_in);
        }
        for glob in &module.globs {
            if let Some(g) = self.resolve(m, glob, depth + 1)
                && self.defines(&g.named, name, depth + 1)
            {
                return self.defining_module(&g.named, name, depth + 1);
            }
        }
        m.to_vec()
    }

    fn defines(&self, m: &[String], name: &str, depth: usize) -> bool {
        let Some(module) = self.modules.get(m) else {
            return false;
        };
        depth < 16
            && (module.items.contains(name)
                || module.children.contains(name)
                || module.bindings.contains_key(name)
                || module.globs.iter().any(|g| {
                    self.resolve(m, g, depth + 1)
                        .is_some_and(|g| self.defines(&g.named, name, depth + 1))
                }))
    }
}
