//! The crate's matrix modules, compiled into the build script: the model, the TOML's serde types and the parser
//! with the checks of each table. They name nothing outside `src/matrix/`; what the script does not call is the
//! crate's API, hence `dead_code` allowed.
#![allow(dead_code)]

#[path = "../src/matrix/jetson.rs"]
mod jetson;
#[path = "../src/matrix/model.rs"]
pub mod model;
#[path = "../src/matrix/parse.rs"]
pub mod parse;
#[path = "../src/matrix/query.rs"]
mod query;
#[path = "../src/matrix/raw.rs"]
mod raw;
#[path = "../src/matrix/tables.rs"]
mod tables;
#[path = "../src/matrix/version.rs"]
pub mod version;
