#!/usr/bin/env bash
# The PyTorch reference's parser is built from dtnn's option table: its options are exactly the rows flagged
# "torch", with the table's defaults, and the runner passes it nothing else (experiments/runner.cpp).
# An epoch capped past the data has the same length in both.
#   test_torch_options.sh SOURCE_DIR DTNN_BINARY
# Exit 77 (ctest: skipped, with the reason) without Debian's python3-torch.
set -euo pipefail
src="$1"
export DTNN_BINARY="$2"
py=/usr/bin/python3
if ! "$py" -c "import torch" > /dev/null 2>&1; then
  echo "SKIPPED: $py cannot import torch (Debian's python3-torch is not installed)"
  exit 77
fi
"$py" - "$src/analysis/reference/torch_train.py" <<'PY'
import importlib.util, json, os, subprocess, sys
spec = importlib.util.spec_from_file_location("torch_train", sys.argv[1])
tt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tt)
table = json.loads(subprocess.run([os.environ["DTNN_BINARY"], "train", "--list-options", "--format", "json"],
                                  check=True, capture_output=True, text=True).stdout)
torch_rows = [r for r in table["options"] if "torch" in r["flags"]]
args = tt.parse_args(["--use_synthetic_data=True"])
names = set(vars(args))
want = {r["name"] for r in torch_rows}
assert names == want, f"parser {sorted(names ^ want)} differ from the table's torch rows"
for r in torch_rows:
    if r["name"] in ("use_synthetic_data", "threads", "tensor_format", "dataset_test_path") or r["default"] == "":
        continue  # given above, or resolved by parse_args (0 threads: cores; AUTO: the device's format)
    assert str(getattr(args, r["name"])) == str(tt.option_type(r)(r["default"])), r["name"]
print(f"torch reference: {len(want)} options, all from the table")
PY
# --steps_per_epoch past the data: both train that many full batches, wrapping over the shuffled order (the
# reference stopped at one pass: its epochs were shorter than dtnn's for the same options).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
opts=(--model=simplemlp "--dataset_train_path=$src/experiments/datasets/mnist-10k" --batch_size=1000
      --steps_per_epoch=10 --num_epochs=1 --evaluate_on_test=False --threads=1)
"$py" "$src/analysis/reference/torch_train.py" "${opts[@]}" "--report=$work/torch.json" > /dev/null
"$DTNN_BINARY" train "${opts[@]}" --progress=False "--report=$work/dtnn.json" > /dev/null
"$py" - "$work/torch.json" "$work/dtnn.json" <<'PY'
import json, sys
t, d = (json.load(open(p))["training"]["samples"] for p in sys.argv[1:])
assert t == d == 10000, f"samples in an epoch of 10 batches of 1000 over 8000: reference {t}, dtnn {d}"
print("torch reference: --steps_per_epoch wraps over the data as dtnn does (10000 samples of 8000)")
PY
