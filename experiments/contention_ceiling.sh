#!/usr/bin/env bash
# How much of a data-parallel speed-up the machine itself allows. Runs, one after the other:
#   alone        one 1-rank x 1-thread training, pinned to core 0;
#   independent  N copies of it at once, each pinned to its own core, no MPI between them;
#   data         the same recipe on N MPI ranks (--parallel=data, weak scaling: the batch is per rank).
# The independent copies do all of the data-parallel run's work except its communication, on the same cores,
# sharing the same caches and memory bandwidth: their summed throughput over the alone run is the CEILING, the
# speed-up an N-rank run would reach with free communication. The data-parallel speed-up over the ceiling is
# the part of the loss that is distribution (communication, waiting for the slowest rank); ceiling below N is
# the part that is the machine (shared L3 and memory, co-tenants, clock). Every run traces steps 5-304 (a few
# events per layer, the same cost for each kind of run): the copies' step times, aligned by step, give the step
# jitter (how much later than the mean the slowest of N ends a step), which the data-parallel ranks pay at every
# sum and dtnn predict models. The report of the data-parallel run
# says how its step splits into compute and exposed communication (median rank), so the table also shows
# how fast each rank computes against a copy (the machine's share, measured inside the data-parallel run).
#
#   experiments/contention_ceiling.sh [RANKS] [EPOCHS] [MODEL] [DATA]
#   defaults: 2 ranks, 3 epochs, simplecnn, /usr/share/datasets/fashion-mnist; DATA=synthetic uses
#   --use_synthetic_data=True. Samples: epochs 2.. (epoch 1 is warm-up) of each run; with EPOCHS=1, epoch 1.
#   Environment: DATASET (default mnist; cifar10 for the CIFAR models), EXTRA (more dtnn options, e.g.
#   "--steps_per_epoch=30"), REPS (rounds of the three runs, alternating: 1; medians pool the rounds),
#   MPI_ARGS (more mpirun options, e.g. "--mca btl self,tcp"), DTNN_BUILD_DIR (build), KEEP (a folder to keep the reports and logs in),
#   STORE_DB (a results store: the ceiling is stored there with `dtnn ingest` of the dtnn.contention_ceiling/1 file
#   it writes, and `dtnn predict --db STORE_DB` applies it to this machine's profiles of MODEL on localhost platforms).
# With RANKS above the cores, nothing is pinned (`--bind-to none --oversubscribe`) and the ceiling says what
# oversubscription costs. Run it alone on the machine: any other load distorts the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="${1:-2}"
epochs="${2:-3}"
model="${3:-simplecnn}"
data="${4:-/usr/share/datasets/fashion-mnist}"
dataset="${DATASET:-mnist}"
dtnn="${DTNN_BUILD_DIR:-build}/experiments/dtnn"
fail() { echo "experiments/contention_ceiling.sh: $*" >&2; exit 2; }     # refused arguments
die() { echo "experiments/contention_ceiling.sh: $*" >&2; exit 1; }      # a run that failed
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || fail "RANKS must be a positive integer, not '$ranks'"
[[ "$epochs" =~ ^[1-9][0-9]*$ ]] || fail "EPOCHS must be a positive integer, not '$epochs'"
reps="${REPS:-1}"
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || fail "REPS must be a positive integer, not '$reps'"
[ -x "$dtnn" ] || fail "no $dtnn (build first, or set DTNN_BUILD_DIR)"
command -v mpirun > /dev/null || fail "no mpirun on PATH"
if [ "$data" = synthetic ]; then
  data_opts=(--use_synthetic_data=True)
else
  [ -d "$data" ] || fail "no data folder '$data' (or DATA=synthetic)"
  data_opts=(--dataset_train_path="$data")
fi
out="${KEEP:-$(mktemp -d)}"
mkdir -p "$out"
cores="$(nproc)"
read -r -a extra <<< "${EXTRA:-}"
read -r -a mpi_args <<< "${MPI_ARGS:-}"
recipe=(--model="$model" --dataset="$dataset" "${data_opts[@]}" --optimizer=adam --learning_rate=0.001
        --batch_size=64 --num_epochs="$epochs" --threads=1 --seed=0 --progress=false --evaluate_on_test=false
        --tracing=True --trace_steps=5..304 "${extra[@]}")  # training throughput only: no test pass after training
mpi_flags=()
[ "$(id -u)" -eq 0 ] && mpi_flags+=(--allow-run-as-root)
# Pinned as Open MPI pins 2 ranks (a core each), so that copies and ranks see the same placement.
if [ "$ranks" -le "$cores" ] && command -v taskset > /dev/null; then
  pin() { local core="$1"; shift; taskset -c "$core" "$@"; }
  mpi_flags+=(--bind-to core)
  placement="pinned, one core each"
else
  pin() { shift; "$@"; }
  mpi_flags+=(--bind-to none --oversubscribe)
  placement="not pinned ($ranks processes on $cores cores$(command -v taskset > /dev/null || echo ', no taskset'))"
fi
export OMP_NUM_THREADS=1

run() {  # label log command...: runs it; when it fails, prints the log's tail and exits 2
  local label="$1" log="$2"; shift 2
  if ! "$@" > "$log" 2>&1; then
    tail -5 "$log" >&2
    die "the $label run failed (log: $log)"
  fi
}
echo "== $model, $epochs epochs, batch 64 per rank, 1 thread per process, $ranks processes: $placement; $reps round(s)"
for ((r = 0; r < reps; r++)); do
  echo "== round $((r + 1)): alone (1 rank), independent ($ranks copies at once), data ($ranks ranks${MPI_ARGS:+, mpirun $MPI_ARGS})"
  run alone "$out/r$r-alone.log" pin 0 "$dtnn" train "${recipe[@]}" --report="$out/r$r-alone.json" \
    --tracer_output="$out/r$r-alone.trace.json"
  pids=()
  for ((i = 0; i < ranks; i++)); do
    pin $((i % cores)) "$dtnn" train "${recipe[@]}" --report="$out/r$r-copy$i.json" \
      --tracer_output="$out/r$r-copy$i.trace.json" > "$out/r$r-copy$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { tail -5 "$out/r$r-copy$i.log" >&2; die "copy $i failed (log: $out/r$r-copy$i.log)"; }
  done
  run data "$out/r$r-data.log" mpirun -np "$ranks" "${mpi_flags[@]}" "${mpi_args[@]}" -x OMP_NUM_THREADS \
    "$dtnn" train "${recipe[@]}" --parallel=data --report="$out/r$r-data.json" --tracer_output="$out/r$r-data.trace.json"
done

if [ -n "${STORE_DB:-}" ]; then
  python3 experiments/contention_ceiling.py "$out" "$ranks" "$epochs" "$reps" "$out/ceiling.json"
  "$dtnn" ingest "$out/ceiling.json" --db "$STORE_DB" || die "storing the ceiling in $STORE_DB failed"
else
  python3 experiments/contention_ceiling.py "$out" "$ranks" "$epochs" "$reps"
fi
[ -n "${KEEP:-}" ] || rm -rf "$out"
