//! Compression of an image file or of one layer, told by its first bytes (never by a name or a media type,
//! which an archive can get wrong), and a reader that holds a decompressed stream to the bounds.
//!
//! gzip (RFC 1952, magic `1f 8b`; several members in a row are read as one stream, as `gzip -d` does) through
//! flate2, zstd (RFC 8878, magic `28 b5 2f fd`; frames in a row, the same) through ruzstd, or none. bzip2 and
//! xz, which the OCI image spec does not allow for layers, are named in the error.

use super::{ImageError, Limits};
use std::io::{self, Read};

/// What the first bytes of a stream say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// gzip.
    Gzip,
    /// zstd.
    Zstd,
    /// Not compressed (a tar, a directory's file).
    None,
}

impl Compression {
    /// Tells the compression from the first bytes; bzip2 and xz are refused with their name.
    pub fn sniff(head: &[u8]) -> Result<Compression, &'static str> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Ok(Compression::Gzip)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Ok(Compression::Zstd)
        } else if head.starts_with(b"BZh") {
            Err("bzip2")
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Err("xz")
        } else {
            Ok(Compression::None)
        }
    }

    /// Its name in the report (`None` for an uncompressed stream).
    pub fn name(self) -> Option<&'static str> {
        match self {
            Compression::Gzip => Some("gzip"),
            Compression::Zstd => Some("zstd"),
            Compression::None => None,
        }
    }
}

/// Counts the bytes read from the compressed side.
pub struct Counted<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// zstd frames one after another, as `zstd -d` reads them (a layer written by a parallel compressor has many).
struct ZstdFrames<R: Read> {
    decoder: Option<ruzstd::decoding::StreamingDecoder<io::BufReader<R>, ruzstd::decoding::FrameDecoder>>,
}

impl<R: Read> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use io::BufRead;
        loop {
            let Some(d) = self.decoder.as_mut() else {
                return Ok(0);
            };
            let n = d.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // This frame is done: another may follow.
            let Some(d) = self.decoder.take() else {
                return Ok(0);
            };
            let mut source = d.into_inner();
            if source.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.decoder = Some(zstd_frame(source)?);
        }
    }
}

fn zstd_frame<R: Read>(
    source: io::BufReader<R>,
) -> io::Result<ruzstd::decoding::StreamingDecoder<io::BufReader<R>, ruzstd::decoding::FrameDecoder>> {
    // zstd's own decoder refuses windows over 128 MiB unless told (`--long=31`): the same here.
    ruzstd::decoding::StreamingDecoder::new_with_max_window_size(source, 128 << 20)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {e}")))
}

/// A decompressed stream held to [`Limits::max_unpacked`] bytes and, past [`Limits::ratio_floor`], to
/// [`Limits::max_ratio`] times the compressed bytes read: a compression bomb stops with an error naming the
/// bound, after a bounded amount of work.
pub struct Bounded<'a> {
    inner: Box<dyn Read + 'a>,
    compressed: Option<std::rc::Rc<std::cell::Cell<u64>>>,
    out: u64,
    limits: &'a Limits,
    what: String,
}

impl<'a> Bounded<'a> {
    /// Wraps `source` (whose first bytes say `c`) as a bounded, decompressed stream called `what` in errors.
    pub fn new(source: impl Read + 'a, c: Compression, limits: &'a Limits, what: String) -> io::Result<Self> {
        let read = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let counted = Counted {
            inner: source,
            read: read.clone(),
        };
        let (inner, compressed): (Box<dyn Read + 'a>, _) = match c {
            Compression::None => (Box::new(counted), None),
            Compression::Gzip => (
                Box::new(flate2::read::MultiGzDecoder::new(io::BufReader::with_capacity(
                    1 << 16,
                    counted,
                ))),
                Some(read),
            ),
            Compression::Zstd => (
                Box::new(ZstdFrames {
                    decoder: Some(zstd_frame(io::BufReader::with_capacity(1 << 16, counted))?),
                }),
                Some(read),
            ),
        };
        Ok(Bounded {
            inner,
            compressed,
            out: 0,
            limits,
            what,
        })
    }

    /// Bytes produced so far.
    pub fn produced(&self) -> u64 {
        self.out
    }
}

impl Read for Bounded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.out += n as u64;
        if self.out > self.limits.max_unpacked {
            return Err(ImageError::cap(
                &self.what,
                "max-unpacked",
                format!("unpacks to more than {} bytes", self.limits.max_unpacked),
            )
            .into_io());
        }
        if let Some(c) = &self.compressed
            && self.out > self.limits.ratio_floor
            && self.out > c.get().max(1).saturating_mul(self.limits.max_ratio)
        {
            return Err(ImageError::cap(
                &self.what,
                "max-ratio",
                format!(
                    "unpacks to more than {} times its compressed size ({} bytes from {}): a compression bomb",
                    self.limits.max_ratio,
                    self.out,
                    c.get()
                ),
            )
            .into_io());
        }
        Ok(n)
    }
}

/// Reads up to `n` first bytes of `r` (fewer at its end).
pub fn head(r: &mut impl Read, n: usize) -> io::Result<Vec<u8>> {
    let mut out = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match r.read(&mut out[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    out.truncate(got);
    Ok(out)
}

/// `head` bytes already read, then the rest of `rest`.
pub fn rejoin<R: Read>(head: Vec<u8>, rest: R) -> io::Chain<io::Cursor<Vec<u8>>, R> {
    io::Cursor::new(head).chain(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_by_magic() {
        assert_eq!(Compression::sniff(&[0x1f, 0x8b, 8]), Ok(Compression::Gzip));
        assert_eq!(
            Compression::sniff(&[0x28, 0xb5, 0x2f, 0xfd]),
            Ok(Compression::Zstd)
        );
        assert_eq!(Compression::sniff(b"BZh91AY"), Err("bzip2"));
        assert_eq!(Compression::sniff(b"usr/"), Ok(Compression::None));
    }

    #[test]
    fn zstd_frames_in_a_row_read_as_one_stream() {
        let mut two =
            ruzstd::encoding::compress_to_vec(&b"hello "[..], ruzstd::encoding::CompressionLevel::Fastest);
        two.extend(ruzstd::encoding::compress_to_vec(
            &b"world"[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        ));
        let limits = Limits::default();
        let mut r = Bounded::new(&two[..], Compression::Zstd, &limits, "t".into()).unwrap();
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello world");
    }

    #[test]
    fn a_bomb_stops_at_the_ratio() {
        let zeros = vec![0u8; 8 << 20];
        let packed =
            ruzstd::encoding::compress_to_vec(&zeros[..], ruzstd::encoding::CompressionLevel::Fastest);
        let limits = Limits {
            ratio_floor: 1 << 20,
            max_ratio: 50,
            ..Limits::default()
        };
        let mut r = Bounded::new(&packed[..], Compression::Zstd, &limits, "layer 1".into()).unwrap();
        let err = io::copy(&mut r, &mut io::sink()).unwrap_err();
        assert!(err.to_string().contains("max-ratio"), "{err}");
        // The same stream under the default bounds reads whole.
        let limits = Limits::default();
        let mut r = Bounded::new(&packed[..], Compression::Zstd, &limits, "layer 1".into()).unwrap();
        assert_eq!(io::copy(&mut r, &mut io::sink()).unwrap(), 8 << 20);
    }
}
