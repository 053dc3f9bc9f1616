#!/usr/bin/env bash
# experiments/contention_ceiling.sh end to end on a short synthetic simplecnn (2 ranks, 2 rounds of 3 epochs of
# 6 steps, about 15 s): the runs' reports are kept, and the printed ceiling, speed-up and compute share are
# recomputed here from those reports, as experiments/contention_ceiling.py's docstring defines them (epochs 2-3;
# alone and data pooled over rounds, independent the per-round sum of the copies' medians); refused
# arguments exit 2 with one line.
#   test_contention_ceiling.sh DTNN_BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build="$1" src="$2" work="$3"
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

out="$(KEEP="$work/keep" REPS=2 DTNN_BUILD_DIR="$build" EXTRA="--steps_per_epoch=6" \
       bash "$src/experiments/contention_ceiling.sh" 2 3 simplecnn synthetic)" || fail "the script failed"
echo "$out"
for f in r0-alone r0-copy0 r0-copy1 r0-data r1-alone r1-copy0 r1-copy1 r1-data; do [ -s "$work/keep/$f.json" ] || fail "no $f.json kept"; done

/usr/bin/python3 - "$work/keep" "$out" <<'PY'
import json, re, statistics, sys
d, out = sys.argv[1], sys.argv[2]
def sampled(name):
    return [e for e in json.load(open(f"{d}/{name}.json"))["epochs"] if e["epoch"] >= 2]
def rates(name):
    return [e["samples_per_s"] for e in sampled(name)]
alone = statistics.median(rates("r0-alone") + rates("r1-alone"))
copy_medians = [statistics.median(rates(f"r{r}-copy{i}")) for r in range(2) for i in range(2)]
sums = [copy_medians[0] + copy_medians[1], copy_medians[2] + copy_medians[3]]
data = statistics.median(rates("r0-data") + rates("r1-data"))
comm = sampled("r0-data") + sampled("r1-data")
def printed(label):
    m = re.search(re.escape(label) + r"\s+([0-9.]+)x", out)
    assert m, f"no '{label}' line"
    return float(m.group(1))
ceiling, speedup = statistics.median(sums) / alone, data / alone
assert abs(printed("ceiling (independent / alone):") - ceiling) <= 0.006, (ceiling, out)
assert abs(printed("speed-up (data-parallel / alone):") - speedup) <= 0.006, (speedup, out)
m = re.search(r"data-parallel / ceiling:\s+([0-9.]+) %", out)
assert m and abs(float(m.group(1)) - 100 * speedup / ceiling) <= 0.06, out
# The ceiling as dtnn predict takes it (--ceiling RANKS:CEILING).
m = re.search(r"--ceiling 2:([0-9.]+)$", out, re.M)
assert m and abs(float(m.group(1)) - ceiling) <= 0.006, out
# A rank's compute rate: half the epoch's samples over the median rank's compute seconds.
rate = statistics.median(e["samples"] for e in comm) / 2 / statistics.median(e["communication"]["median"]["compute_s"] for e in comm)
m = re.search(r"a rank computes at ([0-9,]+) samples/s, ([0-9.]+) % of a copy's rate", out)
assert m, out
assert abs(float(m.group(1).replace(",", "")) - rate) <= 0.5 + 1e-3 * rate, (rate, out)
assert abs(float(m.group(2)) - 100 * rate / statistics.median(copy_medians)) <= 0.06, out
# Blocking makes no communication call during compute: the calls between layers are 0.0 % of the epoch.
between = statistics.median(e["communication"]["median"]["comm_s"] - e["communication"]["median"]["exposed_s"] for e in comm)
m = re.search(r"communication calls between layers ([0-9.]+) %", out)
assert m and abs(float(m.group(1)) - 100 * between / statistics.median(e["time_s"] for e in comm)) <= 0.06, out
# Sane magnitudes, not targets: each copy did an alone run's work, the data-parallel run trained both ranks.
assert 0.2 < ceiling <= 2.6 and 0.2 < speedup <= 2.6, (ceiling, speedup)
assert all(e["communication"]["steps"] == 6 for e in comm), comm
print("recomputed from the reports: ceiling %.3f, speed-up %.3f, rank compute %.0f samples/s" % (ceiling, speedup, rate))
PY

# Refused arguments: one line, exit 2, nothing run.
for args in "0 3" "2 x" "2 3 simplecnn $work/no-such-folder" "REPS=0"; do
  set +e
  reps=1; [ "$args" = REPS=0 ] && { reps=0; args=""; }
  msg="$(REPS=$reps DTNN_BUILD_DIR="$build" bash "$src/experiments/contention_ceiling.sh" $args 2>&1 > /dev/null)"; rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "arguments '$args': exit $rc, not 2"
  [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] || fail "arguments '$args': not one line: $msg"
  echo "refused '$args': $msg"
done
echo "PASS"
