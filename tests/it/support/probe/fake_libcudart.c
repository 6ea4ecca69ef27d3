/* A fake libcudart for cudadiag's runtime-probe tests. cudaGetDeviceCount returns FAKE_CUDART_RC (default 0,
 * with 2 devices). Built by tests/it/probe.rs with `cc -shared -fPIC`. */
#include <stdlib.h>

int cudaRuntimeGetVersion(int *v) { *v = 12040; return 0; }
int cudaDriverGetVersion(int *v) { *v = 11080; return 0; }
int cudaGetDeviceCount(int *n) {
    const char *rc = getenv("FAKE_CUDART_RC");
    int r = rc ? atoi(rc) : 0;
    if (r == 0) *n = 2;
    return r;
}
const char *cudaGetErrorName(int e) { return e == 0 ? "cudaSuccess" : e == 35 ? "cudaErrorInsufficientDriver" : "cudaErrorUnknown"; }
const char *cudaGetErrorString(int e) {
    return e == 0 ? "no error" : e == 35 ? "CUDA driver version is insufficient for CUDA runtime version" : "unknown error";
}
