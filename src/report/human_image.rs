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
        for one in im.detail["imports"].as_array().into_iter().flatten() {
            import_line(one, out)?;
        }
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

/// One import of `image.imports.detail` (`imports::Imported` as JSON): `import torch (torch 2.15.0): works;
/// first GPU use: uses the GPU`.
fn import_line(one: &serde_json::Value, out: &mut dyn Write) -> io::Result<()> {
    let said = |step: &serde_json::Value| -> Option<String> {
        let o = &step["outcome"];
        Some(match o["kind"].as_str()? {
            "gpu" => "works".to_string(),
            "cpu_fallback" => format!(
                "runs on the CPU, the GPU unused ({})",
                o["because"].as_str().unwrap_or_default()
            ),
            "fails" => format!("fails: {}", o["message"].as_str().unwrap_or_default()),
            other => other.to_string(),
        })
    };
    let module = one["module"].as_str().unwrap_or_default();
    let installed = one["installed"]
        .as_str()
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    let mut line = format!("import {module}{installed}: ");
    line.push_str(&said(&one["import"]).unwrap_or_else(|| "not modelled".into()));
    if let Some(first) = said(&one["first_use"]) {
        line.push_str("; first GPU use: ");
        line.push_str(&first.replace("works", "uses the GPU"));
    }
    writeln!(out, "      {}", Sane(&line))
}
