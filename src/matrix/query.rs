//! Questions the rules and `cudadiag matrix` ask the matrix. Each answer carries the row it came from, so the
//! caller can cite it.

use super::model::*;
use super::version::{Cc, CudaVersion, DriverVersion};

/// What CUDA version a driver supports, and how that was decided.
#[derive(Debug, Clone)]
pub struct DriverCuda<'m> {
    /// The newest CUDA version the driver supports.
    pub cuda: CudaVersion,
    /// The branch row used.
    pub row: &'m BranchRow,
    /// False when the driver's branch is not in the table and the nearest older branch was used.
    pub exact: bool,
}

/// A GPU found by name, PCI id or compute capability.
#[derive(Debug, Clone)]
pub struct GpuMatch<'m> {
    /// The matrix row.
    pub row: &'m GpuRow,
    /// The name that matched (or the first name).
    pub name: &'m str,
    /// False when only the start of the name matched (`NVIDIA GH200 480GB` → `NVIDIA GH200`).
    pub exact: bool,
}

/// Lower-case, without an `NVIDIA`/`GeForce`/`Tesla` prefix, single spaces: how GPU names are compared.
pub fn normalize(name: &str) -> String {
    let mut words: Vec<String> = name.split_whitespace().map(str::to_ascii_lowercase).collect();
    while words
        .first()
        .is_some_and(|w| matches!(w.as_str(), "nvidia" | "geforce" | "tesla"))
    {
        words.remove(0);
    }
    words.join(" ")
}

impl Matrix {
    /// The newest CUDA version `driver` supports: its branch's row, or the nearest older branch's.
    pub fn driver_cuda(&self, driver: &DriverVersion) -> Option<DriverCuda<'_>> {
        let b = driver.branch();
        let row = self.branches.iter().rev().find(|r| r.branch <= b)?;
        Some(DriverCuda {
            cuda: row.cuda,
            row,
            exact: row.branch == b,
        })
    }

    /// Whether `driver` is newer than every branch the matrix knows (its CUDA version may be higher).
    pub fn driver_beyond_table(&self, driver: &DriverVersion) -> bool {
        self.branches.last().is_some_and(|r| driver.branch() > r.branch)
    }

    /// The minimum driver of a CUDA runtime version: the GA row of that minor release (or its first row).
    pub fn toolkit_min(&self, cuda: CudaVersion) -> Option<&ToolkitRow> {
        let rows = || self.toolkits.iter().filter(move |t| t.cuda == cuda);
        rows().find(|t| t.release == "ga").or_else(|| rows().next())
    }

    /// Every Table 3 row of a CUDA minor version.
    pub fn toolkit_rows(&self, cuda: CudaVersion) -> Vec<&ToolkitRow> {
        self.toolkits.iter().filter(|t| t.cuda == cuda).collect()
    }

    /// The minor-version-compatibility floor of a major family.
    pub fn minor_compat(&self, major: u32) -> Option<&MinorCompat> {
        self.minor_compat.iter().find(|m| m.major == major)
    }

    /// The row of a PTX ISA version.
    pub fn ptx_isa(&self, isa: CudaVersion) -> Option<&PtxRow> {
        self.ptx.iter().find(|p| p.isa == isa)
    }

    /// The newest PTX ISA a driver supporting `cuda` can JIT.
    pub fn max_ptx_isa(&self, cuda: CudaVersion) -> Option<&PtxRow> {
        self.ptx.iter().rev().find(|p| p.cuda <= cuda)
    }

    /// The architecture of a compute capability.
    pub fn arch(&self, cc: Cc) -> Option<&ArchRow> {
        self.archs.iter().find(|a| a.ccs.contains(&cc))
    }

    /// The `f`-target family a compute capability belongs to.
    pub fn family(&self, cc: Cc) -> Option<&Family> {
        self.families.iter().find(|f| f.members.contains(&cc))
    }

    /// A feature by name.
    pub fn feature(&self, name: &str) -> Option<&FeatureRow> {
        self.features.iter().find(|f| f.name == name)
    }

    /// A GPU by name (`RTX 4090`, `NVIDIA H200`; case and `NVIDIA`/`GeForce` prefixes ignored), by a longer
    /// name that starts with a known one (`NVIDIA GH200 480GB`), or by a family word that names GPUs of one
    /// compute capability only (`orin`, `xavier`, `thor`).
    pub fn gpu_by_name(&self, name: &str) -> Option<GpuMatch<'_>> {
        let key = normalize(name);
        if key.is_empty() {
            return None;
        }
        for row in &self.gpus {
            for n in &row.names {
                if normalize(n) == key {
                    return Some(GpuMatch {
                        row,
                        name: n,
                        exact: true,
                    });
                }
            }
        }
        // "NVIDIA GH200 480GB", "GeForce RTX 4080 SUPER": the longest known name that the query starts with,
        // word for word.
        let words: Vec<&str> = key.split(' ').collect();
        let mut best: Option<(usize, GpuMatch<'_>)> = None;
        for row in &self.gpus {
            for n in &row.names {
                let nk = normalize(n);
                let nw: Vec<&str> = nk.split(' ').collect();
                if nw.len() < words.len()
                    && words[..nw.len()] == nw[..]
                    && best.as_ref().is_none_or(|(len, _)| nw.len() > *len)
                {
                    best = Some((
                        nw.len(),
                        GpuMatch {
                            row,
                            name: n,
                            exact: false,
                        },
                    ));
                }
            }
        }
        if let Some((_, m)) = best {
            return Some(m);
        }
        // A family word (`orin`, `xavier`, `thor`): every name holding the query's words, in order; the answer
        // stands only when all of them share one compute capability (`rtx` names dozens: no answer).
        let mut found: Option<GpuMatch<'_>> = None;
        for row in &self.gpus {
            for n in &row.names {
                let nk = normalize(n);
                let nw: Vec<&str> = nk.split(' ').collect();
                if !nw.windows(words.len()).any(|w| w == &words[..]) {
                    continue;
                }
                match &found {
                    Some(f) if f.row.cc != row.cc => return None,
                    Some(_) => {}
                    None => {
                        found = Some(GpuMatch {
                            row,
                            name: n,
                            exact: false,
                        })
                    }
                }
            }
        }
        found
    }

    /// A GPU by PCI device id (vendor 0x10de).
    pub fn gpu_by_pci(&self, id: u16) -> Option<GpuMatch<'_>> {
        self.gpus
            .iter()
            .find(|g| g.pci_ids.contains(&id))
            .map(|row| GpuMatch {
                row,
                name: row.names.first().map_or("", String::as_str),
                exact: true,
            })
    }

    /// Every GPU row of a compute capability.
    pub fn gpus_with_cc(&self, cc: Cc) -> Vec<&GpuRow> {
        self.gpus.iter().filter(|g| g.cc == cc).collect()
    }

    /// A CUDA error by value.
    pub fn error(&self, value: u32) -> Option<&CudaErrorRow> {
        self.errors.iter().find(|e| e.value == value)
    }

    /// The URL or description of a source key.
    pub fn source_text(&self, key: &str) -> Option<&str> {
        self.sources.get(key.trim()).map(String::as_str)
    }
}
