//! conda's own record of ownership: `<prefix>/conda-meta/<name>-<version>-<build>.json`, one per installed
//! package, with its `name`, `version` and `files` (paths relative to the prefix; `docs/pip-ownership.md`).

use crate::facts::host::Owner;
use crate::system::{Root, read};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// conda: every file listed by the CUDA-related `conda-meta/*.json` of an environment prefix.
pub fn records(root: &Root, prefix: &Path) -> HashMap<PathBuf, Owner> {
    let mut map = HashMap::new();
    let meta = prefix.join("conda-meta");
    let related = |n: &std::ffi::OsStr| {
        let name = n.to_string_lossy();
        name.ends_with(".json") && super::cuda_related(&name)
    };
    for name in root.read_dir_names(&meta, related).unwrap_or_default() {
        let Ok(text) = root.read_to_string(&meta.join(name), read::PACKAGE_METADATA) else {
            continue;
        };
        let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let owner = Owner {
            kind: "conda".into(),
            name: doc["name"].as_str().unwrap_or_default().to_string(),
            version: doc["version"].as_str().map(str::to_string),
        };
        for file in doc["files"].as_array().into_iter().flatten() {
            if let Some(rel) = file.as_str().filter(|r| r.contains(".so")) {
                map.insert(prefix.join(rel), owner.clone());
            }
        }
    }
    map
}
