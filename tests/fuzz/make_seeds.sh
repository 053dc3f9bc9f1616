#!/usr/bin/env bash
# Regenerates the seed corpora of tests/fuzz/corpus from real files (tests/fuzz/README.md says where each
# comes from). Needs /usr/bin/python3 with numpy, a normal build (dtnn, bench_conv) and the fuzz build:
#   tests/fuzz/make_seeds.sh [build dir (default build)] [fuzz build dir (default build-fuzz)]
# The training runs and benchmarks are deterministic in shape, not in value: a regenerated seed differs in
# timings and weights, never in structure.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
fuzz="${2:-build-fuzz}"
corpus=tests/fuzz/corpus
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mnist=experiments/datasets/mnist-10k

# IDX, CIFAR-10 and ImageNet shards from the real MNIST subset; NPZ variants written by numpy.
/usr/bin/python3 - "$mnist" "$corpus" <<'PY'
import gzip, io, os, struct, sys, zipfile
import numpy as np
mnist, corpus = sys.argv[1], sys.argv[2]
images = gzip.open(os.path.join(mnist, "t10k-images-idx3-ubyte.gz")).read()
labels = gzip.open(os.path.join(mnist, "t10k-labels-idx1-ubyte.gz")).read()
px = np.frombuffer(images[16:], np.uint8).reshape(-1, 28, 28)
lab = np.frombuffer(labels[8:], np.uint8)

def put(target, name, data):
    with open(os.path.join(corpus, target, name), "wb") as f:
        f.write(data)

# IDX: the real header with 3 images / labels, gzip too, and the real header truncated after 2 images.
three = struct.pack(">IIII", 0x803, 3, 28, 28) + px[:3].tobytes()
put("fuzz_idx", "images-3.idx3", three)
put("fuzz_idx", "images-3.idx3.gz", gzip.compress(three, mtime=0))
put("fuzz_idx", "labels-3.idx1", struct.pack(">II", 0x801, 3) + lab[:3].tobytes())
put("fuzz_idx", "truncated-rows.idx3", images[:16] + px[:2].tobytes())

# CIFAR-10 binary records (label byte, R, G, B planes of 32x32): MNIST digits padded by 2 and copied to
# three planes, with their real labels (the repository carries no CIFAR-10 data).
def cifar(n):
    out = b""
    for i in range(n):
        img = np.pad(px[i], 2)
        out += bytes([lab[i]]) + np.stack([img, img, img]).tobytes()
    return out
put("fuzz_cifar10", "one-record.bin", cifar(1))
put("fuzz_cifar10", "two-records.bin", cifar(2))

# ImageNet shards in PyDTNN's format: x uint8 (n, 3, H, W), y int16 labels 1..1000 (n,) or int64 (n, 1);
# 5x5 crops of MNIST digits in three planes, labels = digit + 1.
def shard(n, compressed, y_dtype, y_shape):
    x = np.stack([np.stack([px[i, 10:15, 10:15]] * 3) for i in range(n)])
    y = (lab[:n].astype(y_dtype) + 1).reshape(y_shape)
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, x=x, y=y)
    return buf.getvalue()
put("fuzz_imagenet_shard", "shard-stored-int16.npz", shard(2, False, np.int16, (2,)))
put("fuzz_imagenet_shard", "shard-compressed-int64.npz", shard(3, True, np.int64, (3, 1)))

# NPZ: numpy's writers, stored and deflated, several dtypes and ranks (a 0-d scalar included).
arrays = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3), "f64": np.array([0.5, -1.25]),
          "i64": np.array(7, dtype=np.int64), "u8": np.frombuffer(b"dtnn", np.uint8), "i16": np.array([-3, 1000], np.int16)}
for name, fn in (("numpy-stored.npz", np.savez), ("numpy-compressed.npz", np.savez_compressed)):
    buf = io.BytesIO()
    fn(buf, **arrays)
    put("fuzz_npz", name, buf.getvalue())
PY
cp "$corpus"/fuzz_imagenet_shard/*.npz "$corpus/fuzz_npz/"

# Weights and checkpoint files written by the engine's own writers for tiny_model.h's run.
DTNN_FUZZ_WRITE_SEED="$corpus/fuzz_weights/tiny-weights.npz" "$fuzz/tests/fuzz/fuzz_weights"
DTNN_FUZZ_WRITE_SEED="$corpus/fuzz_checkpoint/tiny-checkpoint.npz" "$fuzz/tests/fuzz/fuzz_checkpoint"
cp "$corpus/fuzz_weights/tiny-weights.npz" "$corpus/fuzz_checkpoint/"   # a weights file is no checkpoint
cp "$corpus/fuzz_checkpoint/tiny-checkpoint.npz" "$corpus/fuzz_weights/"  # a checkpoint is a weights file
cp "$corpus/fuzz_weights/tiny-weights.npz" "$corpus/fuzz_checkpoint/tiny-checkpoint.npz" "$corpus/fuzz_npz/"

# The repository's experiment matrices.
cp experiments/*.toml tests/analysis/report_matrix.toml "$corpus/fuzz_matrix_toml/"  # launcher_*.toml, mpirun_*.toml: hand-written, kept
# The repository's accuracy targets (one.toml and deep_dotted.toml: hand-written, kept).
mkdir -p "$corpus/fuzz_targets_toml"
cp analysis/targets.toml "$corpus/fuzz_targets_toml/"

# Run reports of real `dtnn train` runs: ok (with a validation split and the runner's nonce) and diverged.
train=("$build/experiments/dtnn" train --model=simplecnn --dataset=mnist --dataset_train_path="$mnist"
       --batch_size=16 --steps_per_epoch=2 --num_epochs=2 --threads=1 --progress=False)
DTNN_RUN_NONCE=0123456789abcdef "${train[@]}" --validation_split=0.1 --report="$work/ok.json" > /dev/null
"${train[@]}" --learning_rate=3e38 --report="$work/diverged.json" > /dev/null 2>&1 || true
cp "$work/ok.json" "$corpus/fuzz_run_report/ok.report.json"
cp "$work/diverged.json" "$corpus/fuzz_run_report/diverged.report.json"

# Convolution benchmark files: Google Benchmark JSON of bench_conv (one problem, two algorithms, with
# repetitions so the aggregates are there) and `dtnn layers --json` of simplecnn.
"$build/suites/bench_conv" --threads=1 --benchmark_filter='cpu.(convgemm|im2col_gemm)/fwd/n64_c1h28w28_k4r3s3_.*nhwc' \
  --benchmark_min_time=0.001 --benchmark_repetitions=2 --benchmark_format=json > "$work/bench.json" 2>/dev/null || true
cp "$work/bench.json" "$corpus/fuzz_benchmark_json/bench_conv.json"
"$build/experiments/dtnn" layers --model simplecnn --batch_size 2 --samples 1 --conv_algo convgemm,direct \
  --threads 1 --json "$corpus/fuzz_benchmark_json/layers.json" > /dev/null
du -sh "$corpus"
