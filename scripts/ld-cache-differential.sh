#!/usr/bin/env bash
# Differential for the ld.so.cache step of doctor's libcuda search: glibc's dlopen("libcuda.so.1"), run by this
# machine's own ld.so inside a small chroot, against the first candidate `cudadiag doctor --root` names for the
# same tree. The library (a real shared object built here with SONAME libcuda.so.1) lives in a directory that
# only /etc/ld.so.conf.d lists, so the cache decides. Cases: no cache; the cache `ldconfig -r` writes; a cache
# written before the ld.so.conf entry (stale); a truncated cache; a copy in a default directory as well; and
# copies in the legacy hwcap subdirectories (tls/, x86_64/, haswell/) that ldconfig < 2.37 puts in the cache.
# The same cases for a program that NEEDs the library: `ld.so --list` against `inspect --root`.
# Needs root (chroot), cc and ldconfig on an x86-64 glibc machine; no GPU.
# Usage: CUDADIAG=target/release/cudadiag scripts/ld-cache-differential.sh
# Prints one line per case, and exits 1 if any differs.
set -euo pipefail
bin=$(realpath "${CUDADIAG:-target/release/cudadiag}")
[ -x "$bin" ] || { echo "ld-cache-differential: $bin: not found" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "ld-cache-differential: needs root (chroot)" >&2; exit 2; }
interp=/lib64/ld-linux-x86-64.so.2
libc=$(realpath /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null || realpath /usr/lib64/libc.so.6)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/probe.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    struct link_map *lm;
    char real[PATH_MAX];
    if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0) { puts("(none)"); return 0; }
    puts(realpath(lm->l_name, real) ? real : lm->l_name);
    return 0;
}
EOF
echo 'int cuInit(unsigned f) { return (int)f; }' > "$work/cuda.c"
cc -O1 -o "$work/probe" "$work/probe.c"
cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$work/libcuda.so.550.90.07" "$work/cuda.c"
# A program that NEEDs it, for the loader emulation (`inspect`) against `ld.so --list`.
echo 'int cuInit(unsigned); int main(void) { return cuInit(0); }' > "$work/needs.c"
cc -O1 -o "$work/needs" "$work/needs.c" "$work/libcuda.so.550.90.07"

# A root holding the probe, this machine's loader and libc, and the library where only ld.so.conf.d says.
fresh() {
    r=$work/root
    rm -rf "$r"
    mkdir -p "$r/lib64" "$r/lib/x86_64-linux-gnu" "$r/opt/nvidia/lib" "$r/etc/ld.so.conf.d" "$r/bin"
    cp "$interp" "$r/lib64/"
    cp "$libc" "$r/lib/x86_64-linux-gnu/libc.so.6"
    cp "$work/probe" "$work/needs" "$r/bin/"
    cp "$work/libcuda.so.550.90.07" "$r/opt/nvidia/lib/"
    ln -s libcuda.so.550.90.07 "$r/opt/nvidia/lib/libcuda.so.1"
    printf 'include /etc/ld.so.conf.d/*.conf\n' > "$r/etc/ld.so.conf"
    printf '/opt/nvidia/lib\n' > "$r/etc/ld.so.conf.d/nvidia.conf"
    # cudadiag reads the processor (for $PLATFORM and the legacy hwcaps) from the root.
    mkdir -p "$r/proc" && cp /proc/cpuinfo "$r/proc/cpuinfo"
}

status=0
check() { # case-name
    glibc=$(chroot "$work/root" /bin/probe)
    ours=$(env -i "$bin" doctor --root "$work/root" --clear-env --format json --fail-on never |
        python3 -c 'import json, sys
f = json.load(sys.stdin)["host"]["facts"]
c = f["libcuda"]
print((c[0]["real_path"] if c else "(none)") + " " + str(f.get("ld_cache")))')
    state=${ours##* }
    ours=${ours% *}
    if [ "$glibc" = "$ours" ]; then verdict=same; else verdict=DIFFERENT; status=1; fi
    echo "$verdict  $1, dlopen: glibc $glibc, doctor $ours (ld_cache $state)"
    # The NEEDED entry: what ld.so --list prints for it, against inspect's loader emulation.
    # (`ld.so --list` stops at a missing NEEDED library with "cannot open shared object file".)
    glibc=$(chroot "$work/root" /lib64/ld-linux-x86-64.so.2 --list /bin/needs 2>&1 |
        sed -n -e 's/^[[:space:]]*libcuda\.so\.1 => \([^ ]*\).*/\1/p' \
            -e 's/.*libcuda\.so\.1: cannot open shared object file.*/(none)/p') || true   # ld.so --list exits 1 then
    ours=$(env -i "$bin" inspect --root "$work/root" --clear-env --format json --fail-on never "$work/root/bin/needs" |
        python3 -c 'import json, sys
l = [l for l in json.load(sys.stdin)["libraries"] if l["soname"] == "libcuda.so.1" and not l["dlopen"]]
print(l[0].get("path") or "(none)")')
    if [ "$glibc" = "$ours" ]; then verdict=same; else verdict=DIFFERENT; status=1; fi
    echo "$verdict  $1, NEEDED: ld.so --list $glibc, inspect $ours"
}

fresh; check "no ld.so.cache"
fresh; ldconfig -r "$work/root"; check "cache written by ldconfig -r"
fresh; mv "$work/root/etc/ld.so.conf.d/nvidia.conf" "$work/nvidia.conf"
ldconfig -r "$work/root"; mv "$work/nvidia.conf" "$work/root/etc/ld.so.conf.d/"; check "stale cache"
fresh; ldconfig -r "$work/root"; head -c 40 "$work/root/etc/ld.so.cache" > "$work/cut"
mv "$work/cut" "$work/root/etc/ld.so.cache"; check "truncated cache"
fresh; cp "$work/libcuda.so.550.90.07" "$work/root/lib/x86_64-linux-gnu/"
ln -s libcuda.so.550.90.07 "$work/root/lib/x86_64-linux-gnu/libcuda.so.1"; check "no cache, a copy in a default directory"
fresh; cp "$work/libcuda.so.550.90.07" "$work/root/lib/x86_64-linux-gnu/"
ln -s libcuda.so.550.90.07 "$work/root/lib/x86_64-linux-gnu/libcuda.so.1"; ldconfig -r "$work/root"
check "cache, copies in both directories"
# Copies in legacy hwcap subdirectories too: an ldconfig older than 2.37 gives them cache entries with hwcap bits,
# which its ld.so takes before the plain one (tls/ first; tls/haswell/ on Intel); a newer one writes none.
fresh; for sub in tls x86_64 haswell tls/haswell; do
    mkdir -p "$work/root/opt/nvidia/lib/$sub"
    cp "$work/libcuda.so.550.90.07" "$work/root/opt/nvidia/lib/$sub/"
    ln -s libcuda.so.550.90.07 "$work/root/opt/nvidia/lib/$sub/libcuda.so.1"
done
ldconfig -r "$work/root"; check "cache, copies in legacy hwcap subdirectories"
exit $status
