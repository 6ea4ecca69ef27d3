#!/usr/bin/env bash
# Wall time of `cudadiag doctor` (library catalogue included) on a synthetic host with three toolkits and two
# Python environments, each about the size of a real one in files and directories.
# Usage: scripts/bench-doctor.sh [RUNS]   (builds the release binary unless CUDADIAG_BIN names one; BENCH_DIR
# keeps the generated host; prints median and max wall ms)
# Budget (the project's performance budget, see BENCHMARKS.md): under 100 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
if [ -n "${CUDADIAG_BIN:-}" ]; then bin=$CUDADIAG_BIN; else cargo build --release --quiet; bin=target/release/cudadiag; fi
t=${BENCH_DIR:-$(mktemp -d)}; [ -z "${BENCH_DIR:-}" ] && trap 'rm -rf "$t"' EXIT; rm -rf "$t/root"; mkdir -p "$t"
R=$t/root
cp -a fixtures/hosts/healthy/root "$R"

fake() { mkdir -p "$(dirname "$1")"; printf 'fake\n' > "$1"; }
# Three toolkits: ~90 libraries with their links, 600 headers, docs and nsight trees the walk must skip.
for v in 11.8:11.8.89 12.4:12.4.127 12.8:12.8.90; do
  ver=${v%%:*}; rt=${v##*:}; tk=$R/usr/local/cuda-$ver; lib=$tk/targets/x86_64-linux/lib
  mkdir -p "$lib/stubs" "$tk/include" "$tk/nsight-compute-2024/docs" "$tk/compat" "$tk/extras/CUPTI/lib64" "$tk/nvvm/lib64"
  printf '{"cuda":{"version":"%s.0"},"cuda_cudart":{"version":"%s"}}\n' "$ver" "$rt" > "$tk/version.json"
  for n in cudart cublas cublasLt cufft cufftw curand cusolver cusolverMg cusparse nvrtc nvrtc-builtins nvJitLink \
           nppc nppial nppicc nppidei nppif nppig nppim nppist nppisu nppitc npps nvjpeg cufile cufile_rdma; do
    fake "$lib/lib$n.so.$rt"; ln -sf "lib$n.so.$rt" "$lib/lib$n.so.${ver%%.*}"; ln -sf "lib$n.so.${ver%%.*}" "$lib/lib$n.so"
    fake "$lib/lib${n}_static.a"
  done
  for i in $(seq 1 40); do fake "$lib/libother$i.so"; done
  fake "$lib/stubs/libcuda.so"; fake "$lib/stubs/libnvidia-ml.so"; fake "$tk/extras/CUPTI/lib64/libcupti.so.$rt"; fake "$tk/nvvm/lib64/libnvvm.so.4.0.0"
  fake "$tk/compat/libcuda.so.550.54.15"; ln -sf libcuda.so.550.54.15 "$tk/compat/libcuda.so.1"
  for i in $(seq 1 600); do printf '#pragma once\n' > "$tk/include/h$i.h"; done
  for i in $(seq 1 300); do printf 'doc\n' > "$tk/nsight-compute-2024/docs/p$i.html"; done
  ln -sfn "targets/x86_64-linux/lib" "$tk/lib64"
done
# Two Python environments (a venv and a conda env), each with 300 unrelated distributions and CUDA wheels.
pyenv() { # site-packages
  local s=$1
  for i in $(seq 1 300); do mkdir -p "$s/pkg$i/sub" "$s/pkg$i-1.0.dist-info"; printf 'x\n' > "$s/pkg$i/__init__.py"; printf 'pkg%s/__init__.py,,\n' "$i" > "$s/pkg$i-1.0.dist-info/RECORD"; done
  for c in cuda_runtime:cudart:12 cublas:cublas:12 cudnn:cudnn:9 nccl:nccl:2 cusparse:cusparse:12 nvjitlink:nvJitLink:12 cufft:cufft:11; do
    IFS=: read -r dir lib maj <<<"$c"
    fake "$s/nvidia/$dir/lib/lib$lib.so.$maj"
    printf 'nvidia/%s/lib/lib%s.so.%s,,\n' "$dir" "$lib" "$maj" > /dev/null
    mkdir -p "$s/nvidia_${dir}_cu12-12.8.1.dist-info"; printf 'nvidia/%s/lib/lib%s.so.%s,sha256=x,1\n' "$dir" "$lib" "$maj" > "$s/nvidia_${dir}_cu12-12.8.1.dist-info/RECORD"
  done
  mkdir -p "$s/torch/lib" "$s/torch-2.7.0.dist-info"; fake "$s/torch/lib/libtorch_cuda.so"; fake "$s/torch/lib/libcudart-9335f6a2.so.12"
  printf 'torch/lib/libcudart-9335f6a2.so.12,,\n' > "$s/torch-2.7.0.dist-info/RECORD"
}
pyenv "$R/root/.venv/lib/python3.12/site-packages"
C=$R/opt/conda/envs/ml; mkdir -p "$C/conda-meta" "$C/lib"
pyenv "$C/lib/python3.11/site-packages"
for i in $(seq 1 200); do printf '{"name":"p%s","version":"1","files":[]}\n' "$i" > "$C/conda-meta/p$i-1-0.json"; fake "$C/lib/libp$i.so"; done
fake "$C/lib/libcudart.so.12.6.77"; printf '{"name":"cuda-cudart","version":"12.6.77","files":["lib/libcudart.so.12.6.77"]}\n' > "$C/conda-meta/cuda-cudart-12.6.77-0.json"

files=$(find "$R" | wc -l)
args=(doctor --root "$R" --clear-env --env PATH=/usr/local/cuda/bin:/usr/bin --env HOME=/root \
      --env VIRTUAL_ENV=/root/.venv --env CONDA_PREFIX=/opt/conda/envs/ml --env LD_LIBRARY_PATH=/usr/local/cuda/lib64 \
      --format json)
"$bin" "${args[@]}" > "$t/report.json" || true
libs=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["host"]["facts"]["libraries"]))' "$t/report.json")
ms=()
for _ in $(seq 1 "$runs"); do
  s=$(date +%s%N); "$bin" "${args[@]}" > /dev/null || true; e=$(date +%s%N)
  ms+=($(( (e - s) / 1000 )))
done
mapfile -t sorted < <(printf '%s\n' "${ms[@]}" | sort -n)
med=${sorted[$(( runs / 2 ))]}; max=${sorted[$(( runs - 1 ))]}
printf 'doctor on %s files (3 toolkits, 2 Python envs, %s library paths catalogued), %s runs: median %d.%03d ms, max %d.%03d ms (budget 100 ms)\n' \
  "$files" "$libs" "$runs" $((med / 1000)) $((med % 1000)) $((max / 1000)) $((max % 1000))
