//! The environment variables the toolkit's hook reads from a container. A leaf: the run (`run`), the rules
//! (`rules`) and the evaluation (`mod.rs`) all name them.

/// The environment variable that names the visible devices.
pub const VISIBLE_DEVICES: &str = "NVIDIA_VISIBLE_DEVICES";
/// The environment variable that names the driver capabilities.
pub const DRIVER_CAPABILITIES: &str = "NVIDIA_DRIVER_CAPABILITIES";
/// The prefix of requirement variables.
pub const REQUIRE_PREFIX: &str = "NVIDIA_REQUIRE_";
/// The variable that turns the requirement check off.
pub const DISABLE_REQUIRE: &str = "NVIDIA_DISABLE_REQUIRE";
