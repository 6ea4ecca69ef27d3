//! Which file a loaded library came from: `/proc/self/maps` read at the address of one of its symbols.
//!
//! `dlopen("libcuda.so.1")` answers with a handle, not a path; the mapping that holds the address of a symbol
//! the library defines names the file the kernel actually mapped, with symbolic links resolved (`proc(5)`,
//! "/proc/pid/maps"). That is the fact a stub or compat library on `LD_LIBRARY_PATH` changes.

/// The file mapped at `addr` in this process, if any.
pub fn file_at(addr: usize) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/maps").ok()?;
    find(&text, addr)
}

/// Finds the pathname of the mapping holding `addr` in a `/proc/pid/maps` text.
pub fn find(maps: &str, addr: usize) -> Option<String> {
    for line in maps.lines() {
        // address perms offset dev inode pathname (the pathname may hold spaces)
        let mut fields = line.splitn(6, ' ');
        let range = fields.next()?;
        let (lo, hi) = range.split_once('-')?;
        let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) else {
            continue;
        };
        if addr < lo || addr >= hi {
            continue;
        }
        let path = fields.nth(4).map(str::trim).unwrap_or("");
        return (path.starts_with('/')).then(|| path.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
7f0000000000-7f0000001000 r--p 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
7f0000001000-7f0000100000 r-xp 00001000 08:01 123 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
7f0000100000-7f0000200000 rw-p 00000000 00:00 0 
7f0000200000-7f0000300000 r-xp 00000000 08:01 9 /tmp/dir with space/libcuda.so.1
7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                          [vdso]
";

    #[test]
    fn finds_the_mapping_holding_the_address() {
        assert_eq!(
            find(MAPS, 0x7f0000001234).as_deref(),
            Some("/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04")
        );
        assert_eq!(
            find(MAPS, 0x7f0000200010).as_deref(),
            Some("/tmp/dir with space/libcuda.so.1")
        );
        assert_eq!(find(MAPS, 0x7f0000100010), None, "anonymous mapping");
        assert_eq!(find(MAPS, 0x7ffd00000010), None, "[vdso] is no file");
        assert_eq!(find(MAPS, 0x1000), None);
    }

    #[test]
    fn finds_this_function_in_the_running_test_binary() {
        let here = file_at(finds_this_function_in_the_running_test_binary as *const () as usize);
        let exe = std::env::current_exe().ok().and_then(|p| p.canonicalize().ok());
        assert_eq!(here.map(std::path::PathBuf::from), exe);
    }
}
