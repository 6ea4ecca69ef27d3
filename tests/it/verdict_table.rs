//! Table-driven verdicts: synthetic binaries, GPUs and drivers, with the findings and the verdict each must
//! give. Every row comes from the matrix sources (release notes Table 3, the CUDA Compatibility guide, the PTX
//! ISA release history, the Programming Guide's binary-compatibility rules, the data-center architecture
//! matrix); each finding has rows where it fires and near misses where it does not.

use cudadiag::facts::{
    BinaryFacts, CodeKind, Compression, CudartFacts, CudartLinkage, DeviceCode, DriverFacts, Facts, Format,
    GpuFacts, HostFacts,
};
use cudadiag::matrix::{Cc, Matrix};
use cudadiag::rules::{self, Outcome};

fn entry(kind: CodeKind, arch: &str, isa: Option<&str>) -> DeviceCode {
    let suffix = arch.chars().last().filter(|c| *c == 'a' || *c == 'f');
    let sm = Cc::parse(arch).map(|c| c.sm()).unwrap_or(0);
    DeviceCode {
        kind,
        arch: arch.to_string(),
        sm,
        suffix,
        ptx_isa: isa.map(str::to_string),
        code_version: [0, 0],
        compression: Compression::None,
        size: 100,
        stored_size: 100,
        flags: 0,
        debug: false,
        bits64: true,
        host: None,
        identifier: None,
        options: None,
        toolkit: None,
        toolkit_source: None,
        unread: None,
        relocatable: false,
        container: 0,
        offset: 0,
        cubin: None,
        ptx: None,
    }
}

/// `sass sm_86, ptx compute_80 8.7, zsass sm_90 (zstd), rsass sm_90 / rptx compute_90 9.0 (relocatable), tk 13.0.88`.
fn binary(code: &str, cudart: &str) -> BinaryFacts {
    let mut b = BinaryFacts {
        path: "app".into(),
        format: Some(Format::Elf),
        ..BinaryFacts::default()
    };
    let mut toolkit = None;
    for part in code.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let w: Vec<&str> = part.split_whitespace().collect();
        let mut e = match w[0] {
            "sass" | "zsass" | "rsass" => entry(CodeKind::Sass, w[1], None),
            "ptx" | "rptx" => entry(CodeKind::Ptx, w[1], w.get(2).copied()),
            "tk" => {
                toolkit = Some(w[1].to_string());
                continue;
            }
            other => panic!("bad code spec {other}"),
        };
        e.compression = if w[0] == "zsass" {
            Compression::Zstd
        } else {
            Compression::None
        };
        e.relocatable = w[0] == "rsass" || w[0] == "rptx";
        b.device_code.push(e);
    }
    for e in &mut b.device_code {
        e.toolkit = toolkit.clone();
    }
    let w: Vec<&str> = cudart.split_whitespace().collect();
    b.cudart = match w.first().copied() {
        Some("static") => CudartFacts {
            linkage: CudartLinkage::Static,
            version: Some(w[1].into()),
            soname: None,
            evidence: vec!["test".into()],
        },
        Some("dynamic") => CudartFacts {
            linkage: CudartLinkage::Dynamic,
            version: None,
            soname: Some(w[1].into()),
            evidence: vec!["test".into()],
        },
        _ => CudartFacts::default(),
    };
    b
}

fn gpu(spec: &str) -> GpuFacts {
    let mut g = GpuFacts {
        source: "test".into(),
        ..GpuFacts::default()
    };
    if let Some(n) = spec.strip_prefix("name:") {
        g.name = n.into();
    } else if let Some(p) = spec.strip_prefix("pci:") {
        g.name = "unnamed".into();
        g.pci_device_id = u16::from_str_radix(p, 16).ok();
    } else {
        g.name = format!("GPU {spec}");
        g.cc = Some(spec.into());
    }
    g
}

struct Case {
    code: &'static str,
    cudart: &'static str,
    gpu: &'static str,
    driver: &'static str,
    expect: &'static [&'static str],
    outcome: Option<Outcome>,
}

const fn c(
    code: &'static str,
    cudart: &'static str,
    gpu: &'static str,
    driver: &'static str,
    expect: &'static [&'static str],
    outcome: Option<Outcome>,
) -> Case {
    Case {
        code,
        cudart,
        gpu,
        driver,
        expect,
        outcome,
    }
}

use Outcome::{Fails, NoDeviceCode, Runs, RunsAfterJit};
const NKI: &str = "no-kernel-image";
const JIT: &str = "ptx-jit-required";
const NEW: &str = "ptx-too-new";
const INS: &str = "driver-insufficient";
const MVC: &str = "minor-version-compat";
const UNS: &str = "gpu-unsupported-by-driver";

#[rustfmt::skip]
const CASES: &[Case] = &[
    // --- SASS selection (Programming Guide: same major, minor not above the GPU's) ---
    c("sass sm_86", "", "8.9", "", &[], Some(Runs)),
    c("sass sm_86", "", "8.0", "", &[NKI], Some(Fails)),
    c("sass sm_86", "", "8.6", "", &[], Some(Runs)),
    c("sass sm_80", "", "8.6", "", &[], Some(Runs)),
    // Tegra: no binary compatibility across compute capabilities, nor between desktop and Tegra (PG)
    c("sass sm_80", "", "8.7", "", &[NKI], Some(Fails)),
    c("sass sm_87", "", "8.7", "", &[], Some(Runs)),
    c("sass sm_80, ptx compute_80 8.0", "", "8.7", "", &[JIT], Some(RunsAfterJit)),
    c("sass sm_72", "", "7.5", "", &[NKI], Some(Fails)),
    c("sass sm_80", "", "9.0", "", &[NKI], Some(Fails)),
    c("sass sm_90", "", "10.0", "", &[NKI], Some(Fails)),
    c("sass sm_75", "", "7.0", "", &[NKI], Some(Fails)),
    c("sass sm_120", "", "12.1", "", &[], Some(Runs)),
    c("sass sm_120", "", "10.0", "", &[NKI], Some(Fails)),
    // --- arch-specific `a` (exact CC only) and family `f` (PTX-TGT, PG) ---
    c("sass sm_90a", "", "9.0", "", &[], Some(Runs)),
    c("sass sm_90a", "", "10.0", "", &[NKI], Some(Fails)),
    c("sass sm_100a", "", "10.3", "", &[NKI], Some(Fails)),
    c("sass sm_100a", "", "10.0", "", &[], Some(Runs)),
    c("sass sm_100f", "", "10.3", "", &[], Some(Runs)),
    c("sass sm_100f", "", "10.0", "", &[], Some(Runs)),
    c("sass sm_100f", "", "12.0", "", &[NKI], Some(Fails)),
    c("sass sm_103f", "", "10.0", "", &[NKI], Some(Fails)),
    c("sass sm_120f", "", "12.1", "", &[], Some(Runs)),
    c("sass sm_100f, ptx compute_100f 9.0", "", "9.0", "", &[NKI], Some(Fails)),
    // --- PTX JIT: highest PTX not above the GPU ---
    c("ptx compute_80 9.0", "", "9.0", "580.65.06", &[JIT], Some(RunsAfterJit)),
    c("ptx compute_80 9.0", "", "7.5", "580.65.06", &[NKI], Some(Fails)),
    c("ptx compute_90a 9.0", "", "9.0", "", &[JIT], Some(RunsAfterJit)),
    c("ptx compute_90a 9.0", "", "10.0", "", &[NKI], Some(Fails)),
    c("ptx compute_100f 9.0", "", "10.3", "", &[JIT], Some(RunsAfterJit)),
    c("sass sm_75, sass sm_80, sass sm_90, ptx compute_90 9.0", "", "9.0", "580.159.04", &[], Some(Runs)),
    c("sass sm_75, sass sm_80, sass sm_90, ptx compute_90 9.0", "", "8.9", "580.159.04", &[], Some(Runs)),
    c("sass sm_75, sass sm_80, sass sm_90, ptx compute_90 9.0", "", "10.0", "580.159.04", &[JIT], Some(RunsAfterJit)),
    c("sass sm_75, sass sm_80, sass sm_90, ptx compute_90 9.0", "", "12.0", "580.159.04", &[JIT], Some(RunsAfterJit)),
    c("sass sm_75, sass sm_80, sass sm_90, ptx compute_90 9.0", "", "7.0", "580.159.04", &[NKI], Some(Fails)),
    c("sass sm_75, ptx compute_75 9.0", "", "9.0", "580.159.04", &[JIT], Some(RunsAfterJit)),
    // relocatable device code is never loaded (only kept for device linking)
    c("rsass sm_90", "", "9.0", "", &[], Some(NoDeviceCode)),
    c("rsass sm_75, rptx compute_75 9.0", "", "9.0", "", &[], Some(NoDeviceCode)),
    // ... except in a device-linked program, whose runtime JIT-links the relocatable PTX (fixtures/cuda13/rdc)
    c("sass sm_75, rsass sm_75, rptx compute_75 9.0", "", "9.0", "580.159.04", &[JIT], Some(RunsAfterJit)),
    c("sass sm_75, rsass sm_75, rptx compute_75 9.0", "", "7.0", "580.159.04", &[NKI], Some(Fails)),
    c("sass sm_75, rptx compute_75 9.0", "", "9.0", "575.57.08", &[JIT, NEW], Some(Fails)),
    // GPU named or identified by PCI id, CC from the matrix
    c("sass sm_80", "", "name:NVIDIA H200", "580.159.04", &[NKI], Some(Fails)),
    c("sass sm_90", "", "name:NVIDIA H200", "580.159.04", &[], Some(Runs)),
    c("sass sm_86", "", "pci:2684", "", &[], Some(Runs)),
    c("sass sm_90a", "", "name:NVIDIA GH200 480GB", "", &[], Some(Runs)),
    c("sass sm_86", "", "name:GeForce RTX 4090", "", &[], Some(Runs)),
    // --- PTX ISA against the driver's JIT (PTX-RN Table 71; error 222) ---
    c("ptx compute_80 8.7", "", "9.0", "565.57.01", &[JIT, NEW], Some(Fails)),
    // no GPU known: PTX-only code must be JIT-compiled on any GPU, so a too-new ISA fails everywhere
    c("ptx compute_80 8.7", "", "", "565.57.01", &[NEW], None),
    c("ptx compute_80 8.6", "", "", "565.57.01", &[], None),
    c("sass sm_80, ptx compute_80 8.7", "", "", "565.57.01", &[], None),
    c("ptx compute_80 8.6", "", "9.0", "565.57.01", &[JIT], Some(RunsAfterJit)),
    c("ptx compute_80 9.0", "", "9.0", "575.57.08", &[JIT, NEW], Some(Fails)),
    c("ptx compute_80 8.4", "", "9.0", "550.54.14", &[JIT], Some(RunsAfterJit)),
    c("ptx compute_80 8.4", "", "9.0", "545.23.06", &[JIT, NEW], Some(Fails)),
    c("ptx compute_80 7.8", "", "8.0", "470.82.01", &[JIT, NEW], Some(Fails)),
    c("ptx compute_80 9.4", "", "9.0", "615.71.09", &[JIT], Some(RunsAfterJit)),
    c("ptx compute_80 9.4", "", "9.0", "610.43.02", &[JIT, NEW], Some(Fails)),
    // SASS for the GPU: the too-new PTX is never JIT-compiled
    c("sass sm_90, ptx compute_90 8.7", "", "9.0", "565.57.01", &[], Some(Runs)),
    // --- runtime against driver (Table 3, minor-version compatibility floors) ---
    c("sass sm_90", "static 12.4", "9.0", "535.104.05", &[MVC], Some(Runs)),
    c("sass sm_80", "static 12.4", "8.0", "470.82.01", &[INS], Some(Fails)),
    // Hopper needs CUDA 11.8: an R470 (11.4) driver predates it as well
    c("sass sm_90", "static 12.4", "9.0", "470.82.01", &[INS, UNS], Some(Fails)),
    c("sass sm_90", "static 12.4", "9.0", "550.54.14", &[], Some(Runs)),
    c("sass sm_90", "static 13.0", "9.0", "575.57.08", &[INS], Some(Fails)),
    c("sass sm_90", "static 13.0", "9.0", "580.65.06", &[], Some(Runs)),
    c("sass sm_90", "static 13.0", "9.0", "580.159.04", &[], Some(Runs)),
    c("sass sm_90", "static 12.8", "9.0", "570.26", &[], Some(Runs)),
    c("sass sm_90", "static 12.9", "9.0", "570.124.06", &[MVC], Some(Runs)),
    c("sass sm_90", "static 13.2", "9.0", "580.95.05", &[MVC], Some(Runs)),
    c("sass sm_90", "static 13.4", "9.0", "580.65.06", &[MVC], Some(Runs)),
    c("sass sm_80", "static 11.8", "8.0", "450.80.02", &[MVC], Some(Runs)),
    c("sass sm_80", "static 11.8", "8.0", "450.51.06", &[INS], Some(Fails)),
    c("sass sm_80", "static 12.0", "8.0", "525.60.13", &[], Some(Runs)),
    c("sass sm_80", "static 12.0", "8.0", "520.61.05", &[INS], Some(Fails)),
    c("sass sm_75", "static 10.2", "7.5", "418.39", &[INS], Some(Fails)),
    c("sass sm_75", "static 10.1", "7.5", "418.39", &[], Some(Runs)),
    c("sass sm_90", "dynamic libcudart.so.13", "9.0", "575.57.08", &[INS], Some(Fails)),
    c("sass sm_90", "dynamic libcudart.so.12", "9.0", "535.104.05", &[], Some(Runs)),
    c("sass sm_80", "dynamic libcudart.so.12", "8.0", "470.82.01", &[INS], Some(Fails)),
    c("sass sm_90", "static 12.4", "9.0", "610.43.02", &[], Some(Runs)),
    c("sass sm_90", "static 13.5", "9.0", "625.10.01", &[], Some(Runs)),
    // toolkit note when no cudart version was read
    c("sass sm_90, tk 13.0.88", "", "9.0", "575.57.08", &[INS], Some(Fails)),
    c("sass sm_90, tk 13.0.88", "", "9.0", "580.82.07", &[], Some(Runs)),
    // minor-version compatibility cannot JIT newer PTX
    c("ptx compute_80 8.7", "static 12.8", "9.0", "535.104.05", &[MVC, JIT, NEW], Some(Fails)),
    // --- zstd-compressed entries need an R550 (CUDA 12.4) driver ---
    c("zsass sm_90", "", "9.0", "545.23.08", &[INS], Some(Fails)),
    c("zsass sm_90", "", "9.0", "550.54.14", &[], Some(Runs)),
    // --- GPU architecture support by driver branch (DC-ARCH) ---
    c("sass sm_61", "", "6.1", "590.44.01", &[UNS], Some(Fails)),
    c("sass sm_61", "", "6.1", "580.95.05", &[], Some(Runs)),
    c("sass sm_70", "", "7.0", "595.71.05", &[UNS], Some(Fails)),
    c("sass sm_52", "", "5.2", "580.65.06", &[], Some(Runs)),
    c("sass sm_35", "", "3.5", "495.29.05", &[UNS], Some(Fails)),
    c("sass sm_35", "", "3.5", "470.82.01", &[], Some(Runs)),
    c("sass sm_100", "", "10.0", "535.104.05", &[UNS], Some(Fails)),
    c("sass sm_120", "", "12.0", "570.26", &[], Some(Runs)),
    c("sass sm_75", "", "7.5", "615.71.09", &[], Some(Runs)),
];

#[test]
fn verdict_table() {
    let m = match Matrix::bundled() {
        Ok(m) => m,
        Err(e) => panic!("{e}"),
    };
    assert!(CASES.len() >= 60, "{} cases", CASES.len());
    let compat = [NKI, JIT, NEW, INS, MVC, UNS];
    let mut failures = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let facts = Facts {
            binaries: vec![binary(case.code, case.cudart)],
            host: Some(HostFacts {
                driver: (!case.driver.is_empty()).then(|| DriverFacts {
                    version: case.driver.into(),
                    source: "test".into(),
                }),
                gpus: if case.gpu.is_empty() {
                    Vec::new()
                } else {
                    vec![gpu(case.gpu)]
                },
                ..HostFacts::default()
            }),
            ..Facts::default()
        };
        let rules::Judgement {
            findings, verdicts, ..
        } = rules::judge(&facts, &m);
        let mut got: Vec<&str> = findings
            .iter()
            .map(|f| f.slug.as_str())
            .filter(|s| compat.contains(s))
            .collect();
        got.sort_unstable();
        let mut want = case.expect.to_vec();
        want.sort_unstable();
        let outcome = verdicts.first().map(|v| v.outcome);
        if got != want || outcome != case.outcome {
            failures.push(format!(
                "case {i} [{} | {} | gpu {} | driver {}]: findings {got:?} (want {want:?}), verdict {outcome:?} (want {:?})",
                case.code, case.cudart, case.gpu, case.driver, case.outcome
            ));
        }
        for f in &findings {
            if compat.contains(&f.slug.as_str()) {
                assert!(!f.evidence.is_empty(), "case {i}: {} has no evidence", f.slug);
                assert!(!f.help.is_empty(), "case {i}: {} has no help", f.slug);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn findings_cite_the_matrix_row() {
    let m = Matrix::bundled().unwrap();
    let facts = Facts {
        binaries: vec![binary("sass sm_90", "static 13.0")],
        host: Some(HostFacts {
            driver: Some(DriverFacts {
                version: "575.57.08".into(),
                source: "test".into(),
            }),
            gpus: vec![gpu("9.0")],
            ..HostFacts::default()
        }),
        ..Facts::default()
    };
    let f = rules::evaluate(&facts, &m);
    let ins = f.iter().find(|f| f.slug == INS).expect("driver-insufficient");
    assert!(
        ins.evidence
            .iter()
            .any(|e| e.contains("compat.toml:") && e.contains("RN-13.2U2")),
        "{:?}",
        ins.evidence
    );
    assert!(
        ins.evidence.iter().any(|e| e.contains("COMPAT-MINOR")),
        "{:?}",
        ins.evidence
    );
    assert!(ins.message.contains("CUDA error 35"));
}

#[test]
fn no_gpu_no_driver_no_compat_findings() {
    let m = Matrix::bundled().unwrap();
    let facts = Facts {
        binaries: vec![binary("sass sm_80", "static 13.0")],
        host: None,
        ..Facts::default()
    };
    assert!(
        rules::evaluate(&facts, &m)
            .iter()
            .all(|f| f.code.as_str() >= "CD103")
    );
    assert!(rules::judge(&facts, &m).verdicts.is_empty());
}
