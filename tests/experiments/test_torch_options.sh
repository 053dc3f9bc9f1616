#!/usr/bin/env bash
# The PyTorch reference's parser is built from dtnn's option table: its options are exactly the rows flagged
# "torch", with the table's defaults, and the runner passes it nothing else (experiments/runner.cpp).
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
