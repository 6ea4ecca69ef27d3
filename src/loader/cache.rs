//! `/etc/ld.so.cache`: the file `ldconfig` writes and ld.so consults after RUNPATH.
//!
//! Mirrors glibc's `elf/dl-cache.c` (`_dl_load_cache_lookup`, `search_cache`, `_dl_cache_libcmp`) and the
//! layouts of `sysdeps/generic/dl-cache.h`. Three shapes exist: the new format alone
//! (`glibc-ld.so.cache1.1`, glibc ≥ 2.32's default), the old libc5/glibc 2.0 format (`ld.so-1.7.0`), and the
//! old format with a new-format table embedded after its entries (8-byte aligned). Entries are sorted with
//! `_dl_cache_libcmp` (digit runs compare numerically), so lookup is a binary search to the first entry of the
//! name, then a forward walk that applies the flag (ELF class/ABI) and glibc-hwcaps checks. Every offset is
//! bounds-checked: a damaged cache is a finding's evidence, never a panic.

use std::cmp::Ordering;

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
const OLD_HEADER: usize = 16;
const OLD_ENTRY: usize = 12;
const NEW_HEADER: usize = 48;
const NEW_ENTRY: usize = 24;
const EXTENSION_MAGIC: u32 = 0xEAA4_2174;
const TAG_GLIBC_HWCAPS: u32 = 1;
/// `DL_CACHE_HWCAP_EXTENSION`: the low 32 bits of `hwcap` index the glibc-hwcaps subdirectory list.
const HWCAP_EXTENSION: u64 = 1 << 62;
/// `DL_CACHE_HWCAP_ISA_LEVEL_MASK`, applied to `hwcap >> 32`.
const ISA_LEVEL_MASK: u64 = (1 << 10) - 1;

/// `FLAG_ELF_LIBC6`.
pub const FLAG_ELF_LIBC6: i32 = 0x0003;

/// One cache entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name looked up (a soname, `libfoo.so.1`).
    pub name: String,
    /// The file it maps to.
    pub path: String,
    /// `flags`: ELF type in the low byte, the architecture/ABI requirement in the next.
    pub flags: i32,
    /// The glibc-hwcaps subdirectory this entry belongs to (`x86-64-v3`), for extension entries.
    pub hwcaps: Option<String>,
    /// The ISA level a glibc-hwcaps entry needs (x86-64: 2, 3, 4), from the high half of `hwcap`.
    pub isa_level: u32,
    /// A legacy (pre-2.37) hwcap mask, zero for ordinary entries.
    pub legacy_hwcap: u64,
}

/// A parsed cache, entries in file order (which is `_dl_cache_libcmp` order).
#[derive(Debug, Clone, Default)]
pub struct LdCache {
    /// Which format the lookup table came from: `new`, `old`, or `old+new`.
    pub format: &'static str,
    /// The entries of the table ld.so searches (the new one when present).
    pub entries: Vec<Entry>,
}

/// What a glibc 2.26–2.36 loader accepts of the legacy hwcap bits of cache entries (`hwcap_exclude` and the
/// platform check of `elf/dl-cache.c`); the default, a later loader's, accepts none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LegacyHwcaps {
    /// Bits an entry may carry: the loader's `dl_hwcap & hwcap_mask`, the platform bits and `tls` (bit 63).
    pub allowed: u64,
    /// Where the platform bits lie (`_DL_HWCAP_PLATFORM`).
    pub platform_mask: u64,
    /// The bit of `dl_platform` among them; 0 when it is not one of them (`x86_64`), so that any entry
    /// carrying a platform is refused.
    pub platform: u64,
}

impl LegacyHwcaps {
    /// Does a loader so configured take an entry with legacy bits `hwcap` (0: an ordinary entry)?
    pub fn accepts(self, hwcap: u64) -> bool {
        if hwcap == 0 {
            return true;
        }
        let platform = hwcap & self.platform_mask;
        self.allowed != 0 && hwcap & !self.allowed == 0 && (platform == 0 || platform == self.platform)
    }
}

/// Why a cache could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheError(pub String);

fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        d.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(d: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        d.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// Longest name or path an entry may have: the kernel's `PATH_MAX`, past which ld.so could not open it.
const STRING_MAX: usize = 4096;

/// Most bytes of names and paths one cache may decode to. A real cache of a few thousand entries decodes to
/// well under 1 MiB; entries of a crafted one can all point at one long string, which would otherwise cost
/// entries × length.
const DECODED_MAX: usize = 64 << 20;

/// Decodes the NUL-terminated strings of a cache, within [`STRING_MAX`] each and [`DECODED_MAX`] in all.
struct Strings {
    decoded: usize,
}

impl Strings {
    fn new() -> Strings {
        Strings { decoded: 0 }
    }

    /// The string at `off`; `None` when it is unterminated or longer than [`STRING_MAX`], and an error once
    /// the budget is spent.
    fn at(&mut self, d: &[u8], off: usize) -> Result<Option<String>, CacheError> {
        let Some(tail) = d.get(off..) else {
            return Ok(None);
        };
        let Some(end) = memchr::memchr(0, &tail[..tail.len().min(STRING_MAX + 1)]) else {
            return Ok(None);
        };
        self.decoded += end;
        if self.decoded > DECODED_MAX {
            return Err(CacheError(format!(
                "its entries' names and paths exceed {} MiB: not a cache ldconfig writes",
                DECODED_MAX >> 20
            )));
        }
        Ok(Some(String::from_utf8_lossy(&tail[..end]).into_owned()))
    }
}

impl LdCache {
    /// Parses the bytes of an `ld.so.cache` (little-endian, as on every platform cudadiag diagnoses).
    pub fn parse(d: &[u8]) -> Result<LdCache, CacheError> {
        if d.starts_with(NEW_MAGIC) {
            return parse_new(d, 0).map(|entries| LdCache {
                format: "new",
                entries,
            });
        }
        if !d.starts_with(OLD_MAGIC) {
            return Err(CacheError("not an ld.so.cache (unknown magic)".into()));
        }
        let nlibs = u32_at(d, 12).ok_or_else(|| CacheError("truncated header".into()))? as usize;
        let table_end = nlibs
            .checked_mul(OLD_ENTRY)
            .and_then(|n| n.checked_add(OLD_HEADER))
            .filter(|&e| e <= d.len())
            .ok_or_else(|| CacheError(format!("{nlibs} entries do not fit in the file")))?;
        // `ALIGN_CACHE`: the embedded new table starts at the next multiple of 8.
        let new_at = (table_end + 7) & !7;
        if d.get(new_at..).is_some_and(|t| t.starts_with(NEW_MAGIC)) {
            return parse_new(d, new_at).map(|entries| LdCache {
                format: "old+new",
                entries,
            });
        }
        let strings = table_end;
        let mut text = Strings::new();
        let mut entries = Vec::with_capacity(nlibs);
        for i in 0..nlibs {
            let at = OLD_HEADER + i * OLD_ENTRY;
            let (Some(flags), Some(key), Some(value)) = (u32_at(d, at), u32_at(d, at + 4), u32_at(d, at + 8))
            else {
                break;
            };
            let (Some(name), Some(path)) = (
                text.at(d, strings + key as usize)?,
                text.at(d, strings + value as usize)?,
            ) else {
                continue;
            };
            entries.push(Entry {
                name,
                path,
                flags: flags as i32,
                hwcaps: None,
                isa_level: 0,
                legacy_hwcap: 0,
            });
        }
        Ok(LdCache {
            format: "old",
            entries,
        })
    }

    /// Looks `name` up as a glibc ≥ 2.37 ld.so does (no legacy hwcap entries): [`LdCache::lookup_legacy`].
    pub fn lookup(&self, name: &str, default_id: i32, hwcaps: &[String], isa_level: u32) -> Option<&Entry> {
        self.lookup_legacy(name, default_id, hwcaps, isa_level, LegacyHwcaps::default())
    }

    /// Looks `name` up as ld.so does: entries of that name in table order, the first whose flags the loader
    /// of `default_id` takes ([`check_flags`]) wins, and one with exactly `default_id` ends the walk, except that glibc-hwcaps
    /// entries (listed first) compete by priority in `hwcaps` (best first) and ISA level. Entries with legacy
    /// hwcap bits (an ldconfig older than 2.37 writes them for `tls/`, `x86_64/`, `haswell/` …) count only
    /// for a loader that accepts them (`legacy`).
    pub fn lookup_legacy(
        &self,
        name: &str,
        default_id: i32,
        hwcaps: &[String],
        isa_level: u32,
        legacy: LegacyHwcaps,
    ) -> Option<&Entry> {
        // The table is sorted so that search_cache moves right when `name` compares lower: descending
        // `_dl_cache_libcmp` order. Find any entry of the name, then back up to the first.
        let idx = self.entries.binary_search_by(|e| libcmp(name, &e.name)).ok()?;
        let mut first = idx;
        while first > 0 && self.entries[first - 1].name == name {
            first -= 1;
        }
        let mut best: Option<(&Entry, usize)> = None;
        for e in self.entries[first..].iter().take_while(|e| e.name == name) {
            if !check_flags(default_id, e.flags) {
                continue;
            }
            match &e.hwcaps {
                Some(sub) => {
                    if e.isa_level > isa_level {
                        continue;
                    }
                    let Some(prio) = hwcaps.iter().position(|h| h == sub) else {
                        continue;
                    };
                    if best.is_none_or(|(_, p)| prio < p) {
                        best = Some((e, prio));
                    }
                }
                None => {
                    if best.is_some() {
                        break;
                    }
                    if !legacy.accepts(e.legacy_hwcap) {
                        continue;
                    }
                    best = Some((e, usize::MAX));
                    if e.flags == default_id {
                        break;
                    }
                }
            }
        }
        best.map(|(e, _)| e)
    }
}

fn parse_new(d: &[u8], base: usize) -> Result<Vec<Entry>, CacheError> {
    let h = d
        .get(base..)
        .filter(|h| h.len() >= NEW_HEADER)
        .ok_or_else(|| CacheError("truncated header".into()))?;
    let nlibs = u32_at(h, 20).unwrap_or(0) as usize;
    let endian = h[28];
    if endian == 3 || endian == 1 {
        return Err(CacheError("big-endian or invalid byte order".into()));
    }
    if nlibs.saturating_mul(NEW_ENTRY) > h.len() - NEW_HEADER {
        return Err(CacheError(format!("{nlibs} entries do not fit in the file")));
    }
    let ext_off = u32_at(h, 32).unwrap_or(0) as usize;
    let mut text = Strings::new();
    let hwcap_names = extension_hwcaps(d, base, ext_off, &mut text)?;
    let mut entries = Vec::with_capacity(nlibs);
    for i in 0..nlibs {
        let at = NEW_HEADER + i * NEW_ENTRY;
        let (Some(flags), Some(key), Some(value), Some(hwcap)) = (
            u32_at(h, at),
            u32_at(h, at + 4),
            u32_at(h, at + 8),
            u64_at(h, at + 16),
        ) else {
            break;
        };
        // String offsets of the new table are relative to its own header (dl-cache.c: string_table = cache_new).
        let (Some(name), Some(path)) = (text.at(h, key as usize)?, text.at(h, value as usize)?) else {
            continue;
        };
        let extension = hwcap & HWCAP_EXTENSION != 0;
        let (hwcaps, isa_level, legacy) = if extension {
            let index = (hwcap & 0xffff_ffff) as usize;
            let sub = hwcap_names
                .get(index)
                .cloned()
                .unwrap_or_else(|| format!("#{index}"));
            (Some(sub), ((hwcap >> 32) & ISA_LEVEL_MASK) as u32, 0)
        } else {
            (None, 0, hwcap)
        };
        entries.push(Entry {
            name,
            path,
            flags: flags as i32,
            hwcaps,
            isa_level,
            legacy_hwcap: legacy,
        });
    }
    Ok(entries)
}

/// The glibc-hwcaps subdirectory names of the cache extension (`cache_extension_tag_glibc_hwcaps`). The
/// extension and its sections are at offsets from the start of the file (`cache_extension_load` is given the
/// file's base); the section is an array of string-table offsets, and the string table is the new table's
/// (`base`), which differs from the file start in the compat (old+new) format.
fn extension_hwcaps(
    d: &[u8],
    base: usize,
    ext_off: usize,
    text: &mut Strings,
) -> Result<Vec<String>, CacheError> {
    let mut names = Vec::new();
    if ext_off == 0 {
        return Ok(names);
    }
    let at = ext_off;
    if u32_at(d, at) != Some(EXTENSION_MAGIC) {
        return Ok(names);
    }
    let count = u32_at(d, at + 4).unwrap_or(0).min(64) as usize;
    for s in 0..count {
        let sec = at + 8 + s * 16;
        let (Some(tag), Some(off), Some(size)) = (u32_at(d, sec), u32_at(d, sec + 8), u32_at(d, sec + 12))
        else {
            break;
        };
        if tag != TAG_GLIBC_HWCAPS {
            continue;
        }
        for k in 0..(size as usize / 4).min(1024) {
            let Some(o) = u32_at(d, off as usize + k * 4) else {
                break;
            };
            match text.at(d, base + o as usize)? {
                Some(n) => names.push(n),
                None => break,
            }
        }
    }
    Ok(names)
}

/// `_dl_cache_libcmp`: the cache's sort order. Runs of digits compare as numbers; a digit sorts after a
/// non-digit.
pub fn libcmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() {
        if a[i].is_ascii_digit() {
            if j < b.len() && b[j].is_ascii_digit() {
                let (mut x, mut y) = (0u64, 0u64);
                while i < a.len() && a[i].is_ascii_digit() {
                    x = x.saturating_mul(10).saturating_add(u64::from(a[i] - b'0'));
                    i += 1;
                }
                while j < b.len() && b[j].is_ascii_digit() {
                    y = y.saturating_mul(10).saturating_add(u64::from(b[j] - b'0'));
                    j += 1;
                }
                if x != y {
                    return x.cmp(&y);
                }
            } else {
                return Ordering::Greater;
            }
        } else if j < b.len() && b[j].is_ascii_digit() {
            return Ordering::Less;
        } else if j >= b.len() || a[i] != b[j] {
            return a[i].cmp(&b.get(j).copied().unwrap_or(0));
        } else {
            i += 1;
            j += 1;
        }
    }
    0u8.cmp(&b.get(j).copied().unwrap_or(0))
}

/// The cache flags ld.so accepts for an ELF class and machine (`_DL_CACHE_DEFAULT_ID` of
/// `sysdeps/*/dl-cache.h`), or `None` for machines cudadiag does not know.
pub fn default_id(machine: u16, is_64: bool) -> Option<i32> {
    use goblin::elf::header::*;
    let arch = match (machine, is_64) {
        (EM_X86_64, true) => 0x0300,  // FLAG_X8664_LIB64
        (EM_X86_64, false) => 0x0800, // FLAG_X8664_LIBX32
        (EM_386, false) => 0,
        (EM_AARCH64, true) => 0x0a00, // FLAG_AARCH64_LIB64
        (EM_PPC64, true) => 0x0500,   // FLAG_POWERPC_LIB64
        (EM_S390, true) => 0x0400,    // FLAG_S390_LIB64
        (EM_ARM, false) => 0x0900,    // FLAG_ARM_LIBHF (hard-float, what distributions ship)
        _ => return None,
    };
    Some(arch | FLAG_ELF_LIBC6)
}

/// `_dl_cache_check_flags` of the loader whose `_DL_CACHE_DEFAULT_ID` is `default_id`: which entries it
/// takes at all. Each 64-bit loader cudadiag models takes only its own flags (`sysdeps/x86_64/dl-cache.h`,
/// `sysdeps/unix/sysv/linux/aarch64/dl-cache.h`, `…/powerpc/powerpc64/dl-cache.h`, `…/s390/s390-64/dl-cache.h`;
/// x32's `0x0803` too); 32-bit Arm also takes unmarked `FLAG_ELF_LIBC6` entries
/// (`sysdeps/unix/sysv/linux/arm/dl-cache.h`); the rest use `sysdeps/generic/dl-cache.h`: `FLAG_ELF` (1) or
/// their own.
pub fn check_flags(default_id: i32, flags: i32) -> bool {
    match default_id {
        0x0303 | 0x0803 | 0x0a03 | 0x0503 | 0x0403 => flags == default_id,
        0x0903 => flags == default_id || flags == FLAG_ELF_LIBC6,
        _ => flags == 1 || flags == default_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which entries each loader takes: an aarch64 or x86-64 ld.so only its own flags (an entry marked
    /// `FLAG_ELF` or `FLAG_ELF_LIBC6` alone is skipped), i386's generic check also `FLAG_ELF`, 32-bit Arm's
    /// also unmarked `FLAG_ELF_LIBC6`.
    #[test]
    fn each_loader_takes_its_own_flags() {
        use goblin::elf::header::{EM_386, EM_AARCH64, EM_ARM, EM_X86_64};
        let id = |m, is_64| default_id(m, is_64).unwrap();
        let aarch64 = id(EM_AARCH64, true);
        assert_eq!(aarch64, 0x0a03);
        let takes = |d: i32| [1, 3, 0x0303, 0x0a03, 0x0903].map(|f| check_flags(d, f));
        assert_eq!(takes(aarch64), [false, false, false, true, false]);
        assert_eq!(takes(id(EM_X86_64, true)), [false, false, true, false, false]);
        assert_eq!(takes(id(EM_386, false)), [true, true, false, false, false]);
        assert_eq!(takes(id(EM_ARM, false)), [false, true, false, false, true]);
    }

    #[test]
    fn libcmp_is_numeric() {
        assert_eq!(libcmp("libc.so.6", "libc.so.6"), Ordering::Equal);
        assert_eq!(libcmp("libfoo.so.10", "libfoo.so.9"), Ordering::Greater);
        assert_eq!(libcmp("liba.so", "libb.so"), Ordering::Less);
        assert_eq!(libcmp("lib1", "liba"), Ordering::Greater);
        assert_eq!(libcmp("lib", "libx"), Ordering::Less);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(LdCache::parse(b"nonsense").is_err());
        assert!(LdCache::parse(b"glibc-ld.so.cache1.1").is_err());
        let mut d = b"glibc-ld.so.cache1.1".to_vec();
        d.resize(48, 0);
        d[20] = 0xff; // nlibs that cannot fit
        assert!(LdCache::parse(&d).is_err());
    }

    /// Every entry of a crafted cache names one 4 KiB string: decoding stops at the budget instead of costing
    /// entries × length; a string longer than PATH_MAX, or one without its NUL, makes its entry unreadable.
    #[test]
    fn entries_sharing_one_long_string_stay_within_the_budget() {
        let n = 40_000;
        let table = NEW_HEADER + n * NEW_ENTRY;
        let mut d = NEW_MAGIC.to_vec();
        d.extend_from_slice(&(n as u32).to_le_bytes());
        d.resize(NEW_HEADER, 0);
        for _ in 0..n {
            d.extend_from_slice(&0x0303u32.to_le_bytes());
            d.extend_from_slice(&(table as u32).to_le_bytes());
            d.extend_from_slice(&(table as u32).to_le_bytes());
            d.extend_from_slice(&[0; 12]);
        }
        d.extend(std::iter::repeat_n(b'a', STRING_MAX));
        d.push(0);
        let e = LdCache::parse(&d).unwrap_err();
        assert!(e.0.contains("exceed 64 MiB"), "{e:?}");
        // One byte longer than PATH_MAX: every entry unreadable, none decoded.
        d.insert(table, b'a');
        assert!(LdCache::parse(&d).unwrap().entries.is_empty());
        // No NUL at all.
        d.pop();
        assert!(LdCache::parse(&d).unwrap().entries.is_empty());
    }
}
