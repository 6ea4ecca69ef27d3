//! The `dlopen` names in the `.rodata` of NVIDIA's and PyTorch's libraries, known in advance: a bundled table
//! (`data/dlopen_names.jsonl`, written by `scripts/gen-dlopen-table` from the libraries of NVIDIA's wheels and
//! of PyTorch's `torch/lib`), so that the loader does not search hundreds of megabytes of read-only data
//! (cuBLASLt alone holds 49 MB of it; PyTorch's `libtorch_cpu.so` and `libtorch_cuda.so` 28 MB, searched at
//! every `inspect`, `import torch` and `doctor` of a PyTorch environment) for the few strings the search would
//! find.
//!
//! An entry is keyed by the GNU build ID of the file (`NT_GNU_BUILD_ID`, the hash the linker computes over
//! the linked output: a different build has a different ID), and holds its SONAME and `.rodata` ranges, which
//! must match too, and what [`crate::inspect::rodata_strings`] finds there, with the offsets. A library with no
//! build ID, or one not in the table (another release, a rebuild, a PyTorch built elsewhere than PyPI, any
//! other library), is searched as before; so is every library when the table was written for other needles
//! than [`DLOPEN_NEEDLES`]. The answer is therefore the search's own, byte for byte: a test compares the table
//! with the search on every listed library found on the machine.
//!
//! PyTorch's libraries are the same in the wheels of every Python version of a release (`libtorch_cpu.so` of
//! `torch-2.15.0-cp311` and `-cp312` have one build ID); `libtorch_python.so` is not, and is listed for the
//! wheels the table was made from.

use crate::inspect::LoaderView;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Strings searched in `.rodata` for `dlopen` names (see [`super::dlopen`]); the table says which it was made with.
pub const DLOPEN_NEEDLES: &[&[u8]] = &[
    b"libcuda.so",
    b"libnvidia-ml.so",
    b"libnvrtc-builtins",
    b"libnvJitLink.so",
    b"libcudnn",
    b"libnvrtc.so",
    b"libcupti.so",
];

/// The bundled table: a header (`# needles: …`) and one JSON object per library.
const TABLE: &str = include_str!("../../data/dlopen_names.jsonl");

/// One library of the table.
#[derive(Debug, serde::Deserialize, serde::Serialize)]
pub(super) struct Entry {
    /// The GNU build ID, lowercase hex.
    pub build_id: String,
    pub soname: String,
    /// Where it was taken from: the wheel (`nvidia-cublas 13.1.0.3`) and the path inside it.
    pub from: String,
    /// The `.rodata` ranges (file offset, size) searched.
    pub rodata: Vec<(u64, u64)>,
    /// The strings found, each once at its first offset, in file order.
    pub strings: Vec<(String, u64)>,
}

/// The header line that says which needles the table was searched with.
pub(super) fn needles_line() -> String {
    let names: Vec<String> = DLOPEN_NEEDLES
        .iter()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    format!("# needles: {}", names.join(" "))
}

/// The strings [`crate::inspect::rodata_strings`] would find in `view`'s `.rodata`, when the table knows the
/// file (its build ID, SONAME and `.rodata` ranges all match an entry).
pub fn known(view: &LoaderView) -> Option<Vec<(String, u64)>> {
    let soname = view.elf.as_ref()?.soname.as_deref()?;
    let id = build_id_in(&view.data, view.data.elf_pieces())?;
    let line = index()?.get(id.as_str())?;
    let entry: Entry = serde_json::from_str(line).ok()?;
    (entry.soname == soname && entry.rodata == view.rodata).then_some(entry.strings)
}

/// The bundled table's lines by build ID, made at the first question (`None`: the table is for other
/// needles). A run asks for every object it searches, a few hundred in a PyTorch tree: one pass over the table
/// instead of one search of it per question.
fn index() -> Option<&'static HashMap<&'static str, &'static str>> {
    static INDEX: OnceLock<Option<HashMap<&'static str, &'static str>>> = OnceLock::new();
    INDEX
        .get_or_init(|| {
            let needles = needles_line();
            if !TABLE.lines().any(|l| l == needles) {
                return None;
            }
            let mut index = HashMap::new();
            for line in TABLE.lines() {
                if let Some(id) = line
                    .strip_prefix("{\"build_id\":\"")
                    .and_then(|rest| rest.split('"').next())
                {
                    // The first line of an ID, as a search of the text finds it (`lookup`, in the tests).
                    index.entry(id).or_insert(line);
                }
            }
            Some(index)
        })
        .as_ref()
}

/// The entry of `table` for the build ID `id` (lowercase hex), if the table was made for today's needles: the
/// plain search [`index`] answers as.
#[cfg(test)]
pub(super) fn lookup(table: &str, id: &str) -> Option<Entry> {
    let needles = needles_line();
    if !table.lines().any(|l| l == needles) {
        return None;
    }
    let key = format!("{{\"build_id\":\"{id}\",");
    let at = memchr::memmem::find(table.as_bytes(), key.as_bytes())?;
    let line = table[at..].lines().next()?;
    serde_json::from_str(line).ok()
}

/// The GNU build ID of the ELF file `data` (lowercase hex), from its `PT_NOTE` segments; `None` when it has
/// none or the headers do not hold together.
pub fn build_id(data: &[u8]) -> Option<String> {
    build_id_in(data, &[])
}

/// [`build_id`], the header, program headers and notes read from `pieces` where they hold them
/// ([`crate::inspect::elfparse::read_pieces`]).
pub fn build_id_in(whole: &[u8], pieces: &[crate::inspect::pieces::Piece]) -> Option<String> {
    let data = crate::inspect::pieces::prefix(whole, pieces, 64);
    let is_64 = match data.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    if data.get(..4)? != b"\x7fELF" || *data.get(5)? != 1 {
        return None;
    }
    let phoff = usize::try_from(word(data, is_64, if is_64 { 0x20 } else { 0x1c })?).ok()?;
    let phentsize = usize::from(u16_at(data, if is_64 { 0x36 } else { 0x2a })?);
    let phnum = usize::from(u16_at(data, if is_64 { 0x38 } else { 0x2c })?);
    if phentsize < if is_64 { 56 } else { 32 } {
        return None;
    }
    for i in 0..phnum {
        let at = phoff.checked_add(i.checked_mul(phentsize)?)?;
        let ph = crate::inspect::pieces::bytes_at(whole, pieces, at, phentsize)?;
        // PT_NOTE.
        if u32_at(ph, 0)? != 4 {
            continue;
        }
        let (off, size) = if is_64 {
            (u64_at(ph, 8)?, u64_at(ph, 32)?)
        } else {
            (u64::from(u32_at(ph, 4)?), u64::from(u32_at(ph, 16)?))
        };
        let start = usize::try_from(off).ok()?;
        let notes = crate::inspect::pieces::bytes_at(whole, pieces, start, usize::try_from(size).ok()?)?;
        if let Some(id) = gnu_build_id(notes) {
            return Some(id);
        }
    }
    None
}

fn u16_at(d: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(d.get(o..o.checked_add(2)?)?.try_into().ok()?))
}

fn u32_at(d: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(o..o.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(d: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(d.get(o..o.checked_add(8)?)?.try_into().ok()?))
}

/// An address-sized field (`e_phoff`) of the header.
fn word(d: &[u8], is_64: bool, o: usize) -> Option<u64> {
    if is_64 {
        u64_at(d, o)
    } else {
        u32_at(d, o).map(u64::from)
    }
}

/// The `NT_GNU_BUILD_ID` note among `notes` (4-byte aligned name and descriptor, as in every ELF class on
/// Linux), in lowercase hex.
fn gnu_build_id(mut notes: &[u8]) -> Option<String> {
    let align = |n: usize| n.checked_add(3).map(|n| n & !3);
    while notes.len() >= 12 {
        let namesz = u32::from_le_bytes(notes[0..4].try_into().ok()?) as usize;
        let descsz = u32::from_le_bytes(notes[4..8].try_into().ok()?) as usize;
        let kind = u32::from_le_bytes(notes[8..12].try_into().ok()?);
        let name_end = 12usize.checked_add(align(namesz)?)?;
        let desc_end = name_end.checked_add(align(descsz)?)?;
        let name = notes.get(12..12usize.checked_add(namesz)?)?;
        let desc = notes.get(name_end..name_end.checked_add(descsz)?)?;
        if kind == 3 && name == b"GNU\0" && !desc.is_empty() {
            return Some(desc.iter().map(|b| format!("{b:02x}")).collect());
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

/// The strings the parts of a `.rodata` search found, each once (at its first offset in the file, whichever
/// part saw it), in file order.
pub fn first_occurrences(found: impl IntoIterator<Item = (String, u64)>) -> Vec<(String, u64)> {
    let mut list: Vec<(String, u64)> = Vec::new();
    for (s, off) in found {
        match list.iter_mut().find(|(x, _)| *x == s) {
            Some(e) => e.1 = e.1.min(off),
            None => list.push((s, off)),
        }
    }
    list.sort_by_key(|&(_, off)| off);
    list
}

/// Parts of a megabyte: one object's search spreads over the cores.
pub(super) const PIECE: u64 = 1 << 20;

/// The loader's search (`object::search_rodata`) on this thread, without the table: what it finds in
/// `view`'s `.rodata` (of the file at `host`). For the table's generator and its test.
#[cfg(test)]
pub(super) fn search_now(view: &LoaderView, host: &std::path::Path) -> Vec<(String, u64)> {
    let Ok((file, _)) = crate::system::read::open_regular(host) else {
        return Vec::new();
    };
    first_occurrences(
        view.rodata
            .iter()
            .flat_map(|&(start, size)| crate::inspect::rodata_parts(start, size, PIECE))
            .flat_map(|part| crate::inspect::rodata_strings(&file, part, DLOPEN_NEEDLES)),
    )
}

#[cfg(test)]
#[path = "dlopen_table_tests.rs"]
mod tests;
