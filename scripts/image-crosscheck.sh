#!/usr/bin/env bash
# cudadiag's image reader against skopeo's: a `docker save` tarball written here (the test machine's C++ runtime
# and fixtures/cuda13/multi, gzip and plain layers, a whiteout) is converted by skopeo to an OCI layout
# (`skopeo copy docker-archive:… oci:…`), and to a docker-archive of its own; `cudadiag inspect --image` must
# read the same program, libraries and findings from all three, and the same config digest where skopeo keeps
# the config's bytes (its docker-archive; converting to OCI rewrites the config into the OCI schema, a new digest).
# Usage: scripts/image-crosscheck.sh [CUDADIAG]   (default: target/release/cudadiag, else target/debug/cudadiag;
# skips with a message when skopeo is not installed: `apt-get install skopeo`)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v skopeo >/dev/null; then
  echo "skip: skopeo is not installed (apt-get install skopeo)"
  exit 0
fi
bin=${1:-}
if [ -z "$bin" ]; then
  for c in target/release/cudadiag target/debug/cudadiag; do [ -x "$c" ] && bin=$c && break; done
fi
[ -x "$bin" ] || { echo "no cudadiag binary: cargo build first, or pass its path" >&2; exit 2; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
python3 - "$t/app.tar" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile

def add(tf, name, data=None, mode=0o644, link=None):
    info = tarfile.TarInfo(name)
    if link is not None:
        info.type, info.linkname = tarfile.SYMTYPE, link
        tf.addfile(info)
    elif data is None:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tf.addfile(info)
    else:
        info.size, info.mode = len(data), mode
        tf.addfile(info, io.BytesIO(data))

def layer(build):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        build(tf)
    return buf.getvalue()

def system(tf):
    for d in ["usr", "usr/lib", "usr/lib/x86_64-linux-gnu", "usr/lib64", "usr/local", "usr/local/bin"]:
        add(tf, d)
    add(tf, "etc/debian_version", b"12.0\n")
    add(tf, "lib", link="usr/lib")
    add(tf, "lib64", link="usr/lib64")
    add(tf, "usr/lib64/ld-linux-x86-64.so.2", link="../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    for n in ["ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libgcc_s.so.1", "libstdc++.so.6"]:
        add(tf, "usr/lib/x86_64-linux-gnu/" + n, open(os.path.realpath("/lib/x86_64-linux-gnu/" + n), "rb").read())
    add(tf, "usr/local/bin/old", b"to be deleted")

def app(tf):
    add(tf, "usr/local/bin/app", open("fixtures/cuda13/multi", "rb").read(), 0o755)
    add(tf, "usr/local/bin/.wh.old", b"")

layers = [layer(system), gzip.compress(layer(app))]
config = json.dumps({"architecture": "amd64", "os": "linux",
                     "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"], "Cmd": ["app"]},
                     "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer(system)).hexdigest(),
                                                               "sha256:" + hashlib.sha256(layer(app)).hexdigest()]}}).encode()
cid = hashlib.sha256(config).hexdigest()
with tarfile.open(sys.argv[1], "w") as tf:
    names = []
    for l in layers:
        h = hashlib.sha256(l).hexdigest()
        add(tf, f"{h}/layer.tar", l)
        names.append(f"{h}/layer.tar")
    add(tf, cid + ".json", config)
    add(tf, "manifest.json", json.dumps([{"Config": cid + ".json", "RepoTags": ["crosscheck:1"], "Layers": names}]).encode())
PY
skopeo copy --quiet "docker-archive:$t/app.tar" "oci:$t/oci:crosscheck:1"
skopeo copy --quiet "docker-archive:$t/app.tar" "docker-archive:$t/skopeo.tar:crosscheck:1"
(cd "$t/oci" && tar -cf "$t/oci.tar" .)
summary() {
  "$bin" inspect --image "$1" --gpu 9.0 --driver 580.159.04 --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(json.dumps({
  "program": r["image"].get("program"),
  "config_digest": r["image"].get("config_digest"),
  "platform": r["image"]["platform"],
  "binaries": [(b["path"], [e["arch"] for e in b["device_code"]]) for b in r["binaries"]],
  "libraries": sorted((l["soname"], l["path"], l["how"]) for l in r["libraries"]),
  "findings": sorted(f["slug"] for f in r["findings"]),
}, sort_keys=True))'
}
want=$(summary "$t/app.tar")
echo "cudadiag on the original docker-archive: $want"
fail=0
nodigest() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.pop("config_digest"); print(json.dumps(d, sort_keys=True))' "$1"; }
for form in oci oci.tar skopeo.tar; do
  got=$(summary "$t/$form")
  if [ "$form" != skopeo.tar ]; then got=$(nodigest "$got"); w=$(nodigest "$want"); else w=$want; fi
  if [ "$got" = "$w" ]; then echo "skopeo $form: same"; else echo "skopeo $form: DIFFERS: $got"; fail=1; fi
done
python3 - "$t/oci" <<'PY'
import json, sys
d = sys.argv[1]
idx = json.load(open(d + "/index.json"))
m = json.load(open(d + "/blobs/" + idx["manifests"][0]["digest"].replace(":", "/")))
print("skopeo's layout: layers " + ", ".join(l["mediaType"].rsplit(".", 1)[-1] for l in m["layers"]))
PY
exit $fail
