#!/usr/bin/env bash
# scripts/bench-inspect.sh FILE [CUDADIAG] [-- extra options for bench_inspect.py, e.g. --runs 9]
#
# Wall time and peak RSS, median of N runs (default 5; RUNS=N or --runs N), of
# `cuobjdump --list-elf --list-ptx FILE` against `cudadiag inspect --format json FILE`, and
# the ratios.  Measured in python3 (os.wait4 per child), so /usr/bin/time is not needed.
# CUDADIAG defaults to $CUDADIAG, then the newer of the repo's target/{release,debug} builds,
# then PATH; cuobjdump is $CUOBJDUMP, PATH, or /usr/local/cuda/bin/cuobjdump.
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
file=$1
shift
cudadiag=${CUDADIAG:-}
if [ $# -gt 0 ] && [ "$1" != -- ]; then
    cudadiag=$1
    shift
fi
[ "${1:-}" = -- ] && shift
if [ -z "$cudadiag" ]; then
    for c in "$repo/target/release/cudadiag" "$repo/target/debug/cudadiag"; do
        if [ -x "$c" ] && { [ -z "$cudadiag" ] || [ "$c" -nt "$cudadiag" ]; }; then cudadiag=$c; fi
    done
fi
cudadiag=${cudadiag:-cudadiag}
cuobjdump=${CUOBJDUMP:-}
if [ -z "$cuobjdump" ]; then
    if command -v cuobjdump >/dev/null 2>&1; then
        cuobjdump=$(command -v cuobjdump)
    else
        cuobjdump=/usr/local/cuda/bin/cuobjdump
    fi
fi
exec python3 "$here/bench_inspect.py" --cudadiag "$cudadiag" --cuobjdump "$cuobjdump" "$@" "$file"
