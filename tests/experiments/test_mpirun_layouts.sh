#!/usr/bin/env bash
# Matrices through the real mpirun (no scheduler), checked against what mpirun and the ranks report:
#   - a `nodes x ranks_per_node` trial gets a hostfile generated for it ("<host> slots=N" per node, hosts taken
#     from the matrix's own hostfile, which resolves against the matrix file, not the caller's directory);
#   - a plain `ranks = 2` trial is given the matrix's hostfile as it is;
#   - both form one 2-rank MPI world (the run report's rank count);
#   - the store and `dtnn query runs` show scheduler none, launcher mpirun, mpirun's version, this host and 2
#     tasks on it;
#   - threads per rank, left unset, are the cores each rank got (those mpirun bound it to, or its share of
#     the machine when unbound), measured here independently with nproc under the same mpirun;
#   - 2 nodes with a 1-host hostfile is refused with one line, before anything runs.
#   tests/experiments/test_mpirun_layouts.sh DTNN_BINARY WORK_DIR
set -euo pipefail
dtnn="$1"
work="$2"
rm -rf "$work"
mkdir -p "$work/matrices" "$work/elsewhere"
unset OMP_NUM_THREADS SLURM_JOB_ID SLURM_CPUS_PER_TASK
fail() {
  echo "test_mpirun_layouts: FAIL: $*" >&2
  exit 1
}
command -v mpirun > /dev/null || { echo "SKIPPED: mpirun is not installed"; exit 77; }
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
q() { "$dtnn" query "$1" --db "$work/l.db" --format csv | tail -n +2; }

printf 'localhost slots=2\n' > "$work/matrices/hosts.txt"
matrix() {  # NAME AXES...
  local name="$1"
  shift
  {
    printf 'name = "%s"\nrepeats = 1\ntimeout_s = 120\n[launcher]\nkind = "mpirun"\nhostfile = "hosts.txt"\n' "$name"
    printf '[base]\nmodel = "simplemlp"\nuse_synthetic_data = true\nnum_epochs = 1\nsteps_per_epoch = 3\n'
    printf '%s\n' "$@"
  } > "$work/matrices/$name.toml"
}
matrix layout '[axes]' 'nodes = [1]' 'ranks_per_node = [2]'
matrix plain '[axes]' 'ranks = [2]'
cd "$work/elsewhere"  # the hostfile must be found beside the matrix, not here
for m in layout plain; do
  "$dtnn" run "../matrices/$m.toml" --db "$work/l.db" > "$work/$m.out" 2>&1 || { cat "$work/$m.out"; fail "matrix $m failed"; }
done

got="$(q "SELECT label, status, ranks, json_extract(report, '$.parallel.ranks'), scheduler, launcher, job_id, tasks_per_node FROM runs ORDER BY id")"
want="nodes=1;ranks_per_node=2,ok,2,2,none,mpirun,,2
ranks=2,ok,2,2,none,mpirun,,2"
[ "$got" = "$want" ] || fail "runs: got
$got
want
$want"
version="$(mpirun --version 2>&1 | head -n 1)"
[ "$(q "SELECT DISTINCT launcher_version FROM runs")" = "$version" ] || fail "launcher version: $(q "SELECT launcher_version FROM runs") vs $version"
host="$(q "SELECT DISTINCT node_list FROM runs")"
[ -n "$host" ] && [[ "$(hostname)" == "$host"* ]] || fail "node list '$host' is not this host ($(hostname))"

# The layout's hostfile: generated for the trial from the matrix's hosts, and passed to mpirun.
cmd="$(q "SELECT command FROM runs WHERE id = 1")"
hostfile="$(echo "$cmd" | sed -n 's/.*--hostfile \([^ ]*\).*/\1/p')"
[ -n "$hostfile" ] && [ "$(basename "$hostfile")" = hosts-1x2.txt ] || fail "no generated hostfile in: $cmd"
[ "$(cat "$hostfile")" = "localhost slots=2" ] || fail "generated hostfile: $(cat "$hostfile")"
q "SELECT command FROM runs WHERE id = 2" | grep -q -- "--hostfile $work/matrices/hosts.txt " ||
  fail "the matrix's hostfile, resolved against the matrix: $(q "SELECT command FROM runs WHERE id = 2")"

# Threads per rank: nproc (the cores this process may run on) under the same mpirun and hostfile.
online="$(getconf _NPROCESSORS_ONLN)"
expect=""
while read -r allowed; do
  if [ "$allowed" -lt "$online" ]; then t="$allowed"; else t=$((online / 2)); [ "$t" -ge 1 ] || t=1; fi
  [ -z "$expect" ] || [ "$expect" = "$t" ] || fail "the two ranks were bound to different core counts"
  expect="$t"
done < <(mpirun -np 2 --hostfile "$hostfile" nproc)
got="$(q "SELECT DISTINCT json_extract(report, '$.parallel.threads') FROM runs")"
[ "$got" = "$expect" ] || fail "threads per rank: $got, expected $expect (online $online, nproc under mpirun)"

# As users see it.
row="$(q runs | head -n 1)"
echo "$row" | grep -Fq ",none,mpirun,,$host,2,$version," || fail "dtnn query runs: $row"

# More nodes than the hostfile has hosts: one line, nothing run.
matrix two_nodes '[[include]]' 'nodes = 2' 'ranks_per_node = 1'
if "$dtnn" run ../matrices/two_nodes.toml --db "$work/l.db" > "$work/two.out" 2> "$work/two.err"; then
  fail "2 nodes on a 1-host hostfile ran"
fi
[ "$(wc -l < "$work/two.err")" = 1 ] && grep -q "2 nodes need a \[launcher\] hostfile listing at least 2 hosts" "$work/two.err" ||
  fail "2 nodes: $(cat "$work/two.err")"
[ "$(q "SELECT count(*) FROM runs")" = 2 ] || fail "the refused matrix stored runs"
echo "mpirun layouts: ok (threads per rank $expect, $version)"
