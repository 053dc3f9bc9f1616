"""The table of experiments/contention_ceiling.sh, from the reports it kept.

    contention_ceiling.py OUT_DIR RANKS EPOCHS ROUNDS [RESULT_JSON]

OUT_DIR holds r{round}-alone.json, r{round}-copy{i}.json and r{round}-data.json (dtnn train reports). The
samples are each run's per-epoch samples/s of epochs 2.. (epoch 1 is warm-up; all epochs when EPOCHS is 1):
alone and data pool every round's samples; independent is, per round, the sum of the copies' medians (the
throughput of the copies together). Ratios are ratios of the medians. Standard library only (any python3).
The step jitter: per round, the copies' traced steps (r{round}-copy{i}.trace.json, Chrome trace format), aligned
by step index; each step's max over the copies less their mean is what a blocking sum would wait for the slowest.
Its mean over every round's steps (an expected cost: a burst of one slow core in one round counts, where a median
over rounds would drop it), divided by E[max of N standard normals], is the standard deviation sigma of a step, and
J = sigma / the mean step. No traces: no jitter.
RESULT_JSON, when given, receives the measurement as a dtnn.contention_ceiling/1 file (results/ingest_ceiling.h),
which `dtnn ingest` stores for `dtnn predict`: the machine is the alone run's (its report's machine key).
"""
import datetime
import json
import math
import os
import statistics
import sys


def load(path, first):
    report = json.load(open(path))
    return report, [e for e in report["epochs"] if e["epoch"] >= first]


def fmt(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"


def spread(values):
    return f"{fmt(statistics.median(values)):>10}  ({fmt(min(values))}-{fmt(max(values))})"


def expected_max_normal(n):
    """E[max of n standard normals], Simpson's rule over [-12, 12] (analysis/perfmodel/step_model.cpp's)."""
    steps, a = 4800, -12.0
    h = 24.0 / steps
    total = 0.0
    for i in range(steps + 1):
        x = a + i * h
        pdf = math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        f = x * n * pdf * (0.5 * math.erfc(-x / math.sqrt(2))) ** (n - 1)
        total += (1 if i in (0, steps) else 4 if i % 2 else 2) * f
    return total * h / 3


def step_durations(path):
    """{step: seconds} of a dtnn Chrome trace's "step" events; {} when there is no trace."""
    if not os.path.exists(path):
        return {}
    events = json.load(open(path))["traceEvents"]
    return {e["args"]["step"]: e["dur"] * 1e-6 for e in events if e.get("name") == "step" and e.get("ph") == "X"}


def aligned_steps(out, r, n):
    """Round r's copies' traced steps aligned by index: [(wait of the slowest, mean step)] seconds."""
    copies = [step_durations(f"{out}/r{r}-copy{i}.trace.json") for i in range(n)]
    common = sorted(set.intersection(*(set(c) for c in copies))) if all(copies) else []
    return [(max(c[s] for c in copies) - sum(c[s] for c in copies) / n, sum(c[s] for c in copies) / n)
            for s in common]


def step_jitter(out, n, rounds):
    """(J, mean wait s, mean step s, steps) over every round's aligned steps, or None without traces."""
    steps = [a for r in range(rounds) for a in aligned_steps(out, r, n)]
    if not steps:
        return None
    wait, step = statistics.mean(w for w, _ in steps), statistics.mean(s for _, s in steps)
    return wait / expected_max_normal(n) / step, wait, step, len(steps)


def write_result(path, alone_report, n, epochs, rounds, m_alone, m_sum, m_data, jitter):
    """The dtnn.contention_ceiling/1 file, written whole or not at all."""
    env, opts = alone_report["environment"], alone_report["options"]
    doc = {"schema": "dtnn.contention_ceiling/1", "machine_key": env["machine"]["key"], "model": opts["model"],
           "dataset": opts["dataset"], "ranks": n, "ceiling": m_sum / m_alone, "alone_samples_per_s": m_alone,
           "independent_samples_per_s": m_sum, "data_parallel_samples_per_s": m_data, "step_jitter": jitter,
           "rounds": rounds,
           "epochs": epochs, "dtnn_commit": env.get("build_commit", ""),
           "measured_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)


def main():
    out, n, epochs, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    first = 2 if epochs > 1 else 1
    alone, sums, copy_medians, data, comm_epochs = [], [], [], [], []
    for r in range(rounds):
        alone += [e["samples_per_s"] for e in load(f"{out}/r{r}-alone.json", first)[1]]
        medians = [statistics.median(e["samples_per_s"] for e in load(f"{out}/r{r}-copy{i}.json", first)[1])
                   for i in range(n)]
        sums.append(sum(medians))
        copy_medians += medians
        _, sampled = load(f"{out}/r{r}-data.json", first)
        data += [e["samples_per_s"] for e in sampled]
        comm_epochs += [e for e in sampled if "communication" in e]
    m_alone, m_sum, m_data = statistics.median(alone), statistics.median(sums), statistics.median(data)
    ceiling, speedup = m_sum / m_alone, m_data / m_alone
    print()
    print(f"samples/s, median of epochs {first}-{epochs} over {rounds} round(s) (min-max)")
    print(f"  alone, 1 rank                  {spread(alone)}")
    print(f"  independent, {n} copies, sum    {spread(sums)}  a copy: {fmt(min(copy_medians))}-{fmt(max(copy_medians))}")
    print(f"  data-parallel, {n} ranks        {spread(data)}")
    print()
    print(f"ceiling (independent / alone):      {ceiling:.2f}x  ({100 * ceiling / n:.0f} % of {n})")
    print(f"speed-up (data-parallel / alone):   {speedup:.2f}x  ({100 * speedup / n:.0f} % of {n})")
    print(f"data-parallel / ceiling:            {100 * speedup / ceiling:.1f} %")
    print(f"for dtnn predict (ranks sharing a node compute {n}/{ceiling:.2f} slower):  --ceiling {n}:{ceiling:.2f}")
    measured = step_jitter(out, n, rounds)
    jitter = measured[0] if measured else None
    if measured:
        print(f"step jitter of the copies: {100 * jitter:.1f} % of a step (the slowest of {n} aligned steps ends "
              f"{1e3 * measured[1]:.3f} ms after their mean, of a {1e3 * measured[2]:.3f} ms step; {measured[3]} steps)")
    if len(sys.argv) > 5:
        write_result(sys.argv[5], load(f"{out}/r0-alone.json", first)[0], n, epochs, rounds, m_alone, m_sum, m_data,
                     jitter)
    if not comm_epochs:
        print("the data-parallel reports have no communication figures (1 rank)")
        return
    # Where the rest goes (median rank of each sampled epoch, medians over epochs and rounds).
    def med(key):
        return statistics.median(e["communication"]["median"][key] for e in comm_epochs)
    epoch_s = statistics.median(e["time_s"] for e in comm_epochs)
    samples = statistics.median(e["samples"] for e in comm_epochs)
    rank_rate = samples / n / med("compute_s")  # a rank's samples per second of its own compute
    c = comm_epochs[0]["communication"]
    print(f"in the data-parallel run (median rank, {c['mode']}, {c['buckets_per_step']} bucket(s) per step):")
    print(f"  a rank computes at {fmt(rank_rate)} samples/s, {100 * rank_rate / statistics.median(copy_medians):.1f} % of a copy's rate")
    # Non-blocking: the calls between layers that progress the sums (in comm calls, not exposed) are a third
    # part of the step, neither compute nor exposed (engine/TRAINING.md, "Data parallelism"); blocking makes
    # none.
    between = statistics.median(e["communication"]["median"]["comm_s"] - e["communication"]["median"]["exposed_s"]
                                for e in comm_epochs)
    print(f"  exposed communication {100 * med('exposed_s') / epoch_s:.1f} % of the epoch; communication calls "
          f"between layers {100 * between / epoch_s:.1f} %; outside the steps (data, bookkeeping) "
          f"{100 * (epoch_s - med('step_s')) / epoch_s:.1f} %")


if __name__ == "__main__":
    main()
