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
}

macro_rules! catalogue {
    ($($name:ident = ($code:literal, $slug:literal, $sev:ident, $err:expr, $summary:literal);)*) => {
        /// Every finding code cudadiag can emit, in code order.
        pub const CATALOGUE: &[CodeInfo] = &[
            $(CodeInfo { code: $code, slug: $slug, severity: Severity::$sev, summary: $summary, cuda_error: $err },)*
        ];
        /// Typed handles on the catalogue, so rules cannot misspell a slug.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(missing_docs)]
        pub enum Code { $($name,)* }
        impl Code {
            /// The catalogue entry of this code.
            pub fn info(self) -> &'static CodeInfo {
                // The enum's variants are declared in catalogue order.
                &CATALOGUE[self as usize]
            }
        }
    };
}

catalogue! {
    NoKernelImage = ("CD100", "no-kernel-image", Error, Some(209), "no SASS or PTX in the binary can run on the GPU");
    PtxJitRequired = ("CD101", "ptx-jit-required", Warning, None, "the GPU runs this code only after the driver JIT-compiles its PTX");
    PtxTooNew = ("CD102", "ptx-too-new", Error, Some(222), "the PTX ISA is newer than the driver can JIT");
    NoDeviceCode = ("CD103", "no-device-code", Note, None, "the binary carries no CUDA device code");
    MalformedDeviceCode = ("CD104", "malformed-device-code", Error, Some(200), "a fatbin, cubin or PTX payload is damaged");
    MalformedBinary = ("CD105", "malformed-binary", Error, None, "the host ELF or archive structure is damaged");
    UnrecognizedInput = ("CD106", "unrecognized-input", Warning, None, "the file is not an ELF, archive, fatbin, cubin or PTX");
    InputUnreadable = ("CD107", "input-unreadable", Error, None, "an input could not be read, so nothing about it was checked");
    PtxJitDisabled = ("CD108", "ptx-jit-disabled", Error, Some(223), "the GPU has only PTX to run and CUDA_DISABLE_PTX_JIT forbids compiling it");
    PtxJitCacheOnly = ("CD109", "ptx-jit-cache-only", Warning, None, "PTX JIT is disabled: the code runs only if the JIT cache holds an earlier compile");
    ForeignArchitecture = ("CD110", "foreign-architecture", Note, None, "the binary is for another architecture than this machine's: its libraries are not looked up here");
    LibraryNotFound = ("CD200", "library-not-found", Error, None, "the dynamic loader will not find a needed library");
    LibraryShadowed = ("CD201", "library-shadowed", Warning, None, "another copy of a library wins over the one the binary's RUNPATH/RPATH meant");
    SymbolVersionMissing = ("CD202", "symbol-version-missing", Error, None, "a needed symbol version is missing from the library that will be loaded");
    MultipleCudaMajors = ("CD203", "multiple-cuda-majors", Warning, None, "libraries of several CUDA major versions are loaded into one process");
    GlibcTooOld = ("CD204", "glibc-too-old", Error, None, "the binary or a library it loads needs a newer glibc than the machine has");
    DuplicateCudaLibrary = ("CD205", "duplicate-cuda-library", Warning, None, "two copies of one CUDA library are loaded into one process");
    CudaLibraryTooOld = ("CD206", "cuda-library-too-old", Error, None, "the loaded copy of a CUDA library is older than the release its package requires");
    NoDriver = ("CD300", "no-driver", Error, Some(35), "no NVIDIA kernel driver is loaded");
    LibcudaNotFound = ("CD301", "libcuda-not-found", Error, Some(35), "the driver library libcuda.so.1 cannot be found");
    DriverInsufficient = ("CD302", "driver-insufficient", Error, Some(35), "the driver is older than the CUDA runtime or code needs");
    MinorVersionCompat = ("CD303", "minor-version-compat", Warning, None, "runs through minor-version compatibility, with its limits");
    DriverLibraryMismatch = ("CD304", "driver-library-mismatch", Error, None, "the user-space driver libraries differ from the loaded kernel module");
    CompatLibcudaUnsupported = ("CD305", "compat-libcuda-unsupported", Error, Some(803), "a forward-compatibility libcuda cannot be used with this driver or GPU");
    StubLibcuda = ("CD306", "stub-libcuda", Error, Some(34), "the toolkit's stub libcuda.so.1 will be loaded instead of the driver's");
    GpuUnsupportedByDriver = ("CD307", "gpu-unsupported-by-driver", Error, Some(100), "the installed driver branch no longer supports this GPU");
    DriverLibraryDamaged = ("CD308", "driver-library-damaged", Error, None, "a driver library file is empty or cut short");
    CdiSpecStale = ("CD309", "cdi-spec-stale", Error, None, "a CDI spec mounts driver libraries of another version than the loaded kernel module");
    ContainerRequirementUnmet = ("CD310", "container-requirement-unmet", Error, None, "the NVIDIA Container Toolkit refuses to start the container: an NVIDIA_REQUIRE_* constraint fails on the node");
    ContainerConfigInvalid = ("CD311", "container-config-invalid", Error, None, "the NVIDIA Container Toolkit rejects the container's NVIDIA_* settings and does not start it");
    ContainerComputeMissing = ("CD312", "container-compute-missing", Error, Some(35), "NVIDIA_DRIVER_CAPABILITIES lacks compute: the toolkit does not mount libcuda.so.1 into the container");
    NoVisibleDevices = ("CD400", "no-visible-devices", Error, Some(100), "CUDA_VISIBLE_DEVICES hides every GPU");
    DeviceNodesMissing = ("CD401", "device-nodes-missing", Error, Some(100), "the /dev/nvidia* device nodes are missing");
    DevicePermissionDenied = ("CD402", "device-permission-denied", Error, Some(100), "the current user cannot open the /dev/nvidia* device nodes");
    NvidiaUvmMissing = ("CD403", "nvidia-uvm-missing", Error, Some(999), "the nvidia-uvm module or its device node is missing");
    NouveauLoaded = ("CD404", "nouveau-loaded", Error, None, "the nouveau driver holds the GPU");
    NoGpu = ("CD405", "no-gpu", Error, Some(100), "no NVIDIA GPU is present");
    DeviceOrderMismatch = ("CD406", "device-order-mismatch", Warning, None, "CUDA_VISIBLE_DEVICES indices follow CUDA's fastest-first order, not nvidia-smi's, on GPUs of different models");
    ContainerNoGpuAccess = ("CD407", "container-no-gpu-access", Warning, None, "NVIDIA_VISIBLE_DEVICES gives the container no GPU: the toolkit injects nothing, or the driver without a device");
    ContainerUnknownDevice = ("CD408", "container-unknown-device", Error, None, "NVIDIA_VISIBLE_DEVICES names a GPU the node does not have: the toolkit does not start the container");
    ProbeFailed = ("CD500", "probe-failed", Error, None, "the live probe failed, crashed or timed out");
    ProbeDisagrees = ("CD501", "probe-disagrees", Warning, None, "the live probe contradicts the static verdict (a cudadiag or matrix bug)");
    PolicyMissingArch = ("CD600", "policy-missing-arch", Error, None, "a target architecture the policy requires has no SASS");
    PolicyMissingPtx = ("CD601", "policy-missing-ptx", Error, None, "the PTX the policy requires is missing");
    PolicyMinDriver = ("CD602", "policy-min-driver", Error, None, "the binary needs a newer driver than the policy's oldest supported one");
    PolicyForbiddenLibrary = ("CD603", "policy-forbidden-library", Error, None, "the policy forbids a bundled library or path");
    WaiverUnused = ("CD604", "waiver-unused", Warning, None, "a policy waiver matched no finding");
    WaiverExpired = ("CD605", "waiver-expired", Error, None, "a policy waiver is past its expiry date");
    PolicyGlibc = ("CD606", "policy-glibc", Error, None, "the binary needs a newer glibc than the policy's oldest supported one");
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
    pub code: String,
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
            code: info.code.to_string(),
            slug: info.slug.to_string(),
            severity: info.severity,
            message: message.into(),
            evidence: Vec::new(),
            help: help.into(),
            path: None,
            sonames: Vec::new(),
            requests: None,
            folds: Vec::new(),
        }
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

    /// Names the input the finding is about.
    pub fn at(mut self, path: impl Into<String>) -> Finding {
        self.path = Some(path.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
