//! How the container is started: what the engine adds to the image's environment before the NVIDIA Container
//! Toolkit reads it, and whether the toolkit's hook runs at all (`docs/container-toolkit.md`, "How the run
//! decides").
//!
//! * `docker run --gpus VALUE` (docker/cli `opts/gpus.go`, moby `daemon/nvidia_linux.go`): the daemon appends
//!   `NVIDIA_VISIBLE_DEVICES` (`all` for `all`, `0,1,…,N-1` for a count N, `void` for 0, the ids of
//!   `device=…`), appends `NVIDIA_DRIVER_CAPABILITIES` when `capabilities=` names driver capabilities, and adds
//!   `nvidia-container-runtime-hook` as a prestart hook itself, whatever the runtime. Appended last, these
//!   replace the image's values.
//! * `--runtime nvidia` (or the NVIDIA runtime as the engine's default, as the GPU Operator configures it):
//!   the runtime adds the hook, which then acts on the image's `NVIDIA_VISIBLE_DEVICES` as it is.
//! * `--runtime runc` without `--gpus`: no hook, nothing injected, whatever the image sets.
//! * CDI (`--device nvidia.com/gpu=all`): the engine applies the node's CDI spec (device nodes, the driver's
//!   libraries, an `update-ldcache` hook); the spec sets `NVIDIA_VISIBLE_DEVICES=void`, so the legacy hook
//!   does nothing and no requirement is checked.
//!
//! Without any of these, cudadiag judges the image as a GPU workload is run (`--gpus all`, a Kubernetes
//! `nvidia.com/gpu` request): an image that does not say which GPUs it wants gets them all, and a note says
//! so. `--gpus none` is cudadiag's way to say "no GPU request": the image's own environment decides.

use serde::Serialize;
use std::collections::BTreeMap;

/// What `--gpus` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Gpus {
    /// `all` (docker's count -1).
    All,
    /// A count: the first N GPUs (`0` gives none: docker sets `void`).
    Count(u32),
    /// `device=ID,…`: indices, UUIDs, MIG devices.
    Devices(Vec<String>),
    /// cudadiag's `none`: no GPU request by the run (docker without `--gpus`, a pod without a GPU limit).
    None,
}

/// One `--gpus` value, read as docker reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuRequest {
    /// The GPUs.
    pub gpus: Gpus,
    /// The driver capabilities of `capabilities=…` (those docker passes on: compute, compat32, graphics,
    /// utility, video, display).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

/// The OCI runtime the engine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    /// `nvidia-container-runtime`: adds the toolkit's hook to every container.
    Nvidia,
    /// A runtime without the toolkit (`runc`, `crun`): only `--gpus` brings the hook.
    Runc,
}

/// How the container is started, as far as GPUs go. `Run::default()` is cudadiag's default: run with GPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Run {
    /// `--gpus`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<GpuRequest>,
    /// `--runtime`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
    /// CDI devices (`nvidia.com/gpu=all`), by their name after `=`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cdi: Vec<String>,
}

/// Where the container's GPUs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The image's own environment (it sets `NVIDIA_VISIBLE_DEVICES`, or is a legacy CUDA image), or
    /// `--gpus none`.
    Image,
    /// cudadiag's default: the image does not ask, and is judged as run with every GPU.
    RunDefault,
    /// `--gpus`.
    Gpus,
    /// A CDI device request.
    Cdi,
    /// No hook runs (`--runtime runc` without `--gpus`).
    NoHook,
}

/// What the run does to the container's environment and to the toolkit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// Where the GPUs come from.
    pub source: Source,
    /// Whether the legacy hook (`nvidia-container-runtime-hook`) runs.
    pub hook: bool,
    /// The variables the run sets, as `KEY=VALUE`, in the order the engine appends them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
    /// The CDI device names, when the GPUs come through CDI.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cdi: Vec<String>,
}

/// Driver capabilities docker passes on from `capabilities=` (moby's `allNvidiaCaps`: not `ngx`).
const DOCKER_CAPS: [&str; 6] = ["compute", "compat32", "graphics", "utility", "video", "display"];

impl Run {
    /// The run as the image alone describes it (the NVIDIA runtime, no GPU request): what cudadiag judged
    /// before the run could be described, and what `--gpus none` asks for.
    pub fn as_the_image_says() -> Run {
        Run {
            gpus: Some(GpuRequest {
                gpus: Gpus::None,
                capabilities: Vec::new(),
            }),
            ..Run::default()
        }
    }

    /// The environment the toolkit sees (`env`, the image's with `--env`, changed in place) and how the run
    /// brings GPUs. `legacy`: the image is a legacy CUDA image, which the toolkit treats as asking for every GPU.
    pub fn apply(&self, env: &mut BTreeMap<String, String>, legacy: bool) -> Applied {
        let mut set = Vec::new();
        let mut put = |env: &mut BTreeMap<String, String>, k: &str, v: String| {
            set.push(format!("{k}={v}"));
            env.insert(k.to_string(), v);
        };
        if !self.cdi.is_empty() {
            // The spec's own environment turns the legacy hook off.
            put(env, super::VISIBLE_DEVICES, "void".to_string());
            return Applied {
                source: Source::Cdi,
                hook: false,
                set,
                cdi: self.cdi.clone(),
            };
        }
        let request = self.gpus.as_ref().map(|r| &r.gpus);
        let source = match request {
            Some(Gpus::None) => Source::Image,
            Some(g) => {
                put(env, super::VISIBLE_DEVICES, visible_value(g));
                let caps = &self
                    .gpus
                    .as_ref()
                    .map(|r| r.capabilities.clone())
                    .unwrap_or_default();
                if !caps.is_empty() {
                    put(env, super::DRIVER_CAPABILITIES, caps.join(","));
                }
                Source::Gpus
            }
            None if self.runtime == Some(Runtime::Runc) => Source::NoHook,
            None if !env.contains_key(super::VISIBLE_DEVICES) && !legacy => {
                put(env, super::VISIBLE_DEVICES, "all".to_string());
                Source::RunDefault
            }
            None => Source::Image,
        };
        let hook = match source {
            Source::Gpus => true,
            Source::NoHook => false,
            _ => self.runtime != Some(Runtime::Runc),
        };
        Applied {
            source,
            hook,
            set,
            cdi: Vec::new(),
        }
    }
}

/// The `NVIDIA_VISIBLE_DEVICES` docker sets for a request (moby's `setNvidiaGPUs`); `none` sets nothing and
/// never reaches here.
fn visible_value(g: &Gpus) -> String {
    match g {
        Gpus::All => "all".to_string(),
        Gpus::Count(0) | Gpus::None => "void".to_string(),
        Gpus::Count(n) => (0..*n).map(|i| i.to_string()).collect::<Vec<_>>().join(","),
        Gpus::Devices(ids) => ids.join(","),
    }
}

/// Reads a `--gpus` value as `docker run --gpus` does: comma-separated fields (CSV: a field in double quotes
/// may hold commas, so `'"device=0,1"'` is one field), each `KEY=VALUE` or a bare count (`all`, `2`); keys
/// `count`, `device`, `capabilities`, `driver`, `options`, each once; without a count or devices, one GPU.
/// cudadiag adds `none`: no GPU request.
pub fn parse_gpus(value: &str) -> Result<GpuRequest, String> {
    if value.trim() == "none" {
        return Ok(GpuRequest {
            gpus: Gpus::None,
            capabilities: Vec::new(),
        });
    }
    let fields = csv_fields(value)?;
    let mut seen: Vec<String> = Vec::new();
    let (mut count, mut devices, mut caps) = (None::<i64>, None::<Vec<String>>, Vec::new());
    for field in &fields {
        let (key, val) = match field.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (field.as_str(), None),
        };
        if seen.iter().any(|s| s == key) {
            return Err(format!("gpu request key '{key}' can be specified only once"));
        }
        seen.push(key.to_string());
        match (key, val) {
            (k, None) => {
                seen.push("count".into());
                count = Some(parse_count(k)?);
            }
            ("count", Some(v)) => count = Some(parse_count(v)?),
            ("device", Some(v)) => devices = Some(v.split(',').map(str::to_string).collect()),
            ("capabilities", Some(v)) => caps = v.split(',').map(str::to_string).collect(),
            ("driver" | "options", Some(_)) => {}
            (k, Some(_)) => return Err(format!("unexpected key '{k}' in '{field}'")),
        }
    }
    let gpus = match (count, devices) {
        (Some(c), Some(_)) if c != 0 => {
            return Err(
                "cannot set both Count and DeviceIDs on device request (docker's error): quote a device \
                 list so that its commas stay inside it, `--gpus '\"device=0,1\"'`"
                    .to_string(),
            );
        }
        (_, Some(ids)) => Gpus::Devices(ids),
        (Some(c), None) if c < 0 => Gpus::All,
        (Some(c), None) => Gpus::Count(u32::try_from(c).unwrap_or(u32::MAX)),
        (None, None) => Gpus::Count(1),
    };
    let capabilities = caps
        .into_iter()
        .filter(|c| DOCKER_CAPS.contains(&c.as_str()))
        .collect();
    Ok(GpuRequest { gpus, capabilities })
}

fn parse_count(s: &str) -> Result<i64, String> {
    if s == "all" {
        return Ok(-1);
    }
    s.parse::<i64>()
        .map_err(|_| format!("invalid count ({s}): value must be either \"all\" or an integer"))
}

/// One CSV record as Go's `encoding/csv` reads it: commas separate fields, a field that starts with `"` runs to
/// the closing quote (`""` is a quote inside it).
fn csv_fields(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err(format!("--gpus {s}: a quote is not closed")),
                }
            }
            if !matches!(chars.peek(), None | Some(',')) {
                return Err(format!("--gpus {s}: extraneous text after a quoted field"));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                field.push(c);
                chars.next();
            }
        }
        out.push(field);
        if chars.next().is_none() {
            return Ok(out);
        }
    }
}

/// Reads `--runtime`: `nvidia` (also `nvidia-container-runtime`, `nvidia-cdi`, `nvidia-legacy`) or a runtime
/// without the toolkit (`runc`, `crun`, `youki`, `runsc`).
pub fn parse_runtime(value: &str) -> Result<Runtime, String> {
    match value {
        "nvidia" | "nvidia-container-runtime" | "nvidia-legacy" | "nvidia-cdi" => Ok(Runtime::Nvidia),
        "runc" | "crun" | "youki" | "runsc" | "io.containerd.runc.v2" => Ok(Runtime::Runc),
        other => Err(format!(
            "--runtime {other}: expected nvidia (the NVIDIA Container Runtime) or runc (any runtime without \
             the toolkit: runc, crun)"
        )),
    }
}

/// Reads a CDI device request: `nvidia.com/gpu=all`, `nvidia.com/gpu=0`, `nvidia.com/gpu=GPU-…`,
/// `nvidia.com/gpu=0:1` (a MIG device); returns the device name after `=`.
pub fn parse_cdi(value: &str) -> Result<String, String> {
    match value.split_once('=') {
        Some(("nvidia.com/gpu" | "nvidia.com/mig", name)) if !name.is_empty() => Ok(name.to_string()),
        _ => Err(format!(
            "--device {value}: expected an NVIDIA CDI device, `nvidia.com/gpu=all`, `nvidia.com/gpu=0` or \
             `nvidia.com/gpu=GPU-<uuid>`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(v: &str) -> Gpus {
        parse_gpus(v).unwrap().gpus
    }

    #[test]
    fn gpus_values_read_as_docker_reads_them() {
        assert_eq!(g("all"), Gpus::All);
        assert_eq!(g("count=all"), Gpus::All);
        assert_eq!(g("2"), Gpus::Count(2));
        assert_eq!(g("0"), Gpus::Count(0));
        assert_eq!(g("\"device=0,1\""), Gpus::Devices(vec!["0".into(), "1".into()]));
        assert_eq!(g("device=GPU-abc"), Gpus::Devices(vec!["GPU-abc".into()]));
        assert_eq!(g("capabilities=utility"), Gpus::Count(1));
        assert_eq!(g("none"), Gpus::None);
        let r = parse_gpus("all,\"capabilities=compute,utility,ngx\"").unwrap();
        assert_eq!(r.capabilities, ["compute", "utility"]);
        // The shell ate the quotes: `1` reads as a count beside the devices.
        assert!(parse_gpus("device=0,1").unwrap_err().contains("\"device=0,1\""));
        assert!(parse_gpus("two").unwrap_err().contains("invalid count"));
        assert!(parse_gpus("all,all").unwrap_err().contains("only once"));
        assert!(parse_gpus("gpu=1").unwrap_err().contains("unexpected key"));
        assert!(parse_gpus("\"device=0").is_err());
    }

    fn applied(run: &Run, env: &[(&str, &str)], legacy: bool) -> (Applied, BTreeMap<String, String>) {
        let mut e: BTreeMap<String, String> =
            env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        (run.apply(&mut e, legacy), e)
    }

    #[test]
    fn the_run_sets_what_the_engine_sets() {
        let vd = |e: &BTreeMap<String, String>| e.get(super::super::VISIBLE_DEVICES).cloned();
        // The default: every GPU for an image that does not ask; the image's own value otherwise.
        let (a, e) = applied(&Run::default(), &[], false);
        assert_eq!(
            (a.source, a.hook, vd(&e)),
            (Source::RunDefault, true, Some("all".into()))
        );
        let (a, e) = applied(&Run::default(), &[("NVIDIA_VISIBLE_DEVICES", "void")], false);
        assert_eq!((a.source, vd(&e)), (Source::Image, Some("void".into())));
        let (a, e) = applied(&Run::default(), &[], true);
        assert_eq!((a.source, vd(&e)), (Source::Image, None));
        // --gpus replaces the image's value; counts are the first N; 0 is void.
        let run = |v: &str| Run {
            gpus: Some(parse_gpus(v).unwrap()),
            ..Run::default()
        };
        let (a, e) = applied(&run("2"), &[("NVIDIA_VISIBLE_DEVICES", "void")], false);
        assert_eq!((a.source, vd(&e)), (Source::Gpus, Some("0,1".into())));
        assert_eq!(vd(&applied(&run("0"), &[], false).1), Some("void".into()));
        let (_, e) = applied(&run("all,capabilities=utility"), &[], false);
        assert_eq!(
            e.get("NVIDIA_DRIVER_CAPABILITIES").map(String::as_str),
            Some("utility")
        );
        // none: the image decides.
        let (a, e) = applied(&run("none"), &[], false);
        assert_eq!((a.source, a.hook, vd(&e)), (Source::Image, true, None));
        // runc: no hook without --gpus; --gpus brings it.
        let runc = Run {
            runtime: Some(Runtime::Runc),
            ..Run::default()
        };
        let (a, _) = applied(&runc, &[("NVIDIA_VISIBLE_DEVICES", "all")], false);
        assert_eq!((a.source, a.hook), (Source::NoHook, false));
        let runc_none = Run {
            gpus: Some(parse_gpus("none").unwrap()),
            ..runc.clone()
        };
        assert!(
            !applied(&runc_none, &[("NVIDIA_VISIBLE_DEVICES", "all")], false)
                .0
                .hook
        );
        let runc_gpus = Run {
            gpus: Some(parse_gpus("all").unwrap()),
            ..runc
        };
        assert!(applied(&runc_gpus, &[], false).0.hook);
        // CDI: the spec turns the hook off.
        let cdi = Run {
            cdi: vec!["all".into()],
            ..Run::default()
        };
        let (a, e) = applied(&cdi, &[("NVIDIA_VISIBLE_DEVICES", "all")], false);
        assert_eq!(
            (a.source, a.hook, vd(&e)),
            (Source::Cdi, false, Some("void".into()))
        );
    }
}
