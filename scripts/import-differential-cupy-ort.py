#!/usr/bin/env python3
"""Compare `cudadiag import cupy` / `cudadiag import onnxruntime` with the real process.

Runs `cudadiag import MODULE --venv DIR --format json`, then the venv's own interpreter with `import MODULE`
and (with --first-use) what the model calls the first GPU use:

  cupy         an NVRTC-compiled kernel (`cupy.arange(3).sum()`) and a cuBLAS call (`cupy.ones((2, 2)) @ ...`);
               without a GPU, only NVRTC and the cuBLAS module are loaded (`nvrtc.getVersion()`, the
               `cupy_backends.cuda.libs.cublas` import), which need no driver
  onnxruntime  `onnxruntime.preload_dlls()` when --preload, then an InferenceSession with the CUDA provider on
               a one-node model written here (Identity), the provider's load error caught

and reads the shared objects the process maps (/proc/self/maps). Both sides are compared by real path:
predicted and mapped, predicted but not mapped, mapped but not predicted (the interpreter's own modules and
numpy's, which no framework model covers, are counted apart). The real outcome's error text, when there is
one, is printed beside the predicted one.

Exit status: 0 when every predicted CUDA or framework library is mapped and every mapped one is predicted,
1 otherwise, 2 on a usage error. Nothing here needs a GPU; on one, run with --first-use --gpu.
"""

import argparse
import json
import os
import subprocess
import sys

PROBE = r"""
import json, sys, traceback
module, first, gpu, preload = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4] == "1"
error = None
try:
    if module == "cupy":
        import cupy
        if first and gpu:
            cupy.arange(3).sum()
            (cupy.ones((2, 2)) @ cupy.ones((2, 2))).get()
        elif first:
            from cupy_backends.cuda.libs import nvrtc
            nvrtc.getVersion()
            from cupy_backends.cuda.libs import cublas
    else:
        import onnxruntime
        if first:
            if preload:
                onnxruntime.preload_dlls()
            s = onnxruntime.InferenceSession(sys.argv[5], providers=["CUDAExecutionProvider"])
            if "CUDAExecutionProvider" not in s.get_providers():
                error = "CPU fall-back: " + repr(s.get_providers())
except BaseException as e:
    error = "%s: %s" % (type(e).__name__, e)
maps = set()
with open("/proc/self/maps") as f:
    for line in f:
        parts = line.split(None, 5)
        if len(parts) == 6 and ".so" in parts[5]:
            maps.add(parts[5].strip())
print(json.dumps({"maps": sorted(maps), "error": error}))
"""


def onnx_model(path):
    """A one-node ONNX model (Identity of a float[1]), written with protobuf's wire format by hand."""

    def varint(n):
        out = b""
        while True:
            b, n = n & 0x7F, n >> 7
            if n:
                out += bytes([b | 0x80])
            else:
                return out + bytes([b])

    def field(num, wire, payload):
        key = varint((num << 3) | wire)
        return key + (varint(payload) if wire == 0 else varint(len(payload)) + payload)

    def text(num, s):
        return field(num, 2, s.encode())

    def value(name):
        shape = field(2, 2, field(1, 2, field(1, 0, 1)))
        return text(1, name) + field(2, 2, field(1, 2, field(1, 0, 1) + shape))

    node = text(1, "x") + text(2, "y") + text(4, "Identity")
    graph = field(1, 2, node) + text(2, "g") + field(11, 2, value("x")) + field(12, 2, value("y"))
    model = field(1, 0, 8) + field(8, 2, text(1, "") + field(2, 0, 13)) + field(7, 2, graph)
    with open(path, "wb") as f:
        f.write(model)


def ours(p):
    """A library a framework model covers: CUDA's, the NVIDIA wheels', the framework's own (numpy's and the
    interpreter's own modules are not)."""
    site = ("/site-packages/nvidia/", "/site-packages/cupy/", "/site-packages/cupy_backends/", "/site-packages/onnxruntime/")
    name = os.path.basename(p)
    return any(k in p for k in site) or name.startswith(("libcuda.", "libnvidia-", "libcublas", "libnvrtc", "libcudnn"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module", choices=["cupy", "onnxruntime"])
    ap.add_argument("--venv", required=True)
    ap.add_argument("--cudadiag", default="cudadiag")
    ap.add_argument("--first-use", action="store_true")
    ap.add_argument("--gpu", action="store_true", help="the machine has a GPU: run a real kernel")
    ap.add_argument("--preload", action="store_true", help="onnxruntime: call preload_dlls() first")
    a = ap.parse_args()
    model = os.path.join(os.environ.get("TMPDIR", "/tmp"), "cudadiag-identity.onnx")
    onnx_model(model)
    py = os.path.join(a.venv, "bin", "python3")
    argv = [py, "-c", PROBE, a.module, str(int(a.first_use)), str(int(a.gpu)), str(int(a.preload)), model]
    real = subprocess.run(argv, capture_output=True, text=True, check=False)
    try:
        truth = json.loads(real.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        print("the probe printed nothing usable:", real.stderr[-2000:], file=sys.stderr)
        return 2
    module = "onnxruntime.preload_dlls" if a.module == "onnxruntime" and a.preload else a.module
    out = subprocess.run(
        [a.cudadiag, "import", module, "--venv", a.venv, "--format", "json"], capture_output=True, text=True
    )
    doc = json.loads(out.stdout)
    stage = lambda l: a.first_use or l.get("when") == "import"
    # Without a GPU no kernel is compiled: NVRTC's builtins, which it opens at its first compilation, are left
    # out of the prediction compared.
    compiled = lambda l: a.gpu or "libnvrtc-builtins" not in l["realpath"]
    predicted = {
        os.path.realpath(l["realpath"]) for l in doc["loaded"] if stage(l) and compiled(l) and ours(l["realpath"])
    }
    mapped = {os.path.realpath(p) for p in truth["maps"] if ours(p)}
    both, only_p, only_m = predicted & mapped, predicted - mapped, mapped - predicted
    print(f"{a.module} {a.venv}: predicted and mapped {len(both)}")
    for p in sorted(only_p):
        print("  predicted, not mapped:", p)
    for p in sorted(only_m):
        print("  mapped, not predicted:", p)
    imp = next((i for i in doc["imports"] if i["module"] == module), {})
    step = (imp.get("first_use") if a.first_use else imp.get("import")) or {}
    print("  real outcome:     ", truth["error"] or "works")
    print("  predicted outcome:", json.dumps(step.get("outcome")))
    return 0 if not only_p and not only_m else 1


if __name__ == "__main__":
    sys.exit(main())
