"""Helpers the Python scripts share (not a script itself). A script imports it from its own directory:

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _common

so `python3 scripts/NAME.py` works from any directory.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_cudadiag() -> str:
    """$CUDADIAG, else the newer of the repo's target/{release,debug} builds, else cudadiag on PATH."""
    if os.environ.get("CUDADIAG"):
        return os.environ["CUDADIAG"]
    built = [p for p in (os.path.join(REPO, "target", b, "cudadiag") for b in ("release", "debug"))
             if os.access(p, os.X_OK)]
    return max(built, key=os.path.getmtime) if built else "cudadiag"


class Scratch:
    """The one owner of a run's temporary files (a C runner, a venv, a baseline worktree, generated inputs):
    removed by `close()`, which the script calls in a `finally`; SIGINT and SIGTERM are turned into SystemExit
    so that it runs then too. `group` is the process group of a child in flight, killed on the way out."""

    def __init__(self, prefix: str = "cudadiag-scratch.") -> None:
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.worktrees: list[str] = []
        self.group: int | None = None
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda s, _f: sys.exit(128 + s))

    def close(self) -> None:
        if self.group is not None:
            try:
                os.killpg(self.group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for wt in self.worktrees:
            subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", wt],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


def shipping_profile(tree: str) -> str:
    """The Cargo profile the release artefacts of the checkout `tree` are built with: `dist` where its
    Cargo.toml defines one (whole-program optimisation, since stop 45), else `release`. A benchmark measures
    what users install: a commit of either era against another is each in its shipped form."""
    try:
        with open(os.path.join(tree, "Cargo.toml"), encoding="utf-8") as f:
            return "dist" if any(line.strip() == "[profile.dist]" for line in f) else "release"
    except OSError:
        return "release"


def commit_build(spec: str, scratch: Scratch, who: str) -> str:
    """An executable path as given, else the build that ships of the commit `spec` (its `dist` profile, where
    its Cargo.toml has one, else `release`: see `shipping_profile`): built once, in a temporary `git worktree`
    with `cargo build --profile P --locked` into target/bench-baselines/target (its own target dir, seeded
    from target/P, so the working build is untouched), and cached as
    target/bench-baselines/COMMIT/cudadiag (by full commit id; a second run does not rebuild). `who` names the
    script and its flag in messages (`bench: --baseline`); exit 2 when `spec` is neither, 1 when it does not
    build."""
    if os.path.isfile(spec) and os.access(spec, os.X_OK):
        return os.path.abspath(spec)
    r = subprocess.run(["git", "-C", REPO, "rev-parse", "--verify", "--quiet", spec + "^{commit}"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if r.returncode != 0:
        print(f"{who} {spec}: neither an executable nor a commit", file=sys.stderr)
        sys.exit(2)
    commit = r.stdout.strip()
    root = os.path.join(REPO, "target", "bench-baselines")
    cached = os.path.join(root, commit, "cudadiag")
    if os.access(cached, os.X_OK):
        return cached
    wt = os.path.join(scratch.dir, "baseline-" + commit[:12])
    subprocess.run(["git", "-C", REPO, "worktree", "add", "--quiet", "--detach", wt, commit], check=True)
    scratch.worktrees.append(wt)
    target = os.path.join(root, "target")
    profile = shipping_profile(wt)
    seed = os.path.join(REPO, "target", profile)
    if not os.path.isdir(os.path.join(target, profile)) and os.path.isdir(seed):
        # The dependencies built once for this tree: cargo rebuilds only what the commit's Cargo.lock changes.
        shutil.copytree(seed, os.path.join(target, profile), symlinks=True)
    print(f"# building {commit[:12]} ({profile} profile) in a temporary worktree (target dir {target}) ...",
          file=sys.stderr, flush=True)
    build = subprocess.Popen(["cargo", "build", "--profile", profile, "--locked", "--quiet"], cwd=wt,
                             start_new_session=True, env={**os.environ, "CARGO_TARGET_DIR": target})
    scratch.group = build.pid  # killed, with its compilers, if the run is interrupted
    if build.wait() != 0:
        sys.exit(f"{who} {commit[:12]}: does not build")
    scratch.group = None
    os.makedirs(os.path.dirname(cached), exist_ok=True)
    shutil.copy2(os.path.join(target, profile, "cudadiag"), cached + ".tmp")
    os.replace(cached + ".tmp", cached)
    return cached


def default_cuobjdump() -> str:
    """$CUOBJDUMP, else cuobjdump on PATH, else /usr/local/cuda/bin/cuobjdump."""
    if os.environ.get("CUOBJDUMP"):
        return os.environ["CUOBJDUMP"]
    if shutil.which("cuobjdump"):
        return "cuobjdump"
    return "/usr/local/cuda/bin/cuobjdump"


def tar_add(tf, name, data=None, mode=0o644, link=None):
    """Adds to the tar `tf` a directory (no `data`), a symbolic link to `link`, or a file of `data`; mtime 0."""
    info = tarfile.TarInfo(name)
    info.mtime = 0
    if link is not None:
        info.type, info.linkname = tarfile.SYMTYPE, link
        tf.addfile(info)
    elif data is None:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tf.addfile(info)
    else:
        info.size, info.mode = len(data), mode
        tf.addfile(info, io.BytesIO(data))


def tar_layer(build):
    """The bytes of a PAX tar that `build(tf)` fills: one image layer."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        build(tf)
    return buf.getvalue()


def tar_debian_base(tf, extra_dirs=()):
    """The start of a Debian-like x86-64 system layer: its directories (then `extra_dirs`), /etc/debian_version,
    the /lib and /lib64 links, and this machine's ld.so, libc, libm, libgcc_s and libstdc++ (real files, so
    the loader finds what a C++ program needs)."""
    for d in ["usr", "usr/lib", "usr/lib/x86_64-linux-gnu", "usr/lib64", "usr/local", "usr/local/bin"] + list(extra_dirs):
        tar_add(tf, d)
    tar_add(tf, "etc/debian_version", b"12.0\n")
    tar_add(tf, "lib", link="usr/lib")
    tar_add(tf, "lib64", link="usr/lib64")
    tar_add(tf, "usr/lib64/ld-linux-x86-64.so.2", link="../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    for n in ["ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libgcc_s.so.1", "libstdc++.so.6"]:
        tar_add(tf, "usr/lib/x86_64-linux-gnu/" + n, open(os.path.realpath("/lib/x86_64-linux-gnu/" + n), "rb").read())


# One line of glibc's trace mode: `\tNAME => PATH (0x…)` or `\tNAME => not found`.
TRACE_LINE = re.compile(r'^\t(\S+) => (.+?)(?: \(0x[0-9a-f]+\))?$')
# A library requested by a path (a NEEDED entry with a `/`) is listed by its path alone.
TRACE_PATH_LINE = re.compile(r'^\t(/\S+) \(0x[0-9a-f]+\)$')


def ld_trace(ldso, path, env=None, timeout=30):
    """glibc's own resolution of `path`: `LD_TRACE_LOADED_OBJECTS=1 ld.so PATH` (what ldd runs: trace mode maps
    the libraries and runs none of the file's code; unlike `--list` it reports a missing library as `not
    found` and goes on), with exactly `env`. {name or path: path, or None when not found}; None when ld.so
    does not load the file. Named on ld.so's command line, the file's `$ORIGIN` is that name's directory,
    links not resolved, as for a library a process opens with dlopen."""
    r = subprocess.run([ldso, path], capture_output=True, text=True,
                       env={**(env or {}), 'LD_TRACE_LOADED_OBJECTS': '1'}, timeout=timeout)
    if r.returncode != 0 and 'not a dynamic executable' in (r.stdout + r.stderr):
        return None
    out = {}
    for line in r.stdout.splitlines():
        m = TRACE_LINE.match(line)
        pm = TRACE_PATH_LINE.match(line)
        if pm and not os.path.basename(pm.group(1)).startswith('ld-linux'):
            out.setdefault(pm.group(1), pm.group(1))
        if m:
            name, where = m.group(1), m.group(2)
            out.setdefault(name, None if where == 'not found' else where)
    if r.returncode != 0 and not out:
        return None
    return out


def cudadiag_libraries(cudadiag, paths, env=None, timeout=600):
    """cudadiag's resolution of each of `paths` (`inspect --no-device-code --format json --clear-env`, with
    `env` given by `--env`), in the shape of `ld_trace`: {binary: {name or path: path or None}}. Only the
    startup image: the objects mapped by a known dlopen, and what they bring in, are left out, as ld.so's
    trace lists none of them; a request answered by an object already loaded is left out as ld.so lists it
    once."""
    env_args = [a for k, v in (env or {}).items() for a in ('--env', f'{k}={v}')]
    r = subprocess.run([cudadiag, 'inspect', '--no-device-code', '--format', 'json', '--clear-env', *env_args,
                        '--fail-on', 'never', *paths], capture_output=True, text=True, timeout=timeout)
    doc = json.loads(r.stdout)
    per = {}
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
