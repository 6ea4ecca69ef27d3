//! Findings and the catalogue of finding codes.
//!
//! Codes are API: a code (`CD104`) and its slug (`malformed-device-code`) are never reused or renamed, since
//! policies, JSON consumers and `explain` refer to them. A retired code stays in [`CATALOGUE`] with
//! `retired: true` so it still resolves. `tests/` snapshots the whole list, so any change is reviewed.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How serious a finding is. Ordered: `Note < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Worth knowing; never fails a run by default.
    Note,
    /// Likely to bite: degraded behaviour, a fragile set-up.
    Warning,
    /// The program will fail.
    Error,
}

impl Severity {
    /// The lower-case name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of the code catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CodeInfo {
    /// Stable code, `CD` and three digits; the first digit is the area.
    pub code: &'static str,
    /// Stable public name, kebab-case.
    pub slug: &'static str,
    /// Default severity (policies may override it).
    pub severity: Severity,
    /// One line saying what the finding means.
    pub summary: &'static str,
    /// The CUDA error number this finding predicts, when there is one.
    pub cuda_error: Option<u32>,
    /// The explanation `explain` prints: `data/codes/<slug>.md`, compiled in.
    #[serde(skip)]
    pub doc: &'static str,
    /// The facts its rule reads (what `explain --check` must have read to rule it out).
    #[serde(skip)]
    pub needs: Needs,
    /// What the live probe observes when the finding is right: at which stage, any of which results
    /// (`docs/compatibility.md`, "The CUDA error table the rules use"). Empty: the probe cannot tell.
    #[serde(skip)]
    pub probe: &'static [(Stage, &'static [Expect])],
}

/// What a finding's rule reads: whether `explain --check` read enough to rule it out when it did not fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// The binaries alone.
    Binaries,
    /// The binaries and a GPU and/or a driver: a what-if target's, or this machine's.
    Target {
        /// A GPU (its compute capability).
        gpu: bool,
        /// A driver (its version).
        driver: bool,
    },
    /// The binaries' loader trees.
    Loader,
    /// The loader trees and the machine's glibc.
    Glibc,
    /// The machine's facts: its driver, GPUs, device nodes, driver libraries, environment.
    Host,
    /// The machine's environment (`CUDA_DISABLE_PTX_JIT`, the JIT cache) and a GPU.
    HostAndGpu,
    /// The live probe's results (`inspect --probe`).
    Probe,
    /// A release policy (`audit --policy`).
    Policy,
    /// A container image's environment and a node (`inspect --image`).
    Image,
}

/// Where in the live probe a result is observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Loading `libcuda.so.1` and `cuInit` (a zero device count counts as 100).
    Driver,
    /// `cudaGetDeviceCount` through the libcudart.
    Runtime,
    /// Loading one inspected binary's device code (`cuModuleLoadDataEx`).
    Module,
}

/// One result the live probe can observe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// `dlopen("libcuda.so.1")` failed.
    NotLoaded,
    /// This CUDA error code.
    Code(i32),
}

/// The catalogue: one entry per code, everything about the code but its rule. How to add a code:
///
/// 1. one line here, `Name = ("CDnnn", "slug", Severity, Some(cuda_error) or None, "summary", needs: …,
///    probe: …);` (codes are never reused: a code only ever gets added);
/// 2. `data/codes/<slug>.md`, in the template of the others (compiled in as [`CodeInfo::doc`]);
/// 3. the rule in `src/rules/` that builds `Finding::new(Code::Name, …)`, called from `rules::evaluate` (or
///    `rules::evaluate_release` for release checks);
/// 4. its line in `tests/it/snapshots/codes.txt`, and a firing case and a near miss in
///    `tests/it/code_table.rs`.
macro_rules! catalogue {
    ($($name:ident = ($code:literal, $slug:literal, $sev:ident, $err:expr, $summary:literal,
        needs: $needs:expr, probe: $probe:expr);)*) => {
        /// Every finding code cudadiag can emit, in code order.
        pub const CATALOGUE: &[CodeInfo] = &[
            $(CodeInfo {
                code: $code,
                slug: $slug,
                severity: Severity::$sev,
                summary: $summary,
                cuda_error: $err,
                doc: include_str!(concat!("../data/codes/", $slug, ".md")),
                needs: $needs,
                probe: $probe,
            },)*
        ];
        /// Typed handles on the catalogue, so rules cannot misspell a slug.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(missing_docs)]
        pub enum Code { $($name,)* }
        impl Code {
            /// Every code, in catalogue order.
            pub const ALL: &[Code] = &[$(Code::$name,)*];
        }
    };
}

catalogue! {
    NoKernelImage = ("CD100", "no-kernel-image", Error, Some(209), "no SASS or PTX in the binary can run on the GPU",
        needs: Needs::Target { gpu: true, driver: false }, probe: &[(Stage::Module, &[Expect::Code(209)])]);
    PtxJitRequired = ("CD101", "ptx-jit-required", Warning, None, "the GPU runs this code only after the driver JIT-compiles its PTX",
        needs: Needs::Target { gpu: true, driver: false }, probe: &[]);
    PtxTooNew = ("CD102", "ptx-too-new", Error, Some(222), "the PTX ISA is newer than the driver can JIT",
        needs: Needs::Target { gpu: true, driver: true }, probe: &[(Stage::Module, &[Expect::Code(222)])]);
    NoDeviceCode = ("CD103", "no-device-code", Note, None, "the binary carries no CUDA device code",
        needs: Needs::Binaries, probe: &[]);
    MalformedDeviceCode = ("CD104", "malformed-device-code", Error, Some(200), "a fatbin, cubin or PTX payload is damaged",
        needs: Needs::Binaries, probe: &[(Stage::Module, &[Expect::Code(200), Expect::Code(218)])]);
    MalformedBinary = ("CD105", "malformed-binary", Error, None, "the host ELF or archive structure is damaged",
        needs: Needs::Binaries, probe: &[]);
    UnrecognizedInput = ("CD106", "unrecognized-input", Warning, None, "the file is not an ELF, archive, fatbin, cubin or PTX",
        needs: Needs::Binaries, probe: &[]);
    InputUnreadable = ("CD107", "input-unreadable", Error, None, "an input could not be read, so nothing about it was checked",
        needs: Needs::Binaries, probe: &[]);
    PtxJitDisabled = ("CD108", "ptx-jit-disabled", Error, Some(223), "the GPU has only PTX to run and CUDA_DISABLE_PTX_JIT forbids compiling it",
        needs: Needs::HostAndGpu, probe: &[(Stage::Module, &[Expect::Code(209), Expect::Code(223)])]);
    PtxJitCacheOnly = ("CD109", "ptx-jit-cache-only", Warning, None, "PTX JIT is disabled: the code runs only if the JIT cache holds an earlier compile",
        needs: Needs::HostAndGpu, probe: &[(Stage::Module, &[Expect::Code(209), Expect::Code(223)])]);
    ForeignArchitecture = ("CD110", "foreign-architecture", Note, None, "the binary is for another architecture than this machine's: its libraries are not looked up here",
        needs: Needs::Loader, probe: &[]);
    PtxasTooOld = ("CD111", "ptxas-too-old", Warning, None, "a ptxas a tool would run is older than the GPU's architecture or an inspected PTX file's ISA: compiling with it fails",
        needs: Needs::HostAndGpu, probe: &[]);
    LibraryNotFound = ("CD200", "library-not-found", Error, None, "the dynamic loader will not find a needed library",
        needs: Needs::Loader, probe: &[]);
    LibraryShadowed = ("CD201", "library-shadowed", Warning, None, "another copy of a library wins over the one the binary's RUNPATH/RPATH meant",
        needs: Needs::Loader, probe: &[]);
    SymbolVersionMissing = ("CD202", "symbol-version-missing", Error, None, "a needed symbol version is missing from the library that will be loaded",
        needs: Needs::Loader, probe: &[]);
    MultipleCudaMajors = ("CD203", "multiple-cuda-majors", Warning, None, "libraries of several CUDA major versions are loaded into one process",
        needs: Needs::Loader, probe: &[]);
    GlibcTooOld = ("CD204", "glibc-too-old", Error, None, "the binary or a library it loads needs a newer glibc than the machine has",
        needs: Needs::Glibc, probe: &[]);
    DuplicateCudaLibrary = ("CD205", "duplicate-cuda-library", Warning, None, "two copies of one CUDA library are loaded into one process",
        needs: Needs::Loader, probe: &[]);
    CudaLibraryTooOld = ("CD206", "cuda-library-too-old", Error, None, "the loaded copy of a CUDA library is older than the release its package requires",
        needs: Needs::Loader, probe: &[]);
    JaxPluginVersionMismatch = ("CD207", "jax-plugin-version-mismatch", Error, None, "jax, jaxlib and JAX's CUDA plugin are installed at versions their own pins rule out",
        needs: Needs::Loader, probe: &[]);
    FrameworkExtensionAbiMismatch = ("CD208", "framework-extension-abi-mismatch", Error, None, "a torch extension pins the exact torch it was built against and another torch is installed",
        needs: Needs::Loader, probe: &[]);
    CpuOnlyFrameworkBuild = ("CD209", "cpu-only-framework-build", Error, None, "a framework is installed as its CPU-only build on a machine with an NVIDIA GPU",
        needs: Needs::Loader, probe: &[]);
    NcclCudaMismatch = ("CD210", "nccl-cuda-mismatch", Error, None, "the NCCL a process loads is built for another CUDA major than its CUDA runtime, or a newer one than the driver supports",
        needs: Needs::Loader, probe: &[]);
    FrameworkCpuFallback = ("CD211", "framework-cpu-fallback", Error, None, "a framework will import but run on the CPU: the GPU will not be used",
        needs: Needs::Loader, probe: &[]);
    FrameworkVersionCheck = ("CD212", "framework-version-check", Warning, None, "a framework's own version check will raise from the operations it guards",
        needs: Needs::Loader, probe: &[]);
    LoadedByFramework = ("CD213", "loaded-by-framework", Note, None, "the file belongs to a Python framework: it is judged as the framework's import loads it, after the libraries it loads first",
        needs: Needs::Loader, probe: &[]);
    FrameworkNotInstalled = ("CD214", "framework-not-installed", Error, None, "the module imported is not installed in the environment: the import raises ModuleNotFoundError",
        needs: Needs::Loader, probe: &[]);
    FrameworkRaises = ("CD215", "framework-raises", Error, None, "a framework's import or first GPU use raises an exception that no other finding explains",
        needs: Needs::Loader, probe: &[]);
    NoDriver = ("CD300", "no-driver", Error, Some(35), "no NVIDIA kernel driver is loaded",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::NotLoaded, Expect::Code(100), Expect::Code(999)])]);
    LibcudaNotFound = ("CD301", "libcuda-not-found", Error, Some(35), "the driver library libcuda.so.1 cannot be found",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::NotLoaded])]);
    DriverInsufficient = ("CD302", "driver-insufficient", Error, Some(35), "the driver is older than the CUDA runtime or code needs",
        needs: Needs::Target { gpu: false, driver: true }, probe: &[(Stage::Runtime, &[Expect::Code(35)]), (Stage::Module, &[Expect::Code(200), Expect::Code(209), Expect::Code(222)])]);
    MinorVersionCompat = ("CD303", "minor-version-compat", Warning, None, "runs through minor-version compatibility, with its limits",
        needs: Needs::Target { gpu: false, driver: true }, probe: &[]);
    DriverLibraryMismatch = ("CD304", "driver-library-mismatch", Error, None, "the user-space driver libraries differ from the loaded kernel module",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::Code(803), Expect::Code(804), Expect::Code(999)])]);
    CompatLibcudaUnsupported = ("CD305", "compat-libcuda-unsupported", Error, Some(803), "a forward-compatibility libcuda cannot be used with this driver or GPU",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::Code(803), Expect::Code(804)])]);
    StubLibcuda = ("CD306", "stub-libcuda", Error, Some(34), "the toolkit's stub libcuda.so.1 will be loaded instead of the driver's",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::Code(34)])]);
    GpuUnsupportedByDriver = ("CD307", "gpu-unsupported-by-driver", Error, Some(100), "the installed driver branch no longer supports this GPU",
        needs: Needs::Target { gpu: true, driver: true }, probe: &[(Stage::Driver, &[Expect::Code(100)])]);
    DriverLibraryDamaged = ("CD308", "driver-library-damaged", Error, None, "a driver library file is empty or cut short",
        needs: Needs::Host, probe: &[]);
    CdiSpecStale = ("CD309", "cdi-spec-stale", Error, None, "a CDI spec mounts driver libraries of another version than the loaded kernel module",
        needs: Needs::Host, probe: &[]);
    ContainerRequirementUnmet = ("CD310", "container-requirement-unmet", Error, None, "the NVIDIA Container Toolkit refuses to start the container: an NVIDIA_REQUIRE_* constraint fails on the node",
        needs: Needs::Image, probe: &[]);
    ContainerConfigInvalid = ("CD311", "container-config-invalid", Error, None, "the NVIDIA Container Toolkit rejects the container's NVIDIA_* settings and does not start it",
        needs: Needs::Image, probe: &[]);
    ContainerComputeMissing = ("CD312", "container-compute-missing", Error, Some(35), "NVIDIA_DRIVER_CAPABILITIES lacks compute: the toolkit does not mount libcuda.so.1 into the container",
        needs: Needs::Image, probe: &[]);
    SecureBootBlocksModule = ("CD313", "secure-boot-blocks-module", Error, None, "Secure Boot is enforced and the NVIDIA module for the running kernel is unsigned: the kernel refuses it",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::NotLoaded, Expect::Code(100), Expect::Code(999)])]);
    ContainerToolkitMissing = ("CD314", "container-toolkit-missing", Warning, None, "a container engine and an NVIDIA GPU are installed but the NVIDIA Container Toolkit is not: containers cannot be given the GPU",
        needs: Needs::Host, probe: &[]);
    FabricManagerNotRunning = ("CD315", "fabric-manager-not-running", Error, Some(802), "the machine has NVSwitches and NVIDIA Fabric Manager is not running: CUDA does not initialise (802)",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::Code(802)])]);
    ContainerUserUnknown = ("CD316", "container-user-unknown", Error, None, "the image's User is not in its /etc/passwd (or its group in /etc/group): the container engine refuses to start it",
        needs: Needs::Image, probe: &[]);
    ContainerUserUnchecked = ("CD317", "container-user-unchecked", Note, None, "the image's /etc/passwd or /etc/group was not read: its User and what that user may open are not checked",
        needs: Needs::Image, probe: &[]);
    NoVisibleDevices = ("CD400", "no-visible-devices", Error, Some(100), "CUDA_VISIBLE_DEVICES hides every GPU",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::Code(100)])]);
    DeviceNodesMissing = ("CD401", "device-nodes-missing", Error, Some(100), "the /dev/nvidia* device nodes are missing",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::Code(100), Expect::Code(999)])]);
    DevicePermissionDenied = ("CD402", "device-permission-denied", Error, Some(100), "the current user cannot open the /dev/nvidia* device nodes",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::Code(100), Expect::Code(999)])]);
    NvidiaUvmMissing = ("CD403", "nvidia-uvm-missing", Error, Some(999), "the nvidia-uvm module or its device node is missing",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::Code(999)])]);
    NouveauLoaded = ("CD404", "nouveau-loaded", Error, None, "the nouveau driver holds the GPU",
        needs: Needs::Host, probe: &[]);
    NoGpu = ("CD405", "no-gpu", Error, Some(100), "no NVIDIA GPU is present",
        needs: Needs::Host, probe: &[(Stage::Driver, &[Expect::Code(100)])]);
    DeviceOrderMismatch = ("CD406", "device-order-mismatch", Warning, None, "CUDA_VISIBLE_DEVICES indices follow CUDA's fastest-first order, not nvidia-smi's, on GPUs of different models",
        needs: Needs::Host, probe: &[]);
    ContainerNoGpuAccess = ("CD407", "container-no-gpu-access", Warning, None, "NVIDIA_VISIBLE_DEVICES gives the container no GPU: the toolkit injects nothing, or the driver without a device",
        needs: Needs::Image, probe: &[]);
    ContainerUnknownDevice = ("CD408", "container-unknown-device", Error, None, "NVIDIA_VISIBLE_DEVICES names a GPU the node does not have: the toolkit does not start the container",
        needs: Needs::Image, probe: &[]);
    ContainerGpusFromRun = ("CD409", "container-gpus-from-run", Note, None, "the image does not ask for GPUs itself: it is judged as run with them (docker run --gpus all, a Kubernetes GPU request)",
        needs: Needs::Image, probe: &[]);
    GpuFallenOffBus = ("CD410", "gpu-fallen-off-bus", Error, None, "the kernel log shows a GPU fell off the bus (Xid 79) since the last boot: it is lost until the machine is reset",
        needs: Needs::Host, probe: &[]);
    GpuXidReported = ("CD411", "gpu-xid-reported", Warning, None, "the NVIDIA driver reported GPU errors (Xid) in the kernel log since the last boot",
        needs: Needs::Host, probe: &[]);
    ProbeFailed = ("CD500", "probe-failed", Error, None, "the live probe failed, crashed or timed out",
        needs: Needs::Probe, probe: &[]);
    ProbeDisagrees = ("CD501", "probe-disagrees", Warning, None, "the live probe contradicts the static verdict (a cudadiag or matrix bug)",
        needs: Needs::Probe, probe: &[]);
    PolicyMissingArch = ("CD600", "policy-missing-arch", Error, None, "a target architecture the policy requires has no SASS",
        needs: Needs::Policy, probe: &[]);
    PolicyMissingPtx = ("CD601", "policy-missing-ptx", Error, None, "the PTX the policy requires is missing",
        needs: Needs::Policy, probe: &[]);
    PolicyMinDriver = ("CD602", "policy-min-driver", Error, None, "the binary needs a newer driver than the policy's oldest supported one",
        needs: Needs::Policy, probe: &[]);
    PolicyForbiddenLibrary = ("CD603", "policy-forbidden-library", Error, None, "the policy forbids a bundled library or path",
        needs: Needs::Policy, probe: &[]);
    WaiverUnused = ("CD604", "waiver-unused", Warning, None, "a policy waiver matched no finding",
        needs: Needs::Policy, probe: &[]);
    WaiverExpired = ("CD605", "waiver-expired", Error, None, "a policy waiver is past its expiry date",
        needs: Needs::Policy, probe: &[]);
    PolicyGlibc = ("CD606", "policy-glibc", Error, None, "the binary needs a newer glibc than the policy's oldest supported one",
        needs: Needs::Policy, probe: &[]);
}

impl Code {
    /// The catalogue entry of this code.
    pub fn info(self) -> &'static CodeInfo {
        // The enum's variants are declared in catalogue order.
        &CATALOGUE[self as usize]
    }

    /// The code as written everywhere (`CD104`).
    pub fn as_str(self) -> &'static str {
        self.info().code
    }

    /// The code of a catalogue entry found by code or slug ([`lookup`]).
    pub fn parse(key: &str) -> Option<Code> {
        let info = lookup(key)?;
        CATALOGUE
            .iter()
            .position(|c| c.code == info.code)
            .map(|i| Code::ALL[i])
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Code::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("unknown finding code {text:?}")))
    }
}

/// Looks a code up by code (`CD104`, case-insensitive) or slug (`malformed-device-code`).
pub fn lookup(key: &str) -> Option<&'static CodeInfo> {
    let key = key.trim();
    CATALOGUE
        .iter()
        .find(|c| c.code.eq_ignore_ascii_case(key) || c.slug == key)
}

/// One explained finding: what is wrong, the facts it rests on, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable code (`CD104`).
    pub code: Code,
    /// Stable slug (`malformed-device-code`).
    pub slug: String,
    /// Severity after any policy override.
    pub severity: Severity,
    /// One sentence: what is wrong.
    pub message: String,
    /// The facts it rests on, with where each was read ("because" lines).
    pub evidence: Vec<String>,
    /// What to do about it.
    pub help: String,
    /// The input this finding is about, when it is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For a finding that groups libraries under one cause (`library-not-found`): every SONAME it covers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sonames: Vec<String>,
    /// For such a finding: how many library requests the cause breaks (one SONAME may be needed by several
    /// objects). Each request, with its search trail, is in the report's `libraries`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<usize>,
    /// The GPU (the verdicts' `gpu` label, `NVIDIA H200 (CC 9.0)`) a finding is about when it holds for that GPU
    /// alone (a kernel image, the driver's support of the GPU): the verdict on another GPU does not rest on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Runs of `evidence` the human report shows in short unless asked for all of it (`-v`): a loader's
    /// search trail of eleven steps is one line there. Every other format keeps every line.
    #[serde(skip)]
    pub folds: Vec<Fold>,
}

/// A run of a finding's evidence and its short form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold {
    /// The index of the run's first line in [`Finding::evidence`].
    pub start: usize,
    /// How many lines it holds.
    pub len: usize,
    /// What the human report shows in their place.
    pub short: Vec<String>,
}

impl Finding {
    /// A finding of `code` at its default severity.
    pub fn new(code: Code, message: impl Into<String>, help: impl Into<String>) -> Finding {
        let info = code.info();
        Finding {
            code,
            slug: info.slug.to_string(),
            severity: info.severity,
            message: message.into(),
            evidence: Vec::new(),
            help: help.into(),
            path: None,
            sonames: Vec::new(),
            requests: None,
            gpu: None,
            folds: Vec::new(),
        }
    }

    /// Says which GPU (a verdict's `gpu` label) the finding holds for.
    pub fn on_gpu(mut self, gpu: &str) -> Finding {
        self.gpu = Some(gpu.to_string());
        self
    }

    /// Adds a "because" line.
    pub fn because(mut self, evidence: impl Into<String>) -> Finding {
        self.evidence.push(evidence.into());
        self
    }

    /// Adds "because" lines that the human report replaces with `short` unless it shows everything.
    pub fn because_folded(mut self, lines: Vec<String>, short: Vec<String>) -> Finding {
        if !lines.is_empty() {
            self.folds.push(Fold {
                start: self.evidence.len(),
                len: lines.len(),
                short,
            });
            self.evidence.extend(lines);
        }
        self
    }

    /// The finding as plain text for the writers that take one block of it (GitHub annotations, SARIF
    /// messages, JUnit failures): the message, then each evidence line after `because `, then the help after
    /// `help: `, each on a line of its own starting with `indent`. `clean` is the writer's escaping, applied to
    /// each piece (never to the line breaks between them).
    pub fn plain_text(&self, indent: &str, clean: impl Fn(&str) -> String) -> String {
        let mut text = clean(&self.message);
        for e in &self.evidence {
            text.push('\n');
            text.push_str(indent);
            text.push_str("because ");
            text.push_str(&clean(e));
        }
        if !self.help.is_empty() {
            text.push('\n');
            text.push_str(indent);
            text.push_str("help: ");
            text.push_str(&clean(&self.help));
        }
        text
    }

    /// Names the input the finding is about.
    pub fn at(mut self, path: impl Into<String>) -> Finding {
        self.path = Some(path.into());
        self
    }
}

/// `n` and its noun, agreeing: `count(1, "entry", "entries")` is "1 entry", `count(3, …)` "3 entries".
/// Messages, evidence and report lines count through it, so that none says "1 … entries".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_with_their_noun() {
        assert_eq!(count(1, "entry", "entries"), "1 entry");
        assert_eq!(count(0, "entry", "entries"), "0 entries");
        assert_eq!(
            count(
                2,
                "zstd-compressed device-code entry",
                "zstd-compressed device-code entries"
            ),
            "2 zstd-compressed device-code entries"
        );
    }

    #[test]
    fn typed_codes_match_the_catalogue_and_are_unique() {
        assert_eq!(Code::NoKernelImage.info().slug, "no-kernel-image");
        assert_eq!(Code::WaiverExpired.info().code, "CD605");
        let mut codes: Vec<&str> = CATALOGUE.iter().map(|c| c.code).collect();
        let mut slugs: Vec<&str> = CATALOGUE.iter().map(|c| c.slug).collect();
        codes.sort();
        slugs.sort();
        codes.dedup();
        slugs.dedup();
        assert_eq!(codes.len(), CATALOGUE.len());
        assert_eq!(slugs.len(), CATALOGUE.len());
        assert_eq!(lookup("cd104").map(|c| c.slug), Some("malformed-device-code"));
        assert_eq!(lookup("library-not-found").map(|c| c.code), Some("CD200"));
    }
}
