//! The two host facts that come from the compatibility matrix rather than from files: each GPU's compute
//! capability (by PCI device id, then by name: pci.ids and NVIDIA's CUDA GPUs page, see
//! `docs/compatibility.md`, "Where the matrix rows come from") and the newest CUDA the loaded driver
//! supports (by driver branch). Applied after collection and after a snapshot is read back, so the matrix in
//! use (bundled or `--matrix`) decides, and a snapshot stays raw observation.

use crate::facts::HostFacts;
use crate::matrix::{DriverVersion, Matrix};

/// Fills `gpus[].cc` (where unknown) and `driver_cuda` from the matrix.
pub fn with_matrix(h: &mut HostFacts, m: &Matrix) {
    // A Jetson's integrated GPU, named by its SoC (`host::collect`): `[[tegra_soc]]`.
    let soc_cc = h
        .platform
        .tegra
        .as_ref()
        .and_then(|t| t.soc.as_deref())
        .and_then(|soc| Some((soc, m.tegra_soc(soc)?)));
    if let Some((soc, row)) = soc_cc {
        let name = format!("{soc} integrated GPU");
        for g in h.gpus.iter_mut().filter(|g| g.cc.is_none() && g.name == name) {
            g.name = format!("{} integrated GPU ({soc})", row.name);
            g.cc = Some(row.cc.to_string());
            g.source = format!("{}; its CC [matrix {}]", g.source, row.row.cite(m));
        }
    }
    super::gpu::assign_cc(&mut h.gpus, |name, pci| {
        pci.and_then(|id| m.gpu_by_pci(id))
            .or_else(|| m.gpu_by_name(name))
            .map(|hit| hit.row.cc.to_string())
    });
    h.driver_cuda = h
        .driver
        .as_ref()
        .and_then(|d| DriverVersion::parse(&d.version))
        .and_then(|v| m.driver_cuda(&v))
        .map(|dc| dc.cuda.to_string())
        // A Jetson whose CUDA driver is Jetson Linux's own (`nvgpu`): the CUDA of its L4T release.
        .or_else(|| crate::rules::jetson::jetson_driver(Some(h), m).map(|(_, row)| row.cuda.to_string()));
}
