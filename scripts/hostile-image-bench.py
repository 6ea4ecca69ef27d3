#!/usr/bin/env python3
"""Issue 33's image cases, measured: each case's exit status, wall time, peak RSS and the bytes left in a
private $TMPDIR, for one or more cudadiag binaries side by side (BENCHMARKS.md, "Hostile images").

    scripts/hostile-image-bench.py BINARY [BINARY...]      (ONLY=TEXT runs the cases whose name holds TEXT)

Every image is generated here (fixtures/cuda13/sm80 and multi as the programs); nothing is downloaded."""
import io, json, os, signal, subprocess, sys, tarfile, tempfile, time, zipfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SM80 = open(os.path.join(TOP, "fixtures/cuda13/sm80"), "rb").read()
MULTI = open(os.path.join(TOP, "fixtures/cuda13/multi"), "rb").read()


def checksum(h):
    h[148:156] = b" " * 8
    h[148:155] = b"%06o\0" % sum(h)
    return bytes(h)


def header(name, size, kind=b"0", posix=True, mode=b"0000755"):
    h = bytearray(512)
    h[: len(name)] = name.encode()
    h[100:107], h[108:115], h[116:123] = mode, b"0000000", b"0000000"
    h[124:135] = b"%011o" % size
    h[136:147] = b"00000000000"
    h[156:157] = kind
    if posix:
        h[257:265] = b"ustar\x0000"
    return checksum(h)


def pad(b):
    return b + b"\0" * (-len(b) % 512)


def pax(records):
    body = b""
    for k, v in records:
        rest = b" %s=%s\n" % (k.encode(), v.encode())
        n = len(rest) + 1
        while len(str(n)) + len(rest) != n:
            n += 1
        body += str(n).encode() + rest
    return header("PaxHeaders/x", len(body), b"x") + pad(body)


def tar(members, fmt=tarfile.GNU_FORMAT):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for name, data, mode in members:
            i = tarfile.TarInfo(name)
            i.size, i.mode = len(data), mode
            t.addfile(i, io.BytesIO(data))
    return b.getvalue()


def image(layers, user="", config_name="c.json", entries=1):
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {
        "Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES=all",
                "NVIDIA_DRIVER_CAPABILITIES=compute,utility"], "Cmd": ["app"], "User": user}}).encode()
    names = ["l%d/layer.tar" % i for i in range(len(layers))]
    manifest = json.dumps([{"Config": config_name, "RepoTags": ["t:1"], "Layers": names}] * entries).encode()
    return tar([(n, l, 0o644) for n, l in zip(names, layers)] + [(config_name, config, 0o644),
                                                                 ("manifest.json", manifest, 0o644)])


def write(path, data):
    open(path, "wb").write(data)
    return path


def cases(d, bins):
    out = []
    # One real node (the H200 fixture machine) for the fleet cases.
    base = f"{d}/base.json"
    subprocess.run([bins[-1], "snapshot", "--root", f"{TOP}/fixtures/hosts/h200-nix-open-580/root", "--clear-env",
                    "-o", base], check=True, capture_output=True)
    one = f"{d}/one-node"
    os.makedirs(one, exist_ok=True)
    write(f"{one}/h200.json", open(base, "rb").read())
    # 1: a slow unpack (60,000 ELF-looking files written whole), killed mid-unpack.
    elf = b"\x7fELF" + b"\7" * 4092
    slow = write(f"{d}/slow.tar", image([tar([(f"usr/lib/many/d{i % 100}/lib{i}.so", elf, 0o755)
                                              for i in range(60000)])]))
    pol = write(f"{d}/cudadiag.toml", b'[targets]\nsass = ["sm_90"]\n')
    nodes = f"{d}/nodes"
    os.makedirs(nodes, exist_ok=True)
    write(f"{nodes}/n.json", b"{}")
    for cmd in (["inspect", "--image", slow, "--no-host"], ["audit", "--policy", pol, slow],
                ["fleet", "--image", slow, nodes]):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            out.append((f"1 {cmd[0]} {sig.name} mid-unpack", cmd, sig))
    # 2: PAX size, v7 outer tar, a wheel inside.
    layer = pax([("size", str(len(SM80)))]) + header("usr/local/bin/app", 0) + pad(SM80) + b"\0" * 1024
    out.append(("2 audit: PAX size", ["audit", "--policy", pol, write(f"{d}/pax.tar", image([layer]))], None))
    inner = image([tar([("usr/local/bin/app", SM80, 0o755)])])
    v7 = b""
    with tarfile.open(fileobj=io.BytesIO(inner)) as t:
        for m in t.getmembers():
            data = t.extractfile(m).read()
            v7 += header(m.name, len(data), posix=False) + pad(data)
    out.append(("2 audit: v7 tar", ["audit", "--policy", pol, write(f"{d}/v7.tar", v7 + b"\0" * 1024)], None))
    w = io.BytesIO()
    with zipfile.ZipFile(w, "w") as z:
        z.writestr("kern/libkern.so", SM80)
        z.writestr("kern-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: kern\nVersion: 1.0\n")
        z.writestr("kern-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-manylinux2014_x86_64\n")
    whl = image([tar([("opt/kern-1.0-py3-none-manylinux2014_x86_64.whl", w.getvalue(), 0o644)])])
    out.append(("2 audit: wheel inside", ["audit", "--policy", pol, write(f"{d}/whl.tar", whl)], None))
    # 8: a plain layer 5 GiB short; a user absent from passwd; a 1.9 MB passwd; --artifact IMAGE.
    cut = (header("etc/hostname", 4, mode=b"0000644") + pad(b"box\n") + header("usr/local/bin/app", len(SM80))
           + pad(SM80) + header("usr/share/big.dat", 5 << 30, mode=b"0000644"))
    out.append(("8 inspect: layer 5 GiB short", ["inspect", "--image", write(f"{d}/cut.tar", image([cut + b"\0" * 4096])),
                                                  "--no-host"], None))
    users = tar([("etc/passwd", b"root:x:0:0::/root:/bin/sh\n", 0o644), ("usr/local/bin/app", SM80, 0o755)])
    out.append(("8 inspect: User absent", ["inspect", "--image", write(f"{d}/user.tar", image([users], user="app")),
                                            "--no-host"], None))
    big = b"".join(b"u%d:x:%d:100::/home/u:/bin/sh\n" % (i, 2000 + i) for i in range(60000))
    users = tar([("etc/passwd", b"app:x:1000:1000::/:/bin/sh\n" + big, 0o644), ("usr/local/bin/app", SM80, 0o755)])
    out.append(("8 inspect: passwd 1.9 MB", ["inspect", "--image", write(f"{d}/bigpw.tar", image([users], user="app")),
                                              "--no-host"], None))
    out.append(("8 fleet --artifact IMAGE", ["fleet", "--artifact", f"{d}/user.tar", one], None))
    # 3: one ~15.9 MiB config named 8 times (docker), one manifest named 32 times, 4,096 manifests (OCI).
    env = ["V%d=%s" % (i, "x" * 70) for i in range(190000)]
    cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": env, "Cmd": ["app"]}}).encode()
    app = tar([("usr/local/bin/app", SM80, 0o755)])
    docker = tar([("l/layer.tar", app, 0o644), ("c.json", cfg, 0o644), ("manifest.json", json.dumps(
        [{"Config": "c.json", "RepoTags": ["a:%d" % i], "Layers": ["l/layer.tar"]} for i in range(8)]).encode(), 0o644)])
    out.append(("3 inspect: config named 8x", ["inspect", "--image", write(f"{d}/cfg8.tar", docker), "--no-host"], None))
    for copies, distinct in ((32, False), (4096, True)):
        o = f"{d}/oci{copies}"
        os.makedirs(f"{o}/blobs/sha256", exist_ok=True)
        write(f"{o}/oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        blob = lambda n: "%064x" % n
        write(f"{o}/blobs/sha256/{blob(1)}", cfg)
        write(f"{o}/blobs/sha256/{blob(2)}", app)
        man = json.dumps({"config": {"digest": "sha256:" + blob(1)}, "layers": [{"digest": "sha256:" + blob(2)}]})
        descs = []
        for i in range(copies):
            n = 100 + (i if distinct else 0)
            write(f"{o}/blobs/sha256/{blob(n)}", man.encode())
            descs.append({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + blob(n),
                          "platform": {"os": "linux", "architecture": "amd64"}})
        write(f"{o}/index.json", json.dumps({"manifests": descs}).encode())
        out.append((f"3 inspect: OCI, {copies} descriptors", ["inspect", "--image", o, "--no-host"], None))
    return out


def fleet_case(d, bins):
    """5: 1,000 nodes, each its own driver version, on a small image (the multi program)."""
    img = write(f"{d}/small.tar", image([tar([("usr/local/bin/app", MULTI, 0o755)])]))
    v = json.load(open(f"{d}/base.json"))
    nodes = f"{d}/fleet-nodes"
    os.makedirs(nodes, exist_ok=True)
    for i in range(1000):
        v["facts"]["host"]["driver"]["version"] = "580.%d.01" % (10 + i)
        json.dump(v, open(f"{nodes}/node{i}.json", "w"))
    return (f"5 fleet --image: 1,000 drivers ({os.path.getsize(img) // 1024} KB image)",
            ["fleet", "--image", img, nodes, "--format", "json"], None)


def measure(binary, args, sig):
    tmp = tempfile.mkdtemp(prefix="bench-tmp-")
    env = dict(os.environ, TMPDIR=tmp)
    start = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-f", "PEAK %M", binary] + args, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if sig is not None:
        while p.poll() is None:
            trees = [e for e in os.listdir(tmp) if e.startswith("cudadiag-image-")]
            if any(sum(len(f) for _, _, f in os.walk(os.path.join(tmp, t))) > 20 for t in trees):
                break
            time.sleep(0.002)
        # The child of /usr/bin/time is cudadiag.
        kids = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split() if p.poll() is None else []
        for k in kids:
            os.kill(int(k), sig)
    try:
        _, err = p.communicate(timeout=300)
        code = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        code = "timeout"
    wall = time.monotonic() - start
    peak = next((l.split()[1] for l in err.decode(errors="replace").splitlines()[::-1] if l.startswith("PEAK ")), "?")
    if "Command terminated by signal" in err.decode(errors="replace"):
        code = "killed by " + err.decode().split("signal")[-1].strip().split()[0]
    left = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(tmp) for f in fs
               if not os.path.islink(os.path.join(r, f)))
    entries = len(os.listdir(tmp))
    subprocess.run(["rm", "-rf", tmp])
    return code, wall, peak, left, entries


def main():
    bins = sys.argv[1:]
    with tempfile.TemporaryDirectory() as d:
        all_cases = cases(d, bins) + [fleet_case(d, bins)]
        only = os.environ.get("ONLY")
        all_cases = [c for c in all_cases if not only or only in c[0]]
        print("| case | " + " | ".join(f"{os.path.basename(os.path.dirname(b)) or b}: exit, s, peak KB, bytes left" for b in bins) + " |")
        print("|---|" + "---|" * len(bins))
        for name, args, sig in all_cases:
            cells = []
            for b in bins:
                code, wall, peak, left, entries = measure(b, args, sig)
                cells.append(f"{code}, {wall:.2f}, {peak}, {left:,} ({entries} entries)")
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
