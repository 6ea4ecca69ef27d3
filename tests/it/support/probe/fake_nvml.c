/* A fake libnvidia-ml.so.1 for cudadiag's probe tests: MIG mode from FAKE_MIG ("0", "1", "pending": current 0
 * and pending 1, "unsupported": NVML_ERROR_NOT_SUPPORTED). Only bus id 0000:19:00.0 is known. */
#include <stdlib.h>
#include <string.h>

int nvmlInit_v2(void) { return 0; }
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev) {
    if (strcmp(bus, "0000:19:00.0") != 0) return 6; /* NVML_ERROR_NOT_FOUND */
    *dev = (void *)0x19;
    return 0;
}
int nvmlDeviceGetMigMode(void *dev, unsigned int *current, unsigned int *pending) {
    const char *m = getenv("FAKE_MIG");
    if (dev != (void *)0x19) return 2;
    if (m && strcmp(m, "unsupported") == 0) return 3;
    *current = (m && strcmp(m, "1") == 0) ? 1 : 0;
    *pending = (m && strcmp(m, "pending") == 0) ? 1 : *current;
    return 0;
}
const char *nvmlErrorString(int r) { return r == 6 ? "Not Found" : "Unknown Error"; }
