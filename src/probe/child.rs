//! The child side of the probe (`cudadiag __probe`): the only code in cudadiag that loads a CUDA library.
//!
//! It reads a [`ProbeRequest`] from stdin, then talks to `libcuda.so.1` through `dlopen`/`dlsym`
//! (libloading), exactly as the CUDA runtime and the frameworks do: cuInit, the version, every device, a
//! self-test (primary context, allocation, the embedded PTX kernel launched and its output checked), then the
//! inspected binaries' device code loaded as data, then a libcudart if asked. Before each call it writes a
//! `begin` line and flushes it, so that if the driver hangs or crashes the parent still knows where.
//!
//! Every function pointer type below is the exact C prototype from NVIDIA's `cuda.h` / `cuda_runtime_api.h`
//! (CUDA 13.0): `CUresult` and `cudaError_t` are C enums (`int`), `CUdevice` is `int`, `CUdeviceptr` is
//! `unsigned long long`, handles are pointers, sizes are `size_t`. The libraries are never unloaded
//! (`dlclose` of libcuda during a process's life is unsupported), so the pointers stay valid until exit.

use super::cuda;
use super::library::{Lines, micros, open, symbol};
use crate::facts::probe::{
    Call, ChildLine, ChildReport, CudaError, DeviceProbe, DriverProbe, ModuleProbe, ModuleRequest,
    ProbeRequest, SelfTest,
};
use libloading::Library;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::io::{Read, Seek, SeekFrom, Write};
use std::time::Instant;

pub(super) type CuResult = c_int;
type CuDevice = c_int;
pub(super) type CuDevicePtr = u64;
type CuContext = *mut c_void;
pub(super) type CuModule = *mut c_void;

type FnInit = unsafe extern "C" fn(c_uint) -> CuResult;
type FnGetInt = unsafe extern "C" fn(*mut c_int) -> CuResult;
type FnDeviceGet = unsafe extern "C" fn(*mut CuDevice, c_int) -> CuResult;
type FnDeviceString = unsafe extern "C" fn(*mut c_char, c_int, CuDevice) -> CuResult;
type FnDeviceGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, CuDevice) -> CuResult;
type FnDeviceTotalMem = unsafe extern "C" fn(*mut usize, CuDevice) -> CuResult;
type FnDeviceGetUuid = unsafe extern "C" fn(*mut [u8; 16], CuDevice) -> CuResult;
type FnPrimaryCtxRetain = unsafe extern "C" fn(*mut CuContext, CuDevice) -> CuResult;
type FnPrimaryCtxRelease = unsafe extern "C" fn(CuDevice) -> CuResult;
type FnCtxSetCurrent = unsafe extern "C" fn(CuContext) -> CuResult;
type FnModuleLoadDataEx =
    unsafe extern "C" fn(*mut CuModule, *const c_void, c_uint, *mut c_uint, *mut *mut c_void) -> CuResult;
type FnModuleUnload = unsafe extern "C" fn(CuModule) -> CuResult;
type FnGetErrorText = unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult;

/// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
const ATTR_MULTIPROCESSORS: c_int = 16;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_MODE`.
const ATTR_COMPUTE_MODE: c_int = 20;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
const ATTR_CC_MAJOR: c_int = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
const ATTR_CC_MINOR: c_int = 76;
/// `CU_JIT_ERROR_LOG_BUFFER`.
const JIT_ERROR_LOG_BUFFER: c_uint = 5;
/// `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES`.
const JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_uint = 6;
/// Size of the JIT error log buffer.
const JIT_LOG_BYTES: usize = 8192;
/// Largest module read from an inspected file (a fatbin container is far smaller).
const MAX_MODULE_BYTES: u64 = 1 << 30;

fn c_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim().to_string()
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as nvidia-smi and `CUDA_VISIBLE_DEVICES` write it.
pub fn format_uuid(b: &[u8; 16]) -> String {
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// The driver library and the calls made through it.
pub(super) struct Driver<'l, 'o> {
    pub(super) lib: &'static Library,
    pub(super) lines: &'l mut Lines<'o>,
    pub(super) calls: Vec<Call>,
}

impl Driver<'_, '_> {
    /// Looks up a CUDA error's name and message through the library, falling back on cudadiag's table.
    fn error(&self, code: CuResult) -> CudaError {
        let text = |name: &str| -> Option<String> {
            // SAFETY: `name` is cuGetErrorName or cuGetErrorString, both
            // `CUresult (*)(CUresult, const char**)`, which is `FnGetErrorText`.
            let f: FnGetErrorText = unsafe { symbol(self.lib, name) }.ok()?;
            let mut p: *const c_char = std::ptr::null();
            // SAFETY: cuGetErrorName/cuGetErrorString(CUresult, const char**) store a pointer to a static,
            // NUL-terminated string or return an error and leave it untouched (still null, checked below).
            let rc = unsafe { f(code, &mut p) };
            if rc != 0 || p.is_null() {
                return None;
            }
            // SAFETY: `p` is non-null and points to the driver's static NUL-terminated string.
            Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        let table = cuda::known(code);
        CudaError {
            code,
            name: text("cuGetErrorName").or_else(|| table.map(|t| t.0.to_string())),
            message: text("cuGetErrorString").or_else(|| table.map(|t| t.1.to_string())),
        }
    }

    /// Calls `f` (a closure making one C call) with timing and a `begin` line, and records the call.
    pub(super) fn call(&mut self, name: &str, device: Option<i32>, f: impl FnOnce() -> CuResult) -> Call {
        let label = match device {
            Some(d) => format!("{name} (device {d})"),
            None => name.to_string(),
        };
        self.lines.begin(&label);
        let t = Instant::now();
        let rc = f();
        let elapsed_us = micros(t);
        let call = Call {
            call: name.to_string(),
            device,
            result: Some(self.error(rc)),
            error: None,
            elapsed_us,
        };
        self.calls.push(call.clone());
        call
    }

    /// Records a call that could not be made (its symbol is missing).
    fn missing(&mut self, name: &str, device: Option<i32>, error: String) -> Call {
        let call = Call {
            call: name.to_string(),
            device,
            result: None,
            error: Some(error),
            elapsed_us: 0,
        };
        self.calls.push(call.clone());
        call
    }

    /// Resolves `name` as `T`, recording a missing symbol as a failed call.
    ///
    /// # Safety
    ///
    /// As [`symbol`]: `T` must be exactly the C prototype `cuda.h` declares for `name`.
    pub(super) unsafe fn sym<T: Copy>(&mut self, name: &str, device: Option<i32>) -> Result<T, Call> {
        // SAFETY: the caller's `T` is `name`'s prototype; `self.lib` is leaked, never unloaded.
        unsafe { symbol::<T>(self.lib, name) }.map_err(|e| self.missing(name, device, e))
    }

    /// One `int` out-parameter call (`cuDriverGetVersion`, `cuDeviceGetCount`): the value when it succeeded.
    fn get_int(&mut self, name: &str) -> Option<i32> {
        // SAFETY: the names passed here (cuDriverGetVersion, cuDeviceGetCount) are `CUresult (*)(int*)`.
        let f: FnGetInt = unsafe { self.sym(name, None) }.ok()?;
        let mut v: c_int = 0;
        // SAFETY: `f` is `CUresult (*)(int*)`; `v` is a live, writable int.
        let c = self.call(name, None, || unsafe { f(&mut v) });
        c.ok().then_some(v)
    }

    fn attribute(&mut self, dev: CuDevice, ordinal: i32, attr: c_int) -> Option<i32> {
        // SAFETY: `FnDeviceGetAttribute` is cuDeviceGetAttribute's prototype.
        let f: FnDeviceGetAttribute = unsafe { self.sym("cuDeviceGetAttribute", Some(ordinal)) }.ok()?;
        let mut v: c_int = 0;
        // SAFETY: `CUresult cuDeviceGetAttribute(int*, CUdevice_attribute, CUdevice)`; `v` is writable and
        // `dev` came from cuDeviceGet.
        let c = self.call("cuDeviceGetAttribute", Some(ordinal), || unsafe {
            f(&mut v, attr, dev)
        });
        c.ok().then_some(v)
    }

    fn device_string(&mut self, name: &str, dev: CuDevice, ordinal: i32) -> Option<String> {
        // SAFETY: the names passed here (cuDeviceGetName, cuDeviceGetPCIBusId) are
        // `CUresult (*)(char*, int, CUdevice)`.
        let f: FnDeviceString = unsafe { self.sym(name, Some(ordinal)) }.ok()?;
        let mut buf = [0u8; 256];
        // SAFETY: `CUresult (*)(char*, int len, CUdevice)` writes at most `len` bytes, NUL included, into
        // `buf`, which is 256 bytes long.
        let c = self.call(name, Some(ordinal), || unsafe {
            f(buf.as_mut_ptr().cast(), 256, dev)
        });
        c.ok().then(|| c_text(&buf))
    }

    fn device(&mut self, ordinal: i32) -> Option<(CuDevice, DeviceProbe)> {
        // SAFETY: `FnDeviceGet` is cuDeviceGet's prototype.
        let get: FnDeviceGet = unsafe { self.sym("cuDeviceGet", Some(ordinal)) }.ok()?;
        let mut dev: CuDevice = 0;
        // SAFETY: `CUresult cuDeviceGet(CUdevice*, int ordinal)`; `dev` is writable.
        let c = self.call("cuDeviceGet", Some(ordinal), || unsafe { get(&mut dev, ordinal) });
        if !c.ok() {
            return None;
        }
        let mut d = DeviceProbe {
            ordinal,
            ..DeviceProbe::default()
        };
        d.name = self.device_string("cuDeviceGetName", dev, ordinal);
        let major = self.attribute(dev, ordinal, ATTR_CC_MAJOR);
        let minor = self.attribute(dev, ordinal, ATTR_CC_MINOR);
        if let (Some(a), Some(b)) = (major, minor) {
            d.cc = Some(format!("{a}.{b}"));
        }
        d.multiprocessors = self.attribute(dev, ordinal, ATTR_MULTIPROCESSORS);
        d.compute_mode = self.attribute(dev, ordinal, ATTR_COMPUTE_MODE).map(|m| match m {
            0 => "default".to_string(),
            1 => "exclusive-thread".to_string(),
            2 => "prohibited".to_string(),
            3 => "exclusive-process".to_string(),
            n => format!("unknown ({n})"),
        });
        // SAFETY: `FnDeviceTotalMem` is cuDeviceTotalMem_v2's prototype.
        if let Ok(f) = unsafe { self.sym::<FnDeviceTotalMem>("cuDeviceTotalMem_v2", Some(ordinal)) } {
            let mut bytes: usize = 0;
            // SAFETY: `CUresult cuDeviceTotalMem_v2(size_t*, CUdevice)`; `bytes` is writable.
            let c = self.call("cuDeviceTotalMem_v2", Some(ordinal), || unsafe {
                f(&mut bytes, dev)
            });
            if c.ok() {
                d.total_mem = u64::try_from(bytes).ok();
            }
        }
        // SAFETY: cuDeviceGetUuid_v2 and cuDeviceGetUuid share the prototype `FnDeviceGetUuid`; the library is
        // leaked.
        let uuid_fn = unsafe { symbol::<FnDeviceGetUuid>(self.lib, "cuDeviceGetUuid_v2") }
            .map(|f| ("cuDeviceGetUuid_v2", f))
            .or_else(|_| {
                // SAFETY: as above.
                unsafe { self.sym::<FnDeviceGetUuid>("cuDeviceGetUuid", Some(ordinal)) }
                    .map(|f| ("cuDeviceGetUuid", f))
            });
        if let Ok((name, f)) = uuid_fn {
            let mut raw = [0u8; 16];
            // SAFETY: `CUresult cuDeviceGetUuid[_v2](CUuuid*, CUdevice)`; CUuuid is `struct { char bytes[16]; }`,
            // the same layout as `[u8; 16]`, and `raw` is writable.
            let c = self.call(name, Some(ordinal), || unsafe { f(&mut raw, dev) });
            if c.ok() {
                d.uuid = Some(format_uuid(&raw));
            }
        }
        d.bus_id = self.device_string("cuDeviceGetPCIBusId", dev, ordinal);
        Some((dev, d))
    }

    /// Loads a module from `image` (8-aligned, NUL-terminated for PTX) into the current context, capturing the
    /// JIT error log. Returns the call, the module handle on success, and the log.
    pub(super) fn load_module(
        &mut self,
        image: &[u64],
        ordinal: i32,
    ) -> (Call, Option<CuModule>, Option<String>) {
        // SAFETY: `FnModuleLoadDataEx` is cuModuleLoadDataEx's prototype.
        let f: FnModuleLoadDataEx = match unsafe { self.sym("cuModuleLoadDataEx", Some(ordinal)) } {
            Ok(f) => f,
            Err(c) => return (c, None, None),
        };
        let mut log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        // The option values are pointer-sized slots: a buffer pointer, then a byte count stored as a pointer.
        let mut values: [*mut c_void; 2] = [
            log.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(JIT_LOG_BYTES),
        ];
        let mut module: CuModule = std::ptr::null_mut();
        // SAFETY: `CUresult cuModuleLoadDataEx(CUmodule*, const void* image, unsigned numOptions,
        // CUjit_option*, void** optionValues)`. `image` is a live, 8-aligned buffer holding a fatbin, cubin or
        // NUL-terminated PTX; the two options and their values have matching lengths; the log buffer is
        // `JIT_LOG_BYTES` long as declared; `module` is writable.
        let c = self.call("cuModuleLoadDataEx", Some(ordinal), || unsafe {
            f(
                &mut module,
                image.as_ptr().cast(),
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        });
        let text = c_text(&log);
        let log = (!text.is_empty()).then_some(text);
        (c.clone(), (c.ok() && !module.is_null()).then_some(module), log)
    }

    pub(super) fn unload(&mut self, module: CuModule, ordinal: i32) {
        // SAFETY: `FnModuleUnload` is cuModuleUnload's prototype.
        if let Ok(f) = unsafe { self.sym::<FnModuleUnload>("cuModuleUnload", Some(ordinal)) } {
            // SAFETY: `CUresult cuModuleUnload(CUmodule)` on a module this child loaded and has not unloaded.
            self.call("cuModuleUnload", Some(ordinal), || unsafe { f(module) });
        }
    }

    /// Primary context, then made current. `Err` holds the failed call.
    fn context(&mut self, dev: CuDevice, ordinal: i32) -> Result<(), Call> {
        // SAFETY: `FnPrimaryCtxRetain` and `FnCtxSetCurrent` are the prototypes of the names they are read as.
        let retain: FnPrimaryCtxRetain = unsafe { self.sym("cuDevicePrimaryCtxRetain", Some(ordinal)) }?;
        // SAFETY: as above.
        let set: FnCtxSetCurrent = unsafe { self.sym("cuCtxSetCurrent", Some(ordinal)) }?;
        let mut ctx: CuContext = std::ptr::null_mut();
        // SAFETY: `CUresult cuDevicePrimaryCtxRetain(CUcontext*, CUdevice)`; `ctx` is writable.
        let c = self.call("cuDevicePrimaryCtxRetain", Some(ordinal), || unsafe {
            retain(&mut ctx, dev)
        });
        if !c.ok() {
            return Err(c);
        }
        // SAFETY: `CUresult cuCtxSetCurrent(CUcontext)` with the context just retained.
        let c = self.call("cuCtxSetCurrent", Some(ordinal), || unsafe { set(ctx) });
        if !c.ok() {
            return Err(c);
        }
        Ok(())
    }

    fn release(&mut self, dev: CuDevice, ordinal: i32) {
        // SAFETY: `FnPrimaryCtxRelease` is cuDevicePrimaryCtxRelease_v2's prototype.
        if let Ok(f) =
            unsafe { self.sym::<FnPrimaryCtxRelease>("cuDevicePrimaryCtxRelease_v2", Some(ordinal)) }
        {
            // SAFETY: `CUresult cuDevicePrimaryCtxRelease_v2(CUdevice)`, balancing the retain made above.
            self.call("cuDevicePrimaryCtxRelease_v2", Some(ordinal), || unsafe {
                f(dev)
            });
        }
    }

    /// Loads one requested module as data and unloads it again.
    fn module(&mut self, req: &ModuleRequest, ordinal: i32, cc: Option<String>) -> ModuleProbe {
        let mut m = ModuleProbe {
            binary: req.binary.clone(),
            container: req.container,
            offset: req.offset,
            size: req.size,
            device: ordinal,
            cc,
            has_kernels: req.has_kernels,
            ..ModuleProbe::default()
        };
        let bytes = match read_range(&req.file, req.offset, req.size) {
            Ok(b) => b,
            Err(e) => {
                m.error = Some(e);
                return m;
            }
        };
        // `aligned` always appends at least one zero byte, which terminates PTX text.
        let image = aligned(&bytes);
        let (c, module, log) = self.load_module(&image, ordinal);
        m.elapsed_us = c.elapsed_us;
        m.result = c.result;
        m.error = c.error;
        m.jit_log = log;
        if let Some(module) = module {
            self.unload(module, ordinal);
        }
        m
    }
}

/// Copies bytes into a zero-padded, 8-aligned buffer with at least one trailing zero byte.
pub(super) fn aligned(bytes: &[u8]) -> Vec<u64> {
    let mut v = vec![0u64; bytes.len() / 8 + 1];
    for (word, chunk) in v.iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *word = u64::from_ne_bytes(b);
    }
    v
}

fn read_range(file: &str, offset: u64, size: u64) -> Result<Vec<u8>, String> {
    if size > MAX_MODULE_BYTES {
        return Err(format!(
            "{size} bytes is more than the probe loads ({MAX_MODULE_BYTES})"
        ));
    }
    let mut f = std::fs::File::open(file).map_err(|e| format!("cannot open {file}: {e}"))?;
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| format!("cannot seek {file} to 0x{offset:x}: {e}"))?;
    let mut buf = Vec::new();
    f.take(size)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read {file}: {e}"))?;
    if buf.len() as u64 != size {
        return Err(format!("{file} ends before 0x{:x}", offset + size));
    }
    Ok(buf)
}

/// Runs the driver probe and the module loads.
fn driver_probe(req: &ProbeRequest, lines: &mut Lines<'_>) -> (DriverProbe, Vec<ModuleProbe>) {
    let (library, lib) = open("libcuda.so.1", "driver", "cuInit", lines);
    let mut probe = DriverProbe {
        library,
        ..DriverProbe::default()
    };
    let mut modules = Vec::new();
    let Some(lib) = lib else {
        return (probe, modules);
    };
    let mut d = Driver {
        lib,
        lines,
        calls: Vec::new(),
    };
    // SAFETY: `FnInit` is cuInit's prototype.
    let init = match unsafe { d.sym::<FnInit>("cuInit", None) } {
        // SAFETY: `CUresult cuInit(unsigned int Flags)`; Flags must be 0.
        Ok(f) => d.call("cuInit", None, || unsafe { f(0) }),
        Err(c) => c,
    };
    probe.init = Some(init.clone());
    probe.version = d.get_int("cuDriverGetVersion");
    if init.ok() {
        probe.device_count = d.get_int("cuDeviceGetCount");
        let mut tested_ccs: Vec<Option<String>> = Vec::new();
        for ordinal in 0..probe.device_count.unwrap_or(0).clamp(0, 64) {
            let Some((dev, info)) = d.device(ordinal) else {
                continue;
            };
            let cc = info.cc.clone();
            probe.devices.push(info);
            match d.context(dev, ordinal) {
                Ok(()) => {
                    probe.selftests.push(d.selftest(ordinal));
                    // Device code is loaded once per compute capability: the answer depends on nothing else.
                    if !tested_ccs.contains(&cc) {
                        tested_ccs.push(cc.clone());
                        for m in &req.modules {
                            modules.push(d.module(m, ordinal, cc.clone()));
                        }
                    }
                    d.release(dev, ordinal);
                }
                Err(c) => probe.selftests.push(SelfTest {
                    device: ordinal,
                    failed_call: Some(c),
                    ..SelfTest::default()
                }),
            }
        }
    }
    probe.calls = d.calls;
    if !probe.devices.is_empty() {
        match super::nvml::Nvml::open(lines) {
            Ok(nvml) => {
                for dev in &mut probe.devices {
                    match dev.bus_id.clone().map(|bus| nvml.mig_mode(&bus, lines)) {
                        Some(Ok(m)) => dev.mig_mode = Some(m),
                        Some(Err(e)) => dev.mig_error = Some(e),
                        None => dev.mig_error = Some("no PCI bus id to ask NVML about".to_string()),
                    }
                }
            }
            Err(e) => {
                for dev in &mut probe.devices {
                    dev.mig_error = Some(e.clone());
                }
            }
        }
    }
    (probe, modules)
}

/// `cudadiag __probe`: reads the request from `input`, probes, writes the lines to `out`.
pub fn main(input: &mut dyn Read, out: &mut dyn Write) {
    let mut text = String::new();
    let req: ProbeRequest = match input.read_to_string(&mut text) {
        Ok(_) if text.trim().is_empty() => ProbeRequest::default(),
        Ok(_) => serde_json::from_str(&text).unwrap_or_default(),
        Err(_) => ProbeRequest::default(),
    };
    let mut lines = Lines::new(out);
    let (driver, modules) = driver_probe(&req, &mut lines);
    let runtime = req.cudart.as_ref().map(|c| super::runtime::probe(c, &mut lines));
    lines.line(&ChildLine::Report(Box::new(ChildReport {
        driver,
        runtime,
        modules,
    })));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_is_formatted_like_nvidia_smi() {
        let b: [u8; 16] = [
            0xb4, 0xa1, 0x30, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
        ];
        assert_eq!(format_uuid(&b), "GPU-b4a13011-2233-4455-6677-8899aabbccdd");
    }

    #[test]
    fn aligned_copies_pad_and_terminate() {
        let v = aligned(b"12345678");
        assert_eq!(v.len(), 2);
        assert_eq!(v[1], 0, "a trailing zero word terminates PTX text");
        let v = aligned(b"abc");
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].to_ne_bytes(), *b"abc\0\0\0\0\0");
        assert_eq!(v.as_ptr() as usize % 8, 0);
    }

    #[test]
    fn read_range_refuses_short_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("x.bin");
        assert!(std::fs::write(&f, b"0123456789").is_ok());
        let name = f.to_string_lossy().to_string();
        assert_eq!(read_range(&name, 2, 3).ok(), Some(b"234".to_vec()));
        assert!(read_range(&name, 8, 5).is_err());
        assert!(read_range("/nonexistent/cudadiag", 0, 1).is_err());
    }
}
