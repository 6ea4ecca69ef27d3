//! What the NVIDIA Container Toolkit does to a container on a node, as a pure function of the container's
//! environment and the node's facts: whether it acts at all, which driver files and device nodes it mounts, and
//! whether the `NVIDIA_REQUIRE_*` constraints let the container start.
//!
//! The toolkit's `nvidia-container-runtime-hook` reads the container's environment (the image's `Env` plus
//! whatever the engine adds: `docker run --gpus` sets `NVIDIA_VISIBLE_DEVICES`, the Kubernetes device plugin
//! sets it to the allocated GPUs) and calls `nvidia-container-cli configure` with the devices, capabilities and
//! requirements it derived. Every rule here follows that code; `docs/container-toolkit.md` gives the sources and
//! the behaviour in words. Nothing is read from disk and nothing is guessed: what the node's facts do not settle
//! (a GPU's brand, a driver newer than the matrix) is reported as open.
//!
//! The requirement check belongs to the hook's "legacy" mode (the default with `docker --gpus` and
//! `--runtime=nvidia`) and to the Jetson CSV mode; a container whose GPUs are injected through CDI
//! (`--device nvidia.com/gpu=all`) is not checked. The findings say so in their evidence.

mod brand;
mod caps;
mod devices;
pub mod ldcache;
pub mod require;
mod rules;
pub mod run;
mod vars;
mod view;

pub use caps::{Capability, CapsSource, FileKind, ImageLayout, InjectedFile, is_driver_library};
pub use devices::{DeviceRequest, DeviceSelection, SelectedGpu};
pub use run::{Applied, Run, Source};
pub use vars::{DISABLE_REQUIRE, DRIVER_CAPABILITIES, REQUIRE_PREFIX, VISIBLE_DEVICES};
pub use view::{CompatMode, ContainerView, NodeValues, Outcome, Requirement, compat_library_used};

use crate::facts::HostFacts;
use crate::matrix::{CudaVersion, DriverVersion, Matrix};
use require::{Device, Props, Tri};
use std::collections::BTreeMap;

/// What the toolkit does to a container with environment `env` on `node`, for an Ubuntu-like x86-64 image
/// ([`ImageLayout::default`]) run as its environment asks ([`Run::as_the_image_says`]); [`evaluate_run`] takes
/// the image's layout and the run.
pub fn evaluate(env: &BTreeMap<String, String>, node: &HostFacts, matrix: &Matrix) -> ContainerView {
    evaluate_in(env, node, matrix, &ImageLayout::default())
}

/// [`evaluate`] for an image laid out as `layout` says (where the driver's libraries land).
pub fn evaluate_in(
    env: &BTreeMap<String, String>,
    node: &HostFacts,
    matrix: &Matrix,
    layout: &ImageLayout,
) -> ContainerView {
    evaluate_run(env, node, matrix, layout, &Run::as_the_image_says())
}

/// [`evaluate_in`] for a container started as `run` describes (`--gpus`, the runtime, CDI): the engine's
/// additions to the environment come first, then the toolkit reads the result.
pub fn evaluate_run(
    image_env: &BTreeMap<String, String>,
    node: &HostFacts,
    matrix: &Matrix,
    layout: &ImageLayout,
    run: &Run,
) -> ContainerView {
    let legacy_image = image_env.get("CUDA_VERSION").is_some_and(|v| !v.is_empty())
        && image_env.get("NVIDIA_REQUIRE_CUDA").is_none_or(|v| v.is_empty());
    let mut env = image_env.clone();
    let applied = run.apply(&mut env, legacy_image);
    let env = &env;
    let get = |k: &str| env.get(k).map(String::as_str);
    let cdi = applied.source == Source::Cdi;
    let mut devices = match applied.source {
        // The CDI spec names the devices; the hook, had it run, would see `void`.
        Source::Cdi => devices::select(Some(&applied.cdi.join(",")), false, node),
        // No hook: nothing reads NVIDIA_VISIBLE_DEVICES at all.
        _ if !applied.hook => devices::select(None, false, node),
        _ => devices::select(get(VISIBLE_DEVICES), legacy_image, node),
    };
    let values = node_values(node, matrix);
    // A CDI spec mounts every driver library it lists, whatever NVIDIA_DRIVER_CAPABILITIES says; cudadiag
    // stages the default set, compute and utility.
    let caps = if cdi {
        caps::resolve(None, false)
    } else {
        caps::resolve(get(DRIVER_CAPABILITIES), legacy_image)
    };
    let (capabilities, capabilities_source) = match &caps {
        Ok((c, s)) => (c.clone(), *s),
        Err(_) => (Vec::new(), CapsSource::Env),
    };
    // The driver's other devices come with capabilities: UVM with compute, modeset with display.
    if devices.gpu_container {
        let mut extra: Vec<&str> = Vec::new();
        if capabilities.contains(&Capability::Compute) {
            extra.extend(["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]);
        }
        if capabilities.contains(&Capability::Display) {
            extra.push("/dev/nvidia-modeset");
        }
        for (i, d) in extra.into_iter().enumerate() {
            devices.device_nodes.insert(1 + i, d.to_string());
        }
    }
    let mut injected = if devices.gpu_container && devices.unknown.is_none() {
        caps::injected(&capabilities, values.driver.as_deref(), layout)
    } else {
        Vec::new()
    };
    if cdi && let Some(dir) = cdi_library_dir(node) {
        // The spec mounts the node's files at the node's own paths.
        for f in injected.iter_mut().filter(|f| f.kind == FileKind::Library) {
            f.path = format!("{dir}/{}", f.file);
        }
    }
    let requirements = requirements(env, legacy_image, &devices, &values, cdi);
    let mut view = ContainerView {
        gpu_container: devices.gpu_container,
        legacy_image,
        run: applied,
        capabilities,
        capabilities_source,
        injected,
        devices,
        requirements,
        node: values,
        findings: Vec::new(),
    };
    view.findings = rules::findings(&view, env, caps.err(), node, matrix);
    view
}

/// Where the node's CDI spec mounts the driver's libraries: the directory of the `libcuda.so.*` it lists (the
/// spec's container paths are the node's paths). `None` when the node's facts hold no spec that lists it.
fn cdi_library_dir(node: &HostFacts) -> Option<String> {
    node.cdi.iter().flat_map(|s| s.libraries.iter()).find_map(|l| {
        let p = std::path::Path::new(l);
        let name = p.file_name()?.to_str()?;
        name.starts_with("libcuda.so.")
            .then(|| p.parent().map(|d| d.display().to_string()))
            .flatten()
    })
}

/// The node's driver and the CUDA version it supports. The CUDA version is the matrix's for the driver's
/// branch, taken only when the branch is in the table (the toolkit asks NVML, which reports the installed
/// driver's own); a snapshot's recorded value is the fallback.
fn node_values(node: &HostFacts, matrix: &Matrix) -> NodeValues {
    let mut v = NodeValues::default();
    let Some(d) = &node.driver else {
        return v;
    };
    v.driver = Some(d.version.clone());
    v.sources.push(format!("driver {} from {}", d.version, d.source));
    if let Some(dv) = DriverVersion::parse(&d.version)
        && let Some(dc) = matrix.driver_cuda(&dv)
        && dc.exact
    {
        v.cuda = Some(dc.cuda.to_string());
        v.sources.push(format!(
            "driver branch {} supports CUDA {} ({})",
            dc.row.branch,
            dc.cuda,
            dc.row.row.cite(matrix)
        ));
    } else if let Some(c) = node.driver_cuda.as_deref().and_then(CudaVersion::parse) {
        v.cuda = Some(c.to_string());
        v.sources
            .push(format!("driver CUDA version {c} as recorded in the node's facts"));
    }
    v
}

fn disabled(env: &BTreeMap<String, String>) -> bool {
    // Go's strconv.ParseBool; anything else leaves the check on.
    env.get(DISABLE_REQUIRE)
        .is_some_and(|v| matches!(v.as_str(), "1" | "t" | "T" | "true" | "TRUE" | "True"))
}

fn requirements(
    env: &BTreeMap<String, String>,
    legacy: bool,
    devices: &DeviceSelection,
    values: &NodeValues,
    cdi: bool,
) -> Vec<Requirement> {
    let mut reqs: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| k.starts_with(REQUIRE_PREFIX) && !k.starts_with("NVIDIA_REQUIRE_JETPACK"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut legacy_error = None;
    if legacy {
        let v = env.get("CUDA_VERSION").map(String::as_str).unwrap_or("");
        match legacy_major_minor(v) {
            Some(mm) => reqs.push(("CUDA_VERSION".to_string(), format!("cuda>={mm}"))),
            None => legacy_error = Some(v.to_string()),
        }
    }
    let skip = |why: &'static str| {
        move |(variable, expression): (String, String)| Requirement {
            variable,
            expression,
            outcome: Outcome::Skipped,
            detail: Some(why.to_string()),
        }
    };
    if disabled(env) {
        return reqs
            .into_iter()
            .map(skip(
                "NVIDIA_DISABLE_REQUIRE is set: the toolkit does not check requirements",
            ))
            .collect();
    }
    if cdi {
        return reqs
            .into_iter()
            .map(skip(
                "the GPUs come through CDI: nothing checks NVIDIA_REQUIRE_* there",
            ))
            .collect();
    }
    if !devices.gpu_container {
        return reqs
            .into_iter()
            .map(skip(
                "not a GPU container: the toolkit does nothing, requirements included",
            ))
            .collect();
    }
    let mut out: Vec<Requirement> = reqs
        .into_iter()
        .map(|(variable, expression)| {
            let (outcome, detail) = judge(&expression, devices, values);
            Requirement {
                variable,
                expression,
                outcome,
                detail,
            }
        })
        .collect();
    if let Some(v) = legacy_error {
        out.push(Requirement {
            variable: "CUDA_VERSION".to_string(),
            expression: v.clone(),
            outcome: Outcome::Invalid,
            detail: Some(format!(
                "failed to get requirements: failed to get version: invalid CUDA version {v}"
            )),
        });
    }
    out
}

/// `CUDA_VERSION` as the hook reads it for a legacy image: a semantic version (`12.4.1`, `12.4`, `12`, with an
/// optional `v`), of which major.minor is kept.
fn legacy_major_minor(v: &str) -> Option<String> {
    let core = v.strip_prefix('v').unwrap_or(v);
    let core = core.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut nums = Vec::new();
    for p in &parts {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 9 {
            return None;
        }
        nums.push(p.parse::<u64>().ok()?);
    }
    Some(format!("{}.{}", nums[0], nums.get(1).copied().unwrap_or(0)))
}

/// The outcome of one expression, checked against every visible GPU (each must pass) or, with none visible,
/// once without a GPU.
fn judge(expression: &str, devices: &DeviceSelection, values: &NodeValues) -> (Outcome, Option<String>) {
    let expr = require::parse(expression);
    let base = Props {
        cuda: values.cuda.clone(),
        driver: values.driver.clone(),
        device: Device::Absent,
    };
    // Each GPU is a set of worlds, one per brand its name allows.
    let mut gpus: Vec<(String, Vec<Props>)> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for g in &devices.gpus {
        // A MIG device is checked as its parent GPU: once per GPU.
        if seen.contains(&g.index) {
            continue;
        }
        seen.push(g.index);
        let arch = g.cc.clone();
        // A name that settles no brand family: every brand the toolkit can report is possible.
        let worlds = brand::candidates(&g.name)
            .unwrap_or(brand::ALL)
            .iter()
            .map(|b| Props {
                device: Device::Gpu {
                    arch: arch.clone(),
                    brand: Some(b.to_string()),
                },
                ..base.clone()
            })
            .collect();
        gpus.push((format!("GPU {} ({})", g.index, g.name), worlds));
    }
    let unknown_gpus = !devices.undecided.is_empty()
        || (devices.gpus.is_empty()
            && !devices.node_gpus_known
            && !matches!(devices.request, DeviceRequest::None));
    if unknown_gpus {
        gpus.push((
            "the GPUs the container gets, which the node's facts do not list".to_string(),
            vec![Props {
                device: Device::Unknown,
                ..base.clone()
            }],
        ));
    }
    if gpus.is_empty() {
        gpus.push(("no GPU visible".to_string(), vec![base.clone()]));
    }
    let mut open: Option<String> = None;
    for (what, worlds) in &gpus {
        let results: Vec<Result<Tri, require::Invalid>> =
            worlds.iter().map(|p| require::evaluate(&expr, p)).collect();
        let all = |t: Tri| results.iter().all(|r| *r == Ok(t));
        if let Some(Err(e)) = results.first()
            && results.iter().all(Result::is_err)
        {
            return (
                Outcome::Invalid,
                Some(format!("requirement error: invalid expression (at `{}`)", e.0)),
            );
        }
        if all(Tri::False) {
            return (
                Outcome::Unsatisfied,
                Some(format!(
                    "requirement error: {}",
                    require::unsatisfied_message(expression)
                )),
            );
        }
        if !all(Tri::True) && open.is_none() {
            let why = if values.cuda.is_none() && expression.to_ascii_lowercase().contains("cuda") {
                "the CUDA version of the node's driver is not known".to_string()
            } else if values.driver.is_none() && expression.to_ascii_lowercase().contains("driver") {
                "the node's driver version is not known".to_string()
            } else {
                format!("the outcome depends on the brand or compute capability of {what}")
            };
            open = Some(why);
        }
    }
    match open {
        Some(why) => (Outcome::Unknown, Some(why)),
        None => (Outcome::Satisfied, None),
    }
}

#[cfg(test)]
mod tests;
