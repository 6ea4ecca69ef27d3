"""Helpers the Python scripts share (not a script itself). A script imports it from its own directory:

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _common

so `python3 scripts/NAME.py` works from any directory.
"""

import io
import os
import shutil
import tarfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_cudadiag() -> str:
    """$CUDADIAG, else the newer of the repo's target/{release,debug} builds, else cudadiag on PATH."""
    if os.environ.get("CUDADIAG"):
        return os.environ["CUDADIAG"]
    built = [p for p in (os.path.join(REPO, "target", b, "cudadiag") for b in ("release", "debug"))
             if os.access(p, os.X_OK)]
    return max(built, key=os.path.getmtime) if built else "cudadiag"


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
