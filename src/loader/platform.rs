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
//! `/proc/cpuinfo` under the root; a root without one gets the baseline (no subdirectory); a glibc older than
//! 2.33 has none. glibc 2.26 to 2.36 also tries legacy hwcap subdirectories in every directory of the search
//! (`tls/x86_64/x86_64`, …, `x86_64`: [`legacy_x86_64_subdirs`]; on aarch64 `tls/aarch64/atomics`, …,
//! `atomics`: [`aarch64_important_hwcap`]; `docs/aarch64-loader.md` has the aarch64 facts); the version is
//! read from the interpreter's `--version` banner, and an interpreter that cannot be read is taken to be
//! current (none).

use super::cache::{LdCache, LegacyHwcaps};
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
    /// The legacy hwcap subdirectories glibc 2.26 to 2.36 tries in every directory of the search, after the
    /// glibc-hwcaps ones and before the directory itself (`tls/x86_64/x86_64`, …, `x86_64`), each once; empty
    /// for other versions and machines.
    pub legacy_subdirs: Vec<String>,
    /// The legacy hwcap cache entries the same glibc versions accept (none otherwise).
    pub legacy_hwcaps: LegacyHwcaps,
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
        let version = image.as_ref().and_then(|d| glibc_version(d));
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
        let mut legacy_subdirs = Vec::new();
        let mut legacy_hwcaps = LegacyHwcaps::default();
        let (mut hwcaps, isa_level) = if machine == EM_X86_64 && is_64 {
            // The first processor's vendor and flags: read no further (the kernel builds the file as it is
            // read, and on a machine with hundreds of CPUs the rest costs milliseconds).
            use std::io::BufRead;
            let mut vendor = String::new();
            let mut flags: Vec<String> = Vec::new();
            if let Ok(f) = root.open(Path::new("/proc/cpuinfo")) {
                // Bounded: a `/proc/cpuinfo` under a root may be anything, `/dev/zero` included.
                let f = std::io::Read::take(f, crate::system::read::KERNEL_TEXT.bytes);
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
            if version.is_some_and(|v| ((2, 26)..(2, 37)).contains(&v)) {
                legacy_subdirs = legacy_x86_64_subdirs(&vendor, &flags, &platform);
                legacy_hwcaps = legacy_x86_64_hwcaps(&vendor, &flags, &platform);
            }
            x86_64_levels(&flags)
        } else if machine == EM_AARCH64 && is_64 {
            // aarch64 has no glibc-hwcaps subdirectories (glibc ships `dl-hwcaps-subdirs.c` for x86-64,
            // powerpc64le and s390x only); glibc 2.26 to 2.36 has the legacy ones.
            if let Some(v) = version.filter(|v| ((2, 26)..(2, 37)).contains(v)) {
                (legacy_subdirs, legacy_hwcaps) = aarch64_legacy(v, &aarch64_features(root));
            }
            (Vec::new(), 1)
        } else {
            (Vec::new(), 1)
        };
        // glibc-hwcaps subdirectories came with glibc 2.33.
        if version.is_some_and(|v| v < (2, 33)) {
            hwcaps.clear();
        }
        Platform {
            machine,
            is_64,
            interpreter,
            system_dirs,
            system_dirs_source: source,
            lib,
            platform,
            hwcaps,
            legacy_subdirs,
            legacy_hwcaps,
            isa_level,
            cache_id: super::cache::default_id(machine, is_64),
        }
    }

    /// `cache.lookup_legacy` for this loader: its flags, glibc-hwcaps subdirectories, ISA level and legacy
    /// hwcap bits.
    pub fn cache_lookup<'c>(&self, cache: &'c LdCache, name: &str) -> Option<&'c super::cache::Entry> {
        cache.lookup_legacy(
            name,
            self.cache_id?,
            &self.hwcaps,
            self.isa_level,
            self.legacy_hwcaps,
        )
    }

    /// Does this loader take the cache entry `e` at all (its flags, glibc-hwcaps subdirectory and legacy
    /// bits), whichever entry of the name it picks first?
    pub fn cache_accepts(&self, e: &super::cache::Entry) -> bool {
        let ours = self
            .cache_id
            .is_some_and(|id| super::cache::check_flags(id, e.flags));
        let hwcaps = e
            .hwcaps
            .as_ref()
            .is_none_or(|sub| e.isa_level <= self.isa_level && self.hwcaps.contains(sub));
        ours && hwcaps && self.legacy_hwcaps.accepts(e.legacy_hwcap)
    }

    /// Is `dir` one of the default directories (for NODEFLIB's cache filter and secure-mode `$ORIGIN`)?
    pub fn is_system_dir(&self, dir: &str) -> bool {
        let dir = dir.trim_end_matches('/');
        self.system_dirs.iter().any(|d| d == dir)
    }
}

/// The glibc version of an ld.so image, from its `--version` banner (`… stable release version 2.36.`).
pub fn glibc_version(image: &[u8]) -> Option<(u32, u32)> {
    let at = memchr::memmem::find(image, b" release version ")? + b" release version ".len();
    let text = image.get(at..image.len().min(at + 12))?;
    let text = std::str::from_utf8(&text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())]).ok()?;
    let mut parts = text.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()?
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()?;
    Some((major, minor))
}

/// The legacy hwcap subdirectories of glibc 2.26 to 2.36 on x86-64 (`_dl_important_hwcaps`): every
/// combination of the capability names, most first, each naming its parts from the last to the first, where
/// the names are the hwcap bits `HWCAP_IMPORTANT` keeps (`x86_64` always, `avx512_1` on Intel processors with
/// usable AVX512 CD, BW, DQ and VL but not ER), then `dl_platform`, then `tls`. Repeats (the bit and the
/// platform are both `x86_64` on most machines) are tried once.
pub fn legacy_x86_64_subdirs(vendor: &str, flags: &[String], platform: &str) -> Vec<String> {
    legacy_subdirs_of(&[
        Some("x86_64"),
        avx512_1(vendor, flags).then_some("avx512_1"),
        Some(platform),
    ])
}

/// The legacy hwcap subdirectories of glibc 2.26 to 2.36 (`_dl_important_hwcaps` of `elf/dl-hwcaps.c`) for the
/// capability names `names` (the important hwcap bits set, lowest first, then `dl_platform`; `None`s left out)
/// and `tls` after them: every combination, most first, each naming its parts from the last to the first.
pub fn legacy_subdirs_of(names: &[Option<&str>]) -> Vec<String> {
    let mut names: Vec<&str> = names.iter().flatten().copied().collect();
    names.push("tls");
    let mut out: Vec<String> = Vec::new();
    for m in (1..1u32 << names.len()).rev() {
        let parts: Vec<&str> = (0..names.len())
            .rev()
            .filter(|i| m & (1 << i) != 0)
            .map(|i| names[i])
            .collect();
        let dir = parts.join("/");
        if !out.contains(&dir) {
            out.push(dir);
        }
    }
    out
}

/// The `Features` of the first processor in `/proc/cpuinfo` under the root (aarch64 Linux names the `AT_HWCAP`
/// bits there as glibc's `_dl_aarch64_cap_flags` does: `fp asimd … atomics … cpuid`); none without the file.
fn aarch64_features(root: &Root) -> Vec<String> {
    use std::io::BufRead;
    let Ok(f) = root.open(Path::new("/proc/cpuinfo")) else {
        return Vec::new();
    };
    // Bounded: a `/proc/cpuinfo` under a root may be anything, `/dev/zero` included.
    let f = std::io::Read::take(f, crate::system::read::KERNEL_TEXT.bytes);
    std::io::BufReader::new(f)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == "Features").then(|| value.split_whitespace().map(str::to_string).collect())
        })
        .unwrap_or_default()
}

/// The one hwcap bit an aarch64 ld.so of glibc `version` (2.26 to 2.36) keeps for legacy subdirectories
/// (`HWCAP_IMPORTANT` of `sysdeps/unix/sysv/linux/aarch64/dl-procinfo.h`), as its name and `AT_HWCAP` bit,
/// when the processor has it: `cpuid` (bit 11) in 2.26 and 2.27, `atomics` (bit 8, ARMv8.1 LSE) from 2.28.
pub fn aarch64_important_hwcap(version: (u32, u32), features: &[String]) -> Option<(&'static str, u32)> {
    let (name, bit) = if version < (2, 28) {
        ("cpuid", 11)
    } else {
        ("atomics", 8)
    };
    features.iter().any(|f| f == name).then_some((name, bit))
}

/// The legacy hwcap subdirectories and cache bits of an aarch64 ld.so of glibc `version` (2.26 to 2.36) on a
/// processor with `features`: the important bit if set, `dl_platform` (`aarch64`, `AT_PLATFORM`) and `tls`;
/// no platform bits (`_DL_HWCAP_PLATFORM` is 0 on aarch64).
fn aarch64_legacy(version: (u32, u32), features: &[String]) -> (Vec<String>, LegacyHwcaps) {
    let important = aarch64_important_hwcap(version, features);
    let subdirs = legacy_subdirs_of(&[important.map(|(name, _)| name), Some("aarch64")]);
    let hwcaps = LegacyHwcaps {
        allowed: important.map_or(0, |(_, bit)| 1 << bit) | 1 << 63,
        platform_mask: 0,
        platform: 0,
    };
    (subdirs, hwcaps)
}

/// glibc 2.26–2.36 sets the legacy hwcap bit `avx512_1` on Intel processors with usable AVX512 F, CD, BW, DQ and
/// VL but not ER (Xeon Phi's).
fn avx512_1(vendor: &str, flags: &[String]) -> bool {
    let has = |names: &[&str]| names.iter().all(|n| flags.iter().any(|f| f == n));
    vendor == "GenuineIntel"
        && has(&["avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"])
        && !has(&["avx512er"])
}

/// The legacy hwcap cache entries an x86-64 loader of glibc 2.26 to 2.36 accepts: bits `HWCAP_X86_64` (1) and,
/// on Intel processors with usable AVX512 F, CD, BW, DQ and VL but not ER, `HWCAP_X86_AVX512_1` (2), the
/// platform bits from 48 (`i586`, `i686`, `haswell`, `xeon_phi`) of which `dl_platform` names one, and `tls`
/// (63): what `ldconfig -p` of those versions prints as `hwcap: 0x8004000000000000` for a library in
/// `tls/haswell/`.
pub fn legacy_x86_64_hwcaps(vendor: &str, flags: &[String], platform: &str) -> LegacyHwcaps {
    let platform_mask = 0xf << 48;
    let bit = ["i586", "i686", "haswell", "xeon_phi"]
        .iter()
        .position(|p| *p == platform)
        .map_or(0, |i| 1u64 << (48 + i));
    LegacyHwcaps {
        allowed: 1 << 1 | if avx512_1(vendor, flags) { 1 << 2 } else { 0 } | platform_mask | 1 << 63,
        platform_mask,
        platform: bit,
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

/// Finds `system_dirs` in an ld.so image: N NUL-terminated absolute directory names ending in `/`, and next to
/// them the N word-sized lengths of `system_dirs_len`, exactly those lengths. Compilers place the two arrays
/// either way round: GCC for x86-64 puts the lengths right before the strings, GCC for aarch64 puts the
/// strings first and the lengths after them, 16-byte aligned (Debian's arm64 ld.so 2.36). Returns the
/// directories without their trailing slash.
pub fn system_dirs_in(image: &[u8], is_64: bool) -> Option<Vec<String>> {
    let word = if is_64 { 8 } else { 4 };
    let lens_at = |table: usize, dirs: &[&[u8]]| {
        dirs.iter().enumerate().all(|(i, d)| {
            let Some(w) = image.get(table + i * word..table + (i + 1) * word) else {
                return false;
            };
            let mut v = 0u64;
            for (k, b) in w.iter().enumerate() {
                v |= u64::from(*b) << (8 * k);
            }
            v == d.len() as u64
        })
    };
    for at in memchr::memmem::find_iter(image, b"\0/") {
        let start = at + 1;
        let mut dirs: Vec<&[u8]> = Vec::new();
        let mut pos = start;
        while let Some(&b'/') = image.get(pos) {
            let Some(len) = image.get(pos..).and_then(|rest| memchr::memchr(0, rest)) else {
                break;
            };
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
        let before = start
            .checked_sub(dirs.len() * word)
            .is_some_and(|t| lens_at(t, &dirs));
        // After the strings, past NUL padding up to the array's alignment (16 bytes on aarch64).
        let after = (pos.next_multiple_of(word)..=pos.next_multiple_of(16))
            .step_by(word)
            .take_while(|&t| image.get(pos..t).is_some_and(|pad| pad.iter().all(|&b| b == 0)))
            .any(|t| lens_at(t, &dirs));
        if before || after {
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
    use crate::system::put;

    #[test]
    fn glibc_versions_from_the_banner() {
        let banner = b"\0ld.so (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36.\n\0";
        assert_eq!(glibc_version(banner), Some((2, 36)));
        assert_eq!(
            glibc_version(b"ld.so (GNU libc) stable release version 2.28.\0x"),
            Some((2, 28))
        );
        assert_eq!(glibc_version(b"no banner here"), None);
    }

    /// The order `LD_DEBUG=libs` shows on glibc 2.36: on an AMD processor `x86_64` is both the hwcap bit and the
    /// platform; on a Sapphire Rapids one the platform is `haswell` and `avx512_1` is set.
    #[test]
    fn legacy_subdirectories_in_glibcs_order() {
        let flags = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            legacy_x86_64_subdirs(
                "AuthenticAMD",
                &flags("avx2 avx512f avx512cd avx512bw avx512dq avx512vl"),
                "x86_64"
            ),
            [
                "tls/x86_64/x86_64",
                "tls/x86_64",
                "tls",
                "x86_64/x86_64",
                "x86_64"
            ]
        );
        let spr = flags("avx2 fma bmi1 bmi2 abm movbe popcnt avx512f avx512cd avx512bw avx512dq avx512vl");
        assert_eq!(
            legacy_x86_64_subdirs("GenuineIntel", &spr, "haswell"),
            [
                "tls/haswell/avx512_1/x86_64",
                "tls/haswell/avx512_1",
                "tls/haswell/x86_64",
                "tls/haswell",
                "tls/avx512_1/x86_64",
                "tls/avx512_1",
                "tls/x86_64",
                "tls",
                "haswell/avx512_1/x86_64",
                "haswell/avx512_1",
                "haswell/x86_64",
                "haswell",
                "avx512_1/x86_64",
                "avx512_1",
                "x86_64",
            ]
        );
    }

    /// What the interpreter's glibc version decides: glibc-hwcaps subdirectories from 2.33, legacy ones from
    /// 2.26 to 2.36, `haswell` wherever the image names it.
    #[test]
    fn the_interpreters_version_decides_the_subdirectories() {
        let t = tempfile::tempdir().unwrap();
        let put = |path: &str, bytes: &[u8]| put(t.path(), path, bytes);
        put(
            "/proc/cpuinfo",
            b"vendor_id\t: GenuineIntel\nflags\t\t: cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3 avx avx2 bmi1 bmi2 \
              f16c fma abm movbe xsave\n",
        );
        let detect = |version: &str| {
            put(
                "/lib64/ld-linux-x86-64.so.2",
                format!("\0haswell\0ld.so (GNU libc) stable release version {version}.\n\0").as_bytes(),
            );
            let p = Platform::detect(&Root::at(t.path()), EM_X86_64, true, None);
            (p.platform, p.hwcaps.len(), p.legacy_subdirs.first().cloned())
        };
        let legacy = Some("tls/haswell/x86_64".to_string());
        assert_eq!(detect("2.31"), ("haswell".into(), 0, legacy.clone()));
        assert_eq!(detect("2.35"), ("haswell".into(), 2, legacy));
        assert_eq!(detect("2.39"), ("haswell".into(), 2, None));
    }

    /// The cache entries ldconfig 2.36 writes for `tls/`, `x86_64/`, `haswell/`, `tls/haswell/` and
    /// `avx512_1/` (`ldconfig -p` prints their hwcap): which an AMD and a Sapphire Rapids loader take.
    #[test]
    fn legacy_cache_entries_each_loader_takes() {
        let flags = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        let (tls, x86_64, haswell, tls_haswell, avx512_1) = (
            0x8000_0000_0000_0000,
            0x2,
            0x0004_0000_0000_0000,
            0x8004_0000_0000_0000,
            0x4,
        );
        let amd = legacy_x86_64_hwcaps("AuthenticAMD", &flags("avx2 avx512f avx512cd"), "x86_64");
        let taken = |l: LegacyHwcaps| [tls, x86_64, haswell, tls_haswell, avx512_1].map(|h| l.accepts(h));
        assert_eq!(taken(amd), [true, true, false, false, false]);
        let spr = flags("avx2 fma bmi1 bmi2 abm movbe popcnt avx512f avx512cd avx512bw avx512dq avx512vl");
        let intel = legacy_x86_64_hwcaps("GenuineIntel", &spr, "haswell");
        assert_eq!(taken(intel), [true, true, true, true, true]);
        // A later glibc takes none of them, and every plain entry.
        assert_eq!(taken(LegacyHwcaps::default()), [false; 5]);
        assert!(LegacyHwcaps::default().accepts(0) && amd.accepts(0));
    }

    /// An aarch64 ld.so: no glibc-hwcaps subdirectories ever; glibc 2.26 to 2.36 tries `atomics` (2.28 on) or
    /// `cpuid` (2.26, 2.27) when the processor has it, `aarch64` (`AT_PLATFORM`) and `tls`, and takes the cache
    /// entries ldconfig marked with those bits.
    #[test]
    fn aarch64_legacy_subdirectories_follow_the_glibc_version() {
        let t = tempfile::tempdir().unwrap();
        let put = |path: &str, bytes: &[u8]| put(t.path(), path, bytes);
        put(
            "/proc/cpuinfo",
            b"processor\t: 0\nBogoMIPS\t: 62.50\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics \
              fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\n",
        );
        let detect = |version: &str| {
            put(
                "/lib/ld-linux-aarch64.so.1",
                format!("\0ld.so (Ubuntu GLIBC) stable release version {version}.\n\0").as_bytes(),
            );
            Platform::detect(&Root::at(t.path()), EM_AARCH64, true, None)
        };
        let p = detect("2.31");
        assert_eq!(p.platform, "aarch64");
        assert!(p.hwcaps.is_empty());
        assert_eq!(
            p.legacy_subdirs,
            [
                "tls/aarch64/atomics",
                "tls/aarch64",
                "tls/atomics",
                "tls",
                "aarch64/atomics",
                "aarch64",
                "atomics"
            ]
        );
        let (tls, atomics, cpuid) = (1u64 << 63, 1u64 << 8, 1u64 << 11);
        assert!(p.legacy_hwcaps.accepts(tls | atomics) && !p.legacy_hwcaps.accepts(cpuid));
        let old = detect("2.27");
        assert_eq!(
            old.legacy_subdirs.first().map(String::as_str),
            Some("tls/aarch64/cpuid")
        );
        assert!(old.legacy_hwcaps.accepts(cpuid) && !old.legacy_hwcaps.accepts(atomics));
        let new = detect("2.39");
        assert!(new.legacy_subdirs.is_empty() && new.hwcaps.is_empty());
        assert!(!new.legacy_hwcaps.accepts(tls));
        // A processor without LSE atomics (Cortex-A57, Jetson Nano/TX2) on glibc 2.31.
        put(
            "/proc/cpuinfo",
            b"Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\n",
        );
        let a57 = detect("2.31");
        assert_eq!(a57.legacy_subdirs, ["tls/aarch64", "tls", "aarch64"]);
        assert!(!a57.legacy_hwcaps.accepts(atomics) && a57.legacy_hwcaps.accepts(tls));
    }

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

    /// GCC for aarch64 puts the strings first and the lengths after them, 16-byte aligned (Debian's arm64
    /// `ld-linux-aarch64.so.1` 2.36: 68 bytes of names at 0x1ce70, lengths 23, 27, 5, 9 at 0x1cec0).
    #[test]
    fn system_dirs_table_after_the_strings() {
        let mut img = b"\xc0\x03\x5f\xd6\0\0\0\0".to_vec();
        img.extend_from_slice(b"/lib/aarch64-linux-gnu/\0/usr/lib/aarch64-linux-gnu/\0/lib/\0/usr/lib/\0");
        while !img.len().is_multiple_of(16) {
            img.push(0);
        }
        for n in [23u64, 27, 5, 9] {
            img.extend_from_slice(&n.to_le_bytes());
        }
        assert_eq!(
            system_dirs_in(&img, true),
            Some(
                [
                    "/lib/aarch64-linux-gnu",
                    "/usr/lib/aarch64-linux-gnu",
                    "/lib",
                    "/usr/lib"
                ]
                .map(String::from)
                .to_vec()
            )
        );
        // A length off by one: not the table.
        let last = img.len() - 8;
        img[last] = 10;
        assert_eq!(system_dirs_in(&img, true), None);
        // A table cut off by the end of the image is no table either (and no panic).
        let cut = &img[..img.len() - 4];
        assert_eq!(system_dirs_in(cut, true), None);
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
