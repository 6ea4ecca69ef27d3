//! The wheel section of the human report (`audit`): each wheel's declared CUDA dependencies, and where each
//! CUDA library its binaries need will come from after `pip install`.

use super::paint::Paint;
use super::sane::Sane;
use crate::facts::{Installed, Provided, WheelFacts};
use std::io::{self, Write};

/// Writes one block per wheel that declares CUDA dependencies or whose binaries need CUDA libraries.
pub fn render(wheels: &[WheelFacts], p: Paint, out: &mut dyn Write) -> io::Result<()> {
    for w in wheels {
        let deps: Vec<_> = w
            .requirements
            .iter()
            .filter(|r| r.cuda.is_some() && r.installed != Installed::Never)
            .collect();
        if deps.is_empty() && w.cuda_libraries.is_empty() {
            continue;
        }
        let title = match (&w.name, &w.version) {
            (Some(n), Some(v)) => format!("{n} {v}"),
            (Some(n), None) => n.clone(),
            _ => "wheel".to_string(),
        };
        writeln!(out, "\n{} ({})", p.bold(&title), Sane(&w.path))?;
        for r in deps {
            let Some(c) = &r.cuda else { continue };
            let mut what = vec![match c.major {
                Some(m) => format!("CUDA {m}"),
                None => "CUDA major unknown".to_string(),
            }];
            if let Some(rt) = &c.runtime {
                what.push(format!("runtime {rt}"));
            }
            if let (Installed::WithExtra, Some(e)) = (r.installed, &r.extra) {
                what.push(format!("only with [{e}]"));
            }
            writeln!(out, "  declares {}  ({})", Sane(&r.text), Sane(&what.join(", ")))?;
        }
        let width = w.cuda_libraries.iter().map(|l| l.soname.len()).max().unwrap_or(0);
        for l in &w.cuda_libraries {
            // The requirement without its marker: the "declares" lines above show it whole.
            let by = l.by.as_deref().unwrap_or("");
            let by = by.split_once(';').map_or(by, |(r, _)| r.trim());
            let dist = match (&l.distribution, l.major) {
                (Some(d), Some(m)) => format!(" → {d}, CUDA {m}"),
                (Some(d), None) => format!(" → {d}"),
                _ => String::new(),
            };
            let line = match l.provided {
                Provided::Bundled => p.good(&format!("bundled as {by}")),
                Provided::Dependency => p.good(&format!("from {by}{dist}")),
                Provided::Extra => p.warning(&format!("only with an extra: {by}{dist}")),
                Provided::Missing => p.error("neither bundled nor installed by a declared dependency"),
            };
            writeln!(out, "  {:width$}  {line}", Sane(&l.soname))?;
        }
    }
    Ok(())
}
