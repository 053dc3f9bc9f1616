"""The Scaling section of report.py: speed-up and efficiency per rank count, the gradient reduction's cost,
and, for traced runs (a matrix's tracing = true), one step's timeline per rank and the stragglers."""

import os
from collections import defaultdict

from report_format import SHORT, labels_for, num, numeric, table


class ScalingSections:
    """Mixed into report.Report (self.store, self.runs, self.add, self.image, self.no_plots, self.plots, self.out)."""

    def scaling(self):
        self.add("## Scaling", "")
        rank_counts = defaultdict(set)
        for r in self.runs:
            rank_counts[(r["environment_id"], r["config_key"])].add(r["ranks"])
        multi = {k for k, ranks in rank_counts.items() if len(ranks) > 1}
        if not multi:
            self.add("No configuration ran on more than one rank count, so there is no scaling to show.", "")
            return
        lines = defaultdict(list)
        for row in self.store.scaling():
            key = (row["environment_id"], row["config_key"])
            if key in multi:
                lines[key].append(row)
        no_base = len(multi - set(lines))
        if no_base:
            self.add(f"{no_base} configuration(s) ran on several rank counts but never on 1 rank; v_scaling "
                     "needs that baseline, so they are left out.", "")
        if not lines:
            return
        series = sorted(lines.values(), key=lambda rows: (rows[0]["framework"], rows[0]["model"],
                                                          rows[0]["dataset"], rows[0]["config_key"]))
        cols = ["framework", "model", "dataset", "conv_algo", "threads", "device"]
        if self.several_envs:
            cols.append("environment_id")
        heads = [rows[0] for rows in series]
        if len({tuple(h[c] for c in cols) for h in heads}) < len(heads):
            cols.append("config_key")  # configurations that differ in other parameters
        pct = lambda f: "" if f is None else num(100 * f, 1)
        table_rows = [(*(r[c] for c in cols), r["ranks"], r["runs"], num(r["mean_samples_per_s"]),
                       num(r["speedup"], 2), num(r["efficiency"], 2), pct(r["compute_fraction"]),
                       pct(r["exposed_comm_fraction"])) for rows in series for r in rows]
        self.add("Mean training samples/s of the ok runs per rank count; speed-up and efficiency relative to "
                 "1 rank of the same configuration; the median rank's compute and exposed communication as "
                 "% of its step time (v_scaling; blank: not measured, e.g. GPU runs or runs stored before dtnn measured it).", "")
        self.add(*table([SHORT.get(c, c) for c in cols] + ["ranks", "runs", "mean samples/s", "speed-up",
                                                           "efficiency", "compute %", "exposed comm %"], table_rows,
                        right=numeric(cols, len(cols))))
        labels = labels_for(heads, [c for c in cols if c != "config_key"], ["framework", "model"],
                            extra=("config_key",))
        if not self.no_plots():
            data = [(lab, [r["ranks"] for r in rows], [r["mean_samples_per_s"] for r in rows],
                     [r["efficiency"] for r in rows]) for lab, rows in zip(labels, series)]
            self.plots.scaling_lines(os.path.join(self.out, "scaling.png"), data)
            self.image("scaling.png", "samples/s and parallel efficiency vs ranks")
        self.communication(series, labels)

    def communication(self, series, labels):
        """The gradient reduction's cost per step for each scaling configuration, and the stacked chart."""
        comm = {(c["environment_id"], c["config_key"], c["ranks"]): c for c in self.store.communication()}
        rows, bars = [], []
        for label, group in zip(labels, series):
            points = []
            for r in group:
                c = comm.get((r["environment_id"], r["config_key"], r["ranks"]))
                if c is None:
                    continue
                other = max(0.0, c["step_ms"] - c["compute_ms"] - c["exposed_ms"])
                rows.append((label, r["ranks"], c["mode"], c["buckets"], num(c["bytes_per_step"] / 2**20, 3),
                             num(c["step_ms"], 2), num(c["compute_ms"], 2), num(c["comm_ms"], 2),
                             num(c["exposed_ms"], 2), num(100 * c["exposed_ms"] / c["step_ms"], 1)))
                points.append((r["ranks"], c["compute_ms"], c["exposed_ms"], other))
            if points:
                bars.append((label, points))
        if not rows:
            return
        self.add("### Communication", "",
                 "Per training step, the median rank (ms, averaged over runs): compute (forward, loss, backward, "
                 "update), time inside communication calls, and exposed communication (waiting for sums after "
                 "the rank's own backward pass; in blocking mode the whole allreduce, load imbalance included).", "")
        self.add(*table(["configuration", "ranks", "mode", "buckets", "MiB/step", "step ms", "compute ms",
                         "in comm ms", "exposed ms", "exposed %"], rows, right=range(1, 10)))
        if self.no_plots():
            return
        self.plots.comm_stacks(os.path.join(self.out, "communication.png"), bars)
        self.image("communication.png", "compute and exposed communication per step vs ranks")
