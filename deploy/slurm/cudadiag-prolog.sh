#!/usr/bin/env bash
# Slurm Prolog: refuses a node whose CUDA set-up would fail every job before the job starts.
#
# slurm.conf:
#   Prolog=/etc/slurm/cudadiag-prolog.sh
#   PrologFlags=Alloc              # run it when the job is allocated, before any step (optional)
# slurmd runs the prolog on each node of a job; a non-zero exit sets the node to DRAIN (reason "Prolog
# error") and requeues the job, so a broken node takes no more jobs until an operator resumes it.
#
# What it runs: `cudadiag doctor --no-catalog`: the driver (module and libraries), GPUs, device nodes and
# environment, without the walk for CUDA libraries (a few milliseconds). Exit status 1 means an error finding
# (driver-library-mismatch, libcuda-not-found, device-nodes-missing, nvidia-uvm-missing, ...): the node fails
# every CUDA job, so the prolog fails. Exit status 2 is cudadiag's own failure (a missing binary, bad
# arguments): that says nothing about the node, so the prolog logs it and lets the job run rather than
# draining the cluster over a deployment mistake.
#
# Settings (optional) in /etc/default/cudadiag (or the file CUDADIAG_CONF names):
#   CUDADIAG=/opt/cudadiag/bin/cudadiag   the binary (default: cudadiag on the PATH, else /usr/local/bin)
#   CUDADIAG_ARGS="--fail-on warning"     more arguments for doctor
#   CUDADIAG_LOG=/var/log/cudadiag        where the last report of each node is kept (default: none kept)
set -uo pipefail
# Runs doctor: sets $node, $report and $rc (cudadiag-common.sh, installed beside this script).
# shellcheck source-path=SCRIPTDIR source=cudadiag-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/cudadiag-common.sh"
case $rc in
  0) exit 0 ;;
  1) slugs=$(grep -o '"slug": "[^"]*"' "$report" | cut -d'"' -f4 | sort -u | paste -sd, -)
     echo "cudadiag: $node fails CUDA jobs: ${slugs:-see its report}" >&2
     exit 1 ;;
  *) echo "cudadiag: could not check $node (exit $rc): $(head -c 300 "$report")" >&2
     exit 0 ;;
esac
