#!/usr/bin/env bash
# Builds the real PyDTNN (a peer framework of dtnn's experiment matrix: experiments/peers/pydtnn_peer.py).
#   ci/setup_pydtnn.sh SRC [DIR]
# SRC: a PyDTNN checkout (it has setup.py and pydtnn/; it may be read-only), e.g. /work/shared/peers/pydtnn/src.
# DIR: where the buildable copy goes (default: build/pydtnn under the repository root).
# Installs the Debian packages PyDTNN needs (only those missing; sudo when not root), copies SRC to DIR only
# when SRC changed since the last copy (a stamp of SRC's file list, sizes and mtimes), builds PyDTNN's Cython
# modules in place with Debian's /usr/bin/python3, and prints `DTNN_PYDTNN=<DIR>` as its last line: the
# environment variable pydtnn_peer.py reads. Idempotent: a second run installs, copies and builds nothing.
# Exit status: 0 done, 2 bad arguments (one line), else the failing step's status.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

if (($# < 1 || $# > 2)); then
  echo "usage: ci/setup_pydtnn.sh SRC [DIR]" >&2
  exit 2
fi
src="$1"
if [ ! -f "$src/setup.py" ] || [ ! -f "$src/pydtnn/pydtnn_benchmark.py" ]; then
  echo "ci/setup_pydtnn.sh: $src is not a PyDTNN checkout (no setup.py and pydtnn/pydtnn_benchmark.py)" >&2
  exit 2
fi
src="$(cd "$src" && pwd)"
dir="${2:-$repo/build/pydtnn}"
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
if [ -d "$dir" ] && [ ! -f "$dir/.dtnn_src_stamp" ] && [ -n "$(ls -A "$dir")" ]; then
  echo "ci/setup_pydtnn.sh: $dir exists and is not a copy this script made: not overwriting it" >&2
  exit 2
fi
if [ "$dir" = "$src" ]; then
  echo "ci/setup_pydtnn.sh: DIR must differ from SRC ($src)" >&2
  exit 2
fi

# The packages of /work/shared/peers/pydtnn/README.md (Debian 12), python3-dev for the Cython modules' headers.
packages=(
  cython3 python3-dev python3-mpi4py python3-numpy python3-scipy python3-tqdm python3-rich
  python3-prettytable python3-setuptools openmpi-bin libopenblas-dev build-essential
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ci/setup_pydtnn.sh: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get -o DPkg::Lock::Timeout=900 update -q
  $sudo_cmd apt-get -o DPkg::Lock::Timeout=900 install -y -q "${missing[@]}"
fi

# Copy only when SRC changed: the stamp lists every file's path, size and mtime (built files excluded).
stamp="$(cd "$src" && find . \( -name build -o -name '*.so' -o -name '__pycache__' -o -name '*.c' \) -prune -o \
  -type f -printf '%p %s %T@\n' | LC_ALL=C sort | sha256sum | cut -d' ' -f1)"
if [ ! -f "$dir/.dtnn_src_stamp" ] || [ "$(cat "$dir/.dtnn_src_stamp")" != "$src $stamp" ]; then
  echo "ci/setup_pydtnn.sh: copying $src to $dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "incomplete copy" > "$dir/.dtnn_src_stamp"  # an interrupted copy is redone, not refused
  cp -r "$src/." "$dir/"
  chmod -R u+w "$dir"
  echo "$src $stamp" > "$dir/.dtnn_src_stamp"
fi

# Build the Cython modules in place (setup.py puts them in DIR's root); skipped when every module is built.
n_pyx="$(find "$dir/pydtnn" -name '*.pyx' | wc -l)"
n_so="$(find "$dir" -maxdepth 1 -name '*.so' | wc -l)"
if ((n_so < n_pyx)) || [ ! -f "$dir/.dtnn_built" ]; then
  echo "ci/setup_pydtnn.sh: building PyDTNN's Cython modules in $dir"
  (cd "$dir" && /usr/bin/python3 setup.py build_ext --inplace >"$dir/.dtnn_build.log" 2>&1) || {
    tail -n 30 "$dir/.dtnn_build.log" >&2
    echo "ci/setup_pydtnn.sh: the build failed (full log: $dir/.dtnn_build.log)" >&2
    exit 1
  }
  touch "$dir/.dtnn_built"
fi
(cd "$dir" && PYTHONPATH="$dir" /usr/bin/python3 -c 'import pydtnn.pydtnn_benchmark') || {
  echo "ci/setup_pydtnn.sh: the built PyDTNN in $dir does not import" >&2
  exit 1
}
echo "DTNN_PYDTNN=$dir"
