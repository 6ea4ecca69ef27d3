#!/usr/bin/env python3
"""cudadiag's image reader against skopeo's.

    scripts/image-crosscheck.py [CUDADIAG]

A `docker save` tarball written here (this machine's C++ runtime and fixtures/cuda13/multi, a gzip and a plain
layer, a whiteout) is converted by skopeo to an OCI layout (`skopeo copy docker-archive:... oci:...`, also read as a
tar of it) and to a docker-archive of its own; `cudadiag inspect --image` must read the same program, device code,
libraries and findings from all of them, and the same config digest where skopeo keeps the config's bytes (its
docker-archive; converting to OCI rewrites the config into the OCI schema, a new digest). CUDADIAG defaults to
target/release/cudadiag, else target/debug/cudadiag. Skips, exit 0, when skopeo is not installed
(`apt-get install skopeo`). Exit 1 when a form reads differently.
"""
import gzip, hashlib, json, os, shutil, subprocess, sys, tarfile, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import tar_add as add, tar_debian_base, tar_layer as layer

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def system(tf):
    tar_debian_base(tf)
    add(tf, "usr/local/bin/old", b"to be deleted")

def app(tf):
    add(tf, "usr/local/bin/app", open("fixtures/cuda13/multi", "rb").read(), 0o755)
    add(tf, "usr/local/bin/.wh.old", b"")



def build(out):
    layers = [layer(system), gzip.compress(layer(app))]
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"], "Cmd": ["app"]},
                         "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer(system)).hexdigest(),
                                                                   "sha256:" + hashlib.sha256(layer(app)).hexdigest()]}}).encode()
    cid = hashlib.sha256(config).hexdigest()
    with tarfile.open(out, "w") as tf:
        names = []
        for l in layers:
            h = hashlib.sha256(l).hexdigest()
            add(tf, f"{h}/layer.tar", l)
            names.append(f"{h}/layer.tar")
        add(tf, cid + ".json", config)
        add(tf, "manifest.json", json.dumps([{"Config": cid + ".json", "RepoTags": ["crosscheck:1"], "Layers": names}]).encode())


def summary(binary, image):
    r = json.loads(subprocess.run([binary, "inspect", "--image", image, "--gpu", "9.0", "--driver", "580.159.04",
                                   "--format", "json"], capture_output=True, check=False).stdout)
    return {
        "program": r["image"].get("program"),
        "config_digest": r["image"].get("config_digest"),
        "platform": r["image"]["platform"],
        "binaries": [(b["path"], [e["arch"] for e in b["device_code"]]) for b in r["binaries"]],
        "libraries": sorted((l["soname"], l["path"], l["how"]) for l in r["libraries"]),
        "findings": sorted(f["slug"] for f in r["findings"]),
    }


def main():
    if shutil.which("skopeo") is None:
        print("skip: skopeo is not installed (apt-get install skopeo)")
        return 0
    binary = sys.argv[1] if len(sys.argv) > 1 else next(
        (c for c in ("target/release/cudadiag", "target/debug/cudadiag") if os.access(c, os.X_OK)), None)
    if not binary:
        print("no cudadiag binary: cargo build first, or pass its path", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as t:
        build(f"{t}/app.tar")
        subprocess.run(["skopeo", "copy", "--quiet", f"docker-archive:{t}/app.tar", f"oci:{t}/oci:crosscheck:1"], check=True)
        subprocess.run(["skopeo", "copy", "--quiet", f"docker-archive:{t}/app.tar",
                        f"docker-archive:{t}/skopeo.tar:crosscheck:1"], check=True)
        with tarfile.open(f"{t}/oci.tar", "w") as tf:
            for name in sorted(os.listdir(f"{t}/oci")):
                tf.add(f"{t}/oci/{name}", arcname=name)
        want = summary(binary, f"{t}/app.tar")
        print("cudadiag on the original docker-archive: " + json.dumps(want, sort_keys=True))
        fail = 0
        for form in ("oci", "oci.tar", "skopeo.tar"):
            got, w = summary(binary, f"{t}/{form}"), dict(want)
            if form != "skopeo.tar":
                got.pop("config_digest")
                w.pop("config_digest")
            if got == w:
                print(f"skopeo {form}: same")
            else:
                print(f"skopeo {form}: DIFFERS: {json.dumps(got, sort_keys=True)}")
                fail = 1
        idx = json.load(open(f"{t}/oci/index.json"))
        m = json.load(open(f"{t}/oci/blobs/" + idx["manifests"][0]["digest"].replace(":", "/")))
        print("skopeo's layout: layers " + ", ".join(l["mediaType"].rsplit(".", 1)[-1] for l in m["layers"]))
        return fail


sys.exit(main())
