//! `cudadiag matrix`: answers questions from the compatibility matrix, each answer with its source row.

use super::outcome::Outcome;
use crate::cli::MatrixArgs;
use crate::diagnose::ToolError;
use crate::matrix::{Cc, CudaVersion, DriverVersion, Matrix, Row};
use crate::report::{self, DocFormat};
use serde_json::{Value, json};
use std::io::Write;

/// One answer: a line for people and the same fact as JSON.
struct Answer {
    lines: Vec<String>,
    json: Value,
}

fn cite(row: &Row, m: &Matrix) -> String {
    row.cite(m)
}

fn src(row: &Row) -> Value {
    json!({ "source": row.source, "status": row.status, "line": row.line, "note": row.note })
}

fn toolkit(q: &str, m: &Matrix) -> Result<Answer, ToolError> {
    let v = CudaVersion::parse(q)
        .ok_or_else(|| ToolError(format!("--toolkit {q}: not a CUDA version (like 12.4)")))?;
    let rows = m.toolkit_rows(v);
    if rows.is_empty() {
        let why = if m.no_toolkit_release.contains(&v) {
            " (no toolkit was released for it)"
        } else {
            ""
        };
        return Err(ToolError(format!("CUDA {v} is not in the matrix{why}")));
    }
    let mut lines = vec![format!(
        "CUDA {v}: minimum driver per release (Linux x86_64 / Windows x86_64)"
    )];
    for t in &rows {
        lines.push(format!(
            "  {:<20} ≥ {:<12} {:<10} [{}]",
            t.label,
            t.linux_min.to_string()
                + if t.linux_min.is_branch_only() {
                    " (branch)"
                } else {
                    ""
                },
            t.windows_min
                .as_ref()
                .map_or_else(|| "n/a".to_string(), |w| format!("≥ {w}")),
            cite(&t.row, m)
        ));
    }
    let floor = m.minor_compat(v.major);
    if let Some(f) = floor {
        lines.push(format!(
            "  minor-version compatibility: any CUDA {}.x runtime runs on Linux ≥ {}{} [{}]",
            f.major,
            f.linux_min,
            f.windows_min
                .as_ref()
                .map(|w| format!(", Windows ≥ {w}"))
                .unwrap_or_default(),
            cite(&f.row, m)
        ));
    } else {
        lines.push(
            "  no minor-version compatibility before CUDA 11: this release's own driver is the minimum"
                .into(),
        );
    }
    let branches: Vec<_> = m.branches.iter().filter(|b| b.cuda == v).collect();
    for b in &branches {
        lines.push(format!(
            "  driver branch R{} reports CUDA {v} [{}]",
            b.branch,
            cite(&b.row, m)
        ));
    }
    let ptx: Vec<_> = m.ptx.iter().filter(|p| p.cuda == v).collect();
    for p in &ptx {
        lines.push(format!("  emits PTX ISA {} [{}]", p.isa, cite(&p.row, m)));
    }
    let targets = m.targets.iter().rev().find(|t| t.cuda <= v);
    if let Some(t) = targets {
        lines.push(format!(
            "  nvcc targets {} … {} [{}]",
            t.min_sm,
            t.max_sm,
            cite(&t.row, m)
        ));
    }
    let json = json!({
        "toolkit": v.to_string(),
        "releases": rows.iter().map(|t| json!({
            "label": t.label, "release": t.release, "linux_min": t.linux_min.as_str(),
            "linux_min_is_branch": t.linux_min.is_branch_only(),
            "windows_min": t.windows_min.as_ref().map(|w| w.as_str()), "source": src(&t.row)})).collect::<Vec<_>>(),
        "minor_compat": floor.map(|f| json!({"major": f.major, "linux_min": f.linux_min.as_str(),
            "windows_min": f.windows_min.as_ref().map(|w| w.as_str()), "source": src(&f.row)})),
        "driver_branches": branches.iter().map(|b| b.branch).collect::<Vec<_>>(),
        "ptx_isa": ptx.iter().map(|p| p.isa.to_string()).collect::<Vec<_>>(),
        "targets": targets.map(|t| json!({"min_sm": t.min_sm, "max_sm": t.max_sm})),
    });
    Ok(Answer { lines, json })
}

fn driver(q: &str, m: &Matrix) -> Result<Answer, ToolError> {
    let d = DriverVersion::parse(q)
        .ok_or_else(|| ToolError(format!("--driver {q}: not a driver version (like 535.104.05)")))?;
    let dc = m
        .driver_cuda(&d)
        .ok_or_else(|| ToolError(format!("driver {d} is older than every branch the matrix knows")))?;
    let mut lines = vec![format!(
        "driver {d} (R{}): supports CUDA {} natively{} [{}]",
        d.branch(),
        dc.cuda,
        if dc.exact {
            ""
        } else {
            " (branch not in the table: nearest older branch used)"
        },
        cite(&dc.row.row, m)
    )];
    if m.driver_beyond_table(&d) {
        lines.push(
            "  newer than every branch in the matrix: it may support more (pass a newer --matrix)".into(),
        );
    }
    let ptx = m.max_ptx_isa(dc.cuda);
    if let Some(p) = ptx {
        lines.push(format!(
            "  JIT-compiles PTX up to ISA {} [{}]",
            p.isa,
            cite(&p.row, m)
        ));
    }
    let mc: Vec<_> = m
        .minor_compat
        .iter()
        .filter(|f| f.linux_min <= d && f.major == dc.cuda.major)
        .collect();
    for f in &mc {
        lines.push(format!(
            "  runs any CUDA {}.x runtime through minor-version compatibility (≥ {}) [{}]",
            f.major,
            f.linux_min,
            cite(&f.row, m)
        ));
    }
    let dropped: Vec<_> = m
        .archs
        .iter()
        .filter(|a| a.last_branch.is_some_and(|l| d.branch() > l))
        .collect();
    for a in &dropped {
        lines.push(format!(
            "  does not support {} GPUs (last branch R{}) [{}]",
            a.name,
            a.last_branch.unwrap_or(0),
            cite(&a.row, m)
        ));
    }
    let fwd: Vec<_> = m
        .fwd_packages
        .iter()
        .filter(|p| p.compatible_bases.contains(&d.branch()))
        .collect();
    if !fwd.is_empty() {
        lines.push(format!(
            "  forward-compatibility packages supported on this branch: {} [{}]",
            fwd.iter()
                .map(|p| p.package.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            fwd.first().map(|p| cite(&p.row, m)).unwrap_or_default()
        ));
        lines.push(format!(
            "    only on {}; Linux only [{}]",
            m.forward_compat.supported_gpus.join(", "),
            cite(&m.forward_compat.row, m)
        ));
    }
    let json = json!({
        "driver": d.as_str(), "branch": d.branch(), "cuda": dc.cuda.to_string(), "exact_branch": dc.exact,
        "source": src(&dc.row.row), "max_ptx_isa": ptx.map(|p| p.isa.to_string()),
        "minor_compat_majors": mc.iter().map(|f| f.major).collect::<Vec<_>>(),
        "unsupported_architectures": dropped.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
        "forward_compat_packages": fwd.iter().map(|p| p.package.as_str()).collect::<Vec<_>>(),
        "forward_compat_supported_gpus": m.forward_compat.supported_gpus,
    });
    Ok(Answer { lines, json })
}

fn ptx(q: &str, m: &Matrix) -> Result<Answer, ToolError> {
    let isa = CudaVersion::parse(q)
        .ok_or_else(|| ToolError(format!("--ptx {q}: not a PTX ISA version (like 8.7)")))?;
    let p = m
        .ptx_isa(isa)
        .ok_or_else(|| ToolError(format!("PTX ISA {isa} is not in the matrix")))?;
    let min = m.toolkit_min(p.cuda);
    let branch = m.branches.iter().find(|b| b.cuda >= p.cuda);
    let mut lines = vec![format!(
        "PTX ISA {isa}: introduced with CUDA {} [{}]",
        p.cuda,
        cite(&p.row, m)
    )];
    if let Some(b) = branch {
        lines.push(format!(
            "  drivers of branch R{} or later JIT-compile it{} [{}]",
            b.branch,
            min.map(|t| format!(" (Linux ≥ {})", t.linux_min))
                .unwrap_or_default(),
            cite(&b.row, m)
        ));
    }
    if !p.new_targets.is_empty() {
        lines.push(format!("  new targets: {}", p.new_targets.join(" ")));
    }
    let json = json!({
        "ptx_isa": isa.to_string(), "cuda": p.cuda.to_string(), "min_branch": branch.map(|b| b.branch),
        "linux_min": min.map(|t| t.linux_min.as_str()), "new_targets": p.new_targets, "source": src(&p.row),
    });
    Ok(Answer { lines, json })
}

fn gpu(q: &str, m: &Matrix) -> Result<Answer, ToolError> {
    let pci = q
        .trim()
        .strip_prefix("0x")
        .or_else(|| q.trim().strip_prefix("10de:"))
        .and_then(|h| u16::from_str_radix(h, 16).ok());
    let (names, cc, row) = if let Some(hit) = pci.and_then(|id| m.gpu_by_pci(id)).or_else(|| m.gpu_by_name(q))
    {
        (hit.row.names.clone(), hit.row.cc, Some(&hit.row.row))
    } else if let Some(cc) = Cc::parse(q) {
        let names = m.gpus_with_cc(cc).iter().flat_map(|g| g.names.clone()).collect();
        (names, cc, None)
    } else {
        return Err(ToolError(format!(
            "--gpu {q}: no GPU of that name or PCI id in the matrix, and not a compute capability"
        )));
    };
    let mut lines = vec![format!(
        "{}: compute capability {cc}{}",
        if names.is_empty() {
            format!("CC {cc}")
        } else {
            names.join(", ")
        },
        row.map(|r| format!(" [{}]", cite(r, m))).unwrap_or_default()
    )];
    let arch = m.arch(cc);
    if let Some(a) = arch {
        let need = m.toolkit_min(a.first_cuda);
        lines.push(format!(
            "  {} architecture: needs CUDA {} or later{}{} [{}]",
            a.name,
            a.first_cuda,
            need.map(|t| format!(" (Linux driver ≥ {})", t.linux_min))
                .unwrap_or_default(),
            a.last_branch
                .map(|l| format!("; last supported by driver branch R{l}"))
                .unwrap_or_default(),
            cite(&a.row, m)
        ));
    }
    if let Some(f) = m.family(cc) {
        lines.push(format!(
            "  family {}: members {}",
            f.name,
            f.members
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    lines.push(format!(
        "  build for it: nvcc -gencode arch=compute_{sm},code=sm_{sm}; SASS sm_{}0 … sm_{sm} runs on it",
        cc.major,
        sm = cc.sm()
    ));
    let json = json!({
        "names": names, "cc": cc.to_string(), "source": row.map(src),
        "architecture": arch.map(|a| a.name.as_str()), "first_cuda": arch.map(|a| a.first_cuda.to_string()),
        "last_branch": arch.and_then(|a| a.last_branch), "family": m.family(cc).map(|f| f.name.as_str()),
    });
    Ok(Answer { lines, json })
}

fn l4t(q: &str, m: &Matrix) -> Result<Answer, ToolError> {
    let release = q.trim().trim_start_matches(['R', 'r']);
    let r = m.jetpack_for_l4t(release).ok_or_else(|| {
        ToolError(format!(
            "--l4t {q}: no Jetson Linux release of that number in the matrix (it knows {})",
            m.jetpacks
                .iter()
                .map(|r| r.l4t_label())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let socs: Vec<String> = r
        .socs
        .iter()
        .map(|s| match m.tegra_soc(s) {
            Some(t) => format!("{} (CC {})", t.name, t.cc),
            None => s.clone(),
        })
        .collect();
    let mut lines = vec![
        format!(
            "Jetson Linux {release}: JetPack {} ({}), CUDA {} [{}]",
            r.jetpack,
            r.l4t_label(),
            r.cuda,
            cite(&r.row, m)
        ),
        format!("  runs on: {}", socs.join("; ")),
        if r.cuda_compat {
            "  newer CUDA through NVIDIA's cuda-compat package for Jetson (JetPack 5.0 and later)".to_string()
        } else {
            "  no cuda-compat: a newer CUDA needs a newer JetPack".to_string()
        },
    ];
    lines.extend(r.row.note.iter().map(|n| format!("  note: {n}")));
    let json = json!({
        "l4t": release, "jetpack": r.jetpack, "cuda": r.cuda.to_string(), "socs": r.socs,
        "cuda_compat": r.cuda_compat, "source": src(&r.row),
    });
    Ok(Answer { lines, json })
}

/// Runs `cudadiag matrix`.
pub fn run(args: &MatrixArgs, out: &mut dyn Write) -> Result<Outcome, ToolError> {
    let m = crate::diagnose::targets::load_matrix(args.matrix.as_deref())?;
    let mut answers = Vec::new();
    let mut keys = Vec::new();
    if let Some(q) = &args.toolkit {
        answers.push(toolkit(q, &m)?);
        keys.push("toolkit");
    }
    if let Some(q) = &args.driver {
        answers.push(driver(q, &m)?);
        keys.push("driver");
    }
    if let Some(q) = &args.ptx {
        answers.push(ptx(q, &m)?);
        keys.push("ptx");
    }
    if let Some(q) = &args.gpu {
        answers.push(gpu(q, &m)?);
        keys.push("gpu");
    }
    if let Some(q) = &args.l4t {
        answers.push(l4t(q, &m)?);
        keys.push("l4t");
    }
    match args.format {
        DocFormat::Json => {
            let mut doc = serde_json::Map::new();
            doc.insert("schema_version".into(), json!(report::json::SCHEMA_VERSION));
            doc.insert("matrix".into(), json!(m.origin));
            for (k, a) in keys.iter().zip(&answers) {
                doc.insert((*k).to_string(), a.json.clone());
            }
            if answers.is_empty() {
                doc.insert("sources".into(), json!(m.sources));
            }
            let text = serde_json::to_string_pretty(&Value::Object(doc))?;
            report::text(out, &format!("{text}\n"))?;
        }
        DocFormat::Human => {
            let mut s = String::new();
            if answers.is_empty() {
                s.push_str(&format!(
                    "{}: {} toolkit releases, {} driver branches, {} PTX ISA versions, {} GPU rows, {} CUDA errors\n\
                     Ask with --toolkit, --driver, --ptx, --gpu or --l4t. Sources:\n",
                    m.origin, m.toolkits.len(), m.branches.len(), m.ptx.len(), m.gpus.len(), m.errors.len()
                ));
                for (k, v) in &m.sources {
                    s.push_str(&format!("  {k:<14} {v}\n"));
                }
            }
            for a in &answers {
                for l in &a.lines {
                    s.push_str(l);
                    s.push('\n');
                }
            }
            report::text(out, &s)?;
        }
    }
    Ok(Outcome::Clean)
}
