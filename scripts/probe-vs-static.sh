#!/usr/bin/env bash
# Usage: scripts/probe-vs-static.sh [CUDADIAG] [OUTDIR], on a GPU machine from the checkout root: for each scenario
# (healthy, sm_80-only binary, stub libcuda first, compat libcuda first, CUDA_VISIBLE_DEVICES=7, PTX ISA 9.9) takes a
# snapshot under that environment, then `inspect --facts SNAPSHOT --probe` and prints the static findings and
# whether the live probe confirmed them ("confirmed by the live probe") or not (probe-disagrees).
# Static prediction vs live probe, with this machine's host facts taken by snapshot under the same environment.
set -euo pipefail
# Each scenario records its exit status (`|| rc=$?`) and the run goes on to the next.
B=$(readlink -f "${1:-target/release/cudadiag}")
O=${2:-probe-vs-static}; mkdir -p "$O"
W=$(mktemp -d)
mkdir -p "$W/stub" && ln -s /usr/local/cuda/lib64/stubs/libcuda.so "$W/stub/libcuda.so.1"
printf '.version 9.9\n.target sm_90\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n' > "$W/too_new.ptx"
scen() { # name env-assignments binary
  local name=$1 envs=$2 bin=$3 rc=0
  # $envs is split on purpose: one word per assignment.
  # shellcheck disable=SC2086
  env $envs "$B" snapshot -o "$W/$name.json" >/dev/null 2>&1 || true   # a failed snapshot shows in inspect's output
  # shellcheck disable=SC2086
  env $envs "$B" inspect --color never --facts "$W/$name.json" --probe "$bin" > "$O/$name.txt" 2>&1 || rc=$?
  echo "## $name ($envs $bin): exit $rc"
  grep -E "^(error|warning|note)\[|confirmed by the live probe|probe-disagrees" "$O/$name.txt" | cut -c1-200 | head -8 || true
}
scen healthy "X=1" fixtures/cuda13/multi
scen sm80 "X=1" fixtures/cuda13/sm80
scen stub "LD_LIBRARY_PATH=$W/stub:${LD_LIBRARY_PATH:-}" fixtures/cuda13/multi
scen compat "LD_LIBRARY_PATH=/usr/local/cuda/compat:${LD_LIBRARY_PATH:-}" fixtures/cuda13/multi
scen cvd7 "CUDA_VISIBLE_DEVICES=7" fixtures/cuda13/multi
scen ptx99 "X=1" "$W/too_new.ptx"
