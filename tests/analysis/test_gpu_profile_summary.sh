#!/usr/bin/env bash
# Checks experiments/gpu_profile_summary.py on excerpts of real Nsight Compute logs of one resnet50 training step
# (tests/analysis/ncu/: 13 dtnn kernels and 10 PyTorch kernels of an H100 run, microseconds):
# the totals and per-category sums it prints, the unit conversion (nanoseconds with a thousands separator),
# and a one-line error with exit 1 for a log without timing rows, an unknown unit or a missing file.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
script="$here/../../experiments/gpu_profile_summary.py"
py="${PYTHON:-/usr/bin/python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "test_gpu_profile_summary: FAIL: $*" >&2; exit 1; }

out="$("$py" "$script" "$here/ncu/dtnn_step.csv" "$here/ncu/pytorch_step.csv" --title fixture)"
grep -qF '| **total** | **2.080** (13) | **1.239** (10) | **+0.842** |' <<<"$out" || fail "totals: $out"
grep -qF '| batch normalization | 0.666 (3) | 0.478 (1) | +0.188 |' <<<"$out" || fail "BN row"
grep -qF '| copies / transposes / reductions | 0.132 (3) | 0.305 (6) | -0.173 |' <<<"$out" || fail "copies row"
grep -qF '### PyTorch: heaviest kernels' <<<"$out" || fail "no PyTorch kernel list"

# Units: 1,500 nanoseconds = 0.0015 ms, 2 milliseconds = 2 ms.
header='"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
{
  echo "$header"
  echo '"0","1","p","h","relu_kernel","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,500"'
  echo '"1","1","p","h","conv_fprop","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","2"'
} > "$work/units.csv"
out="$("$py" "$script" "$work/units.csv" "$work/units.csv")"
grep -qF '| **total** | **2.002** (2) |' <<<"$out" || fail "unit conversion: $out"

# Bad logs: one line on stderr, exit 1.
expect_error() {  # FILE PATTERN
  local rc=0 err
  err="$("$py" "$script" "$1" "$here/ncu/pytorch_step.csv" 2>&1 >/dev/null)" || rc=$?
  [ "$rc" -eq 1 ] || fail "$1: exit $rc, expected 1"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "$1: expected one error line, got: $err"
  grep -q "$2" <<<"$err" || fail "$1: error '$err' lacks '$2'"
}
echo "==PROF== nothing profiled" > "$work/empty.csv"
expect_error "$work/empty.csv" "no gpu__time_duration.sum rows"
sed 's/"nsecond"/"furlong"/' "$work/units.csv" > "$work/unit.csv"
expect_error "$work/unit.csv" "unknown unit 'furlong'"
expect_error "$work/missing.csv" "cannot read"
echo "test_gpu_profile_summary: ok"
