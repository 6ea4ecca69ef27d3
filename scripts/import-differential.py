#!/usr/bin/env python3
"""Compare `cudadiag import torch`'s predicted process with the real one.

Runs `cudadiag import torch --venv DIR --format json`, then the venv's own interpreter with
`import torch` (and, with --first-use, a CUDA tensor operation and a cuDNN convolution), and reads the
shared objects that process maps (/proc/self/maps). Both sides are compared by real path:

  predicted and mapped   the figure that matters
  predicted, not mapped  a library cudadiag says is loaded and is not
  mapped, not predicted  split into the interpreter's own extension modules (lib-dynload and other
                         site-packages extension modules torch's Python code imports: not modelled, listed)
                         and every other library (a miss of the model)

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
import torch
if sys.argv[1] == "1":
    x = torch.ones(1, 1, 8, 8, device="cuda")
    torch.nn.functional.conv2d(x, torch.ones(1, 1, 3, 3, device="cuda"))
    torch.cuda.synchronize()
maps = set()
with open("/proc/self/maps") as f:
    for line in f:
        parts = line.split(None, 5)
        if len(parts) == 6 and ".so" in parts[5]:
            maps.add(parts[5].strip())
print(json.dumps(sorted(maps)))
"""


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", required=True, help="the environment (its bin/python runs the real import)")
    ap.add_argument("--cudadiag", default=os.path.join(os.path.dirname(__file__), "..", "target", "debug", "cudadiag"))
    ap.add_argument("--first-use", action="store_true", help="also a CUDA tensor and a cuDNN convolution (needs a GPU)")
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    a = ap.parse_args()
    py = os.path.join(a.venv, "bin", "python")
    if not os.path.exists(py):
        print(f"{py}: no interpreter", file=sys.stderr)
        return 2
    out = subprocess.run(
        [a.cudadiag, "import", "torch", "--venv", a.venv, "--format", "json", "--fail-on", "never"],
        capture_output=True, text=True, check=False,
    )
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        return 2
    report = json.loads(out.stdout)
    predicted = {
        real(l["realpath"]) for l in report["loaded"]
        if (a.first_use or l["when"] == "import") and l["how"]["kind"] != "start"
    }
    # The interpreter's start-up objects are in the real process too: compare them as well.
    # (The program itself is no `.so` in the maps: left out.)
    start = {
        real(l["realpath"]) for l in report["loaded"]
        if l["how"]["kind"] == "start" and ".so" in os.path.basename(l["realpath"])
    }
    run = subprocess.run([py, "-c", PROBE, "1" if a.first_use else "0"], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        print(run.stderr[-2000:], file=sys.stderr)
        return 2
    mapped = {real(p) for p in json.loads(run.stdout.strip().splitlines()[-1])}
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
    result = {
        "venv": a.venv,
        "first_use": a.first_use,
        "mapped": len(mapped),
        "predicted": len(everything),
        "predicted_and_mapped": len(both),
        "predicted_not_mapped": predicted_only,
        "mapped_extension_modules_not_modelled": modules,
        "mapped_libraries_of_those_modules": module_deps,
        "mapped_libraries_not_predicted": missed,
    }
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{a.venv}: {len(mapped)} shared objects mapped, {len(everything)} predicted, "
              f"{len(both)} predicted and mapped at the same path")
        print(f"  predicted, not mapped: {len(predicted_only)}")
        for p in predicted_only:
            print(f"    {p}")
        print(f"  mapped, not predicted (libraries): {len(missed)}")
        for p in missed:
            print(f"    {p}")
        print(f"  mapped, not predicted (extension modules torch's Python code imports, not modelled): {len(modules)}, "
              f"with {len(module_deps)} libraries of their own")
    return 0 if not predicted_only and not missed else 1


if __name__ == "__main__":
    sys.exit(main())
