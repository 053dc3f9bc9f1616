#!/usr/bin/python3
"""--tracing under a real mpirun -np 2 (ctest mpi.trace_2_ranks).

    test_trace.py DTNN MPIRUN_FLAGS... -- WORKDIR

Trains resnet20 (synthetic CIFAR-10) for 2 x 4 steps on 2 ranks, blocking and non-blocking, with --tracing, checks the files against the
formats as their specifications state them (not against dtnn's writer), and against dtnn's own report:
- Chrome trace (the trace-event format: an object with "traceEvents"; X events carry name, ph, ts, dur, pid,
  tid; M events name processes and threads): valid JSON, every X event's fields typed as the format says,
  both ranks present and named, and per (pid, tid) the X events nest (any two are disjoint or one contains
  the other).
- Per rank and step, the events inside the step cover at least 95 % of the step's duration.
- Non-blocking: each step of each rank has exactly one in-flight event per bucket the report says were
  reduced (buckets_per_step), each on its own lane, with the bucket's bytes summing to bytes_per_step.
- PyDTNN's CSV: the exact header, ';'-separated rows of 6 fields, names "<id>_<Type>_<event>" for type
  60000001 with value = id * 5 + code; its forward/backward totals equal rank 0's JSON sums (1e-6 s).
- Paraver (non-blocking: a.prv; blocking: a directory, DIR/dtnn.prv): paraver_check.py (the format: header,
  records, order, pairing, .pcf names, .row sizes) passes; one task per rank, non-blocking one thread per
  bucket besides the training thread; rank 0's per-layer forward/backward totals (type 60000001, task 1
  thread 1, each 0 paired with its begin) and every CSV row's total (rank 0's threads) equal the CSV's
  (1e-6 s: nanosecond rounding).
- Tracing on vs off: identical losses in the report and identical weights (NPZ arrays).
- A --tracer_output of unknown kind (run.xyz) or in a missing directory (missing/): exit 1, one line.
- Operation events (the convolution algorithms' phases; blocking mode runs --conv_algo=im2row_gemm so its
  per-chunk im2row/gemm/row2im phases are there, non-blocking the default algorithms): each on the training
  thread inside a forward (forward_* ops) or backward (backward_*, comp_* ops) event of the layer that owns
  it (the op's layer, or the block containing it: the top-level layer with the largest id not above it);
  CSV rows of type 60000002 named "<id>_<Type>_<op>" with PyDTNN's operation names and value = id * 55 +
  PyDTNN's code (OpsEventEnum, its newest events list), of type 60000004 (dtnn's own operations) with value =
  id * 16 + one code per name; their totals equal rank 0's JSON sums per (layer, op); no events dropped.
The files come from one run (--tracer_output=a.json,a.csv,a.prv), which also prints --profile's table: its
forward/backward calls and rank 0 totals must equal the CSV's, and so must its per-operation rows.
Prints one line per check and exits 1 if any failed.
"""
import bisect
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paraver_check  # noqa: E402 (beside this file)

failures = 0

# PyDTNN's operation events (pydtnn/tracers/events.py, OpsEventEnum: code = position + 1, name = member in
# lower case), written down here from PyDTNN, not from dtnn's writer.
PYDTNN_OPS = """allreduce backward_convgemm backward_cublas_matmul_dw backward_cublas_matmul_dx
backward_cublas_matvec_db backward_cudnn_db backward_cudnn_dw backward_cudnn_dx backward_deconv_gemm
backward_eltw_sum backward_im2col backward_reshape_dw backward_reshape_dx backward_split backward_sum_biases
backward_transpose_dy backward_transpose_w backward_adp_avg_pool comp_dw_matmul comp_dx_col2im comp_dx_matmul
forward_depthwise_conv forward_pointwise_conv forward_concat forward_convgemm forward_convwinograd
forward_convdirect forward_cublas_matmul forward_cudnn forward_cudnn_sum_biases forward_eltw_sum forward_im2col
forward_matmul forward_replicate forward_reshape_w forward_reshape_y forward_sum_biases forward_transpose_y
forward_mha_fc_qkv forward_mha_matmul_qk forward_mha_scalardk forward_mha_matmul_smv forward_mha_fc_o
backward_mha_fc_qkv backward_mha_matmul_qk backward_mha_scalardk backward_mha_matmul_smv backward_mha_fc_o
forward_mha forward_feedforward backward_mha backward_feedforward forward_adp_avg_pool layer_encode
layer_decode""".split()
PYDTNN_OP_CODE = {name: i + 1 for i, name in enumerate(PYDTNN_OPS)}
OP_NAME = re.compile(r"(\d{3})_([A-Za-z0-9]+)_((?:forward|backward|comp)_[a-z0-9_]+)")


def check(ok, what):
    global failures
    print(("ok: " if ok else "FAILED: ") + what)
    if not ok:
        failures += 1


def run(dtnn, mpirun, work, name, extra):
    report = os.path.join(work, name + ".report.json")
    weights = os.path.join(work, name + ".npz")
    for f in (report, weights):
        if os.path.exists(f):
            os.remove(f)
    cmd = mpirun + [dtnn, "train", "--parallel=data", "--model=resnet20_cifar10", "--dataset=cifar10",
                    "--use_synthetic_data=True", "--batch_size=8", "--steps_per_epoch=4", "--num_epochs=2",
                    "--threads=1", "--evaluate_on_test=False", "--progress=False", "--optimizer=sgd",
                    "--report=" + report, "--weights_and_bias_filename=" + weights] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:])
        sys.exit(f"test_trace: {' '.join(cmd)} exited {p.returncode}")
    with open(report) as f:
        rep = json.load(f)
    with np.load(weights) as z:
        arrays = {k: z[k].copy() for k in z.files}
    rep["stdout"] = p.stdout
    return rep, arrays


def nests(events):
    """X events of one thread, sorted by start: each starts after the previous ends, or ends inside it."""
    stack = []
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        end = e["ts"] + e["dur"]
        while stack and e["ts"] >= stack[-1] - 1e-3:  # µs; 1 ns of rounding
            stack.pop()
        if stack and end > stack[-1] + 1e-3:
            return False
        stack.append(end)
    return True


def check_json(path, rep, nonblocking):
    with open(path) as f:
        j = json.load(f)
    check(isinstance(j, dict) and isinstance(j.get("traceEvents"), list), f"{path}: an object with traceEvents")
    xs = [e for e in j["traceEvents"] if e.get("ph") == "X"]
    ms = [e for e in j["traceEvents"] if e.get("ph") == "M"]
    typed = all(isinstance(e.get("name"), str) and isinstance(e.get("ts"), (int, float)) and
                isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0 and isinstance(e.get("pid"), int) and
                isinstance(e.get("tid"), int) for e in xs)
    check(typed and len(xs) > 0, f"{len(xs)} X events, each with name, ts, dur >= 0, pid, tid")
    named = {e["pid"] for e in ms if e.get("name") == "process_name" and isinstance(e.get("args", {}).get("name"), str)}
    check({e["pid"] for e in xs} == {0, 1} and named == {0, 1}, "both ranks traced and named (process_name)")
    threads = defaultdict(list)
    for e in xs:
        threads[(e["pid"], e["tid"])].append(e)
    check(all(nests(v) for v in threads.values()), f"events nest on every one of {len(threads)} (rank, thread)")
    # Coverage of each step by the events inside it (same rank, training thread).
    worst = 1.0
    for pid in (0, 1):
        main = [e for e in xs if e["pid"] == pid and e["tid"] == 0]
        for s in (e for e in main if e["name"] == "step"):
            inside = sorted((e["ts"], e["ts"] + e["dur"]) for e in main if e is not s and e["name"] != "step" and
                            e["ts"] >= s["ts"] - 1e-3 and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1e-3)
            covered, reach = 0.0, s["ts"]
            for b, e in inside:
                b = max(b, reach)
                if e > b:
                    covered += e - b
                    reach = e
            worst = min(worst, covered / s["dur"] if s["dur"] > 0 else 1.0)
    check(worst >= 0.95, f"the events inside each step cover >= 95 % of it on every rank (worst {100 * worst:.1f} %)")
    if nonblocking:
        comm = rep["epochs"][0]["communication"]
        per = defaultdict(list)
        for e in xs:
            if e["tid"] > 0:
                per[(e["pid"], e["args"]["step"])].append(e)
        ok = len(per) == 2 * 8 and all(
            len(v) == comm["buckets_per_step"] and len({e["tid"] for e in v}) == len(v) and
            sum(e["args"]["bytes"] for e in v) == comm["bytes_per_step"] for v in per.values())
        check(ok, f"every step of every rank has one in-flight event per bucket ({comm['buckets_per_step']}) "
                  f"on its own lane, bytes summing to {comm['bytes_per_step']:.0f}")
    check(all(d == 0 for d in j["otherData"]["dropped_events"]), "no events dropped (the buffer held every one)")
    check_ops(xs)
    return xs


def check_ops(xs):
    """Each op event inside a forward/backward event of its owning layer, same rank, on the training thread."""
    ops = [e for e in xs if "op" in e.get("args", {})]
    check(len(ops) > 0 and all(e["cat"] == "compute" and e["tid"] == 0 and isinstance(e["args"].get("layer"), int)
                               for e in ops), f"{len(ops)} op events, cat compute, on the training thread, with a layer")
    layer_events = defaultdict(list)  # (pid, layer id, direction) -> [(ts, end)] sorted
    for e in xs:
        for d in ("forward", "backward"):
            if e["tid"] == 0 and e["name"].endswith(" " + d) and "op" not in e["args"]:
                layer_events[(e["pid"], e["args"]["layer"], d)].append((e["ts"], e["ts"] + e["dur"]))
    for v in layer_events.values():
        v.sort()
    top = {pid: sorted({k[1] for k in layer_events if k[0] == pid}) for pid in (0, 1)}
    bad = 0
    for e in ops:
        ids = top[e["pid"]]
        at = bisect.bisect_right(ids, e["args"]["layer"]) - 1
        owner = ids[at] if at >= 0 else -1
        d = "forward" if e["args"]["op"].startswith("forward_") else "backward"
        spans = layer_events.get((e["pid"], owner, d), [])
        i = bisect.bisect_right(spans, (e["ts"] + 1e-3, float("inf"))) - 1
        if i < 0 or e["ts"] < spans[i][0] - 1e-3 or e["ts"] + e["dur"] > spans[i][1] + 1e-3:
            bad += 1
    check(bad == 0, f"every op event lies inside a {{forward|backward}} event of its layer (or its block): {bad} outside")


def op_totals_json(xs):
    sums = defaultdict(float)
    for e in xs:
        if e["pid"] == 0 and e["tid"] == 0 and "op" in e["args"]:
            sums[(e["args"]["layer"], e["args"]["op"])] += e["dur"] * 1e-6
    return sums


def check_csv(path, xs):
    with open(path) as f:
        lines = f.read().splitlines()
    check(lines[0] == "Event type;Event value;Event name;Calls;Total time;Median of times", "CSV: PyDTNN's header")
    rows = [l.split(";") for l in lines[1:]]
    check(len(rows) > 0 and all(len(r) == 6 for r in rows), f"CSV: {len(rows)} rows of 6 fields")
    good = ops_good = True
    totals, op_totals, dtnn_codes = {}, {}, {}
    for typ, value, name, calls, total, median in rows:
        int(calls), float(total), float(median)
        if typ == "60000001":
            m = re.fullmatch(r"(\d{3})_([A-Za-z0-9]+)_(forward|backward|allreduce_dw|wait_dw|update_dw)", name)
            code = {"forward": 1, "backward": 2, "allreduce_dw": 3, "wait_dw": 4, "update_dw": 5}
            good = good and m is not None and int(value) == int(m.group(1)) * 5 + code[m.group(3)]
            if m and m.group(3) in ("forward", "backward"):
                totals[f"{m.group(1)}_{m.group(2)} {m.group(3)}"] = float(total)
        elif typ in ("60000002", "60000004"):
            m = OP_NAME.fullmatch(name)
            if typ == "60000002":
                ok = m is not None and int(value) == int(m.group(1)) * 55 + PYDTNN_OP_CODE.get(m.group(3), -10**9)
            else:
                code = int(value) - int(m.group(1)) * 16 if m else -1
                ok = m is not None and 1 <= code <= 16 and dtnn_codes.setdefault(m.group(3), code) == code
                ok = ok and m.group(3) not in PYDTNN_OP_CODE
            ops_good = ops_good and ok
            if m:
                op_totals[(int(m.group(1)), m.group(3))] = float(total)
    check(good, "CSV: model events named <id>_<Type>_<event> with value id * 5 + code")
    check(ops_good and op_totals, f"CSV: {len(op_totals)} operation rows, 60000002 named <id>_<Type>_<PyDTNN op> with "
                                  f"value id * 55 + PyDTNN's code, 60000004 (dtnn's {sorted(dtnn_codes)}) id * 16 + code")
    sums = op_totals_json(xs)
    diff = max(abs(sums[k] - op_totals.get(k, -1)) for k in sums) if sums else 1
    check(set(sums) == set(op_totals) and diff < 1e-6,
          f"CSV operation totals equal rank 0's JSON sums per (layer, op) ({len(op_totals)} rows, max diff {diff:.2g} s)")
    sums = defaultdict(float)
    for e in xs:
        if e["pid"] == 0 and e["tid"] == 0 and (e["name"].endswith(" forward") or e["name"].endswith(" backward")):
            sums[e["name"]] += e["dur"] * 1e-6
    diff = max(abs(sums[k] - totals.get(k, -1)) for k in sums) if sums else 1
    check(set(sums) == set(totals) and diff < 1e-6,
          f"CSV forward/backward totals equal rank 0's JSON sums ({len(totals)} events, max diff {diff:.2g} s)")


def check_paraver(prv, csv_path, rep, nonblocking):
    p = subprocess.run(["/usr/bin/python3", paraver_check.__file__, prv], capture_output=True, text=True)
    check(p.returncode == 0, f"{prv}: paraver_check.py passes" + ("" if p.returncode == 0 else ":\n" + p.stdout))
    if p.returncode != 0:
        return
    # The checker is not vacuous: without the last record (an event's end) the pairing fails.
    cut = os.path.join(os.path.dirname(prv), "cut.prv")
    with open(prv) as f, open(cut, "w") as g:
        g.write("".join(f.readlines()[:-1]))
    for ext in (".pcf", ".row"):
        shutil.copy(prv[:-4] + ext, cut[:-4] + ext)
    p = subprocess.run(["/usr/bin/python3", paraver_check.__file__, cut], capture_output=True, text=True)
    check(p.returncode == 1 and "pairing" in p.stdout, f"paraver_check.py fails the .prv without its last record")
    with open(prv) as f:
        tasks = paraver_check.parse_header(f.readline())["tasks"]
    threads = [t for t, _ in tasks[0]] if len(tasks) == 1 else []
    want = 1 + rep["epochs"][0]["communication"]["buckets_per_step"] if nonblocking else 1
    check(threads == [want, want], f"Paraver: 1 application, a task per rank, {want} threads each ({threads})")
    with open(csv_path) as f:
        rows = [l.split(";") for l in f.read().splitlines()[1:]]
    csv = {(int(r[0]), int(r[1])): float(r[4]) for r in rows}
    model = paraver_check.durations(prv, 1, 1, 60000001)
    fb = {v for (t, v) in csv if t == 60000001 and v % 5 in (1, 2)}
    diff = max(abs(model.get(v, -1) - csv[(60000001, v)]) for v in fb) if fb else 1
    check(fb and fb == {v for v in model if v % 5 in (1, 2)} and diff < 1e-6,
          f"Paraver forward/backward totals (task 1 thread 1) equal the CSV's ({len(fb)} values, max diff {diff:.2g} s)")
    sums = defaultdict(float)
    for thread in range(1, threads[0] + 1):
        for t in (60000001, 60000002, 60000003, 60000004):
            for v, d in paraver_check.durations(prv, 1, thread, t).items():
                sums[(t, v)] += d
    diff = max(abs(sums[k] - csv.get(k, -1)) for k in sums) if sums else 1
    check(set(sums) == set(csv) and diff < 1e-6,
          f"Paraver: every CSV row's total equals task 1's ({len(csv)} rows, max diff {diff:.2g} s)")


def check_bad_output(dtnn, work):
    """Single process: the option is checked before training."""
    for bad, says in (("run.xyz", "run.xyz"), (os.path.join(work, "missing") + "/", "does not exist")):
        p = subprocess.run([dtnn, "train", "--model=simplemlp", "--use_synthetic_data=True", "--steps_per_epoch=1",
                            "--evaluate_on_test=False", "--progress=False", "--tracing=True",
                            "--tracer_output=" + bad], capture_output=True, text=True, timeout=120, cwd=work)
        one = p.stderr.count("\n") == 1 and p.stderr.startswith("dtnn: ") and says in p.stderr
        check(p.returncode == 1 and one, f"--tracer_output={bad}: exit 1 ({p.returncode}), one line: {p.stderr.strip()}")


def check_profile(stdout, csv_path):
    """--profile's table (rank 0's totals per phase) against the CSV of the same run."""
    rows = {}
    for line in stdout.split("**** Profile", 1)[-1].splitlines()[2:]:
        f = line.split()
        if len(f) != 7:
            break
        rows[f[0]] = [float(x) for x in f[1:]]
    with open(csv_path) as f:
        csv = [l.split(";") for l in f.read().splitlines()[1:]]
    ok = bool(rows)
    for phase in ("forward", "backward"):
        total = sum(float(r[4]) for r in csv if r[2].endswith("_" + phase))
        calls = sum(int(r[3]) for r in csv if r[2].endswith("_" + phase))
        ok = ok and phase in rows and rows[phase][0] == calls and abs(rows[phase][1] - total) < 2e-6
        ok = ok and rows[phase][3] <= rows[phase][4] <= rows[phase][5]
    check(ok, f"--profile: forward/backward calls and rank 0 totals equal the CSV's, min <= median <= max over ranks")
    ops = defaultdict(lambda: [0, 0.0])
    for r in csv:
        m = OP_NAME.fullmatch(r[2]) if r[0] in ("60000002", "60000004") else None
        if m:
            ops[m.group(3)][0] += int(r[3])
            ops[m.group(3)][1] += float(r[4])
    ok = bool(ops) and all(op in rows and rows[op][0] == calls and abs(rows[op][1] - total) < 2e-6
                           for op, (calls, total) in ops.items())
    check(ok, f"--profile: its {len(ops)} operation rows' calls and rank 0 totals equal the CSV's")


def check_straggler_and_averaging(dtnn, mpirun, work):
    """A deliberate straggler is the one the stragglers table names (its delay is inside its steps, traced), the
    comm_calls events carry layer ids as forward/backward do, and model averaging's steps (--num_batches_per_worker
    per epoch, more than --steps_per_epoch) all fit in the trace buffer."""
    js = os.path.join(work, "straggler.json")
    rep, _ = run(dtnn, mpirun, work, "straggler", ["--non_blocking_mpi=True", "--gradient_bucket_mb=0.05",
                                                   "--straggler_ms=1:40", "--tracing=True", "--tracer_output=" + js])
    rows = rep["trace"]["stragglers"]
    # lag: behind the median of the two ranks' busy times, half the 40 ms on an idle machine. Not a timed bound:
    # on a loaded 2-core machine one step's share moves between neighbouring steps (lags of 3.8 to 46 ms, mean
    # 20.2), and with two more busy processes rank 0 was the slowest in 2 steps of 8 and the mean lag 80-100 ms.
    # What the stragglers table must show: rank 1 in most steps, at least most of half its sleep behind, and
    # the lag in seconds (a unit slip would read 1000 times as much).
    mean_lag = sum(r["lag_s"] for r in rows) / len(rows) if rows else 0.0
    ones = sum(r["slowest_rank"] == 1 for r in rows)
    check(rows and 2 * ones > len(rows) and 0.015 < mean_lag < 1.0,
          f"--straggler_ms=1:40: most steps' slowest rank is 1 ({ones} of {len(rows)}), on average "
          f"{mean_lag * 1e3:.1f} ms (15 to 1000) behind the median ({len(rows)} steps: "
          + ", ".join(f"rank {r['slowest_rank']} {r['lag_s'] * 1e3:.1f} ms" for r in rows) + ")")
    events = rep["trace"]["timeline"]["events"]
    layer_ids = {e["id"] for e in events if e["kind"] == "backward"} | {0}  # 0: the Input, after backward ends
    comm_ids = {e["id"] for e in events if e["kind"] == "comm_calls"}
    check(comm_ids and comm_ids <= layer_ids and len(comm_ids) > 5,
          f"comm_calls ids {sorted(comm_ids)} are backward layers' ids (or the Input's)")
    # 12 batches of 4096 a worker per epoch: more than the 8 global batches of MNIST's 60000 samples, so a trace
    # buffer sized from the dataset would drop the rest.
    js, report = os.path.join(work, "averaging.json"), os.path.join(work, "averaging.report.json")
    cmd = mpirun + [dtnn, "train", "--parallel=data", "--model=simplemlp", "--use_synthetic_data=True",
                    "--batch_size=4096", "--num_epochs=2", "--threads=1", "--evaluate_on_test=False",
                    "--validation_split=0", "--progress=False", "--model_averaging=synchronous",
                    "--num_batches_per_worker=12", "--tracing=True", "--tracer_output=" + js, "--report=" + report]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, "model averaging run: " + p.stderr[-500:])
    if p.returncode != 0:
        return
    with open(report) as f:
        rep = json.load(f)
    with open(js) as f:
        steps = {e["args"]["step"] for e in json.load(f)["traceEvents"]
                 if e["ph"] == "X" and e["pid"] == 0 and e["args"]["step"] >= 0}
    check(rep["trace"]["dropped_events"] == 0 and len(steps) == 24,
          f"model averaging, 12 steps a worker per epoch: {len(steps)} traced steps of 24, dropped "
          f"{rep['trace']['dropped_events']}")


def main():
    args = sys.argv[1:]
    sep = args.index("--")
    dtnn, mpirun, work = args[0], args[1:sep], args[sep + 1]
    # A fresh folder: a trace file left by an earlier run would pass the checks for a run that wrote none.
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for mode, extra in (("non_blocking", ["--non_blocking_mpi=True", "--gradient_bucket_mb=0.05"]),
                        ("blocking", ["--conv_algo=im2row_gemm"])):
        off, w_off = run(dtnn, mpirun, work, mode + "_off", extra)
        js, csv = os.path.join(work, mode + ".json"), os.path.join(work, mode + ".csv")
        # Paraver: a .prv file, and (blocking) a directory, written as DIR/dtnn.prv, .pcf, .row.
        prv_out = os.path.join(work, mode + ".prv") if mode == "non_blocking" else os.path.join(work, mode) + "/"
        os.makedirs(os.path.join(work, mode), exist_ok=True)
        prv = prv_out if prv_out.endswith(".prv") else os.path.join(prv_out, "dtnn.prv")
        for f in (prv, prv[:-4] + ".pcf", prv[:-4] + ".row"):
            if os.path.exists(f):
                os.remove(f)
        on, w_on = run(dtnn, mpirun, work, mode + "_on",
                       extra + ["--tracing=True", f"--tracer_output={js},{csv},{prv_out}", "--profile=True"])
        check_csv(csv, check_json(js, on, mode == "non_blocking"))
        check_paraver(prv, csv, on, mode == "non_blocking")
        check_profile(on["stdout"], csv)
        losses = [e["train"] for e in off["epochs"]] == [e["train"] for e in on["epochs"]]
        same_w = w_off.keys() == w_on.keys() and all(np.array_equal(w_off[k], w_on[k]) for k in w_off)
        check(losses and same_w, f"{mode}: tracing on vs off, identical losses and weights ({len(w_on)} arrays)")
    check_bad_output(dtnn, work)
    check_straggler_and_averaging(dtnn, mpirun, work)
    print(f"test_trace: {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
