//! Which package installs a CUDA library, for each way software is installed: pip (`data/pip_cuda.toml`,
//! read by [`super::wheel::Table`]), conda and the system's package manager (`data/cuda_packages.toml`, this
//! module). The knowledge is data, every row sourced (docs/cuda-packages.md); this module only reads it.

use serde::Deserialize;
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
    meta: Meta,
    sources: BTreeMap<String, String>,
    library: Vec<Row>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read to validate the file's shape
struct Meta {
    schema_version: u32,
    compiled: String,
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
        assert!(Table::parse(&BUNDLED.replace("CUDA-INSTALL; CONDA", "NOPE; CONDA")).is_err());
    }
}
