#!/usr/bin/env python3
"""Markdown scaling table of one epoch from a results database (a scaling matrix's runs).

One row per configuration (environment and trial configuration, as `v_scaling` groups them), for every rank
count: the epoch's training samples/s (the mean over repeats; min-max when there are several), the speed-up and
efficiency against the 1-rank run of the same configuration in the same environment, and the median rank's
share of the step spent exposed on communication (waiting after its own backward pass; "-" where no run of the
cell measured it). One rank reduces nothing, so a 1-rank run stands for every transport and reduction mode of
its configuration (experiments/scaling_cpu_16core.toml runs only the shared-memory blocking one): the baseline
is matched with those parameters left out. Parameters other than model, scaling, transport and mode that vary
between rows are shown in their own column. `dtnn query scaling` gives the whole run's figures (warm-up epoch
included) against the same configuration.

Usage: /usr/bin/python3 analysis/scaling_table.py DB [EPOCH (default 2)] > table.md
"""
import sqlite3
import sys
from collections import defaultdict

from scaling_groups import REDUCTION_PARAMS, base_key, parse_key

SHOWN_PARAMS = {"model", "scaling", "transport", "non_blocking_mpi", "blocking_mpi"}
RANKS = (2, 4, 8, 16)


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-1])
    db, epoch = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 2
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT r.environment_id, r.config_key, r.model, json_extract(r.params, '$.scaling'),"
        " json_extract(r.params, '$.transport'), json_extract(r.params, '$.non_blocking_mpi'), r.ranks,"
        " e.samples_per_s,"
        " (SELECT exposed_s / step_s FROM epoch_comm c WHERE c.run_id = r.id AND c.epoch = e.epoch AND stat = 'median')"
        " FROM runs r JOIN epochs e ON e.run_id = r.id AND e.epoch = ? WHERE r.status = 'ok'", (epoch,)).fetchall()
    cells = defaultdict(lambda: defaultdict(list))  # (env, config_key) -> ranks -> [(sps, exposed)]
    shown = {}                                      # (env, config_key) -> (model, scaling, transport, mode)
    base = defaultdict(list)                        # base_key -> 1-rank samples/s
    for env, config_key, model, scaling, transport, nb, ranks, sps, exposed in rows:
        if sps is None:
            continue
        if ranks == 1:
            base[base_key(env, config_key)].append(sps)
            continue
        mode = "non-blocking" if nb in (1, "true", "True", True) else "blocking"
        shown[(env, config_key)] = (model, scaling or "-", transport or "-", mode)
        cells[(env, config_key)][ranks].append((sps, exposed))
    # The parameters that tell rows apart beyond the shown columns (batch size, dataset, ...), and the
    # environment when there are several.
    params = {key: parse_key(key[1]) for key in cells}
    names = sorted({k for p in params.values() for k in p} - SHOWN_PARAMS - REDUCTION_PARAMS)
    varying = [k for k in names if len({p.get(k) for p in params.values()}) > 1]
    several_envs = len({key[0] for key in cells}) > 1

    print(f"Epoch {epoch}, training samples/s (all ranks); speed-up and efficiency against 1 rank of the same "
          "configuration; exposed: the median rank's exposed communication as a share of its step.\n")
    extra = (["env"] if several_envs else []) + (["configuration"] if varying else [])
    header = ["model", "scaling", "transport", "reduction", *extra, "1 rank", *(f"{r} ranks" for r in RANKS)]
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---:" if h.endswith("rank") or h.endswith("ranks") else "---" for h in header) + " |")
    for key in sorted(cells, key=lambda k: (shown[k], str(k[0]), k[1])):
        one = mean(base.get(base_key(*key), []))
        out = []
        for r in RANKS:
            v = cells[key].get(r)
            if not v:
                out.append("-")
                continue
            sps = mean(s for s, _ in v)
            exp = mean(e for _, e in v)
            spread = f" ({min(s for s, _ in v):.0f}-{max(s for s, _ in v):.0f})" if len(v) > 1 else ""
            su = f", {sps / one:.2f}x, {100 * sps / one / r:.0f} %" if one else ""
            exposed = f"{100 * exp:.0f} %" if exp is not None else "-"
            out.append(f"{sps:.0f}{spread}{su}, exposed {exposed}")
        ex = ([str(key[0])] if several_envs else []) + \
             ([", ".join(f"{k}={params[key].get(k, '-')}" for k in varying)] if varying else [])
        print("| " + " | ".join([*shown[key], *ex, f"{one:.0f}" if one else "-", *out]) + " |")


if __name__ == "__main__":
    main()
