//! Which package installs a CUDA library, for each way software is installed: pip (`data/pip_cuda.toml`,
//! read by [`super::wheel::Table`]), conda and the system's package manager (`data/cuda_packages.toml`, this
//! module). The knowledge is data, every row sourced (docs/cuda-packages.md); this module only reads it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The bundled table.
pub const BUNDLED: &str = include_str!("../../data/cuda_packages.toml");

/// One library's packages.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// The name before `.so` (`libcudart`).
    pub stem: String,
    /// The Debian package, `{major}`/`{minor}` being the CUDA release's.
    pub deb: String,
    /// The RPM package.
    pub rpm: String,
    /// The conda-forge package.
    pub conda: String,
    /// Keys of `[sources]`.
    pub source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    meta: super::wheel::Meta,
    sources: BTreeMap<String, String>,
    library: Vec<Row>,
}

/// The table of system and conda packages.
#[derive(Debug, Clone)]
pub struct Table {
    /// One row per library stem.
    pub rows: Vec<Row>,
    /// Source key -> what it is.
    pub sources: BTreeMap<String, String>,
}

impl Table {
    /// Parses and checks a table: every source cited exists, each stem once.
    pub fn parse(text: &str) -> Result<Table, String> {
        let raw: Raw = toml::from_str(text).map_err(|e| e.to_string())?;
        if raw.meta.schema_version != 1 {
            return Err(format!("schema_version {} is not 1", raw.meta.schema_version));
        }
        for (i, r) in raw.library.iter().enumerate() {
            for key in r.source.split(';').map(str::trim) {
                if !raw.sources.contains_key(key) {
                    return Err(format!("{}: source {key:?} is not in [sources]", r.stem));
                }
            }
            if raw.library[..i].iter().any(|o| o.stem == r.stem) {
                return Err(format!("{}: listed twice", r.stem));
            }
        }
        Ok(Table {
            rows: raw.library,
            sources: raw.sources,
        })
    }

    /// The row of a SONAME (`libcudart.so.12` → `libcudart`).
    pub fn row(&self, soname: &str) -> Option<&Row> {
        let stem = soname.split(".so").next().unwrap_or(soname);
        self.rows.iter().find(|r| r.stem == stem)
    }
}

/// A package name pattern for one CUDA major: `{major}` filled, `{minor}` left as `N` for the reader (a SONAME
/// does not say which minor release a binary was built with).
pub fn name_for(pattern: &str, major: u32) -> String {
    pattern
        .replace("{major}", &major.to_string())
        .replace("{minor}", "N")
}

/// Whether a pattern names a package per minor release (the fix then says how to choose `N`).
pub fn per_minor(pattern: &str) -> bool {
    pattern.contains("{minor}")
}

/// The bundled system/conda table (checked by the tests; `None` only if the build embedded a broken file).
pub fn bundled() -> Option<&'static Table> {
    static T: OnceLock<Option<Table>> = OnceLock::new();
    T.get_or_init(|| Table::parse(BUNDLED).ok()).as_ref()
}

/// The bundled pip table.
pub fn pip() -> Option<&'static super::wheel::Table> {
    static T: OnceLock<Option<super::wheel::Table>> = OnceLock::new();
    T.get_or_init(|| super::wheel::Table::bundled().ok()).as_ref()
}

/// One pip distribution that installs a library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PipProvider {
    /// The distribution (`nvidia-cuda-runtime-cu12`).
    pub name: String,
    /// Its CUDA major.
    pub cuda: u32,
    /// The `cuda-toolkit` extra that installs it alone, when one does (`cudart`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toolkit_extra: Option<String>,
    /// `data/pip_cuda.toml`'s sources of the row.
    pub source: String,
}

/// Everything the tables know of one SONAME: its CUDA majors and the packages that install it, per installer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Providers {
    /// The SONAME asked about.
    pub soname: String,
    /// The CUDA majors whose releases install it (`libcudart.so.12`: 12; `libcudnn.so.9`: 12 and 13).
    pub majors: Vec<u32>,
    /// pip distributions.
    pub pip: Vec<PipProvider>,
    /// The conda-forge package, when the table has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conda: Option<String>,
    /// Debian packages of NVIDIA's repository, one per major (`N`: the minor release).
    pub deb: Vec<String>,
    /// RPM packages of NVIDIA's repository.
    pub rpm: Vec<String>,
    /// `data/cuda_packages.toml`'s sources of the row, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// What the bundled tables know of `soname`; `None` when neither knows it.
pub fn providers(soname: &str) -> Option<Providers> {
    let dists = pip().map(|t| t.providers(soname)).unwrap_or_default();
    let row = bundled().and_then(|t| t.row(soname));
    if dists.is_empty() && row.is_none() {
        return None;
    }
    let mut majors: Vec<u32> = dists.iter().map(|d| d.cuda).collect();
    if majors.is_empty() {
        majors = pip()
            .map(|t| t.toolkits.iter().map(|k| k.cuda).collect())
            .unwrap_or_default();
    }
    majors.sort_unstable();
    majors.dedup();
    let extra_of = |name: &str, cuda: u32| {
        pip()?.toolkits.iter().filter(|k| k.cuda == cuda).find_map(|k| {
            k.extras
                .iter()
                .find(|(e, ds)| e.as_str() != "all" && ds.len() == 1 && ds[0] == name)
                .map(|(e, _)| e.clone())
        })
    };
    let per_major = |pattern: &str| -> Vec<String> {
        let mut v: Vec<String> = majors.iter().map(|m| name_for(pattern, *m)).collect();
        v.dedup();
        v
    };
    Some(Providers {
        soname: soname.to_string(),
        pip: dists
            .iter()
            .map(|d| PipProvider {
                name: d.name.clone(),
                cuda: d.cuda,
                toolkit_extra: extra_of(&d.name, d.cuda),
                source: d.source.clone(),
            })
            .collect(),
        conda: row.map(|r| r.conda.clone()),
        deb: row.map(|r| per_major(&r.deb)).unwrap_or_default(),
        rpm: row.map(|r| per_major(&r.rpm)).unwrap_or_default(),
        source: row.map(|r| r.source.clone()),
        majors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_tables_are_valid() {
        let t = Table::parse(BUNDLED).unwrap();
        assert_eq!(
            t.row("libcudart.so.12").unwrap().deb,
            "cuda-cudart-{major}-{minor}"
        );
        assert_eq!(
            name_for(&t.row("libcudnn.so.9").unwrap().deb, 13),
            "libcudnn9-cuda-13"
        );
        assert_eq!(name_for("cuda-cudart-{major}-{minor}", 12), "cuda-cudart-12-N");
        assert!(t.row("libfoo.so.1").is_none());
        assert!(pip().is_some() && bundled().is_some());
        let p = providers("libcudart.so.12").unwrap();
        assert_eq!(p.majors, [12]);
        assert_eq!(p.pip[0].name, "nvidia-cuda-runtime-cu12");
        assert_eq!(p.pip[0].toolkit_extra.as_deref(), Some("cudart"));
        assert_eq!(
            (p.deb[0].as_str(), p.conda.as_deref()),
            ("cuda-cudart-12-N", Some("cuda-cudart"))
        );
        let p = providers("libcudart.so.13").unwrap();
        assert_eq!(
            (p.majors.as_slice(), p.pip[0].name.as_str()),
            (&[13][..], "nvidia-cuda-runtime")
        );
        assert_eq!(
            providers("libcudnn.so.9").unwrap().deb,
            ["libcudnn9-cuda-12", "libcudnn9-cuda-13"]
        );
        assert!(providers("libfoo.so.1").is_none());
        assert!(Table::parse(&BUNDLED.replace("CUDA-INSTALL; CONDA", "NOPE; CONDA")).is_err());
    }
}
