//! `secure-boot-blocks-module`: no NVIDIA driver is loaded, Secure Boot is enforced, and the `nvidia` module
//! built for the running kernel carries no signature: the kernel refuses it ("Key was rejected by service").
//! The facts are `host::secure_boot`'s; docs: `data/codes/secure-boot-blocks-module.md`.

use crate::facts::HostFacts;
use crate::findings::{Code, Finding};

/// The finding, when the module is there and unsigned under Secure Boot. A signed module (whose key may still
/// not be enrolled) and a compressed one (whose signature is inside the compressed data) are not judged.
pub fn secure_boot_blocks_module(h: &HostFacts) -> Option<Finding> {
    if !h.observed || h.driver.is_some() {
        return None;
    }
    let sb = h.secure_boot.as_ref().filter(|s| s.enabled)?;
    let module = sb.module.as_deref()?;
    if sb.module_signed != Some(false) {
        return None;
    }
    let kernel = sb.kernel.as_deref().unwrap_or("the running kernel");
    Some(
        Finding::new(
            Code::SecureBootBlocksModule,
            format!(
                "Secure Boot is enforced and the NVIDIA module built for {kernel} is not signed: the kernel \
                 refuses to load it, so no driver is loaded"
            ),
            "Sign the module with a key enrolled in the firmware (`sudo mokutil --import KEY.der`, confirmed at \
             the next boot; DKMS signs with its own key once enrolled), install the distribution's pre-signed \
             driver packages, or turn Secure Boot off in the firmware. `dmesg | grep -i 'key was rejected'` \
             shows the refusal.",
        )
        .because(format!("{} is 1: Secure Boot is enforced", sb.source))
        .because(format!("{module} ends with no `~Module signature appended~` marker"))
        .because("/proc/driver/nvidia/version does not exist: no NVIDIA driver is loaded"),
    )
}
