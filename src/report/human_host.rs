//! The human report's host section: driver, GPUs, platform, device nodes, driver libraries in search order,
//! environment, and the CUDA libraries on disk (a line per family, version, directory and owner; every file
//! with `-v`).

use super::paint::Paint;
use super::sane::Sane;
use crate::facts::HostFacts;
use crate::facts::host::{Flavour, LibCandidate, LibraryEntry};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

/// A row whose value is data (paths, versions, environment values): shown escaped.
fn row(out: &mut dyn Write, p: Paint, name: &str, value: &str) -> io::Result<()> {
    writeln!(out, "{}{}", p.dim(&format!("{:<10}", name)), Sane(value))
}

/// A row whose value holds colour: the caller has escaped each piece of data in it.
fn row_painted(out: &mut dyn Write, p: Paint, name: &str, value: &str) -> io::Result<()> {
    writeln!(out, "{}{value}", p.dim(&format!("{:<10}", name)))
}

fn candidates(out: &mut dyn Write, p: Paint, name: &str, list: &[LibCandidate]) -> io::Result<()> {
    if list.is_empty() {
        return row(out, p, name, "not found on the loader's path");
    }
    for (i, c) in list.iter().enumerate() {
        let via = c.found_via.as_str();
        let kind = c.kind.as_str();
        let real = if c.real_path == c.path {
            String::new()
        } else {
            format!(" -> {}", c.real_path)
        };
        let line = format!(
            "{}. {}{real}  [{via}] {kind}{}{}",
            i + 1,
            c.path,
            c.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default(),
            if i == 0 { "  <- loaded" } else { "" }
        );
        row(out, p, if i == 0 { name } else { "" }, &line)?;
    }
    Ok(())
}

fn owner(l: &LibraryEntry) -> String {
    l.owner
        .as_ref()
        .map(|o| match &o.version {
            Some(v) if o.kind != "toolkit" && o.kind != "driver" => {
                format!("{} {} {v}", o.kind, o.name)
            }
            _ => format!("{} {}", o.kind, o.name),
        })
        .unwrap_or_else(|| "owner unknown".into())
}

/// How people write a library family's name (`cudnn` → `cuDNN`); a family without one keeps the catalogue's.
fn family(kind: &str) -> &str {
    match kind {
        "cudnn" => "cuDNN",
        "cublas" => "cuBLAS",
        "cufft" => "cuFFT",
        "curand" => "cuRAND",
        "cusparse" => "cuSPARSE",
        "cusolver" => "cuSOLVER",
        "cutensor" => "cuTENSOR",
        "nccl" => "NCCL",
        "nvml" => "NVML",
        "nvrtc" => "NVRTC",
        "nvjitlink" => "nvJitLink",
        "npp" => "NPP",
        "nvidia-ptxjitcompiler" => "PTX JIT",
        "nvshmem" => "NVSHMEM",
        other => other,
    }
}

/// Files of one family, version, directory and owner: one line (`cuDNN 9.19.0 (9 files) /usr/lib/…
/// [deb libcudnn9-cuda-13]`), and each file under it with `-v`.
struct Group<'a> {
    kind: &'a str,
    version: &'a str,
    dir: &'a str,
    owner: String,
    files: Vec<&'a LibraryEntry>,
}

fn groups<'a>(files: &[&'a LibraryEntry]) -> Vec<Group<'a>> {
    let mut out: Vec<Group<'a>> = Vec::new();
    // Each group's place in `out` by its key (groups stay in the order first seen, as the sort below is
    // stable): one look-up per file, where a search of the groups made this quadratic in directories.
    let mut place: HashMap<(&'a str, &'a str, &'a str, String), usize> = HashMap::new();
    for f in files {
        let dir = f.real_path.rsplit_once('/').map_or(".", |(d, _)| d);
        let version = f.version.as_deref().unwrap_or("?");
        let owner = owner(f);
        match place.entry((f.kind.as_str(), version, dir, owner)) {
            Entry::Occupied(at) => out[*at.get()].files.push(f),
            Entry::Vacant(slot) => {
                let owner = slot.key().3.clone();
                slot.insert(out.len());
                out.push(Group {
                    kind: &f.kind,
                    version,
                    dir,
                    owner,
                    files: vec![f],
                });
            }
        }
    }
    // By family, then place: the catalogue's order is the walk's.
    out.sort_by(|a, b| (a.kind, a.dir, a.version).cmp(&(b.kind, b.dir, b.version)));
    out
}

fn libraries(out: &mut dyn Write, p: Paint, libs: &[LibraryEntry], verbose: bool) -> io::Result<()> {
    // One line per real file: the links to it add nothing but names. A set, not a search of the list per
    // entry: a catalogue of 69,000 entries (a 79 MB snapshot) took minutes that way.
    let mut seen: HashSet<&str> = HashSet::with_capacity(libs.len());
    let files: Vec<&LibraryEntry> = libs
        .iter()
        .filter(|l| seen.insert(l.real_path.as_str()))
        .collect();
    if files.is_empty() {
        return row(out, p, "libraries", "no CUDA library found on disk");
    }
    let groups = groups(&files);
    row(
        out,
        p,
        "libraries",
        &format!(
            "{} files ({} paths) in {} groups{}",
            files.len(),
            libs.len(),
            groups.len(),
            if verbose { "" } else { " (-v lists each file)" }
        ),
    )?;
    for g in &groups {
        // A runtime's own version (what `cudaRuntimeGetVersion` returns) is worth its place on the line.
        let mut runtimes: Vec<&str> = g
            .files
            .iter()
            .filter_map(|f| f.runtime_version.as_deref())
            .collect();
        runtimes.dedup();
        let rt = if runtimes.is_empty() {
            String::new()
        } else {
            format!(", runtime {}", runtimes.join(", "))
        };
        let place = match g.files.as_slice() {
            [one] => one.real_path.clone(),
            many => format!("({} files) {}", many.len(), g.dir),
        };
        row(
            out,
            p,
            "",
            &format!(
                "{:<10} {:<12} {place}  [{}{rt}]",
                family(g.kind),
                g.version,
                g.owner
            ),
        )?;
        if verbose {
            for f in &g.files {
                let name = f.real_path.rsplit('/').next().unwrap_or(&f.real_path);
                let what = if g.files.len() == 1 { "" } else { name };
                row(
                    out,
                    p,
                    "",
                    &format!(
                        "    {what}{}version from {}",
                        if what.is_empty() { "" } else { "  " },
                        f.version_source.as_deref().unwrap_or("nowhere")
                    ),
                )?;
            }
        }
    }
    Ok(())
}

/// Renders the host section.
pub fn render(h: &HostFacts, p: Paint, verbose: bool, out: &mut dyn Write) -> io::Result<()> {
    let driver = match &h.driver {
        Some(d) => format!(
            "{}{} ({}){}",
            p.bold(&d.version),
            match h.kernel.flavour {
                Some(Flavour::Open) => " open kernel module",
                Some(Flavour::Proprietary) => " proprietary kernel module",
                None => "",
            },
            Sane(&d.source),
            h.driver_cuda
                .as_deref()
                .map(|c| format!(" · supports CUDA up to {}", Sane(c)))
                .unwrap_or_default(),
        ),
        None if h.platform.wsl.is_some() => "WSL2 (the Windows driver serves the GPU)".into(),
        None if h.platform.tegra.as_ref().is_some_and(|t| t.nvgpu != Some(false)) => format!(
            "nvgpu (Jetson Linux {}{}){}",
            Sane(
                h.platform
                    .tegra
                    .as_ref()
                    .and_then(|t| t.l4t.as_deref())
                    .unwrap_or("?")
            ),
            if h.platform.tegra.as_ref().is_some_and(|t| t.nvgpu.is_none()) {
                "; no module list to confirm it is loaded"
            } else {
                ""
            },
            h.driver_cuda
                .as_deref()
                .map(|c| format!(" · supports CUDA up to {}", Sane(c)))
                .unwrap_or_default(),
        ),
        None => "no NVIDIA kernel module loaded".into(),
    };
    row_painted(out, p, "driver", &driver)?;
    if !h.kernel.modules.is_empty() {
        row(
            out,
            p,
            "modules",
            &format!(
                "{} ({})",
                h.kernel.modules.join(" "),
                h.kernel.modules_source.as_deref().unwrap_or("")
            ),
        )?;
    }
    if let Some(g) = &h.glibc {
        let how = match g.source {
            crate::facts::host::GlibcSource::Banner => "",
            crate::facts::host::GlibcSource::Verdef => " (at least: read from its version definitions)",
        };
        row(out, p, "glibc", &format!("{}  {}{how}", g.version, g.path))?;
    }
    if h.gpus.is_empty() {
        let jetson_unread = h.platform.tegra.as_ref().is_some_and(|t| t.soc.is_none());
        row(
            out,
            p,
            "gpus",
            if jetson_unread {
                "none read: a Jetson's GPU is named by its device tree (/proc/device-tree), not in this root"
            } else {
                "none"
            },
        )?;
    }
    for (i, g) in h.gpus.iter().enumerate() {
        let mut parts = vec![format!("{i}: {}", p.bold(&g.name))];
        parts.push(format!("CC {}", Sane(g.cc.as_deref().unwrap_or("?"))));
        parts.extend(g.uuid.iter().map(|u| Sane(u).to_string()));
        parts.extend(g.bus_id.iter().map(|b| Sane(b).to_string()));
        parts.extend(g.pci_device_id.map(|d| format!("[10de:{d:04x}]")));
        row_painted(out, p, if i == 0 { "gpus" } else { "" }, &parts.join("  "))?;
    }
    if !h.mig.is_empty() {
        row(out, p, "mig", &format!("{} GPU instance(s)", h.mig.len()))?;
    }
    let mut platform = Vec::new();
    if let Some(c) = &h.platform.container {
        platform.push(format!("container: {} ({})", c.engine, c.evidence.join(", ")));
    }
    if h.platform.wsl.is_some() {
        platform.push("WSL2".into());
    }
    if let Some(j) = &h.platform.jetson {
        platform.push(format!("Jetson: {j}"));
    }
    if !platform.is_empty() {
        row(out, p, "platform", &platform.join(" · "))?;
    }
    let jetson_nodes = h
        .platform
        .tegra
        .iter()
        .flat_map(|t| t.nodes.iter())
        .map(|n| n.to_string());
    let nodes: Vec<String> = h
        .device_nodes
        .iter()
        .map(|n| {
            let access = match &h.identity {
                Some(id) if n.allows_rw(id) => " rw",
                Some(_) => " no rw",
                None => "",
            };
            format!("{}{access}", n.path)
        })
        .chain(jetson_nodes)
        .collect();
    row(
        out,
        p,
        "devices",
        &if nodes.is_empty() {
            "no /dev/nvidia* nodes".to_string()
        } else {
            nodes.join(", ")
        },
    )?;
    if let Some(id) = &h.identity {
        row(
            out,
            p,
            "user",
            &format!("uid {} gid {} groups {:?}", id.uid, id.gid, id.groups),
        )?;
    }
    candidates(out, p, "libcuda", &h.libcuda)?;
    candidates(out, p, "nvml", &h.nvml)?;
    for (k, v) in &h.env.vars {
        if k != "PATH" && k != "HOME" {
            row(out, p, "env", &format!("{k}={v}"))?;
        }
    }
    for n in &h.env.nvcc {
        row(out, p, "nvcc", n)?;
    }
    if h.catalog_skipped {
        row(
            out,
            p,
            "libraries",
            "not scanned in this run (`cudadiag doctor` lists every CUDA library on disk)",
        )?;
    } else {
        libraries(out, p, &h.libraries, verbose)?;
    }
    if verbose {
        for pr in &h.problems {
            row(out, p, "problem", pr)?;
        }
    } else if !h.problems.is_empty() {
        row(out, p, "problems", &format!("{} (see -v)", h.problems.len()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::host::Owner;

    fn file(kind: &str, version: &str, path: &str) -> LibraryEntry {
        LibraryEntry {
            soname: path.rsplit('/').next().unwrap().into(),
            path: path.into(),
            real_path: path.into(),
            kind: kind.into(),
            version: Some(version.into()),
            version_source: Some("deb package libcudnn9-cuda-13".into()),
            runtime_version: None,
            owner: Some(Owner {
                kind: "deb".into(),
                name: "libcudnn9-cuda-13".into(),
                version: None,
            }),
            scan_root: "/usr/lib/x86_64-linux-gnu".into(),
        }
    }

    fn render(libs: &[LibraryEntry], verbose: bool) -> String {
        let mut out = Vec::new();
        libraries(&mut out, Paint::plain(), libs, verbose).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn one_line_for_a_family_version_and_place() {
        let dir = "/usr/lib/x86_64-linux-gnu";
        let mut libs: Vec<LibraryEntry> = [
            "libcudnn.so.9.19.0",
            "libcudnn_ops.so.9.19.0",
            "libcudnn_cnn.so.9.19.0",
            "libcudnn_adv.so.9.19.0",
            "libcudnn_graph.so.9.19.0",
            "libcudnn_heuristic.so.9.19.0",
            "libcudnn_engines_precompiled.so.9.19.0",
            "libcudnn_engines_runtime_compiled.so.9.19.0",
            "libcudnn_engines_ptx.so.9.19.0",
        ]
        .iter()
        .map(|n| file("cudnn", "9.19.0", &format!("{dir}/{n}")))
        .collect();
        libs.push(file("cudnn", "9.1.0", "/opt/old/libcudnn.so.9.1.0"));
        let text = render(&libs, false);
        assert!(
            text.contains(&format!(
                "cuDNN      9.19.0       (9 files) {dir}  [deb libcudnn9-cuda-13]"
            )),
            "{text}"
        );
        // Another version elsewhere is its own line, with its path.
        assert!(
            text.contains("cuDNN      9.1.0        /opt/old/libcudnn.so.9.1.0"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 3, "{text}");
        // -v: every file under its group.
        let text = render(&libs, true);
        assert!(
            text.contains("libcudnn_engines_ptx.so.9.19.0  version from deb package"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 3 + 10, "{text}");
    }

    /// The set and the map that replaced two searches keep what the searches gave: a link counted as a path
    /// but not as a file, and groups that sort alike (family, place, version; owners differ) in the order
    /// first seen.
    #[test]
    fn links_fold_into_their_files_and_groups_keep_their_first_order() {
        let mut link = file("cudnn", "9.19.0", "/usr/lib/libcudnn.so.9");
        link.real_path = "/usr/lib/libcudnn.so.9.19.0".into();
        let mut libs = vec![
            file("cudnn", "9.19.0", "/usr/lib/libcudnn.so.9.19.0"),
            link,
            file("cudnn", "9.19.0", "/usr/lib/libcudnn_ops.so.9.19.0"),
        ];
        let mut other = file("cudnn", "9.19.0", "/usr/lib/libcudnn_cnn.so.9.19.0");
        other.owner = Some(Owner {
            kind: "pip".into(),
            name: "nvidia-cudnn-cu13".into(),
            version: Some("9.19.0".into()),
        });
        libs.insert(0, other);
        let text = render(&libs, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "libraries 3 files (4 paths) in 2 groups (-v lists each file)"
        );
        assert!(lines[1].ends_with("[pip nvidia-cudnn-cu13 9.19.0]"), "{text}");
        assert!(
            lines[2].contains("(2 files) /usr/lib  [deb libcudnn9-cuda-13]"),
            "{text}"
        );
    }

    #[test]
    fn labels_are_padded_before_they_are_coloured() {
        let mut out = Vec::new();
        row(
            &mut out,
            Paint::new(crate::report::ColorChoice::Always, false, false),
            "gpus",
            "none",
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        // The padding sits inside the colour: the value starts at column 10 once the sequences are gone.
        assert!(text.contains("gpus      \u{1b}["), "{text:?}");
    }
}
