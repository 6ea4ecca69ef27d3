#!/usr/bin/env bash
# scripts/compare-cuobjdump.sh DIR [CUDADIAG] [-- extra options for compare_cuobjdump.py]
#
# Differential test of cudadiag's fatbin listing against cuobjdump: for every ELF file,
# static archive, .cubin and .fatbin under DIR, compares `cuobjdump --list-elf --list-ptx`
# (and the same with -all) with `cudadiag inspect --format json`, entry by entry.  See
# scripts/compare_cuobjdump.py for the rules.  Without cuobjdump it falls back to the golden
# listings fixtures/build.sh wrote next to each fixture (FILE.lelf-lptx.txt).
#
# CUDADIAG defaults to $CUDADIAG, then the newer of the repo's target/{release,debug} builds, then PATH.
# cuobjdump is $CUOBJDUMP, or found on PATH, or in /usr/local/cuda/bin.
# Exit status: 0 all agree, 1 a disagreement, 2 usage / nothing compared.
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
dir=$1
shift
cudadiag=${CUDADIAG:-}
if [ $# -gt 0 ] && [ "$1" != -- ]; then
    cudadiag=$1
    shift
fi
[ "${1:-}" = -- ] && shift
if [ -z "$cudadiag" ]; then
    # the newer of the repo's release and debug builds
    for c in "$repo/target/release/cudadiag" "$repo/target/debug/cudadiag"; do
        if [ -x "$c" ] && { [ -z "$cudadiag" ] || [ "$c" -nt "$cudadiag" ]; }; then cudadiag=$c; fi
    done
fi
cudadiag=${cudadiag:-cudadiag}
cuobjdump=${CUOBJDUMP:-}
if [ -z "$cuobjdump" ]; then
    if command -v cuobjdump >/dev/null 2>&1; then
        cuobjdump=$(command -v cuobjdump)
    elif [ -x /usr/local/cuda/bin/cuobjdump ]; then
        cuobjdump=/usr/local/cuda/bin/cuobjdump
    else
        cuobjdump=cuobjdump   # not found: compare_cuobjdump.py falls back to golden listings
    fi
fi
exec python3 "$here/compare_cuobjdump.py" --cudadiag "$cudadiag" --cuobjdump "$cuobjdump" "$@" "$dir"
