//! `secure-boot-blocks-module` on a copy of the healthy host tree whose driver is not loaded: the firmware's
//! `SecureBoot` variable and the `nvidia` module of the running kernel written into it.

use crate::support::cli::{copy_tree, json_exiting, machine_args, slugs};
use std::path::{Path, PathBuf};

const EFIVAR: &str = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";

/// The healthy tree without its loaded driver, with Secure Boot `on` or not and an `nvidia.ko` signed or not.
fn machine(dir: &Path, secure_boot: bool, signed: bool) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts/healthy");
    let root = dir.join("root");
    copy_tree(&fixture.join("root"), &root);
    std::fs::remove_file(root.join("proc/driver/nvidia/version")).unwrap();
    std::fs::remove_dir_all(root.join("sys/module/nvidia")).unwrap();
    let var = root.join(EFIVAR);
    std::fs::create_dir_all(var.parent().unwrap()).unwrap();
    // Four bytes of attributes (non-volatile, boot and run-time access), then the value.
    std::fs::write(&var, [0x06, 0, 0, 0, u8::from(secure_boot)]).unwrap();
    std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
    std::fs::write(root.join("proc/sys/kernel/osrelease"), "6.8.0-31-generic\n").unwrap();
    let modules = root.join("lib/modules/6.8.0-31-generic");
    std::fs::create_dir_all(modules.join("updates/dkms")).unwrap();
    std::fs::write(
        modules.join("modules.dep"),
        "updates/dkms/nvidia-uvm.ko: updates/dkms/nvidia.ko\nupdates/dkms/nvidia.ko:\n",
    )
    .unwrap();
    let mut ko = b"\x7fELF module body".to_vec();
    if signed {
        ko.extend_from_slice(b"PKCS#7 signature and its info~Module signature appended~\n");
    }
    std::fs::write(modules.join("updates/dkms/nvidia.ko"), ko).unwrap();
    root
}

fn doctor(root: &Path) -> Vec<String> {
    let env = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts/healthy/env");
    let mut args = vec!["doctor".to_string(), "--format".into(), "json".into()];
    args.extend(machine_args(root, &env, &[]));
    slugs(&json_exiting(&args, &[1]))
}

#[test]
fn an_unsigned_module_under_secure_boot_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let got = doctor(&machine(t.path(), true, false));
    assert!(got.contains(&"secure-boot-blocks-module".to_string()), "{got:?}");
    // The driver is not loaded either way: no-driver says so, this finding says why.
    assert!(got.contains(&"no-driver".to_string()), "{got:?}");
}

#[test]
fn a_signed_module_or_secure_boot_off_is_no_finding() {
    let t = tempfile::tempdir().unwrap();
    let signed = doctor(&machine(&t.path().join("signed"), true, true));
    assert!(
        !signed.contains(&"secure-boot-blocks-module".to_string()),
        "{signed:?}"
    );
    assert!(signed.contains(&"no-driver".to_string()), "{signed:?}");
    let off = doctor(&machine(&t.path().join("off"), false, false));
    assert!(!off.contains(&"secure-boot-blocks-module".to_string()), "{off:?}");
}
