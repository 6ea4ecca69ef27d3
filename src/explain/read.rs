//! Reading a pasted message: the numbers, names and versions it carries, wherever the tool that printed it put
//! them. Each tool prints a CUDA error its own way (`(35 vs. 0)` from a `CHECK_EQ`, `[34]` from Numba,
//! `code=35(cudaErrorInsufficientDriver)` from the samples' `checkCudaErrors`, `Error 804:` from torch), and a
//! version its own way (`found version 10010`, `(9, 1, 0)`, `8.5.0`, `_12_4` in a symbol name): this module
//! turns each form into one typed value, so the recognisers (`known.rs`) never match digits themselves.

use crate::matrix::Matrix;
use regex::Regex;
use std::sync::OnceLock;

/// The most of a pasted text that is read: a log of megabytes says what it has to say in its first lines,
/// and the matching stays linear and small whatever is pasted.
pub const MAX_TEXT: usize = 256 * 1024;

/// The most distinct library names read: a message names a few; each is looked for in the text and on disk.
pub const MAX_NAMES: usize = 64;

/// One CUDA error the text names, and how it names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorRef {
    /// The error's value (`cudaError_t` and `CUresult` share them for the errors both have).
    pub value: u32,
    /// The form it was read from, for the "why" of a candidate (`"(35 vs. 0)"`, `"CUDA_ERROR_STUB_LIBRARY"`).
    pub form: String,
    /// How sure the form is: a name or a printed message is certain, a bare number after `error` less so.
    pub strong: bool,
}

/// A "compiled against X, found Y" pair (cuDNN, cuBLAS, the CUDA runtime…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionPair {
    /// The library the versions are of, lower case (`cudnn`, `cusparse`, `cuda`).
    pub library: String,
    /// The version the program was built with, as (major, minor, patch).
    pub compiled: (u32, u32, u32),
    /// The version that was loaded.
    pub loaded: (u32, u32, u32),
}

/// Everything read from one message.
#[derive(Debug, Clone, Default)]
pub struct Read {
    /// The text, lower-cased and cut to [`MAX_TEXT`].
    pub lower: String,
    /// CUDA errors, strongest first, each value once, `0` (success) only when nothing else is named.
    pub errors: Vec<ErrorRef>,
    /// Library names, in the order they appear: `libcudart.so.12`, `libcudnn_ops.so.9.1.0`, and glob forms
    /// (`libcublas.so.*[0-9]`) cut to their stem (`libcublas.so`).
    pub sonames: Vec<String>,
    /// The CUDA version a driver supports, when the text quotes one (`found version 10010` = 10.1).
    pub driver_cuda: Option<(u32, u32)>,
    /// GPU architectures named (`sm_120` → 120; `compute capability 9.0` → 90), in order, each once.
    pub archs: Vec<u32>,
    /// The version a symbol name carries (`__nvJitLinkComplete_12_4` → 12.4).
    pub symbol_version: Option<(String, u32, u32)>,
    /// Compiled-versus-loaded pairs.
    pub pairs: Vec<VersionPair>,
    /// The symbol an `undefined symbol:` names, as written.
    pub undefined_symbol: Option<String>,
}

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    // The patterns are constants of this file, compiled by the tests: a failure is a bug in this file.
    cell.get_or_init(|| Regex::new(pattern).unwrap_or_else(|e| panic!("pattern {pattern}: {e}")))
}

impl Read {
    /// The libraries the text implies without naming their file: the cuDNN of a compiled-versus-loaded pair
    /// (`libcudnn.so.8` for "Loaded runtime CuDNN library: 8.0.5"), the library whose release a symbol carries
    /// (`libnvJitLink.so.12` for `__nvJitLinkComplete_12_4`).
    pub fn implied_sonames(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.pairs {
            let stem = match p.library.as_str() {
                "cudnn" => "libcudnn",
                "cusparse" => "libcusparse",
                "cublas" => "libcublas",
                "cufft" => "libcufft",
                _ => continue,
            };
            // cuDNN's SONAME is its own major; the others' the library's major, which the pair gives too.
            let name = format!("{stem}.so.{}", p.loaded.0);
            if !out.contains(&name) {
                out.push(name);
            }
        }
        if self
            .undefined_symbol
            .as_deref()
            .is_some_and(|s| s.starts_with("nccl"))
        {
            out.push("libnccl.so.2".to_string());
        }
        if let Some((lib, major, _)) = &self.symbol_version
            && lib == "nvJitLink"
        {
            out.push(format!("libnvJitLink.so.{major}"));
        }
        out
    }
}

/// Reads `text`.
pub fn read(text: &str, m: &Matrix) -> Read {
    // Runs of white space are one space: tools wrap long lines ("undefined\n symbol:"), users paste them
    // with indentation.
    let flat = flatten(cut(text, MAX_TEXT));
    let cut = flat.as_str();
    let lower = cut.to_ascii_lowercase();
    let mut r = Read {
        errors: errors(cut, &lower, m),
        sonames: sonames(cut),
        driver_cuda: driver_cuda(&lower),
        archs: archs(&lower),
        symbol_version: symbol_version(cut),
        pairs: pairs(&lower),
        undefined_symbol: undefined_symbol(cut),
        lower: String::new(),
    };
    r.lower = lower;
    r
}

/// `s` with every run of white space made one space.
fn flatten(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    out
}

/// `s` cut to at most `max` bytes, on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Errors printed in other words than `cudaGetErrorString`'s (older runtimes, wrappers).
const ALIASES: &[(&str, u32)] = &[
    ("all cuda-capable devices are busy or unavailable", 46),
    ("no cuda-capable device is detected", 100),
    ("no cuda-capable is detected", 100),
];

fn errors(text: &str, lower: &str, m: &Matrix) -> Vec<ErrorRef> {
    let mut out: Vec<ErrorRef> = Vec::new();
    let mut add = |value: u32, form: String, strong: bool| {
        if let Some(e) = out.iter_mut().find(|e| e.value == value) {
            e.strong |= strong;
        } else {
            out.push(ErrorRef { value, form, strong });
        }
    };
    // Names: `cudaErrorInsufficientDriver`, `CUDA_ERROR_STUB_LIBRARY` (as whole words).
    static WORD: OnceLock<Regex> = OnceLock::new();
    for w in re(&WORD, r"[A-Za-z_][A-Za-z0-9_]*").find_iter(text) {
        let w = w.as_str();
        if !(w.starts_with("cudaError") || w.starts_with("CUDA_ERROR_") || w == "cudaSuccess") {
            continue;
        }
        if let Some(e) = m
            .errors
            .iter()
            .find(|e| e.name == w || e.driver_name.as_deref() == Some(w))
        {
            add(e.value, w.to_string(), true);
        }
    }
    // Numbers in the forms tools print them.
    static NUM: OnceLock<Regex> = OnceLock::new();
    let num = re(
        &NUM,
        concat!(
            r"\(([0-9]{1,4}) vs\. 0\)",   // CHECK_EQ(error, cudaSuccess)
            r"|\[([0-9]{1,4})\] call to", // Numba's CudaAPIError
            r"|cudaapierror: \[([0-9]{1,4})\]",
            r"|code=([0-9]{1,4})\(",                                  // checkCudaErrors
            r"|(?:cuda )?error(?: code)?[ :=#]+([0-9]{1,4})(?-u:\b)", // error 804 / error: 999
            r"|returned (?:error )?\(?([0-9]{1,4})\)?",               // cudaGetDeviceCount returned 35
            r"|(?:cuinit|cudagetdevicecount|cudasetdevice)[a-z()]*[ :]+(?:failed[ :]+)?([0-9]{1,4})(?-u:\b)",
            r"|cuda_error_[a-z_]+ \(([0-9]{1,4})\)",
            r"|status[ :=]+([0-9]{1,4})(?-u:\b)",
            r"|err(?:or)?=([0-9]{1,4})(?-u:\b)",
        ),
    );
    // NVML's, the container toolkit's and the kernel log's numbers are their own, not CUDA's.
    let foreign = ["nvidia-container-cli", "nvml", "xid"]
        .iter()
        .any(|w| lower.contains(w));
    for c in num.captures_iter(lower).filter(|_| !foreign) {
        let Some(g) = c.iter().skip(1).flatten().next() else {
            continue;
        };
        let Ok(value) = g.as_str().parse::<u32>() else {
            continue;
        };
        if m.errors.iter().any(|e| e.value == value) {
            let whole = c.get(0).map_or("", |w| w.as_str());
            add(value, whole.to_string(), !whole.starts_with("status"));
        }
    }
    // A number alone (`cudadiag explain 209`).
    if let Ok(value) = text.trim().parse::<u32>()
        && m.errors.iter().any(|e| e.value == value)
    {
        add(value, value.to_string(), true);
    }
    // Messages `cudaGetErrorString` prints. A short one ("unknown error", "initialization error") is CUDA's
    // only in a CUDA context: NVML and the container toolkit print the same words of their own.
    let cuda_context = (lower.contains("cuda") || lower.contains("gpu"))
        && !lower.contains("nvml")
        && !lower.contains("nvidia-container-cli");
    for e in &m.errors {
        if let Some(msg) = e.message.as_deref() {
            let msg = msg.trim().trim_end_matches('.').to_ascii_lowercase();
            let whole = lower.trim().trim_end_matches('.') == msg;
            if msg.len() >= 12 && (msg.len() >= 24 || cuda_context || whole) && lower.contains(&msg) {
                add(e.value, format!("\"{msg}\""), true);
            }
        }
    }
    // The same errors in the words other tools print them.
    for (words, value) in ALIASES {
        if lower.contains(words) {
            add(*value, format!("\"{words}\""), true);
        }
    }
    let only_success = out.iter().all(|e| e.value == 0);
    if !only_success {
        out.retain(|e| e.value != 0);
    }
    out.sort_by_key(|e| !e.strong);
    out
}

/// Library names as a tool prints them: `libcudart.so.12`, `libcudnn_ops.so.9.1.0`, `'libcudnn.so.8'`,
/// and torch's glob `libcublas.so.*[0-9]` (cut to `libcublas.so`).
pub fn sonames(text: &str) -> Vec<String> {
    static SO: OnceLock<Regex> = OnceLock::new();
    let so = re(&SO, r"lib[A-Za-z0-9_+-]+\.so(?:\.[0-9]+)*");
    let mut out: Vec<String> = Vec::new();
    for m in so.find_iter(text) {
        if out.len() == MAX_NAMES {
            break;
        }
        // `libfoo.so.1.2` inside a longer word (`xlibfoo.so`) is not a name of its own.
        if m.start() > 0 && text.as_bytes()[m.start() - 1].is_ascii_alphanumeric() {
            continue;
        }
        let name = m.as_str().to_string();
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// `found version 10010` (torch's driver check: the driver's `cudaDriverGetVersion`), `CUDA driver version
/// 12.2`, `driver supports up to CUDA 11.4`.
fn driver_cuda(lower: &str) -> Option<(u32, u32)> {
    static FOUND: OnceLock<Regex> = OnceLock::new();
    let found = re(&FOUND, r"found version ([0-9]{4,6})(?-u:\b)");
    if let Some(v) = found.captures(lower).and_then(|c| c.get(1)) {
        let n: u32 = v.as_str().parse().ok()?;
        return Some((n / 1000, (n % 1000) / 10));
    }
    None
}

/// `sm_120`, `sm_90a`, `compute_89`, `compute capability 9.0`, `capability sm_120`.
fn archs(lower: &str) -> Vec<u32> {
    static ARCH: OnceLock<Regex> = OnceLock::new();
    let arch = re(
        &ARCH,
        r"(?-u:\b)(?:sm|compute)_([0-9]{2,3})[af]?(?-u:\b)|compute capability:? ?([0-9]{1,2})\.([0-9])(?-u:\b)",
    );
    let mut out = Vec::new();
    for c in arch.captures_iter(lower) {
        let v = if let Some(a) = c.get(1) {
            a.as_str().parse().ok()
        } else {
            match (c.get(2), c.get(3)) {
                (Some(ma), Some(mi)) => ma
                    .as_str()
                    .parse::<u32>()
                    .ok()
                    .zip(mi.as_str().parse::<u32>().ok())
                    .map(|(a, b)| a * 10 + b),
                _ => None,
            }
        };
        if let Some(v) = v
            && !out.contains(&v)
        {
            out.push(v);
        }
    }
    out
}

/// `__nvJitLinkComplete_12_4` → ("nvJitLink", 12, 4): NVIDIA versions the entry points a release adds with
/// the release in the name, so a library older than that release lacks the symbol.
fn symbol_version(text: &str) -> Option<(String, u32, u32)> {
    static SYM: OnceLock<Regex> = OnceLock::new();
    let sym = re(
        &SYM,
        r"_{1,2}(nvJitLink|nvrtc|cu[a-zA-Z]*)[A-Za-z]*_([0-9]{2})_([0-9]{1,2})(?-u:\b)",
    );
    let c = sym.captures(text)?;
    Some((
        c.get(1)?.as_str().to_string(),
        c.get(2)?.as_str().parse().ok()?,
        c.get(3)?.as_str().parse().ok()?,
    ))
}

/// `undefined symbol: ncclCommRegister` → `ncclCommRegister`.
fn undefined_symbol(text: &str) -> Option<String> {
    static SYM: OnceLock<Regex> = OnceLock::new();
    let sym = re(&SYM, r"undefined symbol:? ([A-Za-z_][A-Za-z0-9_]*)");
    Some(sym.captures(text)?.get(1)?.as_str().to_string())
}

fn triple(s: &str) -> Option<(u32, u32, u32)> {
    let parts: Vec<u32> = s
        .split(['.', ',', ' '])
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect::<Option<Vec<u32>>>()?;
    match parts.as_slice() {
        // `8907` (cuDNN's integer), `120205` (cuBLAS's), `12020` (the runtime's).
        [n] if *n >= 100_000 => Some((n / 10_000, (n / 100) % 100, n % 100)),
        [n] if *n >= 10_000 => Some((n / 1000, (n / 10) % 100, n % 10)),
        [n] if *n >= 1000 => Some((n / 1000, (n / 100) % 10, n % 100)),
        [a] => Some((*a, 0, 0)),
        [a, b] => Some((*a, *b, 0)),
        [a, b, c, ..] => Some((*a, *b, *c)),
        [] => None,
    }
}

/// Compiled-versus-loaded pairs in the forms XLA, torch and JAX print them.
fn pairs(lower: &str) -> Vec<VersionPair> {
    static XLA: OnceLock<Regex> = OnceLock::new();
    static TORCH: OnceLock<Regex> = OnceLock::new();
    static JAX: OnceLock<Regex> = OnceLock::new();
    static JAX_OLD: OnceLock<Regex> = OnceLock::new();
    let mut out = Vec::new();
    let mut push = |library: &str, compiled: Option<(u32, u32, u32)>, loaded: Option<(u32, u32, u32)>| {
        if let (Some(compiled), Some(loaded)) = (compiled, loaded) {
            out.push(VersionPair {
                library: library.to_string(),
                compiled,
                loaded,
            });
        }
    };
    // XLA / TensorFlow: "Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0".
    let xla = re(
        &XLA,
        r"loaded runtime ([a-z]+) library: ([0-9.]+?)\.? but source was compiled with:? ([0-9.]+?)\.?(?:[^0-9.]|$)",
    );
    for c in xla.captures_iter(lower) {
        push(&c[1], triple(&c[3]), triple(&c[2]));
    }
    // torch: "cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found runtime
    // version (8, 9, 2)".
    let torch = re(
        &TORCH,
        r"(cudnn) version incompatibility: pytorch was compiled +against \(([0-9, ]+)\) but (?:found runtime version|linked against) \(([0-9, ]+)\)",
    );
    for c in torch.captures_iter(lower) {
        push(&c[1], triple(&c[2]), triple(&c[3]));
    }
    // JAX ≥ 0.4.24: "Outdated cuDNN installation found. Version JAX was built against: 8907 … Installed
    // version: 8600"; older: "Found cuDNN version 8700, but JAX was built against version 8800".
    let jax = re(
        &JAX,
        r"outdated ([a-z]+) installation found\.?[^0-9]*?built against:? ([0-9]+)(?s:.)*?installed version:? ([0-9]+)",
    );
    for c in jax.captures_iter(lower) {
        push(&c[1], triple(&c[2]), triple(&c[3]));
    }
    let jax_old = re(
        &JAX_OLD,
        r"found ([a-z]+) version ([0-9]+), but jax was built against version ([0-9]+)",
    );
    for c in jax_old.captures_iter(lower) {
        push(&c[1], triple(&c[3]), triple(&c[2]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<u32> {
        let m = Matrix::bundled().unwrap();
        read(text, &m).errors.iter().map(|e| e.value).collect()
    }

    #[test]
    fn error_numbers_in_every_form() {
        assert_eq!(
            values(
                "Check failed: error == cudaSuccess (35 vs. 0)  CUDA driver version is insufficient for CUDA runtime version"
            ),
            [35]
        );
        assert_eq!(
            values(
                "numba.cuda.cudadrv.driver.CudaAPIError: [34] Call to cuInit results in CUDA_ERROR_STUB_LIBRARY"
            ),
            [34]
        );
        assert_eq!(values("cuInit failed: error 804"), [804]);
        assert_eq!(
            values(
                "CUDA error at main.cu:12 code=35(cudaErrorInsufficientDriver) \"cudaGetDeviceCount(&n)\""
            ),
            [35]
        );
        assert_eq!(
            values("Error 804: forward compatibility was attempted on non supported HW"),
            [804]
        );
        assert_eq!(values("cudaGetDeviceCount returned 100"), [100]);
        assert_eq!(values("cudaSuccess"), [0]);
        // Near misses: numbers that are not errors.
        assert!(values("loaded 35 files in 0 seconds").is_empty());
        assert!(values("libcudart.so.12: cannot open shared object file").is_empty());
    }

    #[test]
    fn versions_and_architectures_carried_in_the_message() {
        let m = Matrix::bundled().unwrap();
        let r = read(
            "The NVIDIA driver on your system is too old (found version 10010).",
            &m,
        );
        assert_eq!(r.driver_cuda, Some((10, 1)));
        let r = read(
            "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation. The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
            &m,
        );
        assert_eq!(r.archs[0], 120);
        assert!(r.archs.contains(&90));
        let r = read(
            "undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12",
            &m,
        );
        assert_eq!(r.symbol_version, Some(("nvJitLink".into(), 12, 4)));
        let r = read(
            "Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0.  CuDNN library needs to have matching major version",
            &m,
        );
        assert_eq!(
            r.pairs,
            [VersionPair {
                library: "cudnn".into(),
                compiled: (8, 6, 0),
                loaded: (8, 5, 0)
            }]
        );
        let r = read(
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found runtime version (8, 9, 2).",
            &m,
        );
        assert_eq!((r.pairs[0].compiled, r.pairs[0].loaded), ((9, 1, 0), (8, 9, 2)));
        let r = read(
            "Outdated cuDNN installation found.\nVersion JAX was built against: 8907\nMinimum supported: 9100\nInstalled version: 8600",
            &m,
        );
        assert_eq!((r.pairs[0].compiled, r.pairs[0].loaded), ((8, 9, 7), (8, 6, 0)));
        assert_eq!(
            read(
                "TensorFlow was not built with CUDA kernel binaries compatible with compute capability 9.0.",
                &m
            )
            .archs,
            [90]
        );
    }

    #[test]
    fn sonames_and_globs() {
        assert_eq!(
            sonames(
                "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}"
            ),
            [
                "libcudnn_ops.so.9.1.0",
                "libcudnn_ops.so.9.1",
                "libcudnn_ops.so.9",
                "libcudnn_ops.so"
            ]
        );
        assert_eq!(
            sonames("ValueError: libcublas.so.*[0-9] not found in the system path"),
            ["libcublas.so"]
        );
        assert!(sonames("xlibfoo.so.1").is_empty());
    }

    #[test]
    fn a_huge_paste_is_cut_not_refused() {
        let m = Matrix::bundled().unwrap();
        let text = format!("{}é libcudart.so.12", "x".repeat(MAX_TEXT - 1));
        let r = read(&text, &m);
        assert!(r.lower.len() <= MAX_TEXT);
        assert!(r.sonames.is_empty());
    }
}
