#!/usr/bin/python3
"""The report of the dtnn results store (the engine of `dtnn report`): one document (report_blocks.py) written
as Markdown with PNG plots (report_markdown.py), one self-contained HTML page (report_html.py) and a paper folder
of PDF/SVG figures and CSV/LaTeX tables (report_paper.py).

Usage (Debian's Python, which has python3-matplotlib and numpy):

    /usr/bin/python3 analysis/plots/report.py --out DIR [--db results/dtnn.db] [--matrix NAME]
        [--dtnn PATH] [--repo DIR] [--format all|markdown|html|paper|a,b]

Writes DIR/report.html, DIR/paper/ and DIR/report.md with, next to it, throughput.png, scaling.png, communication.png, timeline_run<id>.png,
frameworks_<n>_<model>.png, averaging_<model>_<dataset>_<ranks>r.png, accuracy_<model>_<dataset>.png and history_<sps|acc>_<trial>.png (each only
when there is something to plot). Sections:

  header       database, generation time, environments, matrices, runs per status, runs that failed
  Throughput   per configuration: median/min/max training samples/s of the ok runs (+ bar chart)
  Scaling      from v_scaling: samples/s and parallel efficiency vs ranks (+ two-panel chart); from v_comm:
               the median rank's compute, communication and exposed communication per step (+ stacked bars);
               for traced runs (tracing = true) the stragglers per configuration and one step's timeline
               per rank (the largest rank count of each configuration)
  Frameworks   from v_frameworks (schema 21): per recipe that ran under more than one framework (dtnn, pytorch,
               pydtnn), each framework's median samples/s and spread, speed-up, efficiency, exposed communication
               and test accuracy per rank count, and a chart with a line per framework
               (frameworks_<n>_<model>.png; analysis/plots/report_frameworks.py)
  Model averaging  from v_averaging (schema 9; only when a run averaged or a matrix declared model_averaging):
               per mode a table of rounds, MiB, wait, time and test accuracy per (model, ranks, period,
               straggler); per model, dataset and ranks accuracy vs communication rounds and vs time
               (averaging_<model>_<dataset>_<ranks>r.png; analysis/plots/report_averaging.py)
  Accuracy     per-epoch validation (else training) accuracy curves per configuration, with the
               targets v_accuracy_vs_target matched to a plotted run as dashed lines (none on training-accuracy
               charts); final accuracies; test accuracy vs target (v_accuracy_vs_target)
  History      `--dtnn PATH history --format json` for samples_per_s and test_accuracy (ok runs of clean builds;
               commits in the git order of --repo, default the checkout report.py is in): per metric a table of
               each trial's (and machine's) commits, newest value, steps (short commit, ratio) and verdict; per
               series (test accuracy: with a step) a chart of the runs' values, the median per commit, the
               segment levels and the steps (regressions in red; history_<sps|acc>_<trial>.png, at most 24;
               analysis/plots/report_history.py). Without --dtnn, or when `dtnn history` fails (e.g. only runs
               of dirty builds), one sentence why
  Per-layer    per model and conv_algo: median forward/backward ms of each Conv2D and FC layer
  Conv algos   from `dtnn ingest`ed benchmarks (conv_benchmarks): per model (dtnn layers) or bench_conv file,
               device, threads and math mode, every problem x algorithm (fwd + bwd_data + bwd_filter ms,
               the fastest in bold) + a grouped bar chart conv_<...>.png

--matrix NAME restricts everything to the runs of the matrices with that name. The database is opened
read-only. On an error (no database, not a dtnn results database, unwritable DIR, unknown matrix) it prints
one line starting with "dtnn report:" on stderr and exits 1; usage errors exit 2. A database without
ok runs still gives a report (that says so). Without matplotlib the report has the tables only.
"""

import sys

sys.dont_write_bytecode = True  # keep analysis/plots/ free of __pycache__

import argparse  # noqa: E402
import datetime  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
from collections import defaultdict  # noqa: E402

from report_blocks import Chart  # noqa: E402
from report_data import STATUSES, ReportError, Store  # noqa: E402
from report_markdown import write_markdown  # noqa: E402
from report_format import (SHORT, distinguishing, file_part, labels_for, median, num,  # noqa: E402
                           numeric, readable_keys, short_error, table, varying)
from report_averaging import AveragingSections  # noqa: E402
from report_history import HistorySections  # noqa: E402
from report_scaling import ScalingSections  # noqa: E402
from report_frameworks import FrameworkSections  # noqa: E402

PREFIX = "dtnn report: "


def one_line(error):
    """An error's text on one line (matplotlib's and SQLite's messages can span several)."""
    return " ".join(str(error).split())
MAX_FAILED_LISTED = 100

# ---- the report --------------------------------------------------------------------------------------------


class Report(ScalingSections, FrameworkSections, AveragingSections, HistorySections):
    """Collects the Markdown lines and writes the plots into the output directory."""

    def __init__(self, store):
        self.store = store
        self.lines = []  # Markdown text lines, and Table and Chart blocks (report_blocks)
        self.runs = store.ok_runs()
        self.several_envs = len({r["environment_id"] for r in self.runs}) > 1

    def add(self, *lines):
        self.lines.extend(lines)

    def chart(self, kind, name, alt, *args):
        """A chart: report_plots.<kind>(path, *args) draws it as PNG, PDF and SVG, report_echarts.<kind>(*args)
        in the page. name: the file stem (no extension); alt: what it shows, in words."""
        self.add(Chart(kind, name, alt, args), "")

    def config_groups(self):
        """The ok runs grouped by configuration (environment and trial key), in a stable order.

        Each group is a dict with the configuration columns, `label`, `trial_key` and `runs` (the run dicts).
        """
        by_key = defaultdict(list)
        for r in self.runs:
            by_key[(r["environment_id"], r["trial_key"])].append(r)
        order = ("framework", "model", "dataset", "conv_algo", "ranks", "threads", "device", "batch_size",
                 "num_epochs", "optimizer", "environment_id", "trial_key")
        groups = [dict({c: runs[0][c] for c in order}, label=runs[0]["label"], rank_batch=runs[0]["rank_batch"],
                       tensor_format=runs[0]["tensor_format"], runs=runs)
                  for runs in by_key.values()]
        # (is-text, value) keeps the sort safe should a column mix numbers and text.
        return sorted(groups, key=lambda g: tuple((isinstance(g[c], str), g[c]) for c in order))

    # ---- header

    def header(self):
        s = self.store
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        self.add("# dtnn results report", "",
                 f"- Database: `{os.path.abspath(s.path)}`",
                 f"- Generated: {now}",
                 f"- Runs: {'matrix `' + s.matrix + '`' if s.matrix else 'all matrices'}", "")

        self.add("## Environments", "")
        envs = s.environments()
        if envs:
            rows = [(e["id"], e["host"], e["cpu_model"], e["cores"], e["gpu"], e["compiler"], e["build_type"],
                     e["blas"], e["onednn"], e["mpi"], e["cuda"],
                     e["git_commit"] + ("+dirty" if e["git_dirty"] else "")) for e in envs]
            self.add(*table(["env", "host", "cpu_model", "cores", "gpu", "compiler", "build", "blas", "onednn",
                             "mpi", "cuda", "git_commit"], rows, right=(0, 3)))
        else:
            self.add("No runs, so no environments.", "")

        self.add("## Matrices", "")
        mats = s.matrices()
        if mats:
            rows = [(m["name"], m["hash"][:12], m["file"], m["created_at"], m["runs"]) for m in mats]
            self.add(*table(["name", "hash", "file", "created", "runs"], rows, right=(4,)))
        else:
            self.add("No matrices.", "")

        self.add("## Run status", "")
        counts = s.status_counts()
        rows = [(st, counts[st]) for st in STATUSES] + [("**total**", sum(counts.values()))]
        self.add(*table(["status", "runs"], rows, right=(1,)))
        bad = s.non_ok_runs()
        if bad:
            self.add("Runs that are not ok:", "")
            rows = [(r["id"], r["status"], r["framework"], r["model"], r["dataset"], r["label"],
                     short_error(r["error"])) for r in bad[:MAX_FAILED_LISTED]]
            self.add(*table(["run", "status", "framework", "model", "dataset", "trial", "error"], rows,
                            right=(0,)))
            if len(bad) > MAX_FAILED_LISTED:
                self.add(f"... and {len(bad) - MAX_FAILED_LISTED} more.", "")
        if not self.runs:
            self.add("**No ok runs**: there is nothing to tabulate or plot below.", "")

    # ---- throughput

    def throughput(self):
        self.add("## Throughput", "")
        groups = [g for g in self.config_groups() if any(r["samples_per_s"] is not None for r in g["runs"])]
        if not groups:
            self.add("No ok runs with a throughput.", "")
            return
        for g in groups:
            sps = [r["samples_per_s"] for r in g["runs"] if r["samples_per_s"] is not None]
            g["n"], g["median"], g["min"], g["max"] = len(sps), statistics.median(sps), min(sps), max(sps)
        cols = ["framework", "model", "dataset", "conv_algo", "ranks", "threads", "device", "batch_size"]
        if self.several_envs:
            cols.append("environment_id")
        shown, headers = self.row_keys(groups, cols)
        first_number = len(headers)
        headers += ["runs", "median samples/s", "min", "max"]
        rows = [(*s, g["n"], num(g["median"]), num(g["min"]), num(g["max"])) for s, g in zip(shown, groups)]
        self.add("Training samples/s (all ranks) of the ok runs, per configuration.", "")
        self.add(*table(headers, rows, right=numeric(cols, first_number)))
        labels = labels_for(groups, cols, ["framework", "model", "dataset"], extra=("label", "trial_key"))
        self.chart("throughput_bars", "throughput", "throughput per configuration", labels,
                   [g["median"] for g in groups], [g["min"] for g in groups], [g["max"] for g in groups])

    # ---- memory

    def memory(self):
        """Measured peak memory per configuration beside the planned buffers (v_memory)."""
        rows = self.store.memory()
        if not rows:
            return
        groups = defaultdict(list)
        for r in rows:
            groups[(r["environment_id"], r["config_key"], r["framework"], r["ranks"])].append(r)
        self.add("### Memory", "",
                 "Peak resident memory of the largest rank (getrusage's high-water mark: data, libraries and "
                 "communication buffers included) and, on GPUs, the device peak, over the runs of each "
                 "configuration, beside the bytes dtnn's model planned for its buffers (activations, gradients, "
                 "workspace, parameters). MiB.", "")
        out = []
        ordered = sorted(groups.items(), key=lambda kv: (kv[1][0]["model"], str(kv[0])))
        trials = readable_keys([rs[0]["label"] or rs[0]["config_key"] for _, rs in ordered])
        for ((_, _, framework, ranks), rs), trial in zip(ordered, trials):
            rss = [r["peak_rss_mib"] for r in rs]
            dev = [r["device_peak_mib"] for r in rs if r["device_peak_mib"] is not None]
            out.append((framework, rs[0]["model"], rs[0]["dataset"], rs[0]["device"], ranks, rs[0]["batch_size"],
                        trial, len(rs), num(rs[0]["planned_mib"], 2),
                        num(median(rss)), num(min(rss)), num(max(rss)), num(median(dev)) if dev else "-"))
        self.add(*table(["framework", "model", "dataset", "device", "ranks", "batch", "trial", "runs", "planned",
                         "peak RSS (median)", "min", "max", "device peak"], out, right=(4, 5, *range(7, 13))))

    # ---- scaling

    # ---- accuracy

    def accuracy(self):
        self.add("## Accuracy", "")
        if not self.runs:
            self.add("No ok runs.", "")
            return
        epochs = defaultdict(list)
        for e in self.store.epochs():
            epochs[e["run_id"]].append(e)
        judged = self.store.accuracy_vs_target()
        by_data = defaultdict(list)
        for g in self.config_groups():
            by_data[(g["model"], g["dataset"])].append(g)

        for (model, dataset), groups in sorted(by_data.items()):
            self.add(f"### {model} on {dataset}", "")
            self.accuracy_table(groups)
            series, kinds = [], []
            for g in groups:
                curve = self.accuracy_curve(g, epochs)
                if curve:
                    series.append((g, *curve[1:]))
                    kinds.append(curve[0])
            if not series:
                self.add("No per-epoch accuracies recorded.", "")
                continue
            mixed = len(set(kinds)) > 1
            labels = labels_for([s[0] for s in series], ["framework", "conv_algo", "ranks", "threads", "device",
                                                         "batch_size", "num_epochs", "optimizer",
                                                         "environment_id"], ["framework"])
            if mixed:
                labels = [f"{lab} ({kind})" for lab, kind in zip(labels, kinds)]
            ylabel = {"val": "validation accuracy (%)", "train": "training accuracy (%)"}[kinds[0]] \
                if not mixed else "accuracy (%): validation, else training"
            lines = [(lab, *s[1:]) for lab, s in zip(labels, series)]
            self.chart("accuracy_curves", f"accuracy_{file_part(model)}_{file_part(dataset)}",
                       f"accuracy per epoch, {model} on {dataset}", f"{model} on {dataset}", ylabel, lines,
                       self.matching_targets(judged, [s[0] for s in series], kinds))

        self.add("### Test accuracy vs target", "")
        rows = judged
        if not rows:
            targets = self.store.targets()
            self.add(f"No accuracy target matches the ok runs (table `targets` has {len(targets)} "
                     f"entr{'y' if len(targets) == 1 else 'ies'}).", "")
            return
        verdicts = defaultdict(int)
        for r in rows:
            verdicts[r["verdict"]] += 1
        order = ["pass", "fail", "no value"]
        counts = sorted(verdicts.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
        self.add(", ".join(f"{n} {v}" for v, n in counts) + " (pass: value >= target - tolerance). Time to target "
                 "(MLPerf's measure, v_time_to_target): the training time and epochs at which the metric first "
                 "reached target - tolerance; a test-set target is evaluated after training, so it is reached at "
                 "the end or not at all.", "")
        ttt = self.store.time_to_target()
        reached = [ttt.get((r["run_id"], r["metric"], r["target"]), {}) for r in rows]
        self.add(*table(["run", "framework", "model", "dataset", "epochs", "optimizer", "metric", "value %",
                         "target %", "tolerance", "verdict", "epochs to target", "time to target s", "source"],
                        [(r["run_id"], r["framework"], r["model"], r["dataset"], r["num_epochs"], r["optimizer"],
                          r["metric"], num(r["value"], 2), num(r["target"], 2), num(r["tolerance"], 2),
                          r["verdict"] if r["verdict"] != "fail" else "**fail**", t.get("epochs_to_target"),
                          num(t.get("time_to_target_s"), 2), r["source"]) for r, t in zip(rows, reached)],
                        right=(0, 4, 7, 8, 9, 11, 12)))

    @staticmethod
    def row_keys(groups, cols):
        """(each group's cells for `cols`, the headers): configurations that differ only in parameters without
        a column (learning rate, scaling, ...) get the trial label (or key) as one more, so no two rows look
        alike."""
        shown = [tuple(g[c] for c in cols) for g in groups]
        headers = [SHORT.get(c, c) for c in cols]
        if len(set(shown)) < len(shown):
            name, values = distinguishing(shown, groups, ("label", "trial_key")) or \
                ("trial_key", [g["trial_key"] for g in groups])
            shown = [(*s, v) for s, v in zip(shown, readable_keys(values))]
            headers.append("trial" if name == "label" else "trial key")
        return shown, headers

    def accuracy_table(self, groups):
        """Median final accuracies of each configuration of one (model, dataset)."""
        cols = varying(groups, ["framework", "conv_algo", "ranks", "threads", "device", "batch_size",
                                "num_epochs", "optimizer", "environment_id"]) or ["framework"]
        shown, headers = self.row_keys(groups, cols)
        rows = []
        for s, g in zip(shown, groups):
            acc = [r["test_accuracy"] for r in g["runs"] if r["test_accuracy"] is not None]
            rows.append((*s, len(g["runs"]), len({str(r["seed"]) for r in g["runs"]}), num(median(acc), 2),
                         num(min(acc), 2) if acc else "-", num(max(acc), 2) if acc else "-",
                         num(statistics.stdev(acc), 2) if len(acc) > 1 else "-",
                         num(median(r["val_accuracy"] for r in g["runs"]), 2)))
        self.add("Test accuracy over the runs of each configuration: median, min, max and sample standard deviation "
                 "(sd), with the number of distinct seeds among them (repeats of one seed differ only by "
                 "nondeterministic reductions).", "")
        self.add(*table(headers + ["runs", "seeds", "test accuracy % (median)", "min", "max", "sd",
                                   "last val accuracy % (median)"], rows, right=numeric(cols, len(headers))))

    @staticmethod
    def accuracy_curve(group, epochs):
        """('val' or 'train', epochs, mean, min, max) over the group's runs, or None without data."""
        runs = [epochs.get(r["id"], []) for r in group["runs"]]
        kind = "val" if all(any(e["val_accuracy"] is not None for e in es) for es in runs) else "train"
        per_epoch = defaultdict(list)
        for es in runs:
            for e in es:
                if e[f"{kind}_accuracy"] is not None:
                    per_epoch[e["epoch"]].append(e[f"{kind}_accuracy"])
        if not per_epoch:
            return None
        xs = sorted(per_epoch)
        return (kind, xs, [statistics.fmean(per_epoch[x]) for x in xs], [min(per_epoch[x]) for x in xs],
                [max(per_epoch[x]) for x in xs])

    @staticmethod
    def matching_targets(judged, groups, kinds):
        """(label, value) of the targets v_accuracy_vs_target matched to at least one of the plotted runs (its
        recipe: epochs, optimizer, learning rate, batch, ranks, trained from scratch, ...). None on a chart of
        training accuracy (no target is one); on validation curves a test-accuracy target keeps its metric in
        the label."""
        if "train" in kinds:
            return []
        ids = {r["id"] for g in groups for r in g["runs"]}
        found = {}
        for v in judged:
            if v["run_id"] in ids and v["target"] is not None:
                label = f"target {v['metric']} {v['target']:g}%" + (f" ({v['source'][:40]})" if v["source"] else "")
                found.setdefault(label, v["target"])
        return sorted(found.items(), key=lambda kv: (kv[1], kv[0]))

    # ---- per-layer timings

    def layers(self):
        self.add("## Per-layer timings", "")
        timings = defaultdict(list)
        for t in self.store.layer_timings():
            timings[t["run_id"]].append(t)
        if not timings:
            self.add("No Conv2D or FC layer timings recorded for the ok runs.", "")
            return
        self.add("Median forward and backward milliseconds per training batch of each Conv2D and FC layer, over "
                 "the ok runs of each configuration.", "")
        by_algo = defaultdict(list)
        for g in self.config_groups():
            if any(r["id"] in timings for r in g["runs"]):
                by_algo[(g["model"], g["conv_algo"])].append(g)
        # The batch per rank (rank 0's, whose layers are timed) and the tensor format set the layer shapes: a
        # strong-scaling run's batch_size is its global batch.
        sub_cols = ["framework", "dataset", "device", "ranks", "threads", "rank_batch", "tensor_format"]
        if self.several_envs:
            sub_cols.append("environment_id")
        for (model, algo), groups in sorted(by_algo.items()):
            self.add(f"### {model}, conv_algo {algo}", "")
            # Configurations that differ only in parameters that do not change the layer shapes or the
            # machine load (epochs, optimizer, ...) are pooled.
            pooled = defaultdict(list)
            for g in groups:
                pooled[tuple(g[c] for c in sub_cols)].extend(r for r in g["runs"] if r["id"] in timings)
            for key, runs in sorted(pooled.items(), key=lambda kv: tuple(str(v) for v in kv[0])):
                desc = ", ".join(f"{SHORT.get(c, c)} {v}" for c, v in zip(sub_cols, key) if v is not None)
                self.add(f"{desc}; {len(runs)} run(s):", "")
                self.layer_table(runs, timings)

    def layer_table(self, runs, timings):
        per_layer = defaultdict(list)
        for r in runs:
            for t in timings[r["id"]]:
                per_layer[(t["layer_id"], t["type"])].append(t)
        rows, fwd_total, bwd_total = [], 0.0, 0.0
        for (layer_id, kind), ts in sorted(per_layer.items()):
            fwd = median(t["forward_ms"] for t in ts)
            bwd = median(t["backward_ms"] for t in ts)
            fwd_total += fwd or 0.0
            bwd_total += bwd or 0.0
            both = None if fwd is None and bwd is None else (fwd or 0.0) + (bwd or 0.0)
            algos = sorted({t["layer_algo"] for t in ts if t["layer_algo"]})
            rows.append((layer_id, kind, ", ".join(algos), ts[0]["problem"], ts[0]["output_shape"], ts[0]["params"],
                         len(ts), num(fwd, 3), num(bwd, 3), num(both, 3)))
        rows.append(("", "**total**", "", "", "", "", "", num(fwd_total, 3), num(bwd_total, 3),
                     num(fwd_total + bwd_total, 3)))
        self.add(*table(["layer", "type", "algorithm", "problem", "output shape", "params", "runs", "forward ms",
                         "backward ms", "fwd+bwd ms"], rows, right=(0, 5, 6, 7, 8, 9)))

    # ---- convolution algorithms per layer (dtnn ingest)

    def conv_algorithms(self):
        self.add("## Convolution algorithms per layer", "")
        rows = self.store.conv_benchmarks()
        if not rows:
            self.add("No convolution benchmarks stored (`dtnn layers --json F` or bench_conv's JSON, then "
                     "`dtnn ingest F`).", "")
            return
        self.add("Milliseconds per call of fwd + bwd_data + bwd_filter for every problem (the layer's first "
                 "index for `dtnn layers`) and algorithm, the newest ingested times; the fastest is in bold. "
                 "An algorithm timed in only some directions (a GPU algorithm of one direction) shows those "
                 "directions' times instead.", "")
        groups = defaultdict(dict)  # (source, model, device, threads, tf32, env) -> {(problem, layer): {algo: {dir: ms}}}
        for r in rows:
            key = (r["source"], r["model"] or "bench_conv", r["device"], r["threads"], r["tf32"], r["environment_id"])
            cell = groups[key].setdefault((r["problem"], r["layer"]), {}).setdefault(r["algorithm"], {})
            cell[r["direction"]] = r["median_ms"]  # rows come in id order: the newest wins
        for (source, model, device, threads, tf32, env), problems in sorted(groups.items(), key=lambda kv: str(kv[0])):
            algos = sorted({a for cells in problems.values() for a in cells})
            what = f"{model}, {device}" + (f", {threads} thread(s)" if device == "cpu" else "") + \
                (", TF32" if tf32 else "") + (f", env {env}" if self.several_envs else "")
            self.add(f"### {what}", "")
            table_rows, totals = [], [[None] * len(problems) for _ in algos]
            for pi, ((problem, layer), cells) in enumerate(sorted(problems.items(), key=lambda kv: (kv[0][1] or 0, kv[0][0]))):
                full = {a: sum(d.values()) for a, d in cells.items() if len(d) == 3}
                best = min(full, key=full.get) if full else None
                row = [layer if layer is not None else "", problem]
                for ai, a in enumerate(algos):
                    d = cells.get(a)
                    if not d:
                        row.append("")
                    elif len(d) == 3:
                        totals[ai][pi] = full[a]
                        row.append(f"**{num(full[a], 3)}**" if a == best else num(full[a], 3))
                    else:
                        row.append(" + ".join(f"{k} {num(v, 3)}" for k, v in sorted(d.items())))
                table_rows.append(row)
            self.add(*table(["layer", "problem"] + [a.split(".", 1)[-1] for a in algos], table_rows, right=(0,)))
            if any(v is not None for t in totals for v in t):
                # Every part through file_part: the model name comes from an ingested file (a '/' would leave
                # --out), and the source keeps a bench_conv group from overwriting a model-less layers group.
                name = "conv_" + "_".join(file_part(x) for x in (source, model, device, threads,
                                                                 "tf32" if tf32 else "fp32", env))
                labels = [f"{layer} {problem}" if layer is not None else problem
                          for (problem, layer) in sorted(problems, key=lambda k: (k[1] or 0, k[0]))]
                self.chart("conv_layer_bars", name, f"conv algorithms, {what}", what, labels, algos, totals)


# ---- command line --------------------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write(f"{PREFIX}{message}\n")
        sys.exit(2)


def prepare_out(out):
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise ReportError(f"{out}: cannot create the output directory ({e.strerror or e})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise ReportError(f"{out}: the output directory is not writable")


def load_plots():
    try:
        import report_plots
    except ImportError:
        sys.stderr.write(f"{PREFIX}warning: matplotlib is not available to {sys.executable}; writing the "
                         "report without plots (apt-get install python3-matplotlib)\n")
        return None
    return report_plots


FORMATS = ("markdown", "html", "paper")


def parse_formats(parser, text):
    formats = FORMATS if text == "all" else tuple(f.strip() for f in text.split(","))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        parser.error(f"--format: unknown format '{unknown[0] if unknown else text}' (known: all, {', '.join(FORMATS)})")
    return formats


def write(report, store, out, formats):
    """The report's document in each format asked for."""
    plots = load_plots() if "markdown" in formats or "paper" in formats else None
    if "markdown" in formats:
        write_markdown(report.lines, out, plots)
    if "html" in formats:
        from report_html import write_html
        write_html(report.lines, out, store)
    if "paper" in formats:
        from report_paper import write_paper
        write_paper(report.lines, os.path.join(out, "paper"), plots)


def main(argv=None):
    # A path argument or stored text with bytes that are not UTF-8 is printed escaped, never a UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(errors="backslashreplace")
    parser = Parser(description="The report of the dtnn results store: Markdown with PNG charts, one HTML page, "
                    "and figures and tables for a paper.")
    parser.add_argument("--db", default="results/dtnn.db", help="results database (default: results/dtnn.db)")
    parser.add_argument("--out", required=True, help="output directory (report.md and its PNGs, report.html, paper/)")
    parser.add_argument("--matrix", help="only the runs of the matrix with this name")
    parser.add_argument("--dtnn", help="the dtnn binary whose `dtnn history` gives the History section "
                        "(`dtnn report` passes its own; without it the section says so)")
    parser.add_argument("--repo", help="git repository giving the History section's commit order (default: the "
                        "checkout report.py is in, when it is one)")
    parser.add_argument("--format", default="all",
                        help="what to write: markdown (report.md + PNGs), html (report.html), paper (paper/: PDF "
                        "and SVG figures, CSV and LaTeX tables), a comma-separated list of them, or all (default)")
    args = parser.parse_args(argv)
    formats = parse_formats(parser, args.format)
    store = None
    try:
        store = Store(args.db, args.matrix)
        prepare_out(args.out)
        report = Report(store)
        report.header()
        report.throughput()
        report.memory()
        report.scaling()
        report.frameworks()
        report.timelines()
        report.averaging()
        report.accuracy()
        report.history(args.dtnn, args.repo)
        report.layers()
        report.conv_algorithms()
        write(report, store, args.out, formats)
    except ReportError as e:
        sys.stderr.write(f"{PREFIX}{one_line(e)}\n")
        return 1
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        sys.stderr.write(f"{PREFIX}{where}{one_line(e.strerror or e)}\n")
        return 1
    except Exception as e:  # a bug here must not print a traceback through `dtnn report`
        if os.environ.get("DTNN_REPORT_TRACEBACK"):
            raise
        sys.stderr.write(f"{PREFIX}internal error: {type(e).__name__}: {one_line(e)} "
                         "(DTNN_REPORT_TRACEBACK=1 shows the traceback)\n")
        return 1
    finally:
        if store is not None:
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
