#!/usr/bin/env bash
# The glibc floor cudadiag reads (binaries[].glibc.needs of `inspect --format json`) against binutils':
# the highest GLIBC_x.y among the versioned undefined symbols `objdump -T` lists, for up to N ELF files of
# the given directories (default: /usr/lib/x86_64-linux-gnu and /usr/bin, 100 files each).
#
#   CUDADIAG=target/release/cudadiag scripts/glibc-floor-differential.sh [N] [DIR...]
#
# Prints one line per disagreement and a summary: files compared, agreeing, and how many files glibc itself
# provides (whose `objdump -T` also lists the versions they *define*: hence the comparison on undefined
# symbols; the plain `objdump -T FILE | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1` is counted too).
# Version needs that name no symbol (GLIBC_ABI_DT_RELR, which cudadiag counts as 2.36) are invisible to
# `objdump -T`; such files are reported as differences with their DT_VERNEED line.
set -euo pipefail
n=${1:-100}
shift || true
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(/usr/lib/x86_64-linux-gnu /usr/bin)
bin=${CUDADIAG:-target/release/cudadiag}
command -v objdump >/dev/null || { echo "objdump (binutils) is needed" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
files=()
for d in "${dirs[@]}"; do
    count=0
    while IFS= read -r f; do
        [ "$count" -lt "$n" ] || break
        # Regular ELF files only (no links: each file once), readable.
        [ -f "$f" ] && [ ! -L "$f" ] && [ -r "$f" ] || continue
        [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || continue
        # Executables and shared objects (e_type 2 or 3), not relocatable objects.
        case "$(od -An -tx1 -j16 -N1 "$f" | tr -d ' ')" in 02 | 03) ;; *) continue ;; esac
        files+=("$f")
        count=$((count + 1))
    done < <(find "$d" -maxdepth 1 -type f | LC_ALL=C sort)
done
"$bin" inspect --no-libraries --no-host --format json "${files[@]}" >"$tmp/report.json" || true
python3 - "$tmp/report.json" >"$tmp/ours.tsv" <<'PY'
import json, sys
for b in json.load(open(sys.argv[1]))["binaries"]:
    g = b.get("glibc") or {}
    print(f'{b["path"]}\t{g.get("needs") or "-"}')
PY
agree=0 total=0 own=0 plain_agree=0
while IFS=$'\t' read -r f ours; do
    total=$((total + 1))
    theirs=$(objdump -T "$f" 2>/dev/null | grep -F '*UND*' | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' |
        sed 's/GLIBC_//' | sort -V | tail -1 || true)
    theirs=${theirs:--}
    # The plain reading (every symbol objdump lists, defined ones included), for reference.
    plain=$(objdump -T "$f" 2>/dev/null | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' | sed 's/GLIBC_//' |
        sort -V | tail -1 || true)
    [ "$ours" != "${plain:--}" ] || plain_agree=$((plain_agree + 1))
    if objdump -p "$f" 2>/dev/null | grep -q '^Version definitions:' &&
        objdump -p "$f" 2>/dev/null | grep -qE '^[0-9]+ 0x[0-9a-f]+ 0x[0-9a-f]+ GLIBC_2'; then
        own=$((own + 1))
    fi
    if [ "$ours" = "$theirs" ]; then
        agree=$((agree + 1))
    else
        relr=$(objdump -p "$f" 2>/dev/null | grep -o 'GLIBC_ABI_DT_RELR' | head -1 || true)
        echo "differs: $f cudadiag=$ours objdump=$theirs${relr:+ (needs $relr)}"
    fi
done <"$tmp/ours.tsv"
echo "glibc floor: $agree / $total files agree with objdump -T (undefined symbols); $plain_agree / $total with" \
    "every symbol objdump -T lists; $own of the files are glibc's own libraries (they define GLIBC_ versions)"
