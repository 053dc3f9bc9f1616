#!/usr/bin/env bash
# dtnn vs PyTorch (Debian's python3-torch), side by side in one run: the same model, data and recipe
# (Adam, lr 0.001, batch 64, 1 thread), then dtnn on 2 MPI ranks x 1 thread. Prints per-epoch
# samples/s (median and spread), test accuracy, and the ratios dtnn/PyTorch and 2-rank/1-rank.
#
#   experiments/throughput_vs_pytorch.sh [EPOCHS] [MODEL] [DATA_DIR]
#   defaults: 5 epochs, simplecnn, /usr/share/datasets/fashion-mnist
# Run it alone: the machine has 2 cores and any other load distorts the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
epochs="${1:-5}"
model="${2:-simplecnn}"
data="${3:-/usr/share/datasets/fashion-mnist}"
dtnn="${DTNN_BUILD_DIR:-build}/experiments/dtnn"
out="$(mktemp -d)"
mpi_flags=(--oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi_flags+=(--allow-run-as-root)
recipe=(--model="$model" --dataset=mnist --dataset_train_path="$data" --optimizer=adam --learning_rate=0.001
        --batch_size=64 --num_epochs="$epochs" --threads=1 --seed=0)

echo "== dtnn, 1 rank x 1 thread"
"$dtnn" train "${recipe[@]}" --progress=false --report="$out/dtnn1.json" | grep -E "^Epoch|^Testing:"
echo "== PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), 1 thread"
/usr/bin/python3 experiments/reference/torch_train.py "${recipe[@]}" --report="$out/torch.json" | grep -E "^Epoch|^Test"
echo "== dtnn, 2 ranks x 1 thread (--parallel=data, global batch 128)"
OMP_NUM_THREADS=1 mpirun -np 2 "${mpi_flags[@]}" "$dtnn" train "${recipe[@]}" --parallel=data --progress=false \
  --report="$out/dtnn2.json" | grep -E "^Epoch|^Testing:"

/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
d = sys.argv[1]
def load(name):
    r = json.load(open(f"{d}/{name}.json"))
    rates = [e["samples_per_s"] for e in r["epochs"]]
    return r, rates
print()
print(f"{'run':<24}{'median samples/s':>18}{'min':>10}{'max':>10}{'test acc %':>12}")
rows = {}
for name, label in [("dtnn1", "dtnn 1 rank x 1 thread"), ("torch", "PyTorch 1 thread"), ("dtnn2", "dtnn 2 ranks x 1 thread")]:
    r, rates = load(name)
    rows[name] = statistics.median(rates)
    acc = r.get("test", {}).get("categorical_accuracy", float("nan"))
    print(f"{label:<24}{rows[name]:>18.0f}{min(rates):>10.0f}{max(rates):>10.0f}{acc:>12.2f}")
print()
print(f"dtnn / PyTorch (1 thread):     {rows['dtnn1'] / rows['torch']:.2f}x")
print(f"dtnn 2 ranks / 1 rank:         {rows['dtnn2'] / rows['dtnn1']:.2f}x")
PY
rm -rf "$out"
