#!/usr/bin/env bash
# What OpenBLAS's kernel choice does to each framework on this machine: dtnn, the PyTorch reference and the real
# PyDTNN (when DTNN_PYDTNN names a build) train simplecnn (Fashion-MNIST, 300 steps) and resnet20 (synthetic
# CIFAR-10, 20 steps), batch 64, 1 rank x 1 thread, once with the kernels OpenBLAS picks by itself
# (OPENBLAS_CORETYPE unset, DTNN_BLAS_CORE=keep) and once with the core engine/backend/cpu/blas_core.h picks,
# alternating, ROUNDS times (default 3). Prints one line per run: round, framework, model, core, samples/s
# (each framework's own training throughput). results/baselines/blas_core.md has the figures.
#   experiments/blas_core_ab.sh [BUILD_DIR] > ab.txt
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
dtnn="$build/experiments/dtnn"
py=/usr/bin/python3
data=/usr/share/datasets/fashion-mnist
core_of() { sed -n 's/^BLAS: .* \([A-Za-z0-9]*\) MAX_THREADS.*/\1/p'; }
picked="$(env -u OPENBLAS_CORETYPE "$dtnn" algos | core_of)"
own="$(env -u OPENBLAS_CORETYPE DTNN_BLAS_CORE=keep "$dtnn" algos | core_of)"
echo "# OpenBLAS alone: $own; dtnn's choice: $picked; CPU: $(lscpu | sed -n 's/^Model name: *//p')"
common=(--batch_size=64 --optimizer=sgd --learning_rate=0.01 --momentum=0.9 --num_epochs=1 --seed=0 --threads=1
        --evaluate_on_test=False)
recipe() {
  case "$1" in
    simplecnn) echo "--model=simplecnn --dataset=mnist --dataset_train_path=$data --steps_per_epoch=300" ;;
    resnet20) echo "--model=resnet20_cifar10 --dataset=cifar10 --use_synthetic_data=True --steps_per_epoch=20" ;;
  esac
}
run() {  # framework model core
  local fw="$1" model="$2" core="$3" out
  # shellcheck disable=SC2046
  case "$fw" in
    dtnn) out="$(OPENBLAS_CORETYPE="$core" "$dtnn" train "${common[@]}" $(recipe "$model") 2>&1)" ;;
    pytorch)
      out="$(OPENBLAS_CORETYPE="$core" "$py" experiments/reference/torch_train.py "${common[@]}" $(recipe "$model") \
        2>&1)" ;;
    pydtnn)
      [ -n "${DTNN_PYDTNN:-}" ] || return 0
      [ "$model" = resnet20 ] && return 0  # PyDTNN's synthetic CIFAR-10 is NaN: its resnet20 runs in frameworks.toml
      out="$(OPENBLAS_CORETYPE="$core" "$py" experiments/peers/pydtnn_peer.py "${common[@]}" $(recipe "$model") \
        2>&1)" ;;
  esac
  echo "$out" | sed -n "s/^Training throughput: \([0-9.]*\).*/$round $fw $model $core \1/p" | tail -n 1
}
for round in $(seq 1 "${ROUNDS:-3}"); do
  for model in simplecnn resnet20; do
    for fw in dtnn pytorch pydtnn; do
      for core in "$own" "$picked"; do run "$fw" "$model" "$core"; done
    done
  done
done
