#!/usr/bin/env bash
# suites/bench_allreduce under a real mpirun -np 2, ingested by `dtnn ingest` into a fresh database: every
# rank must run the same cases (a disagreement hangs, and ctest's timeout fails it), rank 0 alone must write
# (stdout is one JSON document that ingests; rank 1 must not truncate --benchmark_out's file, which ingests
# to the very same rows), and the rows must carry 2 ranks, both operations, and a positive finite bytes/s.
# Usage: test_bench_allreduce.sh MPIEXEC "MPIRUN_FLAGS" BENCH_ALLREDUCE DTNN WORK
set -euo pipefail
mpiexec=$1 flags=$2 bench=$3 dtnn=$4 work=$5
rm -rf "$work" && mkdir -p "$work"
# shellcheck disable=SC2086  # flags is a list
"$mpiexec" -np 2 $flags "$bench" --benchmark_filter=/4096/ --case_time=0.02 --benchmark_repetitions=2 \
  --benchmark_format=json --benchmark_out="$work/out.json" --benchmark_out_format=json > "$work/a.json"
"$dtnn" ingest "$work/a.json" --db "$work/t.db"
again=$("$dtnn" ingest "$work/out.json" --db "$work/t.db")
echo "$again"
grep -q "2 row(s) from bench_allreduce.*2 of them already stored (skipped)" <<< "$again" ||
  { echo "FAIL: --benchmark_out's file is not the same rows as stdout"; exit 1; }
# The transport bench_allreduce says it was asked for: mpirun --mca btl/pml reach it as these variables.
transport=""
[ -n "${OMPI_MCA_btl+x}" ] && transport="btl=$OMPI_MCA_btl"
[ -n "${OMPI_MCA_pml+x}" ] && transport="${transport:+$transport;}pml=$OMPI_MCA_pml"
transport=${transport:-default}
check() {  # SQL returning one number, expected value
  got=$("$dtnn" query "$1" --db "$work/t.db" --format csv | tail -n 1)
  [ "$got" = "$2" ] || { echo "FAIL: $1 -> '$got', expected '$2'"; exit 1; }
}
check "SELECT count(*) FROM collective_benchmarks" 2
check "SELECT count(DISTINCT op) FROM collective_benchmarks WHERE bytes = 4096 AND ranks = 2 AND repetitions = 2" 2
check "SELECT count(*) FROM collective_benchmarks WHERE bytes_per_s > 0 AND bytes_per_s < 1e300 \
AND bus_bytes_per_s = bytes_per_s AND time_min_s <= time_s AND time_s <= time_max_s AND time_stddev_s >= 0 \
AND transport = '$transport' AND mpi_library LIKE 'Open MPI%'" 2
"$dtnn" query collectives --db "$work/t.db"
echo "bench_allreduce under mpirun: ok"
