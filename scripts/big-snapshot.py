#!/usr/bin/env python3
"""Writes a snapshot of about SIZE megabytes: a real snapshot's library catalogue repeated (each copy under its
own directory) until the file reaches the size, for measuring what `diff`, `fleet` and `--facts` hold in memory
for a large input (issue 33: `diff` of a 64 MB snapshot took 2.1 GB).

Usage: scripts/big-snapshot.py BASE.json SIZE_MB OUT.json
  BASE.json: any `cudadiag snapshot` (for example of a fixture root:
  cudadiag snapshot --root fixtures/hosts/conda-pip-toolkit/root --clear-env -o base.json)
Then: /usr/bin/time -v cudadiag diff OUT.json OUT.json   (the "Maximum resident set size" line)
"""
import json
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    base, size_mb, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    with open(base) as f:
        snap = json.load(f)
    host = snap["facts"]["host"]
    libs = host.get("libraries") or []
    if not libs:
        sys.exit(f"{base} has no library catalogue to repeat (take it without --no-catalog)")
    # The size of one copy as written (at its depth in the file's indentation): the file with the catalogue
    # once, less the file without it.
    host["libraries"] = []
    empty = len(json.dumps(snap, indent=2).encode())
    host["libraries"] = libs
    one = len(json.dumps(snap, indent=2).encode()) - empty
    copies = max(1, int((size_mb * 1e6 - empty) / one))
    grown = []
    for i in range(copies):
        for lib in libs:
            lib = dict(lib)
            for key in ("path", "real_path"):
                if lib.get(key):
                    lib[key] = f"/srv/copy{i}{lib[key]}"
            grown.append(lib)
    host["libraries"] = grown
    with open(out, "w") as f:
        json.dump(snap, f, indent=2)
    print(f"{out}: {len(grown)} libraries")


if __name__ == "__main__":
    main()
