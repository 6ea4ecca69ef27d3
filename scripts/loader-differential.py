#!/usr/bin/env python3
"""Compares cudadiag's loader emulation with glibc's own resolution on every ELF file of this machine.

For each dynamically linked ELF file (64-bit objects for the native interpreter), runs the system's
`LD_TRACE_LOADED_OBJECTS=1 ld.so FILE` (glibc's trace mode, as ldd: it maps the libraries, it runs none of the
file's code) and
`cudadiag inspect --format json --clear-env` on the same path, and compares, for every library ld.so lists, the
path each side resolved (or "not found"). Prints every difference and the agreement figure.

Usage: scripts/loader-differential.py [--cudadiag PATH] [--limit N] [--env KEY=VALUE ...] [DIR ...]
(--env sets the same variable, e.g. LD_LIBRARY_PATH, for both ld.so and cudadiag.)
Without --cudadiag or $CUDADIAG it builds the release binary (`cargo build --release`) and uses it.
Default dirs: /usr/bin /usr/sbin /usr/lib /usr/libexec /usr/local /opt.
"""
import argparse, os, stat, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

def elf_files(dirs, limit):
    seen = set()
    for top in dirs:
        for d, _, files in os.walk(top):
            for f in files:
                p = os.path.realpath(os.path.join(d, f))
                if p in seen:
                    continue
                seen.add(p)
                try:
                    st = os.stat(p)
                    if not stat.S_ISREG(st.st_mode) or st.st_size < 64:
                        continue
                    with open(p, 'rb') as fh:
                        h = fh.read(20)
                except OSError:
                    continue
                # ELF64, little-endian, ET_EXEC/ET_DYN, x86-64 (or the machine of this ld.so).
                if h[:4] != b'\x7fELF' or h[4] != 2 or h[16] not in (2, 3):
                    continue
                yield p
                if limit and len(seen) >= limit:
                    return

ENV = {}

def glibc(ldso, path):
    return _common.ld_trace(ldso, path, ENV)

def ours(cudadiag, paths):
    return _common.cudadiag_libraries(cudadiag, paths, ENV)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cudadiag', default=os.environ.get('CUDADIAG'),
                    help='cudadiag binary (default: $CUDADIAG, else target/release/cudadiag, built first)')
    ap.add_argument('--ldso', default='/lib64/ld-linux-x86-64.so.2')
    ap.add_argument('--limit', type=int, default=0)
    ap.add_argument('--env', action='append', default=[])
    ap.add_argument('dirs', nargs='*', default=['/usr/bin', '/usr/sbin', '/usr/lib', '/usr/libexec', '/usr/local', '/opt'])
    a = ap.parse_args()
    if not a.cudadiag:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        subprocess.run(['cargo', 'build', '--release', '--quiet'], cwd=repo, check=True)
        a.cudadiag = os.path.join(repo, 'target', 'release', 'cudadiag')
    for kv in a.env:
        k, _, v = kv.partition('=')
        ENV[k] = v
    files = [p for p in elf_files([d for d in a.dirs if os.path.isdir(d)], a.limit)]
    expected = {}
    for p in files:
        try:
            g = glibc(a.ldso, p)
        except subprocess.TimeoutExpired:
            g = None
        if g is not None:
            expected[p] = g
    paths = sorted(expected)
    got = {}
    for i in range(0, len(paths), 200):
        got.update(ours(a.cudadiag, paths[i:i + 200]))
    total = equal = 0
    bad_files = set()
    for p in paths:
        g, o = expected[p], got.get(p, {})
        o_paths = set(v for v in o.values() if v)
        for name, where in g.items():
            total += 1
            mine = o.get(name, '<missing>')
            if mine == where:
                equal += 1
            else:
                bad_files.add(p)
                print(f'DIFF {p}: {name}: glibc {where} cudadiag {mine}')
        for name, where in o.items():
            # An object reused under a second name is listed once by ld.so: not a difference.
            if name not in g and where not in g.values():
                total += 1
                bad_files.add(p)
                print(f'EXTRA {p}: {name}: cudadiag {where}, glibc lists nothing')
    pct = 100.0 * equal / total if total else 100.0
    print(f'{len(paths)} files, {total} resolved libraries, {equal} equal ({pct:.2f}%), '
          f'{len(bad_files)} files with a difference')
    return 0 if equal == total else 1

sys.exit(main())
