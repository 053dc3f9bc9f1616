#!/usr/bin/env bash
# ci/perf-regression.sh end to end on a planted regression: the baseline is this build's dtnn, the candidate
# the same build behind a wrapper that forces the reference convolution (about 10x slower on simplecnn). The
# script alternates the two for 4 rounds (4 runs a side: the fewest for which the U test can reach p < 0.05),
# compares them, and must exit 1 naming the regression, with JUnit XML (checked by junit_check.py) and
# Markdown written; compared again with a 99 % threshold, the same runs must give exit 0.
# With --build-baseline the baseline is instead built by the script from a worktree of HEAD (a second build of
# the project, minutes: the slow-labelled variant), so the build path is covered too.
#   tests/experiments/test_perf_regression.sh DTNN_BINARY SOURCE_DIR WORK_DIR [--build-baseline]
set -euo pipefail
dtnn="$1"
src="$2"
work="$3"
build_baseline="${4:-}"
rm -rf "$work"
mkdir -p "$work"

fail() {
  echo "test_perf_regression: FAIL: $*" >&2
  exit 1
}

cat > "$work/slow-dtnn" <<WRAP
#!/usr/bin/env bash
# dtnn with the reference convolution forced on every training run: a planted regression.
if [ "\${1:-}" = train ]; then shift; exec '$dtnn' train --conv_algo=reference "\$@"; fi
exec '$dtnn' "\$@"
WRAP
chmod +x "$work/slow-dtnn"

cat > "$work/planted.toml" <<'TOML'
name = "perf_planted"
description = "simplecnn, 2 short epochs (the first is warm-up): the planted-regression test of ci/perf-regression.sh"
repeats = 1
timeout_s = 120
[base]
use_synthetic_data = true
dataset = "mnist"
optimizer = "adam"
learning_rate = 0.001
batch_size = 64
num_epochs = 2
steps_per_epoch = 4
threads = 1
seed = 0
evaluate_on_test = false   # throughput only: no 10,000-sample test pass per run
[axes]
model = ["simplecnn"]
TOML

run() {
  if [ "$build_baseline" = --build-baseline ]; then
    ROUNDS=4 MATRIX="$work/planted.toml" DTNN_PERF_DIR="$work/perf" DTNN_CANDIDATE_BIN="$work/slow-dtnn" \
      bash "$src/ci/perf-regression.sh" HEAD
  else
    ROUNDS=4 MATRIX="$work/planted.toml" DTNN_PERF_DIR="$work/perf" DTNN_BASELINE_BIN="$dtnn" \
      DTNN_CANDIDATE_BIN="$work/slow-dtnn" bash "$src/ci/perf-regression.sh"
  fi
}

rc=0
# (Checked here, not inside run: its output goes to out.txt, and ctest would show the skip without its reason.)
if [ "$build_baseline" = --build-baseline ] && ! git -C "$src" rev-parse --verify HEAD > /dev/null 2>&1; then
  echo "SKIPPED: $src is not a git checkout"
  exit 77
fi
JUNIT="$work/perf.xml" MARKDOWN="$work/perf.md" run > "$work/out.txt" 2>&1 || rc=$?
cat "$work/out.txt"
[ "$rc" -eq 1 ] || fail "exit $rc on a planted 10x slowdown, expected 1"
grep -q "round 4/4" "$work/out.txt" || fail "the script did not alternate 4 rounds"
grep -qE "^model=simplecnn .* regression$" "$work/out.txt" || fail "simplecnn is not reported as a regression"
grep -q "1 regression(s)" "$work/out.txt" || fail "the summary does not count 1 regression"
/usr/bin/python3 "$src/tests/analysis/junit_check.py" "$work/perf.xml" --tests 1 --failures 1 --skipped 0 ||
  fail "the JUnit XML does not hold one failed case"
grep -q "## dtnn compare: 1 regression(s)" "$work/perf.md" || fail "the Markdown summary lacks the verdict"
db="$(ls "$work"/perf/perf-*.db | head -1)"
[ "$("$dtnn" query "SELECT count(*) FROM runs WHERE status = 'ok'" --db "$db" --format csv | tail -1)" = 8 ] ||
  fail "expected 8 ok runs (4 rounds x 2 sides) in $db"

# The same database with a 99 % threshold: no regression, exit 0 (the script's exit is compare's).
rc=0
"$dtnn" compare --db "$db" --baseline tag=baseline --candidate tag=candidate --threshold 99% > "$work/out2.txt" 2>&1 ||
  rc=$?
[ "$rc" -eq 0 ] || { cat "$work/out2.txt"; fail "exit $rc with a 99 % threshold, expected 0"; }
echo "test_perf_regression: ok"
