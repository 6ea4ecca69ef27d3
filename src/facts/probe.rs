//! What the live probe observed: owned, serialisable facts.
//!
//! These types are both the probe's part of [`crate::facts::Facts`] (so a snapshot carries them and `--facts`
//! replays them) and the JSON `probe` section of the report: they are flat, owned and documented field by
//! field, and adding a field is the only change that keeps `schema_version`. The child process writes
//! [`ChildReport`] (the part it can know) and the parent wraps it into [`ProbeFacts`] with what happened to the
//! child (exit, signal, timeout).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything the live probe learned, for one run of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeFacts {
    /// How the child process ended.
    pub outcome: ProbeOutcome,
    /// One sentence on what happened when the outcome is not `completed` (signal name, exit status, parse error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The call the child had begun and not finished when it hung, crashed or was killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<String>,
    /// The timeout the child ran under, in seconds.
    pub timeout_s: u64,
    /// Wall time of the child, in milliseconds.
    pub elapsed_ms: u64,
    /// Exit status of the child, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// Signal that ended the child, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// The last lines the child wrote to stderr (the driver's own complaints land here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// The environment variables given to the child that change what CUDA does (`CUDA_*`, `LD_*`, `NVIDIA_*`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The driver API probe (`libcuda.so.1`), when the child got that far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<DriverProbe>,
    /// The runtime API probe (`libcudart`), when one was asked for and the child got that far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeProbe>,
    /// Every fatbin (or cubin, or PTX file) of the inspected binaries loaded as data with `cuModuleLoadDataEx`.
    #[serde(default)]
    pub modules: Vec<ModuleProbe>,
}

/// How the probe's child process ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeOutcome {
    /// The child ran to the end and reported (the report may still hold CUDA errors).
    #[default]
    Completed,
    /// The child ran past the timeout and was killed.
    TimedOut,
    /// The child was ended by a signal (a crash inside the driver, typically SIGSEGV or SIGABRT).
    Crashed,
    /// The child exited without a complete report (non-zero status, or no report line).
    Exited,
    /// The child's output could not be read as a report.
    Garbled,
    /// The child could not be started at all.
    NotStarted,
}

impl ProbeOutcome {
    /// The kebab-case name used in every output.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeOutcome::Completed => "completed",
            ProbeOutcome::TimedOut => "timed-out",
            ProbeOutcome::Crashed => "crashed",
            ProbeOutcome::Exited => "exited",
            ProbeOutcome::Garbled => "garbled",
            ProbeOutcome::NotStarted => "not-started",
        }
    }
}

/// A CUDA error code with the names the library gave it (or cudadiag's table, when the library has none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaError {
    /// The number (`CUresult` or `cudaError_t`; the two agree on every shared value).
    pub code: i32,
    /// `CUDA_ERROR_STUB_LIBRARY` / `cudaErrorStubLibrary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `CUDA driver is a stub library`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl CudaError {
    /// `34 CUDA_ERROR_STUB_LIBRARY (CUDA driver is a stub library)`.
    pub fn describe(&self) -> String {
        let mut s = self.code.to_string();
        if let Some(n) = &self.name {
            s.push(' ');
            s.push_str(n);
        }
        if let Some(m) = &self.message {
            s.push_str(&format!(" ({m})"));
        }
        s
    }
}

/// One call into a CUDA library, in the order made: what was called, what it returned, how long it took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Call {
    /// The function (`cuInit`, `cuModuleLoadDataEx`, `cudaGetDeviceCount`).
    pub call: String,
    /// The device ordinal it concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<i32>,
    /// The returned code; `None` when the function could not be called (symbol missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<CudaError>,
    /// Why it was not called, when it was not (`symbol not found: …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the call, in microseconds.
    pub elapsed_us: u64,
}

impl Call {
    /// Whether the call was made and returned 0.
    pub fn ok(&self) -> bool {
        self.result.as_ref().is_some_and(|r| r.code == 0)
    }

    /// `cuInit returned 34 CUDA_ERROR_STUB_LIBRARY (…)` or `cuInit not called: …`.
    pub fn describe(&self) -> String {
        let dev = self.device.map(|d| format!(" (device {d})")).unwrap_or_default();
        match (&self.result, &self.error) {
            (Some(r), _) => format!("{}{dev} returned {}", self.call, r.describe()),
            (None, Some(e)) => format!("{}{dev} not called: {e}", self.call),
            (None, None) => format!("{}{dev} not called", self.call),
        }
    }
}

/// A shared library the child `dlopen`ed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryLoad {
    /// What was passed to `dlopen` (`libcuda.so.1`, or a path).
    pub requested: String,
    /// Why this name was chosen (`driver`, `--cudart`, `NEEDED of ./app`, `default search`).
    pub source: String,
    /// The file actually mapped, read from `/proc/self/maps` at the address of one of its symbols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_from: Option<String>,
    /// `dlerror()` when loading failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the `dlopen`, in microseconds.
    pub elapsed_us: u64,
}

/// The driver API part of the probe.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DriverProbe {
    /// Loading `libcuda.so.1`.
    pub library: LibraryLoad,
    /// `cuInit(0)`: `None` when the library did not load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<Call>,
    /// `cuDriverGetVersion` (`13000` for CUDA 13.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// `cuDeviceGetCount`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_count: Option<i32>,
    /// Every visible device.
    #[serde(default)]
    pub devices: Vec<DeviceProbe>,
    /// The self-test (context, allocation, PTX kernel) on each device.
    #[serde(default)]
    pub selftests: Vec<SelfTest>,
    /// Every driver call in order, with its result and time.
    #[serde(default)]
    pub calls: Vec<Call>,
}

/// One device as the driver sees it (after `CUDA_VISIBLE_DEVICES`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceProbe {
    /// CUDA ordinal (after `CUDA_VISIBLE_DEVICES` renumbering).
    pub ordinal: i32,
    /// `cuDeviceGetName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Compute capability (`9.0`), attributes 75 and 76.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    /// `cuDeviceTotalMem_v2`, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_mem: Option<u64>,
    /// `cuDeviceGetUuid_v2`, as `GPU-xxxxxxxx-…` (the form `CUDA_VISIBLE_DEVICES` and nvidia-smi use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// `cuDeviceGetPCIBusId` (`0000:19:00.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<String>,
    /// Multiprocessor count (attribute 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiprocessors: Option<i32>,
    /// Compute mode (attribute 20): `default`, `prohibited`, `exclusive-process`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_mode: Option<String>,
    /// MIG mode from NVML (`enabled`, `disabled`, `unsupported`), by PCI bus id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_mode: Option<String>,
    /// Why the MIG mode is unknown (NVML missing or refusing), when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_error: Option<String>,
}

/// The self-test on one device: primary context, allocation, the embedded PTX kernel, its result checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelfTest {
    /// Device ordinal.
    pub device: i32,
    /// Every step passed and the kernel wrote what it should.
    pub passed: bool,
    /// The PTX variant that loaded (`PTX ISA 6.0, sm_50`), when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// PTX variants the driver refused before one loaded (or all of them), each with its result.
    #[serde(default)]
    pub rejected_kernels: Vec<String>,
    /// The first failing call, when one failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_call: Option<Call>,
    /// What was wrong with the kernel's output, when it ran but wrote the wrong values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<String>,
}

/// The runtime API part of the probe: what an application linked against this libcudart would meet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeProbe {
    /// Loading the libcudart.
    pub library: LibraryLoad,
    /// `cudaRuntimeGetVersion` (`13000`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<i32>,
    /// `cudaDriverGetVersion` (`0` when no driver could be loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<i32>,
    /// `cudaGetDeviceCount`: the count, when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_count: Option<i32>,
    /// `cudaGetDeviceCount`'s call: the error an application meets first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_device_count: Option<Call>,
    /// Every runtime call in order.
    #[serde(default)]
    pub calls: Vec<Call>,
}

/// One module of an inspected binary loaded as data on one device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleProbe {
    /// The binary, as named in `binaries[].path`.
    pub binary: String,
    /// Index of the container in that binary's `fatbins`, or `None` for a whole `.cubin`/`.ptx` file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<usize>,
    /// File offset of the bytes loaded.
    pub offset: u64,
    /// Number of bytes loaded.
    pub size: u64,
    /// Device ordinal the module was loaded on.
    pub device: i32,
    /// That device's compute capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    /// `cuModuleLoadDataEx`'s result (`None` when it was not called: see `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<CudaError>,
    /// Why it was not loaded (unreadable file, no context), when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The JIT's error log (PTX compile errors), when it wrote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit_log: Option<String>,
    /// Wall time of the load, in microseconds.
    pub elapsed_us: u64,
    /// Whether the static inspection found kernels (or PTX entries) in it: `Some(false)` for containers such
    /// as nvcc 13's device-link stub (one SASS cubin by nvlink, no kernel), which the runtime never loads under
    /// lazy loading, so their load result is not what the application meets; `None` when unknown (payloads
    /// not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_kernels: Option<bool>,
}

/// What the child is asked to do (written by the parent to the child's stdin as JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRequest {
    /// The libcudart to probe, if any.
    #[serde(default)]
    pub cudart: Option<CudartRequest>,
    /// Modules to load as data.
    #[serde(default)]
    pub modules: Vec<ModuleRequest>,
}

/// Which libcudart the runtime probe loads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudartRequest {
    /// Names or paths tried with `dlopen`, in order; the first that loads is probed.
    pub candidates: Vec<String>,
    /// Why these (`--cudart`, `NEEDED of ./app`, `default search`).
    pub source: String,
}

/// One module to load: a byte range of a file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleRequest {
    /// The binary's name in the report.
    pub binary: String,
    /// The file to read (the same as `binary` except for odd names).
    pub file: String,
    /// Container index, or `None` for a whole file.
    pub container: Option<usize>,
    /// Start of the bytes in the file.
    pub offset: u64,
    /// Number of bytes.
    pub size: u64,
    /// Whether the module declares kernels (see [`ModuleProbe::has_kernels`]).
    #[serde(default)]
    pub has_kernels: Option<bool>,
}

/// One line of the child's stdout. The child flushes each line, so the parent knows which call was in
/// progress when the child hung or died.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildLine {
    /// A call is about to be made.
    Begin(String),
    /// A library was loaded (or not): known to the parent even if the child dies right after.
    Loaded(LibraryLoad),
    /// The complete report; the last line.
    Report(Box<ChildReport>),
}

/// What the child reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildReport {
    /// The driver API probe.
    pub driver: DriverProbe,
    /// The runtime API probe, when asked for.
    pub runtime: Option<RuntimeProbe>,
    /// Modules loaded as data.
    pub modules: Vec<ModuleProbe>,
}
