#!/usr/bin/env bash
# The d2l ResNet-18 matrix's smoke trials (experiments/d2l_resnet18_fmnist.toml, steps_per_epoch = 1): dtnn on
# 1 and 2 ranks and the PyTorch reference each train one step of d2l's recipe on real Fashion-MNIST and are
# stored ok, with the zoo model's 11,175,818 parameters (the PyTorch build checks its own count against
# it), the 2-rank run at the chapter's two-device rate (0.1 x 2) on 2 ranks; and `dtnn check` judges none
# of them (one step is not the target's 10-epoch recipe), while the target itself is loaded.
#   test_d2l_smoke.sh DTNN_BINARY SOURCE_DIR WORK_DIR
# Exit 77 (skipped, with the reason) without Debian's dataset-fashion-mnist.
set -euo pipefail
dtnn="$1"
src="$2"
work="$3"
data=/usr/share/datasets/fashion-mnist
[ -e "$data/train-images-idx3-ubyte.gz" ] || { echo "SKIPPED: $data is missing (apt-get install dataset-fashion-mnist)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "test_d2l_smoke: FAIL: $*" >&2
  exit 1
}
q() { "$dtnn" query "$1" --db "$work/d.db" --format csv | tail -n +2; }

"$dtnn" run "$src/experiments/d2l_resnet18_fmnist.toml" --db "$work/d.db" --only steps_per_epoch=1 > "$work/run.out" 2>&1 ||
  { cat "$work/run.out"; fail "the smoke trials"; }
got="$(q "SELECT framework, ranks, status, json_extract(report, '$.model.params'), json_extract(report, '$.parallel.ranks') FROM runs ORDER BY id")"
want="dtnn,1,ok,11175818,1
dtnn,2,ok,11175818,2
pytorch,1,ok,11175818,1"
[ "$got" = "$want" ] || fail "stored runs: got
$got
want
$want"
lr="$(q "SELECT json_extract(report, '$.epochs[0].lr') FROM runs WHERE ranks = 2")"
awk -v lr="$lr" 'BEGIN { exit !(lr > 0.1999 && lr < 0.2001) }' || fail "the 2-rank run's rate is $lr, not 0.2"
"$dtnn" check --db "$work/d.db" > "$work/check.out" 2>&1 || { cat "$work/check.out"; fail "dtnn check"; }
grep -q "^0 pass, 0 fail, 3 without a target" "$work/check.out" || { cat "$work/check.out"; fail "a smoke trial was judged"; }
grep -q "epochs capped at 1 steps, target's are whole" "$work/check.out" || fail "the capped steps are not why"
[ "$(q "SELECT count(*) FROM targets WHERE model = 'resnet18_d2l'")" -ge 1 ] || fail "no resnet18_d2l target stored"
echo "d2l smoke: 3 trials ok, none judged"
