//! Bounds on what an image may make cudadiag do, and the error that names the one reached. A leaf below every
//! reader of the image (the tar walk, the decompressors, the store, the manifest) and the module that drives
//! them.

/// Bounds on what an image may make cudadiag do.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Layers in one image (Docker's overlay2 driver stops at 128; 256 leaves room).
    pub max_layers: usize,
    /// Tar entries over all layers (a large CUDA image has about 100,000).
    pub max_entries: u64,
    /// Bytes written to the temporary directory.
    pub max_extracted: u64,
    /// Size of one file in a layer.
    pub max_file: u64,
    /// Bytes of tar stream unpacked over all layers (and of a compressed image file).
    pub max_unpacked: u64,
    /// Largest ratio of unpacked to compressed bytes of one stream, once past [`Limits::ratio_floor`].
    pub max_ratio: u64,
    /// Bytes unpacked from one stream before its ratio is judged.
    pub ratio_floor: u64,
    /// Files up to this size are written whatever they hold.
    pub small_file: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_layers: 256,
            max_entries: 2_000_000,
            max_extracted: 32 << 30,
            max_file: 8 << 30,
            max_unpacked: 128 << 30,
            max_ratio: 200,
            ratio_floor: 256 << 20,
            small_file: 1 << 20,
        }
    }
}

/// Why an image could not be read: a message that names the file, the layer and, for a bound, the cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageError(pub String);

impl std::fmt::Display for ImageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ImageError {}

impl ImageError {
    /// A bound was reached: `what` (a layer, the image file) `detail`, and which cap.
    pub fn cap(what: &str, cap: &str, detail: String) -> ImageError {
        ImageError(format!(
            "{what}: {detail}; refused at the {cap} bound (see docs/container-images.md, \"Bounds\")"
        ))
    }

    /// Carries the error through an `io::Read` (a bound met inside a decompressor or the tar reader).
    pub fn into_io(self) -> std::io::Error {
        std::io::Error::other(self)
    }

    /// Recovers an error carried by [`ImageError::into_io`], or describes any other I/O error met in `what`.
    pub fn from_io(what: &str, e: std::io::Error) -> ImageError {
        if e.get_ref().is_some_and(|r| r.is::<ImageError>()) {
            if let Some(inner) = e.into_inner()
                && let Ok(me) = inner.downcast::<ImageError>()
            {
                return *me;
            }
            return ImageError(format!("{what}: unreadable"));
        }
        ImageError(format!("{what}: {e}"))
    }
}
