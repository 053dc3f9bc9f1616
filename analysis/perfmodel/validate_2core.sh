#!/usr/bin/env bash
# The model against measured dtnn steps at 1-2 ranks on this machine ("model vs measured dtnn").
#
# For each model: one run at 1 rank with 1 thread (the profile for predicting 2 ranks from one), then
# 2 ranks (1 thread each) blocking and non-blocking over shared memory and over TCP (--mca btl self,tcp).
# Each 2-rank run is predicted twice: from its own report (the layer times measured in that run: checks the
# communication model and the schedule) and from the 1-rank run's (checks predicting scaling from one rank;
# on 2 vCPUs two ranks also slow each other's compute, which that prediction cannot know).
# Measured step = the report's communication rank0 step_s / steps (begin_step to the end of the update).
# Each 2-rank run is also replayed by the step-replay proxy (suites/step_replay, the program SimGrid runs) under
# the same mpirun and transport, from the run's own profile: the proxy against dtnn (its step: the median over
# STEPS_PROXY steps, default 20, of the slowest rank's; non-blocking sums through the library's MPI_Iallreduce).
#
# The VM is shared, and two ranks on its two vCPUs stall each other whenever anything else runs (a rank
# descheduled for a few ms makes the other wait in the sum). So each run starts once both CPUs were >= 95 %
# idle for a second (at most QUIET_WAIT s, default 300, of waiting), runs REPS times (default 3), and of the
# runs during which other processes used the least CPU (within 0.05 CPU of the least) the median step is the
# one compared (stderr lists every run's step and the CPUs others used, in CPU-seconds per second).
#
# Usage: [STEP_REPLAY=build/suites/step_replay] validate_2core.sh DTNN_BINARY OUT_DIR [MODEL[@TRAIN_ARG,...]...]
#   (default: simplecnn resnet20_cifar10; e.g. resnet20_cifar10@--gradient_bucket_mb=0.1 adds train options)
# Prints a markdown table; keeps the reports and profiles in OUT_DIR.
set -euo pipefail
dtnn=$1 out=$2
shift 2
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(simplecnn resnet20_cifar10)
mkdir -p "$out"
proxy=${STEP_REPLAY:-$(dirname "$dtnn")/../suites/step_replay}
[ -x "$proxy" ] || { echo "validate_2core.sh: $proxy not built (ninja -C build step_replay)" >&2; exit 1; }
steps_of() { case $1 in simplecnn | simplemlp) echo 60 ;; *) echo 20 ;; esac; }
dataset_of() { case $1 in simplecnn | simplemlp) echo mnist ;; *) echo cifar10 ;; esac; }

idle_pct() {  # percentage of idle CPU time over one second
  local a b
  a=$(awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
  sleep 1
  b=$(awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN{split(a,x," "); split(b,y," "); print int(100*(y[1]-x[1])/(y[2]-x[2]))}'
}
quiet() {
  local waited=0
  while [ "$(idle_pct)" -lt 95 ] && [ $waited -lt "${QUIET_WAIT:-300}" ]; do waited=$((waited + 1)); done
}

# Runs a command and prints the CPU-seconds per wall second that OTHER processes used meanwhile (the machine's
# busy time from /proc/stat less the command's own user + system time).
run_measuring_others() {
  python3 - "$@" <<'PY'
import os, resource, subprocess, sys, time
def busy():
    f = open("/proc/stat").readline().split()[1:9]
    v = list(map(int, f)); return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")
b0, t0 = busy(), time.time()
with open(sys.argv[1], "w") as log:
    rc = subprocess.run(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT).returncode
b1, t1 = busy(), time.time()
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{max(0.0, (b1 - b0) - r.ru_utime - r.ru_stime) / (t1 - t0):.3f}")
sys.exit(rc)
PY
}

train() {  # name ranks extra-mpirun-args train-args...: REPS runs; the one others disturbed least is name.json
  local name=$1 ranks=$2 mca=$3 rep
  shift 3
  for rep in $(seq 1 "${REPS:-3}"); do
    quiet
    if [ "$ranks" = 1 ]; then
      run_measuring_others "$out/$name.rep$rep.log" "$dtnn" train "$@" --report="$out/$name.rep$rep.json" \
        > "$out/$name.rep$rep.others"
    else
      # shellcheck disable=SC2086
      run_measuring_others "$out/$name.rep$rep.log" mpirun -np "$ranks" --oversubscribe --allow-run-as-root $mca \
        "$dtnn" train --parallel=data "$@" --report="$out/$name.rep$rep.json" > "$out/$name.rep$rep.others"
    fi
  done
  python3 - "$out" "$name" "${REPS:-3}" <<'PY'
import json, shutil, sys
out, name, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
def step(path):
    r = json.load(open(path)); s = n = 0
    for e in r["epochs"]:
        c = e.get("communication")
        if c: s += c["rank0"]["step_s"]; n += c["steps"]
    return s / n
runs = [(float(open(f"{out}/{name}.rep{i}.others").read()), step(f"{out}/{name}.rep{i}.json"), i) for i in range(1, reps + 1)]
print(name, "| step ms (CPUs used by others):", ", ".join(f"{s * 1e3:.2f} ({o:.2f})" for o, s, _ in runs), file=sys.stderr)
quiet = sorted((s, i) for o, s, i in runs if o <= min(runs)[0] + 0.05)
shutil.copy(f"{out}/{name}.rep{quiet[(len(quiet) - 1) // 2][1]}.json", f"{out}/{name}.json")
PY
}

predict() {  # report platform ranks mode -> "predicted_step_s measured_step_s"
  "$dtnn" predict --from-report "$1" --platform "$2" --ranks "$3" --mode "$4" --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["rows"][0]["step_s"], d["rows"][0]["exposed_s"], d["rows"][0]["allreduce"])'
}

measured() {  # report -> "step_s exposed_s"
  python3 -c 'import json,sys
r = json.load(open(sys.argv[1])); st = ex = n = 0
for e in r["epochs"]:
    c = e.get("communication")
    if c: st += c["rank0"]["step_s"]; ex += c["rank0"]["exposed_s"]; n += c["steps"]
print(st / n, ex / n)' "$1"
}

replay() {  # profile ranks mca mode -> the proxy's "step_s exposed_s" (quiet CPUs first, as the runs)
  local json=${1%.json}.replay.json
  quiet
  # shellcheck disable=SC2086
  mpirun -np "$2" --oversubscribe --allow-run-as-root $3 "$proxy" "$1" --steps "${STEPS_PROXY:-20}" --warmup 3 \
    --mode "$4" --json "$json" > "${json%.json}.log" 2>&1
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["step_s"], j["exposed_s"])' "$json"
}

echo "| model | run | measured step ms | measured exposed ms | predicted (own profile) ms | error | predicted exposed ms | predicted (1-rank profile) ms | error | proxy (own profile) ms | error | allreduce |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for spec in "${models[@]}"; do
  m=${spec%%@*} extra=() label=$m
  if [ "$spec" != "$m" ]; then
    IFS=, read -r -a extra <<< "${spec#*@}"
    label="$m ${extra[*]}"
  fi
  common=(--model="$m" --dataset="$(dataset_of "$m")" --use_synthetic_data=True --steps_per_epoch="$(steps_of "$m")"
          --num_epochs=1 --evaluate_on_test=False --progress=False --threads=1 "${extra[@]}")
  tag=$(echo "$spec" | tr -c 'A-Za-z0-9_.\n' '_')
  train "$tag.1rank" 1 "" "${common[@]}"
  read -r ms me < <(measured "$out/$tag.1rank.json")
  read -r ps pe alg < <(predict "$out/$tag.1rank.json" localhost2 1 blocking)
  python3 -c "import sys; ms,me,ps=map(float,sys.argv[1:4]); print(f'| $label | 1 rank, 1 thread | {ms*1e3:.2f} | {me*1e3:.2f} | {ps*1e3:.2f} | {(ps-ms)/ms*100:+.1f} % | - | - | - | - | - | - |')" "$ms" "$me" "$ps"
  profile="$out/$tag.1rank.profile.json"
  "$dtnn" predict --from-report "$out/$tag.1rank.json" --ranks 1 --platform localhost2 --write-profile "$profile" > /dev/null
  for transport in shm tcp; do
    mca="" platform=localhost2
    if [ $transport = tcp ]; then mca="--mca btl self,tcp" platform=localhost2_tcp; fi
    for mode in blocking non_blocking; do
      nb=False
      [ $mode = non_blocking ] && nb=True
      name="$tag.2rank.$transport.$mode"
      train "$name" 2 "$mca" "${common[@]}" --non_blocking_mpi=$nb
      read -r ms me < <(measured "$out/$name.json")
      read -r ps pe alg < <(predict "$out/$name.json" $platform 2 $mode)
      read -r qs qe qalg < <("$dtnn" predict --profile "$profile" --platform $platform --ranks 2 --mode $mode --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["rows"][0]["step_s"], d["rows"][0]["exposed_s"], d["rows"][0]["allreduce"])')
      "$dtnn" predict --from-report "$out/$name.json" --ranks 2 --platform $platform --write-profile "$out/$name.profile.json" > /dev/null
      read -r rs re < <(replay "$out/$name.profile.json" 2 "$mca" $mode)
      python3 -c "import sys; ms,me,ps,qs,pe,rs=map(float,sys.argv[1:7]); print(f'| $label | 2 ranks, $transport, $mode | {ms*1e3:.2f} | {me*1e3:.2f} | {ps*1e3:.2f} | {(ps-ms)/ms*100:+.1f} % | {pe*1e3:.2f} | {qs*1e3:.2f} | {(qs-ms)/ms*100:+.1f} % | {rs*1e3:.2f} | {(rs-ms)/ms*100:+.1f} % | $alg |')" "$ms" "$me" "$ps" "$qs" "$pe" "$rs"
    done
  done
done
