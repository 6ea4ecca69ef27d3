#!/usr/bin/env python3
"""The aarch64 loader emulation against glibc's own aarch64 ld.so, run under qemu-aarch64.

Builds an arm64 root in a scratch directory from Debian's cross glibc (`libc6-arm64-cross`, installed with
`gcc-aarch64-linux-gnu`): `/lib/ld-linux-aarch64.so.1` and every shared object of `/usr/aarch64-linux-gnu/lib`
in the multiarch directory `/lib/aarch64-linux-gnu`. For each of those objects it compares

  * glibc: `qemu-aarch64 -L ROOT -E LD_TRACE_LOADED_OBJECTS=1 ROOT/lib/ld-linux-aarch64.so.1 OBJECT`
    (trace mode: the objects are mapped, none of their code runs), and
  * cudadiag: `cudadiag inspect --format json --no-host --no-device-code --clear-env --root ROOT OBJECT`,

name by name: every library glibc lists must be resolved by cudadiag to the same path inside the root (or be
missing for both). Prints one line per disagreement and the agreement figure; exit 1 on any disagreement,
2 when nothing could be compared (no qemu-aarch64, no cross glibc).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

CROSS = "/usr/aarch64-linux-gnu/lib"


def glibc(qemu: str, root: str, obj: str) -> dict[str, str | None] | None:
    out = subprocess.run(
        [qemu, "-L", root, "-E", "LD_TRACE_LOADED_OBJECTS=1", os.path.join(root, "lib/ld-linux-aarch64.so.1"), obj],
        capture_output=True, text=True, env={}, timeout=60,
    )
    got: dict[str, str | None] = {}
    for line in out.stdout.splitlines():
        line = line.strip()
        if " => " not in line:
            continue
        name, rest = line.split(" => ", 1)
        if "ld-linux-aarch64" in name:
            continue
        path = rest.split(" (0x")[0].strip()
        got[name] = None if path == "not found" else (path[len(root):] if path.startswith(root) else path)
    return got if out.returncode == 0 or got else None


def cudadiag(binary: str, root: str, obj: str) -> dict[str, str | None]:
    out = subprocess.run(
        [binary, "inspect", "--format", "json", "--no-host", "--no-device-code", "--clear-env", "--root", root, obj],
        capture_output=True, text=True, timeout=60,
    )
    doc = json.loads(out.stdout)
    got: dict[str, str | None] = {}
    for lib in doc.get("libraries", []):
        got.setdefault(lib["soname"], lib.get("path"))
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cudadiag", default="target/release/cudadiag")
    ap.add_argument("--qemu", default=shutil.which("qemu-aarch64"))
    args = ap.parse_args()
    if not args.qemu or not os.path.isdir(CROSS):
        print("arm-loader-differential: needs qemu-aarch64 (qemu-user) and gcc-aarch64-linux-gnu", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as root:
        multiarch = os.path.join(root, "lib/aarch64-linux-gnu")
        os.makedirs(multiarch)
        shutil.copy(os.path.join(CROSS, "ld-linux-aarch64.so.1"), os.path.join(root, "lib"))
        objects = []
        for name in sorted(os.listdir(CROSS)):
            src = os.path.join(CROSS, name)
            if ".so" not in name or name.startswith("ld-linux") or not os.path.isfile(src):
                continue
            with open(src, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue  # linker scripts (libc.so)
            dst = os.path.join(multiarch, name)
            if os.path.islink(src):
                os.symlink(os.readlink(src), dst)
            else:
                shutil.copy(src, dst)
                objects.append(dst)
        files = agree = names = 0
        for obj in objects:
            want = glibc(args.qemu, root, obj)
            if want is None:
                continue
            files += 1
            got = cudadiag(args.cudadiag, root, obj)
            bad = [(n, p, got.get(n, "(never requested)")) for n, p in want.items() if got.get(n, "(never requested)") != p]
            names += len(want)
            if bad:
                n, p, g = bad[0]
                print(f"DISAGREE  {obj[len(root):]}: {n}: glibc {p}, cudadiag {g}" + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""))
            else:
                agree += 1
        if files == 0:
            print("arm-loader-differential: nothing compared", file=sys.stderr)
            return 2
        print(f"# aarch64 objects: {agree}/{files} agree with glibc's ld.so under qemu ({names} libraries listed)")
        return 0 if agree == files else 1


if __name__ == "__main__":
    sys.exit(main())
