//! Findings from the live probe: `probe-failed`, `probe-disagrees`, and `libcuda-not-found` when the probe saw
//! `dlopen("libcuda.so.1")` fail; confirmations added to the static findings the probe bears out.
//!
//! Pure, like every rule: it reads the probe's facts and the findings the static rules produced for the same
//! facts. The comparison goes through [`expectations`], the catalogue's table from finding slug to the CUDA results that
//! finding predicts at one stage of the probe; so it does not depend on how the static rules are written, only
//! on their public slugs. A static finding whose prediction the probe observes gets a "confirmed by the live
//! probe" line; one the probe contradicts, and a probe failure no static finding predicted, give
//! `probe-disagrees`: a bug in cudadiag's rules or in its matrix, since both looked at the same machine.
//! Disagreements are only reported when host facts were collected: without them the static rules could not
//! have predicted anything about the driver or the GPU.

use crate::facts::Facts;
use crate::facts::probe::{Call, CudaError, ProbeFacts, ProbeOutcome};
use crate::findings::{CATALOGUE, Code, Expect, Finding, Stage};

/// A prediction: findings with this slug expect one of these results at this stage (a row of a catalogue
/// entry's `probe`, [`crate::findings::CodeInfo::probe`]).
#[derive(Debug, Clone, Copy)]
pub struct Expectation {
    /// Public finding slug.
    pub slug: &'static str,
    /// Where the result shows.
    pub stage: Stage,
    /// Any of these confirms the finding.
    pub results: &'static [Expect],
}

use Expect::{Code as C, NotLoaded};

/// What each static finding predicts the driver will say: every catalogue entry's `probe` rows, in code order.
/// A slug may have rows for several stages; a finding about a binary (`path` set) is compared with that
/// binary's module loads.
pub fn expectations() -> impl Iterator<Item = Expectation> {
    CATALOGUE.iter().flat_map(|c| {
        c.probe.iter().map(|(stage, results)| Expectation {
            slug: c.slug,
            stage: *stage,
            results,
        })
    })
}

/// Findings that predict a failure that may not happen: `ptx-jit-cache-only` fails only when the JIT cache
/// lacks the compile, which no file tells. The probe succeeding does not contradict them; failing confirms.
const MAY_NOT_FAIL: &[&str] = &["ptx-jit-cache-only"];

/// One result the probe observed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Observation {
    stage: Stage,
    /// The binary, for module loads.
    binary: Option<String>,
    /// `None`: the stage succeeded.
    failure: Option<Expect>,
    /// What failed, in a few words (`cuInit returned 34 CUDA_ERROR_STUB_LIBRARY`).
    summary: String,
    /// The fact, as a "because" line.
    evidence: String,
}

fn rows(slug: &str) -> impl Iterator<Item = Expectation> + '_ {
    expectations().filter(move |e| e.slug == slug)
}

/// Slugs whose prediction includes `result` at `stage`.
fn slugs_predicting(stage: Stage, result: Expect) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = expectations()
        .filter(|e| e.stage == stage && e.results.contains(&result))
        .map(|e| e.slug)
        .collect();
    v.dedup();
    v
}

fn describe(result: Expect) -> String {
    match result {
        NotLoaded => "libcuda.so.1 not loadable".to_string(),
        C(c) => match crate::probe::cuda::known(c) {
            Some((name, _)) => format!("{c} {name}"),
            None => c.to_string(),
        },
    }
}

fn error_code(r: &Option<CudaError>) -> Option<i32> {
    r.as_ref().map(|r| r.code)
}

/// What the probe observed, stage by stage. Later stages are only observed when the driver stage passed (their
/// failures would be consequences of its failure).
fn observations(p: &ProbeFacts) -> Vec<Observation> {
    let mut out = Vec::new();
    let Some(d) = &p.driver else {
        return out;
    };
    let driver_failure = if let Some(e) = &d.library.error {
        Some((
            NotLoaded,
            format!("dlopen(\"{}\") failed: {e}", d.library.requested),
        ))
    } else if let Some(init) = &d.init {
        match error_code(&init.result) {
            Some(0) if d.device_count == Some(0) => {
                Some((C(100), "cuDeviceGetCount returned 0 devices".to_string()))
            }
            Some(0) => None,
            Some(c) => Some((C(c), init.describe())),
            // cuInit missing from the library: not a CUDA result; reported by `failures` below.
            None => return out,
        }
    } else {
        return out;
    };
    let loaded = d
        .library
        .loaded_from
        .as_deref()
        .map(|f| format!(" (libcuda.so.1 loaded from {f})"))
        .unwrap_or_default();
    match driver_failure {
        Some((f, ev)) => {
            out.push(Observation {
                stage: Stage::Driver,
                binary: None,
                failure: Some(f),
                summary: ev.clone(),
                evidence: format!("live probe: {ev}{loaded}"),
            });
            return out;
        }
        None => out.push(Observation {
            stage: Stage::Driver,
            binary: None,
            failure: None,
            summary: String::new(),
            evidence: format!(
                "live probe: cuInit succeeded, {} device(s){loaded}",
                d.device_count.unwrap_or(0)
            ),
        }),
    }
    if let Some(rt) = &p.runtime
        && let Some(call) = &rt.get_device_count
        && let Some(code) = error_code(&call.result)
    {
        out.push(Observation {
            stage: Stage::Runtime,
            binary: None,
            failure: (code != 0).then_some(C(code)),
            summary: format!("{} through libcudart", call.describe()),
            evidence: format!(
                "live probe: {} through {}",
                call.describe(),
                rt.library.loaded_from.as_deref().unwrap_or(&rt.library.requested)
            ),
        });
    }
    for m in &p.modules {
        let Some(code) = error_code(&m.result) else {
            continue;
        };
        // A container without kernels (nvcc 13's device-link stub) is never loaded by the runtime under lazy
        // loading: seen live on an H200, where `default` runs although its sm_75 stub gives 209 as data.
        if m.has_kernels == Some(false) {
            continue;
        }
        let what = match m.container {
            Some(i) => format!("fatbin #{i} of {} (file offset 0x{:x})", m.binary, m.offset),
            None => m.binary.clone(),
        };
        let on = format!(
            "device {}{}",
            m.device,
            m.cc.as_deref().map(|c| format!(", cc {c}")).unwrap_or_default()
        );
        let evidence = match &m.result {
            Some(r) if r.code == 0 => format!("live probe: cuModuleLoadDataEx loaded {what} on {on}"),
            Some(r) => format!(
                "live probe: cuModuleLoadDataEx of {what} on {on} returned {}",
                r.describe()
            ),
            None => continue,
        };
        out.push(Observation {
            stage: Stage::Module,
            binary: Some(m.binary.clone()),
            failure: (code != 0).then_some(C(code)),
            summary: format!(
                "the driver refused device code of {} with {}",
                m.binary,
                describe(C(code))
            ),
            evidence,
        });
    }
    out
}

/// Whether a static finding's prediction concerns this observation (same stage; same binary for modules).
fn concerns(f: &Finding, row: &Expectation, o: &Observation) -> bool {
    if row.stage != o.stage {
        return false;
    }
    match o.stage {
        Stage::Module => f.path.is_some() && f.path == o.binary,
        Stage::Driver | Stage::Runtime => true,
    }
}

fn help_for(code: i32) -> &'static str {
    match code {
        34 => {
            "The libcuda.so.1 that loaded is the toolkit's link stub, not the driver: take the `stubs` directory \
               out of LD_LIBRARY_PATH (and out of any RUNPATH or ld.so.conf entry)."
        }
        100 => {
            "The driver sees no usable GPU: check CUDA_VISIBLE_DEVICES, that the GPU is passed into the \
                container (--gpus), the /dev/nvidia* nodes, and `nvidia-smi`."
        }
        803 | 804 => {
            "A forward-compatibility libcuda (cuda-compat, /usr/local/cuda-*/compat) was loaded against a \
                      kernel driver or GPU it does not support: take the compat directory off the loader path."
        }
        209 => {
            "The binary has neither SASS for this GPU nor PTX the driver can compile for it: rebuild with \
                -gencode for this GPU's architecture, or with PTX (code=compute_XY) for JIT."
        }
        222 => {
            "The PTX is newer than this driver's JIT compiler: upgrade the driver, or rebuild with the toolkit \
                the driver supports."
        }
        218 => "The driver's JIT compiler rejected the PTX: see the JIT log above.",
        221 => {
            "The PTX JIT compiler library (libnvidia-ptxjitcompiler.so) is missing: reinstall the driver's user \
                space libraries, or mount them into the container."
        }
        35 => {
            "The libcudart is newer than the driver supports: upgrade the driver, use an older CUDA runtime, or \
               use forward compatibility on a data-center GPU."
        }
        999 => {
            "The driver failed in an unspecified way: check `dmesg` for NVRM or Xid messages, the nvidia-uvm \
                module and /dev/nvidia-uvm, and that the kernel module matches the user-space driver."
        }
        _ => "Look the error up with `cudadiag explain` and check `dmesg` for NVRM or Xid messages.",
    }
}

/// The finding for a failed probe process (timeout, crash, garbage, not started).
fn process_failure(p: &ProbeFacts) -> Option<Finding> {
    if p.outcome == ProbeOutcome::Completed {
        return None;
    }
    let detail = p.detail.as_deref().unwrap_or(p.outcome.as_str());
    let during = p
        .during
        .as_deref()
        .map(|d| format!(" during {d}"))
        .unwrap_or_default();
    let help = match p.outcome {
        ProbeOutcome::TimedOut => format!(
            "The driver did not answer within {} s. A hang in cuInit usually means the GPU or driver is wedged \
             (check `dmesg` for Xid messages, `nvidia-smi`, and that the kernel module matches the user-space \
             driver); on a very slow machine, raise --probe-timeout.",
            p.timeout_s
        ),
        ProbeOutcome::Crashed => "The CUDA library crashed the probe's process: applications will crash the same \
            way. Check which libcuda.so.1 loads (LD_LIBRARY_PATH, ld.so.cache), `dmesg`, and that the kernel \
            module matches the user-space driver."
            .to_string(),
        ProbeOutcome::NotStarted => "cudadiag could not run its own executable as the probe's child; run it \
            from a readable, executable file."
            .to_string(),
        _ => "The probe's child did not report properly; a CUDA library may have written to standard output or \
              exited the process. Rerun with --format json to see what it left."
            .to_string(),
    };
    let mut f = Finding::new(
        Code::ProbeFailed,
        format!("the live probe {}{during}: {detail}", p.outcome.as_str()),
        help,
    )
    .because(format!(
        "probe child ran {} ms under a {} s timeout",
        p.elapsed_ms, p.timeout_s
    ));
    if let Some(d) = &p.driver
        && let Some(lib) = &d.library.loaded_from
    {
        f = f.because(format!("libcuda.so.1 loaded from {lib}"));
    }
    if let Some(s) = &p.stderr_tail {
        f = f.because(format!("probe stderr: {}", s.replace('\n', " | ")));
    }
    Some(f)
}

fn call_failure(what: &str, call: &Call) -> Finding {
    let code = error_code(&call.result);
    Finding::new(
        Code::ProbeFailed,
        format!("live probe: {what}: {}", call.describe()),
        code.map_or(
            "The library lacks a function every CUDA driver exports: it is not a working libcuda.",
            help_for,
        ),
    )
    .because(format!(
        "live probe: {} ({} µs)",
        call.describe(),
        call.elapsed_us
    ))
}

/// `CUDA_ERROR_JIT_COMPILATION_DISABLED`: the driver was told not to JIT-compile PTX.
const JIT_DISABLED: i32 = 223;

/// Self-test failures and calls that could not be made; none of these has a static prediction.
fn failures(p: &ProbeFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(d) = &p.driver else {
        return out;
    };
    if let Some(init) = &d.init
        && init.result.is_none()
    {
        out.push(call_failure("libcuda.so.1 cannot be initialised", init));
    }
    // One finding per kind of failure, naming every device it happened on (8 GPUs, one broken driver: one
    // finding, not eight).
    let mut groups: Vec<(String, Vec<i32>, &crate::facts::probe::SelfTest)> = Vec::new();
    // The self-test kernel is PTX by design (it must run on any GPU), so with `CUDA_DISABLE_PTX_JIT=1` in the
    // probe's environment the driver refuses it with 223: the environment, not the machine. What that means for
    // the inspected program is `ptx-jit-disabled` / `ptx-jit-cache-only`'s to say; a SASS program runs. Seen on
    // the H200 (scripts/verdicts-live.sh): a program running from a warm JIT cache while the probe said
    // probe-failed.
    let jit_refused = |t: &&crate::facts::probe::SelfTest| {
        t.failed_call
            .as_ref()
            .is_some_and(|c| error_code(&c.result) == Some(JIT_DISABLED))
    };
    for t in d.selftests.iter().filter(|t| !t.passed && !jit_refused(t)) {
        let key = match (&t.failed_call, &t.mismatch) {
            (Some(c), _) => format!("{} {:?} {:?}", c.call, error_code(&c.result), c.error),
            (None, Some(_)) => "mismatch".to_string(),
            (None, None) => "incomplete".to_string(),
        };
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(t.device),
            None => groups.push((key, vec![t.device], t)),
        }
    }
    for (_, devices, t) in groups {
        let on = match devices.as_slice() {
            [d] => format!("device {d}"),
            many => format!(
                "devices {}",
                many.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        let mut f = match (&t.failed_call, &t.mismatch) {
            (Some(c), _) => call_failure(&format!("self-test on {on} failed"), c),
            (None, Some(m)) => Finding::new(
                Code::ProbeFailed,
                format!("live probe: the self-test kernel on {on} wrote wrong results: {m}"),
                "The GPU ran the kernel but computed garbage: check `dmesg` for Xid errors and the GPU's health \
                 (`nvidia-smi -q -d ECC,PAGE_RETIREMENT`).",
            ),
            (None, None) => Finding::new(
                Code::ProbeFailed,
                format!("live probe: the self-test on {on} did not complete"),
                "Rerun with --format json to see every call the probe made.",
            ),
        };
        for r in &t.rejected_kernels {
            f = f.because(format!("live probe: kernel rejected: {r}"));
        }
        out.push(f);
    }
    for m in &p.modules {
        if let (None, Some(e)) = (&m.result, &m.error) {
            out.push(Finding::new(
                Code::ProbeFailed,
                format!("live probe: could not load device code of {}: {e}", m.binary),
                "The probe reads the bytes the static inspection located; check that the file is still there and \
                 readable.",
            ).at(&m.binary));
        }
    }
    out
}

/// Adds the probe's findings to `findings` (the static rules' findings for the same facts), and marks the
/// static findings the probe confirms.
pub fn evaluate(facts: &Facts, findings: &mut Vec<Finding>) {
    let Some(p) = &facts.probe else {
        return;
    };
    let static_count = findings.len();
    let compare = facts.host.is_some();
    let mut new = Vec::new();
    new.extend(process_failure(p));
    new.extend(failures(p));

    let obs = observations(p);
    // 1. Every static finding with a prediction: confirmed, contradicted, or not observed.
    for f in findings.iter_mut().take(static_count) {
        let mut observed = Vec::new();
        let mut matched = Vec::new();
        for row in rows(&f.slug) {
            for o in obs.iter().filter(|o| concerns(f, &row, o)) {
                observed.push(o);
                if o.failure.is_some_and(|r| row.results.contains(&r)) {
                    matched.push(o.evidence.clone());
                }
            }
        }
        if !matched.is_empty() {
            for m in matched {
                f.evidence.push(format!("confirmed by the {m}"));
            }
        } else if compare && !observed.is_empty() && !MAY_NOT_FAIL.contains(&f.slug.as_str()) {
            let expected: Vec<String> = rows(&f.slug)
                .flat_map(|r| r.results.iter().map(|x| describe(*x)))
                .collect();
            let mut d = Finding::new(
                Code::ProbeDisagrees,
                format!(
                    "static analysis predicted {} ({}), but the live probe did not see it",
                    f.slug,
                    expected.join(" or ")
                ),
                "This is a bug in cudadiag's rules or in its compatibility matrix: both looked at the same \
                 machine. Please report it with `cudadiag snapshot` output and this report in JSON.",
            )
            .because(format!("static finding {} [{}]: {}", f.slug, f.code, f.message));
            for o in observed {
                d = d.because(o.evidence.clone());
            }
            if let Some(path) = &f.path {
                d = d.at(path);
            }
            new.push(d);
        }
    }
    // 2. Every failure the probe met: explained by a static finding, or reported here (once per stage, binary
    //    and result, with every container and device as evidence).
    let mut unexplained: Vec<(&Observation, Expect, Vec<String>)> = Vec::new();
    for o in &obs {
        let Some(result) = o.failure else { continue };
        let explained = findings
            .iter()
            .take(static_count)
            .any(|f| rows(&f.slug).any(|row| concerns(f, &row, o) && row.results.contains(&result)));
        if explained {
            continue;
        }
        match unexplained
            .iter_mut()
            .find(|(u, r, _)| u.stage == o.stage && u.binary == o.binary && *r == result)
        {
            Some((_, _, ev)) => ev.push(o.evidence.clone()),
            None => unexplained.push((o, result, vec![o.evidence.clone()])),
        }
    }
    for (o, result, evidence) in unexplained {
        let mut predicted_by = slugs_predicting(o.stage, result);
        if result == NotLoaded {
            predicted_by.retain(|s| *s != "libcuda-not-found");
        }
        let mut f = match result {
            NotLoaded => Finding::new(
                Code::LibcudaNotFound,
                "the driver library libcuda.so.1 cannot be loaded",
                "Install the NVIDIA driver's user-space libraries (or, in a container, run it with the NVIDIA \
                 container runtime so they are mounted), and check LD_LIBRARY_PATH and `ldconfig -p | grep \
                 libcuda`.",
            ),
            C(code) => Finding::new(
                Code::ProbeFailed,
                format!("live probe: {}", o.summary),
                help_for(code),
            ),
        };
        for e in &evidence {
            f = f.because(e.clone());
        }
        if !predicted_by.is_empty() {
            f = f.because(format!(
                "static checks that predict this: {}",
                predicted_by.join(", ")
            ));
        }
        if let Some(b) = &o.binary {
            f = f.at(b);
        }
        new.push(f);
        if compare {
            let mut d = Finding::new(
                Code::ProbeDisagrees,
                format!(
                    "the live probe met {} but no static finding predicted it",
                    describe(result)
                ),
                "This is a bug in cudadiag's rules or in its compatibility matrix: both looked at the same \
                 machine. Please report it with `cudadiag snapshot` output and this report in JSON.",
            );
            for e in &evidence {
                d = d.because(e.clone());
            }
            if let Some(b) = &o.binary {
                d = d.at(b);
            }
            new.push(d);
        }
    }
    findings.extend(new);
}

#[cfg(test)]
mod tests;
