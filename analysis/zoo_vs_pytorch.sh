#!/usr/bin/env bash
# Issue 4's two measurements, dtnn against PyTorch (Debian's python3-torch) side by side in one call:
#
#   analysis/zoo_vs_pytorch.sh throughput [EPOCHS]
#       resnet20_cifar10 on synthetic CIFAR-shaped data, batch 64, threads 1 then 2: EPOCHS (default 5)
#       epochs of 20 steps each, dtnn and PyTorch alternating; prints the median samples/s, the spread
#       and the ratio dtnn/PyTorch per thread count.
#   analysis/zoo_vs_pytorch.sh accuracy [MODELS] [DATA_DIR]
#       2-epoch runs on Fashion-MNIST padded to 32x32x3 (--pad_to_cifar) of each model in MODELS
#       (default "resnet20_cifar10 vgg3dobn"), SGD lr 0.01 momentum 0.9, batch 64, 1 thread each; dtnn
#       and PyTorch run concurrently (one core each: the accuracy, not the speed, is compared). Prints
#       test accuracy and the difference.
# Run it alone: the machine has 2 cores and any other load distorts the throughput figures.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-throughput}"
dtnn="${DTNN_BUILD_DIR:-build}/experiments/dtnn"
torch=(/usr/bin/python3 analysis/reference/torch_train.py)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

if [ "$what" = "throughput" ]; then
  epochs="${2:-5}"
  recipe=(--model=resnet20_cifar10 --dataset=cifar10 --use_synthetic_data=True --optimizer=sgd --learning_rate=0.01
          --batch_size=64 --num_epochs=1 --steps_per_epoch=20 --seed=0)
  for threads in 1 2; do
    for ((e = 1; e <= epochs; e++)); do
      OMP_NUM_THREADS=$threads "$dtnn" train "${recipe[@]}" --threads="$threads" --progress=false \
        --report="$out/dtnn_t${threads}_$e.json" > /dev/null
      OMP_NUM_THREADS=$threads "${torch[@]}" "${recipe[@]}" --threads="$threads" --report="$out/torch_t${threads}_$e.json" > /dev/null
    done
  done
  /usr/bin/python3 - "$out" "$epochs" <<'PY'
import json, statistics, sys
d, epochs = sys.argv[1], int(sys.argv[2])
def rates(name, t):
    return [json.load(open(f"{d}/{name}_t{t}_{e}.json"))["epochs"][0]["samples_per_s"] for e in range(1, epochs + 1)]
print(f"resnet20_cifar10, synthetic 32x32x3, batch 64, {epochs} runs x 20 steps (median, min-max samples/s)")
print(f"{'threads':<9}{'dtnn':>22}{'PyTorch':>22}{'dtnn/PyTorch':>14}")
for t in (1, 2):
    a, b = rates("dtnn", t), rates("torch", t)
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{t:<9}{ma:>8.0f} ({min(a):.0f}-{max(a):.0f}){'':>4}{mb:>8.0f} ({min(b):.0f}-{max(b):.0f}){'':>4}{ma / mb:>10.2f}x")
PY
elif [ "$what" = "accuracy" ]; then
  models="${2:-resnet20_cifar10 vgg3dobn}"
  data="${3:-/usr/share/datasets/fashion-mnist}"
  recipe=(--dataset=mnist --dataset_train_path="$data" --pad_to_cifar=True --optimizer=sgd --learning_rate=0.01
          --momentum=0.9 --batch_size=64 --num_epochs=2 --threads=1 --seed=0)
  for m in $models; do
    OMP_NUM_THREADS=1 "$dtnn" train --model="$m" "${recipe[@]}" --progress=false --report="$out/dtnn_$m.json" \
      > "$out/dtnn_$m.log" &
    OMP_NUM_THREADS=1 "${torch[@]}" --model="$m" "${recipe[@]}" --report="$out/torch_$m.json" > "$out/torch_$m.log" &
    wait
  done
  /usr/bin/python3 - "$out" $models <<'PY'
import json, sys
d, models = sys.argv[1], sys.argv[2:]
print("Fashion-MNIST padded to 32x32x3, 2 epochs, sgd lr 0.01 momentum 0.9, batch 64 (test accuracy %)")
print(f"{'model':<20}{'dtnn':>10}{'PyTorch':>10}{'difference':>12}")
for m in models:
    a = json.load(open(f"{d}/dtnn_{m}.json"))["test"]["categorical_accuracy"]
    b = json.load(open(f"{d}/torch_{m}.json"))["test"]["categorical_accuracy"]
    print(f"{m:<20}{a:>10.2f}{b:>10.2f}{a - b:>+12.2f}")
PY
else
  echo "usage: $0 throughput [EPOCHS] | accuracy [MODELS] [DATA_DIR]" >&2
  exit 2
fi
