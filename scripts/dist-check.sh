#!/usr/bin/env bash
# Checks the release artefacts scripts/dist.sh makes, as a user would meet them (not run by CI: it builds
# twice in release mode and, with --pypi, reaches PyPI). Prints a summary; exits 1 if a check fails.
#   - both checksums verify (`sha256sum -c`);
#   - the tarball holds the binary, README.md, LICENSE, five completion scripts and the manual pages;
#   - the binary's glibc floor (highest GLIBC_x.y it needs) is at most 2.17, read three ways: objdump -T,
#     readelf -V, and cudadiag's own reading (`inspect --format json`, binaries[].glibc.needs, and `audit` with
#     a policy of `[targets] glibc = "2.17"`);
#   - the wheel installs with `pip install --no-index` into a fresh venv, and its `cudadiag` prints
#     `--version` and inspects fixtures/cuda13/multi;
#   - the completions parse (`bash -n`; `zsh -n`, `fish -n` where installed) and the man pages render (groff).
#   - with --pypi: `uvx` and `pipx run` start the wheel (uv and pipx installed from PyPI into a scratch venv).
#
# Usage: scripts/dist-check.sh [--no-build] [--pypi] [DIST_DIR]   (default: build with scripts/dist.sh into dist/)
set -euo pipefail
# Every check counts its failure (`if`, `||`) and the run goes on to the summary.
cd "$(dirname "$0")/.."
build=1
pypi=0
dist=dist
for a in "$@"; do
  case "$a" in
    --no-build) build=0 ;;
    --pypi) pypi=1 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "dist-check.sh: unknown option $a" >&2; exit 2 ;;
    *) dist=$a ;;
  esac
done
floor=2.17
arch=$(uname -m)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
name="cudadiag-$version-$arch-unknown-linux-gnu"
whl="cudadiag-$version-py3-none-manylinux_2_17_$arch.manylinux2014_$arch.whl"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

summary=()
failed=0
ok() { summary+=("ok    $*"); }
bad() { summary+=("FAIL  $*"); failed=1; }
skip() { summary+=("skip  $*"); }
older_or_equal() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n 1)" = "$2" ]; }

if [ "$build" = 1 ]; then
  t0=$(date +%s)
  if scripts/dist.sh --out "$dist"; then
    ok "scripts/dist.sh built both artefacts in $(( $(date +%s) - t0 ))s wall"
  else
    bad "scripts/dist.sh failed after $(( $(date +%s) - t0 ))s"
  fi
fi

# --- checksums and contents ---------------------------------------------------------------------------------
for f in "$name.tar.gz" "$whl"; do
  if [ ! -f "$dist/$f" ]; then bad "$dist/$f is missing"; continue; fi
  if (cd "$dist" && sha256sum --quiet -c "$f.sha256"); then
    ok "$f: $(stat -c %s "$dist/$f") bytes, sha256 verifies"
  else
    bad "$f: sha256 does not verify"
  fi
done
tar -xzf "$dist/$name.tar.gz" -C "$scratch" 2>/dev/null || bad "cannot unpack $name.tar.gz"
top="$scratch/$name"
bin="$top/cudadiag"
missing=()
for f in cudadiag README.md LICENSE completions/cudadiag.bash completions/_cudadiag completions/cudadiag.fish \
  completions/cudadiag.elv completions/_cudadiag.ps1 man/man1/cudadiag.1 man/man1/cudadiag-inspect.1; do
  [ -e "$top/$f" ] || missing+=("$f")
done
if [ ${#missing[@]} -eq 0 ]; then
  ok "tarball holds the binary ($(stat -c %s "$bin") bytes), README, LICENSE, 5 completions, $(ls "$top/man/man1" | wc -l) man pages"
else
  bad "tarball lacks ${missing[*]}"
fi

# --- the glibc floor, three readings ------------------------------------------------------------------------
# (Empty when the tool or the binary is missing: reported as a skip below.)
by_objdump=$(objdump -T "$bin" 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -u -V | tail -n 1) || true
by_readelf=$(readelf -W -V "$bin" 2>/dev/null | sed -n 's/.*Name: GLIBC_\([0-9][0-9.]*\).*/\1/p' | sort -u -V | tail -n 1) || true
for reading in "objdump -T:$by_objdump" "readelf -V:$by_readelf"; do
  tool=${reading%%:*} need=${reading#*:}
  if [ -z "$need" ]; then skip "$tool not available"
  elif older_or_equal "$need" "$floor"; then ok "glibc floor by $tool: GLIBC_$need (<= $floor)"
  else bad "glibc floor by $tool: GLIBC_$need (> $floor)"; fi
done
# cudadiag's own reading of its symbol versions (`inspect --format json`, binaries[0].glibc.needs), and the
# same as a release gate: `audit` with a policy of `[targets] glibc` at the floor must pass.
json="$scratch/self.json"
"$bin" inspect --format json --no-host "$bin" >"$json" 2>/dev/null || true   # judged by its JSON, next
by_self=$(python3 -c 'import json, sys
print((json.load(open(sys.argv[1]))["binaries"][0].get("glibc") or {}).get("needs") or "absent")' "$json" \
  2>/dev/null || echo "unreadable")
case "$by_self" in
  absent|unreadable) bad "cudadiag inspect --format json of itself gave no binaries[0].glibc.needs ($by_self)" ;;
  *) if older_or_equal "$by_self" "$floor"; then ok "glibc floor by cudadiag itself: GLIBC_$by_self (<= $floor)"
     else bad "glibc floor by cudadiag itself: GLIBC_$by_self (> $floor)"; fi ;;
esac
printf '[targets]\nglibc = "%s"\n' "$floor" >"$scratch/policy.toml"
if "$bin" audit --policy "$scratch/policy.toml" "$bin" >"$scratch/audit.txt" 2>&1; then
  ok "cudadiag audit of itself with [targets] glibc = \"$floor\": passes"
else bad "cudadiag audit of itself with [targets] glibc = \"$floor\" fails: $(head -3 "$scratch/audit.txt")"; fi
host_glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}') || true
[ -n "$host_glibc" ] && ok "(this machine's glibc, for comparison: $host_glibc)"

# --- the wheel in a fresh venv ------------------------------------------------------------------------------
venv="$scratch/venv"
if python3 -m venv "$venv" >/dev/null 2>&1 &&
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-index "$dist/$whl" >"$scratch/pip.log" 2>&1; then
  ok "pip install --no-index $whl into a fresh venv"
  if v=$("$venv/bin/cudadiag" --version 2>&1); then
    ok "venv cudadiag --version: $(echo "$v" | tr '\n' ';' | sed 's/;$//; s/;/; /g')"
  else
    bad "venv cudadiag --version failed: $v"
  fi
  rc=0
  out=$("$venv/bin/cudadiag" inspect fixtures/cuda13/multi 2>&1) || rc=$?
  if [ $rc -eq 0 ] && echo "$out" | grep -q "SASS sm_75 sm_80 sm_90"; then
    ok "venv cudadiag inspect fixtures/cuda13/multi: exit 0, $(echo "$out" | head -n 1 | cut -c1-80)…"
  else
    bad "venv cudadiag inspect fixtures/cuda13/multi: exit $rc: $out"
  fi
else
  bad "pip install --no-index into a fresh venv failed: $(tail -n 3 "$scratch/pip.log" 2>/dev/null)"
fi

# --- completions and man pages ------------------------------------------------------------------------------
if bash -n "$top/completions/cudadiag.bash" 2>"$scratch/bash.err"; then ok "bash -n completions/cudadiag.bash"
else bad "bash -n: $(cat "$scratch/bash.err")"; fi
for sh in zsh fish; do
  f="$top/completions/_cudadiag"; [ "$sh" = fish ] && f="$top/completions/cudadiag.fish"
  if ! command -v "$sh" >/dev/null; then skip "$sh -n (no $sh here)"
  elif "$sh" -n "$f" 2>"$scratch/$sh.err"; then ok "$sh -n $(basename "$f")"
  else bad "$sh -n: $(cat "$scratch/$sh.err")"; fi
done
if command -v groff >/dev/null; then
  warn=0
  for page in "$top"/man/man1/*.1; do
    groff -k -man -Tutf8 -ww -z "$page" 2>>"$scratch/groff.err" || warn=1
  done
  if [ $warn -eq 0 ] && [ ! -s "$scratch/groff.err" ]; then
    ok "groff renders all $(ls "$top/man/man1" | wc -l) man pages without a warning ($(MANWIDTH=80 man -l "$top/man/man1/cudadiag.1" 2>/dev/null | wc -l) lines for cudadiag.1)"
  else
    bad "groff: $(head -n 5 "$scratch/groff.err")"
  fi
else
  skip "man page rendering (no groff here)"
fi

# --- uvx and pipx (PyPI) ------------------------------------------------------------------------------------
if [ "$pypi" = 1 ]; then
  tools="$scratch/tools"
  if python3 -m venv "$tools" && "$tools/bin/pip" install --quiet --disable-pip-version-check uv pipx >/dev/null 2>&1; then
    if v=$(PATH="$tools/bin:$PATH" UV_CACHE_DIR="$scratch/uv" uvx --offline --from "$dist/$whl" cudadiag -V 2>&1); then
      ok "uvx --from $whl cudadiag -V: $(echo "$v" | tail -n 1)"
    else bad "uvx: $v"; fi
    if v=$(PATH="$tools/bin:$PATH" PIPX_HOME="$scratch/pipx" "$tools/bin/pipx" run --spec "$dist/$whl" cudadiag -V 2>&1); then
      ok "pipx run --spec $whl cudadiag -V: $(echo "$v" | tail -n 1)"
    else bad "pipx run: $v"; fi
  else
    skip "uvx/pipx (cannot install uv and pipx from PyPI)"
  fi
fi

echo
echo "dist-check: $name, $whl"
printf '  %s\n' "${summary[@]}"
[ $failed -eq 0 ] && echo "dist-check: all checks passed" || echo "dist-check: FAILED"
exit $failed
