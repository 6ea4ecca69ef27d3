//! What ld.so knows about the machine before it searches: the default directories, `$LIB`, `$PLATFORM`, the
//! glibc-hwcaps subdirectories and the `ld.so.cache` flags it accepts.
//!
//! The default directories are compiled into each ld.so (`SYSTEM_DIRS`, from `--libdir`/`--with-slibdir` at
//! configure time, kept as `system_dirs` and `system_dirs_len` in `elf/dl-load.c`): upstream x86-64 has
//! `/lib64/:/usr/lib64/`, Debian `/lib/x86_64-linux-gnu/:/usr/lib/x86_64-linux-gnu/:/lib/:/usr/lib/`. Hard-coding
//! either is libtree's bug (#27), so cudadiag reads them out of the interpreter named by the binary, under the
//! root: the `size_t system_dirs_len[]` array is followed by exactly those NUL-separated strings. Only when the
//! interpreter cannot be read does it fall back to the per-architecture upstream defaults.
//!
//! `$LIB` is the first default directory without its slashes (glibc's `DL_DST_LIB`), `$PLATFORM` is
//! `AT_PLATFORM` (`x86_64`, `aarch64`, `i686`), except that on x86-64 glibc ≥ 2.26 replaces it for Intel
//! processors (`sysdeps/x86/cpu-features.c`, `dl_platform`): `xeon_phi` with usable AVX512CD, ER and PF,
//! else `haswell` with AVX2, FMA, BMI1, BMI2, LZCNT, MOVBE and POPCNT, so on most Intel servers `$PLATFORM` is
//! `haswell`. The interpreter's image tells whether it has that code (its `haswell` platform name); the
//! processor's vendor and flags come from `/proc/cpuinfo` (a `glibc.cpu.hwcaps` tunable that masks a feature is
//! not modelled). glibc-hwcaps subdirectories (`elf/dl-hwcaps.c`, glibc ≥ 2.33)
//! depend on the CPU: for x86-64 they are the ISA levels of `sysdeps/x86/get-isa-level.h`, read here from
//! `/proc/cpuinfo` under the root; a root without one gets the baseline (no subdirectory). The legacy
//! `tls/`/`x86_64/` subdirectories that glibc < 2.37 also tried are not modelled.

use crate::system::Root;
use goblin::elf::header::{EM_386, EM_AARCH64, EM_ARM, EM_PPC64, EM_S390, EM_X86_64};
use std::path::Path;

/// The machine as ld.so sees it, for one ELF class and machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    /// `e_machine` of the objects this loader accepts.
    pub machine: u16,
    /// 64-bit objects.
    pub is_64: bool,
    /// The interpreter (PT_INTERP of the binary, or the architecture's standard one).
    pub interpreter: String,
    /// Default directories, without trailing slash, in search order.
    pub system_dirs: Vec<String>,
    /// Where [`Platform::system_dirs`] came from.
    pub system_dirs_source: String,
    /// `$LIB`.
    pub lib: String,
    /// `$PLATFORM`.
    pub platform: String,
    /// Supported glibc-hwcaps subdirectories, best first.
    pub hwcaps: Vec<String>,
    /// The x86-64 ISA level the CPU supports (1 = baseline).
    pub isa_level: u32,
    /// `_DL_CACHE_DEFAULT_ID`.
    pub cache_id: Option<i32>,
}

/// `e_machine` of the architecture this build of cudadiag runs on, among the 64-bit ones whose loader it
/// models; `None` on another.
pub fn own_machine() -> Option<u16> {
    match std::env::consts::ARCH {
        "x86_64" => Some(EM_X86_64),
        "aarch64" => Some(EM_AARCH64),
        "powerpc64" => Some(EM_PPC64),
        _ => None,
    }
}

/// The standard interpreter of a machine, as the psABIs name it.
pub fn default_interpreter(machine: u16, is_64: bool) -> &'static str {
    match (machine, is_64) {
        (EM_X86_64, true) => "/lib64/ld-linux-x86-64.so.2",
        (EM_X86_64, false) => "/libx32/ld-linux-x32.so.2",
        (EM_386, _) => "/lib/ld-linux.so.2",
        (EM_AARCH64, _) => "/lib/ld-linux-aarch64.so.1",
        (EM_PPC64, _) => "/lib64/ld64.so.2",
        (EM_S390, true) => "/lib/ld64.so.1",
        (EM_ARM, _) => "/lib/ld-linux-armhf.so.3",
        _ => "/lib/ld-linux.so.2",
    }
}

fn upstream_dirs(machine: u16, is_64: bool) -> Vec<String> {
    let dirs: &[&str] = match (machine, is_64) {
        (EM_X86_64 | EM_AARCH64 | EM_PPC64 | EM_S390, true) => &["/lib64", "/usr/lib64"],
        (EM_X86_64, false) => &["/libx32", "/usr/libx32"],
        _ => &["/lib", "/usr/lib"],
    };
    dirs.iter().map(|s| s.to_string()).collect()
}

impl Platform {
    /// Works out the loader's view for objects of `machine`/`is_64` whose interpreter is `interp`.
    pub fn detect(root: &Root, machine: u16, is_64: bool, interp: Option<&str>) -> Platform {
        let interpreter = interp
            .unwrap_or_else(|| default_interpreter(machine, is_64))
            .to_string();
        // Mapped, not read: a copy of the 200 KB interpreter is fresh memory the search touches once.
        let image = root
            .open(Path::new(&interpreter))
            .ok()
            .and_then(|f| crate::inspect::source::map_open(&f).ok());
        let from_interp = image.as_ref().and_then(|d| system_dirs_in(d, is_64));
        // glibc ≥ 2.26 names the Intel platforms in ld.so; an interpreter that cannot be read is taken to be
        // one of those (2017 on).
        let intel_platforms = image
            .as_ref()
            .is_none_or(|d| memchr::memmem::find(d, b"\0haswell\0").is_some());
        let (system_dirs, source) = match from_interp {
            Some(d) => (d, format!("compiled into {interpreter}")),
            None => (
                upstream_dirs(machine, is_64),
                format!("glibc's upstream default ({interpreter} could not be read)"),
            ),
        };
        let lib = system_dirs
            .first()
            .map(|d| d.trim_matches('/').to_string())
            .unwrap_or_else(|| "lib".into());
        let mut platform = match machine {
            EM_X86_64 => "x86_64",
            EM_386 => "i686",
            EM_AARCH64 => "aarch64",
            EM_PPC64 => "power9",
            EM_S390 => "z13",
            EM_ARM => "v7l",
            _ => "",
        }
        .to_string();
        let (hwcaps, isa_level) = if machine == EM_X86_64 && is_64 {
            // The first processor's vendor and flags: read no further (the kernel builds the file as it is
            // read, and on a machine with hundreds of CPUs the rest costs milliseconds).
            use std::io::BufRead;
            let mut vendor = String::new();
            let mut flags: Vec<String> = Vec::new();
            if let Ok(f) = root.open(Path::new("/proc/cpuinfo")) {
                for l in std::io::BufReader::new(f).lines().map_while(Result::ok) {
                    if let Some(v) = l.strip_prefix("vendor_id") {
                        vendor = v.trim_start_matches([' ', '\t', ':']).trim().to_string();
                    } else if l.starts_with("flags") {
                        flags = l.split_whitespace().map(str::to_string).collect();
                        break;
                    }
                }
            }
            if intel_platforms && let Some(p) = intel_platform(&vendor, &flags) {
                platform = p.to_string();
            }
            x86_64_levels(&flags)
        } else {
            (Vec::new(), 1)
        };
        Platform {
            machine,
            is_64,
            interpreter,
            system_dirs,
            system_dirs_source: source,
            lib,
            platform,
            hwcaps,
            isa_level,
            cache_id: super::cache::default_id(machine, is_64),
        }
    }

    /// Is `dir` one of the default directories (for NODEFLIB's cache filter and secure-mode `$ORIGIN`)?
    pub fn is_system_dir(&self, dir: &str) -> bool {
        let dir = dir.trim_end_matches('/');
        self.system_dirs.iter().any(|d| d == dir)
    }
}

/// The `dl_platform` glibc ≥ 2.26 gives an x86-64 processor of `vendor` (`vendor_id` in `/proc/cpuinfo`) with
/// `flags`, when it replaces `AT_PLATFORM`: only Intel's. (`abm` is how cpuinfo spells LZCNT.)
pub fn intel_platform(vendor: &str, flags: &[String]) -> Option<&'static str> {
    let has = |names: &[&str]| names.iter().all(|n| flags.iter().any(|f| f == n));
    if vendor != "GenuineIntel" {
        return None;
    }
    if has(&["avx512f", "avx512cd", "avx512er", "avx512pf"]) {
        return Some("xeon_phi");
    }
    has(&["avx2", "fma", "bmi1", "bmi2", "abm", "movbe", "popcnt"]).then_some("haswell")
}

/// The x86-64 ISA levels a CPU with `flags` (from `/proc/cpuinfo`) supports, as glibc-hwcaps names (best
/// first), and the level number. Mirrors `sysdeps/x86/get-isa-level.h`.
pub fn x86_64_levels(flags: &[String]) -> (Vec<String>, u32) {
    let has = |names: &[&str]| names.iter().all(|n| flags.iter().any(|f| f == n));
    let v2 = has(&["cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"]);
    let v3 = v2
        && has(&[
            "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave",
        ]);
    let v4 = v3 && has(&["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"]);
    let mut out = Vec::new();
    let mut level = 1;
    for (ok, name, n) in [(v4, "x86-64-v4", 4), (v3, "x86-64-v3", 3), (v2, "x86-64-v2", 2)] {
        if ok {
            out.push(name.to_string());
            level = level.max(n);
        }
    }
    (out, level)
}

/// Finds `system_dirs` in an ld.so image: N word-sized lengths immediately followed by N NUL-terminated
/// absolute directory names ending in `/` of exactly those lengths. Returns the directories without their
/// trailing slash.
pub fn system_dirs_in(image: &[u8], is_64: bool) -> Option<Vec<String>> {
    let word = if is_64 { 8 } else { 4 };
    for at in memchr::memmem::find_iter(image, b"\0/") {
        let start = at + 1;
        let mut dirs = Vec::new();
        let mut pos = start;
        while let Some(&b'/') = image.get(pos) {
            let len = memchr::memchr(0, image.get(pos..)?)?;
            let s = &image[pos..pos + len];
            if len < 2 || s.last() != Some(&b'/') || !s.iter().all(|b| b.is_ascii_graphic()) {
                break;
            }
            dirs.push(s);
            pos += len + 1;
        }
        if dirs.is_empty() || dirs.len() > 16 {
            continue;
        }
        let table = start.checked_sub(dirs.len() * word)?;
        let lens_match = dirs.iter().enumerate().all(|(i, d)| {
            let w = &image[table + i * word..table + (i + 1) * word];
            let mut v = 0u64;
            for (k, b) in w.iter().enumerate() {
                v |= u64::from(*b) << (8 * k);
            }
            v == d.len() as u64
        });
        if lens_match {
            return Some(
                dirs.iter()
                    .map(|d| {
                        let s = String::from_utf8_lossy(d);
                        let t = s.trim_end_matches('/');
                        if t.is_empty() { "/".into() } else { t.to_string() }
                    })
                    .collect(),
            );
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intel_processors_get_their_own_platform_name() {
        let flags = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        let haswell = flags("fpu sse2 popcnt movbe avx avx2 fma bmi1 bmi2 abm");
        assert_eq!(intel_platform("GenuineIntel", &haswell), Some("haswell"));
        // Sapphire Rapids: AVX512CD without ER is still haswell.
        let spr = flags("popcnt movbe avx2 fma bmi1 bmi2 abm avx512f avx512cd avx512bw avx512dq avx512vl");
        assert_eq!(intel_platform("GenuineIntel", &spr), Some("haswell"));
        let knl = flags("popcnt movbe avx2 fma bmi1 bmi2 abm avx512f avx512cd avx512er avx512pf");
        assert_eq!(intel_platform("GenuineIntel", &knl), Some("xeon_phi"));
        // AMD keeps AT_PLATFORM; an Intel processor short of one feature too.
        assert_eq!(intel_platform("AuthenticAMD", &haswell), None);
        assert_eq!(
            intel_platform("GenuineIntel", &flags("popcnt movbe avx2 fma bmi1 bmi2")),
            None
        );
    }

    #[test]
    fn system_dirs_table() {
        let mut img = vec![0u8; 8];
        for n in [7u64, 11] {
            img.extend_from_slice(&n.to_le_bytes());
        }
        img.extend_from_slice(b"/lib64/\0/usr/lib64/\0\0");
        assert_eq!(
            system_dirs_in(&img, true),
            Some(vec!["/lib64".to_string(), "/usr/lib64".to_string()])
        );
        // Lengths that do not match the strings are not the table.
        img[8] = 8;
        assert_eq!(system_dirs_in(&img, true), None);
    }

    #[test]
    fn isa_levels() {
        let v2: Vec<String> = ["cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(x86_64_levels(&v2), (vec!["x86-64-v2".to_string()], 2));
        assert_eq!(x86_64_levels(&[]), (vec![], 1));
    }
}
