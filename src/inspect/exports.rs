//! What an ELF object exports, asked by name and version: the definitions ld.so's `check_match`
//! (`elf/dl-lookup.c`) accepts for a versioned reference.
//!
//! [`Exports`] is built once per object from the map the loader already holds, keeps only where the tables
//! lie, and answers from any thread: the loader checks thousands of versioned imports of a large tree against
//! a few dozen providers this way without parsing a provider twice.

use super::elfparse;
use super::source::Source;
use std::collections::HashSet;
use std::sync::Arc;

/// An object's dynamic symbol table, hash table and version definitions, located in its bytes.
#[derive(Debug)]
pub struct Exports {
    data: Arc<Source>,
    is_64: bool,
    /// `.dynsym`: offset and entry count (checked to fit).
    syms: (usize, usize),
    /// `.gnu.version`: offset (its `count` entries checked to fit), if any.
    versym: Option<usize>,
    /// `.dynstr`: offset and size (checked to fit).
    strtab: (usize, usize),
    /// `DT_GNU_HASH` (little-endian files only).
    gnu_hash: Option<usize>,
    /// Version names by `.gnu.version` index (`DT_VERDEF`).
    versions: Vec<Option<String>>,
    /// Without a GNU hash table (old or unusual files): every defined `(name, version)`, collected once.
    linear: Option<HashSet<(String, String)>>,
}

/// Where `part` lies in `whole` (`part` is a subslice of it).
fn offset_in(whole: &[u8], part: &[u8]) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize)
}

impl Exports {
    /// Locates the tables of the ELF file `data`; `None` when it cannot be read as ELF.
    pub fn of(data: Arc<Source>) -> Option<Exports> {
        Exports::build(data, true)
    }

    /// [`Exports::of`]; with `hash` false, the GNU hash table is ignored as if the file had none.
    fn build(data: Arc<Source>, hash: bool) -> Option<Exports> {
        let bytes: &[u8] = &data;
        let (elf, _) = data.parse_elf().ok()?;
        let mut versions: Vec<Option<String>> = Vec::new();
        for (ndx, name) in elfparse::verdef_names(&elf) {
            let ndx = usize::from(ndx & 0x7fff);
            if versions.len() <= ndx {
                versions.resize(ndx + 1, None);
            }
            versions[ndx] = Some(name.to_string());
        }
        let raw = elfparse::RawDynsyms::new(&elf, bytes);
        let count = raw.len();
        let syms = (
            if count == 0 {
                0
            } else {
                offset_in(bytes, raw.table())
            },
            count,
        );
        let versym = (!raw.versions().is_empty()).then(|| offset_in(bytes, raw.versions()));
        let strtab = elf
            .dynamic
            .as_ref()
            .map(|d| (d.info.strtab, d.info.strsz))
            .filter(|&(off, size)| off.checked_add(size).is_some_and(|end| end <= bytes.len()))
            .unwrap_or((0, 0));
        let gnu_hash = elf
            .dynamic
            .as_ref()
            .and_then(|d| d.info.gnu_hash)
            .filter(|_| elf.little_endian && hash)
            .map(|o| o as usize);
        let mut e = Exports {
            is_64: elf.is_64,
            syms,
            versym,
            strtab,
            gnu_hash,
            versions,
            linear: None,
            data: data.clone(),
        };
        if !elf.little_endian {
            // The raw reads below are little-endian; a big-endian object is read through goblin.
            let set = elf
                .dynsyms
                .iter()
                .enumerate()
                .filter(|(_, s)| s.st_shndx != 0)
                .filter_map(|(i, s)| {
                    let v = e.version_name(raw.version(i)?)?.to_string();
                    Some((elfparse::dynstr(&elf, s.st_name)?.to_string(), v))
                })
                .collect();
            e.linear = Some(set);
        } else if gnu_hash.is_none() {
            let set = (0..count)
                .filter(|&i| e.defined(i))
                .filter_map(|i| {
                    let v = e.version_name(e.version(i)?)?.to_string();
                    let name = std::str::from_utf8(e.name(i)?).ok()?.to_string();
                    Some((name, v))
                })
                .collect();
            e.linear = Some(set);
        }
        Some(e)
    }

    fn entry(&self, i: usize) -> Option<&[u8]> {
        if i >= self.syms.1 {
            return None;
        }
        let size = if self.is_64 { 24 } else { 16 };
        let at = self.syms.0 + i * size;
        self.data.get(at..at + size)
    }

    /// Entry `i` is defined in this object (`st_shndx` is not `SHN_UNDEF`).
    fn defined(&self, i: usize) -> bool {
        let shndx_at = if self.is_64 { 6 } else { 14 };
        self.entry(i)
            .is_some_and(|e| u16::from_le_bytes([e[shndx_at], e[shndx_at + 1]]) != 0)
    }

    /// Entry `i`'s name, as bytes up to its NUL.
    fn name(&self, i: usize) -> Option<&[u8]> {
        let e = self.entry(i)?;
        let off = u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize;
        let table = self.data.get(self.strtab.0..self.strtab.0 + self.strtab.1)?;
        let s = table.get(off..)?;
        Some(&s[..memchr::memchr(0, s)?])
    }

    /// Entry `i`'s `.gnu.version` value.
    fn version(&self, i: usize) -> Option<u16> {
        let at = self.versym?.checked_add(i.checked_mul(2)?)?;
        let b = self.data.get(at..at + 2)?;
        Some(u16::from_le_bytes([b[0], b[1]]))
    }

    fn version_name(&self, v: u16) -> Option<&str> {
        self.versions.get(usize::from(v & 0x7fff))?.as_deref()
    }

    /// Does the object define `name` in `version` (hidden or default)?
    pub fn defines(&self, name: &str, version: &str) -> bool {
        if let Some(set) = &self.linear {
            return set.contains(&(name.to_string(), version.to_string()));
        }
        let Some(off) = self.gnu_hash else {
            return false;
        };
        let mut found = false;
        elfparse::gnu_hash_chain(&self.data, off, self.is_64, self.syms.1, name, |at| {
            found = self.name(at) == Some(name.as_bytes())
                && self.defined(at)
                && self.version(at).and_then(|v| self.version_name(v)) == Some(version);
            found
        });
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every versioned definition goblin's own full parse reads in the machine's shared libraries (x86-64 CI:
    /// libc, libstdc++, libm, …) is found, through the GNU hash table and through the walk used without one;
    /// the same name in a version the library does not define, or a name it does not define, is not.
    #[test]
    fn exports_agree_with_goblin() {
        let mut checked = 0;
        for path in &crate::inspect::sample_libraries(20) {
            let Ok(bytes) = std::fs::read(path) else { continue };
            let Ok(elf) = goblin::elf::Elf::parse(&bytes) else {
                continue;
            };
            let (Some(versym), Some(verdef)) = (&elf.versym, &elf.verdef) else {
                continue;
            };
            let mut version_names = std::collections::HashMap::new();
            for d in verdef.iter() {
                if let Some(aux) = d.iter().next()
                    && let Some(name) = elf.dynstrtab.get_at(aux.vda_name)
                {
                    version_names.insert(d.vd_ndx, name.to_string());
                }
            }
            let defined: HashSet<(String, String)> = elf
                .dynsyms
                .iter()
                .enumerate()
                .filter(|(_, s)| s.st_shndx != 0)
                .filter_map(|(i, s)| {
                    let v = version_names.get(&(versym.get_at(i)?.vs_val & 0x7fff))?;
                    Some((elf.dynstrtab.get_at(s.st_name)?.to_string(), v.clone()))
                })
                .collect();
            let data = Arc::new(Source::Owned(bytes.clone()));
            let hashed = Exports::of(data.clone()).unwrap();
            let walked = Exports::build(data, false).unwrap();
            for (name, version) in &defined {
                for e in [&hashed, &walked] {
                    assert!(e.defines(name, version), "{}: {name}@{version}", path.display());
                    assert!(!e.defines(name, "CUDADIAG_NONE"), "{}: {name}", path.display());
                    let other = format!("{name}_cudadiag");
                    assert_eq!(
                        e.defines(&other, version),
                        defined.contains(&(other.clone(), version.clone())),
                        "{}: {other}@{version}",
                        path.display()
                    );
                }
                checked += 1;
            }
        }
        if std::path::Path::new("/lib/x86_64-linux-gnu/libc.so.6").exists() {
            assert!(checked > 1000, "only {checked} definitions checked");
        }
    }
}
