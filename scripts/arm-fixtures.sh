#!/usr/bin/env bash
# Real aarch64 inputs from PyPI, checked on any machine (issue 23): the static cudart version read from AArch64
# code, and no library-not-found for the system libraries of an aarch64 binary on a machine of another
# architecture. Nothing is committed: the wheels are downloaded to a scratch directory.
# Usage: scripts/arm-fixtures.sh   (builds the release binary unless CUDADIAG_BIN names one; ARM_DIR keeps the
# downloads between runs; needs pip, unzip and python3; exits 1 on a mismatch)
#   - nvidia-cuda-runtime-cu12 (aarch64, ~3.5 MB): libcudart.so.12's version must be the package's major.minor.
#   - cupy-cuda12x 14.2.0 (aarch64, ~150 MB; skipped with ARM_SMALL=1): cupy/cuda/cub's static cudart is 12.9,
#     every file gets one foreign-architecture note on a non-aarch64 machine, none gets library-not-found, and
#     `--gpu 9.0 --driver 470.82.01` on cub gives driver-insufficient; and every file's fatbin listing equals
#     cuobjdump's (`-lelf -lptx`, plain and -all, entry by entry: scripts/compare-cuobjdump.py) and every entry's
#     header equals plain cuobjdump's (scripts/compare_cuobjdump_headers.py), with the cuobjdump of the
#     nvidia-cuda-cuobjdump wheel for this machine (or $CUOBJDUMP), which reads aarch64 files.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${CUDADIAG_BIN:-}" ]; then bin=$CUDADIAG_BIN; else cargo build --release --quiet; bin=$PWD/target/release/cudadiag; fi
d=${ARM_DIR:-$(mktemp -d)}; [ -z "${ARM_DIR:-}" ] && trap 'rm -rf "$d"' EXIT
fetch() { # fetch SPEC: the aarch64 wheel of SPEC, once
  pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_aarch64 --python-version 3.11 "$1" -d "$d/wheels"
}
fail=0
check() { # check WHAT EXPECTED GOT
  if [ "$2" = "$3" ]; then echo "ok    $1: $3"; else echo "FAIL  $1: expected $2, got $3"; fail=1; fi
}

fetch nvidia-cuda-runtime-cu12
whl=$(ls "$d"/wheels/nvidia_cuda_runtime_cu12-*aarch64*.whl | head -1)
pkg=$(basename "$whl" | cut -d- -f2)            # 12.9.79
rm -rf "$d/rt"; unzip -q -o "$whl" -d "$d/rt"
lib=$(find "$d/rt" -name 'libcudart.so.12*' | head -1)
got=$("$bin" inspect --format json --no-libraries "$lib" | python3 -c 'import json,sys; print(json.load(sys.stdin)["binaries"][0]["cudart"]["version"])')
check "nvidia-cuda-runtime-cu12 $pkg libcudart.so.12 runtime version" "$(echo "$pkg" | cut -d. -f1-2)" "$got"

if [ -z "${ARM_SMALL:-}" ]; then
  fetch cupy-cuda12x==14.2.0
  whl=$(ls "$d"/wheels/cupy_cuda12x-14.2.0-*aarch64*.whl | head -1)
  rm -rf "$d/cupy"; unzip -q -o "$whl" -d "$d/cupy"
  mapfile -t files < <(find "$d/cupy" -name '*.so*' | sort)
  "$bin" inspect --format json "${files[@]}" > "$d/cupy.json" || true
  read -r n cub notes missing < <(python3 - "$d/cupy.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cub = next((b["cudart"]["version"] for b in d["binaries"] if "/cupy/cuda/cub." in b["path"]), None)
slugs = [f["slug"] for f in d["findings"]]
print(len(d["binaries"]), cub, slugs.count("foreign-architecture"), slugs.count("library-not-found"))
PY
)
  check "cupy-cuda12x 14.2.0 cub static cudart" "12.9" "$cub"
  if [ "$(uname -m)" != aarch64 ]; then
    check "cupy-cuda12x 14.2.0 foreign-architecture notes ($n files)" "$n" "$notes"
    check "cupy-cuda12x 14.2.0 library-not-found" "0" "$missing"
  fi
  cub_so=$(printf '%s\n' "${files[@]}" | grep '/cupy/cuda/cub\.' | head -1)
  got=$("$bin" inspect --format json --gpu 9.0 --driver 470.82.01 "$cub_so" | python3 -c 'import json,sys; print("driver-insufficient" in [f["slug"] for f in json.load(sys.stdin)["findings"]])') || true
  check "cub with --gpu 9.0 --driver 470.82.01 gives driver-insufficient" "True" "$got"
  cuobjdump=${CUOBJDUMP:-}
  if [ -z "$cuobjdump" ]; then
    pip download --quiet --no-deps --only-binary=:all: nvidia-cuda-cuobjdump -d "$d/cuobjdump-wheel"
    rm -rf "$d/cuobjdump"; unzip -q -o "$(ls "$d"/cuobjdump-wheel/nvidia_cuda_cuobjdump-*.whl | head -1)" -d "$d/cuobjdump"
    cuobjdump=$(find "$d/cuobjdump" -name cuobjdump -type f | head -1)
    chmod +x "$cuobjdump"
  fi
  "$cuobjdump" --version | grep -m1 release || true
  if python3 scripts/compare-cuobjdump.py --cudadiag "$bin" --cuobjdump "$cuobjdump" "$d/cupy" > "$d/cuobjdump.txt"; then rc=0; else rc=$?; fi
  grep -v '^agree' "$d/cuobjdump.txt" | sed 's/^/      /'
  summary=$(grep '^# files:' "$d/cuobjdump.txt" | tail -1)
  check "cupy-cuda12x 14.2.0 listings against cuobjdump (${summary#\# })" "0" "$rc"
  if python3 scripts/compare_cuobjdump_headers.py --cudadiag "$bin" --cuobjdump "$cuobjdump" "$d/cupy" > "$d/headers.txt"; then rc=0; else rc=$?; fi
  grep -v '^#' "$d/headers.txt" | sed 's/^/      /' || true
  summary=$(grep '^# headers:' "$d/headers.txt" | tail -1)
  check "cupy-cuda12x 14.2.0 entry headers against plain cuobjdump (${summary#\# })" "0" "$rc"
fi
exit $fail
