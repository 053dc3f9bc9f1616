#!/usr/bin/env bash
# validate_simgrid.sh DTNN PROFILE... : the analytic model against SimGrid ("model vs SimGrid").
#
# For each step profile (dtnn.step_profile/1, e.g. suites/step_replay/profiles/*.json) x platform x mode x rank
# count: `dtnn predict --json` and the step replay under SimGrid (suites/step_replay/simgrid_replay.sh), one markdown table
#
#   model | platform | mode | ranks | model step ms | SimGrid step ms | diff | model exposed ms |
#   SimGrid exposed ms | allreduce | sim wall s | flag
#
# diff = (model - SimGrid) / SimGrid; flag `OUT` when |diff| > TOL % (default 10).
#
# The model is told what the SimGrid run really does, not what Open MPI would:
#   - blocking: one MPI_Allreduce, algorithm by SMPI's ompi selector (SimGrid 3.31+: Open MPI 4's table, the same
#     as dtnn's ompi41 rules; `--collectives simgrid`, collective_model.h);
#   - non_blocking: the proxy's own libnbc binomial schedule (step_replay --nbc binomial, its default under
#     SimGrid), i.e. the in-place Iallreduce of the ompi41 rules (`--collectives ompi41`), not SMPI's all-to-all;
#   - γ = 0 (`--gamma 0`): SimGrid runs the reduction on the host without simulating its time, and the proxy's
#     binomial schedule skips its sums under SimGrid.
# The platform presets carry the platform files' numbers (eth10g: eth10g.xml; ib100: ib100_fattree.xml; the test
# tests/parallel/test_model_vs_simgrid.py checks they agree).
#
# Environment: PLATFORMS (default "eth10g ib100"), MODES ("blocking non_blocking"), RANKS ("2 4 8 16 32 64 128
# 256"), TOL (10), STEPS (3) and WARMUP (1) simulated steps (SimGrid is deterministic: every step after the
# first is the same), SIMGRID_CFG (passed on to simgrid_replay.sh), CSV=FILE also writes the rows as CSV.
# Prints the table on stdout, progress on stderr; exits 1 when a SimGrid run fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: validate_simgrid.sh DTNN PROFILE..." >&2; exit 2; }
dtnn=$1
shift
[ -x "$dtnn" ] || { echo "validate_simgrid.sh: $dtnn is not an executable (build/experiments/dtnn)" >&2; exit 2; }
read -r -a platforms <<< "${PLATFORMS:-eth10g ib100}"
read -r -a modes <<< "${MODES:-blocking non_blocking}"
read -r -a ranks <<< "${RANKS:-2 4 8 16 32 64 128 256}"
tol=${TOL:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
platform_file() {
  case $1 in
    eth10g) echo "$here/../../suites/step_replay/platforms/eth10g.xml" ;;
    ib100) echo "$here/../../suites/step_replay/platforms/ib100_fattree.xml" ;;
    *) echo "validate_simgrid.sh: no platform file for '$1' (eth10g, ib100)" >&2; exit 2 ;;
  esac
}
rank_list=$(IFS=,; echo "${ranks[*]}")
[ -z "${CSV:-}" ] || echo "model,platform,mode,ranks,model_step_ms,simgrid_step_ms,diff_pct,model_exposed_ms,\
simgrid_exposed_ms,allreduce,sim_wall_s,out" > "$CSV"
echo "| model | platform | mode | ranks | model step ms | SimGrid step ms | diff | model exposed ms |" \
     "SimGrid exposed ms | allreduce | sim wall s | flag |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |"
for profile in "$@"; do
  [ -f "$profile" ] || { echo "validate_simgrid.sh: no profile $profile" >&2; exit 2; }
  for platform in "${platforms[@]}"; do
    xml=$(platform_file "$platform")
    for mode in "${modes[@]}"; do
      rules=simgrid
      [ "$mode" = non_blocking ] && rules=ompi41
      "$dtnn" predict --profile "$profile" --platform "$platform" --ranks "$rank_list" --mode "$mode" \
        --collectives $rules --gamma 0 --json > "$work/model.json"
      echo "validate_simgrid.sh: $(basename "$profile") $platform $mode: SimGrid on ${ranks[*]} ranks ($(date +%T))" >&2
      STEPS=${STEPS:-3} WARMUP=${WARMUP:-1} "$here/../../suites/step_replay/simgrid_replay.sh" "$profile" "$xml" "${ranks[@]}" -- \
        --mode "$mode" > "$work/simgrid.txt"
      python3 - "$work/model.json" "$work/simgrid.txt" "$platform" "$mode" "$tol" "${CSV:-}" <<'PY'
import json, sys
model_path, sim_path, platform, mode, tol, csv = sys.argv[1:]
model = json.load(open(model_path))
rows = {r["ranks"]: r for r in model["rows"]}
for line in open(sim_path):
    f = line.split()
    if len(f) != 6 or not f[0].isdigit() or int(f[0]) not in rows:
        continue
    p, r = int(f[0]), rows[int(f[0])]
    sim_step, sim_exposed, wall = float(f[1]), float(f[3]), float(f[5])
    m_step, m_exposed = r["step_s"] * 1e3, r["exposed_s"] * 1e3
    diff = (m_step - sim_step) / sim_step * 100
    out = abs(diff) > float(tol)
    print(f"| {model['model']} | {platform} | {mode} | {p} | {m_step:.3f} | {sim_step:.3f} | {diff:+.2f} % | "
          f"{m_exposed:.3f} | {sim_exposed:.3f} | {r['allreduce']} | {wall:.1f} | {'OUT' if out else ''} |")
    if csv:
        with open(csv, "a") as c:
            c.write(f"{model['model']},{platform},{mode},{p},{m_step:.4f},{sim_step:.4f},{diff:.3f},{m_exposed:.4f},"
                    f"{sim_exposed:.4f},{r['allreduce']},{wall:.2f},{int(out)}\n")
PY
    done
  done
done
