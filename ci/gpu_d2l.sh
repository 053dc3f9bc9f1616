#!/usr/bin/env bash
# d2l's ResNet-18 study on the lent GPU machine, from a bundle made by `BUNDLE_MPI=ON ci/gpu_bundle.sh`:
#   1. d2l's ResNet-18 on Fashion-MNIST, the matrix's GPU trials (experiments/d2l_resnet18_fmnist.toml
#      --only device=gpu): dtnn on one GPU, the full 10 epochs, and PyTorch on the GPU ($DTNN_PYTHON, default
#      python3, with CUDA PyTorch); the 2-GPU NCCL trial needs two GPUs and is stored unsupported on one.
#   2. Uneven devices: one GPU rank beside CPU_RANKS CPU ranks (CPU_THREADS threads each), mpirun's MPMD form,
#      every rank in NCHW (the GPU's layout; dtnn refuses ranks whose layouts differ), global batch 512:
#      the GPU alone, then even and auto shares (--rank_batch_shares), epoch 2's samples/s and the split.
#
#   ci/gpu_d2l.sh BUNDLE_DIR OUT_DIR [matrix|uneven|all]   (default all)
# One device call runs at most 600 s: the matrix part alone may need most of that (MATRIX_TIMEOUT, 480 s; a
# trial cut off is stored interrupted), so give each part its own call. MATRIX_ONLY adds --only filters,
# e.g. "framework=dtnn" and "framework=pytorch" in two calls.
# The Fashion-MNIST files: DATA_DIR/fashion-mnist (carried; copied to Debian's /usr/share/datasets path the
# matrix names). A dry run on a CPU machine: GPU_FLAG=--enable_gpu=False EPOCHS=1 STEPS=4 (tests the script).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bundle="${1:?usage: ci/gpu_d2l.sh BUNDLE_DIR OUT_DIR}"
out="${2:?usage: ci/gpu_d2l.sh BUNDLE_DIR OUT_DIR}"
part="${3:-all}"
case "$part" in matrix | uneven | all) ;; *) echo "ci/gpu_d2l.sh: part must be matrix, uneven or all, got '$part'" >&2; exit 2 ;; esac
only=()
for f in ${MATRIX_ONLY:-}; do only+=(--only "$f"); done
mkdir -p "$out"
work="$(mktemp -d)"
dtnn="$bundle/experiments/dtnn"
# shellcheck source=ci/gpu_env.sh
[ -f "$(dirname "$0")/gpu_env.sh" ] && source "$(dirname "$0")/gpu_env.sh"
if [ -d "${DATA_DIR:-.gpu_data}/fashion-mnist" ]; then
  mkdir -p /usr/share/datasets && cp -r "${DATA_DIR:-.gpu_data}/fashion-mnist" /usr/share/datasets/
fi

[ "$part" = uneven ] || {
  echo "== d2l ResNet-18 on Fashion-MNIST: the matrix's GPU trials ${MATRIX_ONLY:-}"
  if [ -z "${GPU_FLAG:-}" ]; then
    DTNN_PYTHON="${DTNN_PYTHON:-python3}" timeout "${MATRIX_TIMEOUT:-480}" "$dtnn" run experiments/d2l_resnet18_fmnist.toml \
      --db "$work/d2l.db" --dtnn "$dtnn" --only device=gpu "${only[@]}" 2>&1 | tail -6
    echo "dtnn run: rc ${PIPESTATUS[0]} (124: the matrix outran MATRIX_TIMEOUT)"
    "$dtnn" query "SELECT id, label, status, substr(error, 1, 100) AS error FROM runs ORDER BY id" --db "$work/d2l.db"
    "$dtnn" query "SELECT r.label, e.epoch, printf('%.1f', e.time_s) AS s, printf('%.2f', e.val_accuracy) AS val_acc
                   FROM runs r JOIN epochs e ON e.run_id = r.id ORDER BY r.id, e.epoch" --db "$work/d2l.db" 2>&1 | head -40
    "$dtnn" check --db "$work/d2l.db" 2>&1 | tail -6
  else
    echo "(dry run: the matrix's GPU trials are skipped)"
  fi
} 2>&1 | tee "$out/d2l_gpu.txt"

common=(--model=resnet18_d2l --dataset=mnist --dataset_train_path=/usr/share/datasets/fashion-mnist --optimizer=sgd
        --learning_rate=0.1 --momentum=0 --learning_rate_scaling=False --global_batch_size=512 --tensor_format=NCHW
        --num_epochs="${EPOCHS:-2}" --steps_per_epoch="${STEPS:-30}" --evaluate_on_test=False --progress=False)
cpu_ranks="${CPU_RANKS:-2}"
cpu_threads="${CPU_THREADS:-7}"
[ "$part" = matrix ] || {
  echo "== uneven devices: 1 GPU rank + $cpu_ranks CPU ranks x $cpu_threads threads, global batch 512, epoch 2 samples/s"
  timeout 300 "$dtnn" train "${common[@]}" "${GPU_FLAG:---enable_gpu=True}" --report="$work/gpu_alone.json" \
    > "$work/gpu_alone.txt" 2>&1
  echo "GPU alone: rc $? $(grep 'Training throughput' "$work/gpu_alone.txt")"
  for shares in "" auto; do
    timeout 300 mpirun --oversubscribe -np 1 "$dtnn" train "${common[@]}" --parallel=data "${GPU_FLAG:---enable_gpu=True}" \
      --rank_batch_shares="$shares" --report="$work/mixed_${shares:-even}.json" \
      : -np "$cpu_ranks" "$dtnn" train "${common[@]}" --parallel=data --threads="$cpu_threads" \
      --rank_batch_shares="$shares" > "$work/mixed_${shares:-even}.txt" 2>&1
    echo "shares '${shares:-even}': rc $? $(grep -E 'Training throughput|Rank batch shares' "$work/mixed_${shares:-even}.txt" | tr '\n' ' ')"
  done
  python3 - "$work" <<'PY'
import json, os, sys
for name in ("gpu_alone", "mixed_even", "mixed_auto"):
    path = os.path.join(sys.argv[1], name + ".json")
    if not os.path.exists(path):
        print(f"{name}: no report"); continue
    r = json.load(open(path))
    e = r["epochs"][-1]
    c = e.get("communication", {})
    print(f"{name}: epoch {e['epoch']} {e['samples_per_s']:.0f} samples/s, split {r['parallel']['rank_batch_shares']['split']}, "
          f"exposed max {1000 * c.get('max', {}).get('exposed_s', 0) / max(c.get('steps', 1), 1):.0f} ms/step")
PY
} 2>&1 | tee "$out/d2l_uneven.txt"
tar czf "$out/d2l.tgz" -C "$work" .
exit 0
