#!/usr/bin/env bash
# scripts/bench-hostile-io.sh CUDADIAG [WORKDIR]
#
# The hostile inputs of issue 19 cases 1, 3, 6, 8, 9, 10 and 11 (snapshot), built in WORKDIR (default a new
# temporary directory) from fixtures/, and one line per case: exit status, wall time, peak RSS and what the
# output shows. Each run is capped with `ulimit -v 4000000` (KiB) and `timeout 20` (CAP_S=N to change it); a
# cudadiag that predates issue 19 hangs or runs out of memory on several. Case 6 counts the host paths opened
# when strace is installed; case 8 runs RACE_RUNS (default 500) inspections while a loop rewrites the input.
# Needs python3, /usr/bin/time and 8 GiB of sparse-file room in WORKDIR (no blocks are written).
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(realpath "$1")
work=${2:-$(mktemp -d)}
cap=${CAP_S:-20}
runs=${RACE_RUNS:-500}
mkdir -p "$work"
work=$(realpath "$work")
cd "$work"

# Roots: the healthy host fixture, each with one file made hostile.
host=$repo/fixtures/hosts/healthy
for r in fifover big8g selfinc; do
    rm -rf "$r"
    cp -r "$host/root" "$r"
done
rm -f fifover/proc/driver/nvidia/version
mkfifo fifover/proc/driver/nvidia/version
truncate -s 8G big8g/proc/driver/nvidia/version
for _ in $(seq 10); do echo 'include /etc/ld.so.conf'; done >> selfinc/etc/ld.so.conf
rm -rf esc
mkdir -p esc/root/usr/lib/python3.99/site-packages
ln -s / esc/root/opt
machine=(--clear-env)
while IFS= read -r kv; do [ -n "$kv" ] && machine+=(--env "$kv"); done < "$host/env"

rm -f fifo
mkfifo fifo
cp "$repo/fixtures/cuda13/cudart_shared" app
cp "$repo/fixtures/cuda13/multi" src.bin
cp "$repo/fixtures/cuda13/sm80" sm80
printf '{"snapshot_version": 99, "tool": "x", "facts": {"host": 7}}\n' > new.json
python3 - <<'PY'
# 40,000 `sass` entries and 40,000 `forbid` globs, 20,000 distinct pairs each repeated.
with open('big.toml', 'w') as f:
    f.write('[targets]\nsass = [\n' + '"sm_80", "sm_90",\n' * 20000 + ']\n')
    f.write('[libraries]\nforbid = [\n' + '"libcuda.so*", "libnvidia-ml.so*",\n' * 20000 + ']\n')
PY

run() { # name, note (evaluated after), command...
    local name=$1 note=$2
    shift 2
    local rc=0
    ( ulimit -v 4000000
      /usr/bin/time -v -o "$work/t.txt" timeout "${limit:-$cap}" "$@" >"$work/out.txt" 2>"$work/err.txt" ) || rc=$?
    printf '%-15s rc=%-3s wall=%-8s rss=%-8sKiB %s\n' "$name" "$rc" \
        "$(grep 'Elapsed (wall' t.txt | awk '{print $NF}')" \
        "$(grep 'Maximum resident' t.txt | awk '{print $NF}')" \
        "$(if [ "$rc" = 124 ]; then echo "timed out after ${limit:-$cap} s"; else eval "$note"; fi)"
}
# What a run said: its first message on stderr, else the last line of its output.
said='{ grep -v "^Command" err.txt | grep . || tail -1 out.txt; } | head -1 | cut -c1-110'
# What doctor made of the kernel module's version file.
version='{ grep -m1 -o "/proc/driver/nvidia/version .*" out.txt || grep -m1 "^driver" out.txt; } | cut -c1-110'

run case1-fifo "$said" "$bin" inspect --no-host fifo
run case1-policy "$said" "$bin" audit --policy fifo app
run case1-root "$version" "$bin" doctor --no-catalog --color never --root fifover "${machine[@]}"
run case1-zero "$said" "$bin" inspect --no-host /dev/zero
run case1-facts "$said" "$bin" doctor --facts /dev/zero
run case1-matrix "$said" "$bin" matrix --matrix fifo --toolkit 12.4
run case9-8gib "$version" "$bin" doctor --no-catalog --color never --root big8g "${machine[@]}"
run case3-include "$said" "$bin" doctor --color never --root selfinc "${machine[@]}"

# Case 6: host paths that `inspect --root esc/root` opened, resolved as the kernel resolved them (R/opt is /);
# cudadiag's own start-up files (its libraries, ld.so.cache, /proc/self, the CPU count) are not counted.
host_paths() {
    command -v strace >/dev/null || { echo "host paths not counted (no strace)"; return; }
    ( ulimit -v 4000000
      timeout "$cap" strace -f -qq -o "$work/trace" -e trace=openat,open "$@" >/dev/null 2>&1 ) || true
    # shellcheck disable=SC2046
    python3 - "$work/trace" "$work/esc/root" "$work/app" "$bin" /etc/ld.so.cache /etc/ld.so.preload /proc/self \
        /proc/thread-self /sys/fs/cgroup /sys/devices/system/cpu /dev/null /proc/sys/vm/overcommit_memory \
        $(for l in $(ldd "$bin" | grep -o '/[^ ]*'); do echo "$l" "$(realpath "$l")"; done) <<'PY'
import os, sys
trace, own = sys.argv[1], sys.argv[2:]
paths, dirs, pending = set(), set(), {}
for line in open(trace, errors="replace"):
    pid, _, call = line.rstrip("\n").partition(" ")
    if call.startswith("<..."):  # a call split across threads: judged by its resumed result
        if pid not in pending:
            continue
        path, first = pending.pop(pid)
        line = first + call
    else:
        parts = call.split('"')
        if len(parts) < 2:
            continue
        path = parts[1]
        if call.endswith("<unfinished ...>"):
            pending[pid] = (path, call)
            continue
    if "= -1 " in line or not path.startswith("/"):
        continue
    # resolved as the kernel resolved it; /proc/self is the traced process's own, not this script's
    real = path if path.startswith(("/proc/self", "/proc/thread-self")) else os.path.realpath(path)
    if any(real == t or real.startswith(t + "/") for t in own):
        continue
    paths.add(real)
    if "O_DIRECTORY" in line:
        dirs.add(real)
print(f"host paths opened: {len(paths)} ({len(dirs)} directories)")
PY
}
run case6-walk 'host_paths "$bin" inspect --root "$work/esc/root" "$work/app"' \
    "$bin" inspect --root "$work/esc/root" "$work/app"

# Case 8: inspect a 1 MB binary while another process rewrites it as cp does (truncate, then write).
cp src.bin victim
( while :; do cp src.bin victim; done ) &
writer=$!
trap 'kill "$writer" 2>/dev/null || true' EXIT
rm -f race.codes race.err
limit=$((runs * cap)) run case8-race \
    'echo "$runs runs: $(sort race.codes | uniq -c | awk "{printf \"%s%s exit %s\", s, \$1, \$2; s=\", \"}"); SIGBUS (135): $(grep -c "^135$" race.codes || true)"' \
    bash -c 'for _ in $(seq "$1"); do timeout "$2" "$0" inspect --no-host victim >/dev/null 2>>race.err; echo $? >> race.codes; done' \
    "$bin" "$runs" "$cap"
kill "$writer"
wait "$writer" 2>/dev/null || true
trap - EXIT

run case10-policy 'echo "stdout=$(wc -c < out.txt)B $(grep -o "\"code\": \"CD[0-9]*\"" out.txt | wc -l) findings"' \
    "$bin" audit --policy big.toml --format json sm80
run case11-snap "$said" "$bin" doctor --facts new.json
