#!/usr/bin/env bash
# Collects one cudadiag snapshot per node with srun, then groups them with `cudadiag fleet`.
#
# Usage (from a login node, inside an allocation or as a batch job):
#   deploy/slurm/collect.sh OUTDIR [srun options...]
#   sbatch --nodes=64 --ntasks-per-node=1 --time=5 deploy/slurm/collect.sh /shared/cudadiag/$(date +%F)
# Environment: CUDADIAG (the cudadiag binary on the nodes; default: `cudadiag` on the PATH),
#              CUDADIAG_ARGS (more arguments for `snapshot`, e.g. `--no-catalog`).
#
# Each node writes OUTDIR/<node>.json: srun expands %N in --output to the node's short host name, one file per
# node, and `snapshot -o -` writes to standard output. OUTDIR must be on a file system the nodes share. The
# snapshot needs no GPU, no root and no install beyond the one binary, and exits 0 whatever it finds, so a
# broken node still reports.
set -euo pipefail
out=${1:?usage: collect.sh OUTDIR [srun options...]}; shift
cudadiag=${CUDADIAG:-cudadiag}
mkdir -p "$out"
nodes=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
# shellcheck disable=SC2086 # CUDADIAG_ARGS is a list of words
srun --nodes="$nodes" --ntasks-per-node=1 --output="$out/%N.json" --error="$out/%N.err" "$@" \
  "$cudadiag" snapshot -o - ${CUDADIAG_ARGS:-}
# Empty error files are noise; a non-empty one says why a node wrote no snapshot.
find "$out" -name '*.err' -empty -delete
# The fleet view: exit 1 when a node has an error finding (the batch job shows it as failed).
"$cudadiag" fleet "$out"
