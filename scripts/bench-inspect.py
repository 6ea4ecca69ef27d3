#!/usr/bin/env python3
"""Side-by-side wall time and peak RSS of cuobjdump's listing vs cudadiag's inspection.

    scripts/bench-inspect.py FILE [--cudadiag PATH] [--cuobjdump PATH] [--runs N] [--warmup N]

cudadiag is --cudadiag, else $CUDADIAG, else the newer of the repo's target/{release,debug} builds,
else cudadiag on PATH; cuobjdump is --cuobjdump, else $CUOBJDUMP, else cuobjdump on PATH, else
/usr/local/cuda/bin/cuobjdump; N is --runs, else $RUNS, else 5.

Runs ``cuobjdump --list-elf --list-ptx FILE`` and ``cudadiag inspect --no-libraries --format json FILE`` (the listing cuobjdump gives, without library resolution)
N times each (default 5, after 1 warm-up run each, alternating so that page-cache effects hit
both alike), measures every run's wall time and its peak resident set size from the child's
own rusage (``wait4``; ``ru_maxrss`` is in KiB on Linux; see Runner for how), and prints the medians and the
ratios cuobjdump/cudadiag.  The project's performance budget for a libtorch_cuda.so-class
file is at least 50x on both.  Needs no /usr/bin/time (uses it, or cc, if present).

Exit status: 0 measured, 1 a tool failed (exit status >= 2 for cudadiag, nonzero with no
listing for cuobjdump), 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO, default_cudadiag, default_cuobjdump  # noqa: E402



# Peak RSS is measured on the process that runs the tool.  Linux carries the forking
# process's RSS high-water mark into the child across exec, so a child forked straight from
# this Python process can never report less than Python's own RSS (~10-15 MiB).  The runner
# therefore forks from something small: a 20-line C helper compiled here if a C compiler is
# found, else /usr/bin/time; only if neither exists does it fork from Python (and says so).
RUNNER_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct timespec a, b;
    struct rusage ru;
    int st = 0;
    if (argc < 2) return 2;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1); dup2(fd, 2);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    if (pid < 0 || wait4(pid, &st, 0, &ru) < 0) return 2;
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.6f %ld %d\n", (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
           ru.ru_maxrss, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}
"""


class Runner:
    def __init__(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="bench-inspect.")
        self.kind = "python"
        want = os.environ.get("BENCH_RUNNER", "")  # force one: c-helper | usr-bin-time | python
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if cc and want in ("", "c-helper"):
            src = os.path.join(self.tmp, "runner.c")
            exe = os.path.join(self.tmp, "runner")
            with open(src, "w") as f:
                f.write(RUNNER_C)
            if subprocess.run([cc, "-O2", "-o", exe, src], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                self.kind, self.exe = "c-helper", exe
                return
        if os.access("/usr/bin/time", os.X_OK) and want in ("", "usr-bin-time"):
            self.kind = "usr-bin-time"

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def measure(self, cmd: list[str]) -> tuple[float, int, int]:
        """Run cmd with output discarded; return (wall seconds, peak RSS KiB, exit status)."""
        if self.kind == "c-helper":
            out = subprocess.run([self.exe] + cmd, stdout=subprocess.PIPE, check=True).stdout.split()
            return float(out[0]), int(out[1]), int(out[2])
        if self.kind == "usr-bin-time":
            res = os.path.join(self.tmp, "time.out")
            t0 = time.perf_counter()
            subprocess.run(["/usr/bin/time", "-f", "%M %x", "-o", res] + cmd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wall = time.perf_counter() - t0
            with open(res) as f:
                rss, rc = f.read().split()[-2:]
            return wall, int(rss), int(rc)
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
        return wall, int(ru.ru_maxrss), rc


def fmt_kib(k: float) -> str:
    return f"{k / 1024:.1f} MiB" if k >= 1024 else f"{k:.0f} KiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--cudadiag", default=default_cudadiag())
    ap.add_argument("--cuobjdump", default=default_cuobjdump())
    ap.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", "5")))
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()

    if not os.path.isfile(args.file):
        print(f"bench: no such file: {args.file}", file=sys.stderr)
        return 2
    tools = {}
    for name, val in (("cuobjdump", args.cuobjdump), ("cudadiag", args.cudadiag)):
        path = shutil.which(val) or (val if os.path.isfile(val) else None)
        if not path:
            print(f"bench: {name} not found: {val}", file=sys.stderr)
            return 2
        tools[name] = path
    cmds = {
        "cuobjdump": [tools["cuobjdump"], "--list-elf", "--list-ptx", args.file],
        "cudadiag": [tools["cudadiag"], "inspect", "--no-libraries", "--format", "json", args.file],
    }
    ok_codes = {"cuobjdump": {0, 255}, "cudadiag": {0, 1}}  # 255: "no device code"; 1: findings

    size = os.path.getsize(args.file)
    print(f"# file: {args.file} ({size / 1e6:.1f} MB); runs: {args.runs} (+{args.warmup} warm-up) each")
    for n, c in cmds.items():
        print(f"# {n}: {' '.join(c)}")

    runner = Runner()
    try:
        floor = runner.measure(["true"])[1]
        print(f"# measured via {runner.kind}; RSS floor (running `true` the same way): {fmt_kib(floor)}"
              + ("  (forked from Python: small RSS values are Python's, not the tool's)"
                 if runner.kind == "python" else ""))
        results: dict[str, list[tuple[float, int]]] = {n: [] for n in cmds}
        failed = False
        for i in range(args.warmup + args.runs):
            for n, c in cmds.items():
                wall, rss, rc = runner.measure(c)
                if rc not in ok_codes[n]:
                    print(f"bench: {n} exited {rc} (run {i + 1})", file=sys.stderr)
                    failed = True
                if i >= args.warmup:
                    results[n].append((wall, rss))
    finally:
        runner.close()

    print(f"{'tool':<10} {'median s':>10} {'min s':>9} {'max s':>9} {'median RSS':>12} {'max RSS':>12}")
    med = {}
    for n, rs in results.items():
        walls = [w for w, _ in rs]
        rsss = [r for _, r in rs]
        med[n] = (statistics.median(walls), statistics.median(rsss))
        print(f"{n:<10} {med[n][0]:>10.3f} {min(walls):>9.3f} {max(walls):>9.3f} "
              f"{fmt_kib(med[n][1]):>12} {fmt_kib(max(rsss)):>12}")
    t_ratio = med["cuobjdump"][0] / med["cudadiag"][0] if med["cudadiag"][0] > 0 else float("inf")
    m_ratio = med["cuobjdump"][1] / med["cudadiag"][1] if med["cudadiag"][1] > 0 else float("inf")
    print(f"time ratio   cuobjdump/cudadiag = {t_ratio:.1f}x   (budget >= 50x for libtorch-class files)")
    print(f"memory ratio cuobjdump/cudadiag = {m_ratio:.1f}x   (budget >= 50x for libtorch-class files)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
