//! What `CUDA_VISIBLE_DEVICES` selects: CUDA's semantics, applied to the GPUs the facts list.
//!
//! `CUDA_VISIBLE_DEVICES` semantics (`docs/device-order.md`; `docs/compatibility.md`, error 100;
//! pytorch#1040): the list is read left to right and stops at its first invalid entry, so `0,7` on
//! a two-GPU machine shows device 0 and `7,0` shows none. An entry is an index, a `GPU-…` UUID or a unique
//! prefix of one, or a `MIG-…` instance UUID. Empty, `-1`, an out-of-range index and an unknown UUID all leave
//! no device visible, and `cuInit` then returns 100 ("no CUDA-capable device is detected").

use crate::facts::GpuFacts;

/// What a `CUDA_VISIBLE_DEVICES` value selects on a machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visibility {
    /// Indices (into the GPU list) of the devices CUDA will show, in the order it numbers them.
    pub visible: Vec<usize>,
    /// The first entry that ended the list, and why.
    pub stopped_at: Option<(String, String)>,
    /// The value held a `MIG-…` entry, which cudadiag cannot match to a GPU from files.
    pub unknown_mig: bool,
}

/// Applies `CUDA_VISIBLE_DEVICES` to `gpus` (in the driver's order).
pub fn visibility(value: &str, gpus: &[GpuFacts]) -> Visibility {
    let mut v = Visibility {
        visible: Vec::new(),
        stopped_at: None,
        unknown_mig: false,
    };
    if value.trim().is_empty() {
        v.stopped_at = Some((String::new(), "the value is empty".into()));
        return v;
    }
    // Prefixes are taken with `get`, never `[..n]`: the value and the UUIDs are data, and byte 4 of `ab€` is
    // inside the `€` (a slice there panicked).
    for raw in value.split(',') {
        let entry = raw.trim();
        let pick = if let Ok(i) = entry.parse::<i64>() {
            match usize::try_from(i) {
                Ok(i) if i < gpus.len() => Ok(i),
                Ok(_) => Err(format!(
                    "index {i} is out of range: the machine has {} GPU{}",
                    gpus.len(),
                    if gpus.len() == 1 { "" } else { "s" }
                )),
                Err(_) => Err(format!("{i} is negative")),
            }
        } else if entry.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("MIG-")) {
            v.unknown_mig = true;
            v.stopped_at = None;
            return v;
        } else if entry.len() > 4 && entry.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("GPU-")) {
            let matches: Vec<usize> = gpus
                .iter()
                .enumerate()
                .filter(|(_, g)| {
                    g.uuid.as_deref().is_some_and(|u| {
                        u.get(..entry.len())
                            .is_some_and(|p| p.eq_ignore_ascii_case(entry))
                    })
                })
                .map(|(i, _)| i)
                .collect();
            match matches.as_slice() {
                [one] => Ok(*one),
                [] => Err(format!("no GPU has a UUID starting with {entry}")),
                _ => Err(format!("{entry} is a prefix of several GPUs' UUIDs")),
            }
        } else {
            Err(format!("{entry:?} is neither an index nor a GPU UUID"))
        };
        match pick {
            Ok(i) if v.visible.contains(&i) => {
                v.stopped_at = Some((entry.to_string(), "it repeats a device".into()));
                break;
            }
            Ok(i) => v.visible.push(i),
            Err(why) => {
                v.stopped_at = Some((entry.to_string(), why));
                break;
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus() -> Vec<GpuFacts> {
        ["GPU-b4a13011-aaaa", "GPU-b4a27777-bbbb"]
            .iter()
            .map(|u| GpuFacts {
                name: "NVIDIA H200".into(),
                uuid: Some((*u).into()),
                ..GpuFacts::default()
            })
            .collect()
    }

    #[test]
    fn stops_at_the_first_invalid_entry() {
        assert_eq!(visibility("0,7", &gpus()).visible, vec![0]);
        assert!(visibility("7,0", &gpus()).visible.is_empty());
        assert_eq!(visibility("1,0", &gpus()).visible, vec![1, 0]);
        assert!(visibility("-1", &gpus()).visible.is_empty());
        assert!(visibility("", &gpus()).visible.is_empty());
        assert!(visibility("0,0", &gpus()).stopped_at.is_some());
    }

    #[test]
    fn uuid_prefixes() {
        assert_eq!(visibility("GPU-b4a13011", &gpus()).visible, vec![0]);
        assert_eq!(visibility("gpu-B4A2", &gpus()).visible, vec![1]);
        let ambiguous = visibility("GPU-b4a", &gpus());
        assert!(ambiguous.visible.is_empty());
        assert!(ambiguous.stopped_at.unwrap().1.contains("several"));
        assert!(visibility("GPU-deadbeef", &gpus()).visible.is_empty());
        assert!(visibility("MIG-1234", &gpus()).unknown_mig);
    }
}
