#!/usr/bin/env bash
# `cudadiag fleet` over generated corpora of real-size node reports: N doctor reports (default 1000 and 10000)
# and 1000 snapshots, each made from a real `doctor --format json` / `snapshot` of the synthetic host of
# scripts/bench-doctor.sh (three toolkits, two Python environments: a ~150 KiB report, the size of the real H200
# one) with its host name, driver, GPUs and findings varied (findings taken from the fixture roots' own reports:
# driver-library-mismatch, nvidia-uvm-missing, device-nodes-missing, stub-libcuda). Checks that the groups are
# the ones the generator wrote, then times the run with hyperfine when installed, else /usr/bin/time.
# Usage: scripts/bench-fleet.sh [N...]   (CUDADIAG_BIN names the binary, else the release build; BENCH_DIR keeps
# the corpora; RUNS sets the runs per timing, default 5; GENERATE_ONLY=1 stops once the corpora are written, which
# is how scripts/bench makes its fleet input)
# Then `fleet --image` over the first corpus: a `docker save` image (written here with Python's tarfile: this
# machine's glibc and C++ runtime, fixtures/cuda13/multi as its program, NVIDIA_REQUIRE_CUDA=cuda>=13.0), its
# predictions checked per driver (the toolkit refuses it on 570 and 550; it runs on 580), and the number of
# unpacks (one per distinct driver) shown.
# Budget (DESIGN.md): 1,000 reports in under 1 s, 10,000 in under 10 s.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@"); [ ${#sizes[@]} -eq 0 ] && sizes=(1000 10000)
runs=${RUNS:-5}
if [ -n "${CUDADIAG_BIN:-}" ]; then bin=$CUDADIAG_BIN; else cargo build --release --quiet; bin=target/release/cudadiag; fi
bin=$(realpath "$bin")
t=${BENCH_DIR:-$(mktemp -d)}; [ -z "${BENCH_DIR:-}" ] && trap 'rm -rf "$t"' EXIT; mkdir -p "$t"

# A real report and snapshot of the synthetic host, and real findings from the fixture roots.
BENCH_DIR="$t/host" CUDADIAG_BIN="$bin" scripts/bench-doctor.sh 1 > /dev/null
host_env=(--clear-env --env PATH=/usr/local/cuda/bin:/usr/bin --env HOME=/root --env VIRTUAL_ENV=/root/.venv
          --env CONDA_PREFIX=/opt/conda/envs/ml --env LD_LIBRARY_PATH=/usr/local/cuda/lib64)
"$bin" snapshot --root "$t/host/root" "${host_env[@]}" -o "$t/snapshot.json"
for c in driver-upgraded-no-reboot uvm-missing container-no-gpu stub-first; do
  env_args=(); while IFS= read -r l; do [ -n "$l" ] && env_args+=(--env "$l"); done < "fixtures/hosts/$c/env"
  "$bin" doctor --format json --no-catalog --root "fixtures/hosts/$c/root" --clear-env "${env_args[@]}" > "$t/findings-$c.json" || true
done

python3 - "$t" "${sizes[@]}" <<'EOF'
import json, os, random, sys
t, sizes = sys.argv[1], [int(n) for n in sys.argv[2:]]
report = json.load(open(f"{t}/host/report.json"))
snap = json.load(open(f"{t}/snapshot.json"))
extra = {}
for c in ["driver-upgraded-no-reboot", "uvm-missing", "container-no-gpu", "stub-first"]:
    for f in json.load(open(f"{t}/findings-{c}.json"))["findings"]:
        extra.setdefault(f["slug"], f)
drivers = ["580.159.04", "580.95.05", "570.172.08", "550.90.07"]
gpus = [("NVIDIA H200", "0x2335", "9.0"), ("NVIDIA H100 80GB HBM3", "0x2330", "9.0"),
        ("NVIDIA A100-SXM4-80GB", "0x20b2", "8.0"), ("NVIDIA L40S", "0x26b9", "8.9")]
slugs = sorted(extra)

def variant(i, rng):
    """Host name, driver, GPU model and count, findings of node i (seeded: the same corpus every run)."""
    name = f"gpu{i:05d}"
    drv = rng.choice(drivers)
    model = rng.choice(gpus)
    count = rng.choice([2, 4, 8])
    found = [s for s in slugs if rng.random() < 0.04]
    if rng.random() < 0.02:  # the same finding twice (two binaries of an inspect report)
        found += found[:1]
    return name, drv, model, count, found

def gpu_list(template, model, count):
    out = []
    for k in range(count):
        g = dict(template)
        g["name"], g["cc"] = model[0], model[2]
        if "pci_device_id" in g:
            g["pci_device_id"] = model[1] if isinstance(g["pci_device_id"], str) else int(model[1], 16)
        g["bus_id"] = f"0000:{0x19 + k:02x}:00.0"
        out.append(g)
    return out

for n in sizes:
    d = f"{t}/reports-{n}"
    os.makedirs(d, exist_ok=True)
    rng = random.Random(n)
    expect = {"nodes": n, "drivers": {}, "gpus": {}, "findings": {}}
    base_gpu, base_fact_gpu = report["host"]["gpus"][0], report["host"]["facts"]["gpus"][0]
    for i in range(n):
        name, drv, model, count, found = variant(i, rng)
        r = dict(report)
        r["host"] = dict(report["host"])
        r["host"]["driver"] = {"version": drv, "cuda": report["host"]["driver"]["cuda"]}
        r["host"]["gpus"] = gpu_list(base_gpu, model, count)
        facts = dict(report["host"]["facts"])
        facts["hostname"] = {"name": name, "source": "/proc/sys/kernel/hostname"}
        facts["driver"] = {"version": drv, "source": "/proc/driver/nvidia/version"}
        facts["gpus"] = gpu_list(base_fact_gpu, model, count)
        r["host"]["facts"] = facts
        r["findings"] = [extra[s] for s in found]
        with open(f"{d}/{name}.json", "w") as f:
            json.dump(r, f, indent=2)
        expect["drivers"][drv] = expect["drivers"].get(drv, 0) + 1
        expect["gpus"][model[0]] = expect["gpus"].get(model[0], 0) + 1
        for s in set(found):
            expect["findings"][s] = expect["findings"].get(s, 0) + 1
    json.dump(expect, open(f"{t}/expect-{n}.json", "w"))

# Snapshots: the facts vary; their findings are the rules' (an older driver than the libraries on disk is a
# driver-library-mismatch, as on a node upgraded without a reboot).
d = f"{t}/snapshots-1000"
os.makedirs(d, exist_ok=True)
rng = random.Random(7)
base = snap["facts"]["host"]
for i in range(1000):
    name, drv, model, count, _ = variant(i, rng)
    s = dict(snap)
    s["facts"] = dict(snap["facts"])
    h = dict(base)
    h["hostname"] = {"name": name, "source": "/proc/sys/kernel/hostname"}
    h["driver"] = {"version": drv, "source": "/proc/driver/nvidia/version"}
    h["gpus"] = gpu_list(base["gpus"][0], model, count)
    s["facts"]["host"] = h
    with open(f"{d}/{name}.json", "w") as f:
        json.dump(s, f, indent=2)
EOF

if [ -n "${GENERATE_ONLY:-}" ]; then echo "corpora written under $t"; exit 0; fi

sizeof() { du -sb "$1" | cut -f1; }
echo "one report: $(stat -c %s "$t/reports-${sizes[0]}/gpu00000.json") bytes; one snapshot: $(stat -c %s "$t/snapshots-1000/gpu00000.json") bytes"
for n in "${sizes[@]}"; do
  "$bin" fleet --format json --fail-on never "$t/reports-$n" > "$t/fleet-$n.json"
  python3 - "$t/fleet-$n.json" "$t/expect-$n.json" <<'EOF'
import json, sys
got, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert got["nodes"] == want["nodes"], (got["nodes"], want["nodes"])
for k in ["drivers", "gpus", "findings"]:
    counts = {key: len(v) for key, v in got[k].items()}
    assert counts == want[k], (k, counts, want[k])
print(f"{want['nodes']} nodes grouped right: drivers {want['drivers']}, findings {want['findings']}")
EOF
done
"$bin" fleet --fail-on never "$t/snapshots-1000" | head -3

time_it() { # label, command...
  local label=$1; shift
  if command -v hyperfine > /dev/null; then
    hyperfine --warmup 1 --runs "$runs" -N --command-name "$label" "$*" 2>&1 | grep -E 'Time|Range'
  else
    local best=""
    for _ in $(seq 1 "$runs"); do
      /usr/bin/time -f '%e %M' -o "$t/time" "$@" > /dev/null
      read -r s kb < "$t/time"
      if [ -z "$best" ] || awk "BEGIN{exit !($s < ${best%% *})}"; then best="$s $kb"; fi
    done
    echo "$label: best of $runs ${best%% *} s wall, peak RSS $(( ${best##* } / 1024 )) MiB"
  fi
}
cat "$t"/reports-"${sizes[0]}"/* > /dev/null   # page cache warm, as for a second look at the same reports
for n in "${sizes[@]}"; do
  echo "reports-$n: $(( $(sizeof "$t/reports-$n") / 1048576 )) MiB"
  time_it "fleet $n reports (human)" "$bin" fleet --fail-on never "$t/reports-$n"
  time_it "fleet $n reports (json)" "$bin" fleet --format json --fail-on never "$t/reports-$n"
done
time_it "fleet 1000 snapshots" "$bin" fleet --fail-on never "$t/snapshots-1000"

# An image of a CUDA 13 program, judged on every node of the first corpus.
python3 - "$t/app.tar" <<'EOF'
import io, json, os, sys, tarfile
def add(tf, name, data=None, mode=0o644, link=None, kind=tarfile.REGTYPE):
    ti = tarfile.TarInfo(name); ti.mode = mode; ti.type = kind
    if link is not None: ti.linkname = link
    if data is not None: ti.size = len(data)
    tf.addfile(ti, io.BytesIO(data) if data is not None else None)
def layer(fill):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf: fill(tf)
    return buf.getvalue()
def system(tf):
    add(tf, "etc/debian_version", b"12.0\n")
    for d in ["usr", "usr/lib", "usr/lib/x86_64-linux-gnu", "usr/lib64", "usr/local", "usr/local/bin"]:
        add(tf, d, kind=tarfile.DIRTYPE, mode=0o755)
    add(tf, "lib", kind=tarfile.SYMTYPE, link="usr/lib"); add(tf, "lib64", kind=tarfile.SYMTYPE, link="usr/lib64")
    add(tf, "usr/lib64/ld-linux-x86-64.so.2", kind=tarfile.SYMTYPE, link="../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    for n in ["ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libgcc_s.so.1", "libstdc++.so.6"]:
        add(tf, f"usr/lib/x86_64-linux-gnu/{n}", open(os.path.realpath(f"/lib/x86_64-linux-gnu/{n}"), "rb").read())
    add(tf, "usr/local/bin/app", open("fixtures/cuda13/multi", "rb").read(), mode=0o755)
config = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []},
    "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES=all",
                       "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "NVIDIA_REQUIRE_CUDA=cuda>=13.0",
                       "CUDA_VERSION=13.0.0"], "Cmd": ["app"]}}).encode()
cid, lid = "c" * 64, "a" * 64
manifest = json.dumps([{"Config": f"{cid}.json", "RepoTags": ["bench/app:1"], "Layers": [f"{lid}/layer.tar"]}]).encode()
with tarfile.open(sys.argv[1], "w") as tf:
    add(tf, f"{lid}/layer.tar", layer(system)); add(tf, f"{cid}.json", config); add(tf, "manifest.json", manifest)
EOF
n=${sizes[0]}
"$bin" fleet --format json --fail-on never --image "$t/app.tar" "$t/reports-$n" > "$t/fleet-image-$n.json"
python3 - "$t/fleet-image-$n.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
by_driver = {}
for n in doc["per_node"]:
    p = n["prediction"]
    by_driver.setdefault(n["driver"], set()).add((p["outcome"], (p["codes"] or [""])[0]))
for d, got in sorted(by_driver.items()):
    want = {("runs", "")} if d.startswith("580.") else {("fails", "container-requirement-unmet")}
    assert got == want, (d, got, want)
print(f"{doc['nodes']} nodes judged right per driver {sorted(by_driver)}; image unpacked {doc['artifact']['image']['unpacked']} times")
EOF
time_it "fleet $n reports --image ($(stat -c %s "$t/app.tar") byte image)" "$bin" fleet --fail-on never --image "$t/app.tar" "$t/reports-$n"
echo "cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"
