//! The human loader tree, libtree-style: each library with a tag saying how ld.so found it (`[rpath]`,
//! `[rpath of X]`, `[LD_LIBRARY_PATH]`, `[runpath]`, `[ld.so.cache]`, `[default path]`, `[dlopen]`), and for a
//! library that is not found the numbered search trail, the copies elsewhere on disk and a one-line fix.

use super::model::Fixes;
use super::paint::Paint;
use super::sane::Sane;
use crate::facts::loader::{How, Library, Resolution};
use std::collections::BTreeSet;
use std::io::{self, Write};

/// Writes the tree of `r` under its binary's summary line (`inspect -v`; without `-v` the findings carry the
/// trail of whatever is wrong). Requests answered by an object already loaded are shown only for `dlopen`s.
/// `fixes` holds the rules' one-line fix of each missing library, by requester and name
/// ([`crate::report::Report::fixes`]).
pub fn render(r: &Resolution, fixes: &Fixes, p: Paint, out: &mut dyn Write) -> io::Result<()> {
    let mut shown_missing = BTreeSet::new();
    node(r, fixes, 0, 1, p, &mut shown_missing, out)
}

/// The `fix:` line under a missing library: the rules' one-line fix for it (empty where they gave none).
fn fix_line(
    r: &Resolution,
    l: &Library,
    fixes: &Fixes,
    pad: &str,
    p: Paint,
    out: &mut dyn Write,
) -> io::Result<()> {
    let key = (r.binary.clone(), l.needed_by.clone(), l.soname.clone());
    let fix = fixes.get(&key).map_or("", String::as_str);
    writeln!(out, "{pad}    {} {}", p.good("fix:"), Sane(fix))
}

fn node(
    r: &Resolution,
    fixes: &Fixes,
    obj: usize,
    depth: usize,
    p: Paint,
    shown_missing: &mut BTreeSet<String>,
    out: &mut dyn Write,
) -> io::Result<()> {
    if depth > 64 {
        return Ok(());
    }
    let pad = "    ".repeat(depth);
    for l in r.libraries.iter().filter(|l| l.needed_by_index == obj) {
        let mut tags = Vec::new();
        if l.dlopen {
            tags.push("dlopen".to_string());
        }
        if l.preload {
            tags.push("preload".to_string());
        }
        match l.how {
            How::AlreadyLoaded => {
                if !l.dlopen {
                    continue;
                }
                tags.push("already loaded".into());
            }
            How::NotFound => {
                if !shown_missing.insert(l.soname.clone()) {
                    continue;
                }
                // A stem with versioned names along its search: what the machine offers for it, not a failure
                // (the library may add a version to it, or fail on the bare name).
                if l.is_dlopen_stem() && !l.completions.is_empty() {
                    let what = format!(
                        "no file of this bare name; versioned along its search: {}",
                        l.completions.join(", ")
                    );
                    writeln!(
                        out,
                        "{pad}{} {} {}",
                        p.bold(&l.soname),
                        p.dim("[dlopen stem]"),
                        p.dim(&what)
                    )?;
                    fix_line(r, l, fixes, &pad, p, out)?;
                    continue;
                }
                let t = if tags.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", tags.join(", "))
                };
                writeln!(
                    out,
                    "{pad}{}{t} {}",
                    p.error(&l.soname),
                    p.error(&format!(
                        "not found: {}",
                        l.error.as_deref().unwrap_or("cannot open shared object file")
                    ))
                )?;
                for line in l.trail_lines() {
                    writeln!(out, "{pad}    {}", p.dim(&line))?;
                }
                for c in &l.copies {
                    writeln!(out, "{pad}    {} {}", p.dim("elsewhere:"), Sane(&c.line()))?;
                }
                fix_line(r, l, fixes, &pad, p, out)?;
                continue;
            }
            how => tags.push(how.label(l.via.as_deref(), &l.needed_by)),
        }
        let o = l.object.and_then(|i| r.objects.get(i));
        let version = o
            .and_then(|o| o.version.as_deref())
            .map(|v| format!(" ({v})"))
            .unwrap_or_default();
        writeln!(
            out,
            "{pad}{} {} {}{}",
            p.bold(&l.soname),
            p.dim(&format!("[{}]", tags.join(", "))),
            Sane(l.path.as_deref().unwrap_or("")),
            Sane(&version)
        )?;
        if l.how != How::AlreadyLoaded
            && let Some(i) = l.object
            && r.objects.get(i).is_some_and(|o| {
                o.path == l.path.clone().unwrap_or_default() && (o.loader == Some(obj) || o.dlopen)
            })
        {
            node(r, fixes, i, depth + 1, p, shown_missing, out)?;
        }
    }
    Ok(())
}
