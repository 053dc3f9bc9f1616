#!/usr/bin/env bash
# published_sanity.sh [DTNN]
#
# The performance model's sanity check against published scaling results (a check, not a fit: no constant below
# was tuned to land near the published figure). For each published configuration, `dtnn predict` with
#   - the layer proportions and gradient buckets of dtnn's own model (analysis/perfmodel/published/*.json, from
#     short CPU runs; the buckets re-planned with the framework's cap: Horovod's 64 MiB fusion buffer, DDP's
#     25 MiB buckets),
#   - the compute of one GPU from its published single-GPU throughput (--rank_samples_per_s; the batch per GPU
#     restated with --batch_size),
#   - the cluster as a platform preset (horovod_roce25, dgx1v_ib4x100: nominal line rates) and NCCL's ring
#     (--algorithm ring),
# prints the weak-scaling efficiency predicted with perfect overlap (non_blocking) and with none (blocking)
# beside the published one, and with perfect overlap on a link at 80 % of its line rate (what NCCL's ring
# commonly reaches over RoCE/IB: a sensitivity, not a claim about those clusters).
#
# Published figures and throughputs (their sources):
#   Horovod docs/benchmarks.rst: 128 servers x 4 Pascal GPUs, RoCE 25 Gbit/s, tf_cnn_benchmarks --batch_size 64,
#     512 GPUs: ResNet-101 90 %, VGG-16 68 % scaling efficiency.
#   One Pascal GPU (TensorFlow's benchmarks page, DGX-1 P100, synthetic data, batch 64, May 2017): VGG16 154
#     images/s; ResNet-50 219 and ResNet-152 91.8, so ResNet-101 (7.8 GFLOPs between ResNet-50's 4.1 and
#     ResNet-152's 11.5) is interpolated in time per image by FLOPs: 129 images/s.
#   PyTorch benchmarks/distributed/ddp/README.md: DGX-1 V100 nodes, 4 x 100 Gb IB, ResNet-50, batch 32 per GPU:
#     1 GPU without DDP 0.097 s/iteration (329.9 images/s), 16 GPUs 0.104 s: 93 % weak-scaling efficiency.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dtnn=${1:-$here/../../build/experiments/dtnn}
[ -x "$dtnn" ] || { echo "published_sanity.sh: $dtnn is not built" >&2; exit 1; }
prof=$here/published

# name | profile | batch per GPU | images/s of one GPU | platform | its inter-node Gb/s | ranks | published
configs=(
  "Horovod ResNet-101|resnet101_imagenet.bucket64.json|64|129|horovod_roce25|25|512|0.90"
  "Horovod VGG-16|vgg16_imagenet.bucket64.json|64|154|horovod_roce25|25|512|0.68"
  "DDP ResNet-50|resnet50_imagenet.bucket25.json|32|329.9|dgx1v_ib4x100|400|16|0.93"
)
efficiency() {  # profile batch rate platform ranks mode [more predict args] -> efficiency at `ranks`
  "$dtnn" predict --profile "$prof/$1" --batch_size "$2" --rank_samples_per_s "$3" --platform "$4" \
    --algorithm ring --ranks "1,$5" --mode "$6" "${@:7}" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["rows"][-1]["efficiency"])'
}
printf "%-20s %-15s %6s %10s %14s %17s %17s  %s\n" configuration platform ranks published "model overlap" \
  "model no overlap" "overlap, 80% link" "published within [no overlap, overlap]?"
for c in "${configs[@]}"; do
  IFS='|' read -r name file batch rate platform gbps ranks published <<< "$c"
  nb=$(efficiency "$file" "$batch" "$rate" "$platform" "$ranks" non_blocking)
  bl=$(efficiency "$file" "$batch" "$rate" "$platform" "$ranks" blocking)
  slow=$(efficiency "$file" "$batch" "$rate" "$platform" "$ranks" non_blocking \
           --inter_gbps "$(python3 -c "print(0.8 * $gbps)")")
  python3 -c 'import sys
name, platform, ranks, pub, nb, bl, slow = sys.argv[1:]
pub, nb, bl, slow = float(pub), float(nb), float(bl), float(slow)
verdict = "yes" if bl <= pub <= nb else ("below both" if pub < bl else "above both")
print("%-20s %-15s %6s %9.1f%% %13.1f%% %16.1f%% %16.1f%%  %s (overlap %+.1f points)" % (name, platform, ranks,
      100 * pub, 100 * nb, 100 * bl, 100 * slow, verdict, 100 * (nb - pub)))' \
    "$name" "$platform" "$ranks" "$published" "$nb" "$bl" "$slow"
done
