"""The table of experiments/shaped_link.sh, from what it kept.

    shaped_link.py OUT_DIR ROUNDS "RATES" "BUCKETS"

OUT_DIR holds r{round}-alone.json and r{round}-{rate}-{bucket}.json (dtnn train reports, 2 epochs; epoch 2 is
sampled), optional r{round}-{rate}-{bucket}.pred.json (dtnn predict --json) and bench-{rate}.json
(bench_allreduce). Per rate and reduction, over the rounds (medians; min-max in brackets):
  step, exposed, calls    ms per step of the median rank (`communication.median`: step_s, exposed_s, and
                          comm_s - exposed_s, the communication calls made between layers, non-blocking only)
  exposed (last rank)     the least exposed rank's, the one that finished computing last: its wait is the
                          transfer left over, without the wait for the other rank
  hidden                  1 - exposed / blocking's exposed (median rank, same rate): the share of what blocking
                          exposes that this reduction hides (target: >= 75 % over TCP for resnet20)
  step saved              (blocking's step - this step) / blocking's exposed: the same share read from step
                          times, which also charges the calls between layers
  speed-up                samples/s over the 1-rank run's (pooled rounds)
  predicted               the analytic model's step and exposed time from the run's own layer times on a link
                          fitted to bench-{rate}.json (median over rounds)
The link line per rate: bench_allreduce's 1 MiB MPI_Allreduce time, and the rate it implies on lo, which
carries both ranks' n bytes: 2 n 8 / t. Standard library only (any python3).
"""
import json
import os
import statistics
import sys


def epoch2(path):
    report = json.load(open(path))
    return [e for e in report["epochs"] if e["epoch"] == 2]


def per_step(epoch, who, key):
    c = epoch["communication"]
    return c[who][key] / c["steps"]


def ms(values):
    return f"{1e3 * statistics.median(values):.2f} ({1e3 * min(values):.2f}-{1e3 * max(values):.2f})"


def link(out, rate):
    path = f"{out}/bench-{rate}.json"
    if not os.path.exists(path):
        return None
    for b in json.load(open(path))["benchmarks"]:
        if b["name"].startswith("BM_Allreduce/1048576/") and b.get("run_type", "iteration") == "iteration":
            t = b["real_time"] * {"us": 1e-6, "ms": 1e-3, "ns": 1e-9, "s": 1.0}[b.get("time_unit", "us")]
            return t, 2 * 1048576 * 8 / t
    return None


def bucket_name(b, comm):
    """'non-blocking, per layer', '..., 25 MiB' (the cap alone) or '..., 25 MiB, at most 1/4 of the gradient'."""
    cap = b.split(":")[0]
    if float(cap) == 0:
        return "non-blocking, per layer"
    n = comm.get("buckets_min", 1)  # reports before --gradient_buckets_min planned with the cap alone
    return f"non-blocking, {cap} MiB" + (f", at most 1/{n} of the gradient" if n > 1 else "")


def main():
    out, rounds, rates, buckets = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
    alone = [e["samples_per_s"] for r in range(rounds) for e in epoch2(f"{out}/r{r}-alone.json")]
    m_alone = statistics.median(alone)
    print()
    print(f"1 rank alone: {m_alone:,.1f} samples/s ({min(alone):,.1f}-{max(alone):,.1f}), epoch 2 of {rounds} round(s)")
    print("2 ranks over TCP; ms per step, median rank; medians over rounds (min-max)")
    print()
    header = ("| link | reduction | buckets | step ms | exposed ms | exposed ms (last rank) | calls between layers ms "
              "| hidden | step saved | speed-up | predicted step ms | predicted exposed ms |")
    print(header)
    print("|" + " --- |" * 3 + " ---: |" * 9)
    for rate in rates:
        l = link(out, rate)
        label = rate + (f" (1 MiB allreduce {1e3 * l[0]:.1f} ms: {l[1] / 1e6:,.0f} Mbit/s on lo)" if l else "")
        base = None  # blocking's (step, exposed) at this rate, wherever BUCKETS lists it
        if "blocking" in buckets:
            eps = [e for r in range(rounds) for e in epoch2(f"{out}/r{r}-{rate}-blocking.json")]
            base = (statistics.median(per_step(e, "median", "step_s") for e in eps),
                    statistics.median(per_step(e, "median", "exposed_s") for e in eps))
        for b in buckets:
            eps = [e for r in range(rounds) for e in epoch2(f"{out}/r{r}-{rate}-{b}.json")]
            steps = [per_step(e, "median", "step_s") for e in eps]
            exposed = [per_step(e, "median", "exposed_s") for e in eps]
            last = [per_step(e, "min", "exposed_s") for e in eps]
            calls = [per_step(e, "median", "comm_s") - per_step(e, "median", "exposed_s") for e in eps]
            rate_s = statistics.median(e["samples_per_s"] for e in eps)
            m_step, m_exp = statistics.median(steps), statistics.median(exposed)
            hidden = saved = "-"
            if base and b != "blocking" and base[1] > 0:
                hidden = f"{100 * (1 - m_exp / base[1]):.0f} %"
                saved = f"{100 * (base[0] - m_step) / base[1]:.0f} %"
            preds = [json.load(open(p))["rows"][0] for p in
                     (f"{out}/r{r}-{rate}-{b}.pred.json" for r in range(rounds)) if os.path.exists(p)]
            p_step = f"{1e3 * statistics.median(p['step_s'] for p in preds):.2f}" if preds else "-"
            p_exp = f"{1e3 * statistics.median(p['exposed_s'] for p in preds):.2f}" if preds else "-"
            name = "blocking" if b == "blocking" else bucket_name(b, eps[0]["communication"])
            print(f"| {label} | {name} | {eps[0]['communication']['buckets_per_step']} | {ms(steps)} | {ms(exposed)} "
                  f"| {ms(last)} | {ms(calls)} | {hidden} | {saved} | {rate_s / m_alone:.2f}x | {p_step} | {p_exp} |")
            label = ""


if __name__ == "__main__":
    main()
