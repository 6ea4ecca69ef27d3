//! The container findings: one function per finding, each reading the [`ContainerView`] that `evaluate` built.
//! `docs/container-toolkit.md` gives the toolkit behaviour each rests on.

use super::{Capability, ContainerView, DeviceRequest, Outcome, Requirement, Source};
use crate::facts::HostFacts;
use crate::findings::{Code, Finding};
use crate::matrix::{CudaVersion, Matrix};
use std::collections::BTreeMap;

/// Where the requirement check applies: said once in every requirement finding's evidence.
const MODE_NOTE: &str = "the toolkit checks NVIDIA_REQUIRE_* when it injects the GPU through its runtime hook \
                         (`docker run --gpus`, `--runtime=nvidia`, the GPU Operator's default) or on Jetson; a \
                         GPU injected through CDI (`--device nvidia.com/gpu=…`) is not checked";

/// Every container finding, in a fixed order.
pub(super) fn findings(
    view: &ContainerView,
    env: &BTreeMap<String, String>,
    bad_caps: Option<String>,
    node: &HostFacts,
    m: &Matrix,
) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(unknown_device(view, node));
    out.extend(config_invalid(view, env, bad_caps));
    out.extend(requirement_unsatisfied(view, m));
    out.extend(no_gpu_access(view, env));
    out.extend(compute_not_injected(view, env));
    out.extend(gpus_from_run(view));
    out
}

/// `container-gpus-from-run`: the image does not ask for GPUs and is judged as run with every GPU (cudadiag's
/// default, `container::run`): one note, so that the verdict is read as the answer for that run.
fn gpus_from_run(view: &ContainerView) -> Option<Finding> {
    if view.run.source != Source::RunDefault {
        return None;
    }
    Some(
        Finding::new(
            Code::ContainerGpusFromRun,
            "The image does not set NVIDIA_VISIBLE_DEVICES: judged as run with every GPU (`docker run --gpus all`, a Kubernetes `nvidia.com/gpu` request); started without a GPU request it gets no GPU, driver libraries or libcuda.so.1",
            "Nothing to do when it is always run with GPUs. To have the image ask for them itself, as NVIDIA's CUDA images do: `ENV NVIDIA_VISIBLE_DEVICES=all` and `ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility`. `--gpus none` judges the image as it asks; `--gpus '\"device=0\"'`, `--runtime runc` or `--device nvidia.com/gpu=all` describe another run.",
        )
        .because("the image's environment does not set NVIDIA_VISIBLE_DEVICES, and no --gpus, --runtime or --device was given")
        .because("`docker run --gpus all` sets NVIDIA_VISIBLE_DEVICES=all and adds the toolkit's hook; the Kubernetes device plugin sets it to the allocated GPUs"),
    )
}

fn env_line(env: &BTreeMap<String, String>, key: &str) -> String {
    match env.get(key) {
        Some(v) => format!("the container's environment sets {key}={v}"),
        None => format!("the container's environment does not set {key}"),
    }
}

/// `container-unknown-device`: `nvidia-container-cli` stops at the first id that is no GPU, bus id, index or MIG
/// device of the node ("device error: ID: unknown device").
fn unknown_device(view: &ContainerView, node: &HostFacts) -> Option<Finding> {
    let id = view.devices.unknown.as_deref()?;
    let have: Vec<String> = node
        .gpus
        .iter()
        .enumerate()
        .map(|(i, g)| match &g.uuid {
            Some(u) => format!("{i} ({}, {u})", g.name),
            None => format!("{i} ({})", g.name),
        })
        .collect();
    let have = if have.is_empty() {
        "none".to_string()
    } else {
        have.join(", ")
    };
    if view.run.source == Source::Cdi {
        return Some(
            Finding::new(
                Code::ContainerUnknownDevice,
                format!(
                    "The CDI device nvidia.com/gpu={id} is not one of this node's GPUs: the engine will not start \
                     the container"
                ),
                "Name a device the node's CDI spec lists (`nvidia-ctk cdi list` on the node): `nvidia.com/gpu=all`, \
                 an index or a GPU UUID."
                    .to_string(),
            )
            .because(format!("--device nvidia.com/gpu={id}"))
            .because(format!("the node's GPUs: {have}"))
            .because(format!(
                "docker reports `unresolvable CDI devices nvidia.com/gpu={id}`"
            )),
        );
    }
    Some(
        Finding::new(
            Code::ContainerUnknownDevice,
            format!(
                "NVIDIA_VISIBLE_DEVICES names `{id}`, which this node does not have: the NVIDIA Container Toolkit \
                 will not start the container"
            ),
            format!(
                "Name a GPU the node has (an index below {}, a full `GPU-…` UUID, a PCI bus id, or `GPU:MIG` \
                 indices of an existing MIG device), or `all`; with Kubernetes, request GPUs with \
                 `resources.limits: nvidia.com/gpu` and leave NVIDIA_VISIBLE_DEVICES to the device plugin.",
                node.gpus.len()
            ),
        )
        .because(format!(
            "NVIDIA_VISIBLE_DEVICES={}",
            view.devices.value.as_deref().unwrap_or("")
        ))
        .because(format!("the node's GPUs: {have}"))
        .because(format!(
            "the toolkit prints `nvidia-container-cli: device error: {id}: unknown device` and the runtime \
             reports `error running hook #0`"
        )),
    )
}

/// `container-config-invalid`: the hook or `nvidia-container-cli` refuses what the environment says: a
/// capability it does not know, a requirement it cannot read, a legacy `CUDA_VERSION` that is no version.
fn config_invalid(
    view: &ContainerView,
    env: &BTreeMap<String, String>,
    bad_caps: Option<String>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if !view.gpu_container {
        return out;
    }
    if let Some(bad) = bad_caps {
        let value = env.get(super::DRIVER_CAPABILITIES).cloned().unwrap_or_default();
        out.push(
            Finding::new(
                Code::ContainerConfigInvalid,
                format!(
                    "NVIDIA_DRIVER_CAPABILITIES={value} names `{bad}`, which is not a driver capability: the NVIDIA \
                     Container Toolkit will not start the container"
                ),
                "Use only compute, utility, video, graphics, display, compat32 and ngx (or `all`); a CUDA program \
                 needs `compute,utility`: `ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility`."
                    .to_string(),
            )
            .because(env_line(env, super::DRIVER_CAPABILITIES))
            .because(format!(
                "the runtime hook stops with `unsupported capabilities found in '{value}'`"
            )),
        );
    }
    for r in view.requirements.iter().filter(|r| r.outcome == Outcome::Invalid) {
        let detail = r.detail.clone().unwrap_or_default();
        let (message, help) = if r.variable == "CUDA_VERSION" {
            (
                format!(
                    "CUDA_VERSION={} is not a version, and the image sets no NVIDIA_REQUIRE_CUDA: the NVIDIA \
                     Container Toolkit cannot derive the image's requirement and will not start the container",
                    r.expression
                ),
                "Set CUDA_VERSION to the image's CUDA release (`ENV CUDA_VERSION=12.4.1`) or set \
                 NVIDIA_REQUIRE_CUDA explicitly (`ENV NVIDIA_REQUIRE_CUDA=cuda>=12.4`)."
                    .to_string(),
            )
        } else {
            (
                format!(
                    "{}={} is not an expression the NVIDIA Container Toolkit can read: the container will not \
                     start",
                    r.variable, r.expression
                ),
                format!(
                    "Write {} as conditions `PROPERTY OP VALUE` with PROPERTY one of cuda, driver, arch, brand, OP \
                     one of = != < <= > >=, numbers and dots for versions (`cuda>=12.4`, `arch>=8.0`); commas join \
                     conditions that must all hold, single spaces separate alternatives. Or drop the variable.",
                    r.variable
                ),
            )
        };
        out.push(
            Finding::new(Code::ContainerConfigInvalid, message, help)
                .because(format!("{}={}", r.variable, r.expression))
                .because(format!("the toolkit prints `nvidia-container-cli: {detail}`"))
                .because(MODE_NOTE),
        );
    }
    out
}

/// The `cuda>=X.Y` an expression's first term asks for, when it asks for one.
fn cuda_floor(expression: &str) -> Option<CudaVersion> {
    let first = expression.split(' ').find(|t| !t.is_empty())?;
    first.split(',').find_map(|c| {
        let v = c.strip_prefix("cuda>=").or_else(|| c.strip_prefix("CUDA>="))?;
        CudaVersion::parse(v)
    })
}

/// `container-requirement-unmet`: a requirement fails on the node, and `nvidia-container-cli` stops the
/// container with "requirement error: unsatisfied condition".
fn requirement_unsatisfied(view: &ContainerView, m: &Matrix) -> Vec<Finding> {
    view.requirements
        .iter()
        .filter(|r| r.outcome == Outcome::Unsatisfied)
        .map(|r| unsatisfied(view, r, m))
        .collect()
}

fn unsatisfied(view: &ContainerView, r: &Requirement, m: &Matrix) -> Finding {
    let node = match (&view.node.driver, &view.node.cuda) {
        (Some(d), Some(c)) => format!("driver {d}, CUDA {c}"),
        (Some(d), None) => format!("driver {d}"),
        _ => "its driver".to_string(),
    };
    let shown = if r.expression.chars().count() > 60 {
        let cut: String = r.expression.chars().take(57).collect();
        format!("{cut}…")
    } else {
        r.expression.clone()
    };
    let floor = cuda_floor(&r.expression);
    let mut help = String::new();
    if let Some(want) = floor {
        if let Some(t) = m.toolkit_min(want) {
            help.push_str(&format!(
                "Upgrade the node's driver to {} or newer (branch {}, the first with CUDA {want}); ",
                t.linux_min,
                t.linux_min.branch()
            ));
        } else {
            help.push_str(&format!(
                "Upgrade the node's driver to one that supports CUDA {want}; "
            ));
        }
        match &view.node.cuda {
            Some(have) => help.push_str(&format!(
                "or run an image built for CUDA {have} or older on this node (NVIDIA's images: a \
                 `nvidia/cuda:{have}.x-…` base). "
            )),
            None => help.push_str("or run an image built for an older CUDA release. "),
        }
    } else {
        help.push_str("Run the image on a node whose driver and GPU meet the constraint, or rebuild the image with a constraint this node meets. ");
    }
    help.push_str(
        "NVIDIA_DISABLE_REQUIRE=1 skips the check, but the CUDA runtime in the image still needs a driver that \
         supports it (or a cuda-compat package the node may use).",
    );
    let mut f = Finding::new(
        Code::ContainerRequirementUnmet,
        format!(
            "The NVIDIA Container Toolkit will not start this container on a node with {node}: {}={shown} is not \
             met",
            r.variable
        ),
        help,
    )
    .because(format!("{}={}", r.variable, r.expression));
    if r.variable == "CUDA_VERSION" {
        f = f.because(
            "the image sets CUDA_VERSION and no NVIDIA_REQUIRE_CUDA (a legacy image): the toolkit requires \
             cuda>=MAJOR.MINOR of CUDA_VERSION",
        );
    }
    for s in &view.node.sources {
        f = f.because(s.clone());
    }
    if let Some(d) = &r.detail {
        f = f.because(format!("the toolkit prints `nvidia-container-cli: {d}`"));
    }
    f.because(MODE_NOTE)
}

/// `container-no-gpu-access`: the container gets no GPU: `NVIDIA_VISIBLE_DEVICES` unset (on an image that is not
/// a legacy CUDA image), empty or `void` (the toolkit does nothing), or `none` (driver files, no device).
fn no_gpu_access(view: &ContainerView, env: &BTreeMap<String, String>) -> Option<Finding> {
    if !view.run.hook && view.run.source != Source::Cdi {
        return Some(
            Finding::new(
                Code::ContainerNoGpuAccess,
                "Started with a runtime without the NVIDIA Container Toolkit and no --gpus: nothing runs the \
                 toolkit's hook, so the container gets no GPU, driver libraries or libcuda.so.1",
                "Add `--gpus all` (docker then adds the toolkit's hook itself), or run with `--runtime=nvidia`.",
            )
            .because("--runtime runc and no GPU request: the engine adds no nvidia-container-runtime-hook")
            .because(env_line(env, super::VISIBLE_DEVICES))
            .because("a CUDA program in it: CUDA finds no driver (error 35, or libcuda.so.1 not found)"),
        );
    }
    let (message, effect) = match view.devices.request {
        DeviceRequest::Unset => (
            "The image does not set NVIDIA_VISIBLE_DEVICES: unless the engine sets it (`docker run --gpus`, a \
             Kubernetes GPU request), the NVIDIA Container Toolkit leaves the container without GPU, driver \
             libraries or libcuda.so.1",
            "CUDA finds no driver (error 35, or libcuda.so.1 not found)",
        ),
        DeviceRequest::Void => (
            "NVIDIA_VISIBLE_DEVICES is empty or `void`: the NVIDIA Container Toolkit leaves the container without \
             GPU, driver libraries or libcuda.so.1",
            "CUDA finds no driver (error 35, or libcuda.so.1 not found)",
        ),
        DeviceRequest::None => (
            "NVIDIA_VISIBLE_DEVICES=none: the NVIDIA Container Toolkit mounts the driver's libraries but no GPU \
             device",
            "CUDA reports no CUDA-capable device (error 100)",
        ),
        _ => return None,
    };
    Some(
        Finding::new(
            Code::ContainerNoGpuAccess,
            message,
            "Run it with the GPUs it needs: `docker run --gpus all …` (or `--gpus '\"device=0\"'`), a Kubernetes \
             `nvidia.com/gpu` limit, or set `NVIDIA_VISIBLE_DEVICES=all` (with `--runtime=nvidia`); `--env \
             NVIDIA_VISIBLE_DEVICES=all` shows what cudadiag predicts then.",
        )
        .because(env_line(env, super::VISIBLE_DEVICES))
        .because(format!("a CUDA program in it: {effect}")),
    )
}

/// `container-compute-missing`: a GPU container whose capabilities lack `compute` gets no `libcuda.so.1`
/// (nor the PTX JIT, nor the image's forward-compatibility libraries, which the toolkit handles under `compute`).
fn compute_not_injected(view: &ContainerView, env: &BTreeMap<String, String>) -> Option<Finding> {
    if !view.gpu_container
        || view.devices.unknown.is_some()
        || view.capabilities.is_empty() && env.contains_key(super::DRIVER_CAPABILITIES) && !valid_caps(env)
        || view.capabilities.contains(&Capability::Compute)
    {
        return None;
    }
    let caps: Vec<&str> = view.capabilities.iter().map(|c| c.as_str()).collect();
    Some(
        Finding::new(
            Code::ContainerComputeMissing,
            format!(
                "NVIDIA_DRIVER_CAPABILITIES gives `{}` without `compute`: the NVIDIA Container Toolkit will not \
                 mount libcuda.so.1, and CUDA programs in the container find no driver",
                caps.join(",")
            ),
            "Add compute: `ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility` in the image, or `--env \
             NVIDIA_DRIVER_CAPABILITIES=compute,utility` (`-e` with docker) when running it.",
        )
        .because(env_line(env, super::DRIVER_CAPABILITIES))
        .because(
            "libcuda.so, libnvidia-ptxjitcompiler.so, libnvidia-nvvm.so and the /dev/nvidia-uvm devices come with \
             the compute capability only",
        ),
    )
}

fn valid_caps(env: &BTreeMap<String, String>) -> bool {
    super::caps::resolve(env.get(super::DRIVER_CAPABILITIES).map(String::as_str), false).is_ok()
}
