#!/usr/bin/env python3
"""The analysis scripts that read a results database, on databases with the store's real schema (created by
`dtnn ingest` of an empty benchmark file, which runs every migration) and made-up rows, against figures
computed by hand below (the expected numbers are literals, not the scripts' own arithmetic re-run).

  test_analysis_scripts.py DTNN SOURCE_DIR WORK

1. analysis/averaging_targets.py DB1 DB2 (seed 0 and seed 1): table 1 takes the mean over repeats (3 repeats
   whose mean and median differ), the difference sync - gradient and the summary over seeds across both
   databases; table 2 the median over repeats (an even count), the speed-up synchronous / mode (so an
   asynchronous mode that is faster reads > 1x), the accuracy difference mode - synchronous, the '-' cells
   of a group without a synchronous run, and the rows it must leave out: status other than ok, 4 ranks, a
   NULL accuracy, seeds other than 0, synchronous every 2 epochs or every N steps, asynchronous every 2 epochs,
   partially asynchronous every 8 steps.
2. analysis/scaling_table.py DB [EPOCH]: epoch 2 (the default) and epoch 1, the mean over repeats with
   min-max, speed-up and efficiency against the mean of the ok 1-rank runs of the same configuration (its
   transport and reduction mode aside; another batch size is another row with its own baseline), the median
   rank's exposed share from epoch_comm (not the max rank's, not another epoch's; '-' without rows),
   '-' for missing rank counts or a missing 1-rank run, failed and interrupted runs left out.
3. analysis/perfmodel/validate_ranks.py DTNN DB:
   a. with a stand-in DTNN that answers `predict` with chosen step/exposed times and logs its arguments: the
      command lines (the 1-rank run of the same model and scaling and the run itself, the transport's fit rows,
      the mode, --global_batch for strong scaling only), the measured columns from epoch 2's median/min/max
      epoch_comm rows divided by steps, the three errors, own+skew = slowest compute + predicted exposed, and
      the summary (median over an even count); failed runs and runs without a 1-rank run left out;
   b. with the real dtnn on a real `dtnn train --report` of simplecnn (3 steps, under a second) and the
      committed bench_allreduce baselines ingested: the script runs, and its predicted columns are what
      `dtnn predict` itself answers for those options.
4. analysis/plots/report.py --dtnn DTNN --repo R's History: in git's order (not the runs'), a 20 % drop from R's 6th
   of 8 commits is a regression there (x0.80, a chart), a flat trial has no step; with only dirty builds, the error.
Prints every check; exits 1 on any mismatch.
"""
import json
import os
import re
import shutil
import sqlite3
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import analysis_db as adb  # noqa: E402
from analysis_db import HALF_CENT, add_comm, add_epoch, add_run, check, new_db, num, run, table  # noqa: E402

# ---- 1. analysis/averaging_targets.py ------------------------------------------------------------------------

def averaging_targets(dtnn, source, work):
    print("\n== analysis/averaging_targets.py ==")
    db0, db1 = os.path.join(work, "averaging_seed0.db"), os.path.join(work, "averaging_seed1.db")
    con = new_db(dtnn, db0, work)

    def r(model, mode="none", straggler="", seed=0, ranks=2, status="ok", dur=None, acc=None, train=None, **extra):
        p = {"model": model, "seed": seed, "model_averaging": mode, "straggler_ms": straggler, "ranks": ranks,
             "batch_size": 64, "test_as_validation": True}
        p.update(extra)
        add_run(con, p, status=status, duration_s=dur, test_accuracy=acc, train_time_s=train)

    s = "simplecnn"
    # No straggler, seed 0. Gradient: 3 repeats, accuracy mean 81.00 (median 80.00: table 2 uses it).
    r(s, dur=2.0, acc=80.0, train=1.5)
    r(s, dur=2.6, acc=80.0, train=1.9)
    r(s, dur=2.2, acc=83.0, train=1.7)
    r(s, status="failed", dur=0.1, acc=10.0, train=0.1)               # not ok: nowhere
    r(s, ranks=4, dur=0.2, acc=50.0, train=0.1)                       # 4 ranks: nowhere
    r(s, "synchronous", average_every_steps=1, dur=9.9, acc=81.5, train=9.0)  # table 1 only
    r(s, "synchronous", average_every_epochs=1, dur=3.0, acc=81.0, train=2.5)  # table 2's reference
    r(s, "asynchronous", dynamic_blocks=True, blocks_per_worker=4, dur=3.3, acc=79.9, train=2.8)
    # Straggler 1:15, seed 0. Synchronous every epoch: 4 repeats (median of an even count) and a timeout.
    for dur, acc, train in ((10.0, 80.0, 8.0), (12.0, 82.0, 9.0), (11.0, 81.0, 10.0), (30.0, 79.0, 11.0)):
        r(s, "synchronous", "1:15", average_every_epochs=1, dur=dur, acc=acc, train=train)
    r(s, "synchronous", "1:15", status="timeout", average_every_epochs=1, dur=1.0, acc=60.0, train=1.0)
    r(s, "synchronous", "1:15", average_every_epochs=2, dur=100.0, acc=70.0, train=90.0)  # every 2 epochs: out
    r(s, "synchronous", "1:15", average_every_steps=8, dur=1.0, acc=75.0, train=0.5)       # every 8 steps: out
    r(s, "asynchronous", "1:15", average_every_epochs=1, dur=5.0, acc=79.0, train=4.0)
    r(s, "asynchronous", "1:15", average_every_epochs=1, dur=6.0, acc=80.0, train=5.0)
    r(s, "asynchronous", "1:15", average_every_epochs=1, dur=0.1, acc=None, train=0.1)     # no accuracy: out
    r(s, "asynchronous", "1:15", average_every_epochs=2, dur=1.0, acc=70.0, train=0.8)     # every 2 epochs: out
    r(s, "asynchronous", "1:15", ranks=4, average_every_epochs=1, dur=0.5, acc=70.0, train=0.4)  # 4 ranks: out
    r(s, "partially_asynchronous", "1:15", average_every_steps=1, dur=7.0, acc=80.2, train=6.0)
    r(s, "partially_asynchronous", "1:15", average_every_steps=8, dur=1.5, acc=70.0, train=1.0)  # every 8: out
    r(s, "partially_asynchronous", "1:15", dynamic_blocks=True, dur=6.4, acc=80.9, train=5.1)
    r(s, "asynchronous", "1:15", dynamic_blocks=True, dur=4.4, acc=78.6, train=3.5)
    r(s, "none", "1:15", dur=12.5, acc=81.2, train=10.0)
    # resnet20: no synchronous run at all ('-' cells), and no table 1 row (no synchronous every step).
    r("resnet20_cifar10", dur=20.0, acc=75.0, train=15.0)
    r("resnet20_cifar10", "asynchronous", "1:400", average_every_epochs=1, dur=40.0, acc=70.0, train=30.0)
    con.commit()
    con.close()

    con = new_db(dtnn, db1, work)  # seed 1: table 1 only
    r(s, seed=1, dur=2.1, acc=79.0, train=1.6)
    r(s, "synchronous", seed=1, average_every_steps=1, dur=9.0, acc=78.3, train=8.0)
    r(s, "asynchronous", "1:15", seed=1, average_every_epochs=1, dur=0.5, acc=50.0, train=0.4)  # seed 1: out
    con.commit()
    con.close()

    out = run(["/usr/bin/python3", os.path.join(source, "analysis", "averaging_targets.py"), db0, db1])
    print(out)

    t1 = table(out, "## 1.")
    check("table 1: rows (model, seed)", sorted((c[0], c[1]) for c in t1), [(s, "0"), (s, "1")])
    want1 = {"0": (81.00, 81.50, +0.50),   # gradient mean (80 + 80 + 83) / 3, sync 81.5, 81.5 - 81.0
             "1": (79.00, 78.30, -0.70)}   # 78.3 - 79.0
    for c in t1:
        g, sy, d = want1[c[1]]
        check(f"table 1 seed {c[1]}: gradient accuracy (mean of repeats)", num(c[2]), g, HALF_CENT)
        check(f"table 1 seed {c[1]}: synchronous every step", num(c[3]), sy, HALF_CENT)
        check(f"table 1 seed {c[1]}: difference (sync - gradient)", num(c[4]), d, HALF_CENT)
    m = re.search(r"^simplecnn: mean difference ([-+0-9.]+) points over (\d+) seeds \(min ([-+0-9.]+), "
                  r"max ([-+0-9.]+)\)$", out, re.M)
    check("table 1 summary line present", m is not None, True)
    if m:
        check("summary: mean difference (0.50 - 0.70) / 2", float(m.group(1)), -0.10, HALF_CENT)
        check("summary: seeds", int(m.group(2)), 2)
        check("summary: min", float(m.group(3)), -0.70, HALF_CENT)
        check("summary: max", float(m.group(4)), +0.50, HALF_CENT)
    check("table 1: no resnet20 summary (no synchronous-every-step run)", "resnet20_cifar10: mean" in out, False)

    # Table 2: (runs, median wall, min, max, speed-up, median train, speed-up, median accuracy, vs synchronous).
    # simplecnn 1:15's synchronous reference: wall median of 10, 11, 12, 30 = 11.5, training 9.5, accuracy 80.5.
    # simplecnn none's: one run, 3.0 s, 2.5 s, 81.0 %.
    want2 = {
        (s, "none", "gradient"): (3, 2.2, 2.0, 2.6, 3.0 / 2.2, 1.7, 2.5 / 1.7, 80.0, -1.0),  # 1.36x, 1.47x
        (s, "none", "synchronous"): (1, 3.0, 3.0, 3.0, 1.0, 2.5, 1.0, 81.0, 0.0),
        (s, "none", "asynchronous, dynamic blocks"): (1, 3.3, 3.3, 3.3, 3.0 / 3.3, 2.8, 2.5 / 2.8, 79.9, -1.1),
        (s, "1:15", "synchronous"): (4, 11.5, 10.0, 30.0, 1.0, 9.5, 1.0, 80.5, 0.0),
        (s, "1:15", "asynchronous"): (2, 5.5, 5.0, 6.0, 11.5 / 5.5, 4.5, 9.5 / 4.5, 79.5, -1.0),  # 2.09x, 2.11x
        (s, "1:15", "partially_asynchronous"): (1, 7.0, 7.0, 7.0, 11.5 / 7.0, 6.0, 9.5 / 6.0, 80.2, -0.3),
        (s, "1:15", "partially_asynchronous, dynamic blocks"):
            (1, 6.4, 6.4, 6.4, 11.5 / 6.4, 5.1, 9.5 / 5.1, 80.9, 0.4),
        (s, "1:15", "asynchronous, dynamic blocks"): (1, 4.4, 4.4, 4.4, 11.5 / 4.4, 3.5, 9.5 / 3.5, 78.6, -1.9),
        (s, "1:15", "gradient"): (1, 12.5, 12.5, 12.5, 11.5 / 12.5, 10.0, 9.5 / 10.0, 81.2, 0.7),  # 0.92x
        ("resnet20_cifar10", "none", "gradient"): (1, 20.0, 20.0, 20.0, None, 15.0, None, 75.0, None),
        ("resnet20_cifar10", "1:400", "asynchronous"): (1, 40.0, 40.0, 40.0, None, 30.0, None, 70.0, None),
    }
    t2 = table(out, "## 2.")
    got2 = {(c[0], c[1], c[2]): c for c in t2}
    check("table 2: rows (model, straggler, mode)", sorted(got2), sorted(want2))
    for key, (n, wall, lo, hi, su, tr, sur, acc, da) in want2.items():
        c = got2.get(key)
        if c is None:
            continue
        name = "table 2 " + "/".join(key)
        check(f"{name}: runs", int(c[3]), n)
        w = re.fullmatch(r"([0-9.]+) \(([0-9.]+)-([0-9.]+)\)", c[4])
        check(f"{name}: wall cell 'median (min-max)'", w is not None, True)
        if w:
            check(f"{name}: wall median", float(w.group(1)), wall, HALF_CENT)
            check(f"{name}: wall min", float(w.group(2)), lo, HALF_CENT)
            check(f"{name}: wall max", float(w.group(3)), hi, HALF_CENT)
        check(f"{name}: speed-up synchronous/mode", num(c[5], "x"), su, None if su is None else HALF_CENT)
        check(f"{name}: rank 0 training median", num(c[6]), tr, HALF_CENT)
        check(f"{name}: training speed-up", num(c[7], "x"), sur, None if sur is None else HALF_CENT)
        check(f"{name}: accuracy median", num(c[8]), acc, HALF_CENT)
        check(f"{name}: accuracy - synchronous", num(c[9]), da, None if da is None else HALF_CENT)


# ---- 2. analysis/scaling_table.py ----------------------------------------------------------------------------

def scaling_table(dtnn, source, work):
    print("\n== analysis/scaling_table.py ==")
    db = os.path.join(work, "scaling.db")
    con = new_db(dtnn, db, work)

    def r(model, scaling, transport, nb, ranks, ep2, ep1=None, status="ok", batch=64):
        i = add_run(con, {"model": model, "scaling": scaling, "transport": transport, "non_blocking_mpi": nb,
                          "ranks": ranks, "batch_size": batch}, status=status)
        add_epoch(con, i, 2, ep2)
        if ep1 is not None:
            add_epoch(con, i, 1, ep1)
        return i

    s = "simplecnn"
    r(s, "weak", "shm", False, 1, 1000.0, 400.0)
    r(s, "weak", "shm", False, 1, 1200.0, 600.0)       # 1 rank: mean 1100 (epoch 1: 500)
    r(s, "weak", "shm", False, 1, 5000.0, 5000.0, status="failed")
    a = r(s, "weak", "shm", False, 2, 1800.0, 900.0)
    add_comm(con, a, 2, "median", 10, 1.0, 0.8, 0.1)
    add_comm(con, a, 2, "max", 10, 1.0, 0.1, 0.9)     # not the median rank
    add_comm(con, a, 1, "median", 10, 1.0, 0.4, 0.5)
    b = r(s, "weak", "shm", False, 2, 2000.0, 1100.0)
    add_comm(con, b, 2, "median", 10, 1.0, 0.6, 0.3)
    add_comm(con, b, 1, "median", 10, 1.0, 0.2, 0.7)
    c = r(s, "weak", "shm", False, 4, 3300.0, 1000.0)
    add_comm(con, c, 2, "median", 10, 2.0, 1.5, 0.5)  # no epoch 1 row: exposed '-' in epoch 1
    r(s, "weak", "shm", False, 16, 8800.0)             # no epoch 1: '-' at 16 ranks in epoch 1
    r(s, "weak", "tcp", True, 2, 1650.0, 700.0)        # no epoch_comm: exposed '-'
    # Another batch size: its own row against its own 1-rank run (the rows above must not pool it).
    r(s, "weak", "shm", False, 1, 2000.0, 1000.0, batch=128)
    r(s, "weak", "shm", False, 2, 3000.0, 1600.0, batch=128)
    r(s, "weak", "tcp", True, 2, 99999.0, 99999.0, status="interrupted")
    r(s, "strong", "shm", False, 1, 800.0, 300.0)      # a 1-rank run alone: no row
    r("resnet20_cifar10", "weak", "shm", False, 1, 100.0, 50.0)  # another scaling's 1-rank run: not strong's
    d = r("resnet20_cifar10", "strong", "shm", True, 2, 500.0, 250.0)
    add_comm(con, d, 2, "median", 10, 0.2, 0.15, 0.02, mode="non_blocking")
    con.commit()
    con.close()

    script = os.path.join(source, "analysis", "scaling_table.py")
    # epoch -> {(model, scaling, transport, reduction, configuration):
    #           (1 rank, {ranks: (mean, min, max, speed-up, eff %, exposed % or None for '-')})}
    b64, b128 = "batch_size=64", "batch_size=128"
    want = {
        2: {(s, "weak", "shm", "blocking", b64): (1100, {2: (1900, 1800, 2000, 1900 / 1100, 100 * 1900 / 1100 / 2, 20),
                                                         4: (3300, None, None, 3.0, 75, 25),
                                                         16: (8800, None, None, 8.0, 50, None)}),
            (s, "weak", "shm", "blocking", b128): (2000, {2: (3000, None, None, 1.5, 75, None)}),
            (s, "weak", "tcp", "non-blocking", b64): (1100, {2: (1650, None, None, 1.5, 75, None)}),
            ("resnet20_cifar10", "strong", "shm", "non-blocking", b64): (None, {2: (500, None, None, None, None, 10)})},
        1: {(s, "weak", "shm", "blocking", b64): (500, {2: (1000, 900, 1100, 2.0, 100, 60),
                                                        4: (1000, None, None, 2.0, 50, None)}),
            (s, "weak", "shm", "blocking", b128): (1000, {2: (1600, None, None, 1.6, 80, None)}),
            (s, "weak", "tcp", "non-blocking", b64): (500, {2: (700, None, None, 1.4, 70, None)}),
            ("resnet20_cifar10", "strong", "shm", "non-blocking", b64): (None, {2: (250, None, None, None, None, None)})},
    }
    for epoch, args in ((2, []), (1, ["1"])):
        out = run(["/usr/bin/python3", script, db] + args)
        print(out)
        check(f"epoch {epoch}: heading names the epoch", out.startswith(f"Epoch {epoch},"), True)
        rows = {tuple(c[:5]): c for c in table(out, "Epoch")}
        check(f"epoch {epoch}: rows (model, scaling, transport, reduction, configuration)", sorted(rows),
              sorted(want[epoch]))
        for key, (one, cells) in want[epoch].items():
            c = rows.get(key)
            if c is None:
                continue
            name = f"epoch {epoch} " + "/".join(key)
            check(f"{name}: 1 rank (mean of the ok 1-rank runs)", num(c[5]), one, 0.5 if one else None)
            for col, ranks in enumerate((2, 4, 8, 16), start=6):
                w = cells.get(ranks)
                if w is None:
                    check(f"{name}: {ranks} ranks", c[col], "-")
                    continue
                sps, lo, hi, su, eff, exp = w
                m = re.fullmatch(r"([0-9]+)(?: \(([0-9]+)-([0-9]+)\))?(?:, ([0-9.]+)x, ([0-9]+) %)?"
                                 r", exposed (?:([0-9]+) %|-)", c[col])
                check(f"{name}: {ranks} ranks cell format", m is not None, True)
                if not m:
                    print("      cell: " + c[col])
                    continue
                check(f"{name}: {ranks} ranks samples/s (mean of repeats)", float(m.group(1)), sps, 0.5)
                check(f"{name}: {ranks} ranks min", m.group(2) and float(m.group(2)), lo, None if lo is None else 0.5)
                check(f"{name}: {ranks} ranks max", m.group(3) and float(m.group(3)), hi, None if hi is None else 0.5)
                check(f"{name}: {ranks} ranks speed-up", m.group(4) and float(m.group(4)), su,
                      None if su is None else HALF_CENT)
                check(f"{name}: {ranks} ranks efficiency %", m.group(5) and float(m.group(5)), eff,
                      None if eff is None else 0.5)
                check(f"{name}: {ranks} ranks exposed % (median rank)", m.group(6) and float(m.group(6)), exp,
                      None if exp is None else 0.5)


# ---- 3. analysis/perfmodel/validate_ranks.py -----------------------------------------------------------------

STUB = r'''#!/usr/bin/python3
# A stand-in dtnn: `predict` answers from predictions.json, keyed by from-run:ranks:fit-transport:mode.
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
a = sys.argv[1:]
with open(os.path.join(here, "calls.jsonl"), "a") as f:
    f.write(json.dumps(a) + "\n")
def opt(name):
    return a[a.index(name) + 1] if name in a else None
key = ":".join(str(opt(n)) for n in ("--from-run", "--ranks", "--fit-transport", "--mode"))
table = json.load(open(os.path.join(here, "predictions.json")))
if a[:1] != ["predict"] or key not in table:
    sys.exit("stub dtnn: no prediction for " + key)
step, exposed = table[key]
print(json.dumps({"schema": "dtnn.prediction/1", "rows": [{"ranks": int(opt("--ranks")), "step_s": step,
                                                         "exposed_s": exposed}]}))
'''


def validate_ranks_row(cells):
    """(step, cmin, cmed, cmax, exposed, from1, err1, own, err_own, skew, err_skew) of one table row."""
    cmin, cmed, cmax = (float(x) for x in cells[6].split(" / "))
    return (float(cells[5]), cmin, cmed, cmax, float(cells[7]), float(cells[8]), num(cells[9], "%"),
            float(cells[10]), num(cells[11], "%"), float(cells[12]), num(cells[13], "%"))


def validate_ranks_stub(dtnn, source, work):
    print("\n== analysis/perfmodel/validate_ranks.py with a stand-in dtnn ==")
    stub_dir = os.path.join(work, "stub")
    os.makedirs(stub_dir, exist_ok=True)
    stub = os.path.join(stub_dir, "dtnn")
    with open(stub, "w") as f:
        f.write(STUB)
    os.chmod(stub, os.stat(stub).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    calls = os.path.join(stub_dir, "calls.jsonl")
    if os.path.exists(calls):
        os.remove(calls)
    db = os.path.join(work, "validate_stub.db")
    con = new_db(dtnn, db, work)

    def r(model, scaling, transport, nb, ranks, batch=64, status="ok"):
        return add_run(con, {"model": model, "scaling": scaling, "transport": transport, "non_blocking_mpi": nb,
                             "ranks": ranks, "batch_size": batch}, status=status)

    s = "simplecnn"
    one_weak = r(s, "weak", "shm", False, 1)
    r(s, "weak", "shm", False, 1, batch=32)  # another configuration's 1-rank run: no run's baseline
    w2 = r(s, "weak", "shm", False, 2)
    w2tcp = r(s, "weak", "tcp", True, 2)
    w4 = r(s, "weak", "shm", False, 4)
    r(s, "weak", "shm", False, 2, status="failed")             # no epoch_comm: must be left out
    one_strong = r(s, "strong", "shm", False, 1, batch=128)
    s2 = r(s, "strong", "shm", False, 2, batch=128)
    r("resnet20_cifar10", "weak", "shm", False, 2)             # no 1-rank run: left out
    # epoch_comm sums over the epoch's steps (median / min / max rank); epoch 1 must not be read.
    for run_id, steps, med, cmin, cmax in (
            (w2, 10, (0.050, 0.040, 0.008), 0.035, 0.045),     # 5.00 ms; 3.50 / 4.00 / 4.50; 0.80
            (w4, 20, (0.200, 0.150, 0.040), 0.120, 0.180),     # 10.00 ms; 6.00 / 7.50 / 9.00; 2.00
            (w2tcp, 10, (0.080, 0.060, 0.012), 0.055, 0.070),  # 8.00 ms; 5.50 / 6.00 / 7.00; 1.20
            (s2, 5, (0.030, 0.020, 0.005), 0.018, 0.025)):     # 6.00 ms; 3.60 / 4.00 / 5.00; 1.00
        add_comm(con, run_id, 2, "median", steps, *med)
        add_comm(con, run_id, 2, "min", steps, 9.0, cmin, 9.0)  # the min/max rows' step and exposed: unused
        add_comm(con, run_id, 2, "max", steps, 9.0, cmax, 9.0)
        add_comm(con, run_id, 1, "median", steps, 99.0, 99.0, 99.0)
        add_comm(con, run_id, 1, "min", steps, 99.0, 99.0, 99.0)
        add_comm(con, run_id, 1, "max", steps, 99.0, 99.0, 99.0)
    con.commit()
    con.close()
    with open(os.path.join(stub_dir, "predictions.json"), "w") as f:
        json.dump({f"{one_weak}:2:default:blocking": [0.0046, 0.0009], f"{w2}:2:default:blocking": [0.0054, 0.0006],
                   f"{one_weak}:4:default:blocking": [0.0080, 0.0010], f"{w4}:4:default:blocking": [0.0115, 0.0015],
                   f"{one_weak}:2:btl=self,tcp:non_blocking": [0.0084, 0.0020],
                   f"{w2tcp}:2:btl=self,tcp:non_blocking": [0.0076, 0.0016],
                   f"{one_strong}:2:default:blocking": [0.0063, 0.0008], f"{s2}:2:default:blocking": [0.0057, 0.0007]},
                  f)

    out = run(["/usr/bin/python3", os.path.join(source, "analysis", "perfmodel", "validate_ranks.py"), stub, db])
    print(out)
    rows = [[x.strip() for x in l.strip().strip("|").split("|")] for l in out.splitlines()
            if l.startswith("| ") and not l.startswith("| model |") and not l.startswith("| ---")]
    got = {(c[1], c[2], c[3], c[4]): c for c in rows}
    # (step, cmin, cmed, cmax, exposed, from 1, error, own, error, own+skew, error), ms and %:
    #   error = (predicted - step) / step; own+skew = cmax + the own prediction's exposed.
    want = {
        ("weak", "shm", "blocking", "2"): (5.00, 3.50, 4.00, 4.50, 0.80, 4.60, -8.0, 5.40, +8.0, 4.50 + 0.60, +2.0),
        ("weak", "shm", "blocking", "4"): (10.00, 6.00, 7.50, 9.00, 2.00, 8.00, -20.0, 11.50, +15.0, 9.00 + 1.50, +5.0),
        ("weak", "tcp", "non_blocking", "2"): (8.00, 5.50, 6.00, 7.00, 1.20, 8.40, +5.0, 7.60, -5.0, 7.00 + 1.60, +7.5),
        ("strong", "shm", "blocking", "2"): (6.00, 3.60, 4.00, 5.00, 1.00, 6.30, +5.0, 5.70, -5.0, 5.00 + 0.70, -5.0),
    }
    check("validate_ranks: rows (scaling, transport, reduction, ranks)", sorted(got), sorted(want))
    check("validate_ranks: every row simplecnn (resnet20 has no 1-rank run)", {c[0] for c in rows}, {s})
    names = ("step ms", "compute min ms", "compute median ms", "compute max ms", "exposed ms", "from 1 rank ms",
             "from 1 rank error %", "own profile ms", "own error %", "own+skew ms", "own+skew error %")
    for key, w in want.items():
        c = got.get(key)
        if c is None:
            continue
        for name, g, x in zip(names, validate_ranks_row(c), w):
            check(f"validate_ranks {'/'.join(key)}: {name}", g, x, 0.05 if name.endswith("%") else HALF_CENT)
    # The summary: |errors| from 1 = 8, 20, 5, 5 (median of an even count: (5 + 8) / 2 = 6.5); own 8, 15, 5, 5
    # (6.5); own+skew 2, 5, 7.5, 5 ((5 + 5) / 2 = 5.0).
    for label, med, mx, within in (("from 1", 6.5, 20.0, 3), ("own", 6.5, 15.0, 3), ("own+skew", 5.0, 7.5, 4)):
        m = re.search(rf"^- {re.escape(label)}: \|error\| median ([0-9.]+) %, max ([0-9.]+) %, "
                      r"(\d+) of (\d+) within 10 %$", out, re.M)
        check(f"validate_ranks summary '{label}' present", m is not None, True)
        if m:
            check(f"summary {label}: median |error|", float(m.group(1)), med, 0.051)
            check(f"summary {label}: max |error|", float(m.group(2)), mx, 0.05)
            check(f"summary {label}: within 10 %", (int(m.group(3)), int(m.group(4))), (within, 4))

    # The command lines: one pair per multi-rank run, the transport's fit rows, the mode, --global_batch if strong.
    with open(calls) as f:
        logged = [json.loads(line) for line in f]

    def opts(a):
        o = {a[i]: a[i + 1] for i in range(1, len(a) - 1) if a[i].startswith("--") and not a[i + 1].startswith("--")}
        o["--json"] = "--json" in a
        return o

    got_calls = sorted((o["--from-run"], o["--ranks"], o["--fit-transport"], o["--mode"], o["--scaling"],
                        o.get("--global_batch")) for o in map(opts, logged))
    want_calls = sorted([
        (str(one_weak), "2", "default", "blocking", "weak", None), (str(w2), "2", "default", "blocking", "weak", None),
        (str(one_weak), "4", "default", "blocking", "weak", None), (str(w4), "4", "default", "blocking", "weak", None),
        (str(one_weak), "2", "btl=self,tcp", "non_blocking", "weak", None),
        (str(w2tcp), "2", "btl=self,tcp", "non_blocking", "weak", None),
        (str(one_strong), "2", "default", "blocking", "strong", "128"),
        (str(s2), "2", "default", "blocking", "strong", "128")])
    check("validate_ranks: predict calls (from-run, ranks, fit-transport, mode, scaling, global_batch)",
          got_calls, want_calls)
    for o in map(opts, logged):
        if (o["--db"], o["--platform"], o["--fit-collectives"], o["--fit-max-bytes"], o["--json"]) != \
                (db, "localhost2", "db", "16777216", True):
            check("validate_ranks: common predict options", o, "--db DB --platform localhost2 --fit-collectives db "
                  "--fit-max-bytes 16777216 --json")
            break
    else:
        check("validate_ranks: every call has --db DB --platform localhost2 --fit-collectives db "
              "--fit-max-bytes 16777216 --json", True, True)


def validate_ranks_real(dtnn, source, work):
    print("\n== analysis/perfmodel/validate_ranks.py with the real dtnn ==")
    db = os.path.join(work, "validate_real.db")
    report = os.path.join(work, "simplecnn_report.json")
    con = new_db(dtnn, db, work)
    con.close()
    run([dtnn, "train", "--model=simplecnn", "--use_synthetic_data=True", "--steps_per_epoch=3", "--num_epochs=1",
         "--threads=1", "--evaluate_on_test=False", "--progress=False", "--report=" + report], cwd=work)
    baselines = os.path.join(source, "results", "baselines")
    run([dtnn, "ingest", os.path.join(baselines, "allreduce_shm_xeon-emr_2core.json"),
         os.path.join(baselines, "allreduce_tcp_xeon-emr_2core.json"), "--db", db])
    with open(report) as f:
        text = f.read()
    con = sqlite3.connect(db)

    def r(scaling, transport, nb, ranks, batch):
        return add_run(con, {"model": "simplecnn", "scaling": scaling, "transport": transport,
                             "non_blocking_mpi": nb, "ranks": ranks, "batch_size": batch}, report=text)

    one_w = r("weak", "shm", False, 1, 64)
    w2 = r("weak", "shm", False, 2, 64)
    one_s = r("strong", "shm", False, 1, 128)
    s2 = r("strong", "tcp", True, 2, 128)
    for run_id in (w2, s2):
        add_comm(con, run_id, 2, "median", 10, 0.050, 0.040, 0.008)
        add_comm(con, run_id, 2, "min", 10, 0.050, 0.035, 0.008)
        add_comm(con, run_id, 2, "max", 10, 0.050, 0.045, 0.008)
    con.commit()
    con.close()
    out = run(["/usr/bin/python3", os.path.join(source, "analysis", "perfmodel", "validate_ranks.py"), dtnn, db])
    print(out)

    def predict(run_id, transport, mode, scaling, extra=()):
        j = json.loads(run([dtnn, "predict", "--from-run", str(run_id), "--db", db, "--ranks", "2", "--platform",
                            "localhost2", "--fit-collectives", "db", "--fit-transport", transport, "--fit-max-bytes",
                            "16777216", "--mode", mode, "--scaling", scaling, "--json", *extra]))
        return j["rows"][0]["step_s"] * 1e3, j["rows"][0]["exposed_s"] * 1e3

    rows = {(c[1], c[2], c[3], c[4]): validate_ranks_row(c)
            for c in ([x.strip() for x in l.strip().strip("|").split("|")] for l in out.splitlines()
                      if l.startswith("| simplecnn"))}
    check("real dtnn: rows", sorted(rows), sorted([("weak", "shm", "blocking", "2"),
                                                    ("strong", "tcp", "non_blocking", "2")]))
    for key, one, own, transport, mode, extra in (
            (("weak", "shm", "blocking", "2"), one_w, w2, "default", "blocking", ()),
            (("strong", "tcp", "non_blocking", "2"), one_s, s2, "btl=self,tcp", "non_blocking",
             ("--global_batch", "128"))):
        g = rows.get(key)
        if g is None:
            continue
        name = "real dtnn " + "/".join(key)
        p1, _ = predict(one, transport, mode, key[0], extra)
        po, pe = predict(own, transport, mode, key[0], extra)
        check(f"{name}: measured step / compute min, median, max / exposed ms", g[:5], (5.0, 3.5, 4.0, 4.5, 0.8))
        check(f"{name}: from 1 rank = dtnn predict --from-run {one}", g[5], p1, HALF_CENT)
        check(f"{name}: own profile = dtnn predict --from-run {own}", g[7], po, HALF_CENT)
        check(f"{name}: own + skew = max compute 4.50 + predicted exposed {pe:.3f}", g[9], 4.5 + pe, HALF_CENT)
        check(f"{name}: from 1 rank error", g[6], (p1 - 5.0) / 5.0 * 100, 0.0501)
        check(f"{name}: predictions are positive", p1 > 0 and po > 0 and pe >= 0, True)


# ---- 4. analysis/plots/report.py's History section -----------------------------------------------------------

def report_history(dtnn, source, work):
    print("\n== analysis/plots/report.py: the History section ==")
    repo, db, out = (os.path.join(work, n) for n in ("history_repo", "history.db", "history_report"))
    git = ["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for i in range(9):  # git init creates the directory
        run(git + ["commit", "-q", "--allow-empty", "-m", str(i)] if i else ["git", "init", "-q", repo])
    shas = run(git + ["rev-list", "--reverse", "HEAD"]).split()
    con = new_db(dtnn, db, work)
    cols = "host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type, dtnn_version, env_vars"
    for i, sha in enumerate(shas):  # an environment per commit, clean; started in an order other than git's
        env = con.execute(f"INSERT INTO environments ({cols}, git_commit, git_dirty) SELECT {cols}, ?, 0 FROM "
                          "environments WHERE id = 1", (sha,)).lastrowid
        for model, j in (("planted", 0), ("planted", 1), ("flat", 0), ("flat", 1)):
            run_id = add_run(con, {"model": model, "ranks": 1}, test_accuracy=90.0)
            con.execute("UPDATE runs SET environment_id = ?, label = ?, started_at = ? WHERE id = ?",
                        (env, model, f"2026-01-{10 + (5 * i) % 8:02d}T00:00:0{j}Z", run_id))
            add_epoch(con, run_id, 1, 50.0)  # the warm-up epoch: left out; epoch 2: -20 % from the 6th commit on
            add_epoch(con, run_id, 2, (800 if model == "planted" and i >= 5 else 1000) * (1 + (3 * i + j) % 5 / 250))
    con.commit()
    report = ["/usr/bin/python3", os.path.join(source, "analysis", "plots", "report.py"), "--db", db, "--out", out]
    md = lambda: open(os.path.join(out, "report.md")).read().split("## History", 1)[1]
    run(report + ["--dtnn", dtnn, "--repo", repo])
    rows = {c[0]: c for c in table(md(), "### Training samples/s")}
    check("history: samples/s rows (trials)", sorted(rows), ["flat", "planted"])
    planted, flat = rows.get("planted", [""] * 6), rows.get("flat", [""] * 6)
    step = re.fullmatch(r"regression at `(\w+)` \(commit 6 of 8\): [\d.,]+ -> [\d.,]+ \(x([\d.]+)\)", planted[4])
    check("history: planted trial's one step is a regression at the 6th commit", step and step.group(1), shas[5][:12])
    check("history: its ratio after / before", step and float(step.group(2)), 0.8, 0.0051)
    check("history: planted (order, commits, verdict)", [planted[i] for i in (1, 2, 5)], ["git", "8", "**regressed**"])
    check("history: flat trial (steps, verdict)", flat[4:6], ["no step", "steady"])
    check("history: chart history_sps_planted.png", os.path.isfile(os.path.join(out, "history_sps_planted.png")), True)
    con.execute("UPDATE environments SET git_dirty = 1")
    con.commit()
    con.close()
    run(report + ["--dtnn", dtnn])
    check("history of dirty builds only: the command's error line", "No samples_per_s history: `dtnn history` exited "
          "2: dtnn: no ok run in the database has a samples_per_s value from a clean build" in md(), True)  # exit 2: no verdict


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: test_analysis_scripts.py DTNN SOURCE_DIR WORK")
    dtnn, source, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    averaging_targets(dtnn, source, work)
    scaling_table(dtnn, source, work)
    validate_ranks_stub(dtnn, source, work)
    validate_ranks_real(dtnn, source, work)
    report_history(dtnn, source, work)
    print(f"\n{adb.CHECKS - len(adb.FAILURES)} of {adb.CHECKS} checks passed")
    if adb.FAILURES:
        print("FAILED:\n  " + "\n  ".join(adb.FAILURES))
        sys.exit(1)


if __name__ == "__main__":
    main()
