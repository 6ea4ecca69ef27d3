//! The runtime API probe: what an application linked against a given libcudart meets first.
//!
//! `cudaGetDeviceCount` is the first call of nearly every CUDA program, and its error is the one users paste:
//! 35 (driver older than the runtime), 34 (stub driver), 100 (no device), 803/804 (forward compatibility).
//! The runtime loads `libcuda.so.1` itself, by the same name and search as the driver probe before it, so in
//! this child it shares the driver the driver probe loaded. Prototypes: `cuda_runtime_api.h` (CUDA 13.0).

use super::library::{Lines, open};
use crate::facts::probe::{Call, CudaError, CudartRequest, RuntimeProbe};
use libloading::Library;
use std::ffi::{CStr, c_char, c_int};
use std::time::Instant;

type FnGetInt = unsafe extern "C" fn(*mut c_int) -> c_int;
type FnErrorText = unsafe extern "C" fn(c_int) -> *const c_char;

fn text(lib: &Library, name: &str, code: c_int) -> Option<String> {
    let sym = format!("{name}\0");
    // SAFETY: cudaGetErrorName/cudaGetErrorString are `const char* (*)(cudaError_t)`; the library is leaked,
    // so the copied pointer stays valid.
    let f: FnErrorText = unsafe { lib.get::<FnErrorText>(sym.as_bytes()).map(|s| *s).ok()? };
    // SAFETY: the function takes any cudaError_t value and returns a static string or null.
    let p = unsafe { f(code) };
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null pointer to the runtime's static NUL-terminated string.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

fn get_int(lib: &Library, name: &str, lines: &mut Lines<'_>, calls: &mut Vec<Call>) -> (Call, Option<i32>) {
    let sym = format!("{name}\0");
    // SAFETY: the three functions probed here are `cudaError_t (*)(int*)`; the library is leaked.
    let f = unsafe { lib.get::<FnGetInt>(sym.as_bytes()).map(|s| *s) };
    let call = match f {
        Err(e) => Call {
            call: name.to_string(),
            device: None,
            result: None,
            error: Some(format!(
                "symbol not found: {name} ({})",
                super::library::error_text(&e)
            )),
            elapsed_us: 0,
        },
        Ok(f) => {
            lines.begin_call(name);
            let mut v: c_int = 0;
            let t = Instant::now();
            // SAFETY: `cudaError_t (*)(int*)` with a live, writable int.
            let rc = unsafe { f(&mut v) };
            let elapsed_us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
            let call = Call {
                call: name.to_string(),
                device: None,
                result: Some(CudaError {
                    code: rc,
                    name: text(lib, "cudaGetErrorName", rc),
                    message: text(lib, "cudaGetErrorString", rc),
                }),
                error: None,
                elapsed_us,
            };
            calls.push(call.clone());
            return (call.clone(), call.ok().then_some(v));
        }
    };
    calls.push(call.clone());
    (call, None)
}

/// Loads the first candidate that loads and asks it the three questions.
pub fn probe(req: &CudartRequest, lines: &mut Lines<'_>) -> RuntimeProbe {
    let mut probe = RuntimeProbe::default();
    let mut errors = Vec::new();
    let mut found = None;
    for name in &req.candidates {
        let (load, lib) = open(name, &req.source, "cudaGetDeviceCount", lines);
        match lib {
            Some(lib) => {
                probe.library = load;
                found = Some(lib);
                break;
            }
            None => {
                errors.push(load.error.clone().unwrap_or_default());
                probe.library = load;
            }
        }
    }
    let Some(lib) = found else {
        if req.candidates.len() > 1 {
            probe.library.requested = req.candidates.join(", ");
            probe.library.error = Some(errors.join("; "));
        }
        return probe;
    };
    let mut calls = Vec::new();
    probe.runtime_version = get_int(lib, "cudaRuntimeGetVersion", lines, &mut calls).1;
    probe.driver_version = get_int(lib, "cudaDriverGetVersion", lines, &mut calls).1;
    let (call, count) = get_int(lib, "cudaGetDeviceCount", lines, &mut calls);
    probe.device_count = count;
    probe.get_device_count = Some(call);
    probe.calls = calls;
    probe
}
