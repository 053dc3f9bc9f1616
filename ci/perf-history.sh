#!/usr/bin/env bash
# Performance history in CI: appends ROUNDS runs of a throughput matrix, made by this tree's build, to a
# database kept from one CI run to the next (a cache or artifact), then `dtnn history` over every commit stored
# there: the steps (change points) per trial and machine, exit 1 when a newest segment regressed (2 when history
# could not judge, e.g. no run of a clean build).
#   ci/perf-history.sh [DB]        DB: the history database (default results/perf-history.db)
#   ROUNDS=5       runs per trial for this commit (a step needs 2 runs on its new level to be seen)
#   MATRIX=experiments/perf_smoke.toml   THRESHOLD=5%   (a step down by more is a regression)
#   JUNIT=FILE, MARKDOWN=FILE      also write history's JUnit XML / Markdown summary there
#   DTNN_BIN       a prebuilt dtnn for the runs (tests; a CI job that built already): ci/setup.sh is not run
# Runs record the commit compiled into the binary (dtnn --version); runs of a dirty build are stored but left
# out of the history. Commits are ordered by this checkout's git history (parents first), else by time.
set -euo pipefail
# Paths given relative to the caller's directory stay so after the cd to the repository root.
abs() { case "$1" in /*|"") printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
for var in MATRIX JUNIT MARKDOWN DTNN_BIN DTNN_HARNESS_BIN DTNN_BASELINE_BIN DTNN_CANDIDATE_BIN DTNN_PERF_DIR; do
  [ -n "${!var:-}" ] && export "$var=$(abs "${!var}")"
done
db_arg="$(abs "${1:-}")"
cd "$(dirname "$0")/.."
db="${db_arg:-results/perf-history.db}"
rounds="${ROUNDS:-5}"
threshold="${THRESHOLD:-5%}"
matrix="${MATRIX:-experiments/perf_smoke.toml}"

if [ -n "${DTNN_BIN:-}" ]; then
  run_bin="$DTNN_BIN"
  dtnn="${DTNN_HARNESS_BIN:-build/experiments/dtnn}"   # the harness (run, history); trials run DTNN_BIN
else
  bash ci/setup.sh >/dev/null
  dtnn="${DTNN_BUILD_DIR:-build}/experiments/dtnn"
  run_bin="$dtnn"
fi
[ -x "$run_bin" ] || { echo "perf-history: no dtnn binary at $run_bin" >&2; exit 2; }
[ -x "$dtnn" ] || { echo "perf-history: no harness binary at $dtnn (set DTNN_HARNESS_BIN)" >&2; exit 2; }
# dtnn history keeps clean builds only (a dirty build's commit does not say what ran): refuse before the rounds,
# not after them with nothing written.
if "$run_bin" --version 2> /dev/null | grep -q '+dirty'; then
  echo "perf-history: $run_bin was built from a tree with uncommitted changes, whose runs dtnn history leaves out: commit, rebuild, run again" >&2
  exit 2
fi
mkdir -p "$(dirname "$db")"
for round in $(seq "$rounds"); do
  echo "perf-history: round $round/$rounds"
  rc=0
  "$dtnn" run "$matrix" --db "$db" --dtnn "$run_bin" --tag perf-history >/dev/null || rc=$?
  # exit 1: some runs failed, stored so (history reads the ok ones); not the regression this script's 1 means
  if [ "$rc" -eq 1 ]; then echo "perf-history: some runs failed (dtnn query runs)"
  elif [ "$rc" -ne 0 ]; then echo "perf-history: dtnn run exited $rc" >&2; exit 2; fi
done
echo "perf-history: $("$run_bin" --version) into $db"
extra=()
[ -n "${JUNIT:-}" ] && extra+=(--junit "$JUNIT")
[ -n "${MARKDOWN:-}" ] && extra+=(--markdown "$MARKDOWN")
"$dtnn" history --db "$db" --select tag=perf-history --repo . --threshold "$threshold" --fail-on-regression \
  "${extra[@]}"
