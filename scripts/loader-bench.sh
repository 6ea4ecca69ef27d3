#!/bin/sh
# Side by side: resolving a library's whole tree with cudadiag against `ldd` on the same file.
# Usage: scripts/loader-bench.sh FILE [RUNS]      (CUDADIAG=path/to/cudadiag to use a built binary, no cargo)
# Prints the median wall time of each over RUNS runs (default 20) and the ratios. For the DESIGN.md budget
# ("no slower than ldd"), point it at libtorch_cuda.so inside a pip layout (site-packages/torch/lib), where its
# RUNPATH reaches the nvidia/* wheels. Two ldd rows:
#   ldd            the path of every NEEDED library (no symbol is checked: `undefined symbol` goes unseen);
#   ldd -r         also performs the relocations, which is how ld.so finds a missing (versioned) symbol;
# and two cudadiag rows:
#   loader only    `inspect --no-device-code --no-host`: the tree, its dlopen'ed CUDA libraries, every
#                  versioned symbol checked against its provider, library findings, without reading the
#                  machine's driver and GPUs;
#   full inspect   also lists the device code of the binary and of every library with kernels, for the verdict.
set -eu
file=$1
runs=${2:-20}
cd "$(dirname "$0")/.."
if [ -z "${CUDADIAG:-}" ]; then
    cargo build --release --quiet
    CUDADIAG=target/release/cudadiag
fi
bin=$CUDADIAG
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
libs=$($bin inspect --no-device-code --format json --fail-on never "$file" |
    python3 -c 'import json,sys; l=json.load(sys.stdin)["libraries"]; print(len(l), "requests,", sum(x["dlopen"] for x in l), "of them dlopen")')
echo "file: $file ($libs)"
echo "cpus: $(nproc)"
ldd_us=$(time_of ldd "$file")
lddr_us=$(time_of ldd -r "$file")
loader_us=$(time_of "$bin" inspect --no-device-code --no-host --fail-on never "$file")
full_us=$(time_of "$bin" inspect --fail-on never "$file")
echo "ldd:                       $ldd_us us (median of $runs)"
echo "ldd -r:                    $lddr_us us  ratio to ldd $(awk "BEGIN {printf \"%.2f\", $lddr_us / $ldd_us}")"
echo "cudadiag (loader only):    $loader_us us  ratio to ldd $(awk "BEGIN {printf \"%.2f\", $loader_us / $ldd_us}"), to ldd -r $(awk "BEGIN {printf \"%.2f\", $loader_us / $lddr_us}")"
echo "cudadiag (full inspect):   $full_us us  ratio to ldd $(awk "BEGIN {printf \"%.2f\", $full_us / $ldd_us}")"
