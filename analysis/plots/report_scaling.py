"""The Scaling section of report.py: speed-up and efficiency per rank count, the gradient reduction's cost,
and, for traced runs (a matrix's tracing = true), one step's timeline per rank and the stragglers."""

import statistics
from collections import Counter, defaultdict

from report_format import SHORT, labels_for, num, numeric, readable_keys, table

MAX_TIMELINES = 16  # PNGs per report


class ScalingSections:
    """Mixed into report.Report (self.store, self.runs, self.add, self.chart)."""

    def scaling(self):
        self.add("## Scaling", "")
        rank_counts = defaultdict(set)
        for r in self.runs:
            rank_counts[(r["environment_id"], r["config_key"])].add(r["ranks"])
        multi = {k for k, ranks in rank_counts.items() if len(ranks) > 1}
        rows_all = self.store.scaling()
        # Predicted curves (v_scaling's source 'model' | 'simgrid') are drawn beside their measured group.
        predicted = defaultdict(list)
        for row in rows_all:
            if row["source"] != "measured":
                predicted[(row["environment_id"], row["config_key"])].append(row)
        if not multi and not predicted:
            self.add("No configuration ran on more than one rank count, so there is no scaling to show.", "")
            return
        lines = defaultdict(list)
        for row in rows_all:
            key = (row["environment_id"], row["config_key"])
            if row["source"] == "measured" and (key in multi or key in predicted):
                lines[key].append(row)
        no_base = len(multi - set(lines))
        if no_base:
            self.add(f"{no_base} configuration(s) ran on several rank counts but none of their ok runs has a "
                     "samples/s to compare against, so they are left out.", "")
        self.orphan_predictions({k: rows for k, rows in predicted.items() if k not in lines})
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
        config = dict(zip((h["config_key"] for h in heads), readable_keys([h["config_key"] for h in heads])))
        kind = lambda r: "measured" if r["source"] == "measured" else f"predicted: {r['curve']}"
        table_rows = [(*(config.get(r[c], r[c]) if c == "config_key" else r[c] for c in cols), kind(r), r["ranks"],
                       r["runs"], num(r["mean_samples_per_s"]),
                       num(r.get("min_samples_per_s")), num(r.get("max_samples_per_s")),
                       num(r.get("sd_samples_per_s")), r["baseline_ranks"], num(r["speedup"], 2), num(r["efficiency"], 2), pct(r["compute_fraction"]),
                       pct(r["exposed_comm_fraction"]))
                      for rows in series
                      for r in rows + predicted.get((rows[0]["environment_id"], rows[0]["config_key"]), [])]
        self.add("Mean training samples/s of the ok runs per rank count, with the runs' min, max and sample "
                 "standard deviation (sd: blank for one run); speed-up and efficiency relative to "
                 "the fewest ranks of the same configuration that were measured (column 'against': 1 rank, or "
                 "e.g. one node's ranks in a study over nodes with ranks_per_node > 1; efficiency = speed-up x "
                 "against / ranks); the median rank's compute and exposed communication as "
                 "% of its step time (v_scaling; blank: not measured, e.g. GPU runs or runs stored before dtnn measured it). "
                 "Rows marked predicted are the performance model's (`dtnn predict`, a matrix's mode = \"predict\" "
                 "trials), not measurements: runs is 0, speed-up and efficiency are against the model's own 1-rank "
                 "prediction, compute and exposed % are the model's.", "")
        self.add(*table([SHORT.get(c, c) for c in cols] + ["source", "ranks", "runs", "mean samples/s", "min", "max",
                                                           "sd", "against",
                                                           "speed-up", "efficiency", "compute %", "exposed comm %"],
                        table_rows,
                        right=numeric(cols, len(cols) + 1)))
        labels = labels_for(heads, [c for c in cols if c != "config_key"], ["framework", "model"],
                            extra=("config_key",))
        data = []
        for lab, rows in zip(labels, series):
            data.append((lab, [r["ranks"] for r in rows], [r["mean_samples_per_s"] for r in rows],
                         [r["efficiency"] for r in rows], True,
                         [(r.get("min_samples_per_s"), r.get("max_samples_per_s")) for r in rows]))
            curves = defaultdict(list)
            for r in predicted.get((rows[0]["environment_id"], rows[0]["config_key"]), []):
                curves[r["curve"]].append(r)
            for curve, pts in sorted(curves.items()):
                data.append((f"{lab}: {curve}", [r["ranks"] for r in pts], [r["mean_samples_per_s"] for r in pts],
                             [r["efficiency"] for r in pts], False, []))
        self.chart("scaling_lines", "scaling", "samples/s and parallel efficiency vs ranks", data)
        self.communication(series, labels)

    def orphan_predictions(self, orphans):
        """Predicted curves with no measured configuration to draw them beside (a profile read from a file, or
        runs of another environment or out of scope): a table of their own rather than nothing."""
        if not orphans:
            return
        rows = [(r["framework"], r["model"], r["dataset"], r["environment_id"] or "-", r["curve"] or r["source"],
                 r["ranks"], num(r["mean_samples_per_s"]), num(r["speedup"], 2), num(r["efficiency"], 2))
                for key in sorted(orphans, key=lambda k: (str(k[0]), str(k[1])))
                for r in sorted(orphans[key], key=lambda r: (str(r["curve"]), r["ranks"]))]
        self.add(f"{len(orphans)} predicted configuration(s) have no measured runs in this report to compare "
                 "with (e.g. `dtnn predict --store` from a profile file); the model's figures alone:", "")
        self.add(*table(["framework", "model", "dataset", "env", "curve", "ranks", "predicted samples/s",
                         "speed-up", "efficiency"], rows, right=(5, 6, 7, 8)))

    def communication(self, series, labels):
        """The gradient reduction's cost per step for each scaling configuration, and the stacked chart."""
        comm = {(c["environment_id"], c["config_key"], c["ranks"]): c for c in self.store.communication()}
        rows, bars = [], []
        for label, group in zip(labels, series):
            points = []
            letter = chr(ord("A") + len(bars)) if len(bars) < 26 else str(len(bars) + 1)  # as comm_stacks letters
            for r in group:
                c = comm.get((r["environment_id"], r["config_key"], r["ranks"]))
                if c is None or not c["step_ms"] or c["compute_ms"] is None or c["exposed_ms"] is None:
                    continue  # not measured, or no steps counted (v_comm's step_ms is NULL for 0 steps)
                other = max(0.0, c["step_ms"] - c["compute_ms"] - c["exposed_ms"])
                rows.append((f"{letter}: {label}", r["ranks"], c["mode"], c["buckets"], num(c["bytes_per_step"] / 2**20, 3),
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
                 "the rank's own backward pass; in blocking mode the whole allreduce, load imbalance included). "
                 "In comm less exposed is the time in the calls made between layers (non-blocking). The chart "
                 "letters its groups as this table does.", "")
        self.add(*table(["configuration", "ranks", "mode", "buckets", "MiB/step", "step ms", "compute ms",
                         "in comm ms", "exposed ms", "exposed %"], rows, right=(1, *range(3, 10))))
        self.chart("comm_stacks", "communication", "compute and exposed communication per step vs ranks", bars)

    def timelines(self):
        """For traced runs: one step's timeline per rank (the largest rank count of each configuration) and the
        stragglers table (every traced multi-rank configuration)."""
        traced = self.store.traced_runs()
        straggling = self.store.stragglers()
        if not traced and not straggling:
            return
        self.add("### Timelines and stragglers", "")
        if straggling:
            self.add("Per step of the traced runs, the straggler is the rank with the most busy time (step + data "
                     "wait - waiting for the others' gradients); its lag is that over the median rank's busy time. "
                     "Over the steps of all runs of a configuration: mean and largest lag, the lag as % of the "
                     "median busy time, the rank most often slowest and the phase most often behind it "
                     "(`dtnn query stragglers` lists every step).", "")
            rows = []
            for group in straggling:
                lag = [g["lag_s"] for g in group]
                frac = [g["lag_s"] / g["median_busy_s"] for g in group if g["median_busy_s"]]
                slowest = Counter(g["slowest_rank"] for g in group).most_common(1)[0]
                phase = Counter(g["phase"] for g in group).most_common(1)[0]
                rows.append((group[0]["label"] or group[0]["config_key"], group[0]["ranks"],
                             len({g["run_id"] for g in group}), len(group), num(1e3 * statistics.median(
                                 [g["median_busy_s"] for g in group]), 2), num(1e3 * statistics.fmean(lag), 3),
                             num(1e3 * max(lag), 3), num(100 * statistics.fmean(frac), 1) if frac else "-",
                             f"{slowest[0]} ({slowest[1]}/{len(group)})", f"{phase[0]} ({phase[1]})"))
            self.add(*table(["configuration", "ranks", "runs", "steps", "median busy ms", "mean lag ms",
                             "max lag ms", "lag %", "slowest rank (steps)", "usual phase (steps)"], rows,
                            right=range(1, 8)))
        if not traced:
            return
        newest = {}
        for r in traced:  # per configuration: the largest rank count's newest run
            key = (r["environment_id"], r["config_key"])
            if key not in newest or (r["ranks"], r["id"]) > (newest[key]["ranks"], newest[key]["id"]):
                newest[key] = r
        chosen = sorted(newest.values(), key=lambda r: (r["config_key"], r["id"]))
        if len(chosen) > MAX_TIMELINES:
            self.add(f"Timelines of the first {MAX_TIMELINES} of {len(chosen)} traced configurations "
                     "(`dtnn report --matrix NAME` narrows the scope).", "")
        for r in chosen[:MAX_TIMELINES]:
            title = f"run {r['id']}: {r['label'] or r['config_key']}, {r['ranks']} rank(s), step {r['step']}"
            self.chart("timeline", f"timeline_run{r['id']}", f"timeline of one step per rank, run {r['id']}", title,
                       self.store.timeline(r["id"]))
