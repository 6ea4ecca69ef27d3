#!/bin/sh
# Runs the loader differential over every ELF file of this machine and prints the agreement figure.
# Usage: scripts/loader-differential.sh [DIR ...]
set -e
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec python3 scripts/loader-differential.py --cudadiag target/release/cudadiag "$@"
