#!/usr/bin/env bash
# Where a training step's GPU time goes, dtnn against PyTorch on the same GPU: Nsight Compute (ncu) times
# every kernel of ONE training step (step PROFILE_STEP, after the cuDNN searches of the first steps) of the
# same model and recipe in both frameworks, and gpu_profile_summary.py groups the kernels (convolution,
# GEMM, batch normalization, pooling, elementwise, ...). ncu runs the kernels one at a time, so the sums
# are pure kernel time: launch gaps and copies are not in them (a step's free-running time minus the sum
# is what the host and the gaps cost).
#
#   experiments/gpu_profile.sh BUILD_OR_BUNDLE_DIR OUT_DIR [MODEL DATASET ALLOW_TF32]
#   defaults: resnet50_imagenet imagenet True
# Environment: PROFILE_STEP (5), BATCH (64), TENSOR_FORMAT (NCHW), PYTHON (python3), NCU (ncu).
# Needs a CUDA device, ncu, and a PyTorch with CUDA (python3 of the GPU image). Writes OUT_DIR/dtnn.csv,
# OUT_DIR/pytorch.csv (ncu's raw rows) and OUT_DIR/profile.md (the comparison, also printed).
set -uo pipefail
cd "$(dirname "$0")/.."
build="${1:?usage: experiments/gpu_profile.sh BUILD_DIR OUT_DIR [MODEL DATASET ALLOW_TF32]}"
out="${2:?usage: experiments/gpu_profile.sh BUILD_DIR OUT_DIR [MODEL DATASET ALLOW_TF32]}"
model="${3:-resnet50_imagenet}"
dataset="${4:-imagenet}"
tf32="${5:-True}"
step="${PROFILE_STEP:-5}"
py="${PYTHON:-python3}"
ncu="${NCU:-ncu}"
mkdir -p "$out" || exit 1
command -v "$ncu" > /dev/null || { echo "gpu_profile: no ncu on PATH (set NCU)" >&2; exit 2; }

common=(--model="$model" --dataset="$dataset" --use_synthetic_data=True --batch_size="${BATCH:-64}" --optimizer=sgd
        --learning_rate=0.01 --num_epochs=1 --steps_per_epoch=$((step + 2)) --enable_gpu=True --allow_tf32="$tf32"
        --tensor_format="${TENSOR_FORMAT:-NCHW}")
ncu_args=(--profile-from-start off --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv)
export DTNN_CUDA_PROFILE_STEP="$step"
"$ncu" "${ncu_args[@]}" --log-file "$out/dtnn.csv" "$build/experiments/dtnn" train "${common[@]}" --progress=False \
  --evaluate_on_test=False > "$out/dtnn.log" 2>&1 || echo "gpu_profile: dtnn under ncu failed (rc $?), see dtnn.log" >&2
"$ncu" "${ncu_args[@]}" --log-file "$out/pytorch.csv" "$py" experiments/reference/torch_train.py "${common[@]}" \
  --evaluate_on_test=False > "$out/pytorch.log" 2>&1 || echo "gpu_profile: PyTorch under ncu failed (rc $?), see pytorch.log" >&2
"$py" experiments/gpu_profile_summary.py "$out/dtnn.csv" "$out/pytorch.csv" \
  --title "$model, batch ${BATCH:-64}, TF32 $tf32, training step $step" | tee "$out/profile.md"
