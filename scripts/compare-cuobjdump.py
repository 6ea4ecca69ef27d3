#!/usr/bin/env python3
"""Compare cudadiag's device-code listing with cuobjdump's, entry by entry.

    scripts/compare-cuobjdump.py [--cudadiag BIN] [--cuobjdump BIN] [--source auto|live|golden] PATH...

For every ELF file (host executable, shared library, object, cubin), static archive and raw
fatbin under the given paths, this gets

  * ``cuobjdump --list-elf --list-ptx FILE``        (the "plain" listing),
  * ``cuobjdump -all --list-elf --list-ptx FILE``   (the "all" listing), and
  * ``cudadiag inspect --format json FILE``         (``binaries[].device_code[]``),

and checks that both listings name the same entries, in the same order, as cudadiag.

cuobjdump's listing quirks (docs/fatbin-format.md, "cuobjdump's listing") that the comparison undoes:

  * entries are named ``<stem>.<N>.sm_<arch>[a].cubin`` / ``<stem>.<N>.sm_<arch>[a|f].ptx``;
    an entry with an identifier (``-G``, ``-dlto``) is ``<identifier-stem>.sm_<arch>.cubin``
    with no N: only the ``.sm_<arch><suffix>.<ext>`` tail is used;
  * PTX is named ``sm_XY`` where cudadiag says ``compute_XY``;
  * the ELF listing drops the ``f`` (family) suffix while the PTX listing keeps it, so a
    cudadiag SASS arch ``sm_100f`` is compared as ``sm_100``;
  * the plain listing skips ``__nv_relfatbin`` (cudadiag: ``"relocatable": true``) in linked
    files, but lists it for relocatable objects (ELF ``e_type`` ET_REL, and archive members);
    ``-all`` lists it everywhere;
  * NVVM (LTO IR) entries are in neither listing; cudadiag's ``nvvm`` array and any
    ``device_code`` entry whose kind is not ``sass``/``ptx`` are ignored.

Use a cuobjdump at least as new as the toolkit that built the files: an older one names
entries by what it understands (cuobjdump 12.8 lists CUDA 13.0 sm_90a/sm_100a entries as
sm_90/sm_100, and compute_100f PTX as sm_100), which shows up here as disagreements.

cudadiag is ``--cudadiag``, else $CUDADIAG, else the newer of the repo's target/{release,debug}
builds, else cudadiag on PATH; cuobjdump is ``--cuobjdump``, else $CUOBJDUMP, else cuobjdump on
PATH, else /usr/local/cuda/bin/cuobjdump.  Where cuobjdump is not installed, ``--source golden`` (or ``auto``, the default) reads the
listings recorded by fixtures/build.sh next to each file: ``FILE.lelf-lptx.txt`` and
``FILE.all.lelf-lptx.txt``.

Prints one line per file (``agree`` / ``DISAGREE`` with the first differing entry / ``skip``)
and an overall agreement figure.  Exit status: 0 all compared files agree, 1 any disagreement
(or a cudadiag failure), 2 bad usage or nothing to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO, default_cudadiag, default_cuobjdump  # noqa: E402


ELF_MAGIC = b"\x7fELF"
AR_MAGIC = b"!<arch>\n"
FATBIN_MAGIC = b"\x50\xed\x55\xba"  # 0xBA55ED50 little-endian
DEVICE_EXTS = (".cubin", ".fatbin")

LIST_RE = re.compile(r"^\s*(ELF|PTX|NVVM) file\s+(\d+):\s*(\S.*?)\s*$")
NAME_RE = re.compile(r"\.(sm|compute)_(\d+)([a-z]?)\.(cubin|ptx|nvvm|elf)$")
PROBLEM_RE = re.compile(r"cuobjdump (fatal|error)|\bfatal\b|[Ee]rror", re.I)
NO_CODE_RE = re.compile(r"does not contain device code|No (ELF|PTX) file found", re.I)


@dataclass(frozen=True)
class Entry:
    kind: str  # "sass" | "ptx"
    arch: str  # normalised: "sm_90a", "sm_100" (SASS, no f), "compute_100f" (PTX)
    label: str = field(default="", compare=False)  # as the tool printed it

    def __str__(self) -> str:
        return f"{self.kind} {self.arch}" + (f" ({self.label})" if self.label and self.label != self.arch else "")


@dataclass
class Listing:
    entries: list[Entry]
    problem: str | None = None  # set when cuobjdump failed in a way that is not "no device code"


# ----------------------------------------------------------------------------- file discovery

def sniff(path: str) -> str | None:
    """Return 'elf', 'ar', 'fatbin' or None (not a file to compare)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return None
    if head.startswith(ELF_MAGIC):
        return "elf"
    if head.startswith(AR_MAGIC):
        return "ar"
    if head.startswith(FATBIN_MAGIC):
        return "fatbin"
    if path.endswith(DEVICE_EXTS):
        return "fatbin"
    return None


def elf_is_rel(path: str) -> bool:
    """True for an ELF relocatable object (e_type == ET_REL)."""
    try:
        with open(path, "rb") as f:
            h = f.read(18)
    except OSError:
        return False
    if len(h) < 18 or not h.startswith(ELF_MAGIC):
        return False
    order = "little" if h[5] == 1 else "big"
    return int.from_bytes(h[16:18], order) == 1


def discover(paths: list[str]) -> list[str]:
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, names in os.walk(p):
                dirs.sort()
                for n in sorted(names):
                    fp = os.path.join(root, n)
                    if os.path.islink(fp) or not os.path.isfile(fp):
                        continue
                    if sniff(fp):
                        files.append(fp)
        elif os.path.isfile(p):
            files.append(p)
        else:
            print(f"compare: no such file or directory: {p}", file=sys.stderr)
    return files


# ----------------------------------------------------------------------------- cuobjdump side

def parse_listing(text: str) -> Listing:
    entries: list[Entry] = []
    unknown: list[str] = []
    for line in text.splitlines():
        m = LIST_RE.match(line)
        if not m:
            continue
        what, _n, name = m.groups()
        if what == "NVVM":
            continue
        nm = NAME_RE.search(name)
        if not nm:
            unknown.append(name)
            continue
        _prefix, num, suffix, _ext = nm.groups()
        if what == "ELF":
            entries.append(Entry("sass", f"sm_{num}{suffix}", name))
        else:
            entries.append(Entry("ptx", f"compute_{num}{suffix}", name))
    problem = None
    if unknown:
        problem = f"unparsed cuobjdump entry names: {unknown[:3]}"
    elif not entries:
        bad = [l for l in text.splitlines() if l.strip() and not NO_CODE_RE.search(l)
               and not l.lstrip().startswith("member ") and PROBLEM_RE.search(l)]
        if bad:
            problem = bad[0].strip()
    return Listing(entries, problem)


def run_cuobjdump(cuobjdump: str, path: str, all_: bool, timeout: float) -> Listing:
    cmd = [cuobjdump] + (["-all"] if all_ else []) + ["--list-elf", "--list-ptx", path]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Listing([], f"cuobjdump timed out after {timeout:.0f} s")
    except OSError as e:
        return Listing([], f"cannot run cuobjdump: {e}")
    return parse_listing(p.stdout.decode("utf-8", "replace"))


def golden_listing(path: str, all_: bool) -> Listing | None:
    g = path + (".all.lelf-lptx.txt" if all_ else ".lelf-lptx.txt")
    try:
        with open(g, encoding="utf-8", errors="replace") as f:
            return parse_listing(f.read())
    except OSError:
        return None


# ----------------------------------------------------------------------------- cudadiag side

@dataclass
class DiagResult:
    entries: list[tuple[Entry, bool]]  # (entry, relocatable)
    error: str | None = None


def norm_diag(kind: str, arch: str) -> Entry | None:
    kind = (kind or "").lower()
    arch = (arch or "").strip()
    m = re.fullmatch(r"(sm|compute|lto)_(\d+)([a-z]?)", arch)
    if kind == "sass":
        if not m:
            return Entry("sass", f"?{arch}", arch)
        num, suffix = m.group(2), m.group(3)
        if suffix == "f":  # cuobjdump's ELF listing drops the family suffix
            suffix = ""
        return Entry("sass", f"sm_{num}{suffix}", arch)
    if kind == "ptx":
        if not m:
            return Entry("ptx", f"?{arch}", arch)
        return Entry("ptx", f"compute_{m.group(2)}{m.group(3)}", arch)
    return None  # nvvm / anything else: not in cuobjdump's listings


def run_cudadiag(cudadiag: list[str], path: str, timeout: float) -> DiagResult:
    cmd = cudadiag + ["inspect", "--no-libraries", "--format", "json", path]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return DiagResult([], f"cudadiag timed out after {timeout:.0f} s")
    except OSError as e:
        return DiagResult([], f"cannot run cudadiag: {e}")
    out = p.stdout.decode("utf-8", "replace")
    try:
        doc = json.loads(out)
    except ValueError:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        return DiagResult([], f"cudadiag exit {p.returncode}, no JSON on stdout"
                              + (f": {err[-1]}" if err else ""))
    if p.returncode not in (0, 1):
        # 0: clean, 1: findings at or above --fail-on; both still carry the report
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        return DiagResult([], f"cudadiag exit {p.returncode}" + (f": {err[-1]}" if err else ""))
    binaries = doc.get("binaries") if isinstance(doc, dict) else None
    if not isinstance(binaries, list):
        return DiagResult([], "cudadiag JSON has no binaries[] array")
    entries: list[tuple[Entry, bool]] = []
    for b in binaries:
        if not isinstance(b, dict):
            continue
        for e in b.get("device_code") or []:
            if not isinstance(e, dict):
                continue
            ne = norm_diag(str(e.get("kind", "")), str(e.get("arch", "")))
            if ne is not None:
                entries.append((ne, bool(e.get("relocatable", False))))
    return DiagResult(entries)


# ----------------------------------------------------------------------------- comparison

def first_difference(want: list[Entry], got: list[Entry]) -> str | None:
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        if w != g:
            ws = str(w) if w else "(none)"
            gs = str(g) if g else "(none)"
            same_set = sorted(want, key=lambda e: (e.kind, e.arch)) == sorted(got, key=lambda e: (e.kind, e.arch))
            hint = "; same entries in another order" if same_set else ""
            return (f"entry #{i + 1}: cuobjdump {ws} vs cudadiag {gs} "
                    f"({len(want)} vs {len(got)} entries{hint})")
    return None


def multiset_equal(a: list[Entry], b: list[Entry]) -> bool:
    key = lambda e: (e.kind, e.arch)  # noqa: E731
    return sorted(a, key=key) == sorted(b, key=key)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="files or directories to compare")
    ap.add_argument("--cudadiag", default=default_cudadiag(),
                    help="cudadiag binary (default: $CUDADIAG, else the newer of the repo's "
                         "target/{release,debug} builds, else cudadiag on PATH)")
    ap.add_argument("--cuobjdump", default=default_cuobjdump(),
                    help="cuobjdump binary (default: $CUOBJDUMP, else cuobjdump on PATH, "
                         "else /usr/local/cuda/bin/cuobjdump)")
    ap.add_argument("--source", choices=("auto", "live", "golden"), default="auto",
                    help="cuobjdump listings: run cuobjdump (live), read FILE.lelf-lptx.txt goldens "
                         "(golden), or live when cuobjdump is found, else goldens (auto)")
    ap.add_argument("--unordered", action="store_true",
                    help="compare entries as multisets, ignoring order")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per tool run (600)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the entries of every file")
    args = ap.parse_args()

    cudadiag = shutil.which(args.cudadiag) or (args.cudadiag if os.path.isfile(args.cudadiag) else None)
    if not cudadiag:
        print(f"compare: cudadiag not found: {args.cudadiag}", file=sys.stderr)
        return 2
    cuobjdump = shutil.which(args.cuobjdump) or (args.cuobjdump if os.path.isfile(args.cuobjdump) else None)
    source = args.source
    if source == "auto":
        source = "live" if cuobjdump else "golden"
    if source == "live" and not cuobjdump:
        print(f"compare: cuobjdump not found: {args.cuobjdump}", file=sys.stderr)
        return 2
    print(f"# cuobjdump listings: {'live, ' + cuobjdump if source == 'live' else 'golden files'}; "
          f"cudadiag: {cudadiag}; order: {'ignored' if args.unordered else 'strict'}")

    files = discover(args.paths)
    if not files:
        print("compare: no ELF, archive, cubin or fatbin files found", file=sys.stderr)
        return 2

    n_agree = n_disagree = n_skip = 0
    ent_total = ent_match = 0
    for path in files:
        kind = sniff(path)
        if source == "live":
            plain = run_cuobjdump(cuobjdump, path, False, args.timeout)
            full = run_cuobjdump(cuobjdump, path, True, args.timeout)
        else:
            plain = golden_listing(path, False)
            full = golden_listing(path, True)
            if plain is None or full is None:
                print(f"skip      {path}: no golden listing ({path}.lelf-lptx.txt)")
                n_skip += 1
                continue
        problem = plain.problem or full.problem
        if problem:
            print(f"skip      {path}: cuobjdump: {problem}")
            n_skip += 1
            continue

        diag = run_cudadiag([cudadiag], path, args.timeout)
        if diag.error:
            print(f"DISAGREE  {path}: {diag.error}")
            n_disagree += 1
            ent_total += len(full.entries)
            continue

        # Which cudadiag entries the plain listing shows: relocatable ones only for objects.
        rel_listed = kind == "ar" or (kind == "elf" and elf_is_rel(path))
        got_plain = [e for e, rel in diag.entries if rel_listed or not rel]
        got_all = [e for e, _rel in diag.entries]

        diffs = []
        for label, want, got in (("plain", plain.entries, got_plain), ("-all", full.entries, got_all)):
            if args.unordered:
                ok = multiset_equal(want, got)
                d = None if ok else first_difference(
                    sorted(want, key=lambda e: (e.kind, e.arch)), sorted(got, key=lambda e: (e.kind, e.arch)))
            else:
                d = first_difference(want, got)
            if d:
                diffs.append(f"[{label}] {d}")
        # entry-level figure, on the -all listing (a superset of the plain one)
        ent_total += max(len(full.entries), len(got_all))
        ent_match += sum(1 for w, g in zip(full.entries, got_all) if w == g) if not args.unordered else \
            len(full.entries) - len(_multiset_minus(full.entries, got_all))

        summary = f"{len(plain.entries)} plain / {len(full.entries)} -all entries"
        if diffs:
            print(f"DISAGREE  {path}: {diffs[0]}" + (f" (+{len(diffs) - 1} more)" if len(diffs) > 1 else ""))
            n_disagree += 1
        else:
            print(f"agree     {path}: {summary}")
            n_agree += 1
        if args.verbose:
            print("    cuobjdump -all: " + ", ".join(str(e) for e in full.entries))
            print("    cudadiag:       " + ", ".join(
                f"{e}{' [rel]' if rel else ''}" for e, rel in diag.entries))

    compared = n_agree + n_disagree
    pct = 100.0 * n_agree / compared if compared else 0.0
    epct = 100.0 * ent_match / ent_total if ent_total else 100.0
    print(f"# files: {n_agree}/{compared} agree ({pct:.1f}%), {n_skip} skipped; "
          f"entries (-all): {ent_match}/{ent_total} match ({epct:.1f}%)")
    if compared == 0:
        return 2
    return 1 if n_disagree else 0


def _multiset_minus(a: list[Entry], b: list[Entry]) -> list[Entry]:
    rest = list(b)
    missing = []
    for e in a:
        if e in rest:
            rest.remove(e)
        else:
            missing.append(e)
    return missing


if __name__ == "__main__":
    sys.exit(main())
