#!/usr/bin/env bash
# experiments/shaped_loopback.sh and experiments/shaped_link.sh, on this machine's real loopback (about 40 s):
#   - the cap is real for MPI: a 2-rank MPI_Allreduce of 1 MiB over TCP takes at least 2 n 8 / RATE (lo
#     carries both ranks' n bytes; -10 %) at 100mbit, and at most 2.5x that (CPU load stretches it); uncapped
#     it takes under a tenth of that;
#   - the command's exit status comes back; the cap is gone afterwards, also after a TERM mid-command (which
#     stops the command); a qdisc that was there before is refused (exit 2) and left as it was; `off` removes
#     a cap the script left behind (as a kill -9 would);
#   - refused arguments: one line, exit 2;
#   - shaped_link.sh end to end on a short synthetic simplecnn (none and 200mbit, blocking and 0.25 MiB): its
#     printed hidden share, step saved and speed-up recomputed here from the reports it kept, as
#     experiments/shaped_link.py's docstring defines them.
#   - traffic to 127.0.0.1 (Slurm's, as ci/slurm_local.sh sets it up, which may run beside this test) is not
#     capped: the same allreduce over --mca btl_tcp_if_include lo stays fast under the cap;
# Exit 77 (ctest: skipped) where the machine cannot shape: not root, no tc, no htb or u32 in the kernel.
#   test_shaped_link.sh DTNN_BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build="$1" src="$2" work="$3"
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
S="$src/experiments/shaped_loopback.sh"
capped_lo() { tc qdisc show dev lo 2> /dev/null | grep -q "^qdisc \(tbf\|htb\)"; }
clean() {  # removes the qdiscs this test or the script under test set up (never another one)
  if tc qdisc show dev lo 2> /dev/null | grep -q "^qdisc htb \(7e57\|1234\): root"; then tc qdisc del dev lo root; fi
}
trap clean EXIT  # a failed check must not leave lo capped (RUN_SERIAL ends with the test)

set +e
msg="$(bash "$S" 1mbit true 2>&1)"; rc=$?
set -e
if [ "$rc" -eq 3 ]; then echo "SKIP: $msg"; exit 77; fi
[ "$rc" -eq 0 ] || fail "a cap around 'true' exited $rc: $msg"
capped_lo && fail "the cap stayed after the command"

# Refused arguments: one line, exit 2, lo untouched.
for args in "" "fast true" "0mbit true" "100mbit" "off extra"; do
  set +e
  # shellcheck disable=SC2086
  msg="$(bash "$S" $args 2>&1 > /dev/null)"; rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "arguments '$args': exit $rc, not 2"
  [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] || fail "arguments '$args': not one line: $msg"
  capped_lo && fail "arguments '$args' left a cap"
  echo "refused '$args': $msg"
done

# The cap is real for MPI over TCP.
mpi=(mpirun -np 2 --oversubscribe --mca btl self,tcp)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
allreduce_1mib() {  # RATE|"" [MPIRUN_ARG...]: seconds of one 1 MiB MPI_Allreduce (bench_allreduce's case time)
  local rate="$1"; shift
  local json="$work/bench$rate$#.json"
  local cmd=("${mpi[@]}" "$@" "$build/suites/bench_allreduce" --case_time=0.1 '--benchmark_filter=BM_Allreduce/1048576/'
             --benchmark_out="$json" --benchmark_out_format=json)
  [ -z "$rate" ] || cmd=(bash "$S" "$rate" "${cmd[@]}")
  "${cmd[@]}" > "${json%.json}.log" 2>&1
  /usr/bin/python3 -c 'import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"][0]
assert b["time_unit"] == "us", b
print(b["real_time"] * 1e-6)' "$json"
}
t_free="$(allreduce_1mib "")"
t_cap="$(allreduce_1mib 100mbit)"
t_local="$(allreduce_1mib 100mbit --mca btl_tcp_if_include lo)"
capped_lo && fail "the cap stayed after bench_allreduce"
expect="$(/usr/bin/python3 -c 'print(2 * 1048576 * 8 / 100e6)')"
echo "1 MiB MPI_Allreduce over TCP: uncapped $t_free s, at 100mbit $t_cap s (2 n 8 / rate: $expect s)," \
     "at 100mbit over 127.0.0.1 $t_local s"
/usr/bin/python3 -c 'import sys
free, cap, local, e = map(float, sys.argv[1:])
# The cap is a floor: no faster than 2 n 8 / rate (less the 96 KiB burst, under 5 % of the 2 MiB an op moves).
# Above it, CPU load stretches it (the Slurm tests run beside this one: 232 ms once, against 168), so the
# ceiling is loose: it only catches a cap far below RATE.
assert 0.9 * e <= cap <= 2.5 * e and free < 0.1 * e and local < 0.1 * e, (free, cap, local, e)' \
  "$t_free" "$t_cap" "$t_local" "$expect" ||
  fail "the capped time is not at least 2 n 8 / rate (and within 2.5x of it), or the uncapped one (or the one over 127.0.0.1) is not far below it"

# Exit status, TERM, someone else's qdisc, off.
set +e
bash "$S" 50mbit sh -c 'exit 7'; rc=$?
set -e
[ "$rc" -eq 7 ] || fail "the command's exit 7 came back as $rc"
capped_lo && fail "the cap stayed after a failing command"
# TERM once the command runs (its pid file exists): the command stops, the cap goes.
rm -f "$work/cmd.pid"
bash "$S" 50mbit sh -c 'echo $$ > "$1"; exec sleep 60' sh "$work/cmd.pid" & pid=$!
for _ in $(seq 100); do [ -s "$work/cmd.pid" ] && break; sleep 0.1; done
[ -s "$work/cmd.pid" ] || fail "the command under the cap did not start"
capped_lo || fail "no cap while the command runs"
t0=$SECONDS
kill -TERM "$pid"
set +e
wait "$pid"; rc=$?
set -e
[ "$rc" -eq 143 ] || fail "TERM: exit $rc, not 143"
[ $((SECONDS - t0)) -le 15 ] || fail "TERM took $((SECONDS - t0)) s: the command was not stopped"
capped_lo && fail "the cap stayed after TERM"
kill -0 "$(cat "$work/cmd.pid")" 2> /dev/null && fail "the command outlived TERM"
tc qdisc add dev lo root handle 1234: htb default 1
set +e
msg="$(bash "$S" 50mbit true 2>&1)"; rc=$?
set -e
tc qdisc show dev lo | grep -q "^qdisc htb 1234: root" || fail "someone else's qdisc was changed"
clean
[ "$rc" -eq 2 ] || fail "an existing qdisc: exit $rc, not 2 ($msg)"
echo "refused over an existing qdisc: $msg"
tc qdisc add dev lo root handle 7e57: htb default 2  # as a kill -9 would leave it
bash "$S" off
capped_lo && fail "off left the cap"

# shaped_link.sh end to end, and its table recomputed from the reports (0.25:1: a 0.25 MiB cap alone, which
# exercises the CAP:N form: --gradient_buckets_min=1).
out="$(RATES="none 200mbit" BUCKETS="blocking 0.25:1" REPS=1 STEPS=4 DTNN_BUILD_DIR="$build" \
       bash "$src/experiments/shaped_link.sh" "$work/link" simplecnn)" || fail "shaped_link.sh failed"
echo "$out"
capped_lo && fail "shaped_link.sh left a cap"
/usr/bin/python3 - "$work/link" "$out" <<'PY'
import json, re, sys
d, out = sys.argv[1], sys.argv[2]
def e2(name):
    [e] = [e for e in json.load(open(f"{d}/{name}.json"))["epochs"] if e["epoch"] == 2]
    return e
alone = e2("r0-alone")["samples_per_s"]
rows = {}
for line in out.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 12 and cells[1] in ("blocking", "non-blocking, 0.25 MiB"):
        rows[(cells[0] or last, cells[1])] = cells
        last = cells[0] or last
assert len(rows) == 4, rows
for (link, name), cells in rows.items():
    rate = link.split()[0]
    b, base = e2(f"r0-{rate}-{'blocking' if name == 'blocking' else '0.25:1'}"), e2(f"r0-{rate}-blocking")
    c, cb = b["communication"], base["communication"]
    step, exp = c["median"]["step_s"] / c["steps"], c["median"]["exposed_s"] / c["steps"]
    bstep, bexp = cb["median"]["step_s"] / cb["steps"], cb["median"]["exposed_s"] / cb["steps"]
    assert abs(float(cells[3].split()[0]) - 1e3 * step) <= 0.006, (cells, step)
    assert abs(float(cells[4].split()[0]) - 1e3 * exp) <= 0.006, (cells, exp)
    assert abs(float(cells[9].rstrip("x")) - b["samples_per_s"] / alone) <= 0.006, (cells, alone)
    if name != "blocking":
        assert abs(float(cells[7].rstrip(" %")) - 100 * (1 - exp / bexp)) <= 0.51, cells
        assert abs(float(cells[8].rstrip(" %")) - 100 * (bstep - step) / bexp) <= 0.51, cells
        assert c["mode"] == "non_blocking" and c["buckets_per_step"] >= 2 and c["buckets_min"] == 1, c
    assert cells[10] != "-" and cells[11] != "-", f"no prediction: {cells}"
m = re.search(r"200mbit \(1 MiB allreduce ([0-9.]+) ms: ([0-9,]+) Mbit/s on lo\)", out)
assert m and 80 <= int(m.group(2).replace(",", "")) <= 210, out  # at most the cap (+5 %: burst); load only slows it
# At 200mbit blocking exposes most of a simplecnn step (0.81 MB: ~65 ms against ~11 ms of compute).
assert rows[(m.group(0), "blocking")] and float(rows[(m.group(0), "blocking")][4].split()[0]) > 30
print("recomputed from the reports: step, exposed, hidden, step saved, speed-up")
PY

# shaped_link.sh's refused arguments: one line, exit 2, nothing run.
mkdir -p "$work/full" && touch "$work/full/r0-alone.json"
set +e
msg="$(DTNN_BUILD_DIR="$build" bash "$src/experiments/shaped_link.sh" "$work/full" 2>&1 > /dev/null)"; rc=$?
set -e
[ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] || fail "a non-empty OUT_DIR: exit $rc ($msg)"
echo "refused a non-empty OUT_DIR: $msg"
for env in "RATES=fast" "BUCKETS=x" "BUCKETS=25:0" "REPS=0" "STEPS=-1"; do
  set +e
  msg="$(env "$env" DTNN_BUILD_DIR="$build" bash "$src/experiments/shaped_link.sh" "$work/refused" 2>&1 > /dev/null)"; rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "$env: exit $rc, not 2"
  [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] || fail "$env: not one line: $msg"
  [ -e "$work/refused" ] && fail "$env: made the output folder"
  echo "refused $env: $msg"
done
echo "PASS"
