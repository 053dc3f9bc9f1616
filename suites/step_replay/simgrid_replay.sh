#!/usr/bin/env bash
# simgrid_replay.sh PROFILE PLATFORM RANKS... [-- PROXY_ARGS...]
#
# The performance model's independent check: the step replay proxy (suites/step_replay, built as
# step_replay_smpi.so by the step_replay_smpi target) run under SimGrid's smpirun on PLATFORM
# (suites/step_replay/platforms/*.xml) for each rank count, one rank per host, and a table of what one training step of
# PROFILE (a dtnn.step_profile/1) costs:
#
#   ranks  step ms  compute ms  exposed ms  efficiency  sim wall s
#
# step: the slowest rank's step, median over the steps; compute / exposed: the median rank's (the trainer's
# definitions: exposed = communication after the rank's own backward pass); efficiency: against the 1-rank run
# (run first even when RANKS lacks 1): weak scaling step(1) / step(p), or with --global-batch among PROXY_ARGS
# (strong scaling) step(1) / (p step(p)); sim wall s: how long smpirun took on this machine.
#
# Simulator flags (why): smpi/coll-selector:ompi (blocking collectives pick Open MPI 4.1's algorithms);
# smpi/simulate-computation:no (only the profile's compute is simulated, not the proxy's own CPU time);
# smpi/host-speed:1Gf (as the platforms' hosts: smpi_execute's seconds stay seconds; the proxy's
# smpi_execute_benched does regardless); smpi/test:0 and smpi/wtime:0 (SimGrid would otherwise add 100 us of
# simulated time to every MPI_Test, growing while tests fail, and 10 ns to every MPI_Wtime; the trainer tests
# once per layer); -no-privatize (the proxy has no mutable globals, so one copy of the .so serves every rank:
# quicker to start than 256 copies); smpi/shared-malloc-blocksize:256 MiB (the proxy's SMPI_SHARED_MALLOC buffers
# are mapped block by block: with the default 1 MiB, vgg16's 553 MB of gradients on 64 ranks exceed the kernel's
# 65,530 mappings); root.thresh:warning except the timing line. The network model itself
# (nominal latency + size / bandwidth) is in each platform's <config>.
#
# PREDICTION_JSON=FILE also writes the table as a dtnn.prediction/1 document with "source": "simgrid" (what
# `dtnn predict --json` prints, so `dtnn predict --from-simgrid FILE --store` keeps it in the store beside the
# model's rows, calibrated from the profile's source_run).
#
# Environment: STEP_REPLAY_SMPI (the proxy; default build/suites/step_replay_smpi.so), STEPS (10), WARMUP (2),
# SIMGRID_CFG (extra --cfg=... words, e.g. to restore SimGrid's calibrated factors), KEEP=1 keeps the per-run
# JSON and logs (their directory is printed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { echo "usage: simgrid_replay.sh PROFILE PLATFORM RANKS... [-- PROXY_ARGS...]" >&2; exit 2; }
[ $# -ge 3 ] || usage
profile=$(realpath "$1") platform=$(realpath "$2")
shift 2
ranks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  [[ $1 =~ ^[1-9][0-9]*$ ]] || { echo "simgrid_replay.sh: '$1' is not a rank count" >&2; usage; }
  ranks+=("$1")
  shift
done
[ ${#ranks[@]} -gt 0 ] || usage
[ $# -gt 0 ] && shift  # the --
proxy_args=("$@")
proxy=$(realpath "${STEP_REPLAY_SMPI:-$here/../../build/suites/step_replay_smpi.so}")
command -v smpirun > /dev/null || { echo "simgrid_replay.sh: smpirun not found (Debian: apt-get install libsimgrid-dev)" >&2; exit 1; }
[ -f "$proxy" ] || { echo "simgrid_replay.sh: $proxy not built (ninja -C build step_replay_smpi)" >&2; exit 1; }
strong=0
for a in "${proxy_args[@]}"; do [ "$a" = "--global-batch" ] && strong=1; done
[[ " ${ranks[*]} " == *" 1 "* ]] || ranks=(1 "${ranks[@]}")

work=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then echo "simgrid_replay.sh: runs kept in $work"; else trap 'rm -rf "$work"' EXIT; fi
# shellcheck disable=SC2206  # SIMGRID_CFG is a list of words
flags=(--cfg=smpi/coll-selector:ompi --cfg=smpi/simulate-computation:no --cfg=smpi/host-speed:1Gf
       --cfg=smpi/test:0 --cfg=smpi/wtime:0 --cfg=smpi/shared-malloc-blocksize:268435456
       --cfg=smpi/display-timing:yes
       --log=root.thresh:warning --log=smpi_utils.thresh:info ${SIMGRID_CFG:-})

echo "profile $profile"
echo "platform $platform; proxy args: ${proxy_args[*]:-(none)}; ${STEPS:-10} steps after ${WARMUP:-2}"
printf "%6s %11s %11s %11s %11s %11s\n" ranks "step ms" "compute ms" "exposed ms" efficiency "sim wall s"
base=""
for p in "${ranks[@]}"; do
  "$here/platforms/hostfile.sh" "$p" > "$work/hosts.$p"
  t0=$(date +%s.%N)
  # smpirun leaves temporaries in its working directory on failure: run it in $work.
  if ! (cd "$work" && smpirun -no-privatize -np "$p" -platform "$platform" -hostfile "$work/hosts.$p" "${flags[@]}" \
          "$proxy" "$profile" --steps "${STEPS:-10}" --warmup "${WARMUP:-2}" --json "$work/run.$p.json" \
          "${proxy_args[@]}") > "$work/log.$p" 2>&1; then
    echo "simgrid_replay.sh: smpirun failed for $p ranks:" >&2
    tail -n 20 "$work/log.$p" >&2
    exit 1
  fi
  t1=$(date +%s.%N)
  read -r step compute exposed < <(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
print(j["step_s"], j["compute_s"], j["exposed_s"])' "$work/run.$p.json")
  [ -n "$base" ] || base=$step
  python3 -c 'import sys
p, step, compute, exposed, base, strong, t0, t1 = sys.argv[1:]
wall = float(t1) - float(t0)
p, step, base = int(p), float(step), float(base)
eff = base / step / (p if strong == "1" else 1)
print("%6d %11.3f %11.3f %11.3f %11.3f %11.2f" % (p, step * 1e3, float(compute) * 1e3, float(exposed) * 1e3, eff, wall))' \
    "$p" "$step" "$compute" "$exposed" "$base" "$strong" "$t0" "$t1"
done
if [ -n "${PREDICTION_JSON:-}" ]; then
  python3 - "$PREDICTION_JSON" "$profile" "$platform" "$work" "$strong" "$(smpirun -version 2>&1 | head -n 1)" \
      "${proxy_args[*]:-}" "${ranks[@]}" <<'PY'
import json, os, sys
out, profile_path, platform, work, strong, version, args = sys.argv[1:8]
ranks = [int(r) for r in sys.argv[8:]]
profile = json.load(open(profile_path))
words = args.split()
def arg(name, default):
    return words[words.index(name) + 1] if name in words[:-1] else default
mode = arg("--mode", profile["mode"])
batch = profile["batch_size"]
global_batch = float(arg("--global-batch", batch))
runs = {p: json.load(open(f"{work}/run.{p}.json")) for p in ranks}
base = runs[1]["step_s"]
rows = []
for p in ranks:
    r = runs[p]
    per_rank = global_batch / p if strong == "1" else batch
    eff = base / r["step_s"] / (p if strong == "1" else 1)
    rows.append({"ranks": p, "samples_per_rank": per_rank, "step_s": r["step_s"], "compute_s": r["compute_s"],
                 "exposed_s": r["exposed_s"], "comm_s": r["comm_s"], "samples_per_s": p * per_rank / r["step_s"],
                 "efficiency": eff,
                 "allreduce": "-" if p == 1 else ("smpi ompi selector" if mode == "blocking" else "nbc " + r["nbc"])})
preset = os.path.basename(platform).removesuffix(".xml")
preset = {"ib100_fattree": "ib100"}.get(preset, preset)  # the file of the ib100 preset
doc = {"schema": "dtnn.prediction/1", "source": "simgrid",
       "model_version": "suites/step_replay under " + version.strip(), "model_kind": "dtnn",
       "model": profile["model"], "batch_size": batch, "mode": mode, "scaling": "strong" if strong == "1" else "weak",
       # The replay runs Open MPI 4.1's choices (SMPI's ompi selector; libnbc's binomial schedule, nbc_binomial.h),
       # on the platform a preset describes: named as the model's rows, so their curves line up.
       "rules": "ompi41",
       "platform": {"name": preset, "file": platform},
       "rows": rows, "notes": [f"SimGrid SMPI replay of {profile_path}, median of the steps after the warm-up"]}
if "source_run" in profile:
    doc["source_run"] = profile["source_run"]
with open(out, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
PY
fi
