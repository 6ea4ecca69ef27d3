#!/usr/bin/env python3
"""Compare `cudadiag import jax|tensorflow [torch first]` with the real process, on a real venv.

Runs `cudadiag import MODULE --venv DIR --format json` (with any --env KEY=VALUE given), then the venv's own
interpreter: `import MODULE` and its first backend use (`jax.devices()`, `tf.config.list_physical_devices()`;
with --gpu-work also a matmul and a convolution), reading /proc/self/maps. The CUDA side of both (paths with
nvidia, cuda, cudnn, cublas, jax_plugins, jax_cuda or libtensorflow in them) is compared by real path.

Without a GPU the real process stops where the framework falls back (JAX's version check, TensorFlow's
cuInit), and so does the prediction: run it with `--gpu 9.0`, the GPU the prediction assumes, which the real
process does not see. On a GPU machine leave --gpu out and add --gpu-work. Exit status 0 when both sets are equal, 1 otherwise, 2 on a usage error.
"""

import argparse
import json
import os
import re
import subprocess
import sys

CUDA = re.compile(r"(nvidia|cuda|cudnn|cublas|jax_plugins|jax_cuda|libtensorflow)")

PROBE = {
    "torch": "import torch\n",
    "jax": "import jax\njax.devices()\n",
    "tensorflow": "import tensorflow as tf\ntf.config.list_physical_devices()\n",
}
WORK = {
    "torch": "torch.nn.functional.conv2d(torch.ones(1, 1, 8, 8, device='cuda'), torch.ones(1, 1, 3, 3, device='cuda'))\n",
    "jax": "import jax.numpy as jnp\nx = jnp.ones((64, 64))\n(x @ x).block_until_ready()\n"
    "jax.lax.conv(jnp.ones((1, 1, 8, 8)), jnp.ones((1, 1, 3, 3)), (1, 1), 'SAME').block_until_ready()\n",
    "tensorflow": "x = tf.ones((1, 8, 8, 1))\ntf.nn.conv2d(x, tf.ones((3, 3, 1, 1)), 1, 'SAME')\n",
}
MAPS = (
    "import json, os\n"
    "m = {l.split(None, 5)[5].strip() for l in open('/proc/self/maps') if len(l.split(None, 5)) == 6}\n"
    "print(json.dumps(sorted(os.path.realpath(p) for p in m if '.so' in p)))\n"
)


def real(venv, modules, work, env):
    code = "".join(PROBE[m] + (WORK[m] if work else "") for m in modules)
    code = f"try:\n{indent(code)}\nexcept Exception as e:\n    import sys; print(repr(e), file=sys.stderr)\n" + MAPS
    e = dict(os.environ, **env)
    out = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code], env=e, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"the probe failed: {out.stderr[-2000:]}")
    return {p for p in json.loads(out.stdout.splitlines()[-1]) if CUDA.search(p)}


def indent(code):
    return "\n".join("    " + line for line in code.splitlines())


def predicted(cudadiag, venv, modules, env, gpu):
    args = [cudadiag, "import", *modules, "--venv", venv, "--format", "json"] + (["--gpu", gpu] if gpu else [])
    for k, v in env.items():
        args += ["--env", f"{k}={v}"]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"cudadiag failed: {out.stderr[-2000:]}")
    doc = json.loads(out.stdout)
    loaded = {os.path.realpath(l["realpath"]) for l in doc["loaded"] if CUDA.search(l["realpath"])}
    outcomes = [(i["module"], i["first_use"]["outcome"]["kind"]) for i in doc["imports"] if i.get("first_use")]
    return loaded, outcomes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module", nargs="+", choices=sorted(PROBE),
                    help="imported in this order in one process (`torch jax`: JAX after torch)")
    ap.add_argument("--venv", required=True)
    ap.add_argument("--cudadiag", default="target/release/cudadiag")
    ap.add_argument("--gpu", help="the GPU the prediction assumes (`9.0`); without it, the machine's")
    ap.add_argument("--gpu-work", action="store_true", help="also a matmul and a convolution (needs a GPU)")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    env = dict(kv.split("=", 1) for kv in a.env)
    r = real(a.venv, a.module, a.gpu_work, env)
    p, outcomes = predicted(a.cudadiag, a.venv, a.module, env, a.gpu)
    print(f"{' '.join(a.module)} in {a.venv}: mapped {len(r)}, predicted {len(p)}, both {len(r & p)}; outcome {outcomes}")
    # Python extension modules the frameworks' Python code imports beside their own and beside `cuda.bindings`
    # (which torch imports from 2.12, modelled): not modelled, listed apart, as scripts/import-differential.py
    # does. Only those whose path matches CUDA above are compared at all.
    ext = lambda path: ".cpython-" in os.path.basename(path) or path.endswith(".abi3.so")
    modules = sorted(x for x in r - p if ext(x))
    for path in sorted(r - p):
        if not ext(path):
            print(f"  mapped, not predicted: {path}")
    for path in sorted(p - r):
        print(f"  predicted, not mapped: {path}")
    if modules:
        print(f"  mapped, not predicted, extension modules (not modelled): {len(modules)}")
    return 0 if (r - set(modules)) == p else 1


if __name__ == "__main__":
    sys.exit(main())
