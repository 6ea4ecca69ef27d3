//! UEFI Secure Boot and the NVIDIA kernel module it may refuse (`host::secure_boot`).

use serde::{Deserialize, Serialize};

/// Secure Boot's state and the NVIDIA module built for the running kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecureBootFacts {
    /// Whether the firmware enforces Secure Boot (the `SecureBoot` EFI variable is 1).
    pub enabled: bool,
    /// Where that was read.
    pub source: String,
    /// The running kernel's release (`/proc/sys/kernel/osrelease`), when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The `nvidia` module file `modules.dep` lists for that kernel, as a machine path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Whether that file carries a module signature (`Some(false)`: none appended; `None`: not told, as for a
    /// compressed module, whose signature is inside the compressed data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_signed: Option<bool>,
}
