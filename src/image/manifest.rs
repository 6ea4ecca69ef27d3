//! Which image of the archive, and its layers and config.
//!
//! `docker save` writes `manifest.json`: a list of `{Config, RepoTags, Layers}`, names of files in the archive
//! (Docker image spec v1.2, "Combined Image JSON + Filesystem Changeset Format"; Docker 25 and later write
//! an OCI layout beside it and name its blobs). An OCI image layout has `index.json`, an image index whose
//! descriptors point, by digest, at manifests (`config` and `layers` descriptors) or at further indexes, each
//! manifest with the `platform` it is for (OCI image spec, `image-layout.md`, `image-index.md`,
//! `manifest.md`). Attestation manifests (BuildKit's `vnd.docker.reference.type: attestation-manifest`,
//! platform `unknown/unknown`) are not images and are passed over.

use super::store::Store;
use super::{ImageError, Limits};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The parts of the config the inspection uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunConfig {
    /// `Env`.
    pub env: Vec<String>,
    /// `Entrypoint`.
    pub entrypoint: Vec<String>,
    /// `Cmd`.
    pub cmd: Vec<String>,
    /// `WorkingDir`.
    pub working_dir: String,
    /// `User`.
    pub user: String,
}

/// Indexes followed inside indexes.
const MAX_DEPTH: usize = 4;
/// Descriptors read over all indexes.
const MAX_DESCRIPTORS: usize = 4096;
/// Bytes of JSON (manifests, indexes, configs) one image's reading may read in all: a real image reads a few
/// hundred KiB; a hostile one naming one large config many times reads it once (candidates are de-duplicated),
/// and one naming many large ones stops here.
pub const MAX_DOCUMENTS: u64 = 64 << 20;

/// `os/architecture[/variant]`, as the OCI image spec names platforms (`linux/amd64`, `linux/arm64/v8`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Platform {
    /// `linux`.
    pub os: String,
    /// `amd64`, `arm64`.
    pub arch: String,
    /// `v8`, when given.
    pub variant: Option<String>,
}

impl Platform {
    /// Parses `os/arch[/variant]`.
    pub fn parse(s: &str) -> Option<Platform> {
        let mut parts = s.trim().split('/');
        let os = parts.next().filter(|p| !p.is_empty())?;
        let arch = parts.next().filter(|p| !p.is_empty())?;
        let variant = parts.next().map(str::to_string);
        if parts.next().is_some() {
            return None;
        }
        Some(Platform {
            os: os.into(),
            arch: arch.into(),
            variant,
        })
    }

    /// This machine's: `linux/amd64` on x86-64, `linux/arm64` on AArch64 (Go's names, which the specs use).
    pub fn host() -> Platform {
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            "powerpc64" => "ppc64le",
            other => other,
        };
        Platform {
            os: "linux".into(),
            arch: arch.into(),
            variant: None,
        }
    }

    /// Does an image for `self` serve a request for `want`? A variant matters only when both name one
    /// (`arm64` is `arm64/v8`).
    fn serves(&self, want: &Platform) -> bool {
        self.os == want.os
            && self.arch == want.arch
            && match (&self.variant, &want.variant) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.arch)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

/// The image picked: its layers (names in the store), config and names.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// Layer files, bottom first.
    pub layers: Vec<String>,
    /// The run configuration.
    pub config: RunConfig,
    /// The config's platform.
    pub platform: Platform,
    /// A tag or reference name.
    pub reference: Option<String>,
    /// The config's digest.
    pub config_digest: Option<String>,
    /// The manifest's digest.
    pub manifest_digest: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DockerEntry {
    config: String,
    #[serde(default)]
    repo_tags: Option<Vec<String>>,
    #[serde(default)]
    layers: Vec<String>,
}

#[derive(Deserialize, Default)]
struct Descriptor {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    digest: String,
    #[serde(default)]
    platform: Option<DescPlatform>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct DescPlatform {
    #[serde(default)]
    os: String,
    #[serde(default)]
    architecture: String,
}

#[derive(Deserialize)]
struct Index {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    #[serde(default)]
    manifests: Vec<Descriptor>,
    // A manifest read where an index was expected (some tools point index.json's descriptor at either).
    #[serde(default)]
    layers: Option<Vec<Descriptor>>,
}

#[derive(Deserialize)]
struct Manifest {
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

#[derive(Deserialize, Default)]
struct ConfigFile {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
    #[serde(default)]
    variant: Option<String>,
    #[serde(default)]
    config: Option<ConfigRun>,
}

/// A config's platform alone: what choosing between candidates needs (the rest is skipped, not kept).
#[derive(Deserialize, Default)]
struct ConfigPlatform {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
    #[serde(default)]
    variant: Option<String>,
}

impl ConfigPlatform {
    fn platform(self) -> Platform {
        Platform {
            os: self.os,
            arch: self.architecture,
            variant: self.variant,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct ConfigRun {
    #[serde(default)]
    env: Option<Vec<String>>,
    #[serde(default)]
    entrypoint: Option<Vec<String>>,
    #[serde(default)]
    cmd: Option<Vec<String>>,
    #[serde(default)]
    working_dir: Option<String>,
    #[serde(default)]
    user: Option<String>,
}

/// One image the archive offers.
#[derive(PartialEq, Eq, Hash)]
struct Candidate {
    layers: Vec<String>,
    config_name: String,
    config_digest: Option<String>,
    manifest_digest: Option<String>,
    reference: Option<String>,
}

impl Candidate {
    /// What makes two candidates the same image: the same config and layers (a tag or reference aside).
    fn key(&self) -> (String, Vec<String>) {
        (self.config_name.clone(), self.layers.clone())
    }
}

/// The blob file of a digest (`sha256:ab…` is `blobs/sha256/ab…`); a digest that is not `ALG:HEX` is refused.
fn blob(digest: &str) -> Result<String, String> {
    let (alg, hex) = digest
        .split_once(':')
        .ok_or_else(|| format!("digest {digest:?} is not ALGORITHM:HEX"))?;
    let alg_ok = !alg.is_empty()
        && alg
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+._-".contains(&b));
    let hex_ok = !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    if !alg_ok || !hex_ok {
        return Err(format!("digest {digest:?} is not ALGORITHM:HEX"));
    }
    Ok(format!("blobs/{alg}/{hex}"))
}

/// What is left of [`MAX_DOCUMENTS`] for one image.
pub struct Budget(u64);

impl Default for Budget {
    fn default() -> Self {
        Budget(MAX_DOCUMENTS)
    }
}

/// Reads and decodes the JSON document `name`, its bytes taken from `budget` before they are read.
fn json<T: for<'de> Deserialize<'de>>(
    store: &Store,
    name: &str,
    shown: &str,
    budget: &mut Budget,
) -> Result<T, ImageError> {
    let len = store
        .member(name)
        .map_err(|e| ImageError(format!("{shown}: {e}")))?
        .len();
    budget.0 = budget.0.checked_sub(len).ok_or_else(|| {
        ImageError::cap(
            shown,
            "max-documents",
            format!("its manifests, indexes and configs hold more than {MAX_DOCUMENTS} bytes"),
        )
    })?;
    let bytes = store
        .read(name)
        .map_err(|e| ImageError(format!("{shown}: {e}")))?;
    serde_json::from_slice(&bytes).map_err(|e| ImageError(format!("{shown}: {name}: {e}")))
}

/// Picks the image for `want` (`explicit`: the user named it with `--platform`), reads its config and lists
/// its layers.
pub fn choose(
    store: &Store,
    want: &Platform,
    explicit: bool,
    limits: &Limits,
    shown: &str,
) -> Result<Chosen, ImageError> {
    let mut budget = Budget::default();
    let candidates = if store.has("manifest.json") {
        docker_candidates(store, shown, &mut budget)?
    } else {
        oci_candidates(store, shown, &mut budget)?
    };
    // One entry per distinct image (a manifest naming one image many times is one image); each distinct
    // config read once, for its platform alone; only the chosen one's decoded whole.
    let mut distinct = std::collections::HashSet::new();
    let candidates: Vec<Candidate> = candidates
        .into_iter()
        .filter(|c| distinct.insert(c.key()))
        .collect();
    drop(distinct);
    let mut platforms: std::collections::HashMap<String, Platform> = std::collections::HashMap::new();
    if candidates.len() > 1 {
        for c in &candidates {
            if !platforms.contains_key(&c.config_name) {
                let p: ConfigPlatform = json(store, &c.config_name, shown, &mut budget)?;
                platforms.insert(c.config_name.clone(), p.platform());
            }
        }
    }
    let platform_at = |i: usize| {
        platforms
            .get(&candidates[i].config_name)
            .cloned()
            .unwrap_or_default()
    };
    let matching: Vec<usize> = (0..candidates.len())
        .filter(|&i| platform_at(i).serves(want))
        .collect();
    let pick = match (candidates.len(), matching.len()) {
        (0, _) => return Err(ImageError(format!("{shown}: the archive holds no image"))),
        // One image: its config says its platform (checked below when asked for explicitly).
        (1, _) => 0,
        (_, 1) => matching[0],
        (_, 0) => {
            let offered: Vec<String> = (0..candidates.len())
                .map(|i| platform_at(i).to_string())
                .collect();
            return Err(ImageError(format!(
                "{shown}: no image for {want} (it holds {}): pass --platform OS/ARCH",
                offered.join(", ")
            )));
        }
        (_, _) => {
            let names: Vec<String> = matching
                .iter()
                .map(|&i| {
                    candidates[i]
                        .reference
                        .clone()
                        .unwrap_or_else(|| candidates[i].config_name.clone())
                })
                .collect();
            return Err(ImageError(format!(
                "{shown}: {} images for {want} ({}): save one image per archive (`docker save NAME:TAG`)",
                matching.len(),
                names.join(", ")
            )));
        }
    };
    let mut candidates = candidates;
    let c = candidates.swap_remove(pick);
    drop(candidates);
    let config: ConfigFile = json(store, &c.config_name, shown, &mut budget)?;
    let platform = Platform {
        os: config.os.clone(),
        arch: config.architecture.clone(),
        variant: config.variant.clone(),
    };
    if explicit && !platform.serves(want) {
        return Err(ImageError(format!(
            "{shown}: no image for {want} (it holds {platform}): pass --platform OS/ARCH"
        )));
    }
    if c.layers.len() > limits.max_layers {
        return Err(ImageError::cap(
            shown,
            "max-layers",
            format!("{} layers, more than {}", c.layers.len(), limits.max_layers),
        ));
    }
    let run = config.config.unwrap_or_default();
    Ok(Chosen {
        platform,
        layers: c.layers,
        config: RunConfig {
            env: run.env.unwrap_or_default(),
            entrypoint: run.entrypoint.unwrap_or_default(),
            cmd: run.cmd.unwrap_or_default(),
            working_dir: run.working_dir.unwrap_or_default(),
            user: run.user.unwrap_or_default(),
        },
        reference: c.reference,
        config_digest: c.config_digest,
        manifest_digest: c.manifest_digest,
    })
}

/// `docker save`'s `manifest.json`. The config's digest is its file name (`<hex>.json`, or
/// `blobs/sha256/<hex>` from Docker 25).
fn docker_candidates(store: &Store, shown: &str, budget: &mut Budget) -> Result<Vec<Candidate>, ImageError> {
    let entries: Vec<DockerEntry> = json(store, "manifest.json", shown, budget)?;
    if entries.len() > MAX_DESCRIPTORS {
        return Err(ImageError(format!(
            "{shown}: manifest.json lists {} images",
            entries.len()
        )));
    }
    Ok(entries
        .into_iter()
        .map(|e| {
            let stem = e
                .config
                .rsplit('/')
                .next()
                .unwrap_or("")
                .trim_end_matches(".json");
            let digest = if e.config.starts_with("blobs/") {
                e.config
                    .strip_prefix("blobs/")
                    .and_then(|r| r.split_once('/'))
                    .map(|(alg, hex)| format!("{alg}:{hex}"))
            } else if stem.len() == 64 && stem.bytes().all(|b| b.is_ascii_hexdigit()) {
                Some(format!("sha256:{stem}"))
            } else {
                None
            };
            Candidate {
                layers: e.layers,
                config_name: e.config,
                config_digest: digest,
                manifest_digest: None,
                reference: e.repo_tags.and_then(|t| t.into_iter().next()),
            }
        })
        .collect())
}

/// The manifests an OCI layout's `index.json` reaches (indexes followed), attestations left out.
fn oci_candidates(store: &Store, shown: &str, budget: &mut Budget) -> Result<Vec<Candidate>, ImageError> {
    let top: Index = json(store, "index.json", shown, budget)?;
    let mut walk = IndexWalk {
        store,
        shown,
        budget,
        seen: 0,
        read: std::collections::HashSet::new(),
        out: Vec::new(),
    };
    walk.index(top, None, 0)?;
    Ok(walk.out)
}

/// Following an image index: descriptors counted, each manifest or index read once (by digest), however
/// many times it is named.
struct IndexWalk<'a> {
    store: &'a Store,
    shown: &'a str,
    budget: &'a mut Budget,
    seen: usize,
    read: std::collections::HashSet<String>,
    out: Vec<Candidate>,
}

impl IndexWalk<'_> {
    fn index(&mut self, index: Index, reference: Option<String>, depth: usize) -> Result<(), ImageError> {
        let (store, shown) = (self.store, self.shown);
        if index.layers.is_some() {
            return Err(ImageError(format!(
                "{shown}: index.json is a manifest, not an image index ({})",
                index.media_type
            )));
        }
        for d in index.manifests {
            self.seen += 1;
            if self.seen > MAX_DESCRIPTORS || depth > MAX_DEPTH {
                return Err(ImageError(format!(
                    "{shown}: more than {MAX_DESCRIPTORS} descriptors or {MAX_DEPTH} nested indexes"
                )));
            }
            if d.annotations.get("vnd.docker.reference.type").map(String::as_str)
                == Some("attestation-manifest")
                || d.platform
                    .as_ref()
                    .is_some_and(|p| p.os == "unknown" || p.architecture == "unknown")
            {
                continue;
            }
            let name = blob(&d.digest).map_err(|e| ImageError(format!("{shown}: {e}")))?;
            if !self.read.insert(name.clone()) {
                continue;
            }
            let reference = d
                .annotations
                .get("org.opencontainers.image.ref.name")
                .or_else(|| d.annotations.get("io.containerd.image.name"))
                .cloned()
                .or_else(|| reference.clone());
            let is_index = d.media_type.contains("image.index") || d.media_type.contains("manifest.list");
            if is_index {
                let inner: Index = json(store, &name, shown, self.budget)?;
                self.index(inner, reference, depth + 1)?;
                continue;
            }
            let m: Manifest = json(store, &name, shown, self.budget)?;
            let layers = m
                .layers
                .iter()
                .map(|l| blob(&l.digest))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ImageError(format!("{shown}: {e}")))?;
            self.out.push(Candidate {
                layers,
                config_name: blob(&m.config.digest).map_err(|e| ImageError(format!("{shown}: {e}")))?,
                config_digest: Some(m.config.digest.clone()),
                manifest_digest: Some(d.digest.clone()),
                reference,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms() {
        let p = Platform::parse("linux/arm64/v8").unwrap();
        assert_eq!(p.to_string(), "linux/arm64/v8");
        assert!(Platform::parse("linux").is_none());
        assert!(
            Platform::parse("linux/amd64")
                .unwrap()
                .serves(&Platform::parse("linux/amd64").unwrap())
        );
        assert!(p.serves(&Platform::parse("linux/arm64").unwrap()));
        assert!(!p.serves(&Platform::parse("linux/amd64").unwrap()));
    }

    #[test]
    fn blob_names_come_from_digests_only() {
        assert_eq!(blob("sha256:abc123").unwrap(), "blobs/sha256/abc123");
        assert!(blob("sha256:../../etc").is_err());
        assert!(blob("../x:ab").is_err());
        assert!(blob("nocolon").is_err());
    }
}
