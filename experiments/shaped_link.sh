#!/usr/bin/env bash
# How much of a network's cost overlapped reduction hides, on one machine: 2 ranks over TCP through a loopback
# capped at each of RATES (experiments/shaped_loopback.sh), blocking against non-blocking with each bucket cap of
# BUCKETS, beside a 1-rank run. The target "over TCP, non-blocking hides at least 75 % of the communication
# time that blocking exposes" cannot be read on an uncapped loopback, where the reduction is under 1 % of a
# step; capped, it is 3-35 % (resnet20 at 1gbit-100mbit).
#
#   experiments/shaped_link.sh OUT_DIR [MODEL] [DATA]
#   defaults: resnet20_cifar10, DATA=synthetic (or a dataset folder, e.g. /usr/share/datasets/fashion-mnist)
#   Environment (defaults): RATES ("none 1gbit 300mbit 100mbit"; none = not capped), BUCKETS ("blocking 25 0.25
#   0": blocking, or non-blocking with that --gradient_bucket_mb; CAP:N also sets --gradient_buckets_min=N,
#   e.g. 25:1 for DDP's cap alone), REPS (3 rounds; each round runs the alone
#   run and then every rate x bucket once, so drift spreads over all), STEPS (20 per epoch; 2 epochs, epoch 2
#   is sampled), DATASET (cifar10 for the CIFAR models, else mnist), EXTRA (more dtnn options), BENCH (1:
#   bench_allreduce at each rate, 4 B-2 MiB: the link's measured rate and the model's fit, whose latency the
#   small sizes pin; 0: none, and no predictions), DTNN_BUILD_DIR.
# Per run, the model's prediction from the run's own layer times on a link fitted to that rate's bench
# (`dtnn predict --from-report RUN --fit-collectives BENCH --fit-op allreduce|iallreduce`, the op the run
# uses) is kept beside the report, so the table compares the analytic model with a real TCP stack that
# progresses non-blocking sums only inside MPI calls. Each op gets its own fit because the capped lo is one
# link for both directions, where the model's links are full duplex: blocking's exchange (both directions at
# once) and libnbc's binomial reduce + broadcast (one direction, then the other) take the same time on it,
# which one fit of the model would put 2x apart.
# Prints experiments/shaped_link.py's table; keeps every report, log, bench and prediction in OUT_DIR (new or
# empty: refused otherwise, so that no stale file enters the table).
# Needs what shaped_loopback.sh needs (root, tc, htb and u32): exit 3 with one line where it cannot shape; 2 for
# refused arguments; 1 when a run fails. Run it alone on the machine: the cap slows all loopback traffic.
# OUT_DIR and DATA are the caller's paths; DTNN_BUILD_DIR (default build) is relative to the repository.
set -euo pipefail
me="experiments/shaped_link.sh"
fail() { echo "$me: $*" >&2; exit 2; }
die() { echo "$me: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 3 ] || fail "usage: $me OUT_DIR [MODEL] [DATA]"
out="$1" model="${2:-resnet20_cifar10}" data="${3:-synthetic}"
[[ "$out" = /* ]] || out="$PWD/$out"
[ "$data" = synthetic ] || [[ "$data" = /* ]] || data="$PWD/$data"
cd "$(dirname "$0")/.."
case "$model" in resnet*cifar* | vgg*cifar* | densenet*cifar*) def_dataset=cifar10 ;; *) def_dataset=mnist ;; esac
dataset="${DATASET:-$def_dataset}"
build="${DTNN_BUILD_DIR:-build}"
dtnn="$build/experiments/dtnn" bench="$build/suites/bench_allreduce"
read -r -a rates <<< "${RATES:-none 1gbit 300mbit 100mbit}"
read -r -a buckets <<< "${BUCKETS:-blocking 25 0.25 0}"
reps="${REPS:-3}" steps="${STEPS:-20}"
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || fail "REPS must be a positive integer, not '$reps'"
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || fail "STEPS must be a positive integer, not '$steps'"
[ ${#rates[@]} -ge 1 ] || fail "RATES is empty"
[ ${#buckets[@]} -ge 1 ] || fail "BUCKETS is empty"
for r in "${rates[@]}"; do
  [ "$r" = none ] || [[ "$r" =~ ^[0-9]+(\.[0-9]+)?(k|m|g)?(bit|bps)$ ]] || fail "a rate must be none or like 300mbit, not '$r'"
done
for b in "${buckets[@]}"; do
  [ "$b" = blocking ] || [[ "$b" =~ ^[0-9]+(\.[0-9]+)?(:[1-9][0-9]*)?$ ]] ||
    fail "a bucket must be blocking, a MiB cap (0 = per layer) or CAP:N (N = --gradient_buckets_min), not '$b'"
done
[ -x "$dtnn" ] || fail "no $dtnn (build first, or set DTNN_BUILD_DIR)"
[ "${BENCH:-1}" = 0 ] || [ -x "$bench" ] || fail "no $bench (build it, or BENCH=0)"
command -v mpirun > /dev/null || fail "no mpirun on PATH"
if [ "$data" = synthetic ]; then
  data_opts=(--use_synthetic_data=True)
else
  [ -d "$data" ] || fail "no data folder '$data' (or synthetic)"
  data_opts=(--dataset_train_path="$data")
fi
# Shaping must work before an hour of runs starts: the wrapper's own checks, on a command that does nothing.
for r in "${rates[@]}"; do
  if [ "$r" != none ]; then experiments/shaped_loopback.sh "$r" true || exit $?; break; fi
done
[ ! -e "$out" ] || [ -z "$(ls -A "$out" 2> /dev/null)" ] || fail "OUT_DIR '$out' is not empty (its files would mix with the new ones)"
mkdir -p "$out"
read -r -a extra <<< "${EXTRA:-}"
recipe=(--model="$model" --dataset="$dataset" "${data_opts[@]}" --optimizer=adam --learning_rate=0.001
        --batch_size=64 --num_epochs=2 --steps_per_epoch="$steps" --threads=1 --seed=0 --progress=false
        --evaluate_on_test=false "${extra[@]}")
mpi=(mpirun -np 2 --bind-to core --mca btl self,tcp -x OMP_NUM_THREADS)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
export OMP_NUM_THREADS=1
capped() {  # rate command...: the command under the cap (or as it is for none)
  local r="$1"; shift
  if [ "$r" = none ]; then "$@"; else experiments/shaped_loopback.sh "$r" "$@"; fi
}
run() {  # label log command...: when it fails, the log's tail and exit 1
  local label="$1" log="$2"; shift 2
  if ! "$@" > "$log" 2>&1; then
    tail -5 "$log" >&2
    die "the $label run failed (log: $log)"
  fi
}
pin0=()
command -v taskset > /dev/null && pin0=(taskset -c 0)

echo "== $model, batch 64 per rank, 1 thread per rank, 2 ranks over TCP (--mca btl self,tcp); rates: ${rates[*]};" \
     "reductions: ${buckets[*]}; $reps round(s) of $steps steps x 2 epochs"
if [ "${BENCH:-1}" != 0 ]; then
  for r in "${rates[@]}"; do
    echo "== bench_allreduce at $r"
    run "bench at $r" "$out/bench-$r.log" capped "$r" "${mpi[@]}" "$bench" --case_time=0.2 \
      '--benchmark_filter=BM_I?[Aa]llreduce/(4|1024|4096|16384|65536|262144|1048576|2097152)/' \
      --benchmark_out="$out/bench-$r.json" --benchmark_out_format=json
  done
fi
for ((round = 0; round < reps; round++)); do
  echo "== round $((round + 1)): alone (1 rank), then each rate x reduction"
  run alone "$out/r$round-alone.log" "${pin0[@]}" "$dtnn" train "${recipe[@]}" --report="$out/r$round-alone.json"
  for r in "${rates[@]}"; do
    for b in "${buckets[@]}"; do
      name="r$round-$r-$b"
      opts=(--non_blocking_mpi=False)
      [ "$b" = blocking ] || opts=(--non_blocking_mpi=True --gradient_bucket_mb="${b%%:*}")
      [[ "$b" != *:* ]] || opts+=(--gradient_buckets_min="${b#*:}")
      run "$r $b" "$out/$name.log" capped "$r" "${mpi[@]}" "$dtnn" train "${recipe[@]}" --parallel=data "${opts[@]}" \
        --report="$out/$name.json"
      if [ -s "$out/bench-$r.json" ]; then
        mode=blocking op=allreduce
        [ "$b" = blocking ] || mode=non_blocking op=iallreduce
        "$dtnn" predict --from-report "$out/$name.json" --platform localhost2_tcp --fit-collectives "$out/bench-$r.json" \
          --fit-op "$op" --ranks 2 --mode "$mode" --json > "$out/$name.pred.json" 2> "$out/$name.pred.log" ||
          { echo "$me: no prediction for $name (log: $out/$name.pred.log)" >&2; rm -f "$out/$name.pred.json"; }
      fi
    done
  done
done
python3 experiments/shaped_link.py "$out" "$reps" "${rates[*]}" "${buckets[*]}"
