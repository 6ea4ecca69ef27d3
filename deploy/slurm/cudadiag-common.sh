# shellcheck shell=bash
# Sourced, not run: the part deploy/slurm/cudadiag-prolog.sh and cudadiag-healthcheck.sh share. Each sources it
# from its own directory, so install it beside them (/etc/slurm/).
#
# Reads the settings (/etc/default/cudadiag, or the file CUDADIAG_CONF names: CUDADIAG, CUDADIAG_ARGS,
# CUDADIAG_LOG), runs `cudadiag doctor --no-catalog --format json` into a temporary file removed on exit, keeps
# a copy in CUDADIAG_LOG/NODE.json when asked, and leaves for the caller: $node (this node's Slurm name),
# $report (the report's file) and $rc (cudadiag's exit status: 0 no error finding, 1 an error finding,
# 2 cudadiag itself failed).
conf=${CUDADIAG_CONF:-/etc/default/cudadiag}
# shellcheck disable=SC1090
[ -r "$conf" ] && . "$conf"
cudadiag=${CUDADIAG:-$(command -v cudadiag || echo /usr/local/bin/cudadiag)}
node=${SLURMD_NODENAME:-$(hostname -s)}
report=$(mktemp)
trap 'rm -f "$report"' EXIT
# shellcheck disable=SC2086 # CUDADIAG_ARGS is a list of words
"$cudadiag" doctor --no-catalog --format json ${CUDADIAG_ARGS:-} > "$report" 2>&1
# shellcheck disable=SC2034 # rc, node and report are for the script that sources this
rc=$?
if [ -n "${CUDADIAG_LOG:-}" ]; then mkdir -p "$CUDADIAG_LOG" && cp "$report" "$CUDADIAG_LOG/$node.json"; fi
