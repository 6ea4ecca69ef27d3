//! The bundled matrix validates, and a broken one is refused with the file and line of the defect.

use cudadiag::matrix::{BUNDLED, Cc, CudaVersion, DriverVersion, Matrix};

fn bundled() -> Matrix {
    match Matrix::bundled() {
        Ok(m) => m,
        Err(e) => panic!("bundled matrix does not validate: {e}"),
    }
}

#[test]
fn bundled_matrix_validates_and_has_every_table() {
    let m = bundled();
    assert!(m.toolkits.len() >= 60, "toolkit rows: {}", m.toolkits.len());
    assert!(m.branches.len() >= 30);
    assert!(m.ptx.len() >= 45);
    assert!(m.gpus.len() >= 40);
    assert!(m.errors.len() >= 30);
    assert!(!m.fwd_packages.is_empty() && !m.families.is_empty() && !m.archs.is_empty());
    for t in &m.toolkits {
        assert!(!t.row.source.is_empty(), "{} has no source", t.label);
    }
}

#[test]
fn bundled_matrix_answers_known_facts() {
    let m = bundled();
    let v = |s| DriverVersion::parse(s).unwrap();
    let c = |s| CudaVersion::parse(s).unwrap();
    assert_eq!(m.driver_cuda(&v("535.104.05")).map(|d| d.cuda), Some(c("12.2")));
    assert_eq!(m.driver_cuda(&v("580.159.04")).map(|d| d.cuda), Some(c("13.0")));
    assert_eq!(m.driver_cuda(&v("565.57.01")).map(|d| d.cuda), Some(c("12.7")));
    assert_eq!(
        m.toolkit_min(c("12.4")).map(|t| t.linux_min.to_string()),
        Some("550.54.14".into())
    );
    assert_eq!(
        m.toolkit_min(c("13.0")).map(|t| t.linux_min.to_string()),
        Some("580.65.06".into())
    );
    assert_eq!(m.ptx_isa(c("8.7")).map(|p| p.cuda), Some(c("12.8")));
    assert_eq!(m.max_ptx_isa(c("12.7")).map(|p| p.isa), Some(c("8.6")));
    assert_eq!(m.gpu_by_name("RTX 4090").map(|g| g.row.cc), Cc::parse("8.9"));
    assert_eq!(m.gpu_by_name("NVIDIA H200").map(|g| g.row.cc), Cc::parse("9.0"));
    assert_eq!(m.gpu_by_pci(0x2335).map(|g| g.row.cc), Cc::parse("9.0"));
    assert!(m.gpu_by_name("RTX 9999").is_none());
    // nvidia-smi names carry memory sizes and variants: the longest known name the query starts with.
    let gh = m.gpu_by_name("NVIDIA GH200 480GB").unwrap();
    assert_eq!((gh.row.cc.to_string(), gh.exact), ("9.0".to_string(), false));
    assert_eq!(
        m.gpu_by_name("NVIDIA GeForce RTX 4080 SUPER").map(|g| g.row.cc),
        Cc::parse("8.9")
    );
    assert!(m.gpu_by_name("NVIDIA").is_none());
    assert!(m.gpu_by_name("H2000").is_none());
    // A family word names GPUs of one compute capability (issue 23: `--gpu orin`, `--gpu gh200`).
    for (family, cc) in [
        ("orin", "8.7"),
        ("Xavier", "7.2"),
        ("thor", "11.0"),
        ("gh200", "9.0"),
    ] {
        let g = m
            .gpu_by_name(family)
            .unwrap_or_else(|| panic!("{family} not found"));
        assert_eq!(g.row.cc.to_string(), cc, "{family}");
    }
    // Near miss: a word shared by GPUs of several compute capabilities answers nothing.
    assert!(m.gpu_by_name("rtx").is_none());
    assert!(m.gpu_by_name("jetson").is_none());
    assert_eq!(
        m.minor_compat(12).map(|f| f.linux_min.to_string()),
        Some("525.60.13".into())
    );
    assert_eq!(
        m.error(209).and_then(|e| e.message.clone()).as_deref(),
        Some("no kernel image is available for execution on the device")
    );
}

#[test]
fn syntax_error_names_the_line() {
    let broken = BUNDLED.replacen("[[toolkit]]\ncuda = \"8.0\"", "[[toolkit]\ncuda = \"8.0\"", 1);
    assert_ne!(broken, BUNDLED);
    let line = broken.lines().position(|l| l == "[[toolkit]").unwrap() + 1;
    let e = Matrix::parse(&broken, "broken.toml").unwrap_err();
    assert_eq!(e.line, Some(line), "{e}");
    assert!(e.to_string().starts_with(&format!("broken.toml:{line}: ")), "{e}");
}

#[test]
fn bad_version_names_its_row() {
    let broken = BUNDLED.replacen("linux_min = \"550.54.14\"", "linux_min = \"550.x\"", 1);
    let e = Matrix::parse(&broken, "m.toml").unwrap_err();
    let line = broken.lines().position(|l| l.contains("550.x")).unwrap() + 1;
    // The error points at the row's header, a few lines above the field.
    let at = e.line.unwrap();
    assert!(at <= line && line - at < 8, "{e} (field on line {line})");
    assert!(e.message.contains("550.x"), "{e}");
}

#[test]
fn out_of_order_rows_are_refused() {
    // Swapping two branches' CUDA versions breaks the ordering.
    let broken = BUNDLED.replacen(
        "branch = 535\ncuda = \"12.2\"",
        "branch = 535\ncuda = \"12.9\"",
        1,
    );
    let e = Matrix::parse(&broken, "m.toml").unwrap_err();
    assert!(e.message.contains("out of order"), "{e}");
}

#[test]
fn a_missing_release_is_a_gap() {
    let start = BUNDLED
        .find("[[toolkit]]\ncuda = \"12.5\"\nrelease = \"update1\"")
        .unwrap();
    let mut broken = BUNDLED.to_string();
    // Remove both 12.5 rows: 12.4 is followed by 12.6.
    for _ in 0..2 {
        let s = broken.find("[[toolkit]]\ncuda = \"12.5\"").unwrap_or(start);
        let end = s + broken[s..].find("\n\n").unwrap() + 2;
        broken.replace_range(s..end, "");
    }
    let e = Matrix::parse(&broken, "m.toml").unwrap_err();
    assert!(e.message.contains("12.5 is missing"), "{e}");
}

#[test]
fn unknown_source_and_unknown_finding_are_refused() {
    let broken = BUNDLED.replacen("source = \"RN-13.2U2\"", "source = \"RN-99\"", 1);
    let e = Matrix::parse(&broken, "m.toml").unwrap_err();
    assert!(e.message.contains("RN-99"), "{e}");
    let broken = BUNDLED.replacen("findings = [\"ptx-too-new\"]", "findings = [\"ptx-too-old\"]", 1);
    let e = Matrix::parse(&broken, "m.toml").unwrap_err();
    assert!(e.message.contains("ptx-too-old"), "{e}");
}

#[test]
fn unknown_field_is_refused() {
    let broken = BUNDLED.replacen("[[gpu]]\n", "[[gpu]]\ncolour = \"green\"\n", 1);
    let e = Matrix::parse(&broken, "m.toml").unwrap_err();
    assert!(e.message.contains("colour"), "{e}");
    assert!(e.line.is_some());
}

#[test]
fn meta_version_and_date_are_read_and_checked() {
    let m = bundled();
    let date = m.date.clone().expect("the bundled matrix has a date");
    assert!(date.len() == 10 && date.starts_with("20"), "{date}");
    assert!(m.version.as_deref().is_some_and(|v| v.split('.').count() == 3));
    // Both are optional: a `--matrix` file from before they existed still loads.
    let without = BUNDLED.replacen(&format!("date = \"{date}\"\n"), "", 1).replacen(
        "version = \"",
        "# version = \"",
        1,
    );
    let old = Matrix::parse(&without, "old.toml").unwrap();
    assert_eq!((old.version, old.date), (None, None));
    let bad = BUNDLED.replacen(&format!("date = \"{date}\""), "date = \"2026-13-01\"", 1);
    let e = Matrix::parse(&bad, "bad.toml").unwrap_err().to_string();
    assert!(e.contains("meta.date \"2026-13-01\" is not a date"), "{e}");
}

#[test]
fn catalogue_errors_and_matrix_errors_agree() {
    // A code that says it predicts CUDA error N must be among the findings the matrix lists for N, so that
    // `explain N` leads back to it.
    let m = bundled();
    for c in cudadiag::findings::CATALOGUE {
        if let Some(n) = c.cuda_error {
            let row = m
                .error(n)
                .unwrap_or_else(|| panic!("{} predicts error {n}, which the matrix lacks", c.slug));
            assert!(
                row.findings.iter().any(|s| s == c.slug),
                "error {n} does not list {}",
                c.slug
            );
        }
    }
}

#[test]
fn every_gpu_row_resolves_by_its_names_and_ids() {
    let m = bundled();
    for g in &m.gpus {
        for n in &g.names {
            let hit = m.gpu_by_name(n).unwrap_or_else(|| panic!("{n} not found"));
            assert_eq!(hit.row.cc, g.cc, "{n}");
            assert!(hit.exact, "{n}");
        }
        for id in &g.pci_ids {
            assert_eq!(m.gpu_by_pci(*id).map(|h| h.row.cc), Some(g.cc), "{id:04x}");
        }
    }
}

/// `[[jetpack]]` rows name SoCs of `[[tegra_soc]]` and ascend by Jetson Linux release; `matrix --l4t` answers
/// from them, with `R` as `/etc/nv_tegra_release` writes it, and refuses a release it does not know.
#[test]
fn jetpack_rows_are_checked_and_answered() {
    let broken = BUNDLED.replacen("socs = [\"tegra264\"]", "socs = [\"tegra999\"]", 1);
    let e = Matrix::parse(&broken, "m.toml").unwrap_err();
    assert!(
        e.message.contains("SoC tegra999 is in no [[tegra_soc]] row"),
        "{e}"
    );
    let broken = BUNDLED.replacen("l4t = \"36.3\"", "l4t = \"34\"", 1);
    let e = Matrix::parse(&broken, "m.toml").unwrap_err();
    assert!(e.message.contains("l4t releases must ascend"), "{e}");
    let broken = BUNDLED.replacen("l4t = \"36.3\"", "l4t = \"R36.3\"", 1);
    assert!(Matrix::parse(&broken, "m.toml").is_err());

    let out = assert_cmd::Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["matrix", "--l4t", "R36.4.3", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["l4t"]["jetpack"], "6.1");
    assert_eq!(v["l4t"]["cuda"], "12.6");
    assert_eq!(v["l4t"]["socs"], serde_json::json!(["tegra234"]));
    let out = assert_cmd::Command::cargo_bin("cudadiag")
        .unwrap()
        .args(["matrix", "--l4t", "36.2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no Jetson Linux release"));
}
