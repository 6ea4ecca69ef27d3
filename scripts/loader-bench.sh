#!/bin/sh
# Side by side: resolving a library's whole tree with `cudadiag inspect` against `ldd` on the same file.
# Usage: scripts/loader-bench.sh FILE [RUNS]
# Prints the median wall time of each over RUNS runs (default 20). For the DESIGN.md budget, point it at
# libtorch_cuda.so inside a pip layout (site-packages/torch/lib), where its RUNPATH reaches the nvidia/* wheels.
set -eu
file=$1
runs=${2:-20}
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/cudadiag
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_of() {
    i=0
    while [ "$i" -lt "$runs" ]; do
        s=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        e=$(date +%s%N)
        echo $(( (e - s) / 1000 ))
        i=$((i + 1))
    done | median
}
libs=$($bin inspect --format json --fail-on never "$file" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["libraries"]))')
echo "file: $file ($libs library requests)"
echo "ldd:              $(time_of ldd "$file") us (median of $runs)"
echo "cudadiag inspect: $(time_of $bin inspect --fail-on never "$file") us (median of $runs)"
