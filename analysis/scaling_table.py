#!/usr/bin/env python3
"""Markdown scaling table of one epoch from a results database (a scaling matrix's runs).

Per model, scaling (weak/strong), transport and reduction mode, for every rank count: the epoch's training
samples/s (the mean over repeats; min-max when there are several), the speed-up and efficiency against the
1-rank run of the same model and scaling (one rank reduces nothing, so its shared-memory blocking run stands
for all four transport/mode combinations, as experiments/scaling_cpu_16core.toml runs it), and the median
rank's share of the step spent exposed on communication (waiting after its own backward pass).
`dtnn query scaling` gives the whole run's figures (warm-up epoch included) against the same configuration.

Usage: /usr/bin/python3 analysis/scaling_table.py DB [EPOCH (default 2)] > table.md
"""
import sqlite3
import sys
from collections import defaultdict


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-1])
    db, epoch = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 2
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT r.model, json_extract(r.params, '$.scaling'), json_extract(r.params, '$.transport'),"
        " json_extract(r.params, '$.non_blocking_mpi'), r.ranks, e.samples_per_s,"
        " (SELECT exposed_s / step_s FROM epoch_comm c WHERE c.run_id = r.id AND c.epoch = e.epoch AND stat = 'median')"
        " FROM runs r JOIN epochs e ON e.run_id = r.id AND e.epoch = ? WHERE r.status = 'ok'", (epoch,)).fetchall()
    groups = defaultdict(lambda: defaultdict(list))
    base = defaultdict(list)
    for model, scaling, transport, nb, ranks, sps, exposed in rows:
        mode = "non-blocking" if nb in (1, "true", "True", True) else "blocking"
        if ranks == 1:
            base[(model, scaling)].append(sps)
        else:
            groups[(model, scaling, transport, mode)][ranks].append((sps, exposed or 0.0))
    print(f"Epoch {epoch}, training samples/s (all ranks); speed-up and efficiency against 1 rank; exposed: the "
          "median rank's exposed communication as a share of its step.\n")
    print("| model | scaling | transport | reduction | 1 rank | " +
          " | ".join(f"{r} ranks" for r in (2, 4, 8, 16)) + " |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(groups):
        model, scaling = key[0], key[1]
        one = sum(base[(model, scaling)]) / len(base[(model, scaling)]) if base[(model, scaling)] else None
        cells = []
        for r in (2, 4, 8, 16):
            v = groups[key].get(r)
            if not v:
                cells.append("-")
                continue
            sps = sum(s for s, _ in v) / len(v)
            exp = sum(e for _, e in v) / len(v)
            spread = f" ({min(s for s, _ in v):.0f}-{max(s for s, _ in v):.0f})" if len(v) > 1 else ""
            su = f", {sps / one:.2f}x, {100 * sps / one / r:.0f} %" if one else ""
            cells.append(f"{sps:.0f}{spread}{su}, exposed {100 * exp:.0f} %")
        print(f"| {model} | {scaling} | {key[2]} | {key[3]} | {f'{one:.0f}' if one else '-'} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
