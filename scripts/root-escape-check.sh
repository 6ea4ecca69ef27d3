#!/usr/bin/env bash
# Does `cudadiag --root` stay inside its root? Builds a root made of escapes (absolute links to /, `..` chains,
# links to the host's /proc, /sys, /dev and /etc, link loops, a self-including ld.so.conf, canary libraries
# outside the root), runs doctor, inspect and snapshot on it under strace, and lists every path outside the root
# that was opened, stat'ed or read as a link successfully (cudadiag's own runtime files excepted: its shared
# libraries and their cache at start, /proc/self, the cgroup and CPU files the runtime reads for a thread count,
# /proc/sys/vm/overcommit_memory, which glibc's malloc reads the first time it may give a thread arena's memory
# back, so only on some runs: the list of tests/it/host.rs `runtime_paths`).
# Usage: scripts/root-escape-check.sh [CUDADIAG_BINARY]   (default: target/release/cudadiag, built if absent;
# SELF_INCLUDES=N sets the number of `include /etc/ld.so.conf` lines, 10 by default, 0 to look at walks alone)
# Exit 0 when nothing escaped, 1 otherwise. tests/it/host.rs `nothing_outside_the_root_is_read` is the same check.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/cudadiag}
[ -x "$bin" ] || cargo build --release --quiet
bin=$(realpath "$bin")
command -v strace >/dev/null || { echo "strace is not installed (apt-get install strace)" >&2; exit 2; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
R=$t/root; O=$t/outside
mkdir -p "$O" "$R/etc" "$R/usr/lib/python3.99/site-packages" "$R/usr/lib/x86_64-linux-gnu" "$R/var/lib/dpkg" "$R/home"
printf '\177ELF canary' > "$O/libcudart.so.13"
ln -s / "$R/opt"
ln -s ../../outside "$R/usr/local"
ln -s "$O" "$R/usr/lib/python3.99/site-packages/nvidia"
ln -s "$O" "$R/usr/lib/x86_64-linux-gnu/cuda"
for d in proc sys dev root lib64; do ln -s "/$d" "$R/$d"; done
ln -s /etc "$R/etc/ld.so.conf.d"
ln -s /etc/ld.so.cache "$R/etc/ld.so.cache"
ln -s /var/lib/dpkg/status "$R/var/lib/dpkg/status"
ln -s /root "$R/home/user"
ln -s loop-b "$R/loop-a"; ln -s loop-a "$R/loop-b"
{ printf 'include ld.so.conf.d/*.conf\n/opt/lib\n/../../../../usr/lib\n/loop-a\n'
  for _ in $(seq "${SELF_INCLUDES:-10}"); do echo 'include /etc/ld.so.conf'; done; } > "$R/etc/ld.so.conf"
cp fixtures/cuda13/cudart_shared "$t/app"
machine=(--root "$R" --clear-env --env HOME=/home/user --env "LD_LIBRARY_PATH=/opt/lib:/../../..:/loop-a:/proc/self"
         --env PATH=/opt/bin:/usr/local/bin --env CUDA_HOME=/opt)
allowed=("$(realpath "$t")/root" "$t/root" "$t/app" "$t/trace" "$bin" /etc/ld.so.cache /etc/ld.so.preload /proc/self /proc/thread-self
         /sys/fs/cgroup /sys/devices/system/cpu /proc/sys/vm/overcommit_memory /dev/null)
for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do allowed+=("$lib" "$(realpath "$lib")"); done
status=0
for cmd in "doctor --format json" "inspect --format json $t/app" "snapshot -o -"; do
  set -- $cmd
  sub=$1; shift
  start=$(date +%s%N)
  rc=0
  (cd "$t" && env -i timeout 60 strace -f -qq -o "$t/trace" \
     -e trace=openat,open,stat,lstat,newfstatat,statx,readlink,readlinkat \
     "$bin" "$sub" "${machine[@]}" "$@" > "$t/out" 2>&1) || rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  # The first string of each successful call (a call split across threads is judged by its resumed result),
  # resolved as the kernel resolved it: a path spelled under the root may still lead out through a link.
  escaped=$(python3 - "$t/trace" "${allowed[@]}" <<'PY'
import os, sys, collections
trace, allowed = sys.argv[1], sys.argv[2:]
def inside(p):
    return any(p == a or p.startswith(a + "/") for a in allowed)
pending, hits = {}, collections.Counter()
for line in open(trace, errors="replace"):
    pid, _, call = line.rstrip("\n").partition(" ")
    if call.startswith("<..."):
        if pid not in pending:
            continue
        path, first = pending.pop(pid)
    else:
        parts = call.split('"')
        if len(parts) < 2:
            continue
        path, first = parts[1], call
        if call.endswith("<unfinished ...>"):
            pending[pid] = (path, call)
            continue
    if "= -1 " in call or not path.startswith("/"):
        continue
    nofollow = first.startswith(("lstat", "readlink")) or "AT_SYMLINK_NOFOLLOW" in first
    head, name = os.path.split(path)
    if path.startswith(("/proc/self", "/proc/thread-self")):
        real = path  # the traced process's own, not this script's
    elif nofollow:
        real = os.path.join(os.path.realpath(head), name)
    else:
        real = os.path.realpath(path)
    if not inside(real):
        hits[real] += 1
for p, n in hits.most_common():
    print(f"{n:6} {p}")
PY
)
  canary=$(grep -c canary "$t/out" || true)
  if [ "$rc" = 124 ]; then
    status=1
    echo "$sub: TIMED OUT after 60 s"
  elif [ -n "$escaped" ] || [ "$canary" != 0 ]; then
    status=1
    echo "$sub: ${ms} ms, ESCAPED ($(echo "$escaped" | grep -c . || true) distinct paths; canary in output: $canary)"
    head -15 <<< "$escaped"
  else
    echo "$sub: ${ms} ms, nothing outside the root"
  fi
done
exit $status
