"""The History section of report.py: `dtnn history --format json` (schema dtnn.history/1; the change points are
found in C++) per metric, training samples/s and test accuracy. Per trial and machine, each commit's value over
the commits (git's order, else the order of each commit's first run) and the steps in it: a table per metric
and a chart per series of at least MIN_COMMITS commits (history_<metric>_<model>_<dataset>_..., named by the
trial's values; at most MAX_CHARTS in all, regressed series first).

Without --dtnn, or when `dtnn history` fails (no ok run of a clean build, ...), the section says why in one
sentence that quotes the command's error line."""

import json
import os
import statistics
import subprocess

from report_format import file_part, num, table

MAX_CHARTS = 24     # history PNGs per report
MIN_COMMITS = 3     # a series of fewer commits gets no chart
TIMEOUT_S = 300     # per `dtnn history` call
SHA = 12            # commit digits shown, as `dtnn history` prints them
ERROR_CHARS = 400
# (metric, subsection title, axis label, digits, short name in file names)
METRICS = (("samples_per_s", "Training samples/s", "training samples/s (median epoch after the first)", 1, "sps"),
           ("test_accuracy", "Test accuracy", "test accuracy (%)", 2, "acc"))
VERDICT = {"regression": "**regressed**", "improvement": "improved", "step": "ok"}
# The checkout report.py is in (analysis/plots/ is two levels down): its commits give the default order.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_repo():
    """The checkout report.py belongs to when it is a git repository, else None."""
    return CHECKOUT if os.path.exists(os.path.join(CHECKOUT, ".git")) else None


def flatten(text):
    text = " ".join(str(text).split())
    return text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS] + "..."


def run_history(dtnn, db, matrix, repo, metric):
    """(the parsed dtnn.history/1 document, None), or (None, why) with why a clause for a sentence."""
    cmd = [dtnn, "history", "--db", db, "--format", "json", "--metric", metric, "--repo", repo or ""]
    if matrix is not None:
        cmd += ["--select", f"matrix={matrix}"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"`dtnn history` ran longer than {TIMEOUT_S} s"
    except OSError as e:
        return None, f"cannot run `{dtnn}` ({e.strerror or e})"
    if p.returncode != 0:
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        return None, f"`dtnn history` exited {p.returncode}" + (f": {flatten(lines[-1])}" if lines else
                                                                " without a message")
    try:
        doc = json.loads(p.stdout)
    except ValueError as e:
        return None, f"`dtnn history` did not print JSON ({e})"
    if not isinstance(doc, dict) or doc.get("schema") != "dtnn.history/1":
        schema = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        return None, f"`dtnn history` printed schema {schema!r}, not dtnn.history/1"
    return doc, None


def charted(metric, series):
    """Whether a series gets a chart: a history of at least MIN_COMMITS commits (one or two points are a table
    row, not a trend), and for accuracy only one with a step (a flat accuracy says nothing the table does not)."""
    return len(series["points"]) >= MIN_COMMITS and (metric == "samples_per_s" or bool(series["steps"]))


def chart_name(series):
    """A file name a person can read: the trial's model, dataset and distinguishing values (from its key), not
    the key itself."""
    params = dict(p.split("=", 1) for p in (series.get("trial_key") or "").split(";") if "=" in p)
    parts = [params.get("framework") if params.get("framework", "dtnn") != "dtnn" else None, params.get("model"),
             os.path.basename(params.get("dataset_train_path", "").rstrip("/")) or params.get("dataset"),
             params.get("conv_algo", "").replace("cpu.", "") or None,
             f"{params['ranks']}r" if "ranks" in params else None, params.get("device")]
    return "_".join(file_part(p) for p in parts if p) or file_part(series.get("label") or "series")


def levels(points, steps):
    """(first point, last point, level) per segment: the median of every run value in it (the fit's level,
    which the steps' before and after give for the segments around each step)."""
    bounds = [0] + [st["point"] for st in steps] + [len(points)]
    return [(a, b - 1, statistics.median(v for p in points[a:b] for v in p["values"]))
            for a, b in zip(bounds, bounds[1:]) if b > a]


def steps_text(series, digits):
    n = len(series["points"])
    return "; ".join(f"{st['verdict']} at `{st['commit'][:SHA]}` (commit {st['point'] + 1} of {n}): "
                     f"{num(st['before'], digits)} -> {num(st['after'], digits)} (x{st['ratio']:.3f})"
                     for st in series["steps"]) or "no step"


class HistorySections:
    """Mixed into report.Report (self.store, self.add, self.chart)."""

    def history(self, dtnn, repo=None):
        """The History section; dtnn: the dtnn binary (None: the section says it needs one); repo: the git
        repository giving the commit order (None: the checkout report.py is in, when it is one)."""
        self.add("## History", "")
        if not dtnn:
            self.add("No history: report.py ran without `--dtnn PATH`, the dtnn binary whose `dtnn history` finds "
                     "the steps (`dtnn report` passes its own).", "")
            return
        if not (os.path.isfile(dtnn) and os.access(dtnn, os.X_OK)):
            self.add(f"No history: `{dtnn}` (--dtnn) is not an executable file.", "")
            return
        repo = os.path.abspath(repo) if repo else default_repo()
        order = (f"in git's order (repository `{repo}`; a series with a commit it lacks: in the order of each "
                 "commit's first run)") if repo else "in the order of each commit's first run (no git checkout)"
        self.add(f"Per trial and machine (`dtnn history`), each commit's value over the commits {order}, "
                 "with the steps of a penalised piecewise-constant fit "
                 "(asv's method). Only ok runs of clean builds with a recorded commit count. A series regressed "
                 "when its newest step is down by more than the threshold. Charts: every run's value (dots), the "
                 "median per commit (line), each segment's level (bars) and the steps (dashed; red: regression).",
                 "")
        answers = [run_history(dtnn, os.path.abspath(self.store.path), self.store.matrix, repo, m[0]) for m in METRICS]
        # The charts, at most MAX_CHARTS: regressed series first, then those with a step, samples/s before accuracy.
        # A flat accuracy is the usual case and its chart says nothing the table does not: none.
        candidates = [(i, s) for i, (doc, _) in enumerate(answers) if doc for s in doc.get("series") or []
                      if charted(METRICS[i][0], s)]
        candidates.sort(key=lambda c: (not c[1]["newest_regressed"], not c[1]["steps"], c[0]))
        self.history_charted = {id(s) for _, s in candidates[:MAX_CHARTS]}
        self.history_files = set()
        for (metric, title, ylabel, digits, short), (doc, why) in zip(METRICS, answers):
            self.add(f"### {title}", "")
            if doc is None:
                self.add(f"No {metric} history: {why}.", "")
                continue
            self.history_metric(doc, metric, ylabel, digits, short)

    def history_metric(self, doc, metric, ylabel, digits, short):
        """One metric's table (regressed series first, then those with a step) and charts."""
        series = sorted(doc.get("series") or [], key=lambda s: (not s["newest_regressed"], not s["steps"]))
        if not series:
            self.add(f"No {metric} series.", "")
            return
        machines = list(dict.fromkeys(s["machine_key"] for s in series))
        builds = list(dict.fromkeys(s.get("build", "") for s in series))  # absent from older dtnn's JSON
        several = len(machines) > 1
        left = [f"{doc[k]} ok run(s) {what}" for k, what in (("dirty_runs", "of dirty builds"),
                                                             ("unknown_commit_runs", "without a recorded commit"))
                if doc.get(k)]
        self.add(f"{len(series)} series, {doc.get('regressed_series', 0)} regressed at the newest step (threshold "
                 f"{100 * doc.get('threshold', 0):g} %)" + (f"; left out: {' and '.join(left)}" if left else "") + ".",
                 "")
        names = []  # the label (a counter where trials share it), and the machine where there are several
        for s in series:
            base = s["label"] or s["trial_key"]
            same = sum(1 for t in series[:len(names)] if (t["label"] or t["trial_key"]) == base and
                       t["machine_key"] == s["machine_key"] and t.get("build", "") == s.get("build", ""))
            names.append(base + (f" #{same + 1}" if same else "") +
                         (f" (machine {machines.index(s['machine_key']) + 1})" if several else "") +
                         (f" (build {builds.index(s.get('build', '')) + 1})" if len(builds) > 1 else ""))
        rows = [(name, s["order"], len(s["points"]), num(s["points"][-1]["value"] if s["points"] else None, digits),
                 steps_text(s, digits), VERDICT.get(s["steps"][-1]["verdict"], "ok") if s["steps"] else "steady")
                for s, name in zip(series, names)]
        self.add(*table(["trial", "order", "commits", "newest", "steps", "verdict"], rows, right=(2, 3)))
        if several:
            self.add("Machines: " + "; ".join(f"{i + 1} = `{m or 'not recorded'}`" for i, m in enumerate(machines)) +
                     ".", "")
        if len(builds) > 1:
            self.add("Builds: " + "; ".join(f"{i + 1} = `{b or 'not recorded'}`" for i, b in enumerate(builds)) +
                     ".", "")
        candidates = [s for s in series if charted(metric, s)]
        drawn = [(s, name) for s, name in zip(series, names) if id(s) in self.history_charted]
        for s, name in drawn:
            self.history_chart(s, name, ylabel, short)
        if len(candidates) > len(drawn):
            self.add(f"{len(candidates) - len(drawn)} {metric} series have no chart (at most {MAX_CHARTS} history "
                     "charts per report; regressed series and series with a step come first).", "")
        if len(candidates) < len(series):
            self.add(f"{len(series) - len(candidates)} {metric} series have no chart (fewer than {MIN_COMMITS} "
                     "commits, or an accuracy without a step).", "")

    def history_chart(self, s, label, ylabel, short):
        points = s["points"]
        base = f"history_{short}_{chart_name(s)}"
        fname, k = base, 1
        while fname in self.history_files:
            k += 1
            fname = f"{base}_{k}"
        self.history_files.add(fname)
        xlabel = "commit (git order)" if s["order"] == "git" else "commit (order of each commit's first run)"
        self.chart("history_chart", fname, f"history of {label}", label, ylabel, xlabel,
                   [p["commit"][:SHA] for p in points], [p["values"] for p in points],
                   [p["value"] for p in points], levels(points, s["steps"]),
                   [(st["point"], st["commit"][:SHA], st["verdict"]) for st in s["steps"]])
