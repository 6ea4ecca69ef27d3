//! The helpers every test module shares, compiled once. Here: test-side writers for synthetic inputs, fatbin
//! entries and containers, and minimal ELF64 files holding arbitrary sections. They write exactly the layouts
//! of `docs/fatbin-format.md` ("Sections" to "Entry header"), so every malformed case can be built by
//! changing one field.
//! `loader_build` builds programs and libraries with `cc`; `golden` makes transcripts for the insta snapshots;
//! `tiny_runtime` writes the smallest libcudart (the unit tests of `src/inspect/elf.rs` include it too);
//! `probe/*.c` are the fake CUDA libraries `probe.rs` builds.

pub mod arm_build;
pub mod cli;
pub mod golden;
pub mod image;
pub mod loader_build;
pub mod rust_source;
pub mod skip;
pub mod tiny_runtime;

/// Entry kinds (the ones the tests write).
pub const PTX: u16 = 1;
pub const ELF: u16 = 2;
/// Flags (the ones the tests set).
pub const F64: u64 = 0x1;
pub const LINUX: u64 = 0x10;
pub const LZ4: u64 = 0x2000;
pub const ZSTD: u64 = 0x8000;

/// One fatbin entry, every header field settable.
#[derive(Clone, Debug)]
pub struct Entry {
    pub kind: u16,
    pub header_size: u32,
    pub payload: Vec<u8>,
    /// Overrides the padded payload size field.
    pub payload_size: Option<u64>,
    pub compressed_size: u32,
    pub major: u16,
    pub minor: u16,
    pub arch: u32,
    pub flags: u64,
    pub uncompressed_size: u64,
}

impl Entry {
    pub fn new(kind: u16, arch: u32, payload: Vec<u8>) -> Entry {
        let (major, minor) = if kind == PTX { (9, 0) } else { (1, 8) };
        Entry {
            kind,
            header_size: 64,
            payload,
            payload_size: None,
            compressed_size: 0,
            major,
            minor,
            arch,
            flags: F64 | LINUX,
            uncompressed_size: 0,
        }
    }

    /// A zstd-compressed entry holding `plain`.
    pub fn zstd(kind: u16, arch: u32, plain: &[u8]) -> Entry {
        let packed = ruzstd::encoding::compress_to_vec(plain, ruzstd::encoding::CompressionLevel::Fastest);
        let mut e = Entry::new(kind, arch, packed.clone());
        e.flags |= ZSTD;
        e.compressed_size = packed.len() as u32;
        e.uncompressed_size = plain.len() as u64;
        e
    }

    /// A zstd decompression bomb: `size` bytes of `byte` as a frame of RLE blocks (RFC 8878 §3.1.1.2), 4
    /// bytes per 128 KiB, so 256 MiB take 8 KB. The frame and the entry header both declare `size` honestly.
    pub fn zstd_bomb(kind: u16, arch: u32, byte: u8, size: u64) -> Entry {
        const BLOCK: u64 = 128 << 10;
        let mut f = vec![0x28, 0xB5, 0x2F, 0xFD, 0xE0]; // magic; single segment, 8-byte content size
        f.extend_from_slice(&size.to_le_bytes());
        let mut left = size;
        while left > 0 {
            let n = left.min(BLOCK);
            left -= n;
            let header = (n << 3) | (1 << 1) | u64::from(left == 0); // RLE block, last flag
            f.extend_from_slice(&header.to_le_bytes()[..3]);
            f.push(byte);
        }
        let mut e = Entry::new(kind, arch, f.clone());
        e.flags |= ZSTD;
        e.compressed_size = f.len() as u32;
        e.uncompressed_size = size;
        e
    }

    /// An LZ4-compressed entry holding `plain`.
    pub fn lz4(kind: u16, arch: u32, plain: &[u8]) -> Entry {
        let packed = lz4_flex::block::compress(plain);
        let mut e = Entry::new(kind, arch, packed.clone());
        e.flags |= LZ4;
        e.compressed_size = packed.len() as u32;
        e.uncompressed_size = plain.len() as u64;
        e
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut payload = self.payload.clone();
        while !payload.len().is_multiple_of(8) {
            payload.push(0);
        }
        let mut h = Vec::new();
        h.extend_from_slice(&self.kind.to_le_bytes());
        h.extend_from_slice(&0x0101u16.to_le_bytes());
        h.extend_from_slice(&self.header_size.to_le_bytes());
        h.extend_from_slice(&self.payload_size.unwrap_or(payload.len() as u64).to_le_bytes());
        h.extend_from_slice(&self.compressed_size.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes()); // options pair offset
        h.extend_from_slice(&self.minor.to_le_bytes());
        h.extend_from_slice(&self.major.to_le_bytes());
        h.extend_from_slice(&self.arch.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes()); // identifier offset
        h.extend_from_slice(&0u32.to_le_bytes()); // identifier length
        h.extend_from_slice(&self.flags.to_le_bytes());
        h.extend_from_slice(&0u64.to_le_bytes());
        h.extend_from_slice(&self.uncompressed_size.to_le_bytes());
        h.resize(self.header_size.max(64) as usize, 0);
        h.extend_from_slice(&payload);
        h
    }
}

/// A container: 16-byte header then the entries; `fat_size` overrides the declared size.
pub fn container(entries: &[Entry], fat_size: Option<u64>) -> Vec<u8> {
    let body: Vec<u8> = entries.iter().flat_map(Entry::bytes).collect();
    let mut c = Vec::new();
    c.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    c.extend_from_slice(&1u16.to_le_bytes());
    c.extend_from_slice(&16u16.to_le_bytes());
    c.extend_from_slice(&fat_size.unwrap_or(body.len() as u64).to_le_bytes());
    c.extend_from_slice(&body);
    c
}

/// A PTX text of the given ISA and target.
pub fn ptx_text(isa: &str, target: &str) -> Vec<u8> {
    format!(
        "//\n.version {isa}\n.target {target}\n.address_size 64\n\n.visible .entry k(\n)\n{{\nret;\n}}\n\0"
    )
    .into_bytes()
}

/// A minimal ELF64 little-endian file with the given (name, type, bytes) sections plus `.shstrtab`.
/// `e_machine` and `e_type` are settable; for a cubin use machine 190 with the ABI byte and flags.
pub struct ElfSpec {
    pub machine: u16,
    pub e_type: u16,
    pub os_abi: u8,
    pub abi_version: u8,
    pub e_flags: u32,
    pub sections: Vec<(String, u32, Vec<u8>)>,
    /// Give every section the virtual address equal to its file offset (as in a simple linked image).
    pub addresses: bool,
}

pub const SHT_PROGBITS: u32 = 1;
pub const SHT_NOTE: u32 = 7;

impl ElfSpec {
    pub fn host(sections: Vec<(&str, Vec<u8>)>) -> ElfSpec {
        ElfSpec {
            machine: 62,
            e_type: 1,
            os_abi: 0,
            abi_version: 0,
            e_flags: 0,
            sections: sections
                .into_iter()
                .map(|(n, b)| (n.to_string(), SHT_PROGBITS, b))
                .collect(),
            addresses: false,
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut shstrtab = vec![0u8];
        let mut names = Vec::new();
        for (n, _, _) in &self.sections {
            names.push(shstrtab.len() as u32);
            shstrtab.extend_from_slice(n.as_bytes());
            shstrtab.push(0);
        }
        let shstr_name = shstrtab.len() as u32;
        shstrtab.extend_from_slice(b".shstrtab\0");
        let mut data = vec![0u8; 64];
        let mut offsets = Vec::new();
        for (_, _, b) in &self.sections {
            while !data.len().is_multiple_of(8) {
                data.push(0);
            }
            offsets.push(data.len() as u64);
            data.extend_from_slice(b);
        }
        let shstr_off = data.len() as u64;
        data.extend_from_slice(&shstrtab);
        while !data.len().is_multiple_of(8) {
            data.push(0);
        }
        let shoff = data.len() as u64;
        let shnum = self.sections.len() as u16 + 2;
        let addresses = self.addresses;
        let mut sh = |name: u32, ty: u32, off: u64, size: u64| {
            let mut s = Vec::new();
            s.extend_from_slice(&name.to_le_bytes());
            s.extend_from_slice(&ty.to_le_bytes());
            s.extend_from_slice(&0u64.to_le_bytes()); // flags
            let addr = if addresses && ty != 0 { off } else { 0 };
            s.extend_from_slice(&addr.to_le_bytes());
            s.extend_from_slice(&off.to_le_bytes());
            s.extend_from_slice(&size.to_le_bytes());
            s.extend_from_slice(&0u32.to_le_bytes()); // link
            s.extend_from_slice(&0u32.to_le_bytes()); // info
            s.extend_from_slice(&8u64.to_le_bytes()); // align
            s.extend_from_slice(&0u64.to_le_bytes()); // entsize
            data.extend_from_slice(&s);
        };
        sh(0, 0, 0, 0);
        for (i, (_, ty, b)) in self.sections.iter().enumerate() {
            sh(names[i], *ty, offsets[i], b.len() as u64);
        }
        sh(shstr_name, 3, shstr_off, shstrtab.len() as u64);
        let mut h = Vec::new();
        h.extend_from_slice(b"\x7fELF");
        h.extend_from_slice(&[2, 1, 1, self.os_abi, self.abi_version, 0, 0, 0, 0, 0, 0, 0]);
        h.extend_from_slice(&self.e_type.to_le_bytes());
        h.extend_from_slice(&self.machine.to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&0u64.to_le_bytes()); // entry
        h.extend_from_slice(&0u64.to_le_bytes()); // phoff
        h.extend_from_slice(&shoff.to_le_bytes());
        h.extend_from_slice(&self.e_flags.to_le_bytes());
        h.extend_from_slice(&64u16.to_le_bytes()); // ehsize
        h.extend_from_slice(&56u16.to_le_bytes()); // phentsize
        h.extend_from_slice(&0u16.to_le_bytes()); // phnum
        h.extend_from_slice(&64u16.to_le_bytes()); // shentsize
        h.extend_from_slice(&shnum.to_le_bytes());
        h.extend_from_slice(&(shnum - 1).to_le_bytes()); // shstrndx
        data[..64].copy_from_slice(&h);
        data
    }
}

/// A tiny cubin: EM_CUDA, ABI 8, sm in bits 8–15, and a `.note.nv.tkinfo` naming `tool_version`.
pub fn cubin(sm: u32, tool_version: &str) -> Vec<u8> {
    let strings = format!("\0ptxas\0{tool_version}\0branch\0-arch sm_{sm}\0");
    let mut desc = Vec::new();
    desc.extend_from_slice(&2u32.to_le_bytes());
    for off in [
        0u32,
        1,
        7,
        8 + tool_version.len() as u32,
        15 + tool_version.len() as u32,
    ] {
        desc.extend_from_slice(&off.to_le_bytes());
    }
    desc.extend_from_slice(strings.as_bytes());
    let mut note = Vec::new();
    note.extend_from_slice(&12u32.to_le_bytes());
    note.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    note.extend_from_slice(&2000u32.to_le_bytes());
    note.extend_from_slice(b"NVIDIA Corp\0");
    note.extend_from_slice(&desc);
    while note.len() % 4 != 0 {
        note.push(0);
    }
    ElfSpec {
        machine: 190,
        e_type: 2,
        os_abi: 0x41,
        abi_version: 8,
        e_flags: 0x0600_0004 | (sm << 8),
        sections: vec![(".note.nv.tkinfo".to_string(), SHT_NOTE, note)],
        addresses: false,
    }
    .bytes()
}

/// Where `ElfSpec::bytes` puts section `index` (same alignment rule), for tests that need an offset.
pub fn section_offset(spec: &ElfSpec, index: usize) -> u64 {
    let mut len = 64usize;
    for (i, (_, _, b)) in spec.sections.iter().enumerate() {
        len = len.next_multiple_of(8);
        if i == index {
            return len as u64;
        }
        len += b.len();
    }
    panic!("no section {index}")
}

/// A 24-byte `__fatBinC_Wrapper_t` pointing at `addr`.
pub fn wrapper(version: u32, addr: u64) -> Vec<u8> {
    let mut w = Vec::new();
    w.extend_from_slice(&0x4662_43B1u32.to_le_bytes());
    w.extend_from_slice(&version.to_le_bytes());
    w.extend_from_slice(&addr.to_le_bytes());
    w.extend_from_slice(&0u64.to_le_bytes());
    w
}

/// A host ELF whose `.nv_fatbin` holds `fatbin`.
pub fn host_with_fatbin(fatbin: Vec<u8>) -> Vec<u8> {
    ElfSpec::host(vec![(".nv_fatbin", fatbin)]).bytes()
}

/// Deterministic xorshift64* for mutation tests.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}
