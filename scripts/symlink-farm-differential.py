#!/usr/bin/env python3
"""cudadiag's loader against glibc's on a symlink farm of a real venv's site-packages.

Builds, in a temporary directory, a copy of the venv's site-packages made of real directories and one absolute
symbolic link per file (what `cp -as`, Spack views, Nix profiles and Bazel runfiles lay out), optionally
without one wheel (`--leave-out nvidia-cudnn-cu13`: every file its `RECORD` lists, and its dist-info, as if it
had never been installed there). Then, for each `torch/_C*.so` and `torch/lib/*.so` of the farm (named through
the farm, as Python opens them), compares glibc's own resolution (`LD_TRACE_LOADED_OBJECTS=1 ld.so FILE`: the
file's `$ORIGIN` is the farm's directory, links not resolved) with `cudadiag inspect`'s, library by library.
Prints every difference, the agreement figure and where glibc's answers lie (the farm, the original venv, the
system); exits 1 on any difference, 2 when nothing could be compared.

glibc expands a library's `$ORIGIN` from the name it opened (docs/loader-origin.md): through the farm, torch's
RPATH `$ORIGIN/../../nvidia/cudnn/lib` is searched in the farm; with cuDNN left out, ld.so goes on to
ld.so.cache and the system's copy, or finds none. Nothing of the venv is written or copied; the farm is
removed on every exit, signals included (`--keep DIR` builds it in DIR and keeps it).

Usage: scripts/symlink-farm-differential.py --venv PATH [--leave-out DIST] [--cudadiag PATH] [--keep DIR]
"""
import argparse
import glob
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402


def site_packages(venv):
    found = sorted(glob.glob(os.path.join(venv, 'lib', 'python3*', 'site-packages')))
    if not found:
        sys.exit(f'no lib/python3*/site-packages under {venv}')
    return found[0]


def normalise(name):
    """PEP 503's normalised distribution name."""
    return re.sub(r'[-_.]+', '-', name).lower()


def left_out(site, dist):
    """The site-relative paths of every file the distribution `dist` installed (its RECORD), its dist-info
    included; exits when it is not installed."""
    want = normalise(dist)
    for info in os.listdir(site):
        if not info.endswith('.dist-info'):
            continue
        if normalise(info[:-len('.dist-info')].split('-')[0]) != want:
            continue
        files = {info}
        with open(os.path.join(site, info, 'RECORD'), encoding='utf-8') as f:
            for line in f:
                path = line.rsplit(',', 2)[0]
                if path:
                    files.add(os.path.normpath(path))
        return files
    sys.exit(f'{dist} is not installed in {site}')


def build_farm(site, farm_site, skip):
    """Mirrors `site` into `farm_site`: real directories, one absolute link per file, none for `skip` (paths
    relative to `site`; a directory in it is left out whole). Returns the number of links made."""
    links = 0
    for d, dirs, files in os.walk(site):
        rel = os.path.relpath(d, site)
        rel = '' if rel == '.' else rel
        dirs[:] = [x for x in dirs if os.path.join(rel, x) not in skip]
        os.makedirs(os.path.join(farm_site, rel), exist_ok=True)
        for f in files:
            r = os.path.join(rel, f)
            if r in skip:
                continue
            os.symlink(os.path.join(d, f), os.path.join(farm_site, r))
            links += 1
    return links


def entries(farm_site):
    """torch's extension module and its libraries, as the farm names them."""
    torch = os.path.join(farm_site, 'torch')
    found = sorted(glob.glob(os.path.join(torch, '_C*.so')) + glob.glob(os.path.join(torch, 'lib', '*.so')))
    return [p for p in found if os.path.isfile(p)]


def where(path, farm, venv):
    if path is None:
        return 'not found'
    if path.startswith(farm + '/'):
        return 'farm'
    if path.startswith(venv + '/') or os.path.realpath(path).startswith(os.path.realpath(venv) + '/'):
        return 'venv'
    return 'system'


def compare(args, farm_dir):
    site = site_packages(args.venv)
    farm_site = os.path.join(farm_dir, os.path.relpath(site, args.venv))
    skip = left_out(site, args.leave_out) if args.leave_out else set()
    start = time.monotonic()
    links = build_farm(site, farm_site, skip)
    print(f'farm: {links} links in {farm_site} ({time.monotonic() - start:.1f} s)'
          + (f', {len(skip)} files of {args.leave_out} left out' if skip else ''))
    files = entries(farm_site)
    expected = {}
    for p in files:
        g = _common.ld_trace(args.ldso, p)
        if g is not None:
            expected[p] = g
    got = _common.cudadiag_libraries(args.cudadiag, sorted(expected))
    total = equal = 0
    bad = set()
    places = {}
    for p in sorted(expected):
        g, o = expected[p], got.get(p, {})
        for name, path in g.items():
            total += 1
            k = where(path, farm_dir, args.venv)
            places[k] = places.get(k, 0) + 1
            mine = o.get(name, '<missing>')
            if mine == path:
                equal += 1
            else:
                bad.add(p)
                print(f'DIFF {os.path.relpath(p, farm_site)}: {name}: glibc {path} cudadiag {mine}')
        for name, path in o.items():
            # An object reused under a second name is listed once by ld.so: not a difference.
            if name not in g and path not in g.values():
                total += 1
                bad.add(p)
                print(f'EXTRA {os.path.relpath(p, farm_site)}: {name}: cudadiag {path}, glibc lists nothing')
    if not total:
        print('nothing compared: no torch/_C*.so or torch/lib/*.so that ld.so loads')
        return 2
    pct = 100.0 * equal / total
    spread = ', '.join(f'{n} {k}' for k, n in sorted(places.items()))
    print(f'{len(expected)} objects, {total} libraries, {equal} equal to ld.so ({pct:.2f}%), '
          f'{len(bad)} objects with a difference; glibc\'s answers: {spread}')
    return 0 if equal == total else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--venv', required=True, help='a venv with torch installed (read only)')
    ap.add_argument('--leave-out', metavar='DIST', help='a distribution not to put in the farm (nvidia-cudnn-cu13)')
    ap.add_argument('--cudadiag', default=_common.default_cudadiag(),
                    help='cudadiag binary (default: $CUDADIAG, else the newer of target/{release,debug})')
    ap.add_argument('--ldso', default='/lib64/ld-linux-x86-64.so.2')
    ap.add_argument('--keep', metavar='DIR', help='build the farm in DIR (created) and keep it')
    a = ap.parse_args()
    a.venv = os.path.abspath(a.venv)
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        return compare(a, os.path.abspath(a.keep))
    # The farm's one owner: removed when the comparison ends, fails or is interrupted (SIGINT, SIGTERM, SIGHUP).
    def stop(signum, _frame):
        raise SystemExit(128 + signum)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, stop)
    farm = tempfile.mkdtemp(prefix='cudadiag-farm-')
    try:
        return compare(a, os.path.realpath(farm))
    finally:
        shutil.rmtree(farm, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
