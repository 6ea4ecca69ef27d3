//! Which files the dynamic loader could pick for the driver's sonames (`libcuda.so.1`, `libnvidia-ml.so.1`).
//!
//! Static cudart and the frameworks `dlopen("libcuda.so.1")` (`docs/compatibility.md`, "Binary compatibility
//! and the environment"), so what matters is the loader's search for that exact name: `LD_LIBRARY_PATH`, then
//! `/etc/ld.so.cache`, then the default directories (ld.so(8)). A dlopen from the main program also honours
//! its RPATH/RUNPATH; those are per binary and belong to the loader emulation.
//!
//! The search follows the loader emulation (`src/loader/`) where that matters for which file wins: the
//! machine's own loader ([`host_platform`]: its default directories, read out of its ld.so, and the
//! `ld.so.cache` flags and glibc-hwcaps subdirectories it accepts), the cache entry glibc would pick first
//! (entries for another architecture, such as an i386 `libcuda.so.1` installed for 32-bit programs, are not
//! candidates), and candidates of the wrong ELF class or machine skipped, as ld.so skips them. What stays
//! plain: every other copy the search would reach is listed after the first (the rules and the report show
//! them). A machine with no ld.so.cache (or one glibc cannot read) has no cache step at all: glibc reads no
//! `ld.so.conf` at run time, so the directories it lists are searched only once `ldconfig` has written them
//! into the cache ([`read_cache`] says which case the machine is in, for the finding's help).
//!
//! Kinds: a file under a `stubs` directory is the toolkit's link stub (error 34, `docs/compatibility.md`,
//! error table); one under a `compat` directory is a forward-compatibility libcuda
//! (`/usr/local/cuda-X.Y/compat`, same page, "Forward compatibility: 803 and 804"); one under `/usr/lib/wsl`
//! is WSL2's.

use crate::facts::host::{FoundVia, LdCacheState, LibCandidate, LibKind};
use crate::loader::cache::LdCache;
use crate::loader::object::{Verdict, check_header};
use crate::loader::platform::{Platform, default_interpreter, own_machine};
use crate::system::{Env, Root};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The built-in directories of Debian/Ubuntu (multiarch) and Red Hat (lib64) glibc builds, for both common
/// architectures: where the library catalogue looks. The search itself uses the machine's own
/// ([`host_platform`]).
pub const DEFAULT_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// One directory of the search and how it got there, or, for the cache, one exact file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchStep {
    /// A directory to look in.
    pub dir: PathBuf,
    /// Why it is searched.
    pub via: FoundVia,
}

/// The loader of the machine at `root`, for its 64-bit programs: of the architectures cudadiag knows, the one
/// whose standard interpreter the root holds (a snapshot of an Arm machine read on an x86-64 one), else this
/// build's own.
pub fn host_platform(root: &Root) -> Platform {
    use goblin::elf::header::{EM_AARCH64, EM_PPC64, EM_X86_64};
    let own = own_machine().unwrap_or(EM_X86_64);
    let machine = [own, EM_X86_64, EM_AARCH64, EM_PPC64]
        .into_iter()
        .find(|&m| root.exists(Path::new(default_interpreter(m, true))))
        .unwrap_or(own);
    Platform::detect(root, machine, true, None)
}

/// The search order for `soname` by the loader `p`: `LD_LIBRARY_PATH` directories (an empty entry is the
/// current directory, `PWD`), then the ld.so.cache entry glibc picks for that name and the cache's other
/// entries for it that this loader accepts, then the default directories.
pub fn search_dirs(env: &Env, p: &Platform, cache: Option<&LdCache>, soname: &str) -> Vec<SearchStep> {
    let mut steps = Vec::new();
    if let Some(list) = env.get("LD_LIBRARY_PATH") {
        for d in list.split([':', ';']) {
            let dir = if d.is_empty() { env.get("PWD") } else { Some(d) };
            if let Some(dir) = dir {
                steps.push(SearchStep {
                    dir: PathBuf::from(dir),
                    via: FoundVia::LdLibraryPath,
                });
            }
        }
    }
    // No cache (or none glibc can read) means no cache step: glibc reads no ld.so.conf at run time.
    if let Some(cache) = cache {
        for path in cache_paths(cache, p, soname) {
            if let Some(dir) = Path::new(&path).parent() {
                steps.push(SearchStep {
                    dir: dir.to_path_buf(),
                    via: FoundVia::LdSoCache,
                });
            }
        }
    }
    for d in &p.system_dirs {
        steps.push(SearchStep {
            dir: PathBuf::from(d),
            via: FoundVia::DefaultPath,
        });
    }
    steps
}

/// The paths an ld.so.cache gives the loader `p` for `soname`: first the one glibc's lookup picks
/// (`LdCache::lookup`: this architecture's flags, the best glibc-hwcaps subdirectory the CPU supports), then
/// the other entries it would accept, in cache order.
fn cache_paths(cache: &LdCache, p: &Platform, soname: &str) -> Vec<String> {
    let mut paths: Vec<String> = p
        .cache_lookup(cache, soname)
        .map(|e| e.path.clone())
        .into_iter()
        .collect();
    for e in &cache.entries {
        if e.name == soname && p.cache_accepts(e) && !paths.contains(&e.path) {
            paths.push(e.path.clone());
        }
    }
    paths
}

/// The machine's `/etc/ld.so.cache`, read once for the searches and the catalogue: what it is to the loader
/// (there and in a format glibc reads, absent, or there but unreadable to glibc, which then searches as if
/// there were none), and the cache when glibc can read it.
pub fn read_cache(root: &Root) -> (LdCacheState, Option<LdCache>) {
    match root.read(Path::new("/etc/ld.so.cache"), crate::system::read::LD_SO_CACHE) {
        Err(_) => (LdCacheState::Missing, None),
        Ok(bytes) => match LdCache::parse(&bytes) {
            Ok(cache) => (LdCacheState::Usable, Some(cache)),
            Err(_) => (LdCacheState::Unusable, None),
        },
    }
}

/// Is the file at `real` an ELF object of the other class or another machine, which the loader `p` skips? A
/// file that is not ELF at all is not judged here.
fn other_loader(root: &Root, real: &Path, p: &Platform) -> bool {
    let mut head = [0u8; 64];
    let Ok(n) = root.open(real).and_then(|mut f| f.read(&mut head)) else {
        return false;
    };
    matches!(
        check_header(&head[..n], p),
        Some(Verdict::WrongClass(_) | Verdict::WrongMachine(_))
    )
}

/// The driver version in a real file name (`libcuda.so.550.90.07` → `550.90.07`).
pub fn version_in_name(real: &Path, stem: &str) -> Option<String> {
    let name = real.file_name()?.to_str()?;
    let v = name.strip_prefix(stem)?.strip_prefix('.')?;
    super::driver::is_driver_version(v).then(|| v.to_string())
}

/// Every file the search of the loader `p` finds for `soname`, in search order, each real file once. ELF files
/// of the other class or another machine are passed over, as ld.so passes over them.
pub fn candidates(
    root: &Root,
    env: &Env,
    p: &Platform,
    cache: Option<&LdCache>,
    soname: &str,
) -> Vec<LibCandidate> {
    let stem = soname.split(".so").next().unwrap_or(soname).to_string() + ".so";
    let mut out: Vec<LibCandidate> = Vec::new();
    for step in search_dirs(env, p, cache, soname) {
        let path = step.dir.join(soname);
        let Ok(real) = root.resolve(&path) else {
            continue;
        };
        if !root.is_file(&real) {
            continue;
        }
        if other_loader(root, &real, p) {
            continue;
        }
        if out.iter().any(|c| Path::new(&c.real_path) == real) {
            continue;
        }
        out.push(LibCandidate {
            path: path.display().to_string(),
            real_path: real.display().to_string(),
            version: version_in_name(&real, &stem),
            kind: LibKind::of(&path, &real),
            found_via: step.via,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::put;

    /// Builds a new-format cache with the given (key, value, flags) entries, in that order (callers give
    /// them in ldconfig's order: the lookup's binary search relies on it).
    pub fn cache(entries: &[(&str, &str, i32)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let mut offs = Vec::new();
        let table = 48 + entries.len() * 24;
        for (k, v, flags) in entries {
            let ko = table + strings.len();
            strings.extend_from_slice(k.as_bytes());
            strings.push(0);
            let vo = table + strings.len();
            strings.extend_from_slice(v.as_bytes());
            strings.push(0);
            offs.push((ko as u32, vo as u32, *flags));
        }
        let mut b = b"glibc-ld.so.cache1.1".to_vec();
        b.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        b.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        b.resize(48, 0);
        for (k, v, flags) in offs {
            b.extend_from_slice(&flags.to_le_bytes());
            b.extend_from_slice(&k.to_le_bytes());
            b.extend_from_slice(&v.to_le_bytes());
            b.extend_from_slice(&[0; 12]);
        }
        b.extend_from_slice(&strings);
        b
    }

    /// An x86-64 loader on a root with nothing but what the test writes (no interpreter: glibc's upstream
    /// default directories).
    fn x86_64(root: &Root) -> Platform {
        Platform::detect(root, goblin::elf::header::EM_X86_64, true, None)
    }

    /// The start of an ELF shared object of class `class` (1: 32-bit, 2: 64-bit) for `machine`.
    fn elf_head(class: u8, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = class;
        h[5] = 1;
        h[6] = 1;
        h[16] = 3;
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h
    }

    #[test]
    fn the_cache_gives_this_architectures_entries_glibcs_pick_first() {
        let t = tempfile::tempdir().unwrap();
        let p = x86_64(&Root::at(t.path()));
        // An i386 libcuda for 32-bit programs (flags 0x0003) sorts before the 64-bit one; a compat copy
        // after it; libc.so.6 is another name.
        let c = cache(&[
            ("libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1", 0x0003),
            ("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x0303),
            ("libcuda.so.1", "/usr/local/cuda-12.9/compat/libcuda.so.1", 0x0303),
            ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", 0x0303),
        ]);
        let c = LdCache::parse(&c).unwrap();
        assert_eq!(
            cache_paths(&c, &p, "libcuda.so.1"),
            vec![
                "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                "/usr/local/cuda-12.9/compat/libcuda.so.1"
            ]
        );
        // An i386 loader sees only the i386 entry.
        let p32 = Platform::detect(&Root::at(t.path()), goblin::elf::header::EM_386, false, None);
        assert_eq!(
            cache_paths(&c, &p32, "libcuda.so.1"),
            vec!["/usr/lib/i386-linux-gnu/libcuda.so.1"]
        );
    }

    #[test]
    fn candidates_of_another_class_or_machine_are_passed_over() {
        use goblin::elf::header::{EM_386, EM_AARCH64, EM_X86_64};
        let t = tempfile::tempdir().unwrap();
        let put = |dir: &str, bytes: &[u8]| put(t.path(), &format!("{dir}/libcuda.so.1"), bytes);
        put("/usr/lib32", &elf_head(1, EM_386));
        put("/opt/arm", &elf_head(2, EM_AARCH64));
        put("/opt/text", b"not an ELF file: not judged here");
        put("/lib64", &elf_head(2, EM_X86_64));
        let root = Root::at(t.path());
        let mut env = Env::empty();
        env.set("LD_LIBRARY_PATH", "/usr/lib32:/opt/arm::/opt/text");
        env.set("PWD", "/usr/lib32");
        let found: Vec<String> = candidates(&root, &env, &x86_64(&root), None, "libcuda.so.1")
            .into_iter()
            .map(|c| format!("{} {:?}", c.path, c.found_via))
            .collect();
        assert_eq!(
            found,
            [
                "/opt/text/libcuda.so.1 LdLibraryPath",
                "/lib64/libcuda.so.1 DefaultPath"
            ]
        );
    }

    /// glibc reads no ld.so.conf at run time: with no cache, a directory it lists is not searched, and the
    /// machine's cache state says why. Once ldconfig has written it into a cache, the cache finds it.
    #[test]
    fn without_a_cache_the_directories_of_ld_so_conf_are_not_searched() {
        let t = tempfile::tempdir().unwrap();
        let put = |path: &str, bytes: &[u8]| put(t.path(), path, bytes);
        put("/usr/local/nvidia/lib64/libcuda.so.1", b"fake");
        put("/etc/ld.so.conf", b"include /etc/ld.so.conf.d/*.conf\n");
        put("/etc/ld.so.conf.d/nvidia.conf", b"/usr/local/nvidia/lib64\n");
        let root = Root::at(t.path());
        let p = x86_64(&root);
        let env = Env::empty();
        let search = |root: &Root| {
            let (state, cache) = read_cache(root);
            (state, candidates(root, &env, &p, cache.as_ref(), "libcuda.so.1"))
        };
        assert_eq!(search(&root), (LdCacheState::Missing, vec![]));
        put("/etc/ld.so.cache", b"glibc-ld.so.cache1.1 truncated");
        assert_eq!(search(&root), (LdCacheState::Unusable, vec![]));
        put(
            "/etc/ld.so.cache",
            &cache(&[("libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1", 0x0303)]),
        );
        let (state, found) = search(&root);
        assert_eq!(state, LdCacheState::Usable);
        let found: Vec<_> = found.into_iter().map(|c| (c.path, c.found_via)).collect();
        assert_eq!(
            found,
            [(
                "/usr/local/nvidia/lib64/libcuda.so.1".to_string(),
                FoundVia::LdSoCache
            )]
        );
    }

    #[test]
    fn kinds_and_versions() {
        let p = Path::new("/usr/local/cuda-12.4/lib64/stubs/libcuda.so.1");
        assert_eq!(LibKind::of(p, p), LibKind::Stub);
        let p = Path::new("/usr/local/cuda-12.8/compat/libcuda.so.1");
        assert_eq!(LibKind::of(p, p), LibKind::Compat);
        let p = Path::new("/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07");
        assert_eq!(LibKind::of(p, p), LibKind::Driver);
        assert_eq!(version_in_name(p, "libcuda.so").as_deref(), Some("550.90.07"));
        assert_eq!(
            version_in_name(Path::new("/usr/lib/wsl/lib/libcuda.so.1.1"), "libcuda.so"),
            None
        );
    }
}
