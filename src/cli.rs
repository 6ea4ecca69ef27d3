//! Command-line interface (clap derive). Parsing only: the commands live in `commands/`.

use crate::findings::Severity;
use crate::report::{ColorChoice, DocFormat, OutputFormat};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Explains CUDA environment failures before anything runs.
#[derive(Debug, Parser)]
#[command(
    name = "cudadiag",
    version,
    long_version = crate::build_info::LONG_VERSION,
    about = "Explains CUDA environment failures before anything runs",
    long_about = "cudadiag reads CUDA binaries (ELF files, their fatbins, cubins and PTX) without running or \
                  loading them, and says what GPU code they carry, what they link, and why they would fail (the \
                  opt-in --probe alone loads the driver's libcuda.so.1, in a child process).\n\n\
                  Examples:\n  \
                  cudadiag inspect ./app                   what GPU code ./app carries, one line\n  \
                  cudadiag inspect -v ./libkern.so         every fatbin entry, ELF details\n  \
                  cudadiag inspect --format json ./app     the stable JSON report\n  \
                  cudadiag inspect --probe ./app           the same, confirmed with the real driver (child process)\n  \
                  cudadiag inspect --image app.tar         will its program run here (there: --facts node.json)\n  \
                  cudadiag explain \"libcudart.so.12: …\"    what a pasted error means, what to install\n  \
                  cudadiag snapshot --redact -o case.json  a support bundle without user, home or host names\n  \
                  cudadiag fleet reports/ --image app.tar  which nodes will run the image, and why not\n  \
                  cudadiag probe                           try the driver: GPUs, a tiny kernel, the runtime\n  \
                  cudadiag codes                           every finding code\n  \
                  cudadiag completions bash                shell completions (bash, zsh, fish, elvish, powershell)\n\n\
                  `cudadiag --version` names the commit, the target and the bundled compatibility matrix.\n\n\
                  Exit status: 0 when no finding reaches --fail-on (default: error), 1 when one does, 2 on \
                  usage or I/O errors."
)]
pub struct Cli {
    /// When to colour human output (`auto` honours NO_COLOR and whether stdout is a terminal).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read binaries and report their device code, runtime linkage and damage.
    #[command(
        long_about = "Reads each file statically: host ELF headers (NEEDED, RPATH, RUNPATH, symbol \
        versions), every fatbin in .nv_fatbin, __nv_relfatbin or behind .nvFatBinSegment wrappers, each entry's \
        kind, architecture (sm_90a, compute_100f), PTX ISA, compression and producing toolkit, and how the CUDA \
        runtime is linked. Accepts executables, shared libraries, objects, static archives (every member), and raw \
        .fatbin, .cubin and .ptx files. Nothing is executed or loaded, unless --probe asks: then a child process \
        loads the driver's libcuda.so.1 and hands it each fatbin as data. A Python environment given alone (a \
        venv, a conda environment or a site-packages directory) has every framework installed in it judged as \
        `cudadiag import` models it: each alone, then all together in one process.\n\n\
        Examples:\n  cudadiag inspect ./app\n  cudadiag inspect -v --deep libkern.so   (decompress every entry: kernel \
        names, PTX entries)\n  cudadiag inspect --format json build/*.so | jq '.binaries[].device_code[].arch'\n  \
        cudadiag inspect --gpu 9.0 --driver 580.159.04 ./app   (would it run on an H-class GPU with that driver?)\n  \
        cudadiag inspect /opt/venv              (will torch, JAX… in this venv use the GPU here?)\n  \
        cudadiag inspect --image app.tar --facts node.json     (will this image's entrypoint run on that node?)\n  \
        cudadiag inspect --image oci-dir/ --gpu 9.0 --driver 535.104.05 /usr/local/bin/app\n  \
        cudadiag inspect --image app.tar --facts node.json --gpus '\"device=0,1\"'   (as `docker run --gpus`)\n  \
        cudadiag inspect --image app.tar --facts node.json --gpus none   (no GPU request: as the image asks)\n  \
        cudadiag inspect --image app.tar --facts node.json --device nvidia.com/gpu=all   (CDI)\n  \
        cudadiag inspect --image app.tar --facts node.json --import torch   (will `import torch` use the GPU there?)"
    )]
    Inspect(InspectArgs),
    /// Diagnose the machine alone: driver, GPUs, device nodes, environment, every CUDA library.
    #[command(
        long_about = "Reads the machine from files alone, without loading the driver or running anything: the \
        kernel module (/proc/driver/nvidia/version), GPUs (procfs and the PCI bus), /dev/nvidia* and their \
        permissions, nouveau, WSL2, containers, CUDA_VISIBLE_DEVICES and the other CUDA variables, which \
        libcuda.so.1 the loader would pick, and every CUDA library on disk with its version and owner. The \
        active Python environment (VIRTUAL_ENV, CONDA_PREFIX, else python3 on PATH) has each framework installed \
        in it judged as `cudadiag import` models it, one line each.\n\n\
        Examples:\n  cudadiag doctor\n  cudadiag doctor -v                      (list every library copy)\n  \
        cudadiag doctor --root /mnt/image --clear-env --env LD_LIBRARY_PATH=/usr/local/cuda/lib64\n  \
        cudadiag doctor --facts case.json       (a snapshot taken elsewhere)"
    )]
    Doctor(DoctorArgs),
    /// What `import torch` (and more modules, in order, in one process) will load, and whether it will use the GPU.
    #[command(
        long_about = "Models the imports as the frameworks' own Python code does them, in one process, from files \
        alone (nothing is imported or run): the interpreter's sys.path (--python, --venv, else VIRTUAL_ENV or \
        CONDA_PREFIX, else python3 on PATH), the framework's preloads by path, its extension modules' DT_NEEDED \
        trees through the loader with what is already loaded, then the first GPU use (the driver, NVML, NVRTC, \
        cuDNN's sub-libraries) and the framework's own checks. Each library says how it was loaded and from \
        where.\n\n\
        Examples:\n  cudadiag import torch --venv /opt/venv\n  \
        cudadiag import torch --python /opt/venv/bin/python --env LD_LIBRARY_PATH=/usr/local/cuda/lib64\n  \
        cudadiag import torch --venv /opt/venv --gpu 9.0 --driver 535.104.05 --format json"
    )]
    Import(ImportArgs),
    /// Write the machine's facts (and, given paths, the binaries' facts) to a JSON file for offline analysis.
    #[command(
        long_about = "Collects what `doctor` reads (and, for each PATH, what `inspect` reads) into one JSON file. \
        Needs no GPU, no root and no install. Analyse it elsewhere with `cudadiag doctor --facts FILE` or \
        `cudadiag inspect --facts FILE app`: the findings are the ones this machine gives.\n\n\
        Examples:\n  cudadiag snapshot -o case.json ./app\n  \
        cudadiag snapshot --redact -o case.json   (a support bundle: no user, home or host names)\n  \
        cudadiag snapshot --format labels -o -    (node labels for a scheduler, conda's CUDA values)"
    )]
    Snapshot(SnapshotArgs),
    /// Compare two machines (snapshots or JSON reports): the differences that explain a failure, ranked.
    #[command(
        long_about = "Compares two machines, each a snapshot (`cudadiag snapshot -o FILE`) or a JSON report \
        (`cudadiag doctor --format json`), and lists what differs that decides whether CUDA runs, most \
        important first: the kernel module against the driver libraries (a node upgraded without a reboot), the \
        driver and the CUDA it runs, GPUs and MIG, device nodes, the libcuda and CUDA libraries each would load, \
        the environment; then the findings present on one side only. Each line is `what · A · B` with why it \
        matters beneath.\n\n\
        Examples:\n  cudadiag diff good-node.json bad-node.json\n  \
        cudadiag diff --format json a.json b.json | jq '.differences[0]'\n\n\
        Exit status: 0 when no difference that matters, 1 when there are differences (as diff(1)), 2 when a \
        file cannot be read or is neither a snapshot nor a JSON report."
    )]
    Diff(DiffArgs),
    /// List every finding code, slug and default severity.
    Codes(CodesArgs),
    /// Check release artifacts against a policy (CI gate; no GPU or driver needed).
    #[command(
        long_about = "Reads every binary in the given files, directories and Python wheels and checks \
        them against a policy file: architectures that must have SASS, a PTX for future GPUs, the oldest \
        driver to support, allowed CUDA majors, libraries that must not be shipped (libcuda, libnvidia-ml), \
        absolute or stubs/ RPATHs, cudart linkage. Severities can be overridden and findings waived (with a \
        reason and an expiry date); unused and expired waivers are reported.\n\n\
        Examples:\n  cudadiag init                                  write a commented cudadiag.toml\n  \
        cudadiag audit dist/ --policy cudadiag.toml\n  \
        cudadiag audit dist/*.whl --format sarif > cudadiag.sarif\n  \
        cudadiag audit build/ --format github          annotations in GitHub Actions\n\n\
        Exit status: 0 when no finding reaches --fail-on (default: error), 1 when one does, 2 on usage, \
        policy or I/O errors."
    )]
    Audit(AuditArgs),
    /// Write a fully commented policy template (cudadiag.toml).
    Init(InitArgs),
    /// Explain a finding (code or slug) or a pasted CUDA, loader or NVML error message.
    #[command(
        long_about = "Explains a finding code (CD100), a slug (no-kernel-image), a CUDA error number or name \
        (209, cudaErrorNoKernelImageForDevice), or a pasted error message: the exact texts of cudaGetErrorString, \
        the dynamic loader, NVML and the container runtime map to the findings that predict them.\n\n\
        Examples:\n  cudadiag explain CD100\n  cudadiag explain \"no kernel image is available for execution on the device\"\n  \
        cudadiag explain --format json \"Failed to initialize NVML: Driver/library version mismatch\"\n  \
        cudadiag explain 209 --check ./app --gpu 9.0 --driver 580.159.04   (is that why ./app fails there?)\n  \
        cudadiag explain \"libcudart.so.12: cannot open shared object file\"   (its CUDA major, the pip/conda/apt/dnf \
        packages that install it, and where copies are on this machine)\n  \
        cudadiag explain \"libcudart.so.12: cannot open shared object file\" --check ./app --env LD_LIBRARY_PATH=/opt/lib   \
        (is it missing for ./app, and every place the loader looks)"
    )]
    Explain(ExplainArgs),
    /// Query the bundled compatibility matrix.
    #[command(
        long_about = "Answers questions from the compatibility matrix, with the source of every answer.\n\n\
        Examples:\n  cudadiag matrix --toolkit 12.4        the drivers CUDA 12.4 needs\n  \
        cudadiag matrix --driver 535.104.05   what CUDA and PTX that driver runs\n  \
        cudadiag matrix --ptx 8.7             which CUDA and driver introduced PTX ISA 8.7\n  \
        cudadiag matrix --gpu \"RTX 4090\"      its compute capability and architecture"
    )]
    Matrix(MatrixArgs),
    /// Try the real driver, in a child process: load libcuda, list the GPUs, run a tiny kernel.
    #[command(
        long_about = "Runs the live probe alone: cudadiag re-executes itself as a child process that loads \
        libcuda.so.1 as applications do, calls cuInit, reads the driver version and every visible GPU (name, \
        compute capability, memory, UUID, PCI bus id), then on each GPU retains the primary context, allocates \
        memory, JIT-compiles, launches and checks a tiny PTX kernel, and finally asks a libcudart what \
        cudaGetDeviceCount returns. A crash or hang in the driver kills only the child and is reported as \
        probe-failed. The environment given with --env/--clear-env is the child's.\n\n\
        Examples:\n  cudadiag probe\n  cudadiag probe --env CUDA_VISIBLE_DEVICES=1 --format json\n  \
        cudadiag probe --cudart /opt/app/lib/libcudart.so.12 --probe-timeout 60"
    )]
    Probe(ProbeArgs),
    /// Group many nodes' reports or snapshots by finding, driver, GPU model and verdict; predict an artefact's or
    /// image's outcome on each.
    #[command(
        long_about = "Reads node reports (`doctor --format json`, `inspect --format json`) and snapshots \
        (`cudadiag snapshot`), given as files or directories of them (walked for *.json files, other files \
        counted and skipped), in parallel, and groups the nodes: by finding, driver version, GPU model and \
        verdict (fails: an error; warnings; ok). A node is named by the host name its file carries, else by the \
        file name without .json (`srun --output=DIR/%N.json` names each file after its node). Files that are not JSON or not \
        cudadiag's are counted and listed with -v, never fatal.\n\n\
        With --artifact, the program, library, directory or wheel is read once and judged against each node's \
        recorded facts, as `inspect --facts NODE.json ARTIFACT` would: will it run there, and why not. The \
        loader tree is not predicted (a node's report does not hold its filesystem). An --artifact that is a \
        Python environment (a venv with pyvenv.cfg, a conda env with conda-meta/) is judged by `import` of each \
        framework installed there, as `cudadiag import --venv ENV --facts NODE.json --clear-env` would, with the \
        LD_LIBRARY_PATH and LD_PRELOAD the node's report recorded (read on this machine, as on a shared \
        filesystem).\n\n\
        With --image, the image's program (its Entrypoint/Cmd) is judged on each node as `inspect --image IMAGE \
        --facts NODE.json` judges it: the NVIDIA Container Toolkit's refusal first (container-requirement-unmet), \
        then the node's driver libraries the toolkit mounts and the image's own libraries, loader tree included. \
        The mounts change the image's tree, so the image is unpacked once per distinct driver version among the \
        nodes (each tree judged on all its nodes, then removed).\n\n\
        Examples:\n  cudadiag fleet reports/\n  cudadiag fleet -v reports/ | less\n  \
        cudadiag fleet reports/ --format json | jq '.findings[\"driver-library-mismatch\"]'\n  \
        cudadiag fleet reports/ --artifact ./app    (exit 1 when it fails on any node)\n  \
        cudadiag fleet reports/ --image app.tar     (a `docker save` or OCI image)\n  \
        cudadiag fleet reports/ --artifact ~/venvs/train   (will `import torch` there use each node's GPU?)\n\n\
        Exit status: without --artifact or --image, 1 when a node has a finding at or above --fail-on (default: \
        error); with either, 1 when the artefact or image fails on any node (--fail-on never: 0); 2 on usage or I/O errors, or when \
        no node was read."
    )]
    Fleet(FleetArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to standard output.
    #[command(
        long_about = "Prints the completion script for SHELL to standard output. Load it from your shell's \
        start-up file, or save it where the shell looks for completions.\n\n\
        Examples:\n  \
        cudadiag completions bash > ~/.local/share/bash-completion/completions/cudadiag\n  \
        cudadiag completions zsh > \"${fpath[1]}/_cudadiag\"\n  \
        cudadiag completions fish > ~/.config/fish/completions/cudadiag.fish\n  \
        cudadiag completions elvish >> ~/.config/elvish/rc.elv\n  \
        cudadiag completions powershell >> $PROFILE"
    )]
    Completions(CompletionsArgs),
    /// Write the manual pages (internal: run by scripts/dist.sh; the release tarball ships them).
    #[command(name = "__man", hide = true)]
    Man(ManArgs),
    /// The probe's child process (internal: run by `probe` and `inspect --probe`).
    #[command(name = "__probe", hide = true)]
    ProbeChild,
}

/// What-if targets and the matrix, shared by commands that give a verdict.
#[derive(Debug, Args, Clone, Default)]
pub struct TargetArgs {
    /// Check against this GPU instead of the machine's (repeatable): a compute capability (`8.9`, `sm_89`), a
    /// name the matrix knows (`"RTX 4090"`, `"NVIDIA H200"`) or a family word of one compute capability
    /// (`orin`, `xavier`, `thor`, `gh200`).
    #[arg(long = "gpu", value_name = "GPU")]
    pub gpus: Vec<String>,
    /// Check against this driver version instead of the machine's (`535.104.05`).
    #[arg(long, value_name = "VERSION")]
    pub driver: Option<String>,
    /// Use this compatibility matrix instead of the bundled one (same format as data/compat.toml).
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
}

impl TargetArgs {
    /// The engine's what-if target (`--gpu`, `--driver`; the matrix is loaded by the command).
    pub fn lower(&self) -> crate::diagnose::Target {
        crate::diagnose::Target {
            gpus: self.gpus.clone(),
            driver: self.driver.clone(),
        }
    }
}

/// `cudadiag explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A code (`CD100`), slug (`no-kernel-image`), CUDA error (`209`, `cudaErrorNoKernelImageForDevice`) or a
    /// pasted error message.
    #[arg(required = true, value_name = "CODE|SLUG|TEXT", num_args = 1..)]
    pub query: Vec<String>,
    /// Check these binaries for the findings the query points to, as `inspect` does (their libraries resolved
    /// through --root and the environment, on this machine or the --gpu/--driver target), and say which are
    /// confirmed, with every line of their evidence, and which are ruled out.
    #[arg(long = "check", value_name = "PATH")]
    pub check: Vec<PathBuf>,
    /// With --check: judge the binaries alone, without this machine's driver, GPUs and environment.
    #[arg(long, requires = "check")]
    pub no_host: bool,
    /// What-if targets for --check, and the matrix.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The machine: where --check resolves libraries and where copies of a library the query names
    /// (`libcudart.so.12`) are looked for.
    #[command(flatten)]
    pub system: SystemArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DocFormat::Human)]
    pub format: DocFormat,
}

/// `cudadiag matrix`.
#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// A CUDA toolkit or runtime version (`12.4`).
    #[arg(long, value_name = "VERSION")]
    pub toolkit: Option<String>,
    /// A driver version (`535.104.05`).
    #[arg(long, value_name = "VERSION")]
    pub driver: Option<String>,
    /// A PTX ISA version (`8.7`).
    #[arg(long, value_name = "ISA")]
    pub ptx: Option<String>,
    /// A GPU: a name (`"RTX 4090"`, or a family word such as `orin`), a PCI device id (`0x2684`) or a compute
    /// capability (`8.9`, `sm_89`).
    #[arg(long, value_name = "GPU")]
    pub gpu: Option<String>,
    /// A Jetson Linux (L4T) release (`36.4.3`, or `R36.4.3` as `/etc/nv_tegra_release` says): its JetPack, the
    /// CUDA its driver supports, the Jetsons it runs on.
    #[arg(long, value_name = "RELEASE")]
    pub l4t: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DocFormat::Human)]
    pub format: DocFormat,
    /// Use this compatibility matrix instead of the bundled one.
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
}

/// Options of the live probe, shared by `probe` and `inspect --probe`.
#[derive(Debug, Args, Clone)]
pub struct ProbeOptionArgs {
    /// Kill the probe's child process after this many seconds (a hung driver becomes a probe-failed finding).
    #[arg(long, default_value_t = 30, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub probe_timeout: u64,
    /// The libcudart the runtime probe loads (default: the one the inspected binary needs, else the first of
    /// libcudart.so.13, .12, .11.0 that dlopen finds).
    #[arg(long, value_name = "PATH")]
    pub cudart: Option<PathBuf>,
}

/// `cudadiag probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Probe options.
    #[command(flatten)]
    pub probe: ProbeOptionArgs,
    /// The environment the probe runs in (--root does not apply: the probe runs on this machine).
    #[command(flatten)]
    pub system: SystemArgs,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Options shared by commands that produce a report.
#[derive(Debug, Args, Clone)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,
    /// Exit with status 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
}

/// `--fail-on` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Fail on errors only.
    Error,
    /// Fail on warnings and errors.
    Warning,
    /// Fail on any finding.
    Note,
    /// Never fail because of findings.
    Never,
}

impl FailOn {
    /// The threshold severity, or `None` for never.
    pub fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Note => Some(Severity::Note),
            FailOn::Never => None,
        }
    }
}

/// Which machine to diagnose: a root directory and an environment (shared by `inspect`, `doctor`, …).
#[derive(Debug, Args, Clone, Default)]
pub struct SystemArgs {
    /// Read the machine's files under DIR instead of `/` (a mounted disk, an unpacked container image).
    /// Every path, ld.so.cache and ld.so.conf included, is read inside it; links never escape it.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Set an environment variable for the diagnosis (repeatable); `KEY` alone removes it. Applied after
    /// --clear-env.
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Start from an empty environment instead of cudadiag's own (replay a customer's exactly).
    #[arg(long)]
    pub clear_env: bool,
}

impl SystemArgs {
    /// The engine's options for the machine these arguments name: lowered once, as the command starts.
    pub fn lower(&self) -> crate::diagnose::System {
        crate::diagnose::System {
            root: self.root.clone(),
            env: self.env.clone(),
            clear_env: self.clear_env,
        }
    }
}

/// `cudadiag inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Files to inspect, or one Python environment: a venv (with pyvenv.cfg), a conda environment (with
    /// conda-meta/) or a site-packages/dist-packages directory. With --root or --image, a path may be written as
    /// the path inside that root (`/usr/bin/app`); with --image it always is.
    #[arg(required_unless_present = "image", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Inspect a container image: a `docker save` tarball, an OCI image layout (directory or tar), or either
    /// compressed with gzip or zstd. Its layers are applied (whiteouts included) in a private temporary
    /// directory; its Env is the environment (--env adds, --clear-env replaces) and, without PATH, its
    /// Entrypoint/Cmd program is inspected. The node is this machine, --facts, or --gpu/--driver.
    #[arg(long, value_name = "IMAGE", conflicts_with_all = ["root", "probe"])]
    pub image: Option<PathBuf>,
    /// With --image: the platform to pick from a multi-platform image (default: this machine's, linux/amd64
    /// or linux/arm64).
    #[arg(long, value_name = "OS/ARCH[/VARIANT]", requires = "image")]
    pub platform: Option<String>,
    /// With --image: the GPUs the container is started with, as `docker run --gpus` takes them: `all`, a count
    /// (`2`: GPUs 0 and 1), `'"device=0,2"'` or `device=GPU-<uuid>` (quote a list: docker reads it as CSV),
    /// `capabilities=compute,utility` beside them; `none` for no GPU request (the image's own
    /// NVIDIA_VISIBLE_DEVICES decides). Default: an image that does not set NVIDIA_VISIBLE_DEVICES is judged
    /// as run with every GPU (`--gpus all`, a Kubernetes `nvidia.com/gpu` request), with a note.
    #[arg(long = "gpus", value_name = "all|none|N|device=ID,…", requires = "image", value_parser = crate::container::run::parse_gpus)]
    pub run_gpus: Option<crate::container::run::GpuRequest>,
    /// With --image: the OCI runtime, `nvidia` (the NVIDIA Container Runtime: the image's NVIDIA_VISIBLE_DEVICES
    /// is acted on) or `runc` (no toolkit: only --gpus injects the GPUs).
    #[arg(long, value_name = "nvidia|runc", requires = "image", value_parser = crate::container::run::parse_runtime)]
    pub runtime: Option<crate::container::run::Runtime>,
    /// With --image: a CDI device the container is started with (`nvidia.com/gpu=all`, `nvidia.com/gpu=0`,
    /// as `docker run --device` or `podman run --device` take it): the node's CDI spec injects the GPU and the
    /// driver, and no NVIDIA_REQUIRE_* is checked. Repeatable.
    #[arg(long = "device", value_name = "nvidia.com/gpu=ID", requires = "image", conflicts_with = "run_gpus", value_parser = crate::container::run::parse_cdi)]
    pub cdi: Vec<String>,
    /// With --image: model `import MODULE` (torch, jax, tensorflow, cupy, onnxruntime) in one Python process
    /// of the image, in the order given, as `cudadiag import` does: the interpreter is the image's
    /// Entrypoint when it runs Python, else the image's VIRTUAL_ENV, CONDA_PREFIX or `python3` on its PATH;
    /// the node's driver libraries are there when the container toolkit injects them. Without it, an image
    /// whose program is Python is judged by what it imports (`-m MODULE`) or the frameworks it has installed.
    /// Repeatable.
    #[arg(long = "import", value_name = "MODULE", requires = "image")]
    pub imports: Vec<String>,
    /// Show every device-code entry, the ELF details, the loader tree and every step of a missing library's
    /// search (shown in short without it). Kernel names are counted with their first few; with --deep, all.
    #[arg(short, long)]
    pub verbose: bool,
    /// Decompress and parse every payload (kernel names, PTX directives, every toolkit note). Slower on large
    /// libraries; by default only uncompressed payloads and one cubin per container are read.
    #[arg(long)]
    pub deep: bool,
    /// Do not resolve the libraries the binaries load (no loader tree, no library findings, no device code of
    /// loaded libraries): the binaries' own facts only, as `cuobjdump` lists them.
    #[arg(long)]
    pub no_libraries: bool,
    /// Judge the binaries alone, without this machine's driver, GPUs and environment (which `inspect` reads
    /// otherwise, unless `--facts`, `--gpu` or `--driver` name another machine).
    #[arg(long, conflicts_with = "facts")]
    pub no_host: bool,
    /// Do not read device code, neither the binaries' nor their libraries': the loader tree, library and host
    /// findings only. The fast answer to `cannot open shared object file` on a large tree.
    #[arg(long, conflicts_with_all = ["deep", "no_libraries"])]
    pub no_device_code: bool,
    /// Largest uncompressed size accepted for one fatbin entry, in MiB (bigger declarations are reported as
    /// damage, never allocated).
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub max_entry_mib: u64,
    /// Also run the live probe: check the static verdict against the real driver, loading each fatbin of the
    /// inspected files as data on every kind of GPU present (in a child process; see `cudadiag probe`).
    #[arg(long)]
    pub probe: bool,
    /// Live probe options (used with --probe).
    #[command(flatten)]
    pub probe_options: ProbeOptionArgs,
    /// The machine to diagnose.
    #[command(flatten)]
    pub system: SystemArgs,
    /// What-if targets and the matrix.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Take the machine's facts from a snapshot (`cudadiag snapshot -o FILE`) and judge the binaries against
    /// that machine.
    #[arg(long, value_name = "FILE")]
    pub facts: Option<PathBuf>,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `cudadiag doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// List every CUDA library file found (by default one line per family, version and directory), and every
    /// problem met while reading the machine.
    #[arg(short, long)]
    pub verbose: bool,
    /// Skip the catalogue of CUDA libraries on disk (the only part that walks directories).
    #[arg(long)]
    pub no_catalog: bool,
    /// Read the machine's facts from a snapshot instead of the machine.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["root", "env", "clear_env"])]
    pub facts: Option<PathBuf>,
    /// Use this compatibility matrix instead of the bundled one (compute capabilities, the driver's CUDA).
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
    /// The machine to diagnose.
    #[command(flatten)]
    pub system: SystemArgs,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `cudadiag import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The modules, imported in this order in one process (`torch`).
    #[arg(required = true, value_name = "MODULE")]
    pub modules: Vec<String>,
    /// The Python interpreter, as a path inside --root (`/opt/venv/bin/python`) or a name on PATH.
    #[arg(long, value_name = "PATH", conflicts_with = "venv")]
    pub python: Option<PathBuf>,
    /// The environment: a venv, a conda environment or a prefix such as /usr, inside --root.
    #[arg(long, value_name = "DIR")]
    pub venv: Option<PathBuf>,
    /// Read the machine's GPUs and driver from a snapshot instead of the machine.
    #[arg(long, value_name = "FILE")]
    pub facts: Option<PathBuf>,
    /// List every sys.path entry and the interpreter's own libraries too.
    #[arg(short, long)]
    pub verbose: bool,
    /// What-if targets and the matrix.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The machine.
    #[command(flatten)]
    pub system: SystemArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DocFormat::Human)]
    pub format: DocFormat,
    /// Exit with status 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
}

/// `cudadiag audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Files, directories (walked recursively) and Python wheels (.whl) to audit.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The policy file (default: ./cudadiag.toml).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Use this compatibility matrix instead of the bundled one.
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `cudadiag snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Where to write the snapshot (`-` for standard output).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Binaries to include (their facts, as `inspect` reads them).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Skip the catalogue of CUDA libraries on disk.
    #[arg(long)]
    pub no_catalog: bool,
    /// A support bundle: replace user names, home directories, the host name and every environment value off
    /// the CUDA allow-list by placeholders (`user-1`, `/home/user-1`, `host-1`, `redacted-1`), the same name
    /// always by the same one, and list what kinds were replaced (`redactions`). `doctor --facts` and
    /// `inspect --facts` give the same findings on it.
    #[arg(long)]
    pub redact: bool,
    /// `json`: the snapshot. `labels`: GPU feature discovery node labels (`nvidia.com/cuda.driver.major=580`)
    /// and conda's virtual package values (`CONDA_OVERRIDE_CUDA=13.0`), one `key=value` a line, sorted; only
    /// what is known (a machine without a GPU gets no GPU labels).
    #[arg(long, value_enum, default_value_t = SnapshotFormat::Json)]
    pub format: SnapshotFormat,
    /// The machine to collect.
    #[command(flatten)]
    pub system: SystemArgs,
}

/// `cudadiag fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Node reports or snapshots, or directories of them (walked for `*.json`).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A program, library, directory or wheel to judge on every node (read once); a Python environment (venv,
    /// conda env) is judged by importing its frameworks.
    #[arg(long = "artifact", value_name = "PATH", conflicts_with = "image")]
    pub artifact: Vec<PathBuf>,
    /// A container image whose program (its Entrypoint/Cmd) to judge on every node, as `inspect --image IMAGE
    /// --facts NODE.json` does: the NVIDIA Container Toolkit's refusal, the node's driver libraries it mounts,
    /// the image's own libraries. The image is unpacked once per distinct driver version among the nodes.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<PathBuf>,
    /// With --image: the platform to pick from a multi-platform image (default: this machine's, linux/amd64
    /// or linux/arm64).
    #[arg(long, value_name = "OS/ARCH[/VARIANT]", requires = "image")]
    pub platform: Option<String>,
    /// Show every node of every group, and every file not used with why.
    #[arg(short, long)]
    pub verbose: bool,
    /// Use this compatibility matrix instead of the bundled one (snapshots' findings and --artifact).
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DocFormat::Human)]
    pub format: DocFormat,
    /// Without --artifact or --image: exit 1 when a node has a finding at least this severe. With either:
    /// `never` keeps the exit status 0 when the artefact or image fails somewhere.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
}

/// What `snapshot` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SnapshotFormat {
    /// The snapshot (JSON), for `--facts`, `diff` and fleets.
    Json,
    /// Node labels, one `key=value` a line.
    Labels,
}

/// `cudadiag diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first machine: a snapshot or a `--format json` report (the one that works, say).
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The second machine (the one that fails).
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DocFormat::Human)]
    pub format: DocFormat,
    /// Use this compatibility matrix (compute capabilities, the driver's CUDA, and the rules run over
    /// snapshots) instead of the bundled one.
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
}

/// `cudadiag init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to write the template.
    #[arg(short, long, default_value = "cudadiag.toml", value_name = "FILE")]
    pub output: PathBuf,
    /// Overwrite an existing file.
    #[arg(long)]
    pub force: bool,
}

/// `cudadiag completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `cudadiag __man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `cudadiag.1` and one page per command (`cudadiag-inspect.1`, …) into DIR instead of printing
    /// `cudadiag.1` to standard output.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `cudadiag codes`.
#[derive(Debug, Args)]
pub struct CodesArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = DocFormat::Human)]
    pub format: DocFormat,
}
