#!/usr/bin/env python3
"""Ground truth for the run-time loads: runs a small PyTorch workload on the GPU (a convolution, an LSTM and a
half-precision matmul, which load cuDNN's sub-libraries, cuBLASLt and NVRTC with dlopen), lists the CUDA
libraries the real process has mapped (/proc/self/maps), and checks each against the tree
`cudadiag inspect` resolves for torch's libtorch_cuda.so: the same real path, or not.

Usage: scripts/dlopen-differential.py PYTHON     (a Python with a CUDA build of torch; needs a GPU)
       CUDADIAG=path/to/cudadiag to use a built binary, no cargo.

Expected differences, printed as such: libraries torch's Python package loads itself by path before
libtorch_cuda.so's own search would (`torch/__init__.py` preloads the nvidia wheels), libraries outside
libtorch_cuda.so's tree (libcusolver, loaded from libtorch_cuda_linalg.so), and the driver's own
components (libnvidia-ptxjitcompiler), which cudadiag does not search.
"""
import json, os, subprocess, sys

# Run by PYTHON: prints torch's __init__.py, then every executable mapping of a CUDA library.
WORKLOAD = '''
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
'''

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    sys.exit(__doc__.split("\n\n")[1])
python = sys.argv[1]
cudadiag = os.environ.get("CUDADIAG")
if not cudadiag:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=repo, check=True)
    cudadiag = os.path.join(repo, "target", "release", "cudadiag")

out = subprocess.run([python, "-"], input=WORKLOAD, stdout=subprocess.PIPE, text=True, check=True).stdout
lines = out.split("\n")
torch_dir = os.path.dirname(lines[0])
report = subprocess.run([cudadiag, "inspect", "--no-device-code", "--format", "json", "--fail-on", "never",
                         os.path.join(torch_dir, "lib", "libtorch_cuda.so")],
                        stdout=subprocess.PIPE, check=True).stdout

maps = sorted({os.path.realpath(p) for p in lines[1:] if p})
tree = {}
for lib in json.loads(report)["libraries"]:
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
