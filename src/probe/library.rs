//! The child's two tools for every library it loads: the stdout protocol ([`Lines`], a `begin` line flushed
//! before each call so that the parent knows where a hang or crash happened) and the loading itself ([`open`],
//! [`symbol`]). A leaf below the driver probe (`child`), NVML (`nvml`) and the runtime probe (`runtime`), which
//! `child` calls.

use super::maps;
use crate::facts::probe::{ChildLine, LibraryLoad};
use libloading::Library;
use std::io::Write;
use std::time::Instant;

/// The child's stdout protocol: one JSON line per event, flushed at once.
pub struct Lines<'a> {
    out: &'a mut dyn Write,
}

impl<'a> Lines<'a> {
    /// Wraps the child's stdout.
    pub fn new(out: &'a mut dyn Write) -> Self {
        Lines { out }
    }

    pub(super) fn line(&mut self, line: &ChildLine) {
        // A write error means the parent is gone: nothing is left to tell anyone, so carry on quietly.
        if let Ok(text) = serde_json::to_string(line) {
            let _ = writeln!(self.out, "{text}");
            let _ = self.out.flush();
        }
    }

    pub(super) fn begin(&mut self, what: &str) {
        self.line(&ChildLine::Begin(what.to_string()));
    }

    /// Announces a call about to be made (for the runtime probe).
    pub fn begin_call(&mut self, what: &str) {
        self.begin(what);
    }
}

/// Reads a symbol as a function pointer of type `T`.
///
/// # Safety
///
/// `T` must be a function pointer type with exactly the C prototype (arguments, return type, `extern "C"`)
/// that NVIDIA's headers declare for `name`: nothing checks it, and calling through a wrong `T` is undefined
/// behaviour. `lib` must never be unloaded while the returned pointer is in use (the probe leaks its
/// libraries).
pub(super) unsafe fn symbol<T: Copy>(lib: &Library, name: &str) -> Result<T, String> {
    let cname = format!("{name}\0");
    // SAFETY: the caller guarantees that `T` is `name`'s prototype and that `lib` stays loaded, so the
    // pointer copied out of the `Symbol` outlives it safely.
    unsafe {
        lib.get::<T>(cname.as_bytes())
            .map(|s| *s)
            .map_err(|e| format!("symbol not found: {name} ({})", error_text(&e)))
    }
}

/// Opens a library by name or path and reports which file was mapped. The library is leaked on purpose.
pub fn open(
    requested: &str,
    source: &str,
    probe_symbol: &str,
    lines: &mut Lines<'_>,
) -> (LibraryLoad, Option<&'static Library>) {
    lines.begin(&format!("dlopen {requested}"));
    let t = Instant::now();
    // SAFETY: loading a shared library runs its initialisers. The only libraries loaded here are the CUDA
    // driver and runtime libraries the user's applications load the same way; this runs in the disposable
    // child process, so a crash or hang in them is caught by the parent.
    let lib = unsafe { Library::new(requested) };
    let elapsed_us = micros(t);
    let mut load = LibraryLoad {
        requested: requested.to_string(),
        source: source.to_string(),
        loaded_from: None,
        error: None,
        elapsed_us,
    };
    match lib {
        Ok(lib) => {
            let lib: &'static Library = Box::leak(Box::new(lib));
            // SAFETY: the pointer is only compared with the process's mappings, never called, so any function
            // pointer type will do; `lib` is leaked just above.
            if let Ok(f) = unsafe { symbol::<unsafe extern "C" fn()>(lib, probe_symbol) } {
                load.loaded_from = maps::file_at(f as usize);
            }
            lines.line(&ChildLine::Loaded(load.clone()));
            (load, Some(lib))
        }
        Err(e) => {
            load.error = Some(error_text(&e));
            (load, None)
        }
    }
}

/// libloading's error with its cause: `dlopen failed: libcuda.so.1: cannot open shared object file: …`.
pub fn error_text(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(s) => format!("{e}: {s}"),
        None => e.to_string(),
    }
}

/// Microseconds since `t`.
pub(super) fn micros(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX)
}
