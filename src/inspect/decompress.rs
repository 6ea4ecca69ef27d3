//! Bounded decompression of fatbin payloads.
//!
//! Fatbin entries are stored raw, as LZ4 blocks (flag `0x2000`) or as zstd frames (flag `0x8000`). The header
//! declares the exact uncompressed size; we trust it only up to a hard limit, allocate exactly that much, and
//! refuse any stream that would produce a different amount. A hostile file therefore costs at most `limit`
//! bytes of memory per entry, and only while that entry is being read.

use crate::facts::Compression;
use std::io::Read;

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
        Compression::Zstd => {
            // The window is bounded too: a frame may ask for a window far larger than its content.
            let decoder =
                ruzstd::decoding::StreamingDecoder::new_with_max_window_size(input, limit.max(1 << 20))
                    .map_err(|e| DecompressError(format!("zstd frame header is corrupt: {e}")))?;
            let mut out = Vec::with_capacity(declared);
            decoder
                .take(declared as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| DecompressError(format!("zstd payload is corrupt: {e}")))?;
            if out.len() != declared {
                return Err(DecompressError(format!(
                    "zstd payload decodes to {}{} bytes, header declares {declared}",
                    if out.len() > declared { "more than " } else { "" },
                    out.len().min(declared)
                )));
            }
            Ok(out)
        }
    }
}

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
        assert!(decompress(Compression::Zstd, &packed[..packed.len() / 2], 100_000, 1 << 20).is_err());
    }
}
