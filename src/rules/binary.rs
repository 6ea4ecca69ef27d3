//! Findings about the inputs themselves: damaged device code or binaries, unknown files, no device code.

use crate::facts::{BinaryFacts, Format, ProblemKind};
use crate::findings::{Code, Finding};

fn location(offset: Option<u64>) -> String {
    offset
        .map(|o| format!(" (file offset 0x{o:x})"))
        .unwrap_or_default()
}

/// `malformed-device-code` and `malformed-binary`: one finding per problem met while reading.
pub fn malformed(b: &BinaryFacts) -> Vec<Finding> {
    b.problems
        .iter()
        .filter_map(|p| {
            let (code, help) = match p.kind {
                ProblemKind::DeviceCode => (
                    Code::MalformedDeviceCode,
                    "The driver rejects damaged device code with CUDA error 200 (invalid kernel image) or 209. \
                     Rebuild the binary; if it came from a download, check it against the published checksum.",
                ),
                ProblemKind::Binary => (
                    Code::MalformedBinary,
                    "The file is truncated or corrupt; the loader may refuse it. Re-copy or rebuild it.",
                ),
                ProblemKind::Unrecognized | ProblemKind::Unreadable => return None,
            };
            Some(
                Finding::new(code, format!("{}: {}", b.path, p.message), help)
                    .because(format!("read from {}{}", b.path, location(p.offset)))
                    .at(&b.path),
            )
        })
        .collect()
}

/// `unrecognized-input`: the file is not something cudadiag reads.
pub fn unrecognized(b: &BinaryFacts) -> Option<Finding> {
    let p = b.problems.iter().find(|p| p.kind == ProblemKind::Unrecognized)?;
    Some(
        Finding::new(
            Code::UnrecognizedInput,
            format!("{}: {}", b.path, p.message),
            "cudadiag reads ELF executables, shared libraries, objects, static archives, and raw .fatbin, .cubin \
             and .ptx files.",
        )
        .because(format!("{} starts with none of the known magic numbers", b.path))
        .at(&b.path),
    )
}

/// `input-unreadable`: an input `audit` or `inspect` met but could not read. A gate that passed over what it
/// could not check would pass a release it never looked at, so this is an error by default.
pub fn unreadable(b: &BinaryFacts) -> Option<Finding> {
    let p = b.problems.iter().find(|p| p.kind == ProblemKind::Unreadable)?;
    Some(
        Finding::new(
            Code::InputUnreadable,
            format!("{}: {}; nothing about it was checked", b.path, p.message),
            "Run cudadiag as a user that can read the file (check its mode and owner with `ls -l`), fix the \
             link or file type, or take the path out of the inputs (or waive `input-unreadable` for it in the \
             policy) if it is not part of the release.",
        )
        .because(format!(
            "{}, opened for reading as the user running cudadiag: {}",
            b.path,
            p.message.strip_prefix("cannot be read: ").unwrap_or(&p.message)
        ))
        .at(&b.path),
    )
}

/// `no-device-code`: an ELF file with no CUDA device code at all (a note: host-only code is normal), whose
/// process maps none either: a Python extension such as torch's `_C.so` has no kernel of its own, but the
/// `libtorch_cuda.so` it loads (one of `loaded`, the libraries its process maps whose device code was read)
/// does, and its verdict is judged on that code.
pub fn no_device_code(b: &BinaryFacts, loaded: &[&BinaryFacts]) -> Option<Finding> {
    if b.format != Some(Format::Elf)
        || b.device_code_skipped
        || !b.device_code.is_empty()
        || !b.fatbins.is_empty()
        || loaded
            .iter()
            .any(|l| !l.device_code.is_empty() || !l.fatbins.is_empty())
    {
        return None;
    }
    if b.problems
        .iter()
        .any(|p| matches!(p.kind, ProblemKind::Binary | ProblemKind::Unreadable))
    {
        return None;
    }
    Some(
        Finding::new(
            Code::NoDeviceCode,
            format!("{}: no CUDA device code (no fatbin in .nv_fatbin, __nv_relfatbin or .nvFatBinSegment)", b.path),
            "Nothing to run on a GPU here. If this binary should carry kernels, check that it was compiled with \
             nvcc (or clang -x cuda) and that the objects holding them were linked in.",
        )
        .because(format!("{} has no fatbin sections, no fatbin wrappers and no container magic", b.path))
        .at(&b.path),
    )
}
