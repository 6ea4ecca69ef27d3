#!/usr/bin/env bash
# Runs every fuzz target at once, one core each, for SECONDS (default 600), seeded from the project's own
# fixtures, and prints one table row per target: executions, coverage, crashes/timeouts/OOMs, and where their
# inputs were saved. libFuzzer's fork mode keeps a target going after a crash, so one bug does not end its run.
#
#   fuzz/run-all.sh [SECONDS] [BINDIR] [OUTDIR]
#
# BINDIR holds the built targets (default fuzz/target/x86_64-unknown-linux-gnu/release, from
# `cd fuzz && cargo +nightly fuzz build -s none`); OUTDIR receives corpora, logs and crash inputs
# (default a temporary directory). Needs as many cores as targets for the figures to be per-core ones.
# Each crash input found becomes a test (tests/it/malformed.rs and its peers); see fuzz/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
secs=${1:-600}
bindir=${2:-$here/target/x86_64-unknown-linux-gnu/release}
out=${3:-$(mktemp -d)}
mkdir -p "$out"
targets=()
for f in "$here"/fuzz_targets/*.rs; do
  t=$(basename "$f" .rs)
  [ -x "$bindir/$t" ] && targets+=("$t") || echo "skipped $t: no $bindir/$t" >&2
done
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets built in $bindir" >&2; exit 2; }

seed() { # seed TARGET FILE...
  local d="$out/corpus/$1"; shift
  mkdir -p "$d"
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$d/" || true; done
}
elves=()
for f in "$top"/fixtures/cuda13/* "$top"/fixtures/old/*; do
  case "$f" in *.txt|*.log|*.sh) continue ;; esac
  [ -f "$f" ] && [ "$(stat -c %s "$f")" -lt 4000000 ] && elves+=("$f")
done
seed inspect_bytes "${elves[@]}"
seed cubin "$top"/fixtures/old/*.cubin
seed ptx $(find "$top/fixtures" -name '*.ptx' | head -20)
seed loader_object "${elves[@]:0:6}"
seed ld_cache "$top"/fixtures/hosts/*/root/etc/ld.so.cache
seed ld_so_image /lib64/ld-linux-x86-64.so.2
seed config_text "$top/data/compat.toml" "$top/data/pip_cuda.toml" "$top/src/policy_template.toml"
# host_root: each fixture machine's text files, in the order fuzzing::host_root lays them out, NUL-separated.
mkdir -p "$out/corpus/host_root"
files=(proc/driver/nvidia/version proc/driver/nvidia/gpus/*/information etc/ld.so.conf etc/ld.so.conf.d/*.conf
  var/lib/dpkg/status var/lib/dpkg/info/*.list proc/self/status proc/modules proc/1/cgroup sys/module/nvidia/version
  etc/nv_tegra_release usr/local/cuda-*/version.json)
for h in "$top"/fixtures/hosts/*/root; do
  (cd "$h" && for p in "${files[@]}"; do
    for f in $p; do [ -f "$f" ] && head -c 4096 "$f"; break; done
    printf '\0'
  done) > "$out/corpus/host_root/$(basename "$(dirname "$h")")"
done
# snapshot: real snapshots of the fixture machines, when a cudadiag binary is at hand.
mkdir -p "$out/corpus/snapshot"
cud=${CUDADIAG:-$top/target/release/cudadiag}
if [ -x "$cud" ]; then
  for h in "$top"/fixtures/hosts/*/root; do
    "$cud" snapshot --root "$h" --clear-env -o "$out/corpus/snapshot/$(basename "$(dirname "$h")").json" \
      >/dev/null 2>&1 || true
  done
fi
echo '{"snapshot_version":1,"tool":"cudadiag","facts":{}}' > "$out/corpus/snapshot/empty.json"
# redact: the same snapshots, each after a host name and a user name that are words of the snapshot itself.
mkdir -p "$out/corpus/redact"
for f in "$out"/corpus/snapshot/*.json; do
  for names in 'open\nversion' 'uvm\njürgen' 'GPU7.corp\nalice'; do
    { printf "$names\n"; cat "$f"; } > "$out/corpus/redact/$(basename "$f" .json)-${names%%\\*}"
  done
done
# wheel: a small wheel with one fixture binary and its metadata.
mkdir -p "$out/corpus/wheel"
python3 - "$out/corpus/wheel/seed-1.0-py3-none-manylinux2014_x86_64.whl" "${elves[0]}" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    z.write(sys.argv[2], "seed/libkern.so")
    z.writestr("seed-1.0.dist-info/METADATA",
               "Metadata-Version: 2.1\nName: seed\nVersion: 1.0\n"
               "Requires-Dist: nvidia-cuda-runtime-cu12==12.4.127; platform_system == \"Linux\"\n")
    z.writestr("seed-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-manylinux2014_x86_64\n")
EOF
# image: a `docker save` tarball of one layer holding a fixture binary as its entrypoint.
mkdir -p "$out/corpus/image"
python3 - "$out/corpus/image/seed.tar" "${elves[0]}" <<'EOF'
import hashlib, io, json, sys, tarfile
def tar(entries):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w") as t:
        for name, data in entries:
            i = tarfile.TarInfo(name); i.size, i.mode = len(data), 0o755
            t.addfile(i, io.BytesIO(data))
    return b.getvalue()
layer = tar([("usr/local/bin/app", open(sys.argv[2], "rb").read())])
config = json.dumps({"architecture": "amd64", "os": "linux",
                     "config": {"Env": ["PATH=/usr/local/bin", "NVIDIA_VISIBLE_DEVICES=all"], "Entrypoint": ["app"]},
                     "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]}}).encode()
manifest = json.dumps([{"Config": "c.json", "Layers": ["l/layer.tar"]}]).encode()
open(sys.argv[1], "wb").write(tar([("l/layer.tar", layer), ("c.json", config), ("manifest.json", manifest)]))
EOF
# image_manifest: an index naming a manifest (and an attestation), the manifest naming its config; digests
# `sha256:` + N as 64 hex digits are the N-th document after the first (fuzzing::image_manifest).
mkdir -p "$out/corpus/image_manifest"
python3 - "$out/corpus/image_manifest" <<'EOF'
import json, os, sys
d = lambda n: "sha256:%064x" % n
index = {"schemaVersion": 2, "manifests": [
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": d(1), "platform": {"os": "linux", "architecture": "amd64"}},
    {"mediaType": "application/vnd.oci.image.index.v1+json", "digest": d(3)},
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": d(1), "platform": {"os": "unknown", "architecture": "unknown"},
     "annotations": {"vnd.docker.reference.type": "attestation-manifest"}}]}
manifest = {"schemaVersion": 2, "config": {"digest": d(2)}, "layers": [{"digest": d(4)}]}
config = {"architecture": "arm64", "os": "linux", "config": {"User": "app", "Env": ["PATH=/bin"]}}
inner = {"manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": d(1)}]}
docs = [index, manifest, config, inner]
open(os.path.join(sys.argv[1], "oci"), "w").write("\n--\n".join(json.dumps(x) for x in docs))
docker = [{"Config": "blobs/sha256/%064x" % 2, "RepoTags": ["a:1"], "Layers": ["blobs/sha256/%064x" % 1]}] * 3
open(os.path.join(sys.argv[1], "docker"), "w").write("\n--\n".join(json.dumps(x) for x in [docker, manifest, config]))
EOF

pids=()
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
  "$bindir/$t" "$out/corpus/$t" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=1048576 \
    -artifact_prefix="$out/artifacts/$t/" >"$out/$t.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done

printf '| target | seconds | executions | coverage | crashes | timeouts | OOMs |\n|---|---|---|---|---|---|---|\n'
for t in "${targets[@]}"; do
  last=$(grep -E '^#[0-9]+: cov' "$out/$t.log" | tail -1 || true)
  execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
  cov=$(sed -E 's/.* cov: ([0-9]+).*/\1/' <<<"$last")
  crash=$(ls "$out/artifacts/$t" | grep -c '^crash-' || true)
  tmo=$(ls "$out/artifacts/$t" | grep -c '^timeout-' || true)
  oom=$(ls "$out/artifacts/$t" | grep -c '^oom-' || true)
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$secs" "${execs:-?}" "${cov:-?}" "$crash" "$tmo" "$oom"
done
echo "logs, corpora and crash inputs: $out"
