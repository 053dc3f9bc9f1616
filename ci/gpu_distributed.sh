#!/usr/bin/env bash
# The distribution checks that need the lent GPU machine, from a bundle made by
# `BUNDLE_MPI=ON ci/gpu_bundle.sh` (dtnn, the test binaries, bench_allreduce; Open MPI comes from the image).
#
#   ci/gpu_distributed.sh BUNDLE_DIR OUT_DIR gpu|gpu_tests|timelines|buckets|cpu_scaling|ceiling
#     gpu_tests    the [gpu] test cases and the 2-rank GPU test (MPI-staged; NCCL's case says why it skips on
#                  one GPU)
#     timelines    GPU timelines: resnet20 untraced vs traced, alternating, REPS (3) each, the
#                  traced files (Chrome JSON, PyDTNN CSV, Paraver) checked, and a 2-rank traced run
#     buckets      the gradient buckets on the GPU: 2 ranks sharing the one GPU, blocking vs
#                  non-blocking (25 MiB buckets and one per layer), resnet50 and vgg16, communication per step
#     gpu          the three above in one call: their time limits add up past one device call's 600 s, so
#                  give each its own call unless a dry run (each part archives its own logs as it ends)
#     cpu_scaling  the CPU cores: bench_allreduce at 2-16 ranks over shared memory and TCP,
#                  then experiments/scaling_cpu_16core.toml (filtered by MATRIX_ONLY, e.g. "model=simplecnn")
#                  (ALLREDUCE_RANKS: the rank counts, "2 4 8 16")
#                  into a results database that a later call continues: put the gpu_scaling.tgz an earlier
#                  call returned into CARRY_DIR (a carried folder) and the run resumes from it
#     ceiling      the CPU cores: experiments/contention_ceiling.sh at CEILING_RANKS ("4 8 16") ranks, simplecnn on
#                  Fashion-MNIST then resnet20 on synthetic CIFAR-10, 3 epochs of STEPS (simplecnn 100, resnet20
#                  10) steps, REPS (1) rounds: how much of the 16-core scaling loss is the machine (N
#                  independent 1-rank runs at once) and how much is distribution
# A dry run of the gpu part on a CPU machine: GPU_FLAG=--enable_gpu=False STEPS=4 REPS=1 (tests the script).
# Everything lands in OUT_DIR as a few .tgz files and .txt summaries (the device tool returns at most 8).
# The Fashion-MNIST files simplecnn trains on: DATA_DIR/fashion-mnist (carried; copied to where the matrix
# looks, Debian's /usr/share/datasets/fashion-mnist).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bundle="${1:?usage: ci/gpu_distributed.sh BUNDLE_DIR OUT_DIR gpu|cpu_scaling}"
out="${2:?usage: ci/gpu_distributed.sh BUNDLE_DIR OUT_DIR gpu|cpu_scaling}"
part="${3:?usage: ci/gpu_distributed.sh BUNDLE_DIR OUT_DIR gpu|cpu_scaling}"
mkdir -p "$out"
work="$(mktemp -d)"
dtnn="$bundle/experiments/dtnn"
# shellcheck source=ci/gpu_env.sh
source "$(dirname "$0")/gpu_env.sh"
mpirun_=(mpirun --oversubscribe)
# Two ranks sharing the GPU: unbound, so a rank's host thread (MPI progress, kernel launches) is never held
# to the other's core (Open MPI binds to cores for 2 ranks by default).
gpu_mpirun=(mpirun --oversubscribe --bind-to none)
case "$part" in
  gpu|gpu_tests|timelines|buckets|cpu_scaling|ceiling) ;;
  *) echo "ci/gpu_distributed.sh: unknown part '$part' (gpu, gpu_tests, timelines, buckets, cpu_scaling or ceiling)" >&2
     exit 2 ;;
esac
if ! command -v mpirun > /dev/null; then
  echo "ci/gpu_distributed.sh: no mpirun on this machine: the image's Open MPI is needed (a bundle carries none)" >&2
  exit 2
fi
want() { [ "$part" = "$1" ] || { [ "$part" = gpu ] && [ "$1" != cpu_scaling ] && [ "$1" != ceiling ]; }; }

{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\))"
  mpirun --version | head -1
  echo "missing libraries:"; ldd "$dtnn" "$bundle"/tests/* "$bundle"/suites/* | grep "not found" | sort -u || true
} 2>&1 | tee "$out/machine.txt"

train_summary() {  # log -> one line: rc, throughput, the communication table's rank-0 and max rows
  grep -E "Training throughput|^\*\*\*\* Communication|^  (rank 0|max) " "$1" | tr -s ' ' | tr '\n' '|'
}

if want gpu_tests; then
  {
    # The bucketed reductions first (the only checks of code no GPU has run yet), the [gpu] cases with what
    # the part has left (PART_S, from ci/gpu_session.sh), each case's seconds listed for the next sizing.
    echo "== test_mpi_gpu, 2 ranks on one GPU (MPI-staged reductions)"
    timeout 120 "${gpu_mpirun[@]}" -np 2 "$bundle/tests/test_mpi_gpu" > "$work/mpi_gpu.txt" 2>&1
    echo "rc $? (77: skipped)"; grep -vE "^(ok|FAILED): GPU buckets" "$work/mpi_gpu.txt" | tail -8
    grep -E "FAILED" "$work/mpi_gpu.txt" | head -10
    echo "== test_mpi_gpu nccl, 1 rank (NCCL's calls and stream order; the only NCCL run one GPU allows)"
    timeout 60 "${gpu_mpirun[@]}" -np 1 "$bundle/tests/test_mpi_gpu" nccl > "$work/mpi_gpu_nccl1.txt" 2>&1
    echo "rc $? (77: skipped)"; tail -4 "$work/mpi_gpu_nccl1.txt"
    echo "== test_mpi_gpu nccl, 2 ranks (skips without a GPU per rank)"
    timeout 60 "${gpu_mpirun[@]}" -np 2 "$bundle/tests/test_mpi_gpu" nccl > "$work/mpi_gpu_nccl.txt" 2>&1
    echo "rc $? (77: skipped)"; tail -4 "$work/mpi_gpu_nccl.txt"
    unit_s=$(( ${PART_S:-270} - SECONDS - 10 ))
    [ "$unit_s" -ge 30 ] || unit_s=30
    echo "== [gpu] tests (up to $unit_s s)"
    timeout "$unit_s" "$bundle/tests/dtnn_tests" "[gpu]" --durations yes > "$work/gpu_unit.txt" 2>&1
    echo "rc $? (124: timed out)"; tail -4 "$work/gpu_unit.txt"
  } 2>&1 | tee "$out/gpu_tests.txt"
  tar czf "$out/gpu_tests.tgz" -C "$work" gpu_unit.txt mpi_gpu.txt mpi_gpu_nccl1.txt mpi_gpu_nccl.txt
fi

if want timelines; then
  r20=(--model=resnet20_cifar10 --dataset=cifar10 --use_synthetic_data=True --batch_size=64 --optimizer=sgd
       --learning_rate=0.01 "${GPU_FLAG:---enable_gpu=True}" --evaluate_on_test=False --progress=False)
  {
    echo "== GPU timelines: resnet20, 3 epochs x ${STEPS:-60} steps, epochs 2-3 samples/s, untraced / traced alternating"
    for rep in $(seq 1 "${REPS:-3}"); do
      for tracing in False True; do
        timeout 120 "$dtnn" train "${r20[@]}" --num_epochs=3 --steps_per_epoch="${STEPS:-60}" --tracing=$tracing \
          --tracer_output="$work/t.json" --report="$work/tl_${tracing}_$rep.json" > "$work/tl_${tracing}_$rep.txt" 2>&1
        echo "rep $rep tracing=$tracing rc $? $(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["epochs"]; print(" ".join("%.0f" % x["samples_per_s"] for x in e))' "$work/tl_${tracing}_$rep.json" 2>&1)"
      done
    done
    python3 - "$work" "${REPS:-3}" <<'PY'
import json, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
def sps(t):
    return [x["samples_per_s"] for r in range(1, reps + 1) for x in json.load(open(f"{work}/tl_{t}_{r}.json"))["epochs"][1:]]
off, on = sps("False"), sps("True")
mo, mn = statistics.median(off), statistics.median(on)
print(f"untraced median {mo:.0f} samples/s ({min(off):.0f}-{max(off):.0f}), traced {mn:.0f} ({min(on):.0f}-{max(on):.0f}): "
      f"tracing costs {100 * (mo - mn) / mo:+.2f} % of throughput (target <= 2 %)")
PY
    echo "== GPU trace files (--profile=True, 10 steps of epoch 2)"
    timeout 120 "$dtnn" train "${r20[@]}" --num_epochs=2 --steps_per_epoch="${STEPS:-60}" --tracing=True --profile=True \
      --trace_steps="$((${STEPS:-60} * 3 / 2))..$((${STEPS:-60} * 3 / 2 + 9))" --tracer_output="$work/gpu_trace.json,$work/gpu_trace.csv,$work/gpu_trace.prv" \
      > "$work/gpu_trace.txt" 2>&1
    echo "rc $? $(grep -E 'Trace:' "$work/gpu_trace.txt" | tr '\n' ' ')"
    python3 tests/trace/paraver_check.py "$work/gpu_trace.prv" && echo "paraver_check: ok"
    head -3 "$work/gpu_trace.csv"
    python3 - "$work/gpu_trace.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
xs = [e for e in ev if e.get("ph") == "X"]
steps = [e for e in xs if e["name"] == "step"]
worst = 1.0
for s in steps:
    inside = sum(e["dur"] for e in xs if e is not s and e["tid"] == s["tid"] and e["name"] != "step"
                 and e["ts"] >= s["ts"] - 1e-3 and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1e-3)
    worst = min(worst, inside / s["dur"] if s["dur"] else 1.0)
tids = sorted({(e["pid"], e["tid"]) for e in xs})
print(f"GPU trace: {len(steps)} steps, {len(xs)} X events on (pid, tid) {tids}; the events inside each step "
      f"cover at least {100 * worst:.1f} % of it")
PY
    echo "== 2-rank GPU trace (one GPU, MPI-staged, non-blocking)"
    timeout 150 "${gpu_mpirun[@]}" -np 2 "$dtnn" train "${r20[@]}" --parallel=data --non_blocking_mpi=True \
      --num_epochs=2 --steps_per_epoch="${STEPS:-40}" --tracing=True --trace_steps="$((${STEPS:-40} * 3 / 2))..$((${STEPS:-40} * 3 / 2 + 9))" \
      --tracer_output="$work/gpu2_trace.json,$work/gpu2_trace.prv" > "$work/gpu2_trace.txt" 2>&1
    echo "rc $? $(grep -E 'Trace:|skew' "$work/gpu2_trace.txt" | tr '\n' ' ')"
    python3 tests/trace/paraver_check.py "$work/gpu2_trace.prv" && echo "paraver_check: ok"
    python3 - "$work/gpu2_trace.json" <<'PY'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
c = collections.Counter((e["pid"], e["name"].split(" ")[0]) for e in ev if e.get("ph") == "X")
print("events per rank:", {p: sum(n for (q, _), n in c.items() if q == p) for p in sorted({p for p, _ in c})})
print("rank 1's event names:", sorted((k[1], n) for k, n in c.items() if k[0] == 1))
PY
  } 2>&1 | tee "$out/gpu_timelines.txt"
  (cd "$work" && tar czf "$out/gpu_timelines.tgz" tl_* gpu_trace* gpu2_trace*)
fi

if want buckets; then
  {
    echo "== gradient buckets on the GPU: 2 ranks on one GPU (MPI-staged through pinned host memory), 3 epochs"
    echo "   (two processes share the GPU, so compute is slower than one rank's; the figures are about overlap)"
    for spec in "resnet50_imagenet imagenet 32 20" "vgg16_cifar10 cifar10 64 40"; do
      read -r model dataset batch steps <<<"$spec"
      for mode in "blocking --non_blocking_mpi=False" "nb25 --non_blocking_mpi=True" \
                  "nb_layer --non_blocking_mpi=True --gradient_bucket_mb=0"; do
        read -r name args <<<"$mode"
        # shellcheck disable=SC2086
        timeout 150 "${gpu_mpirun[@]}" -np 2 "$dtnn" train --model="$model" --dataset="$dataset" --use_synthetic_data=True \
          --batch_size="$batch" --optimizer=sgd --learning_rate=0.01 --num_epochs=3 --steps_per_epoch="${STEPS:-$steps}" \
          "${GPU_FLAG:---enable_gpu=True}" --parallel=data --evaluate_on_test=False --progress=False $args \
          --report="$work/bk_${model}_$name.json" > "$work/bk_${model}_$name.txt" 2>&1
        echo "$model $name: rc $? $(train_summary "$work/bk_${model}_$name.txt")"
      done
    done
  } 2>&1 | tee "$out/gpu_buckets.txt"
  (cd "$work" && tar czf "$out/gpu_buckets.tgz" bk_*)
fi

if [ "$part" = ceiling ]; then
  if [ -d "${DATA_DIR:-.gpu_data}/fashion-mnist" ]; then
    mkdir -p /usr/share/datasets && cp -r "${DATA_DIR:-.gpu_data}/fashion-mnist" /usr/share/datasets/
  fi
  # Each configuration's table is appended as it ends, its reports and logs kept in OUT_DIR/ceiling_runs (a
  # cut part keeps the ones before; gpu_session.sh packs them into session.tgz).
  for np in ${CEILING_RANKS:-4 8 16}; do
    echo "#### simplecnn, $np ranks"
    KEEP="$out/ceiling_runs/simplecnn_np$np" DTNN_BUILD_DIR="$bundle" REPS="${REPS:-1}" \
      EXTRA="--steps_per_epoch=${STEPS:-100}" bash experiments/contention_ceiling.sh "$np" 3 2>&1 | grep -v "^== round"
  done 2>&1 | tee "$out/ceiling.txt"
  for np in ${CEILING_RANKS:-4 8 16}; do
    echo "#### resnet20_cifar10 (synthetic), $np ranks"
    KEEP="$out/ceiling_runs/resnet20_np$np" DTNN_BUILD_DIR="$bundle" REPS="${REPS:-1}" DATASET=cifar10 \
      EXTRA="--steps_per_epoch=${STEPS:-10}" bash experiments/contention_ceiling.sh "$np" 3 resnet20_cifar10 synthetic 2>&1 |
      grep -v "^== round"
  done 2>&1 | tee -a "$out/ceiling.txt"
fi

if [ "$part" = cpu_scaling ]; then
  if [ -d "${DATA_DIR:-.gpu_data}/fashion-mnist" ]; then
    mkdir -p /usr/share/datasets && cp -r "${DATA_DIR:-.gpu_data}/fashion-mnist" /usr/share/datasets/
  fi
  mkdir -p "$work/scaling"
  prev="${CARRY_DIR:-.gpu_carry}/gpu_scaling.tgz"
  [ -f "$prev" ] && tar xzf "$prev" -C "$work/scaling" && echo "continuing $prev"
  if [ ! -f "$work/scaling/allreduce_done" ]; then  # once: the collectives at 2-16 ranks, both transports
    for np in ${ALLREDUCE_RANKS:-2 4 8 16}; do
      for transport in shm tcp; do
        mca=()
        [ $transport = tcp ] && mca=(--mca btl "self,tcp")
        timeout 120 "${mpirun_[@]}" -np "$np" "${mca[@]}" "$bundle/suites/bench_allreduce" --case_time=0.05 \
          --benchmark_format=json > "$work/scaling/allreduce_${transport}_np$np.json" 2> "$work/scaling/allreduce_${transport}_np$np.err"
        echo "bench_allreduce np $np $transport: rc $? $(python3 -c 'import json,sys; b=[x for x in json.load(open(sys.argv[1]))["benchmarks"] if x["name"].startswith("BM_Allreduce/")]; print(" ".join("%dB:%.1f%s" % (x["bytes"], x["real_time"], x["time_unit"]) for x in b if int(x["bytes"]) in (4, 65536, 1048576, 16777216)))' "$work/scaling/allreduce_${transport}_np$np.json" 2>&1 | tail -1)"
      done
    done
    touch "$work/scaling/allreduce_done"
  fi
  only=()
  for f in ${MATRIX_ONLY:-}; do only+=(--only "$f"); done
  timeout "${MATRIX_TIMEOUT:-420}" "$dtnn" run experiments/scaling_cpu_16core.toml --db "$work/scaling/scaling16.db" \
    --resume "${only[@]}" 2>&1 | tail -4
  "$dtnn" query scaling --db "$work/scaling/scaling16.db" > "$out/scaling.txt" 2>&1
  # The device tool returns files of at most 16 MiB: the database, logs and small trace files in one archive
  # (what a later call continues from), the Chrome and Paraver traces (large at 16 ranks) in another.
  tar czf "$out/gpu_scaling.tgz" --exclude='*.trace.json' --exclude='*.trace.prv' -C "$work/scaling" .
  (cd "$work/scaling" && find . -name '*.trace.json' -o -name '*.trace.prv' | tar cJf "$out/gpu_traces.txz" -T -)
  ls -la "$out"
  head -60 "$out/scaling.txt"
fi
exit 0
