#!/usr/bin/env python3
"""Markdown scaling table of one epoch from a results database (a scaling matrix's runs).

One row per configuration with several ranks (environment, matrix and trial configuration), for every rank count:
the epoch's training samples/s (the mean over repeats; min-max when there are several), the speed-up and
efficiency against 1 rank, and the median rank's share of the step spent exposed on communication (waiting after
its own backward pass; "-" where no run of the cell measured it). Every figure is the store's view
`v_scaling_epochs` (its speed-up rule, `v_scaling_baselines`, is the one `dtnn query scaling` and the report use:
a 1-rank run stands for every transport and reduction mode of its configuration); a configuration whose baseline
is not 1 rank shows no speed-up here. Parameters other than model, scaling, transport and mode that vary between
rows are shown in their own column.

Usage: /usr/bin/python3 analysis/scaling_table.py DB [EPOCH (default 2)] > table.md
"""
import sqlite3
import sys
from collections import defaultdict

SHOWN_PARAMS = {"model", "scaling", "transport", "non_blocking_mpi", "blocking_mpi"}
RANKS = (2, 4, 8, 16)


def parse_key(config_key):
    """The configuration key ("k=v;...") as a dict, for display."""
    return dict(item.split("=", 1) for item in config_key.split(";") if "=" in item) if config_key else {}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-1])
    db, epoch = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 2
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    rows = con.execute("SELECT * FROM v_scaling_epochs WHERE epoch = ?", (epoch,)).fetchall()
    cells = defaultdict(dict)  # (env, matrix, config_key) -> ranks -> row
    for row in rows:
        if row["runs"] > 0:
            cells[(row["environment_id"], row["matrix"], row["config_key"])][row["ranks"]] = row
    cells = {k: v for k, v in cells.items() if any(r > 1 for r in v)}  # a 1-rank run alone: no row
    params = {key: parse_key(key[2]) for key in cells}
    shown = {}
    for key, p in params.items():
        mode = "non-blocking" if p.get("non_blocking_mpi") in ("1", "true", "True") else "blocking"
        model = next(iter(cells[key].values()))["model"]
        shown[key] = (model, p.get("scaling", "-"), p.get("transport", "-"), mode)
    # The parameters that tell rows apart beyond the shown columns (batch size, dataset, ...), and the
    # environment and matrix when there are several.
    names = sorted({k for p in params.values() for k in p} - SHOWN_PARAMS)
    varying = [k for k in names if len({p.get(k) for p in params.values()}) > 1]
    several_envs = len({key[:2] for key in cells}) > 1

    print(f"Epoch {epoch}, training samples/s (all ranks); speed-up and efficiency against 1 rank of the same "
          "configuration; exposed: the median rank's exposed communication as a share of its step.\n")
    extra = (["env"] if several_envs else []) + (["configuration"] if varying else [])
    header = ["model", "scaling", "transport", "reduction", *extra, "1 rank", *(f"{r} ranks" for r in RANKS)]
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---:" if h.endswith("rank") or h.endswith("ranks") else "---" for h in header) + " |")
    for key in sorted(cells, key=lambda k: (shown[k], str(k[0]), str(k[1]), k[2])):
        row = next(r for r in cells[key].values() if r["ranks"] > 1)
        one = row["baseline_samples_per_s"] if row["baseline_ranks"] == 1 else None
        out = [cell(cells[key].get(r), one is not None) for r in RANKS]
        ex = ([f"{key[0]} {key[1]}"] if several_envs else []) + \
             ([", ".join(f"{k}={params[key].get(k, '-')}" for k in varying)] if varying else [])
        print("| " + " | ".join([*shown[key], *ex, f"{one:.0f}" if one else "-", *out]) + " |")


def cell(row, against_one):
    """"mean (min-max), speed-up x, efficiency %, exposed %" of one rank count; "-" without runs."""
    if row is None:
        return "-"
    spread = f" ({row['min_samples_per_s']:.0f}-{row['max_samples_per_s']:.0f})" if row["runs"] > 1 else ""
    su = f", {row['speedup']:.2f}x, {100 * row['efficiency']:.0f} %" if against_one and row["speedup"] else ""
    exposed = row["exposed_comm_fraction"]
    return f"{row['mean_samples_per_s']:.0f}{spread}{su}, exposed " + (f"{100 * exposed:.0f} %" if exposed is not None else "-")


if __name__ == "__main__":
    main()
