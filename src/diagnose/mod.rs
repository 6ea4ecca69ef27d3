//! The diagnosis engine: everything a command needs between its parsed arguments and its report.
//!
//! Reading inputs ([`read`]: binaries, their loader trees, the device code they load), collecting the machine
//! ([`machine`]), the snapshot format ([`snapshot`], one version gate for every reader), the image engine
//! ([`image`]: an image's program judged on a node, as the container toolkit would start it), what-if targets
//! ([`targets`]) and the release pipeline of `audit` ([`release`]). Commands parse their flags, lower them once
//! into the plain option types here ([`System`], [`Target`], [`read::Reading`]), call the engine, and render
//! what it returns: no clap type travels into the engine, and the engine never prints. Where a stage runs long
//! enough to be worth showing, the command passes a [`Progress`] that shows it.

pub mod env_fleet;
pub mod frameworks;
pub mod image;
pub mod machine;
pub mod read;
pub mod release;
pub mod snapshot;
pub mod targets;

use crate::system::{Env, Root};
use std::path::PathBuf;

/// The rules' judgement and its parts, as the engine hands them to the report that presents them: neither the
/// report nor a command reaches into `rules`.
pub use crate::rules::{
    Fixes, GlibcFloors, Headline, Judgement, Outcome, Providers, Standing, Verdict, evaluate, judge,
};

/// The GPUs and the driver a judgement is made for, as the rules read them from the host facts (`import`
/// models the frameworks' imports on them).
pub use crate::rules::target::{driver_of, targets as gpu_targets};
use std::sync::atomic::AtomicUsize;

/// A tool failure: bad arguments, unreadable input, output I/O. Exit 2.
#[derive(Debug)]
pub struct ToolError(pub String);

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The library's errors that already say what failed and where (the file, the line, the layer) become the
/// tool error as they are, through `?`. `std::io::Error` has no such conversion on purpose: alone it names no
/// file, so each call site says which one.
macro_rules! tool_error_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for ToolError {
            fn from(e: $t) -> ToolError {
                ToolError(e.to_string())
            }
        }
    )*};
}
tool_error_from!(
    serde_json::Error,
    crate::inspect::InspectError,
    crate::policy::PolicyError,
    crate::image::ImageError,
);

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError(format!("cannot write output: {e}"))
    }
}

/// The machine a diagnosis reads and the environment its loader is emulated in (`--root`, `--env`,
/// `--clear-env`, lowered from the command line).
#[derive(Debug, Clone, Default)]
pub struct System {
    /// The filesystem root (`None`: this machine's `/`).
    pub root: Option<PathBuf>,
    /// `KEY=VALUE` settings (a bare `KEY` removes it), applied after `clear_env`.
    pub env: Vec<String>,
    /// Start from an empty environment instead of cudadiag's own.
    pub clear_env: bool,
}

impl System {
    /// The filesystem root.
    pub fn root(&self) -> Root {
        self.root.as_ref().map_or_else(Root::host, Root::at).remembering()
    }

    /// The environment.
    pub fn env(&self) -> Env {
        Env::build(self.clear_env, &self.env)
    }
}

/// What-if targets (`--gpu`, `--driver`): another machine's GPUs and driver, in place of this one's.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// Compute capabilities or GPU names the matrix knows.
    pub gpus: Vec<String>,
    /// A driver version.
    pub driver: Option<String>,
}

impl Target {
    /// Whether a target is named: the question is then "would it run there?", not about this machine.
    pub fn what_if(&self) -> bool {
        !self.gpus.is_empty() || self.driver.is_some()
    }
}

/// Shows a long stage while it runs (the command's `report::progress`); the engine only counts.
pub trait Progress: Sync {
    /// Runs `work`, showing `what` and `count` (`unit`s done) while it runs.
    fn show(&self, what: &str, unit: &str, count: &AtomicUsize, work: &mut dyn FnMut());
}

/// Shows nothing: for stages run where nobody watches (a test, `fleet`'s own progress around them).
pub struct Quiet;

impl Progress for Quiet {
    fn show(&self, _: &str, _: &str, _: &AtomicUsize, work: &mut dyn FnMut()) {
        work();
    }
}

/// Runs `work` under `progress`, returning what it returns.
pub(crate) fn shown<T>(
    progress: &dyn Progress,
    what: &str,
    unit: &str,
    count: &AtomicUsize,
    work: impl FnOnce() -> T,
) -> T {
    let mut work = Some(work);
    let mut out = None;
    progress.show(what, unit, count, &mut || {
        if let Some(w) = work.take() {
            out = Some(w());
        }
    });
    match (out, work) {
        (Some(o), _) => o,
        // A `Progress` that did not run the work: it runs here.
        (None, Some(w)) => w(),
        (None, None) => unreachable!("the work ran once and gave its result"),
    }
}
