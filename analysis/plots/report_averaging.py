"""The Model averaging section of report.py (schema 9: v_averaging, v_averaging_epochs): per mode a table of
the runs' communication rounds, bytes, wait, time and accuracy, and per model, dataset and rank count a chart
of accuracy against communication rounds and against training time, one line per (mode, n, straggler)."""

import statistics
from collections import defaultdict

from report_format import file_part, num, table

MODES = ("gradient", "synchronous", "asynchronous", "partially_asynchronous", "none")


def period(row):
    """The averaging period, sortable and shown as its text: (0, 2, '2 epochs'), (1, 32, '32 steps');
    (-1, 0, '-') for gradient and none."""
    if row["every_steps"]:
        n = row["every_steps"]
        return (1, n, f"{n} step" + ("s" if n > 1 else ""))
    if row["every_epochs"]:
        n = row["every_epochs"]
        return (0, n, f"{n} epoch" + ("s" if n > 1 else ""))
    return (-1, 0, "-")


def series_key(row):
    """What a table row and a chart line stand for: (mode, period, straggler)."""
    return (row["mode"], period(row), row["straggler"] or "-")


def mean(values):
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


class AveragingSections:
    """Mixed into report.Report (self.store, self.add, self.chart)."""

    def averaging(self):
        runs = self.store.averaging()
        if not runs:
            return
        self.add("## Model averaging", "",
                 "Runs with `--model_averaging` and the runs of the same matrices without it (mode gradient: "
                 "`--parallel=data`, a gradient sum every step; none: 1 rank). Per (model, dataset, ranks, "
                 "period, straggler), means over the ok runs: communication rounds (averages, or merges in the "
                 "asynchronous modes; a gradient run's steps), MiB each rank sent into them, seconds the slowest "
                 "rank waited in them (a gradient run: exposed communication), training and wall time, test "
                 "accuracy (`dtnn query averaging`; per epoch: `dtnn query averaging_epochs`).", "")
        groups = defaultdict(list)
        for r in runs:
            groups[(r["model"], r["dataset"], r["ranks"]) + series_key(r)].append(r)
        order = lambda k: (MODES.index(k[3]) if k[3] in MODES else len(MODES), k[0], k[1], k[2], k[4], k[5])
        for mode in sorted({k[3] for k in groups}, key=lambda m: MODES.index(m) if m in MODES else len(MODES)):
            rows = []
            for key in sorted((k for k in groups if k[3] == mode), key=order):
                g = groups[key]
                mib = mean([r["bytes_per_rank"] for r in g])
                rows.append((key[0], key[1], key[2], key[4][2], key[5], len(g), num(mean([r["rounds"] for r in g]), 1),
                             num(None if mib is None else mib / 2**20, 2), num(mean([r["wait_s_max"] for r in g]), 3),
                             num(mean([r["train_time_s"] for r in g]), 2), num(mean([r["duration_s"] for r in g]), 2),
                             num(mean([r["test_accuracy"] for r in g]), 2)))
            self.add(f"### {mode}", "")
            self.add(*table(["model", "dataset", "ranks", "every", "straggler", "runs", "rounds", "MiB/rank",
                             "wait s (max)", "train s", "wall s", "test acc %"], rows, right=(2,) + tuple(range(5, 12))))
        refused = self.store.averaging_unsupported()
        if refused:
            self.add("Trials this dtnn refused (status unsupported, exit 3; not in the tables): " +
                     ", ".join(f"{r['mode']} x {r['n']}" for r in refused) + ".", "")
        self.averaging_charts(runs)

    def averaging_charts(self, runs):
        """Per (model, dataset, ranks): accuracy per epoch (validation, else training; mean over runs) against
        the cumulative rounds and training time, one line per (mode, period, straggler)."""
        key_of = {r["run_id"]: (r["model"], r["dataset"], r["ranks"]) for r in runs}
        line_of = {r["run_id"]: series_key(r) for r in runs}
        points = defaultdict(lambda: defaultdict(list))  # chart -> line -> [(epoch, rounds, time, acc)]
        val = {}
        for e in self.store.averaging_epochs():
            if e["run_id"] not in key_of:
                continue
            chart = key_of[e["run_id"]]
            val.setdefault(chart, True)
            val[chart] &= e["val_accuracy"] is not None
            points[chart][line_of[e["run_id"]]].append(e)
        for chart in sorted(points):
            use = "val_accuracy" if val[chart] else "train_accuracy"
            series = []
            for line in sorted(points[chart], key=lambda k: (MODES.index(k[0]) if k[0] in MODES else 9, k[1], k[2])):
                by_epoch = defaultdict(list)
                for e in points[chart][line]:
                    by_epoch[e["epoch"]].append(e)
                epochs = sorted(by_epoch)
                acc = [mean([e[use] for e in by_epoch[n]]) for n in epochs]
                if any(a is None for a in acc):
                    continue
                label = line[0] + ("" if line[1][2] == "-" else f", every {line[1][2]}") + \
                    ("" if line[2] == "-" else f", straggler {line[2]}")
                series.append((label, [mean([e["rounds"] for e in by_epoch[n]]) for n in epochs],
                               [mean([e["time_s"] for e in by_epoch[n]]) for n in epochs], acc,
                               "validation accuracy (%)" if val[chart] else "training accuracy (%)", line[2] != "-"))
            if not series:
                continue
            model, dataset, ranks = chart
            self.chart("averaging_curves", "averaging_" + file_part(f"{model}_{dataset}_{ranks}r"),
                       f"accuracy vs communication rounds and vs time, {model} {dataset} {ranks} ranks",
                       f"{model}, {dataset}, {ranks} ranks", series)
