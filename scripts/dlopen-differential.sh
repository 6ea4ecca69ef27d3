#!/usr/bin/env bash
# Ground truth for the run-time loads: runs a small PyTorch workload on the GPU (a convolution, an LSTM and a
# half-precision matmul, which load cuDNN's sub-libraries, cuBLASLt and NVRTC with dlopen), lists the CUDA
# libraries the real process has mapped (/proc/self/maps), and checks each against the tree
# `cudadiag inspect` resolves for torch's libtorch_cuda.so: the same real path, or not.
# Usage: scripts/dlopen-differential.sh PYTHON     (a Python with a CUDA build of torch; needs a GPU)
#        CUDADIAG=path/to/cudadiag to use a built binary, no cargo.
# Expected differences, printed as such: libraries torch's Python package loads itself by path before
# libtorch_cuda.so's own search would (`torch/__init__.py` preloads the nvidia wheels), libraries outside
# libtorch_cuda.so's tree (libcusolver, loaded from libtorch_cuda_linalg.so), and the driver's own
# components (libnvidia-ptxjitcompiler), which cudadiag does not search.
set -euo pipefail
python=$1
cd "$(dirname "$0")/.."
if [ -z "${CUDADIAG:-}" ]; then
    cargo build --release --quiet
    CUDADIAG=target/release/cudadiag
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" - >"$tmp/maps" <<'EOF'
import re, torch
x = torch.randn(4, 3, 64, 64, device="cuda")
torch.nn.Conv2d(3, 8, 3).cuda()(x)
torch.nn.LSTM(8, 8).cuda()(torch.randn(5, 2, 8, device="cuda"))
a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
(a @ a).sum().item()
torch.cuda.synchronize()
print(torch.__file__)
for line in open("/proc/self/maps"):
    f = line.split()
    if len(f) >= 6 and "x" in f[1] and re.match(r"lib(cu|nv|nccl)", f[5].rsplit("/", 1)[-1]):
        print(f[5])
EOF
torch_dir=$(dirname "$(head -1 "$tmp/maps")")
"$CUDADIAG" inspect --no-device-code --format json --fail-on never "$torch_dir/lib/libtorch_cuda.so" >"$tmp/tree.json"
python3 - "$tmp/maps" "$tmp/tree.json" <<'EOF'
import json, os, sys
maps = sorted({os.path.realpath(p) for p in open(sys.argv[1]).read().split("\n")[1:] if p})
tree = {}
for lib in json.load(open(sys.argv[2]))["libraries"]:
    if lib.get("path") and lib["how"] != "not_found":
        tree.setdefault(os.path.realpath(lib["path"]), lib)
by_name = {}
for real, lib in tree.items():
    by_name.setdefault(os.path.basename(real).split(".so")[0], []).append(real)
equal = 0
for real in maps:
    if real in tree:
        equal += 1
        lib = tree[real]
        print(f"equal     {real}  [{'dlopen, ' if lib['dlopen'] else ''}{lib['how']}]")
    elif real.endswith("/libtorch_cuda.so"):
        equal += 1
        print(f"equal     {real}  [the inspected file]")
    else:
        other = by_name.get(os.path.basename(real).split(".so")[0])
        print(f"differs   {real}  (tree: {', '.join(other) if other else 'not in the tree'})")
print(f"{equal} of {len(maps)} mapped CUDA libraries are the ones in the tree")
EOF
