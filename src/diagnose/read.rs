//! The read pipeline of a diagnosis of binaries (`inspect`, `explain --check`, and the programs of
//! `inspect --image` and `fleet --image`): the binaries, their loader trees resolved through the root and the
//! environment, the device code and the CUDA runtime of the libraries they load, the machine (this one, a
//! snapshot's, or none with a what-if target) and the what-if targets.

use super::{Progress, System, Target, ToolError, machine};
use crate::facts::Facts;
use crate::inspect::{self, Depth, InspectOptions};
use crate::matrix::Matrix;
use std::path::PathBuf;

/// The files `inspect` reads: with `--root DIR`, a path that is not under DIR on this machine and names a file
/// inside the root (`/usr/bin/app`, read as `DIR/usr/bin/app`, links resolved inside the root) is that file;
/// any other path is read as given.
pub fn in_root(paths: &[PathBuf], system: &System) -> Vec<PathBuf> {
    let Some(dir) = &system.root else {
        return paths.to_vec();
    };
    let root = crate::system::Root::at(dir);
    paths
        .iter()
        .map(|p| {
            if p.starts_with(dir) || (p.is_relative() && p.exists()) {
                return p.clone();
            }
            match root.resolve(&crate::image::machine_path(p)) {
                Ok(real) if root.is_file(&real) => root.host_path(&real),
                _ => p.clone(),
            }
        })
        .collect()
}

/// What to read for a diagnosis of binaries: `inspect`'s arguments lowered, and `explain --check`'s; the
/// default is what `inspect` reads without flags (and what `fleet --image` reads of the image's program).
#[derive(Debug, Clone)]
pub struct Reading {
    /// The files.
    pub paths: Vec<PathBuf>,
    /// How deep to read their device code.
    pub opts: InspectOptions,
    /// The filesystem root and the environment the loader is emulated in.
    pub system: System,
    /// What-if targets (`--gpu`, `--driver`): when given, this machine is not read.
    pub target: Target,
    /// Resolve the libraries the binaries load (the loader tree).
    pub libraries: bool,
    /// Read the device code of the libraries they load.
    pub device_code: bool,
    /// Read this machine's facts (unless a what-if target or a snapshot names another machine).
    pub host: bool,
    /// A `cudadiag snapshot` of the machine to judge them for.
    pub snapshot: Option<PathBuf>,
}

impl Default for Reading {
    fn default() -> Reading {
        Reading {
            paths: Vec::new(),
            opts: InspectOptions::default(),
            system: System::default(),
            target: Target::default(),
            libraries: true,
            device_code: true,
            host: true,
            snapshot: None,
        }
    }
}

/// The facts a diagnosis of binaries rests on: the binaries, their loader trees resolved through the root and
/// the environment, the device code of the libraries they load, the machine (this one, a snapshot's, or none
/// with a what-if target) and the what-if targets. `matrix` gives the compatibility matrix; it is loaded while
/// the binaries are read. `progress` shows the reading of device code.
pub fn read<M>(
    r: &Reading,
    matrix: impl FnOnce() -> Result<M, ToolError> + Send,
    progress: &dyn Progress,
) -> Result<(Facts, M), ToolError>
where
    M: std::borrow::Borrow<Matrix> + Send,
{
    let what_if = r.target.what_if();
    let read_host = r.snapshot.is_none() && !what_if && r.host;
    let (root, env) = (r.system.root(), r.system.env());
    let host_root = if read_host {
        Some(machine::checked_root(&r.system)?)
    } else {
        None
    };
    // The matrix and this machine's facts are independent of the binaries: they are read on other threads
    // while the binaries and their libraries are (on a large tree, that hides their cost entirely).
    let (facts, matrix, host) = std::thread::scope(|s| {
        let matrix = s.spawn(|| {
            let matrix = matrix();
            // The rules on libraries ask for the bundled pip table: parsed here, it is not parsed on the main
            // thread once the walk is done (1.4% of the main thread's samples of the loader tree on 2 cores).
            if r.libraries {
                crate::rules::packages::pip();
            }
            matrix
        });
        let host = host_root
            .as_ref()
            .map(|root| s.spawn(|| machine::collect_for_binaries(root, &env)));
        // `--deep` on a framework library inflates thousands of payloads: say so on a terminal.
        let facts = super::shown(
            progress,
            "reading device code…",
            "payloads",
            &r.opts.done,
            || binaries_and_libraries(&r.paths, r, &root, &env),
        );
        use crate::parallel::join;
        (facts, join(matrix), host.map(join))
    });
    let matrix = matrix?;
    let mut facts = facts?;
    if let Some(snapshot) = &r.snapshot {
        let mut host = super::snapshot::load_host(snapshot)?;
        crate::host::enrich::with_matrix(&mut host, matrix.borrow());
        facts.host = Some(host);
    } else if let Some(mut host) = host {
        // "Will it run here?": the machine's driver, GPUs, device nodes and environment, read through the root.
        // A machine with no trace of NVIDIA (a build box, a laptop) is not judged: the binaries are, alone.
        if machine::nvidia_present(&host) {
            crate::host::enrich::with_matrix(&mut host, matrix.borrow());
            facts.host = Some(host);
            facts.loader_on_host = true;
        } else {
            facts.unjudged_glibc = host.glibc.take();
            facts.host_note = Some(NO_NVIDIA_NOTE.into());
        }
    }
    super::targets::apply(&r.target, &mut facts, matrix.borrow())?;
    Ok((facts, matrix))
}

/// Why a machine's facts were read but not judged.
pub const NO_NVIDIA_NOTE: &str = "no NVIDIA GPU or driver on this machine: the binaries are judged alone \
     (--gpu/--driver or --facts judge them for another machine; `cudadiag doctor` explains this one)";

/// The facts of the binaries at `paths`, their libraries' resolution and (unless `--no-device-code`) the
/// device code of the libraries they load, as `r` says.
pub fn binaries_and_libraries(
    paths: &[PathBuf],
    r: &Reading,
    root: &crate::system::Root,
    env: &crate::system::Env,
) -> Result<Facts, ToolError> {
    let mut facts = Facts::default();
    let mut files = crate::loader::Files::default();
    let opts = &r.opts;
    // `--deep` inflates every payload of a program, on every core, for a second or more: the walk takes what
    // it needs of the program from a reading of its headers instead of waiting for that.
    let headers_first = r.libraries && opts.depth == Depth::Full;
    let headers = InspectOptions {
        depth: Depth::Headers,
        ..opts.clone()
    };
    let mut seen = std::collections::HashSet::new();
    let mut loaded = Vec::new();
    for path in paths {
        // The binary is inspected on a thread of its own while its libraries are resolved here: the walk needs
        // only its dynamic section, and asks for its symbols (tens of thousands in a framework library) when
        // the tree is walked. The device code of the libraries the process maps is read as soon as they are
        // known, while the symbol checks, copies and origins finish the tree (and `--deep` inflates the
        // program's payloads): on 16 cores, after them it was 2.9 ms of a default `inspect` of
        // `libtorch_cuda.so`, and `libtorch_nvshmem.so`'s entries 79 ms of a `--deep` one.
        let (binaries, resolution, libraries_code) = std::thread::scope(|s| {
            let mut inspected = Some(s.spawn(|| inspect::path(path, opts)));
            let mut read_headers = headers_first.then(|| s.spawn(|| inspect::path(path, &headers)));
            let mut binaries = None;
            let kept = std::cell::Cell::new(false);
            let mut reading = None;
            let resolution = r.libraries.then(|| {
                files.prepare(root);
                // A file of a Python framework's distribution is resolved in the process its import builds.
                let framework = machine_path(root, path).and_then(|m| {
                    crate::imports::file::loading(root, env, &m, crate::imports::known(), &mut files)
                });
                let earlier = framework.as_ref().map_or(&[][..], |(_, e)| &e[..]);
                let main = || {
                    let program = read_headers.take().map(crate::parallel::join);
                    let read = match &program {
                        Some(read) => Some(read),
                        None => binaries
                            .insert(inspected.take().map(crate::parallel::join))
                            .as_ref(),
                    };
                    kept.set(matches!(read, Some(Ok(list)) if tree_kept(list)));
                    main_symbols(read)
                };
                let walked = |objects: &[crate::facts::loader::LoadedObject]| {
                    if r.device_code && kept.get() {
                        let libraries = device_code_candidates(objects, &mut seen);
                        reading = Some(s.spawn(move || loaded_device_code(&libraries, root, opts)));
                    }
                };
                let mut res =
                    crate::loader::resolve_after(root, env, path, &mut files, earlier, main, walked);
                if let Some(res) = &mut res {
                    res.framework = framework.map(|(load, _)| load);
                }
                res
            });
            let libraries_code = reading.map(crate::parallel::join).unwrap_or_default();
            let binaries = binaries
                .flatten()
                .or_else(|| inspected.map(crate::parallel::join));
            (binaries, resolution.flatten(), libraries_code)
        });
        let binaries = binaries.expect("the binary was inspected")?;
        if tree_kept(&binaries) {
            facts.libraries.extend(resolution);
        }
        loaded.extend(libraries_code);
        facts.binaries.extend(binaries);
    }
    if r.device_code {
        facts.loaded = loaded;
    }
    facts.runtimes = loaded_runtimes(&facts, root);
    facts.nccl = crate::inspect::nccl::loaded(&facts.libraries, root);
    facts.python = crate::python::site::environments(root, &facts.libraries);
    let sites: Vec<String> = facts.python.iter().map(|e| e.site.clone()).collect();
    facts.ptxas = crate::inspect::ptxas::in_environments(&sites, root);
    // Unmapping a few dozen libraries from a process with many threads costs every core a TLB flush each:
    // the run, about to report and exit, does not wait for it.
    crate::parallel::discard(files);
    Ok(facts)
}

/// The machine's path of `path`, a file read on this host: itself (made absolute) on this machine, the part
/// under the root's directory with `--root` or an image; `None` for a file outside the root.
fn machine_path(root: &crate::system::Root, path: &std::path::Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    if root.is_host() {
        return Some(absolute);
    }
    let rel = match path.strip_prefix(root.dir()) {
        Ok(rel) => rel.to_path_buf(),
        Err(_) => absolute
            .strip_prefix(std::path::absolute(root.dir()).ok()?)
            .ok()?
            .to_path_buf(),
    };
    Some(std::path::Path::new("/").join(rel))
}

/// Is a loaded library's device code evidence of the GPUs it supports? Not for NVIDIA's own CUDA libraries
/// (cuBLAS, cuFFT, cuDNN, NCCL…): they load most kernels from their own archives or build them at run time
/// (CUDA 13.2's `libcufft.so.12` holds one standard fatbin entry, SASS sm_75, yet runs on every GPU CUDA 13
/// supports), so judging their `.nv_fatbin` alone would call a working PyTorch install broken on an H200.
/// Their GPU support is the toolkit's. A project's or a framework's own libraries are judged.
fn judged_library(o: &crate::facts::loader::LoadedObject) -> bool {
    let name = o
        .soname
        .as_deref()
        .unwrap_or_else(|| o.realpath.rsplit('/').next().unwrap_or(""));
    !inspect::CUDA_LIBRARY_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Only an ELF program or library has a loader tree (not an archive, a fatbin or PTX).
fn tree_kept(binaries: &[crate::facts::BinaryFacts]) -> bool {
    binaries.len() == 1 && binaries[0].elf.is_some()
}

/// What the walk takes from the program's inspection (none from an input that is not one ELF file).
fn main_symbols(
    read: Option<&Result<Vec<crate::facts::BinaryFacts>, inspect::InspectError>>,
) -> crate::loader::MainSymbols {
    match read {
        Some(Ok(list)) if list.len() == 1 => crate::loader::MainSymbols::of(&list[0]),
        _ => crate::loader::MainSymbols::default(),
    }
}

/// The libraries of a process (`objects`, the program first, not among them) whose device code is judged
/// ([`judged_library`]) and not in `seen` yet: their real and opened paths.
fn device_code_candidates(
    objects: &[crate::facts::loader::LoadedObject],
    seen: &mut std::collections::HashSet<String>,
) -> Vec<(String, String)> {
    objects
        .iter()
        .skip(1)
        .filter(|o| judged_library(o) && seen.insert(o.realpath.clone()))
        .map(|o| (o.realpath.clone(), o.path.clone()))
        .collect()
}

/// Inspects `libraries` (real and opened paths) and keeps those that carry device code: their kernels must
/// run on the GPU too. A library whose sections show no fatbin is left after its section headers; the others
/// are read side by side.
fn loaded_device_code(
    libraries: &[(String, String)],
    root: &crate::system::Root,
    opts: &InspectOptions,
) -> Vec<crate::facts::BinaryFacts> {
    let read = crate::parallel::map(libraries, LIBRARY_THREADS, |(realpath, path)| {
        let host_path = root.host_path(std::path::Path::new(realpath));
        let found = inspect::path_with_device_code(&host_path, opts).ok().flatten();
        let mut kept = Vec::new();
        for mut b in found.into_iter().flatten() {
            if b.device_code.iter().any(|e| !e.relocatable) {
                b.path = path.clone();
                kept.push(b);
            }
        }
        kept
    });
    read.into_iter().flatten().collect()
}

/// Threads for [`loaded_device_code`]: a process loads a few dozen libraries, of which a handful are large.
const LIBRARY_THREADS: usize = 8;

/// Reads every CUDA runtime (`libcudart.so.N`) the loader maps for the binaries, for its exact version: the
/// runtime the driver must serve is the one the process loads. Headers and the version constant only.
fn loaded_runtimes(facts: &Facts, root: &crate::system::Root) -> Vec<crate::facts::BinaryFacts> {
    let opts = InspectOptions {
        depth: Depth::NoDeviceCode,
        ..InspectOptions::default()
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for r in &facts.libraries {
        for o in r.objects.iter().skip(1) {
            let name = o
                .soname
                .as_deref()
                .unwrap_or_else(|| o.path.rsplit('/').next().unwrap_or(""));
            if !name.starts_with("libcudart.so") || !seen.insert(o.path.clone()) {
                continue;
            }
            let host_path = root.host_path(std::path::Path::new(&o.realpath));
            if let Ok(found) = inspect::path(&host_path, &opts) {
                out.extend(found.into_iter().map(|mut b| {
                    b.path = o.path.clone();
                    b
                }));
            }
        }
    }
    out
}

/// How deep binaries are read: no device code, its headers, or (`deep`) every payload inflated;
/// `max_entry_mib` caps one entry's inflated size.
pub fn options(no_device_code: bool, deep: bool, max_entry_mib: u64) -> InspectOptions {
    InspectOptions {
        depth: if no_device_code {
            Depth::NoDeviceCode
        } else if deep {
            Depth::Full
        } else {
            Depth::Headers
        },
        max_decompressed: max_entry_mib.saturating_mul(1 << 20),
        ..InspectOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_libraries_are_not_judged_by_their_fatbins() {
        let lib = |soname: Option<&str>, realpath: &str| crate::facts::loader::LoadedObject {
            soname: soname.map(str::to_string),
            realpath: realpath.into(),
            ..Default::default()
        };
        assert!(!judged_library(&lib(
            Some("libcufft.so.12"),
            "/x/libcufft.so.12.2.0.57"
        )));
        assert!(!judged_library(&lib(
            Some("libcudnn_ops.so.9"),
            "/x/libcudnn_ops.so.9"
        )));
        assert!(!judged_library(&lib(None, "/x/libnccl.so.2.30.7")));
        assert!(judged_library(&lib(Some("libkern.so"), "/x/libkern.so")));
        assert!(judged_library(&lib(Some("libc10_cuda.so"), "/x/libc10_cuda.so")));
        assert!(judged_library(&lib(
            Some("libtorchvision_ops.so"),
            "/x/libtorchvision_ops.so"
        )));
    }
}
