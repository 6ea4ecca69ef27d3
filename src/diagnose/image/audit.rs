//! `audit` of an image: every binary and wheel in its unpacked tree.

use crate::diagnose::ToolError;
use crate::image::{self, Limits};
use crate::inspect::InspectOptions;
use std::path::Path;

/// `audit` of an image: every binary in its unpacked tree (and every wheel in it), named `IMAGE!/path`.
/// Links are not followed: what they point to is audited where it lies in the image.
pub fn audit(
    path: &Path,
    opts: &InspectOptions,
    binaries: &mut Vec<crate::facts::BinaryFacts>,
    wheels: &mut Vec<crate::facts::WheelFacts>,
) -> Result<(), ToolError> {
    let img = image::open(path, None, &Limits::default())?;
    let dir = img.dir().to_path_buf();
    let shown = path.display().to_string();
    let inside = |p: &Path| {
        let rest = p.strip_prefix(&dir).unwrap_or(p);
        format!("{shown}!/{}", rest.display())
    };
    for entry in walkdir::WalkDir::new(&dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
    {
        let file = entry.path();
        opts.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if file.extension().is_some_and(|x| x == "whl") {
            let (mut b, mut w) = (Vec::new(), Vec::new());
            crate::inspect::wheel::wheel(file, opts, &mut b, &mut w);
            let old = file.display().to_string();
            let new = inside(file);
            for x in &mut b {
                x.path = x.path.replacen(&old, &new, 1);
            }
            for x in &mut w {
                x.path = new.clone();
            }
            binaries.extend(b);
            wheels.extend(w);
            continue;
        }
        let mut head = Vec::with_capacity(8);
        let Ok(f) = std::fs::File::open(file) else {
            continue;
        };
        use std::io::Read;
        if f.take(8).read_to_end(&mut head).is_err()
            || !crate::inspect::wheel::looks_binary(&head, &file.to_string_lossy())
        {
            continue;
        }
        match crate::inspect::path(file, opts) {
            Ok(found) => binaries.extend(found.into_iter().map(|mut b| {
                let old = file.display().to_string();
                b.path = b.path.replacen(&old, &inside(file), 1);
                b
            })),
            Err(e) => return Err(ToolError(format!("{}: {}", inside(file), e.error))),
        }
    }
    drop(img);
    Ok(())
}
