#!/usr/bin/env python3
"""The model against measured dtnn steps at 1-N ranks of one machine (the 16-core check).

Input: a results database of experiments/scaling_cpu_16core.toml (or any matrix with ranks, transport,
non_blocking_mpi and scaling axes) with the machine's bench_allreduce results ingested (`dtnn ingest`), e.g.
what `ci/gpu_distributed.sh BUNDLE OUT cpu_scaling` returns. For every ok multi-rank run it prints, per
training step of epoch 2 (epoch 1 is warm-up):

  measured   the median rank's step, the compute of the fastest / median / slowest rank, the median rank's
             exposed communication (time waiting after its own backward pass: the transfer and the wait for
             slower ranks alike);
  from 1     `dtnn predict --from-run <the 1-rank run of the same configuration>` (the store's
             v_scaling_groups: the same environment and parameters, transport and reduction mode aside): scaling predicted
             from one rank (the model assumes a rank computes as fast with 15 neighbours as alone);
  own        `dtnn predict --from-run <this run>`: the same run's layer times (rank 0's), so only the
             communication model and the schedule are tested;
  own+skew   the slowest rank's measured compute plus the model's exposed communication: what the model
             gives once it is told how unequal the ranks were (it has no notion of imbalance).

The link is fitted (`--fit-collectives db`) to the database's bench_allreduce rows of the run's transport
(shared memory: 'default'; TCP: 'btl=self,tcp'), all rank counts together, sizes up to 16 MiB, gamma fixed.

Usage: /usr/bin/python3 analysis/perfmodel/validate_ranks.py DTNN_BINARY DB > table.md
"""
import json
import os
import sqlite3
import statistics
import subprocess
import sys


def predict(dtnn, db, run_id, ranks, transport, mode, scaling, global_batch):
    cmd = [dtnn, "predict", "--from-run", str(run_id), "--db", db, "--ranks", str(ranks), "--platform", "localhost2",
           "--fit-collectives", "db", "--fit-transport", "default" if transport == "shm" else "btl=self,tcp",
           "--fit-max-bytes", "16777216", "--mode", mode, "--scaling", scaling, "--json"]
    if scaling == "strong":
        cmd += ["--global_batch", str(global_batch)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"validate_ranks.py: {' '.join(cmd)}: {out.stderr.strip()}")
    row = json.loads(out.stdout)["rows"][0]
    return row["step_s"], row["exposed_s"]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    dtnn, db = sys.argv[1], sys.argv[2]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    runs = con.execute(
        "SELECT id, model, ranks, json_extract(params, '$.transport'), json_extract(params, '$.non_blocking_mpi'),"
        " json_extract(params, '$.scaling'), json_extract(params, '$.batch_size'), environment_id, config_key"
        " FROM runs WHERE status = 'ok' ORDER BY model, 6, 4, 5, ranks").fetchall()
    # A 1-rank run of each multi-rank run's configuration, transport and reduction mode aside (the store's
    # grouping of scaling studies: v_scaling_groups).
    one = dict(con.execute(
        "SELECT g.run_id, max(o.run_id) FROM v_scaling_groups g JOIN v_scaling_groups o"
        " ON o.environment_id = g.environment_id AND o.matrix = g.matrix AND o.baseline_key = g.baseline_key"
        " AND o.ranks = 1 GROUP BY g.run_id"))

    def comm(run_id, stat):
        return con.execute("SELECT step_s / steps, compute_s / steps, exposed_s / steps FROM epoch_comm"
                           " WHERE run_id = ? AND epoch = 2 AND stat = ?", (run_id, stat)).fetchone()

    print("| model | scaling | transport | reduction | ranks | step ms | compute ms (min / median / max) | "
          "exposed ms | from 1 rank ms | error | own profile ms | error | own + skew ms | error |")
    print("| --- | --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    errors = {"from 1": [], "own": [], "own+skew": []}
    for run_id, model, ranks, transport, nb, scaling, batch, env, key in runs:  # strong: batch is the global batch
        base = one.get(run_id)
        if ranks == 1 or base is None:
            continue
        mode = "non_blocking" if nb in (1, "true", "True", True) else "blocking"
        step, cmed, exposed = comm(run_id, "median")
        cmin, cmax = comm(run_id, "min")[1], comm(run_id, "max")[1]
        p1, _ = predict(dtnn, db, base, ranks, transport, mode, scaling, batch)
        po, pe = predict(dtnn, db, run_id, ranks, transport, mode, scaling, batch)
        ps = cmax + pe
        e = [(p - step) / step * 100 for p in (p1, po, ps)]
        for k, v in zip(errors, e):
            errors[k].append(abs(v))
        print(f"| {model} | {scaling} | {transport} | {mode} | {ranks} | {step * 1e3:.2f} | {cmin * 1e3:.2f} / "
              f"{cmed * 1e3:.2f} / {cmax * 1e3:.2f} | {exposed * 1e3:.2f} | {p1 * 1e3:.2f} | {e[0]:+.1f} % | "
              f"{po * 1e3:.2f} | {e[1]:+.1f} % | {ps * 1e3:.2f} | {e[2]:+.1f} % |")
    print()
    for k, v in errors.items():
        if v:
            within = sum(x <= 10 for x in v)
            print(f"- {k}: |error| median {statistics.median(v):.1f} %, max {max(v):.1f} %, {within} of {len(v)} "
                  f"within 10 %")


if __name__ == "__main__":
    main()
