//! Secure Boot's state and the NVIDIA module of the running kernel: what tells "the kernel refused an unsigned
//! module" from "no module was built" when no driver is loaded.
//!
//! The firmware's `SecureBoot` variable (`/sys/firmware/efi/efivars/SecureBoot-8be4df61-…`, the EFI global
//! variable GUID) is four bytes of attributes, then one byte: 1 when Secure Boot is enforced (UEFI
//! specification, "Globally Defined Variables"; the kernel's `Documentation/filesystems/efivarfs.rst`). The
//! module the kernel would load is the one `depmod` listed in `/lib/modules/<release>/modules.dep`; a signed
//! module ends with the marker `~Module signature appended~\n` (the kernel's `scripts/sign-file.c`,
//! `Documentation/admin-guide/module-signing.rst`). Nothing is executed or loaded.

use crate::facts::secure_boot::SecureBootFacts;
use crate::system::Root;
use crate::system::read::Limit;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The `SecureBoot` variable of the EFI global variable GUID.
const EFIVAR: &str = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";

/// What a signed module ends with.
const MARKER: &[u8] = b"~Module signature appended~\n";

/// `modules.dep` of a distribution kernel is about 1 MiB (one line per module, a few thousand modules).
const MODULES_DEP: Limit = Limit {
    bytes: 16 << 20,
    what: "a modules.dep",
};

/// A few bytes of the EFI variable.
const EFIVAR_LIMIT: Limit = Limit {
    bytes: 4 << 10,
    what: "an EFI variable",
};

/// Secure Boot's state and the `nvidia` module of the running kernel; `None` when the machine shows no EFI
/// `SecureBoot` variable (legacy BIOS boot, no efivarfs, or a root that does not hold `/sys`).
pub fn collect(root: &Root) -> Option<SecureBootFacts> {
    let bytes = root.read(Path::new(EFIVAR), EFIVAR_LIMIT).ok()?;
    let enabled = bytes.get(4).copied() == Some(1);
    let mut f = SecureBootFacts {
        enabled,
        source: EFIVAR.to_string(),
        ..SecureBootFacts::default()
    };
    if !enabled {
        return Some(f);
    }
    let release = root
        .read_to_string(
            Path::new("/proc/sys/kernel/osrelease"),
            crate::system::read::KERNEL_TEXT,
        )
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && !s.contains('/'));
    f.kernel = release.clone();
    let Some(release) = release else {
        return Some(f);
    };
    let dir = ["/lib/modules", "/usr/lib/modules"]
        .iter()
        .map(|d| format!("{d}/{release}"))
        .find(|d| root.exists(&Path::new(d).join("modules.dep")));
    let Some(dir) = dir else {
        return Some(f);
    };
    let dep = root
        .read_to_string(&Path::new(&dir).join("modules.dep"), MODULES_DEP)
        .ok()?;
    f.module = nvidia_module(&dep).map(|rel| {
        if rel.starts_with('/') {
            rel.to_string()
        } else {
            format!("{dir}/{rel}")
        }
    });
    f.module_signed = f.module.as_deref().and_then(|m| signed(root, m));
    Some(f)
}

/// The `nvidia` module's path in `modules.dep` (`updates/dkms/nvidia.ko.zst: …`), not `nvidia-uvm` or
/// `nvidia-drm`.
pub fn nvidia_module(dep: &str) -> Option<&str> {
    dep.lines().find_map(|l| {
        let path = l.split(':').next()?.trim();
        let name = path.rsplit('/').next()?;
        let stem = name.split(".ko").next()?;
        (stem == "nvidia" && name.starts_with("nvidia.ko")).then_some(path)
    })
}

/// Whether the module file ends with the signature marker; `None` for a compressed module or a file that
/// cannot be read.
fn signed(root: &Root, path: &str) -> Option<bool> {
    if !path.ends_with(".ko") {
        return None;
    }
    let mut file = root.open(Path::new(path)).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() < MARKER.len() as u64 {
        return Some(false);
    }
    file.seek(SeekFrom::End(-(MARKER.len() as i64))).ok()?;
    let mut tail = [0u8; 28];
    file.read_exact(&mut tail).ok()?;
    Some(tail == MARKER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nvidia_module_of_modules_dep() {
        let dep = "kernel/drivers/gpu/drm/nouveau/nouveau.ko.zst: kernel/drivers/gpu/drm/drm.ko.zst\n\
                   updates/dkms/nvidia-uvm.ko.zst: updates/dkms/nvidia.ko.zst\n\
                   updates/dkms/nvidia.ko.zst:\n";
        assert_eq!(nvidia_module(dep), Some("updates/dkms/nvidia.ko.zst"));
        assert_eq!(nvidia_module("kernel/nvidia-drm.ko:\n"), None);
        assert_eq!(MARKER.len(), 28);
    }
}
