//! `device-order-mismatch`: `CUDA_VISIBLE_DEVICES` selects GPUs by index on a machine with GPUs of different
//! models, while CUDA numbers them fastest first.
//!
//! CUDA C++ Programming Guide, "CUDA Environment Variables" (`docs/device-order.md`): `CUDA_DEVICE_ORDER` is
//! `FASTEST_FIRST` (the default: fastest to slowest, by a heuristic) or `PCI_BUS_ID` (ascending PCI bus id);
//! `nvidia-smi`, NVML and the driver's `/proc` list number GPUs in PCI bus order. Index entries of
//! `CUDA_VISIBLE_DEVICES` follow CUDA's order, so on a machine with GPUs of different models `0` is the
//! fastest GPU, not `nvidia-smi`'s GPU 0, unless `CUDA_DEVICE_ORDER=PCI_BUS_ID`. Identical GPUs tie and keep
//! bus order, so only mixed models are judged. UUID entries name one GPU whatever the order.

use crate::facts::HostFacts;
use crate::findings::{Code, Finding};

/// The finding, when the value holds an index, the order is not PCI bus order, and the GPUs differ in model.
pub fn device_order_mismatch(h: &HostFacts) -> Option<Finding> {
    let value = h.env.vars.get("CUDA_VISIBLE_DEVICES")?;
    let order = h.env.vars.get("CUDA_DEVICE_ORDER").map(|o| o.trim());
    if order.is_some_and(|o| o.eq_ignore_ascii_case("PCI_BUS_ID")) {
        return None;
    }
    let indices: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .take_while(|e| e.parse::<usize>().is_ok())
        .collect();
    if indices.is_empty() {
        return None;
    }
    let mut models: Vec<&str> = Vec::new();
    for g in &h.gpus {
        if !models.contains(&g.name.as_str()) {
            models.push(&g.name);
        }
    }
    if models.len() < 2 {
        return None;
    }
    let mut f = Finding::new(
        Code::DeviceOrderMismatch,
        format!(
            "CUDA_VISIBLE_DEVICES={value:?} selects by index, and CUDA numbers this machine's {} different GPU \
             models fastest first, not in nvidia-smi's PCI bus order: index {} may be another GPU than \
             nvidia-smi's",
            models.len(),
            indices[0]
        ),
        "Set CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers GPUs as nvidia-smi does, or select GPUs by UUID \
         (`nvidia-smi -L`: CUDA_VISIBLE_DEVICES=GPU-…), which names one GPU whatever the order.",
    )
    .because(format!("CUDA_VISIBLE_DEVICES={value:?} in the environment"))
    .because(match order {
        Some(o) => format!("CUDA_DEVICE_ORDER={o:?}: not PCI_BUS_ID, so CUDA orders fastest first"),
        None => "CUDA_DEVICE_ORDER is not set: CUDA's default order is FASTEST_FIRST".to_string(),
    });
    for (i, g) in h.gpus.iter().enumerate() {
        f = f.because(format!(
            "nvidia-smi's GPU {i}: {} ({}{})",
            g.name,
            g.bus_id
                .as_deref()
                .map(|b| format!("bus {b}, "))
                .unwrap_or_default(),
            g.source
        ));
    }
    Some(f)
}
