"""The table of experiments/contention_ceiling.sh, from the reports it kept.

    contention_ceiling.py OUT_DIR RANKS EPOCHS ROUNDS

OUT_DIR holds r{round}-alone.json, r{round}-copy{i}.json and r{round}-data.json (dtnn train reports). The
samples are each run's per-epoch samples/s of epochs 2.. (epoch 1 is warm-up; all epochs when EPOCHS is 1):
alone and data pool every round's samples; independent is, per round, the sum of the copies' medians (the
throughput of the copies together). Ratios are ratios of the medians. Standard library only (any python3).
"""
import json
import statistics
import sys


def load(path, first):
    report = json.load(open(path))
    return report, [e for e in report["epochs"] if e["epoch"] >= first]


def fmt(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"


def spread(values):
    return f"{fmt(statistics.median(values)):>10}  ({fmt(min(values))}-{fmt(max(values))})"


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
