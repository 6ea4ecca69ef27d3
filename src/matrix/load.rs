//! The bundled matrix, compiled in, and matrices read at run time (`--matrix FILE`).
//!
//! `build.rs` parses and validates `data/compat.toml` with this module's own parser (`parse.rs`) and writes the
//! result as Rust code (`$OUT_DIR/compat.rs`): the bundled matrix costs no TOML parse at run time. The test
//! `the_compiled_matrix_is_the_parse_of_the_toml` checks that the tables equal what [`Matrix::parse`] makes of
//! the same text, the finding catalogue included.

use super::model::*;
use super::parse::{MatrixError, parse};

/// The Rust code `build.rs` writes: `fn matrix() -> Matrix`, the bundled matrix's tables as literals.
mod compiled {
    use super::super::model::*;
    use super::super::version::{Cc, CudaVersion, DriverVersion};
    use std::collections::BTreeMap;

    include!(concat!(env!("OUT_DIR"), "/compat.rs"));
}

/// The bundled matrix text.
pub const BUNDLED: &str = include_str!("../../data/compat.toml");

impl Matrix {
    /// The bundled matrix: the tables `build.rs` compiled from [`BUNDLED`] (a build fails on a matrix that
    /// does not validate). Never an error; the type is that of [`Matrix::from_file`], which can be.
    pub fn bundled() -> Result<Matrix, MatrixError> {
        Ok(compiled::matrix())
    }

    /// Parses and validates matrix text; `origin` names it in errors and citations.
    pub fn parse(text: &str, origin: &str) -> Result<Matrix, MatrixError> {
        parse(text, origin, &|slug| crate::findings::lookup(slug).is_some())
    }

    /// Reads, parses and validates a matrix file (`--matrix FILE`).
    pub fn from_file(path: &std::path::Path) -> Result<Matrix, MatrixError> {
        let text = crate::system::read::read_to_string(path, crate::system::read::MATRIX).map_err(|e| {
            MatrixError {
                origin: path.display().to_string(),
                line: None,
                message: format!("cannot read: {e}"),
            }
        })?;
        Matrix::parse(&text, &path.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_matrix_is_the_parse_of_the_toml() {
        let compiled = Matrix::bundled().unwrap();
        let parsed = Matrix::parse(BUNDLED, "data/compat.toml (bundled)").unwrap();
        // Every field of every row, private ones (a driver version's components) included.
        assert_eq!(format!("{compiled:#?}"), format!("{parsed:#?}"));
        assert!(
            compiled.toolkits.len() > 60 && compiled.gpus.len() > 40,
            "the tables are not empty"
        );
    }
}
