//! `deploy/`: the Kubernetes manifests and the Ansible playbook are valid YAML of the expected shape (parsed
//! with python3's yaml where installed, else checked line by line), the shell recipes parse (`bash -n`), and
//! every recipe is documented in `deploy/README.md`. The Slurm recipes run for real in `scripts/slurm-check.sh`
//! (a one-node cluster: too slow for CI; its recorded run is in BENCHMARKS.md).

use std::path::{Path, PathBuf};
use std::process::Command;

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// The host paths the node's pod must see read-only under /host for `--root /host` to read the node.
const HOST_MOUNTS: &[&str] = &["/dev", "/proc", "/sys", "/etc", "/usr", "/lib"];

/// The python3 check of a manifest's structure, run when python3 has its yaml module. Returns `None` when it
/// cannot run.
const PY_CHECK: &str = r#"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]
kinds = [d["kind"] for d in docs]
want = sys.argv[2].split(",")
assert kinds == want, (kinds, want)
for d in docs:
    if d["kind"] not in ("DaemonSet", "Job"):
        continue
    pod = d["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    words = " ".join(c.get("command", []) + c.get("args", []))
    assert "--root /host" in words or "'--root', '/host'" in words or ("--root" in c.get("args", []) and "/host" in c.get("args", [])), words
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    for path in sys.argv[3].split(","):
        m = mounts["/host" + path]
        assert m.get("readOnly") is True, m
        assert volumes[m["name"]]["hostPath"]["path"] == path, volumes[m["name"]]
    for m in c["volumeMounts"]:
        if "hostPath" in volumes[m["name"]]:
            assert m.get("readOnly") is True, ("every host path read-only", m)
    assert not c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu"), "asks for no GPU"
    assert c["securityContext"].get("privileged") is not True
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    assert env.get("NVIDIA_VISIBLE_DEVICES") == "void", env
print("ok")
"#;

fn python_yaml() -> bool {
    Command::new("python3")
        .args(["-c", "import yaml"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Without python3's yaml: what a YAML parser would refuse first (tabs in indentation, a document without
/// `apiVersion`/`kind`) and the same facts checked on the text.
fn structural(text: &str, kinds: &[&str]) {
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with('\t') || l.trim_start().starts_with('\t')),
        "a tab"
    );
    let docs: Vec<&str> = text.split("\n---\n").collect();
    assert_eq!(docs.len(), kinds.len());
    for (d, k) in docs.iter().zip(kinds) {
        assert!(
            d.contains("\napiVersion: ") || d.starts_with("apiVersion: "),
            "{d}"
        );
        assert!(d.contains(&format!("\nkind: {k}\n")), "{k}: {d}");
    }
    for p in HOST_MOUNTS {
        let mount = format!("mountPath: /host{p}, readOnly: true}}");
        assert!(text.contains(&mount), "{mount}");
        assert!(text.contains(&format!("hostPath: {{path: {p}")), "{p}");
    }
    assert!(text.contains("--root") && text.contains("/host"));
    assert!(text.contains("NVIDIA_VISIBLE_DEVICES") && text.contains("value: void"));
}

fn check_manifest(file: &str, kinds: &[&str]) {
    let path = deploy().join("kubernetes").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    structural(&text, kinds);
    if !python_yaml() {
        // The structural check above ran; the parser's is optional.
        crate::support::skip::optional("python3 has no yaml module: the manifests were checked as text only");
        return;
    }
    let out = Command::new("python3")
        .args(["-c", PY_CHECK])
        .arg(&path)
        .arg(kinds.join(","))
        .arg(HOST_MOUNTS.join(","))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{file}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn kubernetes_daemonset_reads_the_node_read_only_through_root() {
    check_manifest("daemonset.yaml", &["Namespace", "DaemonSet"]);
}

#[test]
fn kubernetes_job_reads_the_node_read_only_through_root() {
    check_manifest("job.yaml", &["Job"]);
}

#[test]
fn ansible_playbook_snapshots_fetches_and_groups() {
    let path = deploy().join("ansible/cudadiag.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains('\t'));
    for needle in ["snapshot", "ansible.builtin.fetch", "'fleet'", "--artifact"] {
        assert!(text.contains(needle), "{needle}");
    }
    if python_yaml() {
        let check = r#"
import sys, yaml
plays = yaml.safe_load(open(sys.argv[1]))
assert [p["name"] for p in plays] == ["Snapshot the nodes", "Group the nodes"], plays
mods = [list(k for k in t if k.startswith("ansible.builtin."))[0] for p in plays for t in p["tasks"]]
assert "ansible.builtin.fetch" in mods and mods.count("ansible.builtin.command") == 2, mods
print("ok")
"#;
        let out = Command::new("python3")
            .args(["-c", check])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn shell_recipes_parse_and_every_recipe_is_documented() {
    let readme = std::fs::read_to_string(deploy().join("README.md")).unwrap();
    for dir in ["slurm", "kubernetes", "ansible"] {
        for e in std::fs::read_dir(deploy().join(dir)).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(deploy()).unwrap().display().to_string();
            assert!(readme.contains(&rel), "deploy/README.md does not name {rel}");
            if rel.ends_with(".sh") {
                let out = Command::new("bash").arg("-n").arg(&p).output().unwrap();
                assert!(
                    out.status.success(),
                    "{rel}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    let top = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(top.contains("## Fleets"), "the README's Fleets section");
}

/// The health check and the prolog on a node that passes and one that fails, without Slurm: a fake `scontrol`
/// records what they ask of it.
#[test]
fn slurm_scripts_drain_on_error_and_resume_only_their_own_drain() {
    let t = tempfile::tempdir().unwrap();
    let log = t.path().join("scontrol.log");
    let scontrol = t.path().join("scontrol");
    std::fs::write(
        &scontrol,
        format!(
            "#!/bin/sh\nif [ \"$1\" = show ]; then cat {}; exit 0; fi\necho \"$@\" >> {}\n",
            t.path().join("node.txt").display(),
            log.display()
        ),
    )
    .unwrap();
    let run = |script: &str, case: &str, node_reason: &str| {
        std::fs::write(t.path().join("node.txt"), format!("NodeName=n1 {node_reason}\n")).unwrap();
        let conf = t.path().join("conf");
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/hosts")
            .join(case)
            .join("root");
        std::fs::write(
            &conf,
            format!(
                "CUDADIAG={}\nCUDADIAG_ARGS='--root {} --clear-env'\n",
                env!("CARGO_BIN_EXE_cudadiag"),
                root.display()
            ),
        )
        .unwrap();
        let _ = std::fs::remove_file(&log);
        let out = Command::new("bash")
            .arg(deploy().join("slurm").join(script))
            .env("CUDADIAG_CONF", &conf)
            .env("SCONTROL", &scontrol)
            .env("SLURMD_NODENAME", "n1")
            .output()
            .unwrap();
        let asked = std::fs::read_to_string(&log).unwrap_or_default();
        (out.status.code(), asked)
    };
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&scontrol, std::fs::Permissions::from_mode(0o755)).unwrap();

    let (code, asked) = run("cudadiag-healthcheck.sh", "uvm-missing", "Reason=none");
    assert_eq!(code, Some(1));
    assert_eq!(
        asked,
        "update NodeName=n1 State=DRAIN Reason=cudadiag: nvidia-uvm-missing\n"
    );
    let (code, asked) = run(
        "cudadiag-healthcheck.sh",
        "healthy",
        "Reason=cudadiag: nvidia-uvm-missing",
    );
    assert_eq!(code, Some(0));
    assert_eq!(asked, "update NodeName=n1 State=RESUME\n");
    // Near miss: an operator's drain stays.
    let (code, asked) = run("cudadiag-healthcheck.sh", "healthy", "Reason=maintenance");
    assert_eq!(code, Some(0));
    assert_eq!(asked, "");

    let (code, _) = run("cudadiag-prolog.sh", "driver-upgraded-no-reboot", "");
    assert_eq!(code, Some(1), "a failing prolog drains the node");
    let (code, _) = run("cudadiag-prolog.sh", "healthy", "");
    assert_eq!(code, Some(0));
}
