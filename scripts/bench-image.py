#!/usr/bin/env python3
"""What reading an image costs: `cudadiag inspect --image IMAGE` against `cudadiag inspect --root DIR` of the same
image already unpacked.

    scripts/bench-image.py [MIB] [RUNS]

A ~MIB MiB image (default 1024: padding layers of random data, a Debian-like system layer with this machine's C++
runtime and 3,000 small files, the CUDA 13 program fixtures/cuda13/multi as its Cmd, NVIDIA_VISIBLE_DEVICES=all)
is written as a `docker save` tarball (plain layers) and as an OCI layout with gzip layers (what a registry
serves), and unpacked beside them; each is inspected RUNS times (default 5, after one warm-up) for
`--gpu 9.0 --driver 580.159.04`, and the median wall times and the differences are printed. cudadiag is
$CUDADIAG_BIN, else the release build (built first); $BENCH_DIR keeps the generated images. Budget (issue 24):
the image costs well under a second more than the unpacked root.
"""
import gzip, io, json, os, statistics, subprocess, sys, tarfile, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import tar_add as add, tar_debian_base, tar_layer as layer

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
binary = os.environ.get("CUDADIAG_BIN")
if not binary:
    subprocess.run(["cargo", "build", "--release", "--quiet"], check=True)
    binary = "target/release/cudadiag"
keep = os.environ.get("BENCH_DIR")
holder = None
if keep:
    os.makedirs(keep, exist_ok=True)
    t = keep
else:
    holder = tempfile.TemporaryDirectory()
    t = holder.name

layer_mib = 128

def system(tf):
    tar_debian_base(tf, extra_dirs=["etc"])
    # Small files in the numbers of a slim distribution's /usr/share.
    for i in range(3000):
        add(tf, f"usr/share/doc/pkg{i % 300}/file{i}.txt", b"documentation\n" * 20)

def padding(i):
    def build(tf):
        add(tf, f"data/blob{i}.bin", os.urandom(layer_mib << 20))
    return build

def app(tf):
    add(tf, "usr/local/bin/app", open("fixtures/cuda13/multi", "rb").read(), 0o755)

layers = [layer(system)] + [layer(padding(i)) for i in range(max(1, mib // layer_mib))] + [layer(app)]
config = json.dumps({"architecture": "amd64", "os": "linux",
                     "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"], "Cmd": ["app"]},
                     "rootfs": {"type": "layers", "diff_ids": []}}).encode()

def digest(n):
    return "%064x" % (0x9E3779B97F4A7C15 * (n + 1))

# docker save: plain layers.
docker = os.path.join(t, "image.tar")
with tarfile.open(docker, "w", format=tarfile.PAX_FORMAT) as tf:
    names = []
    for i, l in enumerate(layers):
        add(tf, f"{digest(i)}/layer.tar", l)
        names.append(f"{digest(i)}/layer.tar")
    add(tf, digest(999) + ".json", config)
    add(tf, "manifest.json", json.dumps([{"Config": digest(999) + ".json", "RepoTags": ["bench:1"], "Layers": names}]).encode())

# OCI layout: gzip layers (level 1: random data does not shrink, and level 9 only costs the set-up).
oci = os.path.join(t, "oci")
os.makedirs(os.path.join(oci, "blobs/sha256"), exist_ok=True)
def blob(n, data):
    open(os.path.join(oci, "blobs/sha256", digest(n)), "wb").write(data)
    return {"digest": "sha256:" + digest(n), "size": len(data)}
descs = [dict(blob(100 + i, gzip.compress(l, 1)), mediaType="application/vnd.oci.image.layer.v1.tar+gzip") for i, l in enumerate(layers)]
cfg = dict(blob(998, config), mediaType="application/vnd.oci.image.config.v1+json")
man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cfg, "layers": descs}).encode()
md = dict(blob(997, man), mediaType="application/vnd.oci.image.manifest.v1+json", platform={"architecture": "amd64", "os": "linux"})
open(os.path.join(oci, "index.json"), "w").write(json.dumps({"schemaVersion": 2, "manifests": [md]}))
open(os.path.join(oci, "oci-layout"), "w").write('{"imageLayoutVersion":"1.0.0"}')

# The same image unpacked (no whiteouts in it: each layer extracted over the last).
root = os.path.join(t, "root")
os.makedirs(root, exist_ok=True)
for l in layers:
    with tarfile.open(fileobj=io.BytesIO(l)) as tf:
        tf.extractall(root, filter="tar")
del layers

size = os.path.getsize(docker)
target = ["--gpu", "9.0", "--driver", "580.159.04", "--format", "json"]
cases = [
    ("--root (unpacked)", [binary, "inspect", "--root", root, "--clear-env", "--env", "PATH=/usr/local/bin:/usr/bin:/bin", *target, "/usr/local/bin/app"]),
    ("--image docker save", [binary, "inspect", "--image", docker, *target]),
    ("--image OCI, gzip layers", [binary, "inspect", "--image", oci, *target]),
]
print(f"image: {size / 2**20:.0f} MiB in {len(descs)} layers; {runs} runs each, median wall ms")
medians = {}
for name, cmd in cases:
    times = []
    for _ in range(runs + 1):
        s = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True)
        times.append((time.perf_counter() - s) * 1000)
        if p.returncode != 0:
            sys.exit(f"{name}: exit {p.returncode}: {p.stderr.decode()[:500]}")
        report = json.loads(p.stdout)
        assert report["binaries"][0]["path"] == "/usr/local/bin/app" or name.startswith("--root"), report["binaries"][0]["path"]
    medians[name] = statistics.median(times[1:])
    print(f"  {name:<28} {medians[name]:8.1f} ms (max {max(times[1:]):.1f})")
base = medians["--root (unpacked)"]
for name in list(medians)[1:]:
    print(f"  extra for {name:<18} {medians[name] - base:8.1f} ms")
