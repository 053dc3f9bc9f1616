#!/usr/bin/env bash
# ci/perf-history.sh end to end over two "commits": two stand-in builds that report commits aaaa... and bbbb...
# on --version (the runner stores the commit the binary names) and run this build's dtnn, the second with the
# reference convolution forced (about 10x slower on simplecnn). After the first commit's runs the history has no
# step (exit 0); after the second's it names bbbb... as a regression and exits 1, with JUnit XML checked by
# junit_check.py. The fake commits are in no repository, so the history orders them by time.
#   tests/experiments/test_perf_history.sh DTNN_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
dtnn="$1"
src="$2"
work="$3"
rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "test_perf_history: FAIL: $*" >&2
  exit 1
}
a=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
b=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
stand_in() {  # NAME COMMIT EXTRA_TRAIN_ARGS
  cat > "$work/$1" <<WRAP
#!/usr/bin/env bash
if [ "\${1:-}" = --version ]; then echo "dtnn 0.1.0 (commit $2; stand-in build)"; exit 0; fi
if [ "\${1:-}" = train ]; then shift; exec '$dtnn' train $3 "\$@"; fi
exec '$dtnn' "\$@"
WRAP
  chmod +x "$work/$1"
}
stand_in build-a "$a" ""
stand_in build-b "$b" "--conv_algo=reference"
cat > "$work/m.toml" <<'TOML'
name = "perf_history_test"
repeats = 1
timeout_s = 120
[base]
use_synthetic_data = true
dataset = "mnist"
optimizer = "adam"
learning_rate = 0.001
batch_size = 64
num_epochs = 2
steps_per_epoch = 8
threads = 1
seed = 0
evaluate_on_test = false   # throughput only: no 10,000-sample test pass per run
[axes]
model = ["simplecnn"]
TOML
# 3 rounds, 8 steps: with 2 rounds of 4 steps, one epoch stalled by CI's load (1,891 samples/s beside 6,260)
# made the noise from neighbouring runs as large as the planted 8x step, and no step was found. With 3 runs a
# commit one stray run moves the median neighbour difference no more.
history() {  # BUILD
  ROUNDS=3 MATRIX="$work/m.toml" DTNN_BIN="$work/$1" DTNN_HARNESS_BIN="$dtnn" JUNIT="$work/h.xml" \
    MARKDOWN="$work/h.md" bash "$src/ci/perf-history.sh" "$work/history.db"
}
rc=0
history build-a > "$work/a.txt" 2>&1 || rc=$?
cat "$work/a.txt"
[ "$rc" -eq 0 ] || fail "exit $rc after one commit, expected 0"
grep -q "0 whose newest segment regressed" "$work/a.txt" || fail "one commit: the summary line is missing"
rc=0
history build-b > "$work/b.txt" 2>&1 || rc=$?
cat "$work/b.txt"
[ "$rc" -eq 1 ] || fail "exit $rc after a planted slowdown at the second commit, expected 1"
grep -qE "^  bbbbbbbbbbbb +3 .*<- regression" "$work/b.txt" || fail "the step is not named at commit bbbb..."
grep -q "commit order: time" "$work/b.txt" || fail "fake commits should be ordered by time"
/usr/bin/python3 "$src/tests/analysis/junit_check.py" "$work/h.xml" --tests 1 --failures 1 --skipped 0 ||
  fail "the JUnit XML does not hold one failed series"
grep -q "1 of 1 series regressed" "$work/h.md" || fail "the Markdown summary lacks the verdict"
# A build of a tree with uncommitted changes is refused before its rounds (history would leave its runs out
# and write nothing): exit 2, no run added.
stand_in build-dirty "cccccccccccccccccccccccccccccccccccccccc+dirty" ""
before="$("$dtnn" query "SELECT count(*) FROM runs" --db "$work/history.db" --format csv | tail -n 1)"
rc=0
history build-dirty > "$work/d.txt" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "uncommitted changes" "$work/d.txt" || { cat "$work/d.txt"; fail "a dirty build: exit $rc"; }
after="$("$dtnn" query "SELECT count(*) FROM runs" --db "$work/history.db" --format csv | tail -n 1)"
[ "$before" = "$after" ] || fail "a dirty build's runs were added ($before, then $after)"
echo "test_perf_history: ok"
