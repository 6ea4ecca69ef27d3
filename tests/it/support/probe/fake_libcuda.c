/* A fake libcuda.so.1 for cudadiag's probe tests (no GPU, no driver needed).
 *
 * Built by tests/it/probe.rs with `cc -shared -fPIC`, put first on LD_LIBRARY_PATH of the probe's child.
 * Behaviour comes from the environment the child is given:
 *   FAKE_CUDA_INIT     unset or a number: cuInit returns it (0 by default);
 *                      "hang": cuInit never returns; "crash": cuInit writes to address 8 (SIGSEGV);
 *                      "garbage": cuInit prints to stdout and exits 0.
 *   FAKE_CUDA_DEVICES  device count after a successful cuInit (default 0).
 *   FAKE_CUDA_MODULE   what cuModuleLoadDataEx returns for anything but cudadiag's own kernel (default 209);
 *                      it also writes "fake JIT log" into the error log buffer.
 *   FAKE_CUDA_KERNEL   "wrong": the emulated kernel writes wrong values.
 * The "kernel" is emulated on the host: cuLaunchKernel reads its two parameters (u64 out, u32 n) through the
 * kernelParams array exactly as the driver would, so the test checks cudadiag's launch ABI.
 * cuGetErrorName/String know code 34 only, so the tests see both the library's strings and cudadiag's table.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

static const char *env(const char *k) { const char *v = getenv(k); return v ? v : ""; }

CUresult cuInit(unsigned int flags) {
    const char *mode = env("FAKE_CUDA_INIT");
    if (flags != 0) return 1;
    if (strcmp(mode, "hang") == 0) { for (;;) sleep(1); }
    /* A real invalid write, as a buggy driver would do: raise() would be absorbed by Rust's own SIGSEGV handler. */
    if (strcmp(mode, "crash") == 0) { *(volatile int *)(uintptr_t)8 = 1; }
    if (strcmp(mode, "garbage") == 0) { printf("hello from a confused libcuda\n"); fflush(stdout); _exit(0); }
    return atoi(mode);
}

CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = atoi(env("FAKE_CUDA_DEVICES")); return 0; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal < 0 || ordinal >= atoi(env("FAKE_CUDA_DEVICES"))) return 101;
    *d = ordinal; return 0;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) { snprintf(name, len, "Fake GPU %d", d); return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    (void)d;
    switch (attr) {
    case 75: *v = 9; return 0;
    case 76: *v = 0; return 0;
    case 16: *v = 132; return 0;
    case 20: *v = 0; return 0;
    default: return 1;
    }
}
CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { (void)d; *b = (size_t)80 << 30; return 0; }
CUresult cuDeviceGetUuid_v2(unsigned char *u, CUdevice d) {
    for (int i = 0; i < 16; i++) u[i] = (unsigned char)(0xa0 + i + d);
    return 0;
}
CUresult cuDeviceGetPCIBusId(char *s, int len, CUdevice d) { snprintf(s, len, "0000:%02x:00.0", 0x19 + d); return 0; }
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) { *ctx = (void *)(uintptr_t)(0x1000 + d); return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx ? 0 : 201; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { void *m = calloc(1, n); if (!m) return 2; *p = (CUdeviceptr)(uintptr_t)m; return 0; }
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { memcpy(dst, (void *)(uintptr_t)src, n); return 0; }

static int own_kernel(const void *image) { return strstr((const char *)image, "cudadiag live probe self-test") != NULL; }

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned int n, int *opts, void **vals) {
    if (((uintptr_t)image & 7) != 0) return 1; /* the driver wants 8-aligned images */
    if (own_kernel(image)) { *mod = (void *)0x2000; return 0; }
    const char *m = env("FAKE_CUDA_MODULE");
    CUresult rc = *m ? atoi(m) : 209;
    for (unsigned int i = 0; i + 1 < n + 1 && i < n; i++) {
        if (opts[i] == 5) { /* CU_JIT_ERROR_LOG_BUFFER; its size follows as option 6 */
            size_t size = 0;
            for (unsigned int j = 0; j < n; j++) if (opts[j] == 6) size = (size_t)(uintptr_t)vals[j];
            if (rc != 0 && size > 13) strcpy((char *)vals[i], "fake JIT log");
        }
    }
    if (rc == 0) *mod = (void *)0x3000;
    return rc;
}
CUresult cuModuleUnload(void *mod) { return mod ? 0 : 400; }
CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
    if (mod != (void *)0x2000 || strcmp(name, "cudadiag_probe") != 0) return 500;
    *f = (void *)0x4000; return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
    (void)shared; (void)stream;
    if (f != (void *)0x4000 || extra != NULL || params == NULL || gy != 1 || gz != 1 || by != 1 || bz != 1) return 1;
    uint32_t *out = (uint32_t *)(uintptr_t)*(CUdeviceptr *)params[0];
    uint32_t n = *(uint32_t *)params[1];
    int wrong = strcmp(env("FAKE_CUDA_KERNEL"), "wrong") == 0;
    for (uint32_t i = 0; i < gx * bx; i++)
        if (i < n) out[i] = wrong ? i : i * 3 + 7;
    return 0;
}

CUresult cuGetErrorName(CUresult e, const char **s) { if (e != 34) return 1; *s = "CUDA_ERROR_STUB_LIBRARY"; return 0; }
CUresult cuGetErrorString(CUresult e, const char **s) { if (e != 34) return 1; *s = "fake stub message"; return 0; }
