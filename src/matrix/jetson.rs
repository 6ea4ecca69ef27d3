//! Jetson rows of the matrix: which integrated GPU a Tegra SoC has (`[[tegra_soc]]`, named as the device tree
//! names it), and which CUDA each Jetson Linux (L4T) release brings (`[[jetpack]]`). On a Jetson the CUDA
//! driver is part of Jetson Linux, so the L4T release in `/etc/nv_tegra_release` says which CUDA it supports,
//! as a driver branch does elsewhere (`docs/jetson.md`).

use super::model::{JetpackRow, Matrix, TegraSoc};
use super::version::CudaVersion;

/// `36.4.3` (or `36.4`, `32`) as numbers; `None` for anything else.
pub fn parse_l4t(s: &str) -> Option<Vec<u32>> {
    let parts: Option<Vec<u32>> = s.split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| (1..=3).contains(&p.len()))
}

impl Matrix {
    /// The SoC the device tree names (`tegra234`).
    pub fn tegra_soc(&self, soc: &str) -> Option<&TegraSoc> {
        self.tegra_socs.iter().find(|s| s.soc == soc)
    }

    /// The row covering the L4T release `l4t` (`36.4.3`): the one with the most leading components in common.
    pub fn jetpack_for_l4t(&self, l4t: &str) -> Option<&JetpackRow> {
        let release = parse_l4t(l4t)?;
        self.jetpacks
            .iter()
            .filter(|r| release.starts_with(&r.l4t))
            .max_by_key(|r| r.l4t.len())
    }

    /// The first release for `soc` whose CUDA is at least `cuda`: what to flash for a program that needs it.
    pub fn jetpack_with(&self, soc: &str, cuda: CudaVersion) -> Option<&JetpackRow> {
        self.jetpacks
            .iter()
            .find(|r| r.cuda >= cuda && r.socs.iter().any(|s| s == soc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l4t_releases_find_their_jetpack() {
        let m = Matrix::bundled().unwrap();
        let row = |l4t: &str| {
            m.jetpack_for_l4t(l4t)
                .map(|r| (r.jetpack.as_str(), r.cuda.to_string()))
        };
        assert_eq!(row("36.4.3"), Some(("6.1", "12.6".into())));
        assert_eq!(row("36.3.0"), Some(("6.0", "12.2".into())));
        assert_eq!(row("35.4.1"), Some(("5.1", "11.4".into())));
        assert_eq!(row("32.7.1"), Some(("4.6", "10.2".into())));
        assert_eq!(row("38.2.0"), Some(("7.0", "13.0".into())));
        // A release the matrix does not know (R36.2, a developer preview) and garbage.
        assert_eq!(row("36.2.0"), None);
        assert_eq!(row("R36"), None);
        assert_eq!(
            m.tegra_soc("tegra234").map(|s| s.cc.to_string()),
            Some("8.7".into())
        );
        assert_eq!(
            m.tegra_soc("tegra264").map(|s| s.cc.to_string()),
            Some("11.0".into())
        );
        let cuda = |s: &str| CudaVersion::parse(s).unwrap();
        // An Orin needing CUDA 12.6 gets JetPack 6.1; none brings it CUDA 13.0; a Xavier stops at JetPack 5.
        assert_eq!(
            m.jetpack_with("tegra234", cuda("12.6"))
                .map(|r| r.jetpack.as_str()),
            Some("6.1")
        );
        assert!(m.jetpack_with("tegra234", cuda("13.0")).is_none());
        assert!(m.jetpack_with("tegra194", cuda("12.0")).is_none());
        assert_eq!(
            m.jetpack_with("tegra264", cuda("13.0")).map(|r| r.l4t_label()),
            Some("R38".into())
        );
    }
}
