//! The `ld.so.cache` the toolkit's `ldconfig` run leaves in a GPU container, as data.
//!
//! libnvidia-container (`src/nvc_ldcache.c`, `nvc_ldcache_update`) runs, chrooted into the container,
//! `ldconfig -f /etc/ld.so.conf -C /etc/ld.so.cache LIBS_DIR LIBS32_DIR`: the directories it mounted the
//! driver's libraries into, on the command line. The CDI hook (`nvidia-ctk hook update-ldcache --folder DIR`)
//! does the same through a drop-in of `/etc/ld.so.conf.d`. ldconfig (glibc `elf/ldconfig.c`) then rebuilds the
//! cache from nothing: the command-line directories first, then those of `/etc/ld.so.conf` (its `include`s
//! expanded), then its trusted directories; in each, every `lib*.so*`/`ld-*.so*` ELF file is entered under its
//! SONAME with the path `DIR/SONAME` (the link ldconfig makes), and the cache is sorted by name, an earlier
//! directory's entry first among equals. Whatever the image's own cache said is gone: a stale one is
//! replaced, a missing one is written.
//!
//! This module orders directories and writes the file; `diagnose::image::ldconfig` walks the image's tree.

use crate::loader::cache::libcmp;

/// One cache entry: the name looked up, the path, the flags (`FLAG_ELF_LIBC6` with the architecture bits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// The SONAME (or the file name of a library without one).
    pub name: String,
    /// The path ld.so opens.
    pub path: String,
    /// `FLAG_*` of `sysdeps/generic/ldconfig.h` (0x0303: x86-64 libc6).
    pub flags: i32,
}

/// The directories `ldconfig` scans, in its order, each once: the command line's, the configuration's, the
/// trusted ones. Duplicates (the same real directory under two names) are dropped by the caller, which can
/// resolve them.
pub fn directory_order(command_line: &[String], configured: &[String], trusted: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in command_line.iter().chain(configured).chain(trusted) {
        let d = d.trim_end_matches('/');
        let d = if d.is_empty() { "/" } else { d };
        if !out.iter().any(|o| o == d) {
            out.push(d.to_string());
        }
    }
    out
}

/// The trusted directories of the `ldconfig` that runs: the node's (libnvidia-container runs the host's
/// `ldconfig` in the container), so cudadiag cannot know its build; it takes both families a 64-bit glibc is
/// built with, Debian's multiarch pair (`/lib/<triplet>`, `/usr/lib/<triplet>`) and the upstream `/lib64`,
/// `/usr/lib64`.
pub fn trusted_directories(machine: &str) -> Vec<String> {
    vec![
        format!("/lib/{machine}-linux-gnu"),
        format!("/usr/lib/{machine}-linux-gnu"),
        "/lib64".to_string(),
        "/usr/lib64".to_string(),
    ]
}

/// The directories an `ld.so.conf` names, in order, and the `include` patterns it names (expanded by the
/// caller, which reads the files). Comments (`#` to the end of the line) and blank lines are skipped; a
/// `DIR=TYPE` suffix is dropped; `hwcap` lines are ignored as glibc 2.37 and later ignore them.
pub fn parse_conf(text: &str) -> (Vec<String>, Vec<Include>) {
    let mut dirs = Vec::new();
    let mut includes = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        match words.next() {
            Some("include") => {
                includes.extend(words.map(|w| Include {
                    pattern: w.to_string(),
                    at: dirs.len(),
                }));
            }
            Some("hwcap") => {}
            _ => {
                for w in line.split([' ', '\t', ',', ':']).filter(|w| !w.is_empty()) {
                    let dir = w.split('=').next().unwrap_or(w);
                    if dir.starts_with('/') {
                        dirs.push(dir.to_string());
                    }
                }
            }
        }
    }
    (dirs, includes)
}

/// An `include PATTERN` line and where it stands among the file's directories (its files' directories come
/// at that point).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Include {
    /// The glob, as written (relative ones are relative to the including file's directory).
    pub pattern: String,
    /// How many of the file's directories come before it.
    pub at: usize,
}

/// Does `name` match the glob `pattern` (`*` and `?`; what `ld.so.conf` includes use)?
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// The bytes of a new-format cache (`glibc-ld.so.cache1.1`, what glibc 2.32 and later write by default) with
/// `entries` in ldconfig's order: names descending as `_dl_cache_libcmp` compares them, higher flags first,
/// and among equals the order given (the earlier directory's first; ld.so takes the first that fits).
pub fn write(entries: &[CacheEntry]) -> Vec<u8> {
    let mut sorted: Vec<&CacheEntry> = entries.iter().collect();
    sorted.sort_by(|a, b| libcmp(&b.name, &a.name).then(b.flags.cmp(&a.flags)));
    const HEADER: usize = 48;
    const ENTRY: usize = 24;
    let strings_at = HEADER + ENTRY * sorted.len();
    let mut strings: Vec<u8> = Vec::new();
    let mut rows: Vec<(i32, u32, u32)> = Vec::with_capacity(sorted.len());
    let put = |s: &str, strings: &mut Vec<u8>| {
        let at = strings_at + strings.len();
        strings.extend_from_slice(s.as_bytes());
        strings.push(0);
        u32::try_from(at).unwrap_or(u32::MAX)
    };
    for e in &sorted {
        let key = put(&e.name, &mut strings);
        let value = put(&e.path, &mut strings);
        rows.push((e.flags, key, value));
    }
    let mut d = Vec::with_capacity(strings_at + strings.len());
    d.extend_from_slice(b"glibc-ld.so.cache1.1");
    d.extend_from_slice(&u32::try_from(sorted.len()).unwrap_or(u32::MAX).to_le_bytes());
    d.extend_from_slice(&u32::try_from(strings.len()).unwrap_or(u32::MAX).to_le_bytes());
    // Byte order: little-endian (`cache_file_new_flags_endian_little`), then padding, no extension.
    d.extend_from_slice(&[2, 0, 0, 0]);
    d.extend_from_slice(&[0; 16]);
    for (flags, key, value) in rows {
        d.extend_from_slice(&flags.to_le_bytes());
        d.extend_from_slice(&key.to_le_bytes());
        d.extend_from_slice(&value.to_le_bytes());
        d.extend_from_slice(&0u32.to_le_bytes());
        d.extend_from_slice(&0u64.to_le_bytes());
    }
    d.extend_from_slice(&strings);
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::cache::LdCache;

    #[test]
    fn a_written_cache_reads_back_in_lookup_order() {
        let e = |name: &str, path: &str| CacheEntry {
            name: name.into(),
            path: path.into(),
            flags: 0x0303,
        };
        let bytes = write(&[
            e("libcuda.so.1", "/usr/lib64/libcuda.so.1"),
            e("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"),
            e("libcuda.so.1", "/usr/local/cuda/lib64/stubs/libcuda.so.1"),
        ]);
        let c = LdCache::parse(&bytes).unwrap();
        assert_eq!(c.format, "new");
        assert_eq!(c.entries.len(), 3);
        // The directory scanned first wins among equal names.
        let hit = c.lookup("libcuda.so.1", 0x0303, &[], 0).unwrap();
        assert_eq!(hit.path, "/usr/lib64/libcuda.so.1");
        assert!(c.lookup("libc.so.6", 0x0303, &[], 0).is_some());
    }

    #[test]
    fn configuration_and_order() {
        let (dirs, inc) = parse_conf(
            "# comment\ninclude /etc/ld.so.conf.d/*.conf\n/opt/a/lib=libc6 /opt/b\nhwcap 0 nosegneg\n\n",
        );
        assert_eq!(dirs, ["/opt/a/lib", "/opt/b"]);
        assert_eq!(inc[0].pattern, "/etc/ld.so.conf.d/*.conf");
        assert_eq!(inc[0].at, 0);
        assert!(glob_match("*.conf", "x86_64-linux-gnu.conf"));
        assert!(!glob_match("*.conf", "x.conf.bak"));
        let order = directory_order(
            &["/usr/lib64".into()],
            &["/opt/b/".into(), "/usr/lib64".into()],
            &trusted_directories("x86_64"),
        );
        assert_eq!(order[..2], ["/usr/lib64", "/opt/b"]);
        assert_eq!(order.len(), 5);
    }
}
