#!/usr/bin/env bash
# Usage: scripts/verdicts-live.sh CUDADIAG OUTDIR   (on a GPU machine with a CUDA toolkit; CUDA=/usr/local/cuda)
#
# Issue 21's scenarios, each judged three ways: cudadiag's static prediction (`inspect --format json`: the
# verdict and the finding slugs), the live probe (`inspect --probe --format json`: probe-* findings and
# "confirmed by the live probe" lines), and what a real CUDA program built here with nvcc printed and its exit
# code. Prints one markdown table; every raw output is kept in OUTDIR.
#
# Scenarios:
#   healthy        SASS for this GPU, nothing in the way
#   stub-copy      the toolkit's real stub (targets/<arch>/lib/stubs/libcuda.so) copied as libcuda.so.1 into an
#                  application directory on LD_LIBRARY_PATH (no `stubs` in its path)      -> expect stub-libcuda, 34
#   ptx-jit        PTX only for this GPU, JIT allowed                                     -> runs after JIT
#   ptx-nojit-warm PTX only, CUDA_DISABLE_PTX_JIT=1, CUDA_CACHE_PATH filled by an earlier run of the program
#                                                                                         -> ptx-jit-cache-only, runs
#   ptx-nojit-cold PTX only, CUDA_DISABLE_PTX_JIT=1, CUDA_CACHE_PATH an empty directory  -> ptx-jit-disabled, fails
#
# Nothing outside OUTDIR is written (the JIT caches used live there too).
set -euo pipefail
# Each run records its exit status (`|| rc=$?`) for the table and the run goes on.

usage() { sed -n '2,3p' "$0" | sed 's/^# //' >&2; exit 2; }
[ $# -eq 2 ] || usage
B=$(readlink -f "$1") || usage
[ -x "$B" ] || { echo "not an executable: $1" >&2; exit 2; }
O=$(mkdir -p "$2" && readlink -f "$2") || { echo "cannot create $2" >&2; exit 2; }
CUDA=${CUDA:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
[ -x "$NVCC" ] || { echo "no nvcc at $NVCC (set CUDA=)" >&2; exit 2; }
ARCH=$(uname -m)-linux
[ "$ARCH" = aarch64-linux ] && ARCH=sbsa-linux
STUB=$CUDA/targets/$ARCH/lib/stubs/libcuda.so
[ -f "$STUB" ] || STUB=$CUDA/lib64/stubs/libcuda.so
[ -f "$STUB" ] || { echo "no stub libcuda.so under $CUDA" >&2; exit 2; }
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .') || CC=
[ -n "$CC" ] || { echo "nvidia-smi gave no compute capability" >&2; exit 2; }

# The program: initialise, launch one kernel, check its result; prints the CUDA error and exits 1 on failure.
cat > "$O/app.cu" <<'EOF'
#include <cstdio>
__global__ void k(int *p) { *p = 42; }
int main() {
  int *d = nullptr, h = 0;
  cudaError_t e = cudaMalloc(&d, sizeof(int));
  if (e == cudaSuccess) { k<<<1, 1>>>(d); e = cudaGetLastError(); }
  if (e == cudaSuccess) e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) { printf("CUDA error %d: %s\n", (int)e, cudaGetErrorString(e)); return 1; }
  printf("ok: kernel wrote %d\n", h);
  return h == 42 ? 0 : 1;
}
EOF
"$NVCC" -o "$O/app_sass" -gencode "arch=compute_$CC,code=sm_$CC" "$O/app.cu" > "$O/build.log" 2>&1 &&
  "$NVCC" -o "$O/app_ptx" -gencode "arch=compute_$CC,code=compute_$CC" "$O/app.cu" >> "$O/build.log" 2>&1 ||
  { echo "nvcc failed; see $O/build.log" >&2; cat "$O/build.log" >&2; exit 2; }

mkdir -p "$O/app-lib" "$O/cache-warm" "$O/cache-cold" "$O/cache-jit"
cp "$STUB" "$O/app-lib/libcuda.so.1"
rm -rf "$O/cache-warm/"* "$O/cache-cold/"* "$O/cache-jit/"*

# Summaries of cudadiag's JSON (python3 when there is one, else grep).
summary() { # FILE -> "outcome: slugs"
  if command -v python3 >/dev/null; then
    python3 - "$1" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"(no JSON: {e})"); sys.exit()
out = ",".join(sorted({v.get("outcome", "?") for v in r.get("verdicts", [])})) or "-"
slugs = []
for f in r.get("findings", []):
    s = f["slug"]
    if any("confirmed by the live probe" in e or e.startswith("confirmed by") for e in f.get("evidence", [])):
        s += " (confirmed)"
    slugs.append(s)
print(f"{out}: {', '.join(slugs) or 'no findings'}")
PY
  else
    printf '%s: %s\n' "$(grep -o '"outcome": *"[^"]*"' "$1" | head -1 | cut -d'"' -f4)" \
      "$(grep -o '"slug": *"[^"]*"' "$1" | cut -d'"' -f4 | paste -sd, -)"
  fi
}

ROWS=()
scen() { # NAME BINARY ENV...
  local name=$1 bin=$2; shift 2
  local src=0 prc=0 rc=0
  env "$@" "$B" inspect --color never --format json "$bin" > "$O/$name.static.json" 2> "$O/$name.static.err" || src=$?
  env "$@" "$B" inspect --color never --format json --probe "$bin" > "$O/$name.probe.json" 2> "$O/$name.probe.err" || prc=$?
  env "$@" "$bin" > "$O/$name.run.txt" 2>&1 || rc=$?
  local ran; ran=$(tail -1 "$O/$name.run.txt" | tr '|' '/' | cut -c1-90)
  ROWS+=("| $name | \`$*\` | $(summary "$O/$name.static.json") (exit $src) | $(summary "$O/$name.probe.json") (exit $prc) | $ran (exit $rc) |")
}

scen healthy "$O/app_sass" CUDADIAG_SCENARIO=healthy
scen stub-copy "$O/app_sass" LD_LIBRARY_PATH="$O/app-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
scen ptx-jit "$O/app_ptx" CUDA_CACHE_PATH="$O/cache-jit"
# Fill the warm cache with one JIT run, then forbid the JIT.
env CUDA_CACHE_PATH="$O/cache-warm" "$O/app_ptx" > "$O/cache-warm.fill.txt" 2>&1 || true   # ptx-jit shows a failure
scen ptx-nojit-warm "$O/app_ptx" CUDA_DISABLE_PTX_JIT=1 CUDA_CACHE_PATH="$O/cache-warm"
scen ptx-nojit-cold "$O/app_ptx" CUDA_DISABLE_PTX_JIT=1 CUDA_CACHE_PATH="$O/cache-cold"

{
  echo "cudadiag: $("$B" --version 2>/dev/null | head -1)"
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | head -1)"
  echo "toolkit: $("$NVCC" --version | tail -1); stub: $STUB ($(stat -c %s "$STUB") bytes)"
  echo "warm cache: $(find "$O/cache-warm" -type f | wc -l) files after one JIT run; cold cache: empty"
  echo
  echo "| scenario | environment | static prediction | probe | real program |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
} | tee "$O/table.md"
