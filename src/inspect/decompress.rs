//! Bounded decompression of fatbin payloads.
//!
//! Fatbin entries are stored raw, as LZ4 blocks (flag `0x2000`) or as zstd frames (flag `0x8000`). The header
//! declares the exact uncompressed size; we trust it only up to a hard limit, decode into exactly that much, and
//! refuse any stream that would produce a different amount. A hostile file therefore costs at most `limit`
//! bytes of memory per thread reading entries; a buffer over [`KEEP`] is freed once its entry is read.

use crate::facts::Compression;

/// Why a payload could not be decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecompressError(pub String);

/// Decompresses `input` into exactly `declared` bytes, never holding more than `limit`, and hands them to `read`.
///
/// The bytes live in a buffer of the calling thread's, reused from one entry to the next: a fresh allocation per
/// entry cost the kernel a page fault and a zeroed page for every 4 KiB decoded (PyTorch's cubins inflate to
/// 5.4 GB), where the reused buffer is faulted in once, at the size of the thread's largest entry. So a thread
/// holds at most its largest entry, as it did when each entry was freed after its parse.
pub fn decompress_with<R>(
    compression: Compression,
    input: &[u8],
    declared: u64,
    limit: u64,
    read: impl FnOnce(&[u8]) -> R,
) -> Result<R, DecompressError> {
    if compression == Compression::None {
        return Ok(read(input));
    }
    if declared == 0 {
        return Err(DecompressError(
            "compressed entry declares an uncompressed size of 0".into(),
        ));
    }
    if declared > limit {
        return Err(DecompressError(format!(
            "entry declares {declared} bytes uncompressed, over the limit of {limit} bytes"
        )));
    }
    let declared = declared as usize;
    OUT.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        if buffer.len() < declared {
            // Exactly: a doubling growth would hold twice the largest entry.
            let held = buffer.len();
            buffer.reserve_exact(declared - held);
            buffer.resize(declared, 0);
        }
        // Exactly the declared size: a stream that holds more stops at its end, whatever the buffer's length.
        let out = &mut buffer[..declared];
        let decoded = match compression {
            Compression::None => unreachable!("handled above"),
            Compression::Lz4 => lz4(input, out),
            Compression::Zstd => zstd(input, out),
        };
        let result = decoded.map(|()| read(out));
        if buffer.len() > KEEP {
            *buffer = Vec::new();
        }
        result
    })
}

/// Frees the calling thread's buffer and decoder: a thread that has read its last entry calls it (through a
/// [`Release`] it holds) while the others still read theirs. Left to the thread's exit, the frees of sixteen
/// buffers of up to 15 MB each came after the last entry was read, where they held back the thread that goes
/// on with the report (4-20 ms of `--deep`, measured on 2 cores and on the GPU machine).
pub fn release() {
    OUT.with(|buffer| *buffer.borrow_mut() = Vec::new());
    DCTX.with(|slot| *slot.borrow_mut() = None);
}

/// Calls [`release`] when dropped: the per-thread state of a pool of threads that read entries.
pub struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        release();
    }
}

/// The largest buffer a thread keeps for its next entry (PyTorch's largest cubin is 15 MB): a larger one, for a
/// rare or hostile entry, is freed as soon as it has been read.
pub const KEEP: usize = 64 << 20;

thread_local! {
    /// The buffer each thread inflates entries into.
    static OUT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// One decompression context per thread, reused for every entry the thread reads (creating one allocates
    /// its tables).
    static DCTX: std::cell::RefCell<Option<zstd_safe::DCtx<'static>>> = const { std::cell::RefCell::new(None) };
}

/// Decompresses one LZ4 block into all of `out`.
fn lz4(input: &[u8], out: &mut [u8]) -> Result<(), DecompressError> {
    let declared = out.len();
    match lz4_flex::block::decompress_into(input, out) {
        Ok(n) if n == declared => Ok(()),
        Ok(n) => Err(DecompressError(format!(
            "LZ4 payload decodes to {n} bytes, header declares {declared}"
        ))),
        Err(e) => Err(DecompressError(format!("LZ4 payload is corrupt: {e}"))),
    }
}

/// Decompresses the zstd frames of `input` into all of `out`, with the C library (about three times as fast as
/// the pure-Rust decoder on cubins, which is most of `--deep`). The decoder writes into `out` and nowhere else:
/// a frame that holds more is refused when it reaches the end of `out`, so a frame cannot make the decoder
/// allocate beyond the declared size (its window is the output buffer itself). The frames' content checksums
/// are not verified: the sizes are, and a damaged payload that still decodes gives a cubin the parser then
/// checks.
fn zstd(input: &[u8], out: &mut [u8]) -> Result<(), DecompressError> {
    let declared = out.len();
    let decoded = DCTX.with(|slot| {
        let mut slot = slot.borrow_mut();
        let dctx = match &mut *slot {
            Some(dctx) => dctx,
            None => {
                let mut dctx = zstd_safe::DCtx::try_create().ok_or_else(|| {
                    DecompressError("the zstd decoder could not be created (out of memory)".into())
                })?;
                dctx.set_parameter(zstd_safe::DParameter::ForceIgnoreChecksum(true))
                    .map_err(|code| DecompressError(format!("zstd: {}", zstd_safe::get_error_name(code))))?;
                slot.insert(dctx)
            }
        };
        Ok(dctx.decompress(out, input))
    })?;
    match decoded {
        Ok(n) if n == declared => Ok(()),
        Ok(n) => Err(DecompressError(format!(
            "zstd payload decodes to {n} bytes, header declares {declared}"
        ))),
        // The frames hold more than the header declares: the decoder stopped at the end of the buffer.
        Err(code) if code == DST_TOO_SMALL => Err(DecompressError(format!(
            "zstd payload decodes to more than {declared} bytes, header declares {declared}"
        ))),
        Err(code) => Err(DecompressError(format!(
            "zstd payload is corrupt: {}",
            zstd_safe::get_error_name(code)
        ))),
    }
}

/// The result `ZSTD_decompressDCtx` gives for `ZSTD_error_dstSize_tooSmall`: zstd returns an error as the
/// negated error code (`zstd_errors.h`; `ERROR(name)` in its `error_private.h`).
const DST_TOO_SMALL: zstd_safe::ErrorCode =
    0usize.wrapping_sub(zstd_safe::zstd_sys::ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall as usize);

#[cfg(test)]
mod tests {
    use super::*;

    fn decompress(
        compression: Compression,
        input: &[u8],
        declared: u64,
        limit: u64,
    ) -> Result<Vec<u8>, DecompressError> {
        decompress_with(compression, input, declared, limit, <[u8]>::to_vec)
    }

    #[test]
    fn lz4_round_trip_and_size_mismatch() {
        let text = b"hello hello hello hello hello hello".repeat(20);
        let packed = lz4_flex::block::compress(&text);
        let out = decompress(Compression::Lz4, &packed, text.len() as u64, 1 << 20).unwrap();
        assert_eq!(out, text);
        assert!(decompress(Compression::Lz4, &packed, text.len() as u64 - 1, 1 << 20).is_err());
        assert!(decompress(Compression::Lz4, &packed, text.len() as u64 + 1, 1 << 20).is_err());
    }

    #[test]
    fn a_smaller_entry_after_a_larger_one_is_measured_by_its_own_size() {
        let pack = |text: &[u8]| {
            ruzstd::encoding::compress_to_vec(text, ruzstd::encoding::CompressionLevel::Fastest)
        };
        let large: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let small = b"small entry, small entry".repeat(10);
        assert_eq!(
            decompress(Compression::Zstd, &pack(&large), large.len() as u64, 1 << 20).unwrap(),
            large
        );
        // The thread's buffer now holds 200,000 bytes: the next entry still gets exactly its own, and one that
        // decodes to more than it declares is still refused at its declared size, not at the buffer's.
        let packed = pack(&small);
        assert_eq!(
            decompress(Compression::Zstd, &packed, small.len() as u64, 1 << 20).unwrap(),
            small
        );
        let over = decompress(Compression::Zstd, &packed, small.len() as u64 - 1, 1 << 20).unwrap_err();
        assert!(over.0.contains("decodes to more than"), "{over:?}");
        let lz4 = lz4_flex::block::compress(&small);
        assert_eq!(
            decompress(Compression::Lz4, &lz4, small.len() as u64, 1 << 20).unwrap(),
            small
        );
    }

    #[test]
    fn a_buffer_over_the_kept_size_is_freed_after_its_entry() {
        let text = vec![3u8; KEEP + 1];
        let packed =
            ruzstd::encoding::compress_to_vec(&text[..], ruzstd::encoding::CompressionLevel::Fastest);
        let n = decompress_with(
            Compression::Zstd,
            &packed,
            text.len() as u64,
            1 << 30,
            <[u8]>::len,
        );
        assert_eq!(n, Ok(KEEP + 1));
        assert_eq!(OUT.with(|out| out.borrow().capacity()), 0);
    }

    /// A thread's buffer and decoder stay for its next entry until its [`Release`] is dropped.
    #[test]
    fn a_release_frees_the_threads_buffer_and_decoder() {
        let text = vec![5u8; 50_000];
        let packed =
            ruzstd::encoding::compress_to_vec(&text[..], ruzstd::encoding::CompressionLevel::Fastest);
        let held = || {
            (
                OUT.with(|out| out.borrow().capacity()),
                DCTX.with(|d| d.borrow().is_some()),
            )
        };
        {
            let _release = Release;
            assert_eq!(
                decompress(Compression::Zstd, &packed, 50_000, 1 << 20).unwrap(),
                text
            );
            assert_eq!(held(), (50_000, true));
        }
        assert_eq!(held(), (0, false));
    }

    #[test]
    fn zstd_round_trip_bomb_and_garbage() {
        let text = vec![7u8; 100_000];
        let packed =
            ruzstd::encoding::compress_to_vec(&text[..], ruzstd::encoding::CompressionLevel::Fastest);
        let out = decompress(Compression::Zstd, &packed, text.len() as u64, 1 << 20).unwrap();
        assert_eq!(out, text);
        // Declared smaller than the real content: refused, and never more than declared+1 bytes decoded.
        assert!(decompress(Compression::Zstd, &packed, 10, 1 << 20).is_err());
        // A bomb: declared size over the limit is refused before any allocation.
        let err = decompress(Compression::Zstd, &packed, 1 << 40, 1 << 20).unwrap_err();
        assert!(err.0.contains("over the limit"), "{err:?}");
        assert!(decompress(Compression::Zstd, b"not zstd at all", 10, 1 << 20).is_err());
        // The sizes, both ways, said as such.
        let short = decompress(Compression::Zstd, &packed, 99_999, 1 << 20).unwrap_err();
        assert_eq!(
            short.0,
            "zstd payload decodes to more than 99999 bytes, header declares 99999"
        );
        let long = decompress(Compression::Zstd, &packed, 100_001, 1 << 20).unwrap_err();
        assert_eq!(
            long.0,
            "zstd payload decodes to 100000 bytes, header declares 100001"
        );
        assert!(decompress(Compression::Zstd, &packed[..packed.len() / 2], 100_000, 1 << 20).is_err());
    }
}
