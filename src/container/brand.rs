//! The NVML brand a GPU reports (`nvmlDeviceGetBrand`), which `brand=` conditions compare against.
//!
//! cudadiag's facts hold a GPU's name, not its brand, and NVML does not publish a name-to-brand table. What a
//! name settles is the brand's family: a GeForce reports `GeForce` or `GeForce RTX`, a data-centre part `Tesla`
//! (older) or `NVIDIA` (newer), a workstation part `Quadro`, `Quadro RTX` or `NVIDIA RTX`. The requirement is
//! then evaluated once per brand of the family (`docs/container-toolkit.md`, "Brands"); when every brand gives
//! the same answer that is the answer, otherwise it stays open. A name matching no family leaves the brand
//! unknown.

/// The brand spellings libnvidia-container reports, lower-case as the CUDA images' constraints write them.
pub const ALL: &[&str] = &[
    "unknown",
    "quadro",
    "tesla",
    "nvs",
    "grid",
    "geforce",
    "titan",
    "vapps",
    "vpc",
    "vcs",
    "vws",
    "cloudgaming",
    "quadrortx",
    "nvidiartx",
    "nvidia",
    "geforcertx",
    "titanrtx",
];

/// The brands a GPU of this name may report, or `None` when the name settles nothing.
pub fn candidates(name: &str) -> Option<&'static [&'static str]> {
    let n = name.to_ascii_lowercase();
    let words: Vec<&str> = n
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    if has("geforce") {
        return Some(&["geforce", "geforcertx"]);
    }
    if has("titan") {
        return Some(&["titan", "titanrtx"]);
    }
    if has("quadro") {
        return Some(&["quadro", "quadrortx"]);
    }
    if has("tesla") {
        return Some(&["tesla"]);
    }
    if has("grid") {
        return Some(&["grid"]);
    }
    if has("rtx") {
        // "RTX A6000", "RTX 6000 Ada", "RTX PRO 6000": workstation parts; "RTX 4090" and the like: GeForce.
        let next = words
            .iter()
            .position(|w| *w == "rtx")
            .and_then(|i| words.get(i + 1));
        let workstation = has("ada")
            || has("pro")
            || next.is_some_and(|w| w.starts_with('a') && w[1..].chars().all(|c| c.is_ascii_digit()));
        return Some(if workstation {
            &["nvidiartx", "quadrortx", "quadro"]
        } else {
            &["geforce", "geforcertx"]
        });
    }
    // Data-centre parts: a letter or two and digits (H100, H200, A100, L40S, B200, GH200, GB200, V100), and the
    // T4 (not the T400-T1000 workstation boards).
    let datacenter = words.iter().any(|w| {
        if w.starts_with('t') {
            return *w == "t4";
        }
        let letters = w.chars().take_while(|c| c.is_ascii_alphabetic()).count();
        let rest = &w[letters..];
        (1..=2).contains(&letters)
            && !rest.is_empty()
            && rest.chars().next().is_some_and(|c| c.is_ascii_digit())
            && matches!(&w[..1], "h" | "a" | "l" | "b" | "g" | "t" | "v" | "p" | "k")
    });
    if datacenter {
        return Some(&["tesla", "nvidia"]);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_give_brand_families() {
        assert_eq!(candidates("NVIDIA H200"), Some(&["tesla", "nvidia"][..]));
        assert_eq!(
            candidates("NVIDIA A100-SXM4-80GB"),
            Some(&["tesla", "nvidia"][..])
        );
        assert_eq!(candidates("NVIDIA GH200 480GB"), Some(&["tesla", "nvidia"][..]));
        assert_eq!(candidates("Tesla T4"), Some(&["tesla"][..]));
        assert_eq!(
            candidates("NVIDIA GeForce RTX 4090"),
            Some(&["geforce", "geforcertx"][..])
        );
        assert_eq!(candidates("RTX 4090"), Some(&["geforce", "geforcertx"][..]));
        assert_eq!(
            candidates("NVIDIA RTX A6000"),
            Some(&["nvidiartx", "quadrortx", "quadro"][..])
        );
        assert_eq!(
            candidates("NVIDIA RTX 6000 Ada Generation"),
            Some(&["nvidiartx", "quadrortx", "quadro"][..])
        );
        assert_eq!(candidates("NVIDIA TITAN RTX"), Some(&["titan", "titanrtx"][..]));
        assert_eq!(candidates("Quadro RTX 8000"), Some(&["quadro", "quadrortx"][..]));
        assert_eq!(candidates("NVIDIA L4"), Some(&["tesla", "nvidia"][..]));
        assert_eq!(candidates("NVIDIA T1000 8GB"), None);
        assert_eq!(candidates("NVIDIA Jetson AGX Orin"), None);
        assert_eq!(candidates("Orin"), None);
        assert_eq!(candidates(""), None);
        for b in ALL {
            assert_eq!(b.to_ascii_lowercase(), *b);
        }
    }
}
