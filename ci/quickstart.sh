#!/usr/bin/env bash
# Set-up (ci/setup.sh), then the main job: train simplecnn on Fashion-MNIST (PyDTNN's recipe: Adam,
# lr 0.001, batch 64) and print the result. The experiment-harness issue turns this into a matrix run.
#   EPOCHS  number of epochs (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
build_dir="${DTNN_BUILD_DIR:-build}"
mkdir -p results
"$build_dir/experiments/dtnn" train --model=simplecnn --dataset=mnist \
  --dataset_train_path=/usr/share/datasets/fashion-mnist --optimizer=adam --learning_rate=0.001 \
  --batch_size=64 --num_epochs="${EPOCHS:-1}" --threads=1 --report=results/quickstart.json
echo "Report: results/quickstart.json"
