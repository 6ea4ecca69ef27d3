//! The smallest shared library the loader accepts: what stands, in the unpacked tree, for a driver library the
//! container toolkit mounts from the node. cudadiag reads a library's name, version (from the file name),
//! ELF class, machine and `DT_SONAME`; the node's real file is not here, so this one carries exactly those.
//!
//! Layout (ELF-64 little-endian, `ET_DYN`): the header, two program headers (`PT_LOAD` over the whole file,
//! `PT_DYNAMIC`), the dynamic string table, the dynamic section (`DT_NEEDED libc.so.6`, as every driver
//! library has, which is also what tells it from the toolkit's link stub; `DT_STRTAB`, `DT_STRSZ`,
//! `DT_SONAME`, `DT_NULL`). No section headers, no symbols, no code.

/// `e_machine` of x86-64.
pub const EM_X86_64: u16 = 62;
/// `e_machine` of AArch64.
pub const EM_AARCH64: u16 = 183;

/// A placeholder shared library with `soname`, for the machine `e_machine`.
pub fn library(soname: &str, e_machine: u16) -> Vec<u8> {
    const EHDR: usize = 64;
    const PHDR: usize = 56;
    let strtab_off = EHDR + 2 * PHDR;
    let mut strtab = vec![0u8];
    strtab.extend_from_slice(soname.as_bytes());
    strtab.push(0);
    let libc = strtab.len() as u64;
    strtab.extend_from_slice(b"libc.so.6\0");
    let mut dyn_off = strtab_off + strtab.len();
    dyn_off = dyn_off.next_multiple_of(8);
    let dynamic: [(u64, u64); 5] = [
        (1, libc),                 // DT_NEEDED
        (5, strtab_off as u64),    // DT_STRTAB
        (10, strtab.len() as u64), // DT_STRSZ
        (14, 1),                   // DT_SONAME: offset 1 in the string table
        (0, 0),                    // DT_NULL
    ];
    let total = dyn_off + dynamic.len() * 16;
    let mut b = Vec::with_capacity(total);
    // ELF header.
    b.extend_from_slice(b"\x7fELF");
    b.extend_from_slice(&[2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
    b.extend_from_slice(&e_machine.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes()); // EV_CURRENT
    b.extend_from_slice(&0u64.to_le_bytes()); // e_entry
    b.extend_from_slice(&(EHDR as u64).to_le_bytes()); // e_phoff
    b.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    b.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    b.extend_from_slice(&(EHDR as u16).to_le_bytes());
    b.extend_from_slice(&(PHDR as u16).to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes()); // e_phnum
    b.extend_from_slice(&64u16.to_le_bytes()); // e_shentsize
    b.extend_from_slice(&0u16.to_le_bytes()); // e_shnum
    b.extend_from_slice(&0u16.to_le_bytes()); // e_shstrndx
    // Program headers: addresses equal file offsets.
    let phdr = |b: &mut Vec<u8>, ty: u32, flags: u32, off: usize, size: usize, align: u64| {
        b.extend_from_slice(&ty.to_le_bytes());
        b.extend_from_slice(&flags.to_le_bytes());
        for v in [
            off as u64,
            off as u64,
            off as u64,
            size as u64,
            size as u64,
            align,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
    };
    phdr(&mut b, 1, 4 | 2, 0, total, 0x1000); // PT_LOAD, R+W
    phdr(&mut b, 2, 4 | 2, dyn_off, dynamic.len() * 16, 8); // PT_DYNAMIC
    b.extend_from_slice(&strtab);
    b.resize(dyn_off, 0);
    for (tag, val) in dynamic {
        b.extend_from_slice(&tag.to_le_bytes());
        b.extend_from_slice(&val.to_le_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goblin_reads_its_soname() {
        let b = library("libcuda.so.1", EM_X86_64);
        let elf = goblin::elf::Elf::parse(&b).unwrap();
        assert_eq!(elf.soname, Some("libcuda.so.1"));
        assert_eq!(elf.header.e_machine, EM_X86_64);
        assert!(elf.is_lib);
        assert_eq!(elf.libraries, ["libc.so.6"]);
    }
}
