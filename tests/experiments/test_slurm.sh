#!/usr/bin/env bash
# Matrices through a real Slurm (slurm-wlm's slurmctld + slurmd and munged on this host, ci/slurm_local.sh),
# each case against what Slurm and the ranks themselves report:
#   matrix     1- and 2-rank trials and a nodes x ranks_per_node layout run as srun steps; the 2 ranks form one
#              MPI world (the report's rank count), the store and `dtnn query runs` have the scheduler, job,
#              step, node, tasks per node, launcher and its version; srun without PMIx is refused with one
#              clear line; 2 nodes on a 1-node cluster fail with Slurm's reason; a rank that fails while another
#              runs (srun stops that one, slurmstepd says CANCELLED) is stored failed, not interrupted
#   scancel    a trial whose step is cancelled is stored interrupted with Slurm's line; the next trial runs; a
#              trial cancelled while still queued is stored interrupted with scontrol's state of its job
#   drain      the node drained after the first trial: the next trial waits in the queue until timeout_s and is
#              stored timeout with squeue's reason; resumed, --resume finishes the matrix
#   submit     dtnn run --submit runs the matrix as a batch job whose steps are the trials; the job cancelled
#              mid-trial, --resume --submit finishes it and the cancelled trial ends interrupted, never left
#              running; a refused submission writes no database
#   time_limit a trial Slurm stops at its time limit (srun --time=1) is stored timeout "DUE TO TIME LIMIT"
#              (Slurm checks limits every 30 s: this case takes 60-90 s, mostly asleep)
# Slow trials are stand-ins (a wrapper around dtnn that sleeps) so the waiting costs no CPU.
#   tests/experiments/test_slurm.sh DTNN_BINARY SOURCE_DIR WORK_DIR CASES PORT_BASE
# Exit 77 (skipped, with the reason on a SKIPPED: line) when Slurm or munge is not installed or will not start.
set -euo pipefail
dtnn="$1"
src="$2"
work="$3"
cases="$4"
export DTNN_SLURM_PORT_BASE="$5"
rm -rf "$work"
mkdir -p "$work"
export DTNN_SLURM_DIR="$work/cluster"
fail() {
  echo "test_slurm: FAIL: $*" >&2
  # What it takes to tell a slow or loaded machine from a defect (a failure seen once in CI left nothing behind):
  # the matrix's output, the trials' logs and the daemons' last words.
  for f in "$work"/*.out "$work"/logs/*/*/*.log "$work"/cluster/slurmctld.log "$work"/cluster/slurmd.log; do
    [ -f "$f" ] || continue
    echo "test_slurm: ---- the last lines of $f" >&2
    tail -n 15 "$f" >&2
  done
  exit 1
}
for tool in slurmctld slurmd munged srun sbatch scancel squeue scontrol; do
  command -v "$tool" > /dev/null || { echo "SKIPPED: $tool is not installed (apt-get install slurm-wlm munge)"; exit 77; }
done
if ! start_out="$(bash "$src/ci/slurm_local.sh" start 2> "$work/start.err")"; then
  cat "$work/start.err" >&2
  echo "SKIPPED: a local Slurm cluster does not start here: $(head -n 1 "$work/start.err")"
  exit 77
fi
trap 'bash "$src/ci/slurm_local.sh" stop 2> /dev/null || true' EXIT
unset $(compgen -e | grep '^SLURM_' || true)  # this cluster's, even when CI itself runs inside a Slurm job
eval "$start_out"  # SLURM_CONF
node="$(hostname -s)"
q() { "$dtnn" query "$1" --db "$2" --format csv | tail -n +2; }

# A dtnn that sleeps instead of training when its options contain $SLEEP_WHEN (and, with $ONCE, only the
# first time; touching $ASLEEP as it falls asleep), and that drains the node after a run when $DRAIN_AFTER is in its options.
cat > "$work/stand-in" <<WRAP
#!/usr/bin/env bash
if [ "\${1:-}" = train ]; then
  if [ -n "\${SLEEP_WHEN:-}" ] && [[ " \$* " == *" \$SLEEP_WHEN "* ]] && { [ -z "\${ONCE:-}" ] || [ ! -e "\$ONCE" ]; }; then
    [ -n "\${ONCE:-}" ] && touch "\$ONCE"
    [ -n "\${ASLEEP:-}" ] && touch "\$ASLEEP"
    sleep 300
  fi
  '$dtnn' "\$@"; rc=\$?
  if [ -n "\${DRAIN_AFTER:-}" ] && [[ " \$* " == *" \$DRAIN_AFTER "* ]]; then
    scontrol update nodename='$node' state=drain reason="test_slurm: drained mid-matrix"
  fi
  exit \$rc
fi
exec '$dtnn' "\$@"
WRAP
chmod +x "$work/stand-in"
matrix() {  # NAME TIMEOUT_S LAUNCHER_ARGS AXES...
  local name="$1" timeout="$2" args="$3"
  shift 3
  {
    printf 'name = "%s"\nrepeats = 1\ntimeout_s = %s\n[launcher]\nkind = "srun"\nargs = [%s]\n' "$name" "$timeout" "$args"
    printf '[base]\nmodel = "simplemlp"\nuse_synthetic_data = true\nnum_epochs = 1\nsteps_per_epoch = 3\nthreads = 1\n'
    printf '%s\n' "$@"
  } > "$work/$name.toml"
}
wait_for() {  # SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds
  local limit="$1" what="$2"
  shift 2
  for _ in $(seq 1 $((limit * 5))); do "$@" && return 0; sleep 0.2; done
  fail "$what did not happen within $limit s"
}

for c in $cases; do
  case "$c" in
  matrix)
    matrix srun_matrix 120 "" '[axes]' 'ranks = [1, 2]' '[[include]]' 'nodes = 1' 'ranks_per_node = 2' \
      '[[include]]' 'nodes = 2' 'ranks_per_node = 1'
    set +e
    "$dtnn" run "$work/srun_matrix.toml" --db "$work/m.db" > "$work/matrix.out" 2>&1
    rc=$?
    set -e
    [ "$rc" = 1 ] || { cat "$work/matrix.out"; fail "the matrix with a 2-node trial exited $rc, not 1"; }
    got="$(q "SELECT label, status, ranks, json_extract(report, '$.parallel.ranks'), launcher, scheduler, job_id <> '', step_id, node_list, tasks_per_node FROM runs ORDER BY id" "$work/m.db")"
    want="ranks=1,ok,1,1,srun,slurm,1,0,$node,1
ranks=2,ok,2,2,srun,slurm,1,0,$node,2
nodes=1;ranks_per_node=2,ok,2,2,srun,slurm,1,0,$node,2"
    [ "$(echo "$got" | head -n 3)" = "$want" ] || fail "srun runs: got
$got
want
$want"
    echo "$got" | sed -n 4p | grep -q '^nodes=2;ranks_per_node=1,failed,2,' || fail "the 2-node trial: $got"
    q "SELECT error FROM runs WHERE id = 4" "$work/m.db" | grep -q "Node count specification invalid" ||
      fail "the 2-node trial's error: $(q "SELECT error FROM runs WHERE id = 4" "$work/m.db")"
    q "SELECT launcher_version FROM runs WHERE id = 1" "$work/m.db" | grep -q "^slurm" || fail "no launcher version"
    q "SELECT command FROM runs WHERE id = 3" "$work/m.db" | grep -q -- "--nodes=1 --ntasks-per-node=2" || fail "layout not passed"
    # The same provenance as users see it: `dtnn query runs` (scheduler, launcher, job.step, nodes, tasks per
    # node, launcher version, runner's job: none outside --submit).
    row="$(q runs "$work/m.db" | sed -n 2p)"
    echo "$row" | grep -Eq ",slurm,srun,[0-9]+\.0,$node,2,slurm[^,]* [0-9][^,]*,\$" || fail "dtnn query runs, 2-rank row: $row"
    # Without PMIx, Open MPI refuses ranks that srun started: one clear line, not its 20-line box. (srun exits
    # 143 when one rank failed first and srun stopped the other, as on a slow machine.)
    matrix srun_nopmix 60 '"--mpi=none"' '[axes]' 'ranks = [2]'
    "$dtnn" run "$work/srun_nopmix.toml" --db "$work/m.db" > "$work/nopmix.out" 2>&1 && fail "--mpi=none passed"
    q "SELECT status, error FROM runs WHERE id = 5" "$work/m.db" | grep -Eq "^failed,\"exit (1|143): Open MPI could not join ranks that srun started without PMIx" ||
      fail "--mpi=none: $(q "SELECT status, error FROM runs WHERE id = 5" "$work/m.db")"
    # A rank that fails while another still runs: srun's --kill-on-bad-exit (the runner's default) stops the
    # other, and slurmstepd says "STEP ... CANCELLED" of it. The trial failed with rank 0's line; it is not
    # interrupted, which would let the matrix pass. (A slow machine made --mpi=none above look so in CI once.)
    cat > "$work/rank0-fails" <<WRAP
#!/usr/bin/env bash
if [ "\${1:-}" = train ]; then
  if [ "\${SLURM_PROCID:-}" = 0 ]; then sleep 1; echo "dtnn: planted failure of rank 0" >&2; exit 1; fi
  sleep 60
fi
exec '$dtnn' "\$@"
WRAP
    chmod +x "$work/rank0-fails"
    matrix srun_rank0_fails 60 "" '[axes]' 'ranks = [2]'
    "$dtnn" run "$work/srun_rank0_fails.toml" --db "$work/m.db" --dtnn "$work/rank0-fails" > "$work/rank0.out" 2>&1 &&
      fail "a trial whose rank 0 failed passed"
    got="$(q "SELECT status, error FROM runs WHERE id = 6" "$work/m.db")"
    # srun's exit is its tasks' highest: 143 when it stopped rank 1 with SIGTERM, 1 should rank 1 be gone first.
    echo "$got" | grep -Eq '^failed,exit (1|143): dtnn: planted failure of rank 0$' || fail "a trial whose rank 0 failed: $got"
    grep -q "CANCELLED AT" "$(q "SELECT log_path FROM runs WHERE id = 6" "$work/m.db")" ||
      fail "no slurmstepd CANCELLED line in the log: the case did not test what it says"
    echo "matrix: ok"
    ;;
  scancel)
    matrix srun_cancel 120 "" '[axes]' 'seed = [1, 2]'
    # Cancelled once its task runs (not merely once the job is RUNNING): slurmstepd's own line is the reason.
    SLEEP_WHEN=--seed=1 ASLEEP="$work/asleep" "$dtnn" run "$work/srun_cancel.toml" --db "$work/c.db" --dtnn "$work/stand-in" > "$work/cancel.out" 2>&1 &
    runner=$!
    wait_for 30 "the first trial's task running" test -e "$work/asleep"
    scancel -n dtnn-srun_cancel
    set +e
    wait "$runner"
    rc=$?
    set -e
    [ "$rc" = 0 ] || { cat "$work/cancel.out"; fail "runner exit $rc (an interrupted trial is not a failure)"; }
    got="$(q "SELECT label, status, error FROM runs ORDER BY id" "$work/c.db")"
    # slurmstepd's line, or (should srun exit before that line reaches it) scontrol's state of the job.
    echo "$got" | head -n 1 | grep -Eq '^seed=1,interrupted,"?Slurm: (STEP [0-9]+\.0 ON [^ ]+ CANCELLED AT |JOB [0-9]+ CANCELLED \(scontrol)' ||
      fail "cancelled trial: $got"
    echo "$got" | sed -n 2p | grep -q '^seed=2,ok,' || fail "the trial after the cancelled one: $got"
    # Cancelled before any task started (here: while queued on a drained node), slurmstepd says nothing: the
    # reason is scontrol's state of the job srun named.
    matrix srun_cancel_queued 120 "" '[axes]' 'seed = [1]'
    scontrol update nodename="$node" state=drain reason="test_slurm: cancel while queued"
    "$dtnn" run "$work/srun_cancel_queued.toml" --db "$work/c.db" > "$work/cancel_queued.out" 2>&1 &
    runner=$!
    wait_for 30 "the trial queued" bash -c "squeue -h -n dtnn-srun_cancel_queued -t PD -o %i | grep -q ."
    scancel -n dtnn-srun_cancel_queued
    set +e
    wait "$runner"
    rc=$?
    set -e
    scontrol update nodename="$node" state=resume
    [ "$rc" = 0 ] || { cat "$work/cancel_queued.out"; fail "runner exit $rc after a cancellation while queued"; }
    got="$(q "SELECT status, error FROM runs WHERE id = 3" "$work/c.db")"
    echo "$got" | grep -Eq '^interrupted,"?Slurm: JOB [0-9]+ CANCELLED \(scontrol: JobState=CANCELLED Reason=[^ ]+\)' ||
      fail "the trial cancelled while queued: $got"
    echo "scancel: ok"
    ;;
  drain)
    # timeout_s is what the queued trial waits; the trials that run need ~1 s (1.5 s under 2x load).
    matrix srun_drain 15 "" '[axes]' 'seed = [1, 2]'
    set +e
    DRAIN_AFTER=--seed=1 "$dtnn" run "$work/srun_drain.toml" --db "$work/d.db" --dtnn "$work/stand-in" > "$work/drain.out" 2>&1
    rc=$?
    set -e
    [ "$rc" = 1 ] || { cat "$work/drain.out"; fail "a matrix with a timed-out trial exited $rc"; }
    got="$(q "SELECT label, status, error FROM runs ORDER BY id" "$work/d.db")"
    echo "$got" | head -n 1 | grep -q '^seed=1,ok,' || fail "the trial before the drain: $got"
    echo "$got" | sed -n 2p | grep -Eq '^seed=2,timeout,.*still queued in Slurm: job [0-9]+ PENDING \(.*DRAINED' ||
      fail "the trial on the drained node: $got"
    squeue -h -n dtnn-srun_drain | grep -q . && fail "the queued job was left behind"
    scontrol update nodename="$node" state=resume
    "$dtnn" run "$work/srun_drain.toml" --db "$work/d.db" --resume > "$work/drain2.out" 2>&1 || { cat "$work/drain2.out"; fail "--resume after the drain"; }
    [ "$(q "SELECT count(*) FROM runs WHERE status = 'ok'" "$work/d.db")" = 2 ] || fail "--resume did not finish the matrix"
    echo "drain: ok"
    ;;
  submit)
    matrix srun_submit 120 "" '[axes]' 'seed = [1, 2, 3]'
    # A refused job: one line, and no database written by the submitting command.
    if "$dtnn" run "$work/srun_submit.toml" --db "$work/s.db" --submit --sbatch-args=--partition=nosuch > "$work/refused.out" 2> "$work/refused.err"; then
      fail "a submission to an unknown partition succeeded"
    fi
    [ "$(wc -l < "$work/refused.err")" = 1 ] && grep -q "sbatch refused the job" "$work/refused.err" || fail "refused: $(cat "$work/refused.err")"
    [ -e "$work/s.db" ] && fail "the refused submission wrote the database"
    SLEEP_WHEN=--seed=2 ONCE="$work/slept" "$dtnn" run "$work/srun_submit.toml" --db "$work/s.db" --dtnn "$work/stand-in" --submit > "$work/submit.out"
    job="$(sed -n 's/.* as Slurm job \([0-9]*\);.*/\1/p' "$work/submit.out")"
    [ -n "$job" ] || fail "no job id in: $(cat "$work/submit.out")"
    wait_for 60 "the second trial running in job $job" test -e "$work/slept"
    scancel "$job"
    wait_for 30 "job $job ending" bash -c "! squeue -h -j $job 2>/dev/null | grep -q ."
    got="$(q "SELECT label, status, runner_job_id FROM runs ORDER BY id" "$work/s.db")"
    echo "$got" | head -n 1 | grep -q "^seed=1,ok,$job\$" || fail "the first job's first trial: $got"
    echo "$got" | sed -n 2p | grep -Eq "^seed=2,(interrupted|running),$job\$" || fail "the cancelled trial: $got"
    [ "$(echo "$got" | wc -l)" = 2 ] || fail "the cancelled job ran past its second trial: $got"
    # The trials are steps of the runner's own job.
    step="$(q "SELECT job_id = runner_job_id, step_id <> '', launcher, scheduler FROM runs WHERE id = 1" "$work/s.db")"
    [ "$step" = "1,1,srun,slurm" ] || fail "the first trial is not a step of job $job: $step"
    "$dtnn" run "$work/srun_submit.toml" --db "$work/s.db" --dtnn "$work/stand-in" --resume --submit --sbatch-args=--wait > "$work/resume.out" ||
      fail "--resume --submit: $(cat "$work/resume.out")"
    got="$(q "SELECT label, status, runner_job_id <> '$job' FROM runs WHERE status = 'ok' ORDER BY id" "$work/s.db")"
    [ "$got" = "seed=1,ok,0
seed=2,ok,1
seed=3,ok,1" ] || fail "after --resume --submit: $got"
    # The cancelled trial is interrupted now (by its own runner, or reaped by the next one), never left running.
    got="$(q "SELECT status FROM runs WHERE id = 2" "$work/s.db")"
    [ "$got" = interrupted ] || fail "the cancelled trial after --resume: $got"
    echo "submit: ok"
    ;;
  time_limit)
    matrix srun_time_limit 200 '"--time=1"' '[axes]' 'seed = [1]'
    set +e
    SLEEP_WHEN=--seed=1 "$dtnn" run "$work/srun_time_limit.toml" --db "$work/t.db" --dtnn "$work/stand-in" > "$work/limit.out" 2>&1
    rc=$?
    set -e
    [ "$rc" = 1 ] || { cat "$work/limit.out"; fail "a timed-out matrix exited $rc"; }
    got="$(q "SELECT status, error FROM runs" "$work/t.db")"
    echo "$got" | grep -Eq '^timeout,Slurm: STEP [0-9]+\.0 ON [^ ]+ CANCELLED AT [^ ]+ DUE TO TIME LIMIT$' || fail "time limit: $got"
    echo "time_limit: ok"
    ;;
  *) fail "unknown case $c" ;;
  esac
done
