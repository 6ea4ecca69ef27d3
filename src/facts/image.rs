//! A container image, as `inspect --image` read it (`image::open`): which file, which image in it, its
//! config, and what unpacking it left out.

use serde::{Deserialize, Serialize};

/// What the report says about the image (the JSON report's `image` object).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageFacts {
    /// The file or directory given.
    pub path: String,
    /// `docker-archive` (a `docker save` tarball) or `oci-layout`.
    pub format: String,
    /// `gzip` or `zstd` when the file itself was compressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    /// Its name: the first `RepoTags` of `docker save`, or the `org.opencontainers.image.ref.name` annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The config's digest as the manifest names it (`sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_digest: Option<String>,
    /// The manifest's digest, for an OCI layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_digest: Option<String>,
    /// `os/architecture[/variant]` of the config.
    pub platform: String,
    /// Layers applied.
    pub layers: usize,
    /// The config's `Entrypoint`.
    pub entrypoint: Vec<String>,
    /// The config's `Cmd`.
    pub cmd: Vec<String>,
    /// The config's `WorkingDir` (empty: `/`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub working_dir: String,
    /// The config's `User` (empty: root).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    /// The config's `Env`, `KEY=VALUE` each.
    pub env: Vec<String>,
    /// The program inspected for the entrypoint, resolved inside the image (`None` when paths were given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// How the program was found from `Entrypoint` and `Cmd` (a wrapper passed over, the `PATH` search).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub program_steps: Vec<String>,
    /// Tar entries read over all layers.
    pub entries: u64,
    /// Large executables and library-named files that are not binaries, created empty (see the module
    /// documentation of `image`).
    pub placeholders: u64,
    /// Bytes of those files.
    pub placeholder_bytes: u64,
    /// Data files not unpacked at all: not executable, not named like a library, outside `/etc` and package
    /// metadata (documentation, sources, models).
    pub skipped_files: u64,
    /// Bytes of those files.
    pub skipped_bytes: u64,
    /// Device nodes, FIFOs and sockets in layers, not created.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub special_files: u64,
    /// What the NVIDIA Container Toolkit does to the container on the node (`container::ContainerView`: the
    /// driver files it mounts, the devices, each `NVIDIA_REQUIRE_*` and its outcome); absent without a node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolkit: Option<serde_json::Value>,
    /// Why the image's `User` gives no identity (`image::entry::lookup`); absent when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_problem: Option<UserProblem>,
    /// The Python imports judged in the image (`--import`, or a program that runs Python); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imports: Option<ImageImports>,
}

/// The Python imports judged in an image: which interpreter, which modules and why those, and what the model
/// of the process found (each import's outcome, every library of the process with how it came in).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageImports {
    /// The interpreter or environment, as a path inside the image.
    pub python: String,
    /// Why that one (`VIRTUAL_ENV`, `the image's Entrypoint`).
    pub because: String,
    /// The modules imported, in order.
    pub modules: Vec<String>,
    /// Why those modules (`--import`, `python -m torch.distributed.run`, the frameworks installed).
    pub why: String,
    /// `sys.path` as computed, each import's outcome and the process's libraries (`cudadiag import`'s report
    /// fields `sys_path`, `imports` and `loaded`).
    #[serde(default)]
    pub detail: serde_json::Value,
}

/// Why the image's `User` could not be resolved to an identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum UserProblem {
    /// A user or group name its `file` (`/etc/passwd`, `/etc/group`) does not list: the engine refuses to
    /// start the container.
    Unknown {
        /// The name.
        name: String,
        /// The file it is missing from.
        file: String,
    },
    /// `file` was not read (larger than cudadiag reads, unreadable): the user and what it may open are
    /// unchecked.
    Unread {
        /// The file.
        file: String,
        /// Why.
        reason: String,
    },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
