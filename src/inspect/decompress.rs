//! Bounded decompression of fatbin payloads.
//!
//! Fatbin entries are stored raw, as LZ4 blocks (flag `0x2000`) or as zstd frames (flag `0x8000`). The header
//! declares the exact uncompressed size; we trust it only up to a hard limit, allocate exactly that much, and
//! refuse any stream that would produce a different amount. A hostile file therefore costs at most `limit`
//! bytes of memory per entry, and only while that entry is being read.

use crate::facts::Compression;

/// Why a payload could not be decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecompressError(pub String);

/// Decompresses `input` into exactly `declared` bytes, never allocating more than `limit`.
pub fn decompress(
    compression: Compression,
    input: &[u8],
    declared: u64,
    limit: u64,
) -> Result<Vec<u8>, DecompressError> {
    if compression == Compression::None {
        return Ok(input.to_vec());
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
    match compression {
        Compression::None => unreachable!("handled above"),
        Compression::Lz4 => {
            let mut out = vec![0u8; declared];
            match lz4_flex::block::decompress_into(input, &mut out) {
                Ok(n) if n == declared => Ok(out),
                Ok(n) => Err(DecompressError(format!(
                    "LZ4 payload decodes to {n} bytes, header declares {declared}"
                ))),
                Err(e) => Err(DecompressError(format!("LZ4 payload is corrupt: {e}"))),
            }
        }
        Compression::Zstd => zstd(input, declared),
    }
}

thread_local! {
    /// One decompression context per thread, reused for every entry the thread reads (creating one allocates
    /// its tables).
    static DCTX: std::cell::RefCell<Option<zstd_safe::DCtx<'static>>> = const { std::cell::RefCell::new(None) };
}

/// Decompresses the zstd frames of `input` into exactly `declared` bytes, with the C library (about three times
/// as fast as the pure-Rust decoder on cubins, which is most of `--deep`). The output is allocated once at the
/// declared size, not zeroed (the decoder writes it), and never grows: a frame that holds more is refused when
/// it reaches the end of the buffer, so a frame cannot make the decoder allocate beyond `declared` (its window is
/// the output buffer itself). The frames' content checksums are not verified: the sizes are, and a damaged
/// payload that still decodes gives a cubin the parser then checks.
fn zstd(input: &[u8], declared: usize) -> Result<Vec<u8>, DecompressError> {
    let mut out = Vec::with_capacity(declared);
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
        Ok(dctx.decompress(&mut out, input))
    })?;
    match decoded {
        Ok(n) if n == declared => Ok(out),
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
