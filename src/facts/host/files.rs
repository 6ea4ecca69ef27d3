//! The driver's files as read: library files (whole, cut short, the toolkit's link stub), the JIT cache
//! directory and the Container Toolkit's CDI specs. Raw observations with the pure helpers that describe them.

use serde::{Deserialize, Serialize};

/// One driver library file, as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibFile {
    /// The machine path of the file (its real path: links resolved inside the root).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// What it holds.
    pub shape: LibShape,
}

/// What a library file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LibShape {
    /// Zero bytes.
    Empty,
    /// Not an ELF file at all (not judged: test trees hold text files with library names).
    NotElf,
    /// An ELF file cut short: a header or segment ends past the end of the file.
    Truncated {
        /// What ends past the end (`program headers`, `section headers`, `PT_LOAD segment 2`).
        part: String,
        /// Where it ends.
        end: u64,
    },
    /// A whole ELF shared object.
    Elf {
        /// `DT_SONAME`.
        soname: Option<String>,
        /// `DT_NEEDED` entries, in order.
        needed: Vec<String>,
        /// It defines symbol versions (`DT_VERDEF`, the `.gnu.version_d` section).
        symbol_versions: bool,
    },
    /// The file could not be read.
    Unreadable {
        /// Why.
        reason: String,
    },
}

impl LibFile {
    /// Is this the CUDA toolkit's link stub of a driver library: a whole ELF object that needs no library at
    /// all (the driver's libcuda and NVML need libc) and defines no symbol versions?
    pub fn is_link_stub(&self) -> bool {
        matches!(&self.shape, LibShape::Elf { needed, symbol_versions, .. } if needed.is_empty() && !symbol_versions)
    }

    /// Why the file cannot be what the driver installed: empty, or cut short. `None` when whole (or not ELF).
    pub fn damage(&self) -> Option<String> {
        match &self.shape {
            LibShape::Empty => Some("is empty (0 bytes)".into()),
            LibShape::Truncated { part, end } => Some(format!(
                "is cut short: its {part} end at byte {end}, past the end of the {}-byte file",
                self.size
            )),
            _ => None,
        }
    }

    /// One line for a finding's evidence: size and what the dynamic section says.
    pub fn describe(&self) -> String {
        match &self.shape {
            LibShape::Elf {
                soname,
                needed,
                symbol_versions,
            } => format!(
                "{}: {} bytes, SONAME {}, {}, {}",
                self.path,
                self.size,
                soname.as_deref().unwrap_or("(none)"),
                if needed.is_empty() {
                    "no DT_NEEDED entry".to_string()
                } else {
                    format!("needs {}", needed.join(", "))
                },
                if *symbol_versions {
                    "defines symbol versions"
                } else {
                    "no symbol versions (no DT_VERDEF)"
                }
            ),
            _ => match self.damage() {
                Some(d) => format!("{} {d}", self.path),
                None => format!("{}: {} bytes", self.path, self.size),
            },
        }
    }
}

/// The JIT cache as the diagnosed program would see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JitCacheFacts {
    /// The cache directory (machine path).
    pub path: String,
    /// Where the path came from: `CUDA_CACHE_PATH`, or `HOME` (the default `$HOME/.nv/ComputeCache`).
    pub from: String,
    /// `CUDA_CACHE_DISABLE` is set to a value other than `0`: nothing is read from or written to the cache.
    pub disabled: bool,
    /// `CUDA_CACHE_MAXSIZE`, when set and a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<u64>,
    /// What the directory holds.
    pub dir: CacheDir,
}

/// What the cache directory holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum CacheDir {
    /// No such directory: no earlier run cached anything there.
    Missing,
    /// The directory exists and is empty.
    Empty,
    /// The directory has entries (counted up to a bound).
    Holds {
        /// How many entries its top level lists.
        entries: usize,
    },
    /// The directory could not be listed.
    Unreadable {
        /// Why.
        reason: String,
    },
}

impl JitCacheFacts {
    /// May an earlier run's compile be loaded from this cache: caching on, and a directory with entries?
    pub fn may_hold_compiles(&self) -> bool {
        !self.disabled && matches!(self.dir, CacheDir::Holds { .. })
    }

    /// One line for a finding's evidence.
    pub fn describe(&self) -> String {
        let state = match &self.dir {
            CacheDir::Missing => "does not exist".to_string(),
            CacheDir::Empty => "is empty".to_string(),
            CacheDir::Holds { entries } => format!("holds {entries} entries"),
            CacheDir::Unreadable { reason } => format!("cannot be listed ({reason})"),
        };
        let mut s = format!("JIT cache {} (from {}) {state}", self.path, self.from);
        if self.disabled {
            s.push_str("; CUDA_CACHE_DISABLE turns it off");
        }
        if let Some(m) = self.max_size {
            s.push_str(&format!("; CUDA_CACHE_MAXSIZE={m}"));
        }
        s
    }
}

/// One CDI spec file that mentions NVIDIA.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CdiSpec {
    /// Its machine path.
    pub path: String,
    /// The driver versions in the file names of the libraries it mounts (`libcuda.so.550.90.07` → `550.90.07`),
    /// each once, in file order.
    pub driver_versions: Vec<String>,
    /// The versioned driver libraries it mounts (host paths), at most a few, for evidence.
    pub libraries: Vec<String>,
    /// Why it could not be read, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}
