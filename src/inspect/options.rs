//! What a caller asks of `inspect`: how deep to read device code, how large an entry may inflate, and the
//! run's shared allowance. Its own leaf so that the readers it steers (`fatbin`) need not import the module
//! that calls them.

use super::budget::Budget;

/// How much of each device-code payload to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Depth {
    /// Headers everywhere; uncompressed payloads; one compressed cubin per container for the toolkit.
    #[default]
    Headers,
    /// Decompress and parse every payload (kernel names, PTX directives, every toolkit note).
    Full,
    /// No device code at all: the host ELF's facts only (for questions about loading, not running).
    NoDeviceCode,
}

/// Knobs for [`super::path`] and [`super::bytes`]. Clones share one [`Budget`]: make one per run.
#[derive(Debug, Clone)]
pub struct InspectOptions {
    /// How much of each payload to read.
    pub depth: Depth,
    /// Largest uncompressed size accepted for one entry; larger declarations are reported as damage.
    pub max_decompressed: u64,
    /// The run's allowance for inflating fatbin payloads and wheel members, and its memory of payloads
    /// already read.
    pub budget: std::sync::Arc<Budget>,
    /// Work done so far (files inspected, payloads inflated), shared by clones, for a progress line.
    pub done: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Default for InspectOptions {
    fn default() -> Self {
        InspectOptions {
            depth: Depth::Headers,
            max_decompressed: 256 << 20,
            budget: std::sync::Arc::default(),
            done: std::sync::Arc::default(),
        }
    }
}
