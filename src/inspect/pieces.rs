//! Bytes of a file copied out of it by positioned reads, and the reads of a file's offsets that look in them
//! first ([`super::elfparse::read_pieces`] reads them; [`super::source::Source::elf_pieces`] keeps them).

/// Bytes of a file copied out of it by a positioned read: `bytes` lie at file offset `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub(super) at: usize,
    pub(super) bytes: Vec<u8>,
}

/// The slice that holds the `len` bytes at file offset `off`, and their offset in it: the first of `pieces`
/// that holds them all, else `bytes` (the whole file; whether they fit there is the parser's to check).
pub(super) fn locate<'a>(bytes: &'a [u8], pieces: &'a [Piece], off: usize, len: usize) -> (&'a [u8], usize) {
    pieces
        .iter()
        .find_map(|p| {
            let rel = off.checked_sub(p.at)?;
            (rel.checked_add(len)? <= p.bytes.len()).then_some((p.bytes.as_slice(), rel))
        })
        .unwrap_or((bytes, off))
}

/// The first `n` bytes of the file (all of a shorter one), from the pieces where they hold them: for the
/// checks of a file's magic and header, which would otherwise touch its first folio through the map.
pub fn prefix<'a>(bytes: &'a [u8], pieces: &'a [Piece], n: usize) -> &'a [u8] {
    bytes_at(&[], pieces, 0, n).unwrap_or(&bytes[..n.min(bytes.len())])
}

/// The `len` bytes at file offset `off`, from the pieces where one holds them, else from `bytes`; `None`
/// past the file's end.
pub fn bytes_at<'a>(bytes: &'a [u8], pieces: &'a [Piece], off: usize, len: usize) -> Option<&'a [u8]> {
    let (at, rel) = locate(bytes, pieces, off, len);
    at.get(rel..rel.checked_add(len)?)
}

/// Does one of `pieces` hold the `len` bytes at `off`?
pub(super) fn held(pieces: &[Piece], off: usize, len: usize) -> bool {
    !locate(&[], pieces, off, len).0.is_empty()
}
