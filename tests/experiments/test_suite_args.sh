#!/usr/bin/env bash
# The Google Benchmark suites' own flags and counters (suites/suite_args.h):
#  - a bad value is one line on stderr and exit 2 (they aborted with "terminate called", exit 134, some
#    halfway through their JSON);
#  - bench_conv --layout names each case by the layout it times (cases timed NCHW were named, and ingested,
#    as the shapes file's NHWC problem);
#  - bench_layers counts a backward pass's FLOPs as twice the forward's only where the layer computes an input
#    gradient: the model's first layer computes the weight gradient alone (its rate was doubled). FLOP/s times
#    the time per iteration is the FLOP count exactly, whatever the machine's speed; a closing Softmax has no
#    backward case (training fuses it into the loss).
#   tests/experiments/test_suite_args.sh BENCH_CONV BENCH_LAYERS WORK_DIR
set -euo pipefail
conv="$1"
layers="$2"
work="$3"
rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "test_suite_args: FAIL: $*" >&2
  exit 1
}
refused() {  # SUITE_NAME MESSAGE_PART COMMAND...: exit 2, one line "<suite>: ...MESSAGE_PART..."
  local suite="$1" part="$2"
  shift 2
  local rc=0
  "$@" > "$work/out" 2> "$work/err" || rc=$?
  [ "$rc" = 2 ] || fail "$* exited $rc, not 2: $(cat "$work/err")"
  [ "$(wc -l < "$work/err")" = 1 ] && grep -q "^$suite: .*$part" "$work/err" ||
    fail "$*: not one line naming '$part': $(cat "$work/err")"
}
printf 'n4_c8h10w10_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32\n' > "$work/ok.txt"
printf 'n4_c8h10w10_k16\n' > "$work/bad.txt"
refused bench_conv "--threads" "$conv" --threads=abc
refused bench_conv "--threads" "$conv" --threads=0
refused bench_conv "--threads" "$conv" --threads=2x
refused bench_conv "--layout" "$conv" --shapes="$work/ok.txt" --layout=bogus
refused bench_conv "--allow_tf32" "$conv" --allow_tf32=yes
refused bench_conv "$work/bad.txt" "$conv" --shapes="$work/bad.txt"
refused bench_layers "--batch" "$layers" --batch=0
refused bench_layers "--batch" "$layers" --batch=abc
refused bench_layers "--threads" "$layers" --threads=1x
refused bench_layers "bogus" "$layers" --conv_algo=bogus

"$conv" --shapes="$work/ok.txt" --layout=nchw --benchmark_list_tests > "$work/list.txt"
grep -q "_nhwc_" "$work/list.txt" && fail "--layout=nchw: cases still named NHWC: $(head -3 "$work/list.txt")"
grep -q "^cpu.convgemm/fwd/n4_c8h10w10_k16r3s3_st1x1_pd1x1_dl1x1_g1_nchw_f32/threads:1" "$work/list.txt" ||
  fail "--layout=nchw: no NCHW case names: $(head -3 "$work/list.txt")"

# The closing Softmax's backward (fused into the loss in training) is not a case; its forward is.
"$layers" --models=simplecnn --batch=4 --benchmark_list_tests > "$work/layers.txt"
grep -q "^simplecnn/11_Softmax/fwd/" "$work/layers.txt" && ! grep -q "Softmax/bwd" "$work/layers.txt" ||
  fail "simplecnn's cases: $(grep Softmax "$work/layers.txt")"
"$layers" --models=simplecnn --batch=4 --benchmark_filter='simplecnn/(1|3)_Conv2D/' --benchmark_min_time=0.001 \
  --benchmark_format=json > "$work/layers.json"
/usr/bin/python3 - "$work/layers.json" <<'PY' || fail "bench_layers' backward FLOP counts"
import json, sys
flops = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    assert b["time_unit"] == "ms", b["time_unit"]
    flops[b["name"].split("/")[1] + "/" + b["name"].split("/")[2]] = b["FLOP/s"] * b["real_time"] * 1e-3
first, third = flops["1_Conv2D/bwd"] / flops["1_Conv2D/fwd"], flops["3_Conv2D/bwd"] / flops["3_Conv2D/fwd"]
print(f"backward / forward FLOPs: first layer {first:.6f} (weight gradient only), third {third:.6f}")
sys.exit(0 if abs(first - 1) < 1e-6 and abs(third - 2) < 1e-6 else 1)
PY
echo "test_suite_args: ok"
