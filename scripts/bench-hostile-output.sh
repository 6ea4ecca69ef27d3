#!/usr/bin/env bash
# scripts/bench-hostile-output.sh CUDADIAG [WORKDIR]
#
# The hostile inputs of issue 19 cases 2, 4, 5, 7 and 11, built in WORKDIR (default a new temporary
# directory), and one line per case: exit status, wall time, peak RSS, file-system output blocks (512 bytes:
# what a wheel's members wrote to $TMPDIR) and what the output shows. Each run is capped with `ulimit -v`
# (16 GiB) and `timeout 120`. Needs python3, cc and /usr/bin/time; case 7 as an unprivileged user needs root
# and setpriv (skipped otherwise). Writes up to 10 GiB to WORKDIR/tmp with a cudadiag that predates the budget.
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(realpath "$1")
work=${2:-$(mktemp -d)}
mkdir -p "$work/tmp" "$work/evil" "$work/unread" "$work/unread2"
cd "$work"

python3 - <<'PY'
import os, struct, zipfile
def bomb_frame(size, byte=0):
    # zstd frame of RLE blocks (RFC 8878): 4 bytes per 128 KiB.
    f = bytearray(b'\x28\xb5\x2f\xfd\xe0') + struct.pack('<Q', size)
    left = size
    while left:
        n = min(left, 128 << 10); left -= n
        f += struct.pack('<I', (n << 3) | (1 << 1) | (left == 0))[:3] + bytes([byte])
    return bytes(f)
def entry(kind, arch, payload, usize, flags):
    p = payload + b'\0' * ((-len(payload)) % 8)
    h = struct.pack('<HHIQIIHHIIIQQQ', kind, 0x0101, 64, len(p), len(payload), 0, 8, 1, arch, 0, 0, flags, 0, usize)
    return h.ljust(64, b'\0') + p
body = entry(2, 90, bomb_frame(256 << 20), 256 << 20, 0x1 | 0x10 | 0x8000)
fb = struct.pack('<IHHQ', 0xBA55ED50, 1, 16, len(body)) + body
open('bomb.fatbin', 'wb').write(fb)
os.makedirs('dir200', exist_ok=True)
for i in range(200):
    open(f'dir200/lib{i}.fatbin', 'wb').write(fb)
# A wheel with one 256 MiB member, then its central directory replaced by 40 records at offset 0.
with zipfile.ZipFile('one.whl', 'w', zipfile.ZIP_DEFLATED) as z:
    with z.open('pkg/lib0.so', 'w') as w:
        w.write(b'\x7fELF\x02\x01\x01' + b'\0' * 9)
        for _ in range(256):
            w.write(b'\0' * (1 << 20))
raw = open('one.whl', 'rb').read()
eocd = raw.rfind(b'PK\x05\x06')
cd_size, cd_off = struct.unpack('<II', raw[eocd + 12:eocd + 20])
fixed = raw[cd_off:cd_off + 46]
recs = b''
for i in range(40):
    name = f'pkg/lib{i}.so'.encode()
    rec = bytearray(fixed)
    rec[28:34] = struct.pack('<HHH', len(name), 0, 0)
    recs += bytes(rec) + name
out = raw[:cd_off] + recs + raw[eocd:eocd + 8] + struct.pack('<HHII', 40, 40, len(recs), cd_off) + b'\0\0'
open('bomb40.whl', 'wb').write(out)
PY
printf '[targets]\n' > policy.toml
evil=$(printf 'lib\033]0;pwned\007\033[2Jevil.so')
printf 'int evil(void){return 1;}\n' > evil/e.c
printf 'int evil(void);\nint main(void){return evil();}\n' > evil/m.c
cc -shared -fPIC -o "evil/$evil" -Wl,-soname,"$evil" evil/e.c
cc -o evil/app evil/m.c "evil/$evil" -Wl,-rpath,"$work/evil"
ln -sf missing.so unread/libbad.so
lib=$(find /usr/lib /lib -name 'libz.so.1' 2>/dev/null | head -1)
cp "$lib" unread/libgood.so
cp "$lib" unread2/libgood.so
cp "$lib" unread2/libsecret.so
chmod 000 unread2/libsecret.so
chmod 755 "$work" unread2

run() { # name, note (evaluated after), command...
    local name=$1 note=$2
    shift 2
    local rc=0
    ( ulimit -v $((16 << 20)); ulimit -s 65536
      TMPDIR=$work/tmp /usr/bin/time -v -o "$work/t.txt" timeout 120 "$@" >"$work/out.txt" 2>"$work/err.txt" ) || rc=$?
    printf '%-12s rc=%-3s wall=%-8s rss=%-8sKiB fs_out=%-10s %s\n' "$name" "$rc" \
        "$(grep 'Elapsed (wall' t.txt | awk '{print $NF}')" \
        "$(grep 'Maximum resident' t.txt | awk '{print $NF}')" \
        "$(grep 'File system outputs' t.txt | awk '{print $NF}')" "$(eval "$note")"
}
esc='echo esc_bytes=$(tr -cd "\033" < out.txt | wc -c)'
run case2-human "$esc" "$bin" inspect -v --no-host --color never --fail-on never evil/app
run case2-github "$esc" "$bin" inspect --format github --no-host --fail-on never evil/app
run case4 'grep -o "toolkit not read[^;]*" out.txt | head -1' "$bin" inspect -v --no-host bomb.fatbin
run case4-deep 'true' "$bin" inspect --deep --no-host bomb.fatbin
run case4-x200 'tail -1 out.txt' "$bin" audit --policy policy.toml dir200
run case4-deep200 'true' "$bin" inspect --deep --no-host --fail-on never dir200/lib{0..199}.fatbin
run case5 'grep -o "[0-9]* zip entries share" out.txt || true' "$bin" audit --policy policy.toml bomb40.whl
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    run case7-perm 'tail -1 out.txt' setpriv --reuid=65534 --regid=65534 --clear-groups -- \
        "$bin" --color never audit --policy policy.toml unread2
fi
run case7-link 'tail -1 out.txt' "$bin" --color never audit --policy policy.toml unread
word=$(head -c 100000 /dev/zero | tr '\0' q)
# shellcheck disable=SC2046
run case11-explain 'echo "stderr=$(wc -c < err.txt)B esc_bytes=$(tr -cd "\033" < err.txt | wc -c)"' \
    "$bin" explain "$(printf '\033]0;pwned\007')" $(for _ in $(seq 55); do echo "$word"; done)
run case11-codes 'echo "stderr=$(cat err.txt)"' bash -c "\"$bin\" codes | head -0"
run case11-inspect 'echo "stderr=$(cat err.txt)"' bash -c \
    "set -o pipefail; \"$bin\" inspect -v --no-host --fail-on never $repo/fixtures/cuda13/* | head -0"
