#!/usr/bin/env python3
"""Side by side: resolving a library's whole tree with cudadiag against `ldd` on the same file.

Usage: scripts/loader-bench.py FILE [RUNS]      (CUDADIAG=path/to/cudadiag to use a built binary, no cargo)

Runs each command RUNS times (default 20), interleaved (ldd, ldd -r, cudadiag, cudadiag, then again), so
that a machine slowing down or speeding up mid-run weighs on all of them alike, and prints for each the
median wall time, its ratio to ldd, and the median CPU time (user + system, all threads): on a machine with
few cores the CPU time is what the wall time ends up bound by. For the project's budget ("no slower than
ldd"), point it at libtorch_cuda.so inside a pip layout (site-packages/torch/lib), where its RUNPATH reaches
the nvidia/* wheels. Two ldd rows:
  ldd            the path of every NEEDED library (no symbol is checked: `undefined symbol` goes unseen);
  ldd -r         also performs the relocations, which is how ld.so finds a missing (versioned) symbol;
and two cudadiag rows:
  loader only    `inspect --no-device-code --no-host`: the tree, its dlopen'ed CUDA libraries (found by
                 searching the read-only data of the CUDA libraries for their names, which ldd never
                 reads), every versioned symbol checked against its provider, library findings, without
                 reading the machine's driver and GPUs;
  full inspect   also lists the device code of the binary and of every library with kernels, for the verdict.
"""
import json, os, shutil, statistics, subprocess, sys, time

if len(sys.argv) not in (2, 3) or sys.argv[1] in ("-h", "--help"):
    sys.exit(__doc__.split("\n\n")[1])
path = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) == 3 else 20
repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = os.environ.get("CUDADIAG")
if not binary:
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=repo, check=True)
    binary = os.path.join(repo, "target", "release", "cudadiag")
if not shutil.which(binary):
    sys.exit(f"loader-bench: {binary}: not found")

tree = subprocess.run([binary, "inspect", "--no-device-code", "--format", "json", "--fail-on", "never", path],
                      stdout=subprocess.PIPE, check=True).stdout
libs = json.loads(tree)["libraries"]
print(f"file: {path} ({len(libs)} requests, {sum(x['dlopen'] for x in libs)} of them dlopen)")
print(f"cpus: {os.cpu_count()}", flush=True)

commands = [
    ("ldd", ["ldd", path]),
    ("ldd -r", ["ldd", "-r", path]),
    ("cudadiag (loader only)", [binary, "inspect", "--no-device-code", "--no-host", "--fail-on", "never", path]),
    ("cudadiag (full inspect)", [binary, "inspect", "--fail-on", "never", path]),
]
wall = {name: [] for name, _ in commands}
cpu = {name: [] for name, _ in commands}
null = os.open(os.devnull, os.O_WRONLY)
for _ in range(runs):
    for name, argv in commands:
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.dup2(null, 1)
            os.dup2(null, 2)
            try:
                os.execvp(argv[0], argv)
            finally:
                os._exit(127)
        _, status, usage = os.wait4(pid, 0)
        if os.waitstatus_to_exitcode(status) == 127:
            sys.exit(f"{name}: {argv[0]} could not be run")
        wall[name].append((time.perf_counter() - start) * 1e6)
        cpu[name].append((usage.ru_utime + usage.ru_stime) * 1e6)
us = {name: statistics.median(v) for name, v in wall.items()}
cpu_us = {name: statistics.median(v) for name, v in cpu.items()}
ldd, lddr = us["ldd"], us["ldd -r"]
for name, _ in commands:
    line = f"{name + ':':26} {us[name]:7.0f} us (median of {runs}), cpu {cpu_us[name]:7.0f} us"
    if name != "ldd":
        line += f"  ratio to ldd {us[name] / ldd:.2f}"
    if name == "cudadiag (loader only)":
        line += f", to ldd -r {us[name] / lddr:.2f}"
    print(line)
