//! `NVIDIA_VISIBLE_DEVICES`: whether the toolkit acts on a container at all, and which of the node's GPUs it
//! gives it (`nvidia-container-runtime-hook`'s device request handling and libnvidia-container
//! `src/cli/common.c`; `docs/container-toolkit.md`, "Visible devices").

use crate::facts::HostFacts;
use serde::Serialize;

/// What the container asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "ids", rename_all = "kebab-case")]
pub enum DeviceRequest {
    /// The variable is unset on an image that is not a legacy CUDA image: not a GPU container.
    Unset,
    /// Empty, or `void` among the values: not a GPU container.
    Void,
    /// `none`: the driver's files, no GPU.
    None,
    /// `all` (also what an unset variable means on a legacy image).
    All,
    /// Indices, UUIDs, PCI bus ids, MIG devices (`0:1`, `MIG-…`), in order.
    List(Vec<String>),
}

/// One GPU the container gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelectedGpu {
    /// The node's index of the GPU.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its compute capability, when known.
    pub cc: Option<String>,
    /// Its UUID, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The MIG device asked for on it (`0:1`), when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mig: Option<String>,
}

/// The toolkit's device selection for a container on a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceSelection {
    /// The variable's value, when set.
    pub value: Option<String>,
    /// What it asks for.
    pub request: DeviceRequest,
    /// Whether the toolkit acts on the container at all (anything but unset or void).
    pub gpu_container: bool,
    /// The GPUs it gets.
    pub gpus: Vec<SelectedGpu>,
    /// The first id the node does not have: the toolkit stops the container with "unknown device".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    /// Ids the node's facts cannot settle (a UUID where the node's UUIDs are not known).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<String>,
    /// Whether the node's GPUs are known (read from a machine or declared); if not, the selection is the request
    /// alone.
    pub node_gpus_known: bool,
    /// The device nodes the container gets.
    pub device_nodes: Vec<String>,
}

/// The request as the hook reads it: values split on commas and trimmed; unset on a legacy image means `all`;
/// unset, empty or any `void` means nothing; otherwise the first `all` or `none` decides.
pub fn request(value: Option<&str>, legacy: bool) -> DeviceRequest {
    let ids: Vec<String> = value
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if value.is_none() && legacy {
        return DeviceRequest::All;
    }
    if value.is_none() {
        return DeviceRequest::Unset;
    }
    if ids.is_empty() || ids.iter().any(|i| i == "void") {
        return DeviceRequest::Void;
    }
    for id in &ids {
        match id.as_str() {
            "all" => return DeviceRequest::All,
            "none" => return DeviceRequest::None,
            _ => {}
        }
    }
    DeviceRequest::List(ids)
}

/// Selects the node's GPUs for `value` as `nvidia-container-cli` does: a full `GPU-` UUID (case-insensitive),
/// a PCI bus id, an index below the GPU count, then a MIG device (`MIG-` UUID or `GPU:MIG` indices); the first
/// id matching none of them stops the container.
pub fn select(value: Option<&str>, legacy: bool, node: &HostFacts) -> DeviceSelection {
    let request = request(value, legacy);
    let gpu_container = !matches!(request, DeviceRequest::Unset | DeviceRequest::Void);
    let node_gpus_known = !node.gpus.is_empty() || node.observed;
    let gpu = |i: usize, mig: Option<String>| {
        let g = &node.gpus[i];
        SelectedGpu {
            index: i,
            name: g.name.clone(),
            cc: g.cc.clone(),
            uuid: g.uuid.clone(),
            mig,
        }
    };
    let mut sel = DeviceSelection {
        value: value.map(str::to_string),
        request: request.clone(),
        gpu_container,
        gpus: Vec::new(),
        unknown: None,
        undecided: Vec::new(),
        node_gpus_known,
        device_nodes: Vec::new(),
    };
    match &request {
        DeviceRequest::All => sel.gpus = (0..node.gpus.len()).map(|i| gpu(i, None)).collect(),
        DeviceRequest::List(ids) if !node_gpus_known => sel.undecided = ids.clone(),
        // A node where NVML lists no GPU: the toolkit skips the selection (and CUDA finds no device).
        DeviceRequest::List(_) if node.gpus.is_empty() => {}
        DeviceRequest::List(ids) => {
            for id in ids {
                if id.eq_ignore_ascii_case("all") {
                    sel.gpus = (0..node.gpus.len()).map(|i| gpu(i, None)).collect();
                    break;
                }
                match find(id, node) {
                    Found::Gpu(i) => {
                        if !sel.gpus.iter().any(|g| g.index == i) {
                            sel.gpus.push(gpu(i, None));
                        }
                    }
                    Found::Mig(i) => {
                        // Each device once, as the toolkit does: a list repeating it stays as long as the node.
                        if !sel.gpus.iter().any(|g| g.mig.as_deref() == Some(id.as_str())) {
                            sel.gpus.push(gpu(i, Some(id.clone())));
                        }
                    }
                    Found::Undecided => {
                        if !sel.undecided.contains(id) {
                            sel.undecided.push(id.clone());
                        }
                    }
                    Found::Nothing => {
                        sel.unknown = Some(id.clone());
                        break;
                    }
                }
            }
        }
        _ => {}
    }
    if gpu_container {
        // The control device always; `evaluate` adds the UVM devices (compute) and modeset (display).
        sel.device_nodes = vec!["/dev/nvidiactl".to_string()];
        // The node's device minor is the GPU's number in /dev; cudadiag's facts order GPUs as the driver lists
        // them, which is minor order on a node whose GPUs are all present.
        for g in &sel.gpus {
            let path = format!("/dev/nvidia{}", g.index);
            if !sel.device_nodes.contains(&path) {
                sel.device_nodes.push(path);
            }
        }
    }
    sel
}

enum Found {
    Gpu(usize),
    Mig(usize),
    Undecided,
    Nothing,
}

fn find(id: &str, node: &HostFacts) -> Found {
    let lower = id.to_ascii_lowercase();
    if lower.starts_with("gpu-") && id.len() > 4 {
        if let Some(i) = node
            .gpus
            .iter()
            .position(|g| g.uuid.as_deref().is_some_and(|u| u.eq_ignore_ascii_case(id)))
        {
            return Found::Gpu(i);
        }
        if node.gpus.iter().any(|g| g.uuid.is_none()) {
            return Found::Undecided;
        }
    }
    if let Some(bus) = pci_bus_id(id)
        && let Some(i) = node
            .gpus
            .iter()
            .position(|g| g.bus_id.as_deref().and_then(pci_bus_id).is_some_and(|b| b == bus))
    {
        return Found::Gpu(i);
    }
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = id.parse::<usize>()
            && n < node.gpus.len()
        {
            return Found::Gpu(n);
        }
        return Found::Nothing;
    }
    if lower.starts_with("mig-") && id.len() > 4 {
        // cudadiag does not read MIG device UUIDs.
        return Found::Undecided;
    }
    if let Some((g, m)) = mig_indices(id) {
        if g < node.gpus.len() {
            if node.mig.is_empty() && !node.observed {
                return Found::Undecided;
            }
            if m < mig_count(node, g) {
                return Found::Mig(g);
            }
        }
        return Found::Nothing;
    }
    Found::Nothing
}

/// `0000:3b:00.0` and `3b:00.0`-less spellings the toolkit accepts (`%x:%x:%x.0`), normalised.
fn pci_bus_id(s: &str) -> Option<(u32, u32, u32)> {
    let mut parts = s.split(':');
    let domain = u32::from_str_radix(parts.next()?, 16).ok()?;
    let bus = u32::from_str_radix(parts.next()?, 16).ok()?;
    let rest = parts.next()?;
    if parts.next().is_some() {
        return None;
    }
    let (device, function) = rest.split_once('.')?;
    if function != "0" {
        return None;
    }
    Some((domain, bus, u32::from_str_radix(device, 16).ok()?))
}

/// `GPU:MIG` indices (`0:1`), read as the toolkit's `%lu:%lu` does (digits, a colon, digits).
fn mig_indices(s: &str) -> Option<(usize, usize)> {
    let (a, b) = s.split_once(':')?;
    let digits = |t: &str| {
        let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        t[..end].parse::<usize>().ok()
    };
    Some((a.parse().ok()?, digits(b)?))
}

/// MIG GPU instances the driver lists for GPU `g` (`…/capabilities/gpu<g>/mig/gi<N>`).
fn mig_count(node: &HostFacts, g: usize) -> usize {
    let needle = format!("gpu{g}/mig/");
    node.mig.iter().filter(|m| m.contains(&needle)).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::GpuFacts;

    fn node(n: usize) -> HostFacts {
        HostFacts {
            gpus: (0..n)
                .map(|i| GpuFacts {
                    name: "NVIDIA H200".into(),
                    cc: Some("9.0".into()),
                    uuid: Some(format!("GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd")),
                    bus_id: Some(format!("00000000:{:02x}:00.0", 0x19 + i)),
                    ..GpuFacts::default()
                })
                .collect(),
            observed: true,
            ..HostFacts::default()
        }
    }

    #[test]
    fn requests_read_as_the_hook_reads_them() {
        assert_eq!(request(None, false), DeviceRequest::Unset);
        assert_eq!(request(None, true), DeviceRequest::All);
        assert_eq!(request(Some(""), true), DeviceRequest::Void);
        assert_eq!(request(Some(" , "), false), DeviceRequest::Void);
        assert_eq!(request(Some("0,void"), false), DeviceRequest::Void);
        assert_eq!(request(Some("none"), false), DeviceRequest::None);
        assert_eq!(request(Some("0, all"), false), DeviceRequest::All);
        assert_eq!(
            request(Some(" 0 ,1"), false),
            DeviceRequest::List(vec!["0".into(), "1".into()])
        );
    }

    #[test]
    fn ids_select_the_node_gpus() {
        let n = node(2);
        let s = select(Some("1"), false, &n);
        assert_eq!(s.gpus.len(), 1);
        assert_eq!(s.gpus[0].index, 1);
        assert!(s.device_nodes.contains(&"/dev/nvidia1".to_string()));
        let s = select(Some("gpu-00000000-AAAA-bbbb-cccc-dddddddddddd"), false, &n);
        assert_eq!(s.gpus[0].index, 0);
        let s = select(Some("0:1a:00.0"), false, &n);
        assert_eq!(s.gpus[0].index, 1);
        let s = select(Some("0,7"), false, &n);
        assert_eq!(s.unknown.as_deref(), Some("7"));
        let s = select(Some("GPU-00000000"), false, &n);
        assert_eq!(s.unknown.as_deref(), Some("GPU-00000000"), "no prefix match");
        let s = select(Some("0:1"), false, &n);
        assert_eq!(s.unknown.as_deref(), Some("0:1"), "no MIG instance on the node");
        let mut m = node(1);
        m.mig = vec![
            "/proc/driver/nvidia/capabilities/gpu0/mig/gi1".into(),
            "/proc/driver/nvidia/capabilities/gpu0/mig/gi2".into(),
        ];
        let s = select(Some("0:1"), false, &m);
        assert_eq!((s.gpus.len(), s.unknown.clone()), (1, None));
        let s = select(Some("all"), false, &n);
        assert_eq!(s.gpus.len(), 2);
        let s = select(Some("none"), false, &n);
        assert!(s.gpu_container && s.gpus.is_empty());
        assert_eq!(s.device_nodes, ["/dev/nvidiactl"]);
        let s = select(None, false, &n);
        assert!(!s.gpu_container && s.device_nodes.is_empty());
    }

    #[test]
    fn a_node_read_with_no_gpu_selects_nothing_and_fails_nothing() {
        let n = HostFacts {
            observed: true,
            ..HostFacts::default()
        };
        let s = select(Some("0"), false, &n);
        assert!(s.gpu_container && s.gpus.is_empty() && s.unknown.is_none() && s.undecided.is_empty());
    }

    #[test]
    fn a_node_without_gpu_facts_leaves_ids_open() {
        let s = select(Some("3"), false, &HostFacts::default());
        assert_eq!(s.undecided, ["3"]);
        assert_eq!(s.unknown, None);
        let mut n = node(1);
        n.gpus[0].uuid = None;
        let s = select(Some("GPU-1234"), false, &n);
        assert_eq!(s.undecided, ["GPU-1234"]);
    }
}
