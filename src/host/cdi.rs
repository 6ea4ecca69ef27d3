//! Container Device Interface specs of the NVIDIA Container Toolkit: which driver libraries they mount.
//!
//! `nvidia-ctk cdi generate` writes a spec (`/etc/cdi/nvidia.yaml`, or `/var/run/cdi/nvidia.yaml` by the
//! toolkit's `nvidia-cdi-refresh` service from v1.18; YAML or JSON) whose `containerEdits.mounts` name each
//! driver library by its versioned host path (`hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07`).
//! The spec is a snapshot of the driver at generation time: after a driver upgrade it still names the old
//! files, and containers started with `--device nvidia.com/gpu=…` get the old libraries or fail to start
//! (NVIDIA Container Toolkit, "Support for Container Device Interface"; `docs/cdi.md`).
//!
//! The reader is deliberately small and tolerant: it does not parse YAML, only finds each `hostPath` key and
//! its value, in either format, in a file bounded like any configuration file. A spec it cannot read is
//! recorded with why, never fatal.

use crate::facts::host::CdiSpec;
use crate::system::Root;
use std::path::{Path, PathBuf};

/// Where specs live (the CDI specification's default directories).
pub const DIRS: &[&str] = &["/etc/cdi", "/var/run/cdi"];

/// At most this many spec files are read per directory.
const FILES: usize = 64;

/// The `hostPath` values in `text`, YAML (`hostPath: /x`, `- hostPath: "/x"`) or JSON (`"hostPath":"/x"`).
pub fn host_paths(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("hostPath") {
        rest = &rest[i + "hostPath".len()..];
        let after = rest.trim_start_matches(['"', '\'']).trim_start();
        let Some(after) = after.strip_prefix(':') else {
            continue;
        };
        let value = after.trim_start_matches([' ', '\t', '"', '\'']);
        let end = value
            .find(['"', '\'', ',', '}', '\n', '\r', ' ', '\t'])
            .unwrap_or(value.len());
        if end > 0 {
            out.push(&value[..end]);
        }
    }
    out
}

/// The driver version in a driver library's file name (`libnvidia-ml.so.580.65.06` → `580.65.06`).
fn library_version(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    if !(name.starts_with("libcuda.so.") || name.starts_with("libnvidia-")) {
        return None;
    }
    let stem = name.split(".so").next()?.to_string() + ".so";
    super::libcuda::version_in_name(Path::new(name), &stem)
}

/// Reads one spec's text into a [`CdiSpec`], or `None` when it does not mention NVIDIA.
pub fn parse(path: &str, text: &str) -> Option<CdiSpec> {
    if !text.contains("nvidia") {
        return None;
    }
    let mut spec = CdiSpec {
        path: path.to_string(),
        driver_versions: Vec::new(),
        libraries: Vec::new(),
        unreadable: None,
    };
    for p in host_paths(text) {
        let Some(v) = library_version(p) else { continue };
        if !spec.driver_versions.contains(&v) {
            spec.driver_versions.push(v);
        }
        if spec.libraries.len() < 4 {
            spec.libraries.push(p.to_string());
        }
    }
    Some(spec)
}

/// Every NVIDIA CDI spec in [`DIRS`], each real file once.
pub fn collect(root: &Root) -> Vec<CdiSpec> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut out = Vec::new();
    for dir in DIRS {
        let Ok(mut files) = root.read_dir(Path::new(dir)) else {
            continue;
        };
        files.sort();
        for f in files.into_iter().filter(|f| is_spec(f)).take(FILES) {
            let real = root.resolve(&f).unwrap_or_else(|_| f.clone());
            if seen.contains(&real) {
                continue;
            }
            seen.push(real);
            let path = f.display().to_string();
            match root.read_to_string(&f, crate::system::read::CONFIG_TEXT) {
                Ok(text) => out.extend(parse(&path, &text)),
                Err(e) => out.push(CdiSpec {
                    path,
                    driver_versions: Vec::new(),
                    libraries: Vec::new(),
                    unreadable: Some(e.to_string()),
                }),
            }
        }
    }
    out
}

fn is_spec(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_paths_in_yaml_and_json() {
        let yaml = "containerEdits:\n  mounts:\n  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07\n    \
                    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07\n  - hostPath: \"/dev/shm\"\n";
        assert_eq!(
            host_paths(yaml),
            ["/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07", "/dev/shm"]
        );
        let json = r#"{"kind":"nvidia.com/gpu","containerEdits":{"mounts":[{"hostPath":"/lib/libnvidia-ml.so.580.65.06","containerPath":"/x"}]}}"#;
        let s = parse("/etc/cdi/nvidia.json", json).unwrap();
        assert_eq!(s.driver_versions, ["580.65.06"]);
        assert!(parse("/etc/cdi/other.yaml", "kind: vendor.com/fpga\n").is_none());
        // damaged text: keys without values, truncated file
        assert!(host_paths("hostPath:\nhostPath").is_empty());
    }
}
