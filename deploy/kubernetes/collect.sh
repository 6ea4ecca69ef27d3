#!/usr/bin/env bash
# Fetches the DaemonSet's latest snapshot from every pod (one file per node) and runs `cudadiag fleet`.
# Usage: deploy/kubernetes/collect.sh OUTDIR [cudadiag fleet options...]   (kubectl and cudadiag on the PATH)
set -euo pipefail
out=${1:?usage: collect.sh OUTDIR [fleet options...]}; shift
mkdir -p "$out"
kubectl -n cudadiag get pods -l app.kubernetes.io/name=cudadiag \
  -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' |
while read -r pod node; do
  [ -n "$pod" ] || continue
  kubectl -n cudadiag exec "$pod" -c cudadiag -- cat /reports/snapshot.json > "$out/$node.json" ||
    { echo "collect: no snapshot from $node ($pod) yet" >&2; rm -f "$out/$node.json"; }
done
cudadiag fleet "$out" "$@"
