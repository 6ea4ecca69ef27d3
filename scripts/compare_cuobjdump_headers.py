#!/usr/bin/env python3
"""Compare each fatbin entry's header as plain `cuobjdump FILE` prints it with cudadiag's JSON.

For every host ELF file under the given directories (raw cubins have no fatbin header; relocatable device
code counts only in relocatable objects, as plain cuobjdump lists it), the blocks

    Fatbin elf code:            Fatbin ptx code:
    arch = sm_90                arch = sm_90
    code version = [1,7]        code version = [8,8]
    host = linux                host = linux
    compile_size = 64bit        compile_size = 64bit
    compressed                  [has debug info]

are compared in order with `cudadiag inspect --format json --no-host --no-libraries FILE`'s `device_code`:
kind, arch (cuobjdump names PTX `sm_XY` too), code version, 64-bit, compressed, debug. Prints a line per
disagreement and the agreement figure; exit 1 on any disagreement, 2 when nothing was compared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


def cuobjdump_headers(cuobjdump: str, path: str) -> list[tuple]:
    out = subprocess.run([cuobjdump, path], capture_output=True, text=True, timeout=600).stdout
    entries, cur = [], None
    for line in out.splitlines():
        t = line.strip()
        kind = {"Fatbin elf code:": "sass", "Fatbin ptx code:": "ptx", "Fatbin nvvm code:": "nvvm"}.get(t)
        if kind:
            if cur:
                entries.append(cur)
            cur = {"kind": kind, "arch": "", "code_version": "", "bits64": False, "compressed": False,
                   "debug": False}
        elif cur is None:
            continue
        elif t.startswith("arch = "):
            cur["arch"] = t[len("arch = "):]
        elif t.startswith("code version = "):
            cur["code_version"] = t[len("code version = "):].strip("[]").replace(",", ".")
        elif t == "compile_size = 64bit":
            cur["bits64"] = True
        elif t == "compressed":
            cur["compressed"] = True
        elif t == "has debug info":
            cur["debug"] = True
    if cur:
        entries.append(cur)
    return [tuple(sorted(e.items())) for e in entries if e["kind"] != "nvvm"]


def cudadiag_headers(cudadiag: str, path: str, relocatable: bool) -> list[tuple]:
    out = subprocess.run([cudadiag, "inspect", "--format", "json", "--no-host", "--no-libraries", path],
                         capture_output=True, text=True, timeout=600).stdout
    entries = []
    for b in json.loads(out)["binaries"]:
        for e in b.get("device_code", []):
            if (e.get("relocatable") and not relocatable) or e["kind"] not in ("sass", "ptx"):
                continue
            entries.append(tuple(sorted({
                "kind": e["kind"], "arch": e["arch"].replace("compute_", "sm_"),
                "code_version": e.get("code_version", ""), "bits64": e.get("compile_size") == 64,
                "compressed": e.get("compression", "none") != "none", "debug": bool(e.get("debug")),
            }.items())))
    return entries


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cudadiag", required=True)
    ap.add_argument("--cuobjdump", required=True)
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    files = agree = entries = 0
    for d in args.dirs:
        for base, _, names in os.walk(d):
            for n in sorted(names):
                p = os.path.join(base, n)
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                with open(p, "rb") as f:
                    head = f.read(20)
                if len(head) < 20 or head[:4] != b"\x7fELF":
                    continue
                e_type, e_machine = int.from_bytes(head[16:18], "little"), int.from_bytes(head[18:20], "little")
                if e_machine == 190:  # EM_CUDA: a raw cubin, no fatbin header
                    continue
                want = cuobjdump_headers(args.cuobjdump, p)
                got = cudadiag_headers(args.cudadiag, p, relocatable=e_type == 1)
                files += 1
                entries += len(want)
                if want == got:
                    agree += 1
                    continue
                first = next((i for i, (w, g) in enumerate(zip(want, got)) if w != g), min(len(want), len(got)))
                print(f"DISAGREE  {p}: entry {first}: cuobjdump {dict(want[first]) if first < len(want) else None}, "
                      f"cudadiag {dict(got[first]) if first < len(got) else None} ({len(want)} vs {len(got)} entries)")
    if files == 0:
        print("compare-headers: no ELF files found", file=sys.stderr)
        return 2
    print(f"# headers: {agree}/{files} files agree, {entries} entries")
    return 0 if agree == files else 1


if __name__ == "__main__":
    sys.exit(main())
