#!/usr/bin/env bash
# A clone as a new user makes it: into an empty temporary directory with no ../shared beside it, the
# quickstart matrix run from another working directory (its relative data paths resolve against the matrix
# file), first as a dry run, then one short trial stored in a fresh database.
#   test_fresh_clone.sh SOURCE_DIR DTNN_BINARY
# Exit 77 (ctest: skipped, with the reason) when SOURCE_DIR is not a git checkout to clone.
set -euo pipefail
src="$1"
dtnn="$2"
if ! git -C "$src" rev-parse --git-dir > /dev/null 2>&1; then
  echo "SKIPPED: $src is not a git checkout (nothing to clone)"
  exit 77
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git clone -q "$src" "$tmp/clone"
[ ! -e "$tmp/shared" ] || { echo "FAIL: $tmp/shared exists"; exit 1; }
matrix="$tmp/clone/experiments/quickstart.toml"
cd /  # neither the clone nor the source tree: paths must not depend on the caller's directory

"$dtnn" run "$matrix" --dry-run --db "$tmp/dry.db" > "$tmp/dry.txt"
grep -q "dataset_train_path=$tmp/clone/experiments/datasets/mnist-10k " "$tmp/dry.txt" ||
  { echo "FAIL: the dry run does not read the clone's datasets/mnist-10k:"; cat "$tmp/dry.txt"; exit 1; }
if grep -q "shared" "$tmp/dry.txt"; then
  echo "FAIL: the dry run names a path outside the clone:"; grep "shared" "$tmp/dry.txt"; exit 1
fi

"$dtnn" run "$matrix" --db "$tmp/q.db" --only model=simplemlp --only dataset_train_path=datasets/mnist-10k \
  --only ranks=1 --only framework=dtnn > "$tmp/run.txt" 2>&1 || { echo "FAIL: the trial failed:"; cat "$tmp/run.txt"; exit 1; }
ok="$("$dtnn" query "SELECT count(*) FROM runs WHERE status = 'ok' AND dataset = 'mnist-10k'" --db "$tmp/q.db" --format csv | tail -1)"
[ "$ok" = "1" ] || { echo "FAIL: expected 1 ok run on mnist-10k, got '$ok'"; cat "$tmp/run.txt"; exit 1; }
echo "fresh clone: dry run and one trial ok from $tmp/clone (no ../shared)"
