//! `cudadiag diff A.json B.json`: what differs between two machines, in the order that explains a failure.
//!
//! A support engineer has a node that works and one that does not, each as a snapshot or a `--format json`
//! report. Most of their facts differ in ways that do not matter (UUIDs, bus ids, host names); a few decide
//! whether CUDA starts. [`compare`] looks only at those, and ranks them by how directly they break CUDA:
//!
//! 1. `module-vs-libraries`: the loaded kernel module against the driver libraries the loader picks (a node
//!    upgraded without a reboot: module 570, libraries 580; NVML says "Driver/library version mismatch").
//! 2. `driver-version`, `driver-flavour`, `kernel-modules`, `driver-cuda`: the kernel module, open or
//!    proprietary, the GPU modules loaded beside it (`nvidia_uvm`, `nouveau`), and the newest CUDA it runs.
//! 3. `gpus`, `mig`: the GPU models and compute capabilities, the MIG instances.
//! 4. `device-nodes`: the `/dev/nvidia*` nodes and their modes.
//! 5. `libcuda`, `nvml`, `ld-cache`, `cuda-libraries`, `glibc`: the `libcuda.so.1` and `libnvidia-ml.so.1`
//!    each would load, whether the loader has a usable `/etc/ld.so.cache`, the CUDA libraries on disk by
//!    family and version, the C library.
//! 6. `environment`: each CUDA-relevant variable that differs.
//! 7. `finding`: each finding (by code) present on one side only.
//!
//! Facts only: no judgement is re-derived here. The `why` of a row says what such a difference does, and the
//! findings of each side (the report's own, or the rules run over a snapshot's facts) say what the rules
//! concluded.

use crate::facts::HostFacts;
use crate::facts::host::{LibCandidate, LibKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One side of a comparison: a node's facts and findings, whichever file they came from.
#[derive(Debug, Clone)]
pub struct Node {
    /// The file it was read from.
    pub file: String,
    /// `snapshot` or `report`.
    pub kind: &'static str,
    /// Its host name, else the file's name.
    pub name: String,
    /// The machine's facts (enriched with the matrix), when the file has them.
    pub host: Option<HostFacts>,
    /// Its findings.
    pub findings: Vec<NodeFinding>,
}

/// A finding as a diff compares it: by code, with its slug, severity and message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct NodeFinding {
    /// `CD304`.
    pub code: String,
    /// `driver-library-mismatch`.
    pub slug: String,
    /// `error`, `warning`, `note`.
    pub severity: String,
    /// The finding's one sentence.
    pub message: String,
}

/// One difference: what, each side's value (`None`: absent or unknown there), and why it matters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// Stable kind (`module-vs-libraries`, `driver-version`, …, `finding`); the order above.
    pub kind: &'static str,
    /// What differs, for people (`driver version`, `env CUDA_VISIBLE_DEVICES`, `finding CD304`).
    pub what: String,
    /// The value on A.
    pub a: Option<String>,
    /// The value on B.
    pub b: Option<String>,
    /// One sentence: what this difference does to a CUDA program.
    pub why: String,
}

/// Every difference that matters between `a` and `b`, most important first.
pub fn compare(a: &Node, b: &Node) -> Vec<Difference> {
    let mut out = Vec::new();
    if let (Some(ha), Some(hb)) = (&a.host, &b.host) {
        machine(ha, hb, &mut out);
    }
    findings(a, b, &mut out);
    out
}

fn machine(a: &HostFacts, b: &HostFacts, out: &mut Vec<Difference>) {
    module_vs_libraries(a, b, out);
    let ver = |h: &HostFacts| h.driver.as_ref().map(|d| d.version.clone());
    push(
        out,
        "driver-version",
        "driver (kernel module)",
        ver(a),
        ver(b),
        "the kernel module decides which GPUs and which CUDA versions run (and a missing one, that none do)",
    );
    let flavour = |h: &HostFacts| h.kernel.flavour.as_ref().and_then(wire_name);
    push(
        out,
        "driver-flavour",
        "kernel module flavour",
        flavour(a),
        flavour(b),
        "the open and the proprietary modules support different GPUs (Blackwell and later need the open one)",
    );
    let modules = |h: &HostFacts| {
        h.kernel.modules_source.as_ref().map(|_| {
            if h.kernel.modules.is_empty() {
                "none".to_string()
            } else {
                h.kernel.modules.join(" ")
            }
        })
    };
    push_known(
        out,
        "kernel-modules",
        "GPU kernel modules loaded",
        modules(a),
        modules(b),
        "without nvidia_uvm CUDA cannot start, and with nouveau loaded the NVIDIA module cannot bind the GPU",
    );
    push(
        out,
        "driver-cuda",
        "newest CUDA the driver runs",
        a.driver_cuda.clone(),
        b.driver_cuda.clone(),
        "a program built with a newer CUDA than this fails with cudaErrorInsufficientDriver (35) or \
         CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)",
    );
    push(
        out,
        "gpus",
        "GPUs",
        gpus(a),
        gpus(b),
        "device code must carry SASS for each GPU's compute capability, or PTX it can JIT: else \
         'no kernel image is available' (209)",
    );
    let mig = |h: &HostFacts| (!h.mig.is_empty()).then(|| format!("{} instances", h.mig.len()));
    push(
        out,
        "mig",
        "MIG instances",
        mig(a),
        mig(b),
        "with MIG on, CUDA sees only the instances CUDA_VISIBLE_DEVICES names (MIG-… UUIDs), not whole GPUs",
    );
    push(
        out,
        "device-nodes",
        "device nodes",
        nodes(a),
        nodes(b),
        "without /dev/nvidiactl, /dev/nvidiaN or /dev/nvidia-uvm, or without read-write access to them, \
         cuInit fails",
    );
    push(
        out,
        "libcuda",
        "libcuda.so.1 loaded",
        a.libcuda.first().map(candidate),
        b.libcuda.first().map(candidate),
        "the loader takes the first libcuda.so.1 it finds: a stub, an old copy or a compat library there \
         changes what every CUDA program gets",
    );
    push(
        out,
        "nvml",
        "libnvidia-ml.so.1 loaded",
        a.nvml.first().map(candidate),
        b.nvml.first().map(candidate),
        "nvidia-smi and every NVML user load this one; a version other than the module's fails to initialise",
    );
    let cache = |h: &HostFacts| h.ld_cache.as_ref().and_then(wire_name);
    push_known(
        out,
        "ld-cache",
        "/etc/ld.so.cache",
        cache(a),
        cache(b),
        "without a usable cache the loader searches only LD_LIBRARY_PATH, RUNPATH and the default directories: \
         libraries in ld.so.conf directories are not found",
    );
    if !a.catalog_skipped && !b.catalog_skipped {
        cuda_libraries(a, b, out);
    }
    let glibc = |h: &HostFacts| h.glibc.as_ref().map(|g| g.version.clone());
    push_known(
        out,
        "glibc",
        "glibc",
        glibc(a),
        glibc(b),
        "a binary linked against a newer glibc than the machine's does not start ('GLIBC_2.xx not found')",
    );
    environment(a, b, out);
}

/// The loaded module and the first driver library's version, when the two are known.
fn module_and_libraries(h: &HostFacts) -> Option<(String, String)> {
    let module = h.driver.as_ref()?.version.clone();
    let lib = [&h.libcuda, &h.nvml]
        .into_iter()
        .filter_map(|l| l.iter().find(|c| c.kind == LibKind::Driver))
        .find_map(|c| c.version.clone())?;
    Some((module, lib))
}

fn module_vs_libraries(a: &HostFacts, b: &HostFacts, out: &mut Vec<Difference>) {
    let (pa, pb) = (module_and_libraries(a), module_and_libraries(b));
    let mismatched = |p: &Option<(String, String)>| p.as_ref().is_some_and(|(m, l)| m != l);
    if !mismatched(&pa) && !mismatched(&pb) {
        return;
    }
    let show = |p: &Option<(String, String)>| {
        p.as_ref().map(|(m, l)| {
            if m == l {
                format!("module {m} = libraries {l}")
            } else {
                format!("module {m} ≠ libraries {l}")
            }
        })
    };
    let side = match (mismatched(&pa), mismatched(&pb)) {
        (true, true) => "both",
        (true, false) => "A",
        _ => "B",
    };
    push(
        out,
        "module-vs-libraries",
        "driver module vs libraries",
        show(&pa),
        show(&pb),
        &format!(
            "on {side} the loaded kernel module is not the version of the driver libraries: the driver was upgraded \
             without a reboot (or two installs are mixed); CUDA and NVML fail with 'Driver/library version \
             mismatch' until the module is reloaded"
        ),
    );
}

fn gpus(h: &HostFacts) -> Option<String> {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for g in &h.gpus {
        let cc = g.cc.as_deref().map_or(String::new(), |c| format!(" (CC {c})"));
        *count.entry(format!("{}{cc}", g.name)).or_default() += 1;
    }
    (!count.is_empty()).then(|| {
        count
            .iter()
            .map(|(g, n)| format!("{n} × {g}"))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

fn nodes(h: &HostFacts) -> Option<String> {
    let set: BTreeSet<String> = h
        .device_nodes
        .iter()
        .map(|n| format!("{} ({:o})", n.path.trim_start_matches("/dev/"), n.mode & 0o7777))
        .collect();
    (!set.is_empty()).then(|| set.into_iter().collect::<Vec<_>>().join(" "))
}

fn candidate(c: &LibCandidate) -> String {
    let kind = match c.kind {
        LibKind::Driver => "driver",
        LibKind::Stub => "stub",
        LibKind::Compat => "compat",
        LibKind::Wsl => "wsl",
    };
    let version = c.version.as_deref().map_or(String::new(), |v| format!(" {v}"));
    format!("{} ({kind}{version})", c.real_path)
}

fn cuda_libraries(a: &HostFacts, b: &HostFacts, out: &mut Vec<Difference>) {
    let families = |h: &HostFacts| {
        let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for l in &h.libraries {
            let v = l.version.clone().unwrap_or_else(|| "unknown version".into());
            m.entry(l.kind.clone()).or_default().insert(v);
        }
        m
    };
    let (fa, fb) = (families(a), families(b));
    let kinds: BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    for k in kinds {
        let show = |f: &BTreeMap<String, BTreeSet<String>>| {
            f.get(k).map(|s| s.iter().cloned().collect::<Vec<_>>().join(", "))
        };
        push(
            out,
            "cuda-libraries",
            &format!("{k} versions on disk"),
            show(&fa),
            show(&fb),
            "the CUDA libraries a program finds decide its runtime version; a missing family is \
             'cannot open shared object file'",
        );
    }
}

fn environment(a: &HostFacts, b: &HostFacts, out: &mut Vec<Difference>) {
    let names: BTreeSet<&String> = a.env.vars.keys().chain(b.env.vars.keys()).collect();
    for n in names {
        let (va, vb) = (a.env.vars.get(n), b.env.vars.get(n));
        // A value a support bundle redacted is unknown, not different: a customer's bundle against a reference
        // machine would otherwise list every redacted variable.
        if [va, vb]
            .iter()
            .any(|v| v.is_some_and(|v| crate::bundle::redact::is_placeholder_value(v)))
        {
            continue;
        }
        push(
            out,
            "environment",
            &format!("env {n}"),
            va.cloned(),
            vb.cloned(),
            env_why(n),
        );
    }
}

fn env_why(name: &str) -> &'static str {
    match name {
        "CUDA_VISIBLE_DEVICES" | "NVIDIA_VISIBLE_DEVICES" => {
            "decides which GPUs CUDA shows, and their numbering"
        }
        "CUDA_DEVICE_ORDER" => {
            "decides whether CUDA numbers GPUs as nvidia-smi does (PCI_BUS_ID) or fastest first"
        }
        "LD_LIBRARY_PATH" | "LD_PRELOAD" => "searched before the system: decides which CUDA libraries load",
        "PATH" => "decides which nvcc and tools run",
        n if n.contains("JIT") || n.starts_with("CUDA_CACHE") => {
            "decides whether PTX is JIT-compiled and cached"
        }
        "NVIDIA_REQUIRE_CUDA" | "NVIDIA_DISABLE_REQUIRE" => {
            "the container runtime refuses to start an image whose CUDA needs a newer driver"
        }
        _ => "read by CUDA, the loader or the container runtime",
    }
}

fn findings(a: &Node, b: &Node, out: &mut Vec<Difference>) {
    let (fa, fb) = (by_code(a), by_code(b));
    let codes: BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    let show = |f: &&NodeFinding| format!("{} {}", f.severity, f.slug);
    let mut rows: Vec<(u8, Difference)> = Vec::new();
    for c in codes {
        let (x, y) = (fa.get(c), fb.get(c));
        if x.is_some() == y.is_some() {
            continue;
        }
        let f = x.or(y).copied();
        let Some(f) = f else { continue };
        let rank = match f.severity.as_str() {
            "error" => 0,
            "warning" => 1,
            _ => 2,
        };
        rows.push((
            rank,
            Difference {
                kind: "finding",
                what: format!("finding {c}"),
                a: x.map(show),
                b: y.map(show),
                why: f.message.clone(),
            },
        ));
    }
    rows.sort_by_key(|(rank, _)| *rank);
    out.extend(rows.into_iter().map(|(_, d)| d));
}

/// An enum's name as the facts' JSON spells it (`open`, `usable`).
fn wire_name<T: Serialize>(t: &T) -> Option<String> {
    serde_json::to_value(t).ok()?.as_str().map(str::to_string)
}

fn by_code(n: &Node) -> BTreeMap<String, &NodeFinding> {
    let mut m: BTreeMap<String, &NodeFinding> = BTreeMap::new();
    for f in &n.findings {
        m.entry(f.code.clone()).or_insert(f);
    }
    m
}

/// [`push`] for facts that may be unrecorded (a snapshot from an earlier version, a part not read): a row only
/// when both sides know the value, so that the age of a file is not taken for a difference of machines.
fn push_known(
    out: &mut Vec<Difference>,
    kind: &'static str,
    what: &str,
    a: Option<String>,
    b: Option<String>,
    why: &str,
) {
    if a.is_some() && b.is_some() {
        push(out, kind, what, a, b, why);
    }
}

fn push(
    out: &mut Vec<Difference>,
    kind: &'static str,
    what: &str,
    a: Option<String>,
    b: Option<String>,
    why: &str,
) {
    if a != b {
        out.push(Difference {
            kind,
            what: what.to_string(),
            a,
            b,
            why: why.to_string(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::DriverFacts;
    use crate::facts::host::FoundVia;

    fn node(module: &str, lib: &str) -> Node {
        let host = HostFacts {
            driver: Some(DriverFacts {
                version: module.into(),
                source: "/proc/driver/nvidia/version".into(),
            }),
            libcuda: vec![LibCandidate {
                path: "/usr/lib/libcuda.so.1".into(),
                real_path: format!("/usr/lib/libcuda.so.{lib}"),
                version: Some(lib.into()),
                kind: LibKind::Driver,
                found_via: FoundVia::LdSoCache,
            }],
            ..HostFacts::default()
        };
        Node {
            file: "x.json".into(),
            kind: "snapshot",
            name: "x".into(),
            host: Some(host),
            findings: Vec::new(),
        }
    }

    #[test]
    fn the_module_library_mismatch_comes_first() {
        let good = node("580.65.06", "580.65.06");
        let bad = node("570.124.06", "580.65.06");
        let d = compare(&good, &bad);
        assert_eq!(d[0].kind, "module-vs-libraries");
        assert_eq!(d[0].b.as_deref(), Some("module 570.124.06 ≠ libraries 580.65.06"));
        assert!(d[0].why.starts_with("on B "));
        assert_eq!(d[1].kind, "driver-version");
        assert!(compare(&good, &good).is_empty());
    }

    #[test]
    fn a_redacted_value_is_unknown_not_different() {
        let mut a = node("580.65.06", "580.65.06");
        let mut b = a.clone();
        let set = |n: &mut Node, k: &str, v: &str| {
            let h = n.host.as_mut().unwrap();
            h.env.vars.insert(k.into(), v.into());
        };
        set(&mut a, "NVIDIA_PRODUCT_NAME", "CUDA");
        set(&mut b, "NVIDIA_PRODUCT_NAME", "redacted-1");
        assert!(compare(&a, &b).is_empty());
        // Near miss: a real value against another is a difference, and so is a value that only looks alike.
        set(&mut b, "NVIDIA_PRODUCT_NAME", "redacted-x");
        assert_eq!(compare(&a, &b)[0].what, "env NVIDIA_PRODUCT_NAME");
        set(&mut a, "CUDA_VISIBLE_DEVICES", "0");
        set(&mut b, "CUDA_VISIBLE_DEVICES", "1");
        assert!(
            compare(&a, &b)
                .iter()
                .any(|d| d.what == "env CUDA_VISIBLE_DEVICES")
        );
    }

    #[test]
    fn two_consistent_drivers_are_a_version_difference_only() {
        let d = compare(&node("570.124.06", "570.124.06"), &node("580.65.06", "580.65.06"));
        let kinds: Vec<&str> = d.iter().map(|d| d.kind).collect();
        assert_eq!(kinds, ["driver-version", "libcuda"]);
    }

    #[test]
    fn modules_and_the_ld_cache_only_when_known_on_both_sides() {
        use crate::facts::host::LdCacheState;
        let mut a = node("550.90.07", "550.90.07");
        let mut b = a.clone();
        let (ha, hb) = (a.host.as_mut().unwrap(), b.host.as_mut().unwrap());
        ha.kernel.modules = vec!["nvidia_uvm".into(), "nvidia".into()];
        ha.kernel.modules_source = Some("/proc/modules".into());
        ha.ld_cache = Some(LdCacheState::Usable);
        hb.kernel.modules = vec!["nouveau".into()];
        // Not read on B (an older snapshot): unknown, not a difference.
        assert!(compare(&a, &b).is_empty());
        let hb = b.host.as_mut().unwrap();
        hb.kernel.modules_source = Some("/proc/modules".into());
        hb.ld_cache = Some(LdCacheState::Missing);
        let d = compare(&a, &b);
        assert_eq!(d[0].a.as_deref(), Some("nvidia_uvm nvidia"));
        assert_eq!(d[0].b.as_deref(), Some("nouveau"));
        assert_eq!(
            (d[1].a.as_deref(), d[1].b.as_deref()),
            (Some("usable"), Some("missing"))
        );
    }

    #[test]
    fn findings_on_one_side_only_errors_first() {
        let f = |code: &str, sev: &str| NodeFinding {
            code: code.into(),
            slug: format!("slug-{code}"),
            severity: sev.into(),
            message: "m".into(),
        };
        let mut a = node("1.0", "1.0");
        let mut b = a.clone();
        a.findings = vec![f("CD100", "note"), f("CD200", "warning")];
        b.findings = vec![f("CD200", "warning"), f("CD300", "error")];
        let d = compare(&a, &b);
        let what: Vec<&str> = d.iter().map(|d| d.what.as_str()).collect();
        assert_eq!(what, ["finding CD300", "finding CD100"]);
        assert_eq!(d[0].a, None);
        assert_eq!(d[0].b.as_deref(), Some("error slug-CD300"));
    }
}
