#!/usr/bin/env bash
# Set-up (ci/setup.sh), then the main job: the quickstart experiment matrix (experiments/quickstart.toml:
# simplecnn and simplemlp on Fashion-MNIST and the MNIST subset, both CPU convolution algorithms, 1 and 2
# ranks, dtnn and the PyTorch reference) into the results store, then the comparison with PyTorch, the
# accuracy-target and performance-reference check, and the report (report.md with PNGs, report.html, paper/).
#   DTNN_DB  results database (default: results/dtnn.db; it keeps every earlier run)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
dtnn="${DTNN_BUILD_DIR:-build}/experiments/dtnn"
db="${DTNN_DB:-results/dtnn.db}"
# Every step runs and prints what it has, whatever an earlier one returned; the exit status says at the
# end whether any run or any target failed.
run_rc=0
"$dtnn" run experiments/quickstart.toml --db "$db" || run_rc=$?
echo
echo "== dtnn vs PyTorch (same model, data and recipe; samples/s and test accuracy %) =="
"$dtnn" query vs_pytorch --db "$db" || true
echo
echo "== Scaling (speed-up over 1 rank) =="
"$dtnn" query "SELECT framework, model, dataset, conv_algo, ranks, mean_samples_per_s, speedup, efficiency FROM v_scaling WHERE ranks > 1 AND environment_id = (SELECT max(environment_id) FROM runs)" --db "$db" || true
echo
echo "== Accuracy against the targets (analysis/targets.toml), throughput against this machine's references (analysis/references.toml) =="
check_rc=0
"$dtnn" check --db "$db" --select matrix=quickstart || check_rc=$?
report_rc=0
"$dtnn" report --db "$db" --matrix quickstart --out results/report || report_rc=$?
echo "Results database: $db (dtnn query --db $db, dtnn query lists the views)"
status=0
if [ "$run_rc" -ne 0 ]; then
  echo "quickstart: FAILED: some runs did not finish ok (dtnn run exited $run_rc; dtnn query runs --db $db says which and why)"
  status=1
fi
if [ "$check_rc" -eq 1 ]; then
  echo "quickstart: FAILED: accuracy targets or performance references not met (dtnn check exited 1)"
  status=1
elif [ "$check_rc" -ne 0 ]; then
  echo "quickstart: FAILED: the accuracy check could not judge the runs (dtnn check exited $check_rc)"
  status=1
fi
if [ "$report_rc" -ne 0 ]; then
  echo "quickstart: FAILED: the report could not be written (dtnn report exited $report_rc)"
  status=1
fi
[ "$status" -eq 0 ] && echo "quickstart: every run ok, every target met"
exit "$status"
