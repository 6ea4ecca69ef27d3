//! The self-test on one device: allocate, JIT-load the embedded PTX kernel, launch it, copy back, check.
//!
//! Runs inside the probe's child with the device's primary context current (see [`super::child`]). Each step
//! is one recorded driver call, so a failure names the exact call and CUresult an application would meet in
//! the same place. Prototypes: NVIDIA's `cuda.h` (CUDA 13.0).

use super::child::{CuDevicePtr, CuModule, CuResult, Driver, aligned};
use super::kernel;
use crate::facts::probe::{Call, SelfTest};
use std::ffi::{c_char, c_uint, c_void};

type CuFunction = *mut c_void;
type CuStream = *mut c_void;

type FnCtxSynchronize = unsafe extern "C" fn() -> CuResult;
type FnMemAlloc = unsafe extern "C" fn(*mut CuDevicePtr, usize) -> CuResult;
type FnMemFree = unsafe extern "C" fn(CuDevicePtr) -> CuResult;
type FnMemcpyDtoH = unsafe extern "C" fn(*mut c_void, CuDevicePtr, usize) -> CuResult;
type FnModuleGetFunction = unsafe extern "C" fn(*mut CuFunction, CuModule, *const c_char) -> CuResult;
#[allow(clippy::type_complexity)]
type FnLaunchKernel = unsafe extern "C" fn(
    CuFunction,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    CuStream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CuResult;

impl Driver<'_, '_> {
    /// Allocation, the kernel loaded, launched and checked. Runs with the device's context current.
    pub(super) fn selftest(&mut self, ordinal: i32) -> SelfTest {
        let mut t = SelfTest {
            device: ordinal,
            ..SelfTest::default()
        };
        let bytes = kernel::N as usize * 4;
        let (alloc, free) = match (
            // SAFETY: `FnMemAlloc` and `FnMemFree` are the prototypes of cuMemAlloc_v2 and cuMemFree_v2.
            unsafe { self.sym::<FnMemAlloc>("cuMemAlloc_v2", Some(ordinal)) },
            // SAFETY: as above.
            unsafe { self.sym::<FnMemFree>("cuMemFree_v2", Some(ordinal)) },
        ) {
            (Ok(a), Ok(f)) => (a, f),
            (Err(c), _) | (_, Err(c)) => {
                t.failed_call = Some(c);
                return t;
            }
        };
        let mut dptr: CuDevicePtr = 0;
        // SAFETY: `CUresult cuMemAlloc_v2(CUdeviceptr*, size_t)`; `dptr` is writable.
        let c = self.call("cuMemAlloc_v2", Some(ordinal), || unsafe {
            alloc(&mut dptr, bytes)
        });
        if !c.ok() {
            t.failed_call = Some(c);
            return t;
        }
        self.run_kernel(ordinal, dptr, &mut t);
        // SAFETY: `CUresult cuMemFree_v2(CUdeviceptr)` on the allocation made above, freed once.
        let c = self.call("cuMemFree_v2", Some(ordinal), || unsafe { free(dptr) });
        if !c.ok() && t.failed_call.is_none() {
            t.failed_call = Some(c);
        }
        t.passed = t.failed_call.is_none() && t.mismatch.is_none() && t.kernel.is_some();
        t
    }

    fn run_kernel(&mut self, ordinal: i32, dptr: CuDevicePtr, t: &mut SelfTest) {
        let mut module = None;
        let mut last_failure = None;
        for v in kernel::VARIANTS {
            let image = aligned(&v.text());
            let (c, m, log) = self.load_module(&image, ordinal);
            match m {
                Some(m) => {
                    t.kernel = Some(v.label());
                    module = Some(m);
                    break;
                }
                None => {
                    let mut why = format!("{}: {}", v.label(), c.describe());
                    if let Some(log) = log {
                        why.push_str(&format!("; JIT log: {log}"));
                    }
                    t.rejected_kernels.push(why);
                    last_failure = Some(c);
                }
            }
        }
        let Some(module) = module else {
            t.failed_call = last_failure;
            return;
        };
        if let Err(c) = self.launch(module, ordinal, dptr, t) {
            t.failed_call = Some(c);
        }
        self.unload(module, ordinal);
    }

    fn launch(
        &mut self,
        module: CuModule,
        ordinal: i32,
        dptr: CuDevicePtr,
        t: &mut SelfTest,
    ) -> Result<(), Call> {
        // SAFETY (these four): each `Fn…` alias is the `cuda.h` prototype of the name it is read as.
        let get: FnModuleGetFunction = unsafe { self.sym("cuModuleGetFunction", Some(ordinal)) }?;
        // SAFETY: as above.
        let launch: FnLaunchKernel = unsafe { self.sym("cuLaunchKernel", Some(ordinal)) }?;
        // SAFETY: as above.
        let sync: FnCtxSynchronize = unsafe { self.sym("cuCtxSynchronize", Some(ordinal)) }?;
        // SAFETY: as above.
        let copy: FnMemcpyDtoH = unsafe { self.sym("cuMemcpyDtoH_v2", Some(ordinal)) }?;
        let entry = format!("{}\0", kernel::ENTRY);
        let mut func: CuFunction = std::ptr::null_mut();
        // SAFETY: `CUresult cuModuleGetFunction(CUfunction*, CUmodule, const char*)`; `entry` is
        // NUL-terminated and `module` is loaded.
        let c = self.call("cuModuleGetFunction", Some(ordinal), || unsafe {
            get(&mut func, module, entry.as_ptr().cast())
        });
        if !c.ok() {
            return Err(c);
        }
        let mut arg_out: CuDevicePtr = dptr;
        let mut arg_n: c_uint = kernel::N;
        let mut params: [*mut c_void; 2] = [(&raw mut arg_out).cast(), (&raw mut arg_n).cast()];
        // SAFETY: `cuLaunchKernel(CUfunction, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMem, stream,
        // void** kernelParams, void** extra)`. The kernel takes (u64 out, u32 n): `params` holds one pointer to
        // a live value of each type, in order; `out` points to an allocation of N u32; stream 0 is the
        // context's default stream; `extra` is null.
        let c = self.call("cuLaunchKernel", Some(ordinal), || unsafe {
            launch(
                func,
                kernel::GRID,
                1,
                1,
                kernel::BLOCK,
                1,
                1,
                0,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        });
        if !c.ok() {
            return Err(c);
        }
        // SAFETY: `CUresult cuCtxSynchronize(void)` with this thread's context current.
        let c = self.call("cuCtxSynchronize", Some(ordinal), || unsafe { sync() });
        if !c.ok() {
            return Err(c);
        }
        let mut host = vec![0u32; kernel::N as usize];
        // SAFETY: `CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t)`; `host` holds exactly the
        // N * 4 bytes copied, and `dptr` is an allocation of that size.
        let c = self.call("cuMemcpyDtoH_v2", Some(ordinal), || unsafe {
            copy(host.as_mut_ptr().cast(), dptr, host.len() * 4)
        });
        if !c.ok() {
            return Err(c);
        }
        t.mismatch = kernel::verify(&host);
        Ok(())
    }
}
