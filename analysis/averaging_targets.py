#!/usr/bin/env python3
"""The averaging study's two targets from results databases of experiments/averaging.toml (several may be given: e.g.
the matrix at seed 0 with repeats, and the same trials at other seeds).

1. Synchronous averaging every step against gradient data parallelism (2 ranks, no straggler): the final
   test accuracy per seed and model, and the difference (target: within 0.5 points). Repeats of one seed
   give the same accuracy (training is deterministic), so the spread that matters is over seeds.
2. A straggler (2 ranks, rank 1 sleeping MS per step): the job's wall time (the run's duration, process
   start to exit: the job is over when its slowest rank is; it includes start-up and the test pass after each
   epoch), rank 0's training time (the asynchronous modes' rank 0 waits for nobody) and the final test accuracy of the
   synchronous (every epoch), asynchronous (every epoch) and partially asynchronous (every step or each
   dynamic block) modes, with fixed shares and with --dynamic_blocks; the speed-up of each against the
   synchronous mode with the same straggler (target: an asynchronous mode >= 1.3x sooner at an accuracy
   within 1.5 points).

Usage: /usr/bin/python3 analysis/averaging_targets.py DB [DB...] > targets.md
"""
import sqlite3
import statistics
import sys
from collections import defaultdict

QUERY = """
SELECT r.model, json_extract(r.params, '$.seed'), coalesce(json_extract(r.params, '$.model_averaging'), 'none'),
       coalesce(json_extract(r.params, '$.average_every_epochs'), 1), coalesce(json_extract(r.params, '$.average_every_steps'), 0),
       coalesce(json_extract(r.params, '$.straggler_ms'), ''), coalesce(json_extract(r.params, '$.dynamic_blocks'), 'False'),
       r.ranks, r.duration_s, r.test_accuracy, r.train_time_s
FROM runs r WHERE r.status = 'ok'
"""


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    rows = []
    for db in sys.argv[1:]:
        rows += sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute(QUERY).fetchall()
    acc = defaultdict(list)    # (model, seed, mode) -> accuracies
    wall = defaultdict(list)   # (model, straggler, mode label) -> (duration, accuracy, rank 0's training time)
    for model, seed, mode, ee, es, straggler, dyn, ranks, dur, test_acc, train_s in rows:
        if ranks != 2 or test_acc is None:
            continue
        dyn = str(dyn) in ("True", "true", "1")
        if not straggler and not dyn and (mode == "none" or (mode == "synchronous" and int(es) == 1)):
            acc[(model, int(seed), "gradient" if mode == "none" else "sync every step")].append(test_acc)
        if int(seed) != 0:
            continue
        if mode == "synchronous" and (int(es) != 0 or int(ee) != 1):
            continue
        if mode == "asynchronous" and int(ee) != 1:
            continue
        if mode == "partially_asynchronous" and not dyn and int(es) != 1:
            continue
        label = ("gradient" if mode == "none" else mode) + (", dynamic blocks" if dyn else "")
        wall[(model, straggler, label)].append((dur, test_acc, train_s))

    print("## 1. Synchronous averaging every step against gradient data parallelism (test accuracy, %)\n")
    print("| model | seed | gradient | synchronous every step | difference |")
    print("| --- | ---: | ---: | ---: | ---: |")
    diffs = defaultdict(list)
    for model, seed in sorted({(m, s) for m, s, _ in acc}):
        g, s = acc.get((model, seed, "gradient")), acc.get((model, seed, "sync every step"))
        if not g or not s:
            continue
        d = statistics.mean(s) - statistics.mean(g)
        diffs[model].append(d)
        print(f"| {model} | {seed} | {statistics.mean(g):.2f} | {statistics.mean(s):.2f} | {d:+.2f} |")
    for model, d in diffs.items():
        print(f"\n{model}: mean difference {statistics.mean(d):+.2f} points over {len(d)} seeds "
              f"(min {min(d):+.2f}, max {max(d):+.2f})")

    print("\n## 2. A straggler: wall time of the job and test accuracy (seed 0; median over repeats)\n")
    print("| model | straggler | mode | runs | wall s (min-max) | speed-up vs synchronous | training s (rank 0) | "
          "speed-up | test accuracy | vs synchronous |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for model, straggler in sorted({(m, s) for m, s, _ in wall}):
        sync = wall.get((model, straggler, "synchronous"))
        ref_t = statistics.median(d for d, _, _ in sync) if sync else None
        ref_a = statistics.median(a for _, a, _ in sync) if sync else None
        ref_r = statistics.median(r for _, _, r in sync) if sync else None
        for (m, s, label), v in sorted(wall.items()):
            if (m, s) != (model, straggler):
                continue
            t = statistics.median(d for d, _, _ in v)
            a = statistics.median(x for _, x, _ in v)
            r = statistics.median(x for _, _, x in v)
            su = f"{ref_t / t:.2f}x" if ref_t else "-"
            sr = f"{ref_r / r:.2f}x" if ref_r else "-"
            da = f"{a - ref_a:+.2f}" if ref_a is not None else "-"
            print(f"| {model} | {straggler or 'none'} | {label} | {len(v)} | {t:.2f} ({min(d for d, _, _ in v):.2f}-"
                  f"{max(d for d, _, _ in v):.2f}) | {su} | {r:.2f} | {sr} | {a:.2f} | {da} |")


if __name__ == "__main__":
    main()
