//! The CUDA runtime against a Jetson's driver: `driver-insufficient` and `minor-version-compat` where the
//! driver is Jetson Linux's own (`nvgpu`, no `/proc/driver/nvidia`).
//!
//! On a Jetson the CUDA driver ships with Jetson Linux (L4T), so the L4T release in `/etc/nv_tegra_release`
//! says which CUDA it supports (`[[jetpack]]`: R36.4 is CUDA 12.6), as a driver branch does on other machines.
//! A newer runtime of another major version fails with error 35; one of the same major runs through
//! minor-version compatibility (CUDA 11 and later). The fix is the JetPack whose Jetson Linux brings that CUDA
//! to this SoC, or, from JetPack 5.0, NVIDIA's cuda-compat package for Jetson (`docs/jetson.md`).
//! A Jetson whose driver shows in `/proc/driver/nvidia` (`nvidia.ko`, expected on Thor's R38) is judged by its driver
//! version as any other machine (`rules::driver`).

use super::driver::runtime_of;
use crate::facts::host::TegraFacts;
use crate::facts::{BinaryFacts, HostFacts};
use crate::findings::{Code, Finding};
use crate::matrix::{JetpackRow, Matrix};

/// The Jetson facts, and the matrix row of its L4T release, when the host is a Jetson without a
/// `/proc/driver/nvidia` driver.
pub fn jetson_driver<'m>(host: Option<&HostFacts>, m: &'m Matrix) -> Option<(TegraFacts, &'m JetpackRow)> {
    let h = host?;
    if h.driver.is_some() {
        return None;
    }
    let t = h.platform.tegra.as_ref()?;
    let row = m.jetpack_for_l4t(t.l4t.as_deref()?)?;
    Some((t.clone(), row))
}

/// `driver-insufficient` or `minor-version-compat` for the binary's runtime on a Jetson.
pub fn runtime(b: &BinaryFacts, host: Option<&HostFacts>, m: &Matrix) -> Option<Finding> {
    let (t, row) = jetson_driver(host, m)?;
    let rt = runtime_of(b)?;
    if rt.fits(&row.cuda) {
        return None;
    }
    let l4t = t.l4t.as_deref().unwrap_or("?");
    let driver_line = format!(
        "Jetson Linux {l4t} ({}) is JetPack {}, whose CUDA driver supports CUDA {} [matrix {}]",
        t.release_line.as_deref().unwrap_or("/etc/nv_tegra_release"),
        row.jetpack,
        row.cuda,
        row.row.cite(m)
    );
    let want = rt.wanted();
    if rt.exact && rt.version.major == row.cuda.major && row.cuda.major >= 11 {
        let limits = m.minor_compat_limits.join("; ");
        return Some(
            Finding::new(
                Code::MinorVersionCompat,
                format!(
                    "{}: CUDA {want} runtime on Jetson Linux {l4t} (CUDA {}) runs only through minor-version \
                     compatibility",
                    b.path, row.cuda
                ),
                format!(
                    "It starts, with limits ({}): {limits}. To lift them: {}",
                    m.minor_compat_limits_source,
                    upgrade(&t, row, &rt.version.to_string(), m)
                ),
            )
            .because(rt.evidence)
            .because(driver_line)
            .at(&b.path),
        );
    }
    let mut f = Finding::new(
        Code::DriverInsufficient,
        format!(
            "{}: CUDA {want} runtime needs a newer CUDA driver than Jetson Linux {l4t}'s (CUDA {}); it fails \
             with CUDA error 35 (CUDA driver version is insufficient for CUDA runtime version)",
            b.path, row.cuda
        ),
        format!(
            "{} Or use a build of the program for CUDA {} or older.",
            upgrade(&t, row, &want, m),
            row.cuda
        ),
    )
    .because(rt.evidence)
    .because(driver_line);
    if let (Some(soc), Some(src)) = (&t.soc, &t.soc_source) {
        f = f.because(format!("the SoC is {soc} ({src})"));
    }
    Some(f.at(&b.path))
}

/// What brings CUDA `want` to this Jetson: the first JetPack for its SoC with that CUDA, and cuda-compat where
/// the installed JetPack allows it.
fn upgrade(t: &TegraFacts, row: &JetpackRow, want: &str, m: &Matrix) -> String {
    let need = crate::matrix::CudaVersion::parse(want.trim_end_matches(".x"));
    let soc = t.soc.as_deref();
    let flash = match (soc, need) {
        (Some(soc), Some(need)) => match m.jetpack_with(soc, need) {
            Some(r) => format!(
                "Flash JetPack {} (Jetson Linux {}, CUDA {}) [matrix {}].",
                r.jetpack,
                r.l4t_label(),
                r.cuda,
                r.row.cite(m)
            ),
            None => format!(
                "No JetPack in the matrix brings CUDA {want} to {}.",
                m.tegra_soc(soc).map_or(soc, |s| s.name.as_str())
            ),
        },
        _ => format!("Flash a JetPack whose Jetson Linux brings CUDA {want} to this board."),
    };
    if row.cuda_compat {
        let (pkg, dir) = match want.strip_suffix(".x") {
            Some(major) => (format!("cuda-compat-{major}-N"), format!("cuda-{major}.N")),
            None => (
                format!("cuda-compat-{}", want.replace('.', "-")),
                format!("cuda-{want}"),
            ),
        };
        format!(
            "{flash} On JetPack {} the CUDA driver can also be upgraded alone: install NVIDIA's cuda-compat \
             package of the program's CUDA (`{pkg}`, from the CUDA repository for Jetson) and put \
             /usr/local/{dir}/compat first on LD_LIBRARY_PATH.",
            row.jetpack
        )
    } else {
        format!(
            "{flash} JetPack {} cannot upgrade its CUDA driver (cuda-compat needs JetPack 5.0 or later).",
            row.jetpack
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::CudartLinkage;

    fn binary(version: &str) -> BinaryFacts {
        let mut b = BinaryFacts {
            path: "/opt/app/main".into(),
            ..BinaryFacts::default()
        };
        b.cudart.linkage = CudartLinkage::Static;
        b.cudart.version = Some(version.into());
        b
    }

    fn jetson(l4t: &str, driver: bool) -> HostFacts {
        let mut h = HostFacts::default();
        h.platform.tegra = Some(TegraFacts {
            l4t: Some(l4t.into()),
            soc: Some("tegra234".into()),
            soc_source: Some("/proc/device-tree/compatible".into()),
            nvgpu: Some(true),
            ..TegraFacts::default()
        });
        if driver {
            h.driver = Some(crate::facts::DriverFacts {
                version: "580.00".into(),
                source: "/proc/driver/nvidia/version".into(),
            });
        }
        h
    }

    /// Same major, newer minor: minor-version compatibility, with the JetPack that lifts its limits; another
    /// major: driver-insufficient; an older runtime, or a Jetson whose driver procfs shows: nothing here.
    #[test]
    fn the_l4t_release_decides() {
        let m = Matrix::bundled().unwrap();
        let h = jetson("35.4.1", false);
        let f = runtime(&binary("11.8"), Some(&h), &m).expect("minor-version-compat");
        assert_eq!(f.slug, "minor-version-compat");
        assert!(f.help.contains("cuda-compat-11-8"), "{}", f.help);
        let f = runtime(&binary("12.6"), Some(&h), &m).expect("driver-insufficient");
        assert_eq!(f.slug, "driver-insufficient");
        assert!(
            f.help
                .contains("Flash JetPack 6.1 (Jetson Linux R36.4, CUDA 12.6)"),
            "{}",
            f.help
        );
        assert!(runtime(&binary("11.4"), Some(&h), &m).is_none());
        assert!(runtime(&binary("12.6"), Some(&jetson("35.4.1", true)), &m).is_none());
        // An L4T release the matrix does not know says nothing.
        assert!(runtime(&binary("13.0"), Some(&jetson("36.2.0", false)), &m).is_none());
    }
}
