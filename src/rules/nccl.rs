//! `nccl-cuda-mismatch`: the NCCL a process loads was built for another CUDA major than the CUDA runtime the
//! same process loads, or for a newer CUDA major than the driver supports. NCCL links its CUDA runtime
//! statically and calls the driver for the CUDA it was built with, so it fails at its first CUDA call
//! (`unhandled cuda error`) while the program's own CUDA works. Facts: `inspect::nccl` (NCCL's version string),
//! the loader trees (`libcudart.so.N`) and the driver's CUDA. Docs: `data/codes/nccl-cuda-mismatch.md`.

use crate::facts::Facts;
use crate::facts::nccl::NcclBuild;
use crate::findings::{Code, Finding};
use crate::matrix::{DriverVersion, Matrix};

/// One finding per NCCL library whose CUDA major disagrees with the process's runtime or the driver.
pub fn nccl_cuda_mismatch(facts: &Facts, matrix: &Matrix) -> Vec<Finding> {
    let mut out = Vec::new();
    for n in &facts.nccl {
        let Some(major) = n.cuda_major() else {
            continue;
        };
        if let Some((runtime, path)) = other_runtime(facts, n, major) {
            out.push(
                finding(
                    n,
                    format!(
                        "{} is NCCL {} built for CUDA {}, and the same process loads the CUDA {runtime} runtime: \
                         collectives fail with `unhandled cuda error`",
                        n.path, n.version, n.cuda
                    ),
                    format!("{path} is loaded too: CUDA major {runtime}"),
                )
                .at(n.binary.clone()),
            );
            continue;
        }
        if let Some(d) = driver_cuda(facts, matrix)
            && let Some(dm) = d.split('.').next().and_then(|m| m.parse::<u32>().ok())
            && dm < major
        {
            out.push(
                finding(
                    n,
                    format!(
                        "{} is NCCL {} built for CUDA {}, newer than the CUDA {d} the driver supports: NCCL fails \
                         at its first CUDA call (`unhandled cuda error`)",
                        n.path, n.version, n.cuda
                    ),
                    format!("the driver supports CUDA up to {d}"),
                )
                .at(n.binary.clone()),
            );
        }
    }
    out
}

/// The newest CUDA the machine's (or the what-if target's) driver supports: the host's, or the matrix's row of
/// its branch. `None` for a driver newer than every branch the matrix knows (its CUDA may be higher).
fn driver_cuda(facts: &Facts, matrix: &Matrix) -> Option<String> {
    let h = facts.host.as_ref()?;
    if let Some(c) = &h.driver_cuda {
        return Some(c.clone());
    }
    let v = DriverVersion::parse(&h.driver.as_ref()?.version)?;
    if matrix.driver_beyond_table(&v) {
        return None;
    }
    matrix.driver_cuda(&v).map(|dc| dc.cuda.to_string())
}

/// A `libcudart.so.N` of another major in the loader tree of the binary that loads `n`.
fn other_runtime(facts: &Facts, n: &NcclBuild, major: u32) -> Option<(u32, String)> {
    let r = facts
        .libraries
        .iter()
        .find(|r| r.binary == n.binary && r.objects.iter().any(|o| o.path == n.path))?;
    r.objects.iter().skip(1).find_map(|o| {
        let name = o
            .soname
            .as_deref()
            .unwrap_or_else(|| o.path.rsplit('/').next().unwrap_or(""));
        let m: u32 = name
            .strip_prefix("libcudart.so.")?
            .split('.')
            .next()?
            .parse()
            .ok()?;
        (m != major).then(|| (m, o.path.clone()))
    })
}

fn finding(n: &NcclBuild, message: String, because: String) -> Finding {
    Finding::new(
        Code::NcclCudaMismatch,
        message,
        "Use the NCCL built for the CUDA the program uses: the `nvidia-nccl-cuNN` wheel its framework requires \
         (`pip install nvidia-nccl-cu12` for CUDA 12, `nvidia-nccl-cu13` for CUDA 13), or the distribution's \
         `libnccl2=<version>+cudaNN.M` of that CUDA; remove other copies from LD_LIBRARY_PATH. An NCCL for a \
         newer CUDA than the driver's needs a newer driver. `NCCL_DEBUG=VERSION` prints the NCCL that loads.",
    )
    .because(format!(
        "{} holds `NCCL version {}+cuda{}`",
        n.path, n.version, n.cuda
    ))
    .because(because)
}
