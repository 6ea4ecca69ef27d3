#!/usr/bin/env bash
# Builds the release artefacts of one architecture from this checkout, into dist/:
#   cudadiag-VERSION-ARCH-unknown-linux-gnu.tar.gz (+ .sha256): the binary, README.md, LICENSE, completions
#     for bash, zsh, fish, elvish and PowerShell, and the manual pages (cudadiag.1, one per command);
#   cudadiag-VERSION-py3-none-manylinux_2_17_ARCH.manylinux2014_ARCH.whl (+ .sha256): the same program as a
#     wheel that puts `cudadiag` on the PATH (maturin, bindings = "bin"; pyproject.toml).
# Both are linked by zig against glibc 2.17's symbol versions (`cargo zigbuild --target ARCH-unknown-linux-gnu.2.17`,
# `maturin --zig --compatibility manylinux_2_17`): they start on CentOS 7 / RHEL 7 and every newer glibc
# distribution. They stay glibc builds, not static musl ones: the probe must dlopen the driver's libcuda,
# itself linked against the system's glibc. The script refuses a binary that needs a newer glibc.
#
# Usage: scripts/dist.sh [--arch x86_64|aarch64] [--out DIR] [--no-wheel]
#   --arch     default: this machine's (`uname -m`). Another one needs `rustup target add ARCH-unknown-linux-gnu`.
# Tools: cargo-zigbuild, maturin and ziglang (PyPI) are used from the PATH when all three are there, else
# installed, pinned, into a private virtual environment under the target directory (CUDADIAG_DIST_TOOLS=venv
# forces that). Needs cargo, python3 (with venv) and objdump or readelf. Builds and scratch files go where cargo
# puts its builds: CARGO_TARGET_DIR (or build.target-dir), else target/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

arch=$(uname -m)
out=dist
wheel=1
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-wheel) wheel=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "dist.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$arch" in
  x86_64|aarch64) ;;
  *) echo "dist.sh: --arch must be x86_64 or aarch64, not $arch" >&2; exit 2 ;;
esac
triple="$arch-unknown-linux-gnu"
glibc_floor=2.17
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || { echo "dist.sh: no version in Cargo.toml" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The directory cargo builds into, as the build itself resolves it (CARGO_TARGET_DIR, CARGO_BUILD_TARGET_DIR,
# build.target-dir of a .cargo/config.toml, else target/): CI set-ups often move it.
target_dir=$(cargo metadata --format-version 1 --no-deps --offline 2>/dev/null |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null) || target_dir=
[ -n "$target_dir" ] || target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$target_dir"
target_dir=$(cd "$target_dir" && pwd)
start=$(date +%s)
step() { echo "dist.sh: [$(( $(date +%s) - start ))s] $*" >&2; }

# --- tools --------------------------------------------------------------------------------------------------
pins=(ziglang==0.17.1 cargo-zigbuild==0.24.1 maturin==1.16.0)
have_tools() {
  command -v cargo-zigbuild >/dev/null && command -v maturin >/dev/null &&
    { command -v zig >/dev/null || python3 -m ziglang version >/dev/null 2>&1; }
}
if [ "${CUDADIAG_DIST_TOOLS:-}" = venv ] || ! have_tools; then
  tools="$target_dir/dist-tools"
  if [ ! -x "$tools/bin/maturin" ]; then
    step "installing ${pins[*]} into $tools"
    python3 -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
  fi
  export PATH="$tools/bin:$PATH"
fi
step "cargo-zigbuild $(cargo-zigbuild --version | awk '{print $2}'), $(maturin --version), zig $(zig version 2>/dev/null || python3 -m ziglang version)"

# The highest GLIBC_x.y symbol version an ELF file needs ("2.17"), from its dynamic symbol table.
glibc_needed() {
  { objdump -T "$1" 2>/dev/null || readelf -W --dyn-syms "$1"; } |
    grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -u -V | tail -n 1
}
check_floor() {
  local need
  need=$(glibc_needed "$1")
  if [ "$(printf '%s\n%s\n' "$need" "$glibc_floor" | sort -V | tail -n 1)" != "$glibc_floor" ]; then
    echo "dist.sh: $1 needs GLIBC_$need, newer than the promised $glibc_floor" >&2
    exit 1
  fi
  step "$2 needs GLIBC_$need at most (floor $glibc_floor)"
}
# The functions of build/hot-text.ld (build.rs passes it to the linker) placed first: a `.text.hot` section of
# about the code the recorded commands ran (3.3 MB). Its patterns name the crate's functions in the v0 mangling
# (.cargo/config.toml); a RUSTFLAGS in the environment replaces that, and the binary, laid out with only
# std's and the C libraries' functions first, would peak higher (1 MiB in `inspect`: BENCHMARKS.md, stop 52).
hot_text_bytes() {
  local hex
  if command -v readelf >/dev/null; then
    hex=$(readelf -SW "$1" | sed -n 's/^.*\] *\.text\.hot  *[A-Z]*  *[0-9a-f]*  *[0-9a-f]*  *\([0-9a-f]*\) .*/\1/p')
  else
    hex=$(objdump -h "$1" | awk '$2 == ".text.hot" { print $3 }')
  fi
  echo $((16#${hex:-0}))
}
check_hot_text() {
  [ -f build/hot-text.ld ] || return 0
  local bytes
  bytes=$(hot_text_bytes "$1")
  if [ "$bytes" -lt 1000000 ]; then
    echo "dist.sh: $1 has $bytes bytes of hot text (build/hot-text.ld), not the ~3 MB its patterns name: was the" \
      "crate built without -C symbol-mangling-version=v0 (a RUSTFLAGS that replaced .cargo/config.toml's)?" >&2
    exit 1
  fi
  step "$2 links $bytes bytes of hot text first (build/hot-text.ld)"
}

# --- the binary and the tarball -----------------------------------------------------------------------------
# The `dist` profile (Cargo.toml): one code-generation unit with whole-program optimisation.
step "cargo zigbuild --profile dist --locked --target $triple.$glibc_floor"
cargo zigbuild --profile dist --locked --target "$triple.$glibc_floor"
bin="$target_dir/$triple/dist/cudadiag"
check_floor "$bin" "the binary"
check_hot_text "$bin" "the binary"

name="cudadiag-$version-$triple"
stage="$target_dir/dist-stage/$name"
rm -rf "$stage"
mkdir -p "$stage/completions" "$stage/man/man1"
cp "$bin" README.md LICENSE "$stage/"
# Completions and manual pages come from the clap definition; a binary of another architecture cannot run
# here, so a host build of the same source writes them then.
if "$bin" --version >/dev/null 2>&1; then gen=("$bin"); else gen=(cargo run --locked --quiet --); fi
"${gen[@]}" completions bash >"$stage/completions/cudadiag.bash"
"${gen[@]}" completions zsh >"$stage/completions/_cudadiag"
"${gen[@]}" completions fish >"$stage/completions/cudadiag.fish"
"${gen[@]}" completions elvish >"$stage/completions/cudadiag.elv"
"${gen[@]}" completions powershell >"$stage/completions/_cudadiag.ps1"
"${gen[@]}" __man --dir "$stage/man/man1"

# Reproducible: sorted names, no owners, every mtime the last commit's, gzip without a timestamp.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
tarball="$out/$name.tar.gz"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
  -C "$target_dir/dist-stage" -cf - "$name" | gzip -9 -n >"$tarball"
(cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
step "wrote $tarball ($(stat -c %s "$tarball") bytes)"

# --- the wheel ----------------------------------------------------------------------------------------------
if [ "$wheel" = 1 ]; then
  # Its own target directory: maturin's zig linker wrapper differs from cargo-zigbuild's, and sharing one
  # would make each rebuild everything the other built.
  step "maturin build --zig --compatibility manylinux_2_17 --target $triple"
  wheels="$target_dir/dist-wheel"
  rm -rf "$wheels"
  # The profile is pyproject.toml's (`dist`), as for a build from the source distribution.
  maturin build --locked --zig --target "$triple" --compatibility manylinux_2_17 \
    --target-dir "$target_dir/dist-maturin" --out "$wheels"
  built=$(ls "$wheels"/cudadiag-"$version"-*.whl)
  # The canonical file name lists the PEP 600 tag first (as PyPI and auditwheel write it); the tags inside
  # the wheel (WHEEL) are the same either way.
  whl="cudadiag-$version-py3-none-manylinux_2_17_$arch.manylinux2014_$arch.whl"
  cp "$built" "$out/$whl"
  (cd "$out" && sha256sum "$whl" >"$whl.sha256")
  python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
[n] = [n for n in z.namelist() if n.endswith(".data/scripts/cudadiag")]
open(sys.argv[2], "wb").write(z.read(n))' "$out/$whl" "$wheels/cudadiag"
  check_floor "$wheels/cudadiag" "the wheel's binary"
  check_hot_text "$wheels/cudadiag" "the wheel's binary"
  step "wrote $out/$whl ($(stat -c %s "$out/$whl") bytes)"
fi
step "done in $(( $(date +%s) - start ))s"
