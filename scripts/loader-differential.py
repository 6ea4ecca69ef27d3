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
import argparse, json, os, re, stat, subprocess, sys

LINE = re.compile(r'^\t(\S+) => (.+?)(?: \(0x[0-9a-f]+\))?$')
# A library requested by a path (a NEEDED entry with a `/`) is listed by its path alone.
PATHLINE = re.compile(r'^\t(/\S+) \(0x[0-9a-f]+\)$')

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
    # What ldd runs: trace mode maps the libraries and runs none of the file's code; unlike `--list` it reports
    # a missing library as `not found` and goes on.
    r = subprocess.run([ldso, path], capture_output=True, text=True, env={**ENV, 'LD_TRACE_LOADED_OBJECTS': '1'},
                       timeout=30)
    if r.returncode != 0 and 'not a dynamic executable' in (r.stdout + r.stderr):
        return None
    out = {}
    for line in r.stdout.splitlines():
        m = LINE.match(line)
        pm = PATHLINE.match(line)
        if pm and not os.path.basename(pm.group(1)).startswith('ld-linux'):
            out.setdefault(pm.group(1), pm.group(1))
        if m:
            name, where = m.group(1), m.group(2)
            out.setdefault(name, None if where == 'not found' else where)
    if r.returncode != 0 and not out:
        return None
    return out

def ours(cudadiag, paths):
    env_args = [a for k, v in ENV.items() for a in ('--env', f'{k}={v}')]
    r = subprocess.run([cudadiag, 'inspect', '--no-device-code', '--format', 'json', '--clear-env', *env_args, '--fail-on', 'never', *paths],
                       capture_output=True, text=True, timeout=600)
    doc = json.loads(r.stdout)
    per = {}
    # Objects mapped only at run time: the dlopen'ed CUDA libraries and what they bring in. ld.so's trace lists
    # the startup image alone, so their dependencies (libcuda.so.1 needs libm.so.6, say) are left out here.
    runtime = {}
    for l in doc['libraries']:
        rt = runtime.setdefault(l['binary'], set())
        if (l['dlopen'] or l['needed_by'] in rt) and l['how'] != 'already_loaded' and l['path']:
            rt.add(l['path'])
    for l in doc['libraries']:
        if l['dlopen'] or l['needed_by'] in runtime.get(l['binary'], ()):
            continue
        m = per.setdefault(l['binary'], {})
        if l['how'] == 'already_loaded':
            continue
        key = l['path'] if '/' in l['soname'] and l['path'] else l['soname']
        m.setdefault(key, l['path'])
    return per

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
