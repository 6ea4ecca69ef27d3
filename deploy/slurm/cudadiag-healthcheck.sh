#!/usr/bin/env bash
# Slurm HealthCheckProgram: drains a node whose CUDA set-up is broken, and resumes it once it is fixed.
#
# slurm.conf:
#   HealthCheckProgram=/etc/slurm/cudadiag-healthcheck.sh
#   HealthCheckInterval=300
#   HealthCheckNodeState=ANY
# slurmd runs the program at start and every HealthCheckInterval seconds, as root, and ignores its exit
# status: a health check drains a node itself, with scontrol (as LBNL NHC does). This one runs
# `cudadiag doctor --no-catalog`; on exit status 1 (an error finding) it drains the node with the reason
# "cudadiag: <slugs>" (`sinfo -R` shows it); on 0 it resumes the node only if cudadiag drained it (a reason
# starting with "cudadiag:"), never a node an operator drained. Exit status 2 (cudadiag itself failed) changes
# nothing and is logged. The program exits with cudadiag's status, for a person running it by hand.
#
# Settings: as deploy/slurm/cudadiag-prolog.sh (/etc/default/cudadiag: CUDADIAG, CUDADIAG_ARGS, CUDADIAG_LOG).
set -uo pipefail
# Runs doctor: sets $node, $report and $rc (cudadiag-common.sh, installed beside this script).
# shellcheck source-path=SCRIPTDIR source=cudadiag-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/cudadiag-common.sh"
scontrol=${SCONTROL:-scontrol}
case $rc in
  0) if "$scontrol" show node "$node" | grep -q 'Reason=cudadiag:'; then
       "$scontrol" update NodeName="$node" State=RESUME
     fi ;;
  1) slugs=$(grep -o '"slug": "[^"]*"' "$report" | cut -d'"' -f4 | sort -u | paste -sd, -)
     "$scontrol" update NodeName="$node" State=DRAIN Reason="cudadiag: ${slugs:-error}" ;;
  *) logger -t cudadiag "could not check $node (exit $rc): $(head -c 300 "$report")" 2>/dev/null || true ;;
esac
exit "$rc"
