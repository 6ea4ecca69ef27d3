//! The recognisers: each tool's messages, and what each points at. A recogniser reads the typed values of
//! `read.rs` (an error number, a library's CUDA release, a compiled-versus-loaded pair) or a phrase only one
//! tool prints, and votes for a cause with a score (80 and more: the text names it; 50 to 79: likely, another
//! is plausible; below: possible), a reason and the check that tells it apart. `rank` (mod.rs) merges the
//! votes. The phrases are the tools' own (PyTorch's `torch/cuda/__init__.py`, XLA's `cuda_dnn.cc`, the NVIDIA
//! Container Toolkit, nvidia-smi, the kernel module's `NVRM:` lines); docs/explain.md lists them with sources.

use super::read::Read;
use super::sonames::{self, Identified, Kind};
use super::vote::{Hit, resolve};
use crate::matrix::Matrix;

fn hit(slug: &'static str, score: u32, why: impl Into<String>, check: impl Into<String>) -> Hit {
    Hit {
        slug,
        score,
        why: why.into(),
        check: check.into(),
        libraries: Vec::new(),
    }
}

/// A phrase rule: every needle (lower case) is in the text → a vote.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Phrase {
    all: Vec<String>,
    slug: String,
    score: u32,
    why: String,
    check: String,
}

const DOCTOR: &str =
    "`cudadiag doctor` on the machine (it reads the driver, the modules and the device nodes)";

/// The phrase table, `data/explain_phrases.toml` (compiled in, checked by the tests).
pub(super) const PHRASES_TOML: &str = include_str!("../../data/explain_phrases.toml");

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PhraseFile {
    meta: Meta,
    phrase: Vec<Phrase>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    schema_version: u32,
}

/// Parses and checks a phrase table: schema 1, every slug a finding or a cause, every needle lower case and
/// not empty, every score at most 100.
pub(super) fn parse_phrases(text: &str) -> Result<Vec<Phrase>, String> {
    let f: PhraseFile = toml::from_str(text).map_err(|e| e.to_string())?;
    if f.meta.schema_version != 1 {
        return Err(format!("schema_version {} is not 1", f.meta.schema_version));
    }
    for p in &f.phrase {
        if resolve(&p.slug).is_none() {
            return Err(format!("{}: neither a finding nor a cause", p.slug));
        }
        if p.all.is_empty() || p.all.iter().any(|n| n.is_empty() || n.to_ascii_lowercase() != *n) {
            return Err(format!("{:?}: needles must be lower case and not empty", p.all));
        }
        if p.score > 100 {
            return Err(format!("{:?}: score {} above 100", p.all, p.score));
        }
    }
    Ok(f.phrase)
}

/// The phrases; empty only if the build embedded a broken table, which `the_phrase_table_is_valid` rules out.
fn phrases() -> &'static [Phrase] {
    static P: std::sync::OnceLock<Vec<Phrase>> = std::sync::OnceLock::new();
    P.get_or_init(|| parse_phrases(PHRASES_TOML).unwrap_or_default())
}

/// Whether the text comes from inside a container (the recognisers that differ there read it).
fn in_container(t: &str) -> bool {
    [
        "docker",
        "container",
        "kubernetes",
        "k8s",
        " pod",
        "podman",
        "(container)",
    ]
    .iter()
    .any(|w| t.contains(w))
}

/// Every vote the text gives.
pub(super) fn recognise(r: &Read, m: &Matrix, out: &mut Vec<Hit>) {
    let t = r.lower.as_str();
    for p in phrases() {
        if p.all.iter().all(|n| t.contains(n.as_str()))
            && let Some((slug, _, _)) = resolve(&p.slug)
        {
            out.push(hit(slug, p.score, p.why.as_str(), p.check.as_str()));
        }
    }
    if t.contains("such as nouveau") {
        // The installer lists nouveau among the possible causes: no sign that it is loaded.
        out.retain(|h| h.slug != "nouveau-loaded");
    }
    errors(r, m, out);
    libraries(r, out);
    symbols(r, out);
    versions(r, out);
    messages(t, m, out);
}

/// The CUDA errors the text names, each with the findings that predict it (the matrix's list, in its order:
/// the most common cause first).
fn errors(r: &Read, m: &Matrix, out: &mut Vec<Hit>) {
    let t = r.lower.as_str();
    let container = in_container(t);
    for (i, e) in r.errors.iter().enumerate() {
        let base: u32 = if e.strong { 72 } else { 58 };
        let base = base.saturating_sub(6 * i as u32);
        let form = &e.form;
        match e.value {
            34 => out.push(hit("stub-libcuda", 92, format!("error 34 ({form}): the libcuda.so.1 loaded is the toolkit's stub"),
                "`ldconfig -p | grep libcuda.so.1`; `echo $LD_LIBRARY_PATH` (a `stubs/` directory in it?)")),
            804 => out.push(hit("compat-libcuda-unsupported", 88, format!("error 804 ({form}): the forward-compatibility libcuda does not run on this GPU (a GeForce, or a driver branch it does not support)"),
                "`ls /usr/local/cuda/compat`; `echo $LD_LIBRARY_PATH`; `nvidia-smi -q | grep -i 'product brand'`")),
            802 => out.push(hit("fabric-manager-not-running", 88, format!("error 802 ({form}): on NVSwitch systems, Fabric Manager not running"),
                "`systemctl status nvidia-fabricmanager`")),
            999 if container => {
                out.push(hit("container-lost-device-rules", 62, format!("error 999 ({form}) in a container: it lost its device rules after a systemd reload on the host"),
                    "does a new container work? then recreate this one"));
                out.push(hit("nvidia-uvm-missing", 52, format!("error 999 ({form}): nvidia-uvm or /dev/nvidia-uvm missing"), "`ls -l /dev/nvidia-uvm`"));
            }
            200 => {
                out.push(hit("driver-insufficient", 66, format!("error 200 ({form}): the driver cannot read the code: a fatbin compressed with zstd (nvcc 12.8 and later) or built by a newer CUDA than the driver supports"),
                    "`nvidia-smi` (driver version) against the CUDA that built the program; `cudadiag inspect` on it (compression, toolkit)"));
                out.push(hit("malformed-device-code", 50, format!("error 200 ({form}): or the device code itself is damaged"), "`cudadiag inspect` on the program"));
            }
            209 | 98 => out.push(hit("no-kernel-image", 90, format!("error {} ({form}): no code in the binary runs on this GPU", e.value),
                "`cudadiag inspect --gpu X.Y` on the program (its SASS and PTX against the GPU)")),
            222 => out.push(hit("ptx-too-new", 88, format!("error 222 ({form}): the PTX is newer than the driver's JIT"),
                "`nvidia-smi` (CUDA Version) against the toolkit that built the PTX; `cudadiag inspect` on the program")),
            _ => {
                let Some(row) = m.errors.iter().find(|x| x.value == e.value) else {
                    continue;
                };
                for (j, slug) in row.findings.iter().enumerate() {
                    let Some(slug) = resolve(slug).map(|s| s.0) else {
                        continue;
                    };
                    let score = if j == 0 { base } else { base.saturating_sub(18 + 5 * j as u32) };
                    let meaning = row.meaning.as_deref().unwrap_or(row.name.as_str());
                    out.push(hit(slug, score, format!("CUDA error {} ({form}): {meaning}", e.value),
                        "`cudadiag explain --check PROGRAM` tells these apart on the machine"));
                }
            }
        }
    }
}

/// What frameworks print before a library they could not load.
const SAID_BEFORE: &[&str] = &[
    "could not load dynamic library",
    "unable to load any of",
    "could not load library",
    "failure finding",
    "failed to load ",
    "couldn't open cuda library",
];

/// Whether the words after a library name say it was not found (`libcublas.so.*[0-9] not found in the system
/// path`, `libcudnn.so.8 is not found`), not that something in it was (`libc.so.6: version `GLIBC_2.34' not
/// found`).
fn said_not_found(after: &str) -> bool {
    let rest = after.trim_start_matches(|c: char| {
        matches!(c, '.' | '*' | '[' | ']' | '0'..='9' | '-' | '\'' | '"' | ' ')
    });
    ["not found", "is not found", "was not found"]
        .iter()
        .any(|w| rest.starts_with(w))
}

/// `t[from..to]`, both ends moved back to character boundaries (a pasted text is not ASCII).
fn window(t: &str, from: usize, to: usize) -> &str {
    let fix = |mut i: usize| {
        i = i.min(t.len());
        while !t.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    &t[fix(from)..fix(to).max(fix(from))]
}

/// The libraries the loader (or a framework's loader) failed to load: the names just before `cannot open
/// shared object file`, else those a framework says it could not load.
fn failed(r: &Read) -> Vec<String> {
    let t = r.lower.as_str();
    let mut direct = Vec::new();
    let mut said = Vec::new();
    for s in &r.sonames {
        let low = s.to_ascii_lowercase();
        let mut from = 0;
        while let Some(at) = t[from..].find(&low) {
            let start = from + at;
            let end = start + low.len();
            from = end;
            let after = window(t, end, end + 48);
            let before = window(t, start.saturating_sub(48), start);
            if before.ends_with("version `") {
                // "version `libcudart.so.12' not found": a symbol version, the library was loaded.
                continue;
            }
            if after
                .trim_start_matches(['\'', '"', ':', ' '])
                .starts_with("cannot open shared object file")
                || after.starts_with(": no such file")
            {
                if !direct.contains(s) {
                    direct.push(s.clone());
                }
            } else if (SAID_BEFORE.iter().any(|w| before.contains(w)) || said_not_found(after))
                && !said.contains(s)
            {
                said.push(s.clone());
            }
        }
    }
    if direct.is_empty() { said } else { direct }
}

fn libraries(r: &Read, out: &mut Vec<Hit>) {
    let failed = failed(r);
    if failed.is_empty() {
        return;
    }
    let t = r.lower.as_str();
    let ids: Vec<Identified> = failed.iter().filter_map(|s| sonames::identify(s)).collect();
    let names = failed.join(", ");
    if !ids.is_empty() && ids.iter().all(|i| i.kind == Kind::TensorRt) {
        let mut h = hit(
            "library-not-found",
            80,
            format!("the loader did not find TensorRT ({names})"),
            "`pip list | grep -i tensorrt`; `ldconfig -p | grep nvinfer`",
        );
        h.libraries = ids;
        out.push(h);
        out.push(hit("tensorrt-optional", 62, "TensorFlow and ONNX Runtime use TensorRT only when asked: without TF-TRT or the TensorRT provider the warning is harmless",
            "ignore it unless you use TF-TRT or the TensorRT provider"));
        return;
    }
    let driver: Vec<Identified> = ids.iter().filter(|i| i.kind == Kind::Driver).cloned().collect();
    if let Some(d) = driver.first() {
        if d.soname.starts_with("libcuda.") {
            out.push(hit(
                "libcuda-not-found",
                82,
                format!(
                    "{} is the driver's library, not the toolkit's: the loader did not find it",
                    d.soname
                ),
                "`ldconfig -p | grep libcuda.so.1`; `cudadiag doctor`",
            ));
            out.push(hit(
                "no-driver",
                55,
                "no NVIDIA driver installed gives the same",
                DOCTOR,
            ));
            if in_container(t) {
                out.push(hit("container-compute-missing", 60, "in a container, libcuda.so.1 is mounted by the container toolkit only with the compute capability",
                    "`echo $NVIDIA_DRIVER_CAPABILITIES` in the container; `cudadiag inspect --image`"));
            }
        } else if d.soname.starts_with("libnvidia-ml.") {
            out.push(hit(
                "no-driver",
                72,
                format!(
                    "{} comes with the driver: no driver, or not on the loader's path",
                    d.soname
                ),
                DOCTOR,
            ));
        }
    }
    let cuda: Vec<Identified> = ids.into_iter().filter(|i| i.kind != Kind::Driver).collect();
    if !cuda.is_empty() || (driver.is_empty() && !failed.is_empty()) {
        let what: Vec<String> = cuda
            .iter()
            .map(|i| {
                let rel = if !i.releases.is_empty() {
                    i.releases.clone()
                } else if !i.cuda.is_empty() {
                    format!(
                        "CUDA {}",
                        i.cuda.iter().map(u32::to_string).collect::<Vec<_>>().join(" or ")
                    )
                } else {
                    String::new()
                };
                if rel.is_empty() {
                    format!("{} ({})", i.soname, i.component)
                } else {
                    format!("{} ({} of {rel})", i.soname, i.component)
                }
            })
            .collect();
        let why = if what.is_empty() {
            format!("the loader did not find {names}")
        } else {
            format!("the loader did not find {}", what.join(", "))
        };
        let mut h = hit(
            "library-not-found",
            86,
            why,
            "`cudadiag explain --check PROGRAM` (the loader's search, step by step); `pip list | grep -i nvidia`",
        );
        h.libraries = cuda;
        out.push(h);
    }
}

/// `undefined symbol:` — whose symbol says who is out of step.
fn symbols(r: &Read, out: &mut Vec<Hit>) {
    let t = r.lower.as_str();
    if !t.contains("undefined symbol")
        && !t.contains("symbol lookup error")
        && !t.contains("not defined in file")
    {
        return;
    }
    const FRAMEWORK: &[&str] = &[
        "_zn5torch",
        "_znk5torch",
        "_zn3c10",
        "_znk3c10",
        "_zn2at",
        "_znk2at",
        "_zn6caffe2",
        "_zn3tsl",
        "_zn10tensorflow",
        "_zn3xla",
    ];
    if FRAMEWORK.iter().any(|f| t.contains(f)) {
        out.push(hit("framework-extension-abi-mismatch", 88,
            "the missing symbol is a C++ symbol of the framework itself (torch/c10/at…): the extension was built against another version of it",
            "the extension's build (`pip show EXT`, its wheel tag or `+torchX.Y`) against `pip show torch`; rebuild or reinstall it for this torch"));
        out.push(hit(
            "symbol-version-missing",
            40,
            "an undefined symbol",
            "`cudadiag explain --check` on the extension",
        ));
        return;
    }
    if let Some(sym) = r.undefined_symbol.as_deref().filter(|s| s.starts_with("nccl")) {
        out.push(hit("cuda-library-too-old", 80,
            format!("{sym} is an NCCL entry point: the NCCL loaded is older than the one the framework was built with"),
            "`python -c 'import torch; print(torch.cuda.nccl.version())'`; `pip list | grep nccl`; `echo $LD_LIBRARY_PATH` (another libnccl.so.2 first?)"));
        out.push(hit(
            "symbol-version-missing",
            70,
            format!("the NCCL loaded lacks {sym}"),
            "`cudadiag explain --check` on the framework's library",
        ));
        return;
    }
    if let Some((lib, major, minor)) = &r.symbol_version {
        out.push(hit("symbol-version-missing", 82,
            format!("the symbol carries its release: it needs {lib} {major}.{minor} or newer, and an older {lib} was loaded"),
            format!("which {lib} is loaded: `cudadiag explain --check PROGRAM`, `echo $LD_LIBRARY_PATH` (an older CUDA's lib64 in it?)")));
        out.push(hit(
            "library-shadowed",
            66,
            format!(
                "an older {lib} on LD_LIBRARY_PATH wins over the wheel's (RUNPATH loses to LD_LIBRARY_PATH)"
            ),
            "`echo $LD_LIBRARY_PATH`; run with it unset",
        ));
        return;
    }
    if t.contains("cublasltgetstatusstring") || t.contains("version libcublaslt") {
        out.push(hit(
            "symbol-version-missing",
            78,
            "cuBLAS needs a cuBLASLt of its own release and got an older one",
            "`cudadiag explain --check PROGRAM`",
        ));
        out.push(hit(
            "library-shadowed",
            66,
            "a system cuBLASLt wins over the wheel's",
            "`echo $LD_LIBRARY_PATH`; `ldconfig -p | grep cublasLt`",
        ));
        return;
    }
    out.push(hit(
        "symbol-version-missing",
        66,
        "a library loaded lacks a symbol another needs: two versions mixed",
        "`cudadiag explain --check PROGRAM`",
    ));
    out.push(hit(
        "library-shadowed",
        50,
        "often another copy of the library wins on the search path",
        "`echo $LD_LIBRARY_PATH`",
    ));
}

fn v3(v: (u32, u32, u32)) -> String {
    format!("{}.{}.{}", v.0, v.1, v.2)
}

/// Versions the text carries: the driver's CUDA version, compiled-versus-loaded pairs, architectures.
fn versions(r: &Read, out: &mut Vec<Hit>) {
    if let Some((ma, mi)) = r.driver_cuda {
        out.push(hit("driver-insufficient", 94,
            format!("the driver supports CUDA {ma}.{mi}; the framework's build needs a newer CUDA"),
            "`nvidia-smi` (CUDA Version); install a driver of the build's CUDA, or a build of the driver's CUDA"));
    }
    for p in &r.pairs {
        let name = p.library.clone();
        let (c, l) = (p.compiled, p.loaded);
        if (l.0, l.1) < (c.0, c.1) {
            out.push(hit("cuda-library-too-old", 86,
                format!("{name} {} was loaded, older than the {} it was built with", v3(l), v3(c)),
                format!("which {name} is loaded: `cudadiag import` for Python, `echo $LD_LIBRARY_PATH`, `pip list | grep -i {name}`")));
            out.push(hit("library-shadowed", 58, format!("an older {name} on the search path (LD_LIBRARY_PATH, the system's) wins over the one installed with the framework"),
                "`echo $LD_LIBRARY_PATH`"));
        } else if l.0 != c.0 {
            out.push(hit(
                "library-shadowed",
                72,
                format!(
                    "{name} {} was loaded, of another major than the {} it was built with",
                    v3(l),
                    v3(c)
                ),
                "`echo $LD_LIBRARY_PATH`; `pip list | grep -i {name}`",
            ));
            out.push(hit(
                "cuda-library-too-old",
                45,
                format!("{name} of another major"),
                "`pip list | grep -i nvidia`",
            ));
        }
    }
    if let Some(gpu) = r.archs.first()
        && r.lower
            .contains("not compatible with the current pytorch installation")
    {
        let built: Vec<String> = r.archs[1..].iter().map(|a| format!("sm_{a}")).collect();
        let why = if built.is_empty() {
            format!("the GPU is sm_{gpu}, which this torch build has no kernels for")
        } else {
            format!(
                "the GPU is sm_{gpu}; the build carries {}: SASS runs only on its own major, so none runs here",
                built.join(" ")
            )
        };
        out.push(hit("no-kernel-image", 90, why, "`python -c 'import torch; print(torch.cuda.get_arch_list())'`; install a build for the GPU (a newer CUDA's wheel)"));
    }
}

/// The matrix's loader, NVML and container messages (`[[message]]`), below the recognisers above: their
/// patterns are shorter and fit more texts.
fn messages(t: &str, m: &Matrix, out: &mut Vec<Hit>) {
    let said: Vec<&crate::matrix::MessageRow> = m
        .messages
        .iter()
        .filter(|msg| t.contains(&msg.pattern.to_ascii_lowercase()))
        .collect();
    for msg in &said {
        let lower = msg.pattern.to_ascii_lowercase();
        if said.iter().any(|o| {
            let other = o.pattern.to_ascii_lowercase();
            other.len() > lower.len() && other.contains(&lower)
        }) {
            continue;
        }
        for (j, slug) in msg.findings.iter().enumerate() {
            let Some(slug) = resolve(slug).map(|s| s.0) else {
                continue;
            };
            let score = if j == 0 { 60 } else { 42 };
            out.push(hit(
                slug,
                score,
                msg.meaning.clone(),
                "`cudadiag explain --check PROGRAM`",
            ));
        }
    }
}
