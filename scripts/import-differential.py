#!/usr/bin/env python3
"""Compare `cudadiag import torch`'s predicted process with the real one.

Runs `cudadiag import torch --venv DIR --format json`, then the venv's own interpreter with
`import torch` (and, with --first-use, a CUDA tensor operation and a cuDNN convolution), and reads the
shared objects that process maps (/proc/self/maps). Both sides are compared by real path:

  predicted and mapped   the figure that matters
  predicted, not mapped  a library cudadiag says is loaded and is not
  mapped, not predicted  split into the interpreter's own extension modules (lib-dynload and other
                         site-packages extension modules torch's Python code imports, but for `torch._C` and
                         `cuda.bindings`'s, which are modelled: not modelled, listed)
                         and every other library (a miss of the model)
  the driver's PTX JIT compiler, which it opens only when its JIT cache misses: listed, not counted

The real process runs `torch.backends.cudnn.version()` (torch's cuDNN rule) after its maps are read.

Without --first-use the predicted set is what cudadiag loads at import (`when == "import"`): the
comparison needs no GPU. Exit status: 0 when every predicted library is mapped and every mapped library
outside the interpreter's own extension modules is predicted, 1 otherwise, 2 on a usage error.
"""

import argparse
import json
import os
import subprocess
import sys

PROBE = r"""
import json, sys
def maps():
    found = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and ".so" in parts[5]:
                found.add(parts[5].strip())
    return sorted(found)
steps, at_import, after = [], None, None
try:
    import torch
    steps.append(["import", "ok"])
    at_import = maps()
except Exception as e:
    steps.append(["import", "%s: %s" % (type(e).__name__, e)])
if at_import is not None:
    if sys.argv[1] == "1":
        try:
            x = torch.ones(1, 1, 8, 8, device="cuda")
            torch.nn.functional.conv2d(x, torch.ones(1, 1, 3, 3, device="cuda"))
            torch.cuda.synchronize()
            steps.append(["conv2d", "ok"])
        except Exception as e:
            steps.append(["first use", "%s: %s" % (type(e).__name__, e)])
        after = maps()
    # torch's cuDNN version rule, after the maps are taken: torch.backends.cudnn.version() makes cuDNN open its
    # sub-libraries, which the modelled program (the import, then a CUDA tensor and a convolution) opens only
    # when its convolution runs.
    try:
        steps.append(["cudnn.version()", "ok %s" % torch.backends.cudnn.version()])
    except Exception as e:
        steps.append(["cudnn.version()", "%s: %s" % (type(e).__name__, e)])
print(json.dumps({"steps": steps, "maps": after or at_import or maps()}))
"""


# Mapped by the driver only when a PTX JIT runs, which its cache decides (see `compare`).
JIT_CACHE_DEPENDENT = ("libnvidia-ptxjitcompiler.so",)


def real(p):
    return os.path.realpath(p)


def needed(path):
    """DT_NEEDED of `path`, read by readelf (empty when it cannot be read)."""
    out = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=False).stdout
    return {l.split("[", 1)[1].split("]", 1)[0] for l in out.splitlines() if "(NEEDED)" in l and "[" in l}


def soname(path):
    out = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=False).stdout
    for l in out.splitlines():
        if "(SONAME)" in l and "[" in l:
            return l.split("[", 1)[1].split("]", 1)[0]
    return os.path.basename(path)


def is_extension_module(p):
    name = os.path.basename(p)
    return "/lib-dynload/" in p or ".cpython-" in name or name.endswith(".abi3.so")


def compare(cudadiag, venv, first_use=False, env=(), extra=()):
    """Predicted against real for `import torch` in `venv`, with `env` (KEY=VALUE pairs) given to both.
    Returns the comparison as a dict, or raises RuntimeError when either side could not run."""
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        raise RuntimeError(f"{py}: no interpreter")
    args = [cudadiag, "import", "torch", "--venv", venv, "--format", "json", "--fail-on", "never", *extra]
    for kv in env:
        args += ["--env", kv]
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    report = json.loads(out.stdout)
    predicted = {
        real(l["realpath"]) for l in report["loaded"]
        if (first_use or l["when"] == "import") and l["how"]["kind"] != "start"
    }
    # The interpreter's start-up objects are in the real process too: compare them as well.
    # (The program itself is no `.so` in the maps: left out.)
    start = {
        real(l["realpath"]) for l in report["loaded"]
        if l["how"]["kind"] == "start" and ".so" in os.path.basename(l["realpath"])
    }
    penv = dict(os.environ)
    for kv in env:
        k, _, v = kv.partition("=")
        if v or "=" in kv:
            penv[k] = v
        else:
            penv.pop(k, None)
    run = subprocess.run([py, "-c", PROBE, "1" if first_use else "0"], capture_output=True, text=True,
                         check=False, env=penv)
    try:
        probe = json.loads(run.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise RuntimeError(run.stderr[-2000:])
    mapped = {real(p) for p in probe["maps"]}
    everything = predicted | start
    both = sorted(everything & mapped)
    predicted_only = sorted(everything - mapped)
    unpredicted = sorted(mapped - everything)
    modules = [p for p in unpredicted if is_extension_module(p)]
    # Libraries only those modules need (libffi for _ctypes, libssl for _ssl) come with them.
    theirs = set()
    for m in modules:
        theirs |= needed(m)
    module_deps = [p for p in unpredicted if not is_extension_module(p) and soname(p) in theirs]
    missed = [p for p in unpredicted if not is_extension_module(p) and p not in module_deps]
    # The driver opens its PTX JIT compiler when it compiles PTX (cuDNN's run-time compiled engines at the first
    # convolution), not when its JIT cache (~/.nv/ComputeCache, CUDA_CACHE_PATH) already holds the result: the
    # model predicts it (the first run on a machine), the real process maps it or not by the cache's state.
    jit = [p for p in predicted_only + missed if os.path.basename(p).startswith(JIT_CACHE_DEPENDENT)]
    predicted_only = [p for p in predicted_only if p not in jit]
    missed = [p for p in missed if p not in jit]
    imp = report["imports"][0]
    return {
        "venv": venv,
        "env": list(env),
        "first_use": first_use,
        "real_steps": probe["steps"],
        "predicted_import": imp["import"]["outcome"],
        "predicted_first_use": (imp.get("first_use") or {}).get("outcome"),
        "predicted_findings": [[f["slug"], f["severity"], f["message"]] for f in report["findings"]],
        "mapped": len(mapped),
        "predicted": len(everything),
        "predicted_and_mapped": len(both),
        "predicted_not_mapped": predicted_only,
        "mapped_extension_modules_not_modelled": modules,
        "mapped_libraries_of_those_modules": module_deps,
        "mapped_libraries_not_predicted": missed,
        "jit_cache_dependent": jit,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", required=True, help="the environment (its bin/python runs the real import)")
    ap.add_argument("--cudadiag", default=os.path.join(os.path.dirname(__file__), "..", "target", "debug", "cudadiag"))
    ap.add_argument("--first-use", action="store_true", help="also a CUDA tensor and a cuDNN convolution (needs a GPU)")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="set for both the prediction (--env) and the real process (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    a = ap.parse_args()
    try:
        r = compare(a.cudadiag, a.venv, a.first_use, a.env)
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(r, indent=2))
    else:
        print(f"{a.venv}: {r['mapped']} shared objects mapped, {r['predicted']} predicted, "
              f"{r['predicted_and_mapped']} predicted and mapped at the same path")
        print(f"  real: {'; '.join(': '.join(s) for s in r['real_steps'])}")
        print(f"  predicted: import {r['predicted_import']['kind']}; findings: "
              f"{', '.join(f[0] for f in r['predicted_findings']) or 'none'}")
        print(f"  predicted, not mapped: {len(r['predicted_not_mapped'])}")
        for p in r["predicted_not_mapped"]:
            print(f"    {p}")
        print(f"  mapped, not predicted (libraries): {len(r['mapped_libraries_not_predicted'])}")
        for p in r["mapped_libraries_not_predicted"]:
            print(f"    {p}")
        for p in r["jit_cache_dependent"]:
            print(f"  predicted or mapped as the driver's JIT cache decides (not counted): {p}")
        print(f"  mapped, not predicted (extension modules torch's Python code imports, not modelled): "
              f"{len(r['mapped_extension_modules_not_modelled'])}, "
              f"with {len(r['mapped_libraries_of_those_modules'])} libraries of their own")
    return 0 if not r["predicted_not_mapped"] and not r["mapped_libraries_not_predicted"] else 1


if __name__ == "__main__":
    sys.exit(main())
