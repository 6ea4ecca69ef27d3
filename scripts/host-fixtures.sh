#!/usr/bin/env bash
# Regenerates fixtures/hosts/: one small machine tree per case (`<case>/root/`) and its environment
# (`<case>/env`, KEY=VALUE lines). Libraries are tiny text files (their names, links and directories are what
# cudadiag reads); procfs/sysfs files hold the exact text the NVIDIA driver and the kernel write.
# Usage: scripts/host-fixtures.sh   (from the repository root; rewrites fixtures/hosts/*/ except README.md)
set -euo pipefail
cd "$(dirname "$0")/.."
H=fixtures/hosts
find "$H" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} + 2>/dev/null || true
mkdir -p "$H"

UUID0=GPU-b4a13011-1c9e-7c5a-7f8e-0123456789ab
UUID1=GPU-7d2e4f10-aa55-4b1b-9c3d-fedcba987654

w() { mkdir -p "$(dirname "$1")"; printf '%b' "$2" > "$1"; }
lnk() { mkdir -p "$(dirname "$2")"; ln -sfn "$1" "$2"; }
fake() { w "$1" "fake ${1##*/} (cudadiag fixture)\n"; }

nvrm() { # root version [open]
  if [ "${3:-}" = open ]; then
    w "$1/proc/driver/nvidia/version" "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  $2  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Jul 15 22:38:39 UTC 2025\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
  else
    w "$1/proc/driver/nvidia/version" "NVRM version: NVIDIA UNIX x86_64 Kernel Module  $2  Thu Feb 22 01:44:30 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
  fi
  w "$1/sys/module/nvidia/version" "$2\n"
}
gpu() { # root bus minor uuid model pciid
  w "$1/proc/driver/nvidia/gpus/$2/information" "Model: \t\t $5\nIRQ:   \t\t 140\nGPU UUID: \t $4\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t $2\nDevice Minor: \t $3\nGPU Firmware: \t N/A\nGPU Excluded:\t No\n"
  pci "$1" "$2" "$6"
}
pci() { # root bus pciid
  w "$1/sys/bus/pci/devices/$2/vendor" "0x10de\n"
  w "$1/sys/bus/pci/devices/$2/class" "0x030200\n"
  w "$1/sys/bus/pci/devices/$2/device" "0x$3\n"
}
modules() { # root names...
  local r=$1; shift; local t=""
  for m in "$@"; do t="$t$m 98304 0 - Live 0x0000000000000000\n"; done
  t="${t}ext4 1007616 1 - Live 0x0000000000000000\n"
  w "$r/proc/modules" "$t"
}
nodes() { for n in "${@:2}"; do w "$1/dev/$n" ""; done; }
status() { w "$1/proc/self/status" "Name:\tcudadiag\nUmask:\t0022\nState:\tR (running)\nUid:\t$2\t$2\t$2\t$2\nGid:\t$3\t$3\t$3\t$3\nGroups:\t$4\n"; }
ldconf() { # root
  w "$1/etc/ld.so.conf" "include /etc/ld.so.conf.d/*.conf\n\n"
  w "$1/etc/ld.so.conf.d/x86_64-linux-gnu.conf" "# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n"
}
driverlibs() { # root version
  local d=$1/usr/lib/x86_64-linux-gnu
  fake "$d/libcuda.so.$2"; lnk "libcuda.so.$2" "$d/libcuda.so.1"; lnk libcuda.so.1 "$d/libcuda.so"
  fake "$d/libnvidia-ml.so.$2"; lnk "libnvidia-ml.so.$2" "$d/libnvidia-ml.so.1"
  fake "$d/libnvidia-ptxjitcompiler.so.$2"; lnk "libnvidia-ptxjitcompiler.so.$2" "$d/libnvidia-ptxjitcompiler.so.1"
}
toolkit() { # root version cudart-version
  local t=$1/usr/local/cuda-$2 l
  l=$t/targets/x86_64-linux/lib
  w "$t/version.json" "{\n   \"cuda\" : {\n      \"name\" : \"CUDA SDK\",\n      \"version\" : \"$2.1\"\n   },\n   \"cuda_cudart\" : {\n      \"name\" : \"CUDA Runtime (cudart)\",\n      \"version\" : \"$3\"\n   },\n   \"libcublas\" : {\n      \"name\" : \"CUDA cuBLAS\",\n      \"version\" : \"$2.5.3\"\n   }\n}\n"
  fake "$l/libcudart.so.$3"; lnk "libcudart.so.$3" "$l/libcudart.so.${2%%.*}"; lnk "libcudart.so.${2%%.*}" "$l/libcudart.so"
  fake "$l/libcublas.so.$2.5.3"; lnk "libcublas.so.$2.5.3" "$l/libcublas.so.${2%%.*}"
  fake "$l/libcudart_static.a"
  fake "$l/stubs/libcuda.so"; fake "$l/stubs/libnvidia-ml.so"
  lnk targets/x86_64-linux/lib "$t/lib64"
  fake "$t/bin/nvcc"; chmod +x "$t/bin/nvcc"
  w "$t/include/cuda.h" "#define CUDA_VERSION ${2%%.*}0${2##*.}0\n"
}
envfile() { local c=$1; shift; printf '%s\n' "$@" > "$H/$c/env"; }
BASEENV=(PATH=/usr/local/cuda/bin:/usr/bin:/bin HOME=/root)

ldcache() { # root name=path... : a binary etc/ld.so.cache listing those entries, in that order, with the
            # flags of $CACHE_FLAGS (default 0x0303: libc6, x86-64)
  mkdir -p "$1/etc"
  CACHE_FLAGS=${CACHE_FLAGS:-0x0303} python3 - "$@" <<'PY'
# glibc "glibc-ld.so.cache1.1" format (elf/cache.c): 48-byte header, 24-byte entries, strings after them.
import os, struct, sys
flags = int(os.environ["CACHE_FLAGS"], 16)
pairs = [a.split("=", 1) for a in sys.argv[2:]]
table = 48 + 24 * len(pairs); strings = b""; entries = b""
for k, v in pairs:
    ko = table + len(strings); strings += k.encode() + b"\0"
    vo = table + len(strings); strings += v.encode() + b"\0"
    entries += struct.pack("<iIIIQ", flags, ko, vo, 0, 0)
head = b"glibc-ld.so.cache1.1" + struct.pack("<II", len(pairs), len(strings)) + b"\0" * 20
open(sys.argv[1] + "/etc/ld.so.cache", "wb").write(head + entries + strings)
PY
}
ldconfig_like() { # root trusted-dir... : the cache `ldconfig` would write for the root, through ldcache
  # The directories of etc/ld.so.conf (includes followed, globs in name order), then the trusted ones, each
  # once; in each, every lib*.so and lib*.so.N name (the fakes carry no DT_SONAME: their names stand for it).
  # Entries in descending _dl_cache_libcmp order, an earlier directory first among equal names, as the
  # loader's binary search expects.
  local pairs
  mapfile -t pairs < <(python3 - "$@" <<'PY'
import functools, glob, os, re, sys
root, trusted = sys.argv[1], sys.argv[2:]
def conf(path, depth=0):
    try:
        text = open(root + path).read() if depth <= 8 else ""
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("include"):
            pat = line[7:].strip()
            pat = pat if pat.startswith("/") else os.path.dirname(path) + "/" + pat
            for f in sorted(glob.glob(root + pat)):
                out += conf(f[len(root):], depth + 1)
        elif line.startswith("/"):
            out.append(line.split("=")[0].strip().rstrip("/") or "/")
    return out
def libcmp(a, b):  # glibc's _dl_cache_libcmp: digit runs compare as numbers, and above other characters
    i = j = 0
    while i < len(a):
        if a[i].isdigit():
            if j >= len(b) or not b[j].isdigit():
                return 1
            m, n = i, j
            while i < len(a) and a[i].isdigit(): i += 1
            while j < len(b) and b[j].isdigit(): j += 1
            if int(a[m:i]) != int(b[n:j]):
                return int(a[m:i]) - int(b[n:j])
        elif j < len(b) and b[j].isdigit():
            return -1
        elif j >= len(b) or a[i] != b[j]:
            return ord(a[i]) - (ord(b[j]) if j < len(b) else 0)
        else:
            i += 1; j += 1
    return 0 if j >= len(b) else -1
dirs = []
for d in conf("/etc/ld.so.conf") + trusted:
    if d not in dirs:
        dirs.append(d)
pairs = []
for d in dirs:
    try:
        names = sorted(os.listdir(root + d))
    except OSError:
        continue
    pairs += [(n, d + "/" + n) for n in names if re.fullmatch(r"lib.+\.so(\.[0-9]+)?", n)]
pairs.sort(key=functools.cmp_to_key(lambda x, y: libcmp(y[0], x[0])))
for n, p in pairs:
    print(f"{n}={p}")
PY
  )
  ldcache "$1" "${pairs[@]}"
}
nvidia_lib64() { # root: the driver's libraries moved out of the multiarch directory into /usr/local/nvidia/lib64,
                # which /etc/ld.so.conf.d lists
  rm "$1"/usr/lib/x86_64-linux-gnu/libcuda* "$1"/usr/lib/x86_64-linux-gnu/libnvidia-*
  local d=$1/usr/local/nvidia/lib64
  fake "$d/libcuda.so.550.90.07"; lnk libcuda.so.550.90.07 "$d/libcuda.so.1"
  fake "$d/libnvidia-ml.so.550.90.07"; lnk libnvidia-ml.so.550.90.07 "$d/libnvidia-ml.so.1"
  w "$1/etc/ld.so.conf.d/nvidia.conf" "/usr/local/nvidia/lib64\n"
}
healthy() { # root driver-version
  nvrm "$1" "$2"
  gpu "$1" 0000:19:00.0 0 "$UUID0" "NVIDIA H100 80GB HBM3" 2330
  gpu "$1" 0000:3b:00.0 1 "$UUID1" "NVIDIA H100 80GB HBM3" 2330
  pci "$1" 0000:00:02.0 0000; rm -rf "$1/sys/bus/pci/devices/0000:00:02.0"  # keep only NVIDIA devices
  w "$1/sys/bus/pci/devices/0000:19:00.1/vendor" "0x10de\n"; w "$1/sys/bus/pci/devices/0000:19:00.1/class" "0x040300\n"; w "$1/sys/bus/pci/devices/0000:19:00.1/device" "0x22ba\n"
  modules "$1" nvidia_uvm nvidia_drm nvidia_modeset nvidia
  nodes "$1" nvidia0 nvidia1 nvidiactl nvidia-uvm nvidia-uvm-tools nvidia-modeset
  status "$1" 0 0 "0"
  ldconf "$1"; driverlibs "$1" "$2"
  toolkit "$1" 12.4 12.4.127; lnk cuda-12.4 "$1/usr/local/cuda"
}

# 1. A healthy machine: driver 550.90.07, two H100s, toolkit 12.4.
R=$H/healthy/root; healthy "$R" 550.90.07
envfile healthy "${BASEENV[@]}" LD_LIBRARY_PATH=/usr/local/cuda/lib64

# 2. A container started without GPU access: procfs shows the host's driver and GPUs, no /dev/nvidia*, no
#    driver libraries (the NVIDIA runtime did not mount them).
R=$H/container-no-gpu/root
nvrm "$R" 550.90.07; gpu "$R" 0000:19:00.0 0 "$UUID0" "NVIDIA H100 80GB HBM3" 2330
w "$R/.dockerenv" ""; w "$R/proc/1/cgroup" "0::/\n"; status "$R" 0 0 "0"; ldconf "$R"
toolkit "$R" 12.4 12.4.127; lnk cuda-12.4 "$R/usr/local/cuda"
envfile container-no-gpu "${BASEENV[@]}" LD_LIBRARY_PATH=/usr/local/cuda/lib64 NVIDIA_REQUIRE_CUDA="cuda>=12.4 brand=tesla,driver>=470,driver<471" NVIDIA_VISIBLE_DEVICES=all

# 3. A driver upgraded without a reboot: module 550.54.14 still loaded, libraries 550.90.07 installed.
R=$H/driver-upgraded-no-reboot/root; healthy "$R" 550.90.07; nvrm "$R" 550.54.14
envfile driver-upgraded-no-reboot "${BASEENV[@]}"

# 4. WSL2: /dev/dxg, libraries in /usr/lib/wsl/lib (plain files, not links), no NVIDIA procfs.
R=$H/wsl2/root
nodes "$R" dxg; status "$R" 0 0 "0"  # uid 0: git keeps no modes, so a checkout must not decide access
fake "$R/usr/lib/wsl/lib/libcuda.so.1.1"; fake "$R/usr/lib/wsl/lib/libcuda.so.1"; fake "$R/usr/lib/wsl/lib/libcuda.so"
fake "$R/usr/lib/wsl/lib/libnvidia-ml.so.1"; fake "$R/usr/lib/wsl/lib/libdxcore.so"
ldconf "$R"; w "$R/etc/ld.so.conf.d/ld.wsl.conf" "# This file was automatically generated by WSL.\n/usr/lib/wsl/lib\n"
envfile wsl2 PATH=/usr/bin:/bin HOME=/home/user

# 5. A forward-compatibility libcuda older than the module on the loader path: cuda-compat-12-4 (550.54.14)
#    ldconfig'd on a machine whose driver is 580.65.06 (open modules).
R=$H/compat-older-than-driver/root; healthy "$R" 580.65.06; nvrm "$R" 580.65.06 open
fake "$R/usr/local/cuda-12.4/compat/libcuda.so.550.54.14"; lnk libcuda.so.550.54.14 "$R/usr/local/cuda-12.4/compat/libcuda.so.1"
w "$R/etc/ld.so.conf.d/000_cuda-compat.conf" "/usr/local/cuda-12.4/compat\n"
envfile compat-older-than-driver "${BASEENV[@]}"

# 6. The toolkit's stub named libcuda.so.1 first on LD_LIBRARY_PATH.
R=$H/stub-first/root; healthy "$R" 550.90.07
cp "$R/usr/local/cuda-12.4/targets/x86_64-linux/lib/stubs/libcuda.so" "$R/usr/local/cuda-12.4/targets/x86_64-linux/lib/stubs/libcuda.so.1"
envfile stub-first "${BASEENV[@]}" LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:/usr/local/cuda/lib64

# 7. The same path with only the unversioned stub libcuda.so: harmless.
R=$H/stub-unversioned/root; healthy "$R" 550.90.07
envfile stub-unversioned "${BASEENV[@]}" LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:/usr/local/cuda/lib64

# 8. A conda environment, pip wheels and a system toolkit side by side (three libcudart copies).
R=$H/conda-pip-toolkit/root; healthy "$R" 550.90.07
C=$R/opt/conda/envs/ml
fake "$C/lib/libcudart.so.12.6.77"; lnk libcudart.so.12.6.77 "$C/lib/libcudart.so.12"
w "$C/conda-meta/cuda-cudart-12.6.77-h5888daf_0.json" "{\"name\": \"cuda-cudart\", \"version\": \"12.6.77\", \"build\": \"h5888daf_0\", \"files\": [\"lib/libcudart.so.12\", \"lib/libcudart.so.12.6.77\"]}\n"
w "$C/conda-meta/python-3.11.9-hb806964_0.json" "{\"name\": \"python\", \"version\": \"3.11.9\", \"files\": [\"bin/python3.11\"]}\n"
mkdir -p "$R/opt/conda/conda-meta"
S=$R/root/.venv/lib/python3.11/site-packages
fake "$S/nvidia/cuda_runtime/lib/libcudart.so.12"
w "$S/nvidia_cuda_runtime_cu12-12.8.90.dist-info/RECORD" "nvidia/cuda_runtime/lib/libcudart.so.12,sha256=AAAA,1024\nnvidia_cuda_runtime_cu12-12.8.90.dist-info/RECORD,,\n"
fake "$S/nvidia/cu13/lib/libcudart.so.13"
w "$S/nvidia_cuda_runtime-13.0.96.dist-info/RECORD" "nvidia/cu13/lib/libcudart.so.13,sha256=BBBB,1024\n"
fake "$S/torch/lib/libtorch_cuda.so"; fake "$S/torch/lib/libcudart-9335f6a2.so.12"
w "$S/torch-2.5.1.dist-info/RECORD" "torch/lib/libcudart-9335f6a2.so.12,sha256=CCCC,1024\ntorch/lib/libtorch_cuda.so,sha256=DDDD,1024\n"
w "$S/numpy-2.1.0.dist-info/RECORD" "numpy/__init__.py,,\n"
envfile conda-pip-toolkit "${BASEENV[@]}" CONDA_PREFIX=/opt/conda/envs/ml VIRTUAL_ENV=/root/.venv LD_LIBRARY_PATH=/usr/local/cuda/lib64

# 9. nouveau holds the GPU; no NVIDIA module.
R=$H/nouveau/root
pci "$R" 0000:01:00.0 2684; modules "$R" nouveau drm_ttm_helper; status "$R" 0 0 "0"; w "$R/sys/module/nouveau/initstate" "live\n"
nodes "$R" dri-card0-placeholder; rm -f "$R/dev/dri-card0-placeholder"
envfile nouveau PATH=/usr/bin:/bin HOME=/root

# 10. nvidia-uvm missing: no module, no node.
R=$H/uvm-missing/root; healthy "$R" 550.90.07; rm "$R/dev/nvidia-uvm" "$R/dev/nvidia-uvm-tools"
modules "$R" nvidia_drm nvidia_modeset nvidia
envfile uvm-missing "${BASEENV[@]}"

# 10b. deb-installed driver and toolkit on the conda/pip machine: dpkg's status and file lists name the owners.
R=$H/conda-pip-toolkit/root
w "$R/var/lib/dpkg/status" "Package: libnvidia-compute-550\nStatus: install ok installed\nArchitecture: amd64\nVersion: 550.90.07-0ubuntu1\n\nPackage: cuda-cudart-12-4\nStatus: install ok installed\nArchitecture: amd64\nVersion: 12.4.127-1\n\nPackage: libc6\nStatus: install ok installed\nVersion: 2.35-0ubuntu3.8\n"
w "$R/var/lib/dpkg/info/libnvidia-compute-550:amd64.list" "/.\n/usr\n/usr/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07\n/usr/lib/x86_64-linux-gnu/libcuda.so.1\n/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.90.07\n"
w "$R/var/lib/dpkg/info/cuda-cudart-12-4.list" "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127\n/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12\n"
w "$R/var/lib/dpkg/info/libc6:amd64.list" "/lib/x86_64-linux-gnu/libc.so.6\n"

# 10c. A Jetson board (L4T R35, nvgpu driver): no /proc/driver/nvidia, no PCI GPU, libcuda under tegra/.
R=$H/jetson/root
w "$R/etc/nv_tegra_release" "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: Tue Aug  1 19:57:35 UTC 2023\n"
fake "$R/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1.1"; lnk libcuda.so.1.1 "$R/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1"
w "$R/etc/ld.so.conf" "include /etc/ld.so.conf.d/*.conf\n"; w "$R/etc/ld.so.conf.d/nvidia-tegra.conf" "/usr/lib/aarch64-linux-gnu/tegra\n/usr/lib/aarch64-linux-gnu/tegra-egl\n"
fake "$R/lib/ld-linux-aarch64.so.1"  # the standard interpreter names the machine: an Arm one
nodes "$R" nvhost-ctrl-gpu nvmap; status "$R" 1000 1000 "44 1000"
envfile jetson PATH=/usr/local/cuda/bin:/usr/bin:/bin HOME=/home/nvidia

# 12. A newer forward-compatibility libcuda on consumer GPUs: cuda-compat-12-9 (575.57.08) ldconfig'd first (as
#     CUDA 12.9 images do) on a 550.90.07 machine with two GeForce RTX 4090s (VGA class 0x0300): error 804.
R=$H/compat-on-geforce/root; healthy "$R" 550.90.07
for g in "0000:19:00.0 0 $UUID0" "0000:3b:00.0 1 $UUID1"; do
  set -- $g; gpu "$R" "$1" "$2" "$3" "NVIDIA GeForce RTX 4090" 2684; w "$R/sys/bus/pci/devices/$1/class" "0x030000\n"
done
fake "$R/usr/local/cuda-12.9/compat/libcuda.so.575.57.08"; lnk libcuda.so.575.57.08 "$R/usr/local/cuda-12.9/compat/libcuda.so.1"
w "$R/etc/ld.so.conf.d/000_cuda-compat.conf" "/usr/local/cuda-12.9/compat\n"
envfile compat-on-geforce "${BASEENV[@]}"

# 13. A stale ld.so.cache: the driver's libraries were installed in /usr/local/nvidia/lib64 and listed in
#     /etc/ld.so.conf.d, but ldconfig was not run since; the cache (glibc's binary format) knows only libc.
R=$H/stale-ld-cache/root; healthy "$R" 550.90.07
nvidia_lib64 "$R"
ldcache "$R" libc.so.6=/lib/x86_64-linux-gnu/libc.so.6
envfile stale-ld-cache "${BASEENV[@]}"

# 14. No ld.so.cache at all: the driver's libraries are in /usr/local/nvidia/lib64, which /etc/ld.so.conf.d
#     lists, but ldconfig never ran (an image built without it). glibc reads no ld.so.conf at run time.
R=$H/ld-cache-missing/root; healthy "$R" 550.90.07
nvidia_lib64 "$R"
envfile ld-cache-missing "${BASEENV[@]}"

# 11. Modelled on the project's H200 host: the open module built by Nix (580.159.04), driver libraries under
#     /usr/local/nvidia/lib64 and /lib found through a binary ld.so.cache (no ld.so.conf), toolkit 13.0.
R=$H/h200-nix-open-580/root
w "$R/proc/driver/nvidia/version" "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \nGCC version:  gcc version 15.3.0 (GCC) \n"
w "$R/sys/module/nvidia/version" "580.159.04\n"
gpu "$R" 0000:19:00.0 0 GPU-3c4d919d-9f1f-a9ab-2956-6d66157bc184 "NVIDIA H200" 2335
modules "$R" nvidia_uvm nvidia_modeset nvidia
nodes "$R" nvidia0 nvidiactl nvidia-uvm nvidia-uvm-tools nvidia-caps/nvidia-cap1 nvidia-caps/nvidia-cap2
status "$R" 0 0 "0"
for d in usr/local/nvidia/lib64 lib; do
  for l in libcuda libnvidia-ml libcudadebugger; do fake "$R/$d/$l.so.580.159.04"; lnk "$l.so.580.159.04" "$R/$d/$l.so.1"; lnk "$l.so.1" "$R/$d/$l.so"; done
done
toolkit "$R" 13.0 13.0.96; lnk cuda-13.0 "$R/usr/local/cuda"
P=()
for s in libnvidia-ml.so.1 libnvidia-ml.so libcudadebugger.so.1 libcuda.so.1 libcuda.so; do
  for d in /usr/local/nvidia/lib64 /lib; do P+=("$s=$d/$s"); done
done
ldcache "$R" "${P[@]}" libcudart.so.13=/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13 \
  libc.so.6=/lib/x86_64-linux-gnu/libc.so.6
envfile h200-nix-open-580 PATH=/usr/local/cuda/bin:/usr/bin:/bin HOME=/root

# Every other machine with an ld.so.conf and no cache gets the cache ldconfig would write from it, as a real
# machine has: glibc searches the directories ld.so.conf lists only through the cache.
for c in "$H"/*/; do
  R=${c}root; case $(basename "$c") in ld-cache-missing) continue ;; esac
  [ -f "$R/etc/ld.so.conf" ] && [ ! -f "$R/etc/ld.so.cache" ] || continue
  if [ -e "$R/lib/ld-linux-aarch64.so.1" ]; then
    CACHE_FLAGS=0x0a03 ldconfig_like "$R" /lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu
  else
    ldconfig_like "$R" /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu
  fi
done

echo "fixtures written under $H"
