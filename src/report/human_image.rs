//! The human report's image line (`inspect --image`): which image, which config, which program.

use super::paint::Paint;
use super::sane::{self, Sane};
use crate::facts::image::ImageFacts;
use std::io::{self, Write};

/// One line naming the image and the program inspected; with `verbose`, how the program was found.
pub fn render(i: &ImageFacts, p: Paint, verbose: bool, out: &mut dyn Write) -> io::Result<()> {
    let mut what = vec![i.format.clone()];
    if let Some(c) = &i.compression {
        what.push(format!("{c}-compressed"));
    }
    what.push(i.platform.clone());
    what.push(format!(
        "{} layer{}",
        i.layers,
        if i.layers == 1 { "" } else { "s" }
    ));
    if let Some(d) = &i.config_digest {
        // Docker shows the first 12 hex digits of the config digest as the image ID. The digest comes from the
        // archive's own file names (`blobs/sha256/…`), which need not be hex: cut by characters.
        let short = d.split_once(':').map_or(d.as_str(), |(_, h)| h);
        what.push(format!("image ID {}", sane::prefix(short, 12)));
    }
    let name = i
        .reference
        .as_deref()
        .map(|r| format!(" {r}"))
        .unwrap_or_default();
    write!(
        out,
        "{}{}  ({})",
        p.bold(&Sane(&i.path).to_string()),
        Sane(&name),
        Sane(&what.join(", "))
    )?;
    match &i.program {
        Some(prog) => writeln!(out, ": runs {}", Sane(prog))?,
        None => writeln!(out)?,
    }
    if let Some(im) = &i.imports {
        let modules: Vec<String> = im.modules.iter().map(|m| format!("import {m}")).collect();
        writeln!(
            out,
            "    judged as Python: {} in {} ({}): {}",
            Sane(&modules.join("; ")),
            Sane(&im.python),
            Sane(&im.because),
            Sane(&im.why)
        )?;
    }
    if verbose {
        for s in &i.program_steps {
            writeln!(out, "    {}", Sane(s))?;
        }
        let (n, bytes) = (
            i.placeholders + i.skipped_files,
            i.placeholder_bytes + i.skipped_bytes,
        );
        if n > 0 {
            writeln!(
                out,
                "    {n} data files ({bytes} bytes) not unpacked: no inspection reads them"
            )?;
        }
    }
    Ok(())
}
