//! Policy rules for `audit`: what the release must not ship, and the policy's own bookkeeping (severity
//! overrides, waivers, unused and expired waivers). Pure functions of facts, policy and today's date.
//!
//! Every finding cites the policy line that asked for it, as cargo-deny does.

use super::{compat, kernel_image};
use crate::facts::{
    BinaryFacts, CodeKind, CudartLinkage, DriverFacts, Facts, GpuFacts, HostFacts, Installed, WheelFacts,
};
use crate::findings::{Code, Finding};
use crate::matrix::{Cc, Matrix};
use crate::policy::{CudartRule, Lined, Policy};

fn cite<T>(policy: &Policy, item: &Lined<T>, key: &str) -> String {
    if item.line == 0 {
        format!(
            "policy: {key} (default list; set [libraries] forbid in {} to change it)",
            policy.origin
        )
    } else {
        format!("policy: {}:{} ({key})", policy.origin, item.line)
    }
}

/// The file name of a binary's path (the part after a wheel's `!` and the last `/`).
fn file_name(path: &str) -> &str {
    let inner = path.rsplit('!').next().unwrap_or(path);
    inner.rsplit('/').next().unwrap_or(inner)
}

/// `policy-forbidden-library`: shipped driver libraries (by file name or SONAME), absolute or build-machine
/// RPATH/RUNPATH entries, entries into a toolkit's `stubs/`, the wrong cudart linkage, disallowed CUDA majors.
pub fn forbidden(b: &BinaryFacts, policy: &Policy) -> Vec<Finding> {
    let mut out = Vec::new();
    let name = file_name(&b.path);
    let soname = b.elf.as_ref().and_then(|e| e.soname.as_deref());
    // The first pattern, in policy order, that the file name or the SONAME matches (the name first).
    let by_name = policy.forbid_globs.first_match(name);
    let by_soname = soname.and_then(|s| policy.forbid_globs.first_match(s));
    let first = match (by_name, by_soname) {
        (Some(n), Some(s)) if s < n => Some((s, soname)),
        (Some(n), _) => Some((n, Some(name))),
        (None, Some(s)) => Some((s, soname)),
        (None, None) => None,
    };
    if let Some((i, Some(hit))) = first
        && let Some(pattern) = policy.forbid.get(i)
    {
        out.push(
            Finding::new(
                Code::PolicyForbiddenLibrary,
                format!("{}: ships {hit}, which the policy forbids", b.path),
                "Driver libraries come from the machine's driver; a bundled copy shadows it and breaks on \
                 every other driver (CUDA errors 34, 803, 804). Remove it from the package.",
            )
            .because(format!("{hit} matches {:?}", pattern.value))
            .because(cite(policy, pattern, "libraries.forbid"))
            .at(&b.path),
        );
    }
    if let Some(elf) = &b.elf {
        for (kind, list) in [("RPATH", &elf.rpath), ("RUNPATH", &elf.runpath)] {
            for entry in list.iter().filter(|e| !e.is_empty()) {
                if entry.contains("/stubs") && !policy.allow_stubs {
                    out.push(
                        Finding::new(
                            Code::PolicyForbiddenLibrary,
                            format!("{}: {kind} entry {entry} points into a toolkit's stubs/ directory", b.path),
                            "The stubs exist only for linking; at run time they load a stub libcuda that fails \
                             with CUDA error 34. Link with -L…/stubs but do not put it in RPATH/RUNPATH.",
                        )
                        .because(format!("{kind} = {}", list.join(":")))
                        .because(format!("policy: {} (libraries.allow-stubs = false)", policy.origin))
                        .at(&b.path),
                    );
                } else if entry.starts_with('/') && !policy.allow_absolute_rpath {
                    out.push(
                        Finding::new(
                            Code::PolicyForbiddenLibrary,
                            format!("{}: absolute {kind} entry {entry} (a build-machine path)", b.path),
                            "Absolute search paths name directories of the build machine; on users' machines they \
                             are missing or, worse, hold other copies. Use $ORIGIN-relative paths (patchelf \
                             --set-rpath '$ORIGIN/…').",
                        )
                        .because(format!("{kind} = {}", list.join(":")))
                        .because(format!("policy: {} (libraries.allow-absolute-rpath = false)", policy.origin))
                        .at(&b.path),
                    );
                }
            }
        }
    }
    if let Some(rule) = &policy.cudart {
        let bad = match (rule.value, b.cudart.linkage) {
            (CudartRule::Static, CudartLinkage::Dynamic) => Some("dynamically"),
            (CudartRule::Dynamic, CudartLinkage::Static) => Some("statically"),
            _ => None,
        };
        if let Some(how) = bad {
            out.push(
                Finding::new(
                    Code::PolicyForbiddenLibrary,
                    format!("{}: links the CUDA runtime {how}, the policy requires {:?} linkage", b.path, rule.value)
                        .replace("Static", "static")
                        .replace("Dynamic", "dynamic"),
                    "nvcc links libcudart_static.a by default; `-cudart shared` links libcudart.so.N instead.",
                )
                .because(b.cudart.evidence.join("; "))
                .because(cite(policy, rule, "libraries.cudart"))
                .at(&b.path),
            );
        }
    }
    if let Some(majors) = &policy.cuda_majors {
        for (major, why) in cuda_majors(b) {
            if !majors.value.contains(&major) {
                out.push(
                    Finding::new(
                        Code::PolicyForbiddenLibrary,
                        format!(
                            "{}: uses CUDA {major}, the policy allows CUDA {:?}",
                            b.path, majors.value
                        ),
                        "Mixing CUDA majors in one release means users need drivers and libraries of both; \
                         rebuild against an allowed toolkit.",
                    )
                    .because(why)
                    .because(cite(policy, majors, "targets.cuda-majors"))
                    .at(&b.path),
                );
            }
        }
    }
    out
}

/// The CUDA majors a binary uses, each with the fact that shows it: the runtime it links, the CUDA libraries
/// it needs (`libcublas.so.12`), the toolkit that built its device code.
pub fn cuda_majors(b: &BinaryFacts) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = Vec::new();
    let mut add = |major: u32, why: String| {
        if !out.iter().any(|(m, _)| *m == major) {
            out.push((major, why));
        }
    };
    if let Some(v) = &b.cudart.version
        && let Some(m) = v.split('.').next().and_then(|m| m.parse().ok())
    {
        let how = match b.cudart.linkage {
            CudartLinkage::Static => "static ",
            CudartLinkage::Dynamic => "shared ",
            CudartLinkage::None => "",
        };
        add(m, format!("{how}CUDA runtime {v}"));
    }
    if let Some(elf) = &b.elf {
        for n in &elf.needed {
            // Only libraries whose soname major is the CUDA major: cuFFT (libcufft.so.11 in CUDA 12), cuRAND
            // (.so.10 in CUDA 11, 12 and 13), cuSOLVER (.so.11 in both) and cuSPARSE (libcusparse.so.12 in CUDA
            // 12 and 13: the nvidia-cusparse 12.7 wheel of CUDA 13.2) version themselves apart.
            let cuda_lib = [
                "libcudart.so",
                "libcublas.so",
                "libcublasLt.so",
                "libnvrtc.so",
                "libnvJitLink.so",
                "libcupti.so",
                "libnpp",
                "libnvjpeg.so",
            ]
            .iter()
            .any(|p| n.starts_with(p));
            if !cuda_lib {
                continue;
            }
            if let Some(m) = n
                .split(".so.")
                .nth(1)
                .and_then(|v| v.split('.').next())
                .and_then(|m| m.parse().ok())
            {
                add(m, format!("DT_NEEDED {n}"));
            }
        }
    }
    for e in &b.device_code {
        if let Some(t) = &e.toolkit
            && let Some(m) = t.split('.').next().and_then(|m| m.parse().ok())
        {
            add(m, format!("{} built by CUDA {t}", e.arch));
        }
    }
    out
}

/// Applies severity overrides and waivers to `findings`, and reports unused and expired waivers.
pub fn apply(findings: Vec<Finding>, policy: &Policy, today: (i32, u32, u32)) -> Vec<Finding> {
    let mut used = vec![false; policy.waivers.len()];
    let mut out = Vec::new();
    'findings: for mut f in findings {
        for o in &policy.severity {
            let (key, level) = &o.value;
            if key.eq_ignore_ascii_case(f.code.as_str()) || *key == f.slug {
                match level {
                    Some(l) => {
                        f.severity = *l;
                        f.evidence
                            .push(format!("severity set by {}:{}", policy.origin, o.line));
                    }
                    None => continue 'findings,
                }
            }
        }
        for (i, w) in policy.waivers.iter().enumerate() {
            let code_ok = w.code.eq_ignore_ascii_case(f.code.as_str()) || w.code == f.slug;
            let path_ok = match (&w.path, &f.path) {
                (None, _) => true,
                (Some(_), Some(path)) => w.path_glob.as_ref().is_some_and(|g| g.is_match(path)),
                (Some(_), None) => false,
            };
            let expired = w.expires.is_some_and(|e| e < today);
            if code_ok && path_ok && !expired {
                used[i] = true;
                continue 'findings;
            }
            if code_ok && path_ok {
                used[i] = true; // matched, but no longer waives: reported as expired below
            }
        }
        out.push(f);
    }
    for (i, w) in policy.waivers.iter().enumerate() {
        let fmt_date = |(y, m, d): (i32, u32, u32)| format!("{y:04}-{m:02}-{d:02}");
        if let Some(e) = w.expires.filter(|e| *e < today) {
            out.push(
                Finding::new(
                    Code::WaiverExpired,
                    format!("the waiver for {} expired on {}", w.code, fmt_date(e)),
                    "Fix what it waived, or renew it with a new date and a reason that still holds.",
                )
                .because(format!("reason given: {}", w.reason))
                .because(format!("policy: {}:{}", policy.origin, w.line)),
            );
        } else if !used[i] {
            out.push(
                Finding::new(
                    Code::WaiverUnused,
                    format!(
                        "the waiver for {}{} matched no finding",
                        w.code,
                        w.path.as_deref().map(|p| format!(" on {p}")).unwrap_or_default()
                    ),
                    "Remove it: what it waived is fixed (or the path no longer matches), and a stale waiver would \
                     hide the problem if it came back.",
                )
                .because(format!("policy: {}:{}", policy.origin, w.line)),
            );
        }
    }
    out
}

/// The policy's targets as host facts: one GPU per `targets.sass` entry, the `min-driver` as the driver, so
/// that the compatibility rules answer for the release's targets instead of the machine cudadiag runs on.
pub fn target_host(policy: &Policy) -> Option<HostFacts> {
    if policy.sass.is_empty() && policy.min_driver.is_none() {
        return None;
    }
    let gpus = policy
        .sass
        .iter()
        .filter_map(|t| {
            let cc = Cc::parse(&t.value)?;
            Some(GpuFacts {
                name: format!("policy target {}", t.value),
                cc: Some(cc.to_string()),
                source: format!("{}:{} (targets.sass)", policy.origin, t.line),
                ..GpuFacts::default()
            })
        })
        .collect();
    let driver = policy.min_driver.as_ref().map(|d| DriverFacts {
        version: d.value.clone(),
        source: format!("{}:{} (targets.min-driver)", policy.origin, d.line),
    });
    Some(HostFacts {
        driver,
        gpus,
        ..HostFacts::default()
    })
}

/// `policy-missing-arch`: a required architecture has no SASS that runs on it. A plain target (`sm_86`) is
/// met by any cubin the driver would load there (`sm_80` runs on 8.6); an `a` or `f` target (`sm_90a`,
/// `sm_100f`) needs a cubin built for exactly that target.
pub fn missing_arch(b: &BinaryFacts, policy: &Policy, m: &Matrix) -> Vec<Finding> {
    if !compat::has_loadable_code(b) {
        return Vec::new();
    }
    let sass: Vec<_> = b
        .device_code
        .iter()
        .filter(|e| e.kind == CodeKind::Sass && !e.relocatable)
        .collect();
    let have: Vec<&str> = {
        let mut v: Vec<&str> = sass.iter().map(|e| e.arch.as_str()).collect();
        v.sort();
        v.dedup();
        v
    };
    let mut out = Vec::new();
    for t in &policy.sass {
        let Some(cc) = Cc::parse(&t.value) else { continue };
        let suffixed = t.value.ends_with('a') || t.value.ends_with('f');
        let met = if suffixed {
            sass.iter().any(|e| e.arch == t.value)
        } else {
            sass.iter().any(|e| kernel_image::sass_runs(e, cc, m))
        };
        if !met {
            out.push(
                Finding::new(
                    Code::PolicyMissingArch,
                    format!("{}: no SASS for {} (the policy requires it)", b.path, t.value),
                    format!(
                        "Build with -gencode arch=compute_{0},code=sm_{0} (or list {1} in CMAKE_CUDA_ARCHITECTURES); \
                         without it, GPUs of that architecture fail with error 209 or depend on PTX JIT.",
                        t.value.trim_start_matches("sm_"),
                        t.value
                    ),
                )
                .because(if have.is_empty() {
                    "the binary carries no SASS".to_string()
                } else {
                    format!("SASS present: {}", have.join(" "))
                })
                .because(format!("policy: {}:{} (targets.sass)", policy.origin, t.line))
                .at(&b.path),
            );
        }
    }
    out
}

/// `policy-missing-ptx`: the PTX the policy requires (exactly that virtual architecture) is absent.
pub fn missing_ptx(b: &BinaryFacts, policy: &Policy) -> Option<Finding> {
    let want = policy.ptx.as_ref()?;
    if !compat::has_loadable_code(b) {
        return None;
    }
    let ptx: Vec<&str> = b
        .device_code
        .iter()
        .filter(|e| e.kind == CodeKind::Ptx && !e.relocatable)
        .map(|e| e.arch.as_str())
        .collect();
    if ptx.contains(&want.value.as_str()) {
        return None;
    }
    Some(
        Finding::new(
            Code::PolicyMissingPtx,
            format!(
                "{}: no PTX for {} (the policy requires it for GPUs newer than every SASS target)",
                b.path, want.value
            ),
            format!(
                "Add -gencode arch={0},code={0} so future GPUs can JIT-compile the kernels.",
                want.value
            ),
        )
        .because(if ptx.is_empty() {
            "the binary carries no PTX".to_string()
        } else {
            format!("PTX present: {}", ptx.join(" "))
        })
        .because(format!("policy: {}:{} (targets.ptx)", policy.origin, want.line))
        .at(&b.path),
    )
}

/// `policy-min-driver`: the compatibility rules, run against the policy's `min-driver`, say a binary needs a
/// newer driver (`driver-insufficient`, `ptx-too-new`); the finding is restated against the policy line.
pub fn min_driver(findings: Vec<Finding>, policy: &Policy) -> Vec<Finding> {
    let Some(d) = &policy.min_driver else {
        return findings;
    };
    findings
        .into_iter()
        .map(|f| {
            if f.slug != Code::DriverInsufficient.info().slug && f.slug != Code::PtxTooNew.info().slug {
                return f;
            }
            let mut g = Finding::new(
                Code::PolicyMinDriver,
                format!(
                    "needs a newer driver than the policy's oldest supported, {}: {}",
                    d.value, f.message
                ),
                f.help.clone(),
            );
            g.evidence = f.evidence.clone();
            g.evidence.push(format!(
                "found as {} ({}) against the policy's driver",
                f.slug, f.code
            ));
            g.evidence.push(format!(
                "policy: {}:{} (targets.min-driver)",
                policy.origin, d.line
            ));
            g.path = f.path.clone();
            g.gpu = f.gpu.clone();
            g
        })
        .collect()
}

/// `policy-glibc`: a binary needs a newer `GLIBC_x.y` than the policy's oldest supported glibc (auditwheel's
/// manylinux check). Each ELF of a wheel or directory is audited on its own, so the libraries bundled beside
/// a binary are checked too.
pub fn glibc_floor(b: &BinaryFacts, policy: &Policy) -> Option<Finding> {
    let target = policy.glibc.as_ref()?;
    let need = crate::glibc::floor(&b.elf.as_ref()?.version_needs)?;
    if crate::glibc::compare(&need.version, &target.value) != std::cmp::Ordering::Greater {
        return None;
    }
    let arch = match b.elf.as_ref().map(|e| e.machine_name.as_str()) {
        Some("aarch64") => "aarch64",
        _ => "x86_64",
    };
    let mut f = Finding::new(
        Code::PolicyGlibc,
        format!(
            "{}: needs {} (from {}), the policy's oldest glibc is {}: version `{}' not found there",
            b.path, need.name, need.from, target.value, need.name
        ),
        format!(
            "Build it against glibc {0} or older: in a manylinux2014 container (glibc 2.17) or an older \
             distribution, or with `cargo zigbuild --target {arch}-unknown-linux-gnu.{0}` (zig cc -target \
             {arch}-linux-gnu.{0} for C/C++). Raise targets.glibc only if the release drops those systems.",
            target.value
        ),
    )
    .at(&b.path);
    // The symbols that pull the floor up, as `objdump -T` would show them.
    let symbols: Vec<String> = b
        .elf
        .iter()
        .flat_map(|e| e.versioned_undefined.iter())
        .filter_map(|s| {
            let v = crate::glibc::release_of(s.version.as_deref()?)?;
            (crate::glibc::compare(v, &target.value) == std::cmp::Ordering::Greater)
                .then(|| format!("{}@{}", s.name, s.version.as_deref().unwrap_or_default()))
        })
        .collect();
    f = f.because(format!(
        "{} needs {} from {} (DT_VERNEED)",
        b.path, need.name, need.from
    ));
    if !symbols.is_empty() {
        let shown: Vec<&str> = symbols.iter().take(6).map(String::as_str).collect();
        let more = symbols.len() - shown.len();
        f = f.because(format!(
            "symbols newer than glibc {}: {}{}",
            target.value,
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    Some(f.because(cite(policy, target, "targets.glibc")))
}

/// `policy-forbidden-library` for a wheel's declared dependencies of a CUDA major the policy does not allow:
/// pip installs them beside it (`rules::wheel` says what each installs).
pub fn declared_majors(w: &WheelFacts, policy: &Policy) -> Vec<Finding> {
    let Some(majors) = &policy.cuda_majors else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for r in w.requirements.iter().filter(|r| r.installed != Installed::Never) {
        let Some(major) = r.cuda.as_ref().and_then(|c| c.major) else {
            continue;
        };
        if majors.value.contains(&major) {
            continue;
        }
        let when = match (r.installed, r.extra.as_deref()) {
            (Installed::WithExtra, Some(e)) => format!(" with the [{e}] extra"),
            _ => String::new(),
        };
        out.push(
            Finding::new(
                Code::PolicyForbiddenLibrary,
                format!(
                    "{}: declares `{}`, a CUDA {major} package, the policy allows CUDA {:?}",
                    w.path, r.name, majors.value
                ),
                "pip installs it beside the wheel, so users need drivers and libraries of that major too; depend \
                 on the packages of an allowed major (-cu12 names for CUDA 12, suffix-less nvidia-* or \
                 cuda-toolkit==13.* for CUDA 13).",
            )
            .because(format!("Requires-Dist: {} (installed{when})", r.text))
            .because(format!(
                "{} is CUDA {major} [pip_cuda.toml]",
                r.cuda
                    .as_ref()
                    .map_or(r.name.clone(), |c| c.distributions.join(", "))
            ))
            .because(cite(policy, majors, "targets.cuda-majors"))
            .at(&w.path),
        );
    }
    out
}

/// Every policy finding for the audited facts (before [`apply`]).
pub fn evaluate(facts: &Facts, policy: &Policy, m: &Matrix) -> Vec<Finding> {
    let mut out = Vec::new();
    for b in &facts.binaries {
        out.extend(forbidden(b, policy));
        out.extend(missing_arch(b, policy, m));
        out.extend(missing_ptx(b, policy));
        out.extend(glibc_floor(b, policy));
    }
    for w in &facts.wheels {
        out.extend(declared_majors(w, policy));
    }
    out
}
