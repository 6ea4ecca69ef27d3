#!/usr/bin/env bash
# The Slurm recipes of deploy/slurm/ on a real one-node cluster started here (Debian's slurm-wlm and munge:
# `apt-get install -y slurm-wlm munge`; run as root): munged, slurmctld and slurmd with a generated minimal
# slurm.conf, everything under a temporary directory on private ports, torn down at the end.
#   1. collection: deploy/slurm/collect.sh (srun --output=DIR/%N.json cudadiag snapshot -o -), then fleet;
#   2. prolog: deploy/slurm/cudadiag-prolog.sh against a test root that fails (driver-upgraded-no-reboot):
#      the job does not run and the node is drained; against one that passes (healthy): the job runs;
#   3. health check: deploy/slurm/cudadiag-healthcheck.sh drains the node with "cudadiag: <slug>", then
#      resumes it once the root passes.
# The test roots stand for the node's own machine: the scripts get `--root fixtures/hosts/CASE/root` through
# their settings file (CUDADIAG_CONF), as an operator's /etc/default/cudadiag would give other arguments.
# Usage: scripts/slurm-check.sh [CUDADIAG]   (default: the release build). Prints each step and its time.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
if [ -n "${1:-}" ]; then bin=$(realpath "$1"); else cargo build --release --quiet; bin=$repo/target/release/cudadiag; fi
for tool in munged slurmctld slurmd srun scontrol sinfo; do
  command -v "$tool" > /dev/null || { echo "slurm-check: $tool missing: apt-get install -y slurm-wlm munge" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "slurm-check: run as root (slurmd runs prologs and health checks as root)" >&2; exit 2; }

t=$(mktemp -d /tmp/slurm-check.XXXXXX)
chmod 755 "$t"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
  rm -rf "$t"
}
trap cleanup EXIT
start=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
step() { printf '[%6ss] %s\n' "$(since "$start")" "$*"; }
fail() { echo "slurm-check: FAILED: $*" >&2; tail -n 20 "$t"/log/*.log >&2 || true; exit 1; }

node=$(hostname -s)
mkdir -p "$t/munge" "$t/log" "$t/state" "$t/spool" "$t/reports"
chmod 711 "$t/munge"
# munge: its own key and socket, nothing of the machine's.
dd if=/dev/urandom of="$t/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$t/munge/munge.key"
munged --force --key-file="$t/munge/munge.key" --socket="$t/munge/munge.socket" --pid-file="$t/munge/munged.pid" \
  --log-file="$t/log/munged.log" --seed-file="$t/munge/seed" -F > "$t/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$t/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$t/munge/munge.socket" ] || fail "munged did not start"
step "munged up"

# The node's machine for the prolog and the health check: a settings file the test rewrites.
# The prolog and the health check each have their own settings file, so that each is tested alone.
root_for() { # prolog|healthcheck CASE
  printf 'CUDADIAG=%q\nCUDADIAG_ARGS=%q\n' "$bin" "--root $repo/fixtures/hosts/$2/root --clear-env" > "$t/$1.conf"
}
for s in prolog healthcheck; do
  root_for "$s" healthy
  # slurmd gives these programs almost no environment: the wrapper names the settings and the PATH.
  printf '#!/bin/sh\nPATH=/usr/sbin:/usr/bin:/sbin:/bin CUDADIAG_CONF=%s SLURM_CONF=%s exec %s "$@"\n' \
    "$t/$s.conf" "$t/slurm.conf" "$repo/deploy/slurm/cudadiag-$s.sh" > "$t/$s"
  chmod 755 "$t/$s"
done

port=$(( 20000 + RANDOM % 20000 ))
cpus=$(nproc)
cat > "$t/slurm.conf" <<CONF
ClusterName=cdcheck
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$(( port + 1 ))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$t/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$t/state
SlurmdSpoolDir=$t/spool
SlurmctldPidFile=$t/slurmctld.pid
SlurmdPidFile=$t/slurmd.pid
SlurmctldLogFile=$t/log/slurmctld.log
SlurmdLogFile=$t/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/linear
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
PlugStackConfig=$t/plugstack.conf
Prolog=$t/prolog
PrologFlags=Alloc
HealthCheckProgram=$t/healthcheck
HealthCheckInterval=5
HealthCheckNodeState=ANY
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=check Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
: > "$t/plugstack.conf"
export SLURM_CONF=$t/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" > "$t/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" > "$t/log/slurmd.out" 2>&1 &
pids+=($!)
state() { sinfo -h -N -n "$node" -o '%T' 2> /dev/null | head -1; }
reason() { sinfo -h -N -n "$node" -o '%E' 2> /dev/null | head -1; }
wait_for() { # STATE-REGEX SECONDS
  for _ in $(seq $(( $2 * 5 ))); do [[ "$(state)" =~ $1 ]] && return 0; sleep 0.2; done
  return 1
}
wait_for '^idle' 30 || fail "the node did not come up idle (state: $(state))"
step "slurmctld and slurmd up: node $node $(state), $cpus CPUs"

# 1. Collection.
s=$(date +%s.%N)
set +e
CUDADIAG=$bin CUDADIAG_ARGS="--root $repo/fixtures/hosts/h200-nix-open-580/root --clear-env" \
  deploy/slurm/collect.sh "$t/reports" > "$t/fleet.txt" 2>&1
rc=$?
set -e
[ -s "$t/reports/$node.json" ] || fail "no $t/reports/$node.json: $(cat "$t/fleet.txt")"
grep -q '"snapshot_version"' "$t/reports/$node.json" || fail "the report is not a snapshot"
[ "$rc" = 0 ] || fail "collect.sh exited $rc: $(cat "$t/fleet.txt")"
grep -q "^1 node " "$t/fleet.txt" || fail "fleet did not count the node: $(cat "$t/fleet.txt")"
grep -q "580.159.04  1 node: $node" "$t/fleet.txt" || fail "fleet did not group the node by driver: $(cat "$t/fleet.txt")"
step "collection: srun wrote reports/$node.json ($(stat -c %s "$t/reports/$node.json") bytes) in $(since "$s")s; fleet:"
sed 's/^/    /' "$t/fleet.txt"

# 2. Prolog, failing root: the job never runs, the node is drained (the health check keeps a passing root).
root_for prolog driver-upgraded-no-reboot
s=$(date +%s.%N)
set +e
timeout 60 srun --nodes=1 --ntasks=1 --job-name=prolog-fails touch "$t/ran-on-broken" > "$t/srun-fail.txt" 2>&1
rc=$?
set -e
wait_for 'drain' 20 || fail "the prolog did not drain the node (state $(state)): $(cat "$t/srun-fail.txt")"
[ ! -e "$t/ran-on-broken" ] || fail "the job ran on a node whose prolog failed"
step "prolog on driver-upgraded-no-reboot: srun exit $rc, job did not run, node $(state) ($(reason)) in $(since "$s")s"
sed 's/^/    /' "$t/srun-fail.txt" | head -5
grep -h 'cudadiag' "$t"/log/slurmd.log | tail -2 | sed 's/^/    slurmd.log: /' || true
scancel --name=prolog-fails 2> /dev/null || true

# 2b. Prolog, passing root: resumed by hand, the job runs, the node stays in service.
root_for prolog healthy
scontrol update NodeName="$node" State=RESUME
wait_for '^idle' 20 || fail "the node did not resume (state $(state))"
s=$(date +%s.%N)
timeout 60 srun --nodes=1 --ntasks=1 --job-name=prolog-passes touch "$t/ran-on-healthy" > "$t/srun-pass.txt" 2>&1 ||
  fail "the job failed on a healthy node: $(cat "$t/srun-pass.txt")"
[ -e "$t/ran-on-healthy" ] || fail "the job did not run on a healthy node"
wait_for '^idle' 10 || fail "the node left service after a passing prolog (state $(state))"
step "prolog on healthy: job ran, node $(state) in $(since "$s")s"

# 3. Health check: failing root drains with the slug, passing root resumes.
root_for healthcheck uvm-missing
s=$(date +%s.%N)
wait_for 'drain' 30 || fail "the health check did not drain the node (state $(state))"
[[ "$(reason)" == "cudadiag: nvidia-uvm-missing" ]] || fail "drain reason: $(reason)"
step "health check on uvm-missing: node $(state), reason \"$(reason)\" after $(since "$s")s"
root_for healthcheck healthy
s=$(date +%s.%N)
wait_for '^idle' 30 || fail "the health check did not resume the node (state $(state), $(reason))"
step "health check on healthy: node $(state) again after $(since "$s")s"
# An operator's drain is never undone by the health check.
scontrol update NodeName="$node" State=DRAIN Reason="maintenance"
sleep 7
[[ "$(state)" =~ drain ]] || fail "the health check resumed a node an operator drained"
step "an operator's drain (\"maintenance\") kept through a passing health check: $(state)"
step "all checks passed; tearing down"
