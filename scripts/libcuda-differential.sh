#!/usr/bin/env bash
# Differential: the libcuda.so.1 and libnvidia-ml.so.1 that glibc's dlopen really loads (from a program with
# no RPATH or RUNPATH, as the CUDA runtime's own dlopen is) against the first candidate `cudadiag doctor` names,
# under each LD_LIBRARY_PATH given (the empty string: as inherited). Needs a machine with the NVIDIA driver.
# Usage: CUDADIAG=target/release/cudadiag scripts/libcuda-differential.sh [LD_LIBRARY_PATH]...
# Prints one line per case and library, and exits 1 if any differs.
set -euo pipefail
bin=${CUDADIAG:-target/release/cudadiag}
command -v "$bin" >/dev/null || { echo "libcuda-differential: $bin: not found" >&2; exit 2; }
[ $# -gt 0 ] || set -- ""
status=0
for llp in "$@"; do
    for pair in libcuda.so.1:libcuda libnvidia-ml.so.1:nvml; do
        soname=${pair%%:*}
        key=${pair#*:}
        # What glibc picks: dlopen it, then read the real path of the mapped file.
        real=$(env ${llp:+LD_LIBRARY_PATH="$llp"} python3 - "$soname" <<'EOF'
import ctypes, os, sys
name = sys.argv[1]
try:
    ctypes.CDLL(name)
except OSError:
    print("(none)")
    sys.exit()
stem = name.split(".so")[0] + ".so"
for line in open("/proc/self/maps"):
    path = line.split()[-1]
    if os.path.basename(path).startswith(stem):
        print(os.path.realpath(path))
        break
EOF
) || true
        ours=$(env ${llp:+LD_LIBRARY_PATH="$llp"} "$bin" doctor --format json --fail-on never |
            python3 -c 'import json, sys
c = json.load(sys.stdin)["host"]["facts"][sys.argv[1]]
print(c[0]["real_path"] if c else "(none)")' "$key") || true   # a failed reading prints as a difference
        if [ "$real" = "$ours" ]; then verdict=same; else verdict=DIFFERENT; status=1; fi
        echo "$verdict  LD_LIBRARY_PATH=${llp:-(inherited)}  $soname: glibc $real, cudadiag $ours"
    done
done
exit $status
