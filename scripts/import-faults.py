#!/usr/bin/env python3
"""`cudadiag import torch` against the real `import torch`, on a real venv and on faults built from it.

Each fault is laid out beside the venv without writing into it or copying it: a new venv of the same
interpreter (`python -m venv --without-pip`) whose `.pth` file points at symbolic-link copies of the
venv's site-packages (`cp -as`: real directories, one link per file, so `$ORIGIN` stays in the copy).

  healthy             the venv itself
  second-entry        the NVIDIA wheels on a second sys.path entry (`.pth`: torch first, `nvidia/` after)
  wheel-missing       the cuDNN wheel left out (every file of its RECORD and its dist-info)
  older-than-pinned   the cuDNN wheel replaced by an older one (--older-cudnn)
  ld-library-path     the venv itself, LD_LIBRARY_PATH naming the older cuDNN's lib directory
  stub-libcuda        LD_LIBRARY_PATH naming a directory whose libcuda.so.1 is the toolkit's stub (--stub)
  no-visible-gpu      CUDA_VISIBLE_DEVICES= (empty)

For each, `scripts/import-differential.py`'s comparison: the real process's steps (`import torch`,
`torch.backends.cudnn.version()`, with --first-use a CUDA convolution) and the shared objects it maps, against
cudadiag's predicted import, findings and objects. Prints a Markdown table; `--json` the whole comparison.
Exit status 0 when every row agrees, 1 otherwise, 2 on a usage error.

Usage: scripts/import-faults.py --venv DIR [--cudadiag PATH] [--older-cudnn DIR|WHEEL] [--stub PATH]
                                [--first-use] [--keep DIR] [--only NAME,…] [--json]
"""
import argparse
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


differential = load("import_differential", "import-differential.py")
farm = load("symlink_farm", "symlink-farm-differential.py")


def new_venv(venv, where, entries):
    """A venv of `venv`'s interpreter at `where` whose sys.path gets `entries` (a `.pth` file), in order."""
    subprocess.run([os.path.join(venv, "bin", "python"), "-m", "venv", "--without-pip", where], check=True)
    with open(os.path.join(farm.site_packages(where), "faults.pth"), "w", encoding="utf-8") as f:
        f.write("".join(e + "\n" for e in entries))
    return where


def older(path, tmp):
    """The directory holding the older cuDNN's `nvidia/cudnn` (a wheel is unpacked into `tmp`)."""
    if os.path.isdir(path):
        return path
    out = os.path.join(tmp, "older-cudnn")
    with zipfile.ZipFile(path) as z:
        z.extractall(out)
    for f in glob.glob(os.path.join(out, "nvidia", "cudnn", "lib", "*.so*")):
        os.chmod(f, 0o755)
    return out


def scenarios(a, tmp):
    sp = farm.site_packages(a.venv)
    rows = [("healthy", a.venv, [])]
    wheels = {e for e in os.listdir(sp) if e == "nvidia" or e.startswith(("nvidia_", "nvidia-"))}
    a_dir, b_dir = os.path.join(tmp, "split", "a"), os.path.join(tmp, "split", "b")
    farm.build_farm(sp, a_dir, wheels)
    os.makedirs(b_dir)
    for e in wheels:
        os.symlink(os.path.join(sp, e), os.path.join(b_dir, e))
    rows.append(("second-entry", new_venv(a.venv, os.path.join(tmp, "v-split"), [a_dir, b_dir]), []))
    gone = farm.left_out(sp, "nvidia-cudnn-cu13") if any(
        n.startswith("nvidia_cudnn_cu13") for n in os.listdir(sp)) else farm.left_out(sp, "nvidia-cudnn-cu12")
    f_dir = os.path.join(tmp, "missing")
    farm.build_farm(sp, f_dir, gone)
    rows.append(("wheel-missing", new_venv(a.venv, os.path.join(tmp, "v-missing"), [f_dir]), []))
    if a.older_cudnn:
        old = older(a.older_cudnn, tmp)
        o_dir = os.path.join(tmp, "older")
        farm.build_farm(sp, o_dir, gone)
        farm.build_farm(os.path.join(old, "nvidia", "cudnn"), os.path.join(o_dir, "nvidia", "cudnn"), set())
        for info in glob.glob(os.path.join(old, "*.dist-info")):
            farm.build_farm(info, os.path.join(o_dir, os.path.basename(info)), set())
        rows.append(("older-than-pinned", new_venv(a.venv, os.path.join(tmp, "v-older"), [o_dir]), []))
        lib = os.path.join(old, "nvidia", "cudnn", "lib")
        rows.append(("ld-library-path", a.venv, [f"LD_LIBRARY_PATH={lib}"]))
    if a.stub:
        d = os.path.join(tmp, "stub")
        os.makedirs(d)
        os.symlink(a.stub, os.path.join(d, "libcuda.so.1"))
        rows.append(("stub-libcuda", a.venv, [f"LD_LIBRARY_PATH={d}"]))
    rows.append(("no-visible-gpu", a.venv, ["CUDA_VISIBLE_DEVICES="]))
    return [r for r in rows if not a.only or r[0] in a.only.split(",")]


def real_text(steps):
    return "; ".join(f"{s}: {o}" for s, o in steps)


def predicted_text(r):
    imp = r["predicted_import"]
    parts = [f"import {imp['kind']}" + (f" ({imp['message']})" if imp.get("message") else "")]
    fu = r["predicted_first_use"]
    if fu:
        parts.append(f"first use {fu['kind']}")
    parts += [f"{slug} ({sev})" for slug, sev, _ in r["predicted_findings"]]
    return "; ".join(parts)


def agrees(r):
    """The outcome agrees: the import fails in both or in neither (the same library named), and torch's cuDNN
    rule raises exactly when a cuDNN finding is predicted; and the objects agree."""
    steps = dict(r["real_steps"])
    real_fail = not steps.get("import", "").startswith("ok")
    pred_fail = r["predicted_import"]["kind"] == "fails"
    same = real_fail == pred_fail
    if real_fail and pred_fail:
        lib = ((r["predicted_import"].get("load") or {}).get("library") or {}).get("soname", "")
        same = bool(lib) and lib in steps.get("import", "")
    cudnn_raises = "cuDNN version incompatibility" in steps.get("cudnn.version()", "")
    cudnn_pred = any("cudnn" in m.lower() and sev in ("warning", "error") and slug != "framework-cpu-fallback"
                     for slug, sev, m in r["predicted_findings"])
    objects = not r["predicted_not_mapped"] and not r["mapped_libraries_not_predicted"]
    if r["first_use"] and not real_fail:
        # The convolution ran on the GPU exactly when the first use is predicted to use it.
        same = same and (steps.get("conv2d") == "ok") == ((r["predicted_first_use"] or {}).get("kind") == "gpu")
    return same and (cudnn_raises == cudnn_pred or real_fail) and objects


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", required=True, help="a venv with torch and its NVIDIA wheels (never written)")
    ap.add_argument("--cudadiag", default=os.path.join(HERE, "..", "target", "release", "cudadiag"))
    ap.add_argument("--older-cudnn", help="an older nvidia-cudnn wheel, or the directory it is unpacked in")
    ap.add_argument("--stub", help="the toolkit's stub libcuda.so (targets/…/lib/stubs/libcuda.so)")
    ap.add_argument("--first-use", action="store_true", help="also a CUDA convolution (needs a GPU)")
    ap.add_argument("--keep", help="build the faults in this directory and keep them")
    ap.add_argument("--only", help="comma-separated scenario names")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.venv, "bin", "python")):
        print(f"{a.venv}: no bin/python", file=sys.stderr)
        return 2
    tmp = a.keep or tempfile.mkdtemp(prefix="import-faults-")
    os.makedirs(tmp, exist_ok=True)
    results = []
    try:
        for name, venv, env in scenarios(a, tmp):
            try:
                r = differential.compare(a.cudadiag, venv, a.first_use, env)
            except RuntimeError as e:
                r = {"error": str(e)[-500:]}
            r["scenario"] = name
            r["agrees"] = "error" not in r and agrees(r)
            results.append(r)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        print(json.dumps(results, indent=2))
    else:
        print("| fault | real process | cudadiag | objects: both / predicted only / mapped only | agrees |")
        print("|---|---|---|---|---|")
        for r in results:
            if "error" in r:
                print(f"| {r['scenario']} | could not run: {r['error'][:200]} | | | no |")
                continue
            print(f"| {r['scenario']} | {real_text(r['real_steps'])[:300]} | {predicted_text(r)[:300]} | "
                  f"{r['predicted_and_mapped']} / {len(r['predicted_not_mapped'])} / "
                  f"{len(r['mapped_libraries_not_predicted'])} | {'yes' if r['agrees'] else '**no**'} |")
    return 0 if all(r["agrees"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
