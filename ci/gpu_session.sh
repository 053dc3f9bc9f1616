#!/usr/bin/env bash
# The checks that need a GPU, most important first, in ONE device call. A task lent a GPU machine gets
# 15 minutes of device time in all (start, idle and every call counted): a start takes 1-2 minutes, so one call
# of at most DEADLINE seconds (default 420) leaves time to rerun a part that broke.
# Built on the part scripts (ci/gpu_distributed.sh, ci/gpu_d2l.sh), each part cut to fit:
#
#   1 tests      the [gpu] test cases; test_mpi_gpu on 2 ranks sharing the GPU (MPI-staged device allreduce,
#                synchronised BN, the bucketed reduction bit for bit against blocking; NCCL's 2-rank case
#                skips: NCCL needs a GPU per rank, and at 1 rank there is nothing to reduce)
#   2 buckets    2 ranks on the GPU, blocking vs 25 MiB buckets vs one per layer, resnet50 and vgg16,
#                3 epochs of STEPS_BUCKETS (10) steps: the communication table of each run
#   3 d2l        d2l's ResNet-18, the full 10 epochs on one GPU (the matrix's dtnn GPU trial, stored and
#                checked against the chapter's target): accuracy and seconds per epoch
#   4 uneven     one GPU rank beside 2 CPU ranks x 7 threads, global batch 512: GPU alone, even and auto
#                shares, 2 epochs of STEPS_UNEVEN (10) steps
#   5 d2l_torch  the PyTorch reference's d2l trial on the GPU (python3 with CUDA PyTorch)
#   6 timelines  resnet20 traced vs untraced (REPS 2) and the 2-rank non-blocking trace
#   7 ceiling    the 16 CPU cores: N independent 1-rank runs at once against N ranks (N = 4, 8, 16;
#                experiments/contention_ceiling.sh), simplecnn and resnet20: the machine's share of the scaling loss
# A part starts only if its minimum fits before DEADLINE; one cut at its limit or never started is named in
# the summary, so the next lent session knows where to go on (PARTS="4 5 6" runs those alone).
#
#   ci/gpu_session.sh BUNDLE_DIR OUT_DIR        (bundle: `BUNDLE_MPI=ON ci/gpu_bundle.sh`; carry the bundle
#                                              and .gpu_data, whose fashion-mnist/ the d2l parts read)
# Give the device call timeout_s of at least DEADLINE + 60 (480 by default): a script stopped from outside
# stops its running part (trap below), but one killed outright leaves it running into the next call.
# OUT_DIR gets two files, whatever happens: summary.txt (each part's summary as it ends) and session.tgz
# (every part's logs, reports and databases; rewritten after each part). The device tool returns at most 8.
# A dry run on a CPU machine tests the plumbing (the d2l parts skip their matrix; buckets and uneven train
# resnet50 and ResNet-18 on 2 cores and are cut at their limits, as they should be):
#   GPU_FLAG=--enable_gpu=False DEADLINE=900 STEPS_BUCKETS=2 STEPS_UNEVEN=2 REPS=1 CPU_RANKS=1 CPU_THREADS=1 \
#     ci/gpu_session.sh .gpu_bundle /tmp/dry
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bundle="${1:?usage: ci/gpu_session.sh BUNDLE_DIR OUT_DIR}"
out="${2:?usage: ci/gpu_session.sh BUNDLE_DIR OUT_DIR}"
deadline="${DEADLINE:-420}"
parts="${PARTS:-1 2 3 4 5 6 7}"
for p in $parts; do
  case "$p" in 1|2|3|4|5|6|7) ;; *) echo "ci/gpu_session.sh: unknown part '$p' (1-7)" >&2; exit 2 ;; esac
done
[ -x "$bundle/experiments/dtnn" ] || { echo "ci/gpu_session.sh: no $bundle/experiments/dtnn (make it with BUNDLE_MPI=ON ci/gpu_bundle.sh)" >&2; exit 2; }
mkdir -p "$out"
work="$(mktemp -d)"
summary="$out/summary.txt"
: > "$summary"
start=$SECONDS
# Preflight, in seconds rather than a lease's minutes: the bundle's binaries must load (Open MPI comes from
# the image: an image without it fails every part), and the tools the part cuts use must be there.
for f in experiments/dtnn tests/dtnn_tests tests/test_mpi_gpu suites/bench_allreduce; do
  [ -x "$bundle/$f" ] || { echo "ci/gpu_session.sh: no $bundle/$f (make the bundle with BUNDLE_MPI=ON ci/gpu_bundle.sh)" | tee -a "$summary"; exit 2; }
done
missing="$( (. ci/gpu_env.sh && ldd "$bundle/experiments/dtnn" "$bundle/tests/dtnn_tests" "$bundle/tests/test_mpi_gpu" \
  "$bundle/suites/bench_allreduce") 2> /dev/null | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')"  # with the parts' library path
{
  echo "== preflight: repository at $PWD; mpirun: $(command -v mpirun || echo MISSING); setsid: $(command -v setsid || echo MISSING)"
  [ -z "$missing" ] || echo "== preflight: libraries the bundle's binaries cannot find: $missing"
} | tee -a "$summary"
command -v setsid > /dev/null || { echo "ci/gpu_session.sh: setsid is missing: parts could not be cut at their limits" | tee -a "$summary"; exit 2; }
machine_shown=0

# kill_session SIGNAL SID: every process of session SID, read from /proc (procps' pkill may not be on the
# image). Field 6 of /proc/PID/stat is the session; the fields are counted after the command's ")", since a
# command name may hold spaces.
kill_session() {
  local p rest
  for p in /proc/[0-9]*; do
    rest="$(sed 's/^.*) //' "$p/stat" 2> /dev/null)" || continue
    [ "$(echo "$rest" | cut -d' ' -f4)" = "$2" ] && kill "-$1" "${p#/proc/}" 2> /dev/null
  done
  return 0
}
# The device tool kills what a call leaves running when it returns, except a new session (setsid): a part
# running when this script is stopped (the call's timeout_s, which should be DEADLINE + 60 or more) would go
# on into the next call's timings. So whatever stops this script stops the running part too.
running_sid=""
trap '[ -z "$running_sid" ] || kill_session KILL "$running_sid"' EXIT
trap 'exit 143' TERM INT

# The parts, each a function of its output folder (exported: `timeout` runs them in a child bash); PART_S is
# the part's time limit (the matrix runs stop 20 s before it, so their summaries still print).
export bundle
p_tests() { bash ci/gpu_distributed.sh "$bundle" "$1" gpu_tests; }
p_buckets() { STEPS="${STEPS_BUCKETS:-10}" bash ci/gpu_distributed.sh "$bundle" "$1" buckets; }
p_d2l() { MATRIX_ONLY="framework=dtnn ranks=1" MATRIX_TIMEOUT=$((PART_S - 20)) bash ci/gpu_d2l.sh "$bundle" "$1" matrix; }
p_uneven() { EPOCHS=2 STEPS="${STEPS_UNEVEN:-10}" bash ci/gpu_d2l.sh "$bundle" "$1" uneven; }
p_d2l_torch() { MATRIX_ONLY="framework=pytorch" MATRIX_TIMEOUT=$((PART_S - 20)) bash ci/gpu_d2l.sh "$bundle" "$1" matrix; }
p_timelines() { REPS="${REPS:-2}" STEPS=30 bash ci/gpu_distributed.sh "$bundle" "$1" timelines; }
p_ceiling() { REPS=1 STEPS="${STEPS_CEILING:-}" bash ci/gpu_distributed.sh "$bundle" "$1" ceiling; }
export -f p_tests p_buckets p_d2l p_uneven p_d2l_torch p_timelines p_ceiling

# part NUMBER NAME MIN_S MAX_S: runs p_NAME into $work/NAME if at least MIN_S are left before the deadline,
# under `timeout` of MAX_S or what is left, whichever is less (a cut part keeps what it wrote: each part
# script tees its summaries as it goes); appends its summary files and rc to summary.txt, re-packs session.tgz.
# RESERVE_S (optional): seconds kept for a later, more important part (its minimum) that is to run: the budget
# shrinks to leave them, never below MIN_S (slow tests and buckets must not starve d2l's 10 epochs).
part() {
  local num="$1" name="$2" min="$3" max="$4" reserve="${5:-0}"
  case " $parts " in *" $num "*) ;; *) return 0 ;; esac
  local left=$((deadline - (SECONDS - start)))
  if [ "$min" -gt "$left" ]; then
    echo "== part $num $name: NOT RUN (needs at least $min s, $left s left before DEADLINE=$deadline)" | tee -a "$summary"
    return 0
  fi
  local budget=$((max < left ? max : left))
  if [ "$reserve" -gt 0 ] && [ $((left - reserve)) -lt "$budget" ]; then
    budget=$((left - reserve > min ? left - reserve : min))
  fi
  mkdir -p "$work/$name"
  local t0=$SECONDS
  echo "== part $num $name (up to $budget s, from $((SECONDS - start)) s)" | tee -a "$summary"
  # The part runs as a session of its own, and at its limit every process of that session is stopped: the
  # part scripts' own `timeout`s put their runs in process groups of their own, which a `timeout` around the
  # part would not reach (a cut 2-rank GPU run would go on into the next part's timings).
  PART_S=$budget setsid bash -c "p_$name \"\$1\"" _ "$work/$name" > "$work/$name.log" 2>&1 &
  local pid=$! rc
  running_sid=$pid
  while kill -0 "$pid" 2> /dev/null && [ $((SECONDS - t0)) -lt "$budget" ]; do sleep 1; done
  if kill -0 "$pid" 2> /dev/null; then
    rc=124
    kill_session TERM "$pid"  # the runner stores a cut trial interrupted; mpirun passes it to its ranks
    sleep 10
    kill_session KILL "$pid"
    wait "$pid" 2> /dev/null
  else
    wait "$pid"
    rc=$?
  fi
  kill_session KILL "$pid"  # whatever a finished part left behind
  running_sid=""
  for f in "$work/$name"/*.txt; do
    [ -f "$f" ] || continue
    if [ "$(basename "$f")" = machine.txt ]; then  # the machine's description once, from the first part run
      [ "$machine_shown" = 1 ] && continue
      machine_shown=1
    fi
    echo "-- $(basename "$f")"
    cat "$f"
  done >> "$summary"
  echo "part $num $name: rc $rc$([ $rc -eq 124 ] && echo ' (CUT at its time limit)') in $((SECONDS - t0)) s" | tee -a "$summary"
  tar czf "$out/session.tgz" -C "$work" . 2>/dev/null
}

# Expected on an H100 (rates of results/baselines/gpu_h100.md: resnet50 909 samples/s in FP32, i.e. ~22
# TFLOP/s; d2l's ResNet-18 2.7 GFLOP a training sample, 1.6 PFLOP for 10 epochs: ~75 s at that rate, ~125 s at
# 13 TFLOP/s, and 28x28 maps use the GPU less well than ImageNet's): tests ~45 s, buckets ~60 s, d2l ~100-150 s,
# uneven ~60 s, d2l_torch ~100 s, timelines ~60 s. The minimums are what makes a part's figures whole (d2l: the
# 10 epochs). That is over DEADLINE: part 5 (PyTorch's d2l run, minimum 150 s) will usually need a second call,
# PARTS="5 6", made at once while the machine is warm (30 s), with timeout_s about 300.
part 1 tests 60 150
# Parts 1 and 2 at their maxima (290 s) would leave d2l less than its minimum: part 2 keeps d2l's 200 s.
part 2 buckets 60 140 "$(case " $parts " in *" 3 "*) echo 200 ;; *) echo 0 ;; esac)"
part 3 d2l 180 240
part 4 uneven 60 150
part 5 d2l_torch 150 240
part 6 timelines 60 150
# CPU only, least important: runs when the GPU parts left time (about 150 s on a lent 16-core Xeon).
part 7 ceiling 60 200
echo "ci/gpu_session.sh: done in $((SECONDS - start)) s of DEADLINE=$deadline; files: $(ls "$out" | tr '\n' ' ')" | tee -a "$summary"
exit 0
