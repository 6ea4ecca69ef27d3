//! MIG mode of each GPU, through NVML (`libnvidia-ml.so.1`): the CUDA driver API has no attribute for it.
//!
//! Asked in the probe's child only, by PCI bus id (`nvmlDeviceGetHandleByPciBusId_v2` takes the
//! `domain:bus:device.function` form `cuDeviceGetPCIBusId` writes). A GPU in MIG mode shows CUDA only its MIG
//! instances, and only those named in `CUDA_VISIBLE_DEVICES` (`MIG-…`): worth knowing when a device is
//! missing. Prototypes: NVIDIA's `nvml.h`; `nvmlReturn_t` is a C enum (`int`), `nvmlDevice_t` a pointer.

use super::library::{Lines, open};
use libloading::Library;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

type NvmlDevice = *mut c_void;
type FnInit = unsafe extern "C" fn() -> c_int;
type FnByBusId = unsafe extern "C" fn(*const c_char, *mut NvmlDevice) -> c_int;
type FnMigMode = unsafe extern "C" fn(NvmlDevice, *mut c_uint, *mut c_uint) -> c_int;
type FnErrorString = unsafe extern "C" fn(c_int) -> *const c_char;

/// `NVML_ERROR_NOT_SUPPORTED`: the GPU has no MIG.
const NOT_SUPPORTED: c_int = 3;

/// NVML, once initialised in this child.
pub struct Nvml {
    lib: &'static Library,
}

/// Reads the NVML symbol `name` as a function pointer of type `T`.
///
/// # Safety
///
/// `T` must be a function pointer type with exactly the C prototype `nvml.h` declares for `name` (nothing
/// checks it; calling through a wrong `T` is undefined behaviour), and `lib` must stay loaded while the
/// pointer is used (the probe leaks its libraries).
unsafe fn sym<T: Copy>(lib: &Library, name: &str) -> Result<T, String> {
    let cname = format!("{name}\0");
    // SAFETY: the caller's `T` is `name`'s prototype and `lib` stays loaded, so the copied pointer stays
    // valid.
    unsafe { lib.get::<T>(cname.as_bytes()).map(|s| *s) }
        .map_err(|e| format!("symbol not found: {name} ({})", super::library::error_text(&e)))
}

impl Nvml {
    /// Loads and initialises NVML; `Err` says why not.
    pub fn open(lines: &mut Lines<'_>) -> Result<Nvml, String> {
        let (load, lib) = open("libnvidia-ml.so.1", "nvml", "nvmlInit_v2", lines);
        let lib = lib.ok_or_else(|| load.error.unwrap_or_else(|| "cannot load NVML".to_string()))?;
        // SAFETY: `FnInit` is `nvmlReturn_t nvmlInit_v2(void)`; `lib` is leaked by `open`.
        let init: FnInit = unsafe { sym(lib, "nvmlInit_v2") }?;
        lines.begin_call("nvmlInit_v2");
        // SAFETY: `nvmlReturn_t nvmlInit_v2(void)`.
        let rc = unsafe { init() };
        let nvml = Nvml { lib };
        if rc != 0 {
            return Err(format!("nvmlInit_v2 returned {}", nvml.describe(rc)));
        }
        Ok(nvml)
    }

    fn describe(&self, rc: c_int) -> String {
        // SAFETY: `FnErrorString` is `const char* nvmlErrorString(nvmlReturn_t)`.
        let text = unsafe { sym::<FnErrorString>(self.lib, "nvmlErrorString") }
            .ok()
            .and_then(|f| {
                // SAFETY: `const char* nvmlErrorString(nvmlReturn_t)` returns a static string or null.
                let p = unsafe { f(rc) };
                // SAFETY: non-null pointer to NVML's static NUL-terminated string.
                (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            });
        match text {
            Some(t) => format!("{rc} ({t})"),
            None => rc.to_string(),
        }
    }

    /// `enabled`, `disabled` (with ` (pending enabled)` when a change waits for a reset) or `unsupported` for
    /// the GPU at `bus_id`.
    pub fn mig_mode(&self, bus_id: &str, lines: &mut Lines<'_>) -> Result<String, String> {
        // SAFETY: `FnByBusId` is `nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char*, nvmlDevice_t*)`.
        let by_bus: FnByBusId = unsafe { sym(self.lib, "nvmlDeviceGetHandleByPciBusId_v2") }?;
        // SAFETY: `FnMigMode` is `nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t, unsigned*, unsigned*)`.
        let mig: FnMigMode = unsafe { sym(self.lib, "nvmlDeviceGetMigMode") }?;
        let id = format!("{bus_id}\0");
        let mut dev: NvmlDevice = std::ptr::null_mut();
        lines.begin_call("nvmlDeviceGetHandleByPciBusId_v2");
        // SAFETY: `nvmlReturn_t (const char* pciBusId, nvmlDevice_t*)`; `id` is NUL-terminated, `dev` writable.
        let rc = unsafe { by_bus(id.as_ptr().cast(), &mut dev) };
        if rc != 0 {
            return Err(format!(
                "nvmlDeviceGetHandleByPciBusId_v2({bus_id}) returned {}",
                self.describe(rc)
            ));
        }
        let (mut current, mut pending): (c_uint, c_uint) = (0, 0);
        lines.begin_call("nvmlDeviceGetMigMode");
        // SAFETY: `nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t, unsigned int* current, unsigned int* pending)`
        // with the handle NVML just returned and two writable unsigned ints.
        let rc = unsafe { mig(dev, &mut current, &mut pending) };
        match rc {
            0 => Ok(mode_name(current, pending)),
            NOT_SUPPORTED => Ok("unsupported".to_string()),
            _ => Err(format!("nvmlDeviceGetMigMode returned {}", self.describe(rc))),
        }
    }
}

/// `NVML_DEVICE_MIG_DISABLE` is 0, `NVML_DEVICE_MIG_ENABLE` 1.
pub fn mode_name(current: c_uint, pending: c_uint) -> String {
    let name = |m: c_uint| if m == 1 { "enabled" } else { "disabled" };
    if current == pending {
        name(current).to_string()
    } else {
        format!("{} (pending {})", name(current), name(pending))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn mode_names() {
        assert_eq!(super::mode_name(0, 0), "disabled");
        assert_eq!(super::mode_name(1, 1), "enabled");
        assert_eq!(super::mode_name(0, 1), "disabled (pending enabled)");
    }
}
