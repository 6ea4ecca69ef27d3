//! `ptxas-too-old`: a `ptxas` a tool would run belongs to a CUDA release older than the GPU's architecture or
//! than the PTX ISA of an inspected PTX file. Triton compiles every kernel with its own ptxas, JAX and
//! TensorFlow with the `nvidia-cuda-nvcc` wheel's or the one on `PATH`: an old one fails with `ptxas fatal:
//! Value 'sm_89' is not defined for option 'gpu-name'` or `Unsupported .version 8.4; current version is
//! '8.2'`. Which release added each target and ISA is the matrix's PTX ISA table (PTX ISA "Release Notes").
//! Facts: `host::ptxas`, `inspect::ptxas`. Docs: `data/codes/ptxas-too-old.md`.

use crate::facts::ptxas::Ptxas;
use crate::facts::{Facts, Format};
use crate::findings::{Code, Finding};
use crate::matrix::{Cc, CudaVersion, Matrix};

/// One finding per ptxas too old for a GPU of the machine or for an inspected PTX file.
pub fn ptxas_too_old(facts: &Facts, matrix: &Matrix) -> Vec<Finding> {
    let host = facts.host.as_ref();
    let all: Vec<&Ptxas> = host
        .map(|h| h.ptxas.iter())
        .into_iter()
        .flatten()
        .chain(facts.ptxas.iter())
        .collect();
    let mut out = Vec::new();
    for p in all {
        let Some(release) = CudaVersion::parse(&p.release) else {
            continue;
        };
        let mut reasons = Vec::new();
        for g in host.map(|h| h.gpus.as_slice()).unwrap_or_default() {
            let Some(cc) = g.cc.as_deref().and_then(Cc::parse) else {
                continue;
            };
            let target = format!("sm_{}", cc.sm());
            if let Some(first) = first_cuda_of_target(matrix, &target)
                && first > release
                && !reasons.iter().any(|(t, _): &(String, String)| *t == target)
            {
                reasons.push((
                    target.clone(),
                    format!(
                        "{target}, the architecture of the {} (CUDA {first} and later)",
                        g.name
                    ),
                ));
            }
        }
        for b in facts.binaries.iter().filter(|b| b.format == Some(Format::Ptx)) {
            for isa in b.device_code.iter().filter_map(|d| d.ptx_isa.as_deref()) {
                let Some(row) = CudaVersion::parse(isa).and_then(|v| matrix.ptx_isa(v)) else {
                    continue;
                };
                let what = format!("PTX ISA {isa}");
                if row.cuda > release && !reasons.iter().any(|(t, _)| *t == what) {
                    reasons.push((
                        what.clone(),
                        format!("{what} of {} (CUDA {} and later)", b.path, row.cuda),
                    ));
                }
            }
        }
        if reasons.is_empty() {
            continue;
        }
        let names: Vec<&str> = reasons.iter().map(|(_, r)| r.as_str()).collect();
        let mut f = Finding::new(
            Code::PtxasTooOld,
            format!(
                "{} ({}) is the ptxas of CUDA {}, too old for {}: compiling with it fails (`Value 'sm_NN' is \
                 not defined for option 'gpu-name'`, `Unsupported .version`)",
                p.path,
                p.via,
                p.release,
                names.join("; ")
            ),
            help(p),
        )
        .because(format!(
            "{} holds `Cuda compilation tools, release {}`",
            p.path, p.release
        ));
        for (_, r) in &reasons {
            f = f.because(format!("needs {r}"));
        }
        out.push(f);
    }
    out
}

/// The CUDA release whose PTX ISA added `target` (`sm_89`: 11.8).
fn first_cuda_of_target(matrix: &Matrix, target: &str) -> Option<CudaVersion> {
    matrix
        .ptx
        .iter()
        .find(|r| r.new_targets.iter().any(|t| t == target))
        .map(|r| r.cuda)
}

fn help(p: &Ptxas) -> String {
    let how = match p.via.as_str() {
        "triton's own" => {
            "upgrade triton (it ships its own ptxas; torch pins the triton it was tested with, so upgrade torch), \
             or point TRITON_PTXAS_PATH at a newer toolkit's ptxas"
        }
        "TRITON_PTXAS_PATH" => {
            "point TRITON_PTXAS_PATH at a newer toolkit's ptxas, or unset it to use triton's own"
        }
        "nvidia-cuda-nvcc (JAX, TensorFlow)" => {
            "upgrade the wheel (`pip install -U nvidia-cuda-nvcc-cu12`, or `nvidia-cuda-nvcc` for CUDA 13)"
        }
        _ => "install a newer CUDA toolkit and put its `bin` first on PATH, or remove the old one from PATH",
    };
    format!(
        "Use a ptxas of a CUDA release that knows the target: {how}. `ptxas --version` shows the release; \
         `cudadiag matrix` lists which release added each architecture and PTX ISA."
    )
}
