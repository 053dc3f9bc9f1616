#!/usr/bin/env bash
# Two measurements, dtnn against PyTorch (Debian's python3-torch) side by side in one call:
#
#   [CONV_ALGO=best_of] experiments/zoo_vs_pytorch.sh throughput [EPOCHS]
#       resnet20_cifar10 on synthetic CIFAR-shaped data, batch 64, threads 1 then 2: EPOCHS (default 5)
#       epochs of 20 steps each, dtnn and PyTorch alternating; prints the median samples/s, the spread
#       and the ratio dtnn/PyTorch per thread count. dtnn runs with --conv_algo=$CONV_ALGO (default auto;
#       best_of tunes in the first run of each thread count and reads its cache afterwards).
#   [SEEDS="0 1 2"] experiments/zoo_vs_pytorch.sh accuracy [MODELS] [DATA_DIR]
#       2-epoch runs on Fashion-MNIST padded to 32x32x3 (--pad_to_cifar) of each model in MODELS
#       (default "resnet20_cifar10 vgg3dobn"), SGD lr 0.01 momentum 0.9, batch 64, 1 thread each, once per
#       seed in SEEDS (default "0"); dtnn and PyTorch run concurrently (one core each: the accuracy, not the
#       speed, is compared). Prints the mean test accuracy over the seeds (min-max) and the difference of
#       the means: with 2 epochs, one seed's accuracy moves by a point or two between seeds.
# Run it alone: the machine has 2 cores and any other load distorts the throughput figures.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-throughput}"
dtnn="${DTNN_BUILD_DIR:-build}/experiments/dtnn"
torch=(/usr/bin/python3 experiments/reference/torch_train.py)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

if [ "$what" = "throughput" ]; then
  epochs="${2:-5}"
  recipe=(--model=resnet20_cifar10 --dataset=cifar10 --use_synthetic_data=True --optimizer=sgd --learning_rate=0.01
          --batch_size=64 --num_epochs=1 --steps_per_epoch=20 --seed=0)
  for threads in 1 2; do
    for ((e = 1; e <= epochs; e++)); do
      OMP_NUM_THREADS=$threads "$dtnn" train "${recipe[@]}" --threads="$threads" --conv_algo="${CONV_ALGO:-auto}" --progress=false \
        --report="$out/dtnn_t${threads}_$e.json" > /dev/null
      OMP_NUM_THREADS=$threads "${torch[@]}" "${recipe[@]}" --threads="$threads" --report="$out/torch_t${threads}_$e.json" > /dev/null
    done
  done
  /usr/bin/python3 - "$out" "$epochs" "${CONV_ALGO:-auto}" <<'PY'
import json, statistics, sys
d, epochs = sys.argv[1], int(sys.argv[2])
def rates(name, t):
    return [json.load(open(f"{d}/{name}_t{t}_{e}.json"))["epochs"][0]["samples_per_s"] for e in range(1, epochs + 1)]
print(f"resnet20_cifar10, synthetic 32x32x3, batch 64, {epochs} runs x 20 steps (median, min-max samples/s)")
print(f"dtnn --conv_algo={sys.argv[3]}")
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
          --momentum=0.9 --batch_size=64 --num_epochs=2 --threads=1)
  seeds="${SEEDS:-0}"
  for m in $models; do
    for seed in $seeds; do
      OMP_NUM_THREADS=1 "$dtnn" train --model="$m" "${recipe[@]}" --seed="$seed" --progress=false \
        --report="$out/dtnn_${m}_$seed.json" > "$out/dtnn_${m}_$seed.log" &
      OMP_NUM_THREADS=1 "${torch[@]}" --model="$m" "${recipe[@]}" --seed="$seed" --report="$out/torch_${m}_$seed.json" \
        > "$out/torch_${m}_$seed.log" &
      wait
    done
  done
  /usr/bin/python3 - "$out" "$seeds" $models <<'PY'
import json, statistics, sys
d, seeds, models = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
def acc(name, m):
    return [json.load(open(f"{d}/{name}_{m}_{s}.json"))["test"]["categorical_accuracy"] for s in seeds]
print(f"Fashion-MNIST padded to 32x32x3, 2 epochs, sgd lr 0.01 momentum 0.9, batch 64, seeds {' '.join(seeds)}")
print("(test accuracy %: mean over the seeds, min-max)")
print(f"{'model':<20}{'dtnn':>22}{'PyTorch':>22}{'difference':>12}")
for m in models:
    a, b = acc("dtnn", m), acc("torch", m)
    ma, mb = statistics.mean(a), statistics.mean(b)
    print(f"{m:<20}{ma:>8.2f} ({min(a):.2f}-{max(a):.2f}){mb:>8.2f} ({min(b):.2f}-{max(b):.2f}){ma - mb:>+12.2f}")
    print(f"{'':<20}per seed: dtnn {' '.join(f'{v:.2f}' for v in a)}; PyTorch {' '.join(f'{v:.2f}' for v in b)}")
PY
else
  echo "usage: $0 throughput [EPOCHS] | [SEEDS=...] accuracy [MODELS] [DATA_DIR]" >&2
  exit 2
fi
