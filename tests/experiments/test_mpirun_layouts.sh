#!/usr/bin/env bash
# Matrices through the real mpirun (no scheduler), checked against what mpirun and the ranks report:
#   - a `nodes x ranks_per_node` trial gets a hostfile generated for it ("<host> slots=N" per node, hosts taken
#     from the matrix's own hostfile, which resolves against the matrix file, not the caller's directory);
#   - a plain `ranks = 2` trial is given the matrix's hostfile as it is;
#   - both form one 2-rank MPI world (the run report's rank count);
#   - the store and `dtnn query runs` show scheduler none, launcher mpirun, mpirun's version, this host and 2
#     tasks on it;
#   - threads per rank, left unset, are the cores each rank may run on divided among the ranks that share
#     them, worked out here independently from the masks the ranks get under the same mpirun;
#   - 2 nodes with a 1-host hostfile is refused with one line, before anything runs.
#   tests/experiments/test_mpirun_layouts.sh DTNN_BINARY WORK_DIR
set -euo pipefail
dtnn="$1"
work="$2"
rm -rf "$work"
mkdir -p "$work/matrices" "$work/elsewhere"
work="$(cd "$work" && pwd -P)"  # the runner stores physical paths
unset OMP_NUM_THREADS $(compgen -e | grep '^SLURM_' || true)  # no scheduler here, even inside a Slurm job
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
q "SELECT command FROM runs WHERE id = 2" | grep -qF -- "--hostfile $work/matrices/hosts.txt " ||
  fail "the matrix's hostfile, resolved against the matrix: $(q "SELECT command FROM runs WHERE id = 2")"

# Threads per rank: each rank's affinity mask under the same mpirun and hostfile (read by Python, not dtnn),
# its CPUs divided among the ranks whose masks meet it.
masks="$(mpirun -np 2 --hostfile "$hostfile" /usr/bin/python3 -c 'import os; print(sorted(os.sched_getaffinity(0)))')"
expect="$(/usr/bin/python3 - "$masks" <<'PY'
import ast, re, sys
# Only the ranks' own lines: mpirun may add a notice of its own (another job's, a warning) to the output.
masks = [set(ast.literal_eval(line)) for line in sys.argv[1].splitlines() if re.fullmatch(r"\[[0-9, ]*\]", line.strip())]
assert len(masks) == 2 and all(masks), masks
threads = {max(1, len(m) // sum(1 for o in masks if m & o)) for m in masks}
assert len(threads) == 1, f"the ranks would get different counts: {masks}"
print(threads.pop())
PY
)" || fail "cannot read the ranks' affinity masks: $masks"
got="$(q "SELECT DISTINCT json_extract(report, '$.parallel.threads') FROM runs")"
[ "$got" = "$expect" ] || fail "threads per rank: $got, expected $expect (masks under mpirun: $(echo $masks))"

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

# The scaling group (config_key) of a trial naming ranks and nodes keeps its nodes: 2 ranks on one node and 2
# on two are other configurations (v_scaling averaged them into one row). A layout trial (ranks_per_node)
# varies its nodes within its group.
matrix ranked '[axes]' 'ranks = [2]' 'nodes = [1]'
"$dtnn" run ../matrices/ranked.toml --db "$work/l.db" > "$work/ranked.out" 2>&1 || { cat "$work/ranked.out"; fail "matrix ranked failed"; }
got="$(q "SELECT id, (';' || config_key || ';') LIKE '%;nodes=1;%' FROM runs ORDER BY id")"
want="1,0
2,0
3,1"
[ "$got" = "$want" ] || fail "nodes in the scaling groups (run, has nodes=1): got
$got
want
$want"
echo "mpirun layouts: ok (threads per rank $expect, $version)"
