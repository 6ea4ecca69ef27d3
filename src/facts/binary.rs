//! What a binary holds: the serialisable facts `inspect` reads from a file.
//!
//! Everything cudadiag learns about a binary is copied out of the parsers into these owned types, so that
//! no parser type (goblin's, our fatbin walker's) leaks past `inspect`, and so that facts can be written to a
//! snapshot and read back (`--facts`) with exactly the same meaning. Every fact that a finding may cite
//! carries its provenance: the file offset it was read at, or the rule that derived it.

use serde::{Deserialize, Serialize};

/// What kind of file an input turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// A host ELF file: executable, shared library or relocatable object.
    Elf,
    /// A raw fatbin container file (`nvcc -fatbin`).
    Fatbin,
    /// A raw device ELF (`nvcc -cubin`).
    Cubin,
    /// A PTX text file.
    Ptx,
    /// A file cudadiag does not recognise.
    Unknown,
}

impl Format {
    /// The contract's spelling (`fatbin`).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Elf => "elf",
            Format::Fatbin => "fatbin",
            Format::Cubin => "cubin",
            Format::Ptx => "ptx",
            Format::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Facts about one inspected binary. A static archive yields one of these per member, named
/// `archive.a(member.o)` as `nm` and `ar` name them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BinaryFacts {
    /// The path as given on the command line (with `(member)` for archive members).
    pub path: String,
    /// What the file is.
    pub format: Option<Format>,
    /// Size of the file (or archive member) in bytes.
    pub size: u64,
    /// Host ELF facts, when the file is a host ELF.
    pub elf: Option<ElfFacts>,
    /// The CUDA runtime this binary links, if any.
    pub cudart: CudartFacts,
    /// Every fatbin container found, in file order.
    pub fatbins: Vec<FatbinContainer>,
    /// Every device-code entry of every container, in file order (duplicates kept).
    pub device_code: Vec<DeviceCode>,
    /// The device code was not read (`inspect --no-device-code`): an empty `device_code` then says nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub device_code_skipped: bool,
    /// Problems met while reading this binary; each becomes a finding.
    pub problems: Vec<Problem>,
}

/// A problem met while reading an input: the evidence of a `malformed-*` finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// What was wrong with the input.
    pub kind: ProblemKind,
    /// One sentence for humans.
    pub message: String,
    /// File offset the problem was found at, when there is one.
    pub offset: Option<u64>,
}

/// Which part of an input a [`Problem`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// The host ELF (or archive) structure is damaged.
    Binary,
    /// A fatbin container, an entry, a compressed payload, a cubin or a PTX text is damaged.
    DeviceCode,
    /// The file is neither ELF, archive, fatbin, cubin nor PTX.
    Unrecognized,
    /// The input could not be read at all (permission, a dangling link, not a regular file, an I/O error):
    /// nothing about it was checked.
    Unreadable,
}

/// ELF class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ElfClass {
    /// 32-bit.
    #[serde(rename = "ELF32")]
    Elf32,
    /// 64-bit.
    #[serde(rename = "ELF64")]
    Elf64,
}

impl ElfClass {
    /// The contract's spelling (`ELF64`).
    pub fn as_str(self) -> &'static str {
        match self {
            ElfClass::Elf32 => "ELF32",
            ElfClass::Elf64 => "ELF64",
        }
    }
}

impl std::fmt::Display for ElfClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Facts from a host ELF file's headers and dynamic section.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ElfFacts {
    /// 32 or 64-bit.
    pub class: ElfClass,
    /// `e_machine`, as a number (ld.so compares the number).
    pub machine: u16,
    /// `e_machine` as a name (`x86_64`, `aarch64`, …).
    pub machine_name: String,
    /// `e_type`: `exec`, `dyn` (shared object or PIE), `rel`, `core`.
    pub elf_type: String,
    /// `EI_OSABI`.
    pub os_abi: u8,
    /// `PT_INTERP`, the program interpreter.
    pub interpreter: Option<String>,
    /// `DT_SONAME`.
    pub soname: Option<String>,
    /// `DT_NEEDED`, in order.
    pub needed: Vec<String>,
    /// `DT_RPATH` entries, split on `:`, unexpanded.
    pub rpath: Vec<String>,
    /// `DT_RUNPATH` entries, split on `:`, unexpanded.
    pub runpath: Vec<String>,
    /// `DT_FLAGS_1`.
    pub flags_1: u64,
    /// `DF_1_NODEFLIB` is set: the default directories are not searched for this object's dependencies.
    pub nodeflib: bool,
    /// `DT_VERNEED`: per needed file, the versions it requires.
    pub version_needs: Vec<VersionNeed>,
    /// `DT_VERDEF`: the versions this object defines (the first is its own base name).
    pub version_defs: Vec<String>,
    /// Defined, exported dynamic symbols.
    pub defined_count: usize,
    /// Undefined dynamic symbols (what this object needs from others).
    pub undefined_count: usize,
    /// The undefined dynamic symbols that carry a version (the ones ld.so checks by version).
    pub versioned_undefined: std::sync::Arc<[DynSymbol]>,
    /// The object has a `.symtab` (it is not stripped).
    pub has_symtab: bool,
}

/// One `Verneed` record: a file and the version names this object needs from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionNeed {
    /// The file (soname) the versions are needed from.
    pub file: String,
    /// The version names, e.g. `GLIBC_2.34`, `libcudart.so.12`.
    pub versions: Vec<String>,
}

/// A dynamic symbol with its symbol version, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynSymbol {
    /// The symbol name.
    pub name: String,
    /// The version name bound to it through `DT_VERSYM` (`GLIBC_2.2.5`, `libnvJitLink.so.12`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<std::sync::Arc<str>>,
    /// The version is hidden (`name@VER` rather than `name@@VER`): not the default for unversioned references.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// The symbol is weak: a missing weak reference is not an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub weak: bool,
}

/// How a binary links the CUDA runtime.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CudartLinkage {
    /// `libcudart_static.a` linked in (nvcc's default).
    Static,
    /// `DT_NEEDED libcudart.so.N`.
    Dynamic,
    /// No CUDA runtime.
    #[default]
    None,
}

impl CudartLinkage {
    /// The contract's spelling (`static`).
    pub fn as_str(self) -> &'static str {
        match self {
            CudartLinkage::Static => "static",
            CudartLinkage::Dynamic => "dynamic",
            CudartLinkage::None => "none",
        }
    }
}

impl std::fmt::Display for CudartLinkage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The CUDA runtime a binary uses.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CudartFacts {
    /// Static, dynamic or none.
    pub linkage: CudartLinkage,
    /// The runtime version (`13.0`), when it can be read without running anything.
    pub version: Option<String>,
    /// For dynamic linkage: the `DT_NEEDED` name (`libcudart.so.12`).
    pub soname: Option<String>,
    /// Where the linkage and the version were read.
    pub evidence: Vec<String>,
}

/// One fatbin container (`0xBA55ED50` header and its entries).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FatbinContainer {
    /// The ELF section holding it (`.nv_fatbin`, `__nv_relfatbin`), or `None` for a raw `.fatbin` file.
    pub section: Option<String>,
    /// File offset of the container header.
    pub offset: u64,
    /// Container header size plus declared entry bytes.
    pub size: u64,
    /// Number of entries read from it.
    pub entries: usize,
    /// Found only by the fallback magic scan, outside the usual sections.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub found_by_scan: bool,
}

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CodeKind {
    /// Machine code (a cubin).
    Sass,
    /// PTX text, JIT-compiled by the driver.
    Ptx,
    /// NVVM IR for link-time optimisation (`-dlto`); not loadable by the driver.
    Nvvm,
}

impl CodeKind {
    /// The contract's spelling (`sass`).
    pub fn as_str(self) -> &'static str {
        match self {
            CodeKind::Sass => "sass",
            CodeKind::Ptx => "ptx",
            CodeKind::Nvvm => "nvvm",
        }
    }
}

impl std::fmt::Display for CodeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an entry's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compression {
    /// Stored as is.
    None,
    /// LZ4 block format (fatbin flag `0x2000`).
    Lz4,
    /// zstd frame (fatbin flag `0x8000`; nvcc 12.8+ `--compress-mode`); needs an R550+ driver.
    Zstd,
}

impl Compression {
    /// The contract's spelling (`zstd`).
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One device-code entry: a cubin, a PTX text or an NVVM module.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceCode {
    /// SASS, PTX or NVVM.
    pub kind: CodeKind,
    /// `sm_90a` for SASS, `compute_90` for PTX and NVVM.
    pub arch: String,
    /// The SM number without suffix (90, 100, 120).
    pub sm: u32,
    /// `a` (arch-specific) or `f` (family-specific), when set.
    pub suffix: Option<char>,
    /// PTX ISA version (`9.0`) for PTX entries.
    pub ptx_isa: Option<String>,
    /// Header major/minor: the ISA for PTX, the cubin "code version" for SASS.
    pub code_version: [u16; 2],
    /// How the payload is stored.
    pub compression: Compression,
    /// Size of the code in bytes, uncompressed.
    pub size: u64,
    /// Bytes the payload takes in the file.
    pub stored_size: u64,
    /// Raw entry flags.
    pub flags: u64,
    /// Built with `-G` (flag `0x2`).
    pub debug: bool,
    /// 64-bit device code (flag `0x1`).
    pub bits64: bool,
    /// Host OS named in the flags.
    pub host: Option<String>,
    /// The entry's identifier (source name), when present.
    pub identifier: Option<String>,
    /// ptxas or nvvm options stored with the entry.
    pub options: Option<String>,
    /// The toolkit that produced it (`13.0.88`), from the cubin's `.note.nv.tkinfo`.
    pub toolkit: Option<String>,
    /// Where `toolkit` was read (`tkinfo` of this entry, or inferred from a sibling in the same container).
    pub toolkit_source: Option<String>,
    /// Why the payload was not read although the inspection wanted it (over the size read without `--deep`,
    /// or the run's decompression budget spent): its kernels and toolkit are unknown, not absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
    /// From `__nv_relfatbin`: kept for device linking, never loaded at run time.
    pub relocatable: bool,
    /// Index of the container in [`BinaryFacts::fatbins`].
    pub container: usize,
    /// File offset of the entry header.
    pub offset: u64,
    /// Cubin facts, when the payload was read. Boxed, as `ptx`: a listing holds thousands of entries (2,981 in
    /// PyTorch's `libtorch_cuda.so`) and the default inspection reads the payload of few of them, so inline
    /// facts would take 230 bytes of each entry's 490 for nothing.
    pub cubin: Option<Box<CubinFacts>>,
    /// PTX facts, when the payload was read.
    pub ptx: Option<Box<PtxFacts>>,
}

/// Facts from a device ELF (cubin).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CubinFacts {
    /// `e_type`: `exec` for final cubins, `rel` for relocatable device code.
    pub elf_type: String,
    /// `EI_OSABI` (0x33 before CUDA 13 for sm < 100, 0x41 after).
    pub os_abi: u8,
    /// `EI_ABIVERSION` (7 or 8): selects the `e_flags` layout.
    pub abi_version: u8,
    /// Raw `e_flags`.
    pub e_flags: u32,
    /// The SM decoded from `e_flags`.
    pub sm: u32,
    /// The virtual (PTX) SM from `e_flags` (ABI 7) or `.note.nv.cuinfo`.
    pub virtual_sm: Option<u32>,
    /// Arch-specific (`a`) according to `e_flags` or `.nv.compat`.
    pub arch_specific: bool,
    /// `.note.nv.tkinfo` tool name (`ptxas`, `nvlink`).
    pub tool: Option<String>,
    /// `.note.nv.tkinfo` tool version string.
    pub tool_version: Option<String>,
    /// `.note.nv.tkinfo` tool options.
    pub tool_options: Option<String>,
    /// Toolkit from `.note.nv.cuinfo` (`13.0`).
    pub cuinfo_toolkit: Option<String>,
    /// Kernel entry points (mangled names). Shared: the run remembers each payload's facts for its copies
    /// (`inspect::budget`), and PyTorch's cubins name 100,000 kernels.
    pub kernels: std::sync::Arc<[String]>,
}

/// Facts from a PTX text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PtxFacts {
    /// `.version`.
    pub version: Option<String>,
    /// `.target` targets (`sm_90a`, `debug`, `texmode_independent`).
    pub target: Vec<String>,
    /// `.address_size`.
    pub address_size: Option<u32>,
    /// `.entry` names (shared, as [`CubinFacts::kernels`]).
    pub entries: std::sync::Arc<[String]>,
}
