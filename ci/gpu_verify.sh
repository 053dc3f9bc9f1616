#!/usr/bin/env bash
# The GPU verification on a lent GPU machine (H100/H200 image: CUDA toolkit, PyTorch with its nvidia-*
# cuDNN/NCCL packages, Open MPI 4.1.6, no network), from a bundle made by ci/gpu_bundle.sh.
#
#   ci/gpu_verify.sh BUNDLE_DIR OUT_DIR [tests|compare|unit|matrix|profile|all]
#     tests    the [gpu] test cases, `dtnn algos`, `dtnn conv` on resnet50's 3x3 256-channel layer, the
#              cuDNN per-layer table of resnet50_imagenet (`dtnn layers --device gpu`, TF32 off), and
#              20-step training runs of resnet20_cifar10, vgg16_cifar10 and resnet50_imagenet
#     compare  experiments/gpu_vs_pytorch.sh: dtnn vs PyTorch training samples/s on the same GPU
#     unit     only the [gpu] test cases and the 2-rank GPU test (not part of `all`)
#     matrix   `dtnn run experiments/gpu.toml` into OUT/gpu_matrix.db, split by MATRIX_ONLY (not part of `all`)
#     profile  experiments/gpu_profile.sh: ncu kernel times of one resnet50 training step (TF32 on), both
#              frameworks, grouped by category (not part of `all`)
# Everything lands in OUT_DIR (a few files: the device tool returns at most 8), the summaries last on stdout.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bundle="${1:?usage: ci/gpu_verify.sh BUNDLE_DIR OUT_DIR [tests|compare|unit|matrix|profile|all]}"
out="${2:?usage: ci/gpu_verify.sh BUNDLE_DIR OUT_DIR [tests|compare|unit|matrix|profile|all]}"
part="${3:-all}"
mkdir -p "$out"
work="$(mktemp -d)"
dtnn="$bundle/experiments/dtnn"

# shellcheck source=ci/gpu_env.sh
source "$(dirname "$0")/gpu_env.sh"

if [ "$part" = unit ]; then  # the test binaries alone
  timeout 300 "$bundle/tests/dtnn_tests" "[gpu]" --durations yes 2>&1 | tee "$work/gpu_tests.txt"
  if [ -x "$bundle/tests/test_mpi_gpu" ] && command -v mpirun > /dev/null; then
    timeout 120 mpirun -np 2 --allow-run-as-root --oversubscribe "$bundle/tests/test_mpi_gpu" 2>&1 | tee -a "$work/gpu_tests.txt"
  fi
fi

if [ "$part" = tests ] || [ "$part" = all ]; then
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    echo "missing libraries:"; ldd "$dtnn" "$bundle/tests/dtnn_tests" | grep "not found" || echo "  none"
    "$dtnn" algos
  } 2>&1 | tee "$work/device.txt"
  timeout 300 "$bundle/tests/dtnn_tests" "[gpu]" --durations yes 2>&1 | tee "$work/gpu_tests.txt"
  if [ -x "$bundle/tests/test_mpi_gpu" ] && command -v mpirun > /dev/null; then  # BUNDLE_MPI=ON bundles
    timeout 120 mpirun -np 2 --allow-run-as-root --oversubscribe "$bundle/tests/test_mpi_gpu" 2>&1 | tee -a "$work/gpu_tests.txt"
  fi
  timeout 120 "$dtnn" conv n64_c256h14w14_k256r3s3_st1x1_pd1x1_dl1x1_g1_nchw_f32 --device gpu 2>&1 | tee "$work/conv.txt"
  timeout 300 "$dtnn" layers --model resnet50_imagenet --device gpu --tensor_format NCHW --batch_size 64 --samples 5 \
    --json "$work/layers_resnet50_gpu.json" > "$work/layers_resnet50_gpu.txt" 2>&1
  tail -3 "$work/layers_resnet50_gpu.txt"
  for spec in "resnet20_cifar10 cifar10 50" "vgg16_cifar10 cifar10 50" "resnet50_imagenet imagenet 20"; do
    read -r model dataset steps <<<"$spec"
    timeout 200 "$dtnn" train --model="$model" --dataset="$dataset" --use_synthetic_data=True --batch_size=64 \
      --optimizer=sgd --learning_rate=0.01 --num_epochs=2 --steps_per_epoch="$steps" --enable_gpu=True \
      --evaluate_on_test=False --progress=False --report="$work/train_$model.json" > "$work/train_$model.txt" 2>&1
    echo "$model: rc $? $(grep -E '^Epoch|Training throughput' "$work/train_$model.txt" | tr '\n' ' ' | cut -c1-400)"
  done 2>&1 | tee "$work/train_smoke.txt"
  # Where a resnet50 step goes (per-layer GPU times, synchronising after every layer), TF32 off and on.
  for tf32 in False True; do
    timeout 120 "$dtnn" train --model=resnet50_imagenet --dataset=imagenet --use_synthetic_data=True --batch_size=64 \
      --optimizer=sgd --learning_rate=0.01 --num_epochs=1 --steps_per_epoch=10 --enable_gpu=True --gpu_layer_times=True \
      --allow_tf32=$tf32 --evaluate_on_test=False --progress=False > "$work/train_resnet50_layer_times_tf32_$tf32.txt" 2>&1
  done
  # GPU timelines and the 2-rank GPU runs: ci/gpu_distributed.sh BUNDLE OUT gpu_tests|timelines|buckets.
  # NHWC on the GPU, the test pass, and weights written by a GPU run evaluated on the GPU and on the CPU.
  {
    timeout 200 "$dtnn" train --model=resnet20_cifar10 --dataset=cifar10 --use_synthetic_data=True --batch_size=64 \
      --optimizer=sgd --learning_rate=0.01 --num_epochs=1 --steps_per_epoch=30 --enable_gpu=True --tensor_format=NHWC \
      --progress=False --weights_and_bias_filename="$work/r20.npz" > "$work/r20_nhwc.txt" 2>&1
    echo "resnet20 NHWC on the GPU: rc $? $(grep -E 'Training throughput|Testing metrics' "$work/r20_nhwc.txt" | tr '\n' ' ')"
    for dev in True False; do
      timeout 200 "$dtnn" train --model=resnet20_cifar10 --dataset=cifar10 --use_synthetic_data=True --batch_size=64 \
        --enable_gpu=$dev --tensor_format=NHWC --evaluate_only=True --weights_and_bias_filename="$work/r20.npz" \
        --progress=False > "$work/r20_eval_gpu_$dev.txt" 2>&1
      echo "  evaluate_only of those weights, enable_gpu=$dev: rc $? $(grep -E 'Testing metrics' "$work/r20_eval_gpu_$dev.txt")"
    done
    timeout 100 "$bundle/suites/bench_conv" --device=gpu --layout=nchw --shapes=suites/shapes/resnet50_imagenet.txt \
      --benchmark_filter='cudnn_find|cublas_1x1' --benchmark_min_time=0.05 > "$work/bench_conv_gpu.txt" 2>&1
    echo "bench_conv --device=gpu: rc $? $(grep -c cudnn_find "$work/bench_conv_gpu.txt") cudnn_find cases"
  } 2>&1 | tee -a "$work/train_smoke.txt"
  tar czf "$out/gpu_verify_tests.tgz" -C "$work" .
fi

if [ "$part" = matrix ]; then  # experiments/gpu.toml into a results database, resumable
  # The whole matrix (128 runs) outlasts one 10-minute device call: split it with MATRIX_ONLY, e.g.
  # MATRIX_ONLY="model=resnet50_imagenet", then "model=vgg16_cifar10", "model=resnet20_cifar10"; a carried
  # MATRIX_DB continues (--resume skips the runs already stored ok). OUT gets gpu_matrix.tgz (the database
  # and the run logs) and matrix_throughput.txt.
  db="${MATRIX_DB:-$work/matrix/gpu_matrix.db}"
  mkdir -p "$(dirname "$db")"
  only=()
  for f in ${MATRIX_ONLY:-}; do only+=(--only "$f"); done
  DTNN_PYTHON=python3 timeout "${MATRIX_TIMEOUT:-540}" "$dtnn" run experiments/gpu.toml --db "$db" --resume \
    "${only[@]}" 2>&1 | tail -5
  "$dtnn" query throughput --db "$db" > "$out/matrix_throughput.txt" 2>&1
  tar czf "$out/gpu_matrix.tgz" -C "$(dirname "$db")" .
  head -80 "$out/matrix_throughput.txt"
fi

if [ "$part" = profile ]; then
  NCU="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)" PYTHON=python3 \
    bash experiments/gpu_profile.sh "$bundle" "$work/profile" resnet50_imagenet imagenet "${PROFILE_TF32:-True}" > /dev/null
  tar czf "$out/gpu_verify_profile.tgz" -C "$work" profile
  cat "$work/profile/profile.md"
fi

if [ "$part" = compare ] || [ "$part" = all ]; then
  PYTHON=python3 bash experiments/gpu_vs_pytorch.sh "$bundle" "$work/compare" 2>&1 | tee "$work/compare.txt"
fi

[ -d "$work/compare" ] && tar czf "$out/gpu_verify_compare.tgz" -C "$work" compare compare.txt
[ -f "$work/gpu_tests.txt" ] && tail -15 "$work/gpu_tests.txt"
[ -f "$work/train_smoke.txt" ] && cat "$work/train_smoke.txt"
[ -f "$work/compare/summary.md" ] && cat "$work/compare/summary.md"
exit 0
