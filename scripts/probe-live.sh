#!/usr/bin/env bash
# scripts/probe-live.sh CUDADIAG [OUTDIR]
#
# Runs the live probe scenarios of issue 6 on a GPU machine and writes, per scenario, the JSON report
# (OUTDIR/<scenario>.json), the human report (<scenario>.txt) and a summary table (OUTDIR/SUMMARY.md):
# scenario, expected CUDA result, observed. Needs the CUDA toolkit in ${CUDA_HOME:-/usr/local/cuda} and a
# checkout with fixtures/cuda13 as the current directory.
set -euo pipefail
# Each scenario records its exit status (`|| rc=$?`) and the run goes on to the next.
bin=$(readlink -f "$1")
out=${2:-probe-live}
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/stub" && ln -s "$cuda/lib64/stubs/libcuda.so" "$work/stub/libcuda.so.1"
printf '.version 9.9\n.target sm_90\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n' > "$work/too_new.ptx"

run() { # name expected args...
    local name=$1 expected=$2
    shift 2
    local rc=0
    "$bin" "$@" --format json --probe-timeout 120 > "$out/$name.json" 2> "$out/$name.stderr" || rc=$?
    echo "exit $rc" >> "$out/$name.stderr"
    "$bin" "$@" --color never --probe-timeout 120 > "$out/$name.txt" 2>&1 || true   # the same run, for reading
    python3 - "$name" "$expected" "$out/$name.json" >> "$out/SUMMARY.md" <<'PY'
import json, sys
name, expected, path = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"| {name} | {expected} | unreadable report: {e} |"); sys.exit()
p = r.get("probe", {})
d = p.get("driver") or {}
init = ((d.get("init") or {}).get("result") or {})
obs = [f"outcome {p.get('outcome')}"]
if d.get("library", {}).get("error"):
    obs.append("libcuda not loaded")
if init:
    obs.append(f"cuInit {init.get('code')} {init.get('name', '')}")
tests = d.get("selftests") or []
if tests:
    obs.append("self-test " + ",".join("pass" if t.get("passed") else "FAIL" for t in tests)
               + " (" + ",".join(t.get("kernel") or "-" for t in tests) + ")")
rt = ((p.get("runtime") or {}).get("get_device_count") or {}).get("result")
if rt:
    obs.append(f"cudaGetDeviceCount {rt.get('code')}")
mods = p.get("modules") or []
if mods:
    # '*': a container without kernels (nvcc 13's device-link stub), which the runtime never loads.
    obs.append("modules " + ",".join(str((m.get("result") or {}).get("code", m.get("error")))
                                     + ("*" if m.get("has_kernels") is False else "") for m in mods))
slugs = sorted({f["slug"] for f in r.get("findings", [])})
print(f"| {name} | {expected} | {'; '.join(obs)} | {', '.join(slugs) or '-'} |")
PY
}

echo "| scenario | expected | observed | findings |" > "$out/SUMMARY.md"
echo "|---|---|---|---|" >> "$out/SUMMARY.md"
run healthy "0, self-test passes" probe
run sm80 "module 209" inspect --probe fixtures/cuda13/sm80
run default "modules 0" inspect --probe fixtures/cuda13/default
run ptx_only "modules 0 (JIT)" inspect --probe fixtures/cuda13/ptx_only
run stub "cuInit 34" probe --env "LD_LIBRARY_PATH=$work/stub"
if [ -e "$cuda/compat/libcuda.so.1" ]; then
    run compat "cuInit 803" probe --env "LD_LIBRARY_PATH=$cuda/compat"
else
    echo "| compat | cuInit 803 | no $cuda/compat/libcuda.so.1 on this machine | - |" >> "$out/SUMMARY.md"
fi
run cvd7 "cuInit 100" probe --env CUDA_VISIBLE_DEVICES=7
run cvd_empty "cuInit 100" probe --env CUDA_VISIBLE_DEVICES=
run ptx99 "module 222" inspect --probe "$work/too_new.ptx"
cat "$out/SUMMARY.md"
