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
        // Also a GPU the driver lists (Thor's `nvidia` module) whose name the matrix may not know: on a Jetson
        // the one GPU off the PCI bus is the SoC's.
        for g in h
            .gpus
            .iter_mut()
            .filter(|g| g.cc.is_none() && g.pci_device_id.is_none())
        {
            if g.name == name {
                g.name = format!("{} integrated GPU ({soc})", row.name);
            }
            g.cc = Some(row.cc.to_string());
            g.source = format!("{}; the CC of {soc} [matrix {}]", g.source, row.row.cite(m));
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
        .or_else(|| {
            let l4t = h.platform.tegra.as_ref()?.l4t.as_deref()?;
            h.driver.is_none().then_some(())?;
            m.jetpack_for_l4t(l4t).map(|row| row.cuda.to_string())
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::GpuFacts;
    use crate::facts::host::TegraFacts;

    fn gpu(name: &str, pci: Option<u16>) -> GpuFacts {
        GpuFacts {
            name: name.into(),
            cc: None,
            pci_device_id: pci,
            uuid: None,
            bus_id: None,
            source: "/proc/driver/nvidia/gpus/0000:01:00.0/information".into(),
        }
    }

    /// On a Jetson the GPU off the PCI bus takes its SoC's CC (the device tree's, or one the driver lists under a
    /// name the matrix does not know); a PCI GPU does not, and the driver's CUDA is the L4T release's.
    #[test]
    fn a_jetson_gpu_takes_its_socs_compute_capability() {
        let m = Matrix::bundled().unwrap();
        let mut h = HostFacts::default();
        h.platform.tegra = Some(TegraFacts {
            l4t: Some("38.2.0".into()),
            soc: Some("tegra264".into()),
            ..TegraFacts::default()
        });
        h.gpus = vec![
            gpu("NVIDIA Thor Unknown", None),
            gpu("Some PCI GPU", Some(0x1234)),
        ];
        with_matrix(&mut h, &m);
        assert_eq!(h.gpus[0].cc.as_deref(), Some("11.0"));
        assert_eq!(h.gpus[0].name, "NVIDIA Thor Unknown");
        assert_eq!(h.gpus[1].cc, None);
        assert_eq!(h.driver_cuda.as_deref(), Some("13.0"));
        h.gpus = vec![gpu("tegra264 integrated GPU", None)];
        with_matrix(&mut h, &m);
        assert!(h.gpus[0].name.starts_with("Thor"), "{}", h.gpus[0].name);
    }
}
