//! The matrix a command uses (bundled or `--matrix FILE`) and the what-if targets (`--gpu`, `--driver`),
//! which replace the machine's GPUs and driver in the facts so the same pure rules answer "would it run there?".

use super::{Target, ToolError};
use crate::facts::{DriverFacts, Facts, GpuFacts};
use crate::matrix::{Cc, DriverVersion, Matrix};
use std::path::Path;

/// The bundled matrix, or the one `--matrix` names. A bad file is a tool error (exit 2) naming its line.
pub fn load_matrix(path: Option<&Path>) -> Result<Matrix, ToolError> {
    match path {
        Some(p) => Matrix::from_file(p),
        None => Matrix::bundled(),
    }
    .map_err(|e| ToolError(format!("invalid compatibility matrix: {e}")))
}

/// One `--gpu` value as GPU facts: a compute capability (`8.9`, `sm_89`) or a name the matrix knows.
pub fn gpu_from_arg(arg: &str, m: &Matrix) -> Result<GpuFacts, ToolError> {
    let looks_like_cc = arg.trim().starts_with("sm_")
        || arg.trim().starts_with("compute_")
        || arg.trim().chars().all(|c| c.is_ascii_digit() || c == '.');
    if looks_like_cc && let Some(cc) = Cc::parse(arg) {
        let names: Vec<&str> = m
            .gpus_with_cc(cc)
            .iter()
            .filter_map(|g| g.names.first().map(String::as_str))
            .take(3)
            .collect();
        let like = if names.is_empty() {
            String::new()
        } else {
            format!("; GPUs of this CC include {}", names.join(", "))
        };
        return Ok(GpuFacts {
            name: format!("CC {cc} GPU"),
            cc: Some(cc.to_string()),
            source: format!("--gpu {arg}{like}"),
            ..GpuFacts::default()
        });
    }
    match m.gpu_by_name(arg) {
        Some(hit) => Ok(GpuFacts {
            name: hit.name.to_string(),
            cc: Some(hit.row.cc.to_string()),
            source: format!(
                "--gpu \"{arg}\", compute capability from matrix {}",
                hit.row.row.cite(m)
            ),
            ..GpuFacts::default()
        }),
        None => Err(ToolError(format!(
            "unknown GPU \"{arg}\": give a compute capability (8.9, sm_89) or a GPU name the matrix knows \
             (see `cudadiag matrix --gpu NAME`)"
        ))),
    }
}

/// Applies `--gpu` and `--driver` to the facts: each replaces what the machine said.
pub fn apply(args: &Target, facts: &mut Facts, m: &Matrix) -> Result<(), ToolError> {
    if !args.what_if() {
        return Ok(());
    }
    let host = facts.host.get_or_insert_with(Default::default);
    if !args.gpus.is_empty() {
        host.gpus = args
            .gpus
            .iter()
            .map(|g| gpu_from_arg(g, m))
            .collect::<Result<_, _>>()?;
    }
    if let Some(d) = &args.driver {
        if DriverVersion::parse(d).is_none() {
            return Err(ToolError(format!(
                "--driver {d}: not a driver version (like 535.104.05)"
            )));
        }
        host.driver = Some(DriverFacts {
            version: d.trim().to_string(),
            source: "--driver".to_string(),
        });
    }
    Ok(())
}
