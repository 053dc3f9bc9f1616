"""The PNG charts of report.py (matplotlib, Agg backend: no display needed).

Each function takes plain Python data, writes one PNG and closes its figure.
"""

import os
import textwrap
import warnings

import matplotlib
import matplotlib.text

matplotlib.use("Agg")
# Labels are trial names and parameter values ("dataset_train_path=$HOME/x"): text, never mathtext, which
# would fail on an unpaired '$' and silently typeset a paired one.
matplotlib.rcParams["text.parse_math"] = False
warnings.filterwarnings("ignore", module="matplotlib")  # layout hints are no use in a batch report
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.ticker import (FixedLocator, FuncFormatter, NullFormatter, NullLocator,  # noqa: E402
                               ScalarFormatter)

from report_blocks import framework_colour  # noqa: E402

DPI = 110


# The longest text a chart shows (titles, tick labels, legends): a stored name can be any length, and one of
# 5,000 characters made an 88,930-pixel image that matplotlib refused, losing the whole report.
MAX_TEXT = 80
TITLE_WIDTH = 60


class PlotError(Exception):
    """A chart that could not be drawn; the report says so in its place and goes on."""


def _save(fig, path):
    for text in fig.findobj(matplotlib.text.Text):
        shown = text.get_text()
        if len(shown) > MAX_TEXT:
            text.set_text(shown[:MAX_TEXT - 3] + "...")
    for ax in fig.axes:  # a long title wraps instead of running into the legend or the next panel's
        title = ax.get_title()
        if len(title) > TITLE_WIDTH:
            ax.set_title(textwrap.fill(title, TITLE_WIDTH), fontsize=ax.title.get_fontsize())
    try:
        fig.savefig(path, dpi=DPI, bbox_inches="tight")
    except (ValueError, OverflowError, MemoryError, OSError) as e:
        raise PlotError(f"{os.path.basename(path)}: not drawn ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    finally:
        plt.close(fig)


def throughput_bars(path, labels, medians, mins, maxs):
    """Horizontal bars of median samples/s, first configuration on top, min-max error bars."""
    n = len(labels)
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.35 * n))
    y = list(range(n))
    err = [[m - lo for m, lo in zip(medians, mins)], [hi - m for m, hi in zip(medians, maxs)]]
    ax.barh(y, medians, xerr=err, color="tab:blue", alpha=0.8, capsize=3, ecolor="black")
    for yi, m, hi in zip(y, medians, maxs):
        ax.text(hi, yi, f"  {m:,.0f}", va="center", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("training samples/s (median over runs; bars: min-max)")
    ax.set_xlim(0, max(maxs) * 1.18 if maxs and max(maxs) > 0 else 1)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("Throughput per configuration")
    _save(fig, path)


def _rank_axis(ax, ranks):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(ranks)))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("ranks")
    ax.grid(alpha=0.3)


def scaling_lines(path, series):
    """series: list of (label, ranks, samples_per_s, efficiency, measured, spread). Two panels: samples/s and
    efficiency. Measured series are markers joined by a line, with min-max error bars (spread: (min, max) per
    point; none for a single run); predicted ones (measured False) dashed lines without markers, labelled by
    their curve ("model, ib100, non_blocking")."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    all_ranks = set()
    # A predicted curve ("<configuration>: model, ib100, blocking") takes its configuration's colour, so the
    # measured points and their predictions read together; the curves of one configuration differ by dashes.
    colours, dashes, cycle = {}, {}, plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for label, ranks, sps, eff, measured, spread in series:
        all_ranks.update(ranks)
        base = label if measured else label.split(": ")[0]
        colour = colours.setdefault(base, cycle[len(colours) % len(cycle)])
        if measured:
            style = dict(marker="o", linestyle="-", color=colour)
        else:
            n = dashes[base] = dashes.get(base, -1) + 1
            style = dict(marker=None, linestyle=["--", ":", "-.", (0, (5, 1, 1, 1))][n % 4], linewidth=1.5,
                         color=colour)
        ax1.plot(ranks, sps, label=label, **style)
        ax2.plot(ranks, eff, label=label, **style)
        bars = [(r, m, lo, hi) for r, m, (lo, hi) in zip(ranks, sps, spread) if lo is not None and lo != hi]
        if bars:
            ax1.errorbar([b[0] for b in bars], [b[1] for b in bars], fmt="none", capsize=3, color=colour,
                         yerr=[[b[1] - b[2] for b in bars], [b[3] - b[1] for b in bars]])
    _save_two_panels(fig, path, ax1, ax2, all_ranks, "training samples/s (mean; bars: min-max)", "Throughput vs ranks",
                     [e for s in series for e in s[3] if e is not None])


def _save_two_panels(fig, path, ax1, ax2, all_ranks, ylabel, title, efficiencies):
    """The scaling charts' common frame: samples/s left, parallel efficiency (with the ideal) right, legend beside."""
    ax2.axhline(1.0, color="gray", linestyle="--", linewidth=1, label="ideal")
    _rank_axis(ax1, all_ranks)
    _rank_axis(ax2, all_ranks)
    ax1.set_ylabel(ylabel)
    ax1.set_ylim(bottom=0)
    ax1.set_title(title)
    ax2.set_ylabel("parallel efficiency (speed-up / ranks)")
    ax2.set_ylim(0, max([1.15] + [e * 1.1 for e in efficiencies]))
    ax2.set_title("Parallel efficiency vs ranks")
    ax2.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    fig.subplots_adjust(wspace=0.3)
    _save(fig, path)


def comm_stacks(path, series):
    """series: list of (label, [(ranks, compute_ms, exposed_ms, other_ms)]). One group of stacked bars per
    configuration: compute, exposed communication and the rest of the step, per rank count."""
    # Groups are lettered over the bars and named in a key under the chart: configuration labels are too
    # long to stand side by side over groups of one or two bars.
    letters = [chr(ord("A") + i) if i < 26 else str(i + 1) for i in range(len(series))]
    key_lines = [f"{letter}: {label}" for letter, (label, _) in zip(letters, series)]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 + 0.7 * sum(len(p) for _, p in series)),
                                    4.5 + 0.22 * len(key_lines)))
    x, ticks, names = 0.0, [], []
    for i, (_, points) in enumerate(series):
        label = letters[i]
        for ranks, compute, exposed, other in points:
            ax.bar(x, compute, color="tab:blue", label="compute" if x == 0 else None)
            ax.bar(x, exposed, bottom=compute, color="tab:red", label="exposed communication" if x == 0 else None)
            ax.bar(x, other, bottom=compute + exposed, color="tab:gray", alpha=0.5,
                   label="communication calls between layers" if x == 0 else None)
            ticks.append(x)
            names.append(f"{ranks}")
            x += 1.0
        if i + 1 < len(series):
            ax.axvline(x, color="black", linewidth=0.5)
        ax.text(x - len(points) / 2 - 0.5, 1.0, label, transform=ax.get_xaxis_transform(), ha="center",
                va="bottom", fontsize=9, fontweight="bold")
        x += 1.0
    ax.set_xticks(ticks)
    ax.set_xticklabels(names)
    ax.set_xlabel("ranks (groups: configurations)")
    ax.set_ylabel("ms per training step (median rank)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    height = fig.get_size_inches()[1]
    fig.subplots_adjust(bottom=(0.9 + 0.22 * len(key_lines)) / height)
    fig.text(0.01, 0.01, "\n".join(key_lines), ha="left", va="bottom", fontsize=8, family="monospace")
    _save(fig, path)


def accuracy_curves(path, title, ylabel, series, targets):
    """series: list of (label, epochs, mean, low, high); targets: list of (label, value).

    One line per configuration (mean over its runs, shaded between min and max when there are several
    runs) and a dashed horizontal line per target.
    """
    fig, ax = plt.subplots(figsize=(8, 4.5))
    all_epochs = set()
    for label, epochs, mean, low, high in series:
        all_epochs.update(epochs)
        (line,) = ax.plot(epochs, mean, marker="o", markersize=4, label=label)
        if any(lo != hi for lo, hi in zip(low, high)):
            ax.fill_between(epochs, low, high, color=line.get_color(), alpha=0.15)
    styles = ["--", "-.", ":"]
    for i, (label, value) in enumerate(targets):
        ax.axhline(value, color="black", linestyle=styles[i % len(styles)], linewidth=1, label=label)
    if len(all_epochs) <= 20:
        ax.set_xticks(sorted(all_epochs))
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    _save(fig, path)


def conv_layer_bars(path, title, problems, algos, ms):
    """Grouped horizontal bars: per problem (first on top), fwd+bwd_data+bwd_filter ms of each algorithm
    (ms[a][p], None where the algorithm has no time), log scale."""
    n, k = len(problems), len(algos)
    fig, ax = plt.subplots(figsize=(9, 1.5 + 0.22 * n * k))
    height = 0.8 / max(k, 1)
    cmap = plt.get_cmap("tab20")
    for a, name in enumerate(algos):
        ys = [p + a * height for p in range(n) if ms[a][p] is not None]
        xs = [ms[a][p] for p in range(n) if ms[a][p] is not None]
        ax.barh(ys, xs, height=height, color=cmap(a % 20), label=name)
    ax.set_yticks([p + 0.4 - height / 2 for p in range(n)])
    ax.set_yticklabels(problems, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    # Plain numbers on the log axis: LogFormatterSciNotation's labels are mathtext, which text.parse_math = False
    # (above) prints raw as "$\mathdefault{10^{0}}$".
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("ms per call, fwd + bwd_data + bwd_filter (log scale)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title)
    _save(fig, path)


# The timeline's colours per event kind (trace/tracer.h); communication in reds, the step's own work in blues.
TIMELINE_COLOURS = {"data_wait": "tab:gray", "forward": "tab:blue", "loss": "tab:purple", "backward": "tab:cyan",
                    "comm_calls": "tab:orange", "wait_dw": "tab:red", "allreduce_dw": "tab:red",
                    "update_dw": "tab:green", "in_flight": "tab:pink"}


def timeline(path, title, events):
    """One training step per rank: events is a list of dicts (rank, lane, kind, name, begin_s, end_s) as
    run_timeline stores them. Each rank is one row (rank 0 on top): its training thread's events as full-height
    bars (step events omitted: they span the row), each bucket's sum in flight as a thin bar stacked over the
    top of the row, so communication shows over the compute it overlaps."""
    ranks = sorted({e["rank"] for e in events})
    lanes = max([e["lane"] for e in events] + [0])
    fig, ax = plt.subplots(figsize=(11, 1.0 + 0.55 * len(ranks)))
    seen = set()
    for e in events:
        if e["kind"] in ("step", "evaluate"):
            continue
        y = ranks.index(e["rank"])
        ms, width = 1e3 * e["begin_s"], 1e3 * (e["end_s"] - e["begin_s"])
        colour = TIMELINE_COLOURS.get(e["kind"], "black")
        label = None if e["kind"] in seen else e["kind"]
        seen.add(e["kind"])
        if e["lane"] == 0:
            ax.barh(y, width, left=ms, height=0.6, color=colour, edgecolor="white", linewidth=0.3, label=label)
        else:  # bucket lanes: thin bars above the training row
            h = 0.25 / max(1, lanes)
            ax.barh(y - 0.3 - h * (e["lane"] - 0.5), width, left=ms, height=h, color=colour, alpha=0.85,
                    label=label)
    ax.set_yticks(range(len(ranks)))
    ax.set_yticklabels([f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("ms from the step's first event (rank 0's clock)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    _save(fig, path)


def averaging_curves(path, title, series):
    """series: list of (label, rounds, seconds, accuracy, ylabel, dashed). Two panels: accuracy against
    communication rounds (symmetric log scale: 0 rounds is an epoch before the first average) and against
    training time, one line per series (its epochs as markers); a series and its straggler twin (dashed)
    share a colour."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    ylabel = series[0][4] if series else "accuracy (%)"
    colours, cycle = {}, plt.get_cmap("tab10").colors + plt.get_cmap("Dark2").colors
    for label, rounds, seconds, acc, _, dashed in series:
        base = label.split(", straggler")[0]
        colour = colours.setdefault(base, cycle[len(colours) % len(cycle)])
        style = "--" if dashed else "-"
        ax1.plot(rounds, acc, style, marker="o", markersize=4, color=colour, label=label)
        ax2.plot(seconds, acc, style, marker="o", markersize=4, color=colour)
    ax1.set_xscale("symlog", linthresh=1)
    ax1.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # not mathtext (see conv_layer_bars)
    ax1.set_xlabel("communication rounds (averages, merges; gradient: steps)")
    ax2.set_xlabel("training time (s, cumulative over epochs)")
    for ax in (ax1, ax2):
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    ax1.set_title(title)
    ax2.legend(*ax1.get_legend_handles_labels(), loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7)
    _save(fig, path)


STEP_COLOURS = {"regression": "tab:red", "improvement": "tab:green", "step": "tab:gray"}


def history_chart(path, title, ylabel, xlabel, commits, values, medians, levels, steps):
    """One series of `dtnn history` over its commits (x: the commit's index): every run's value as a dot, the
    per-commit median as a line, each segment's level as a horizontal line over its commits; steps: list of
    (point, short commit, verdict), a dashed vertical line before the step's first commit, labelled with the
    commit (a regression in red). levels: list of (first point, last point, level)."""
    n = len(commits)
    fig, ax = plt.subplots(figsize=(min(12.0, 5.0 + 0.25 * n), 3.8))
    xs = [i for i, vs in enumerate(values) for _ in vs]
    ax.scatter(xs, [v for vs in values for v in vs], s=12, color="tab:blue", alpha=0.45, label="runs")
    ax.plot(range(n), medians, color="tab:blue", linewidth=1.2, marker="o", markersize=3, label="median per commit")
    for k, (first, last, level) in enumerate(levels):
        ax.hlines(level, first - 0.4, last + 0.4, color="black", linewidth=2, alpha=0.7,
                  label="segment level" if k == 0 else None)
    for point, commit, verdict in steps:
        colour = STEP_COLOURS.get(verdict, "tab:gray")
        ax.axvline(point - 0.5, color=colour, linestyle="--", linewidth=1.2)
        ax.text(point - 0.5, 0.98, f" {commit} ({verdict})", transform=ax.get_xaxis_transform(), rotation=90,
                va="top", ha="right", fontsize=7, color=colour,
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.7, pad=1))
    if n <= 40:
        ax.set_xticks(range(n))
        ax.set_xticklabels(commits, rotation=90, fontsize=6)
    ax.set_xlim(-0.7, n - 0.3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    _save(fig, path)


def framework_lines(path, title, series):
    """series: list of (framework, ranks, median samples/s, min, max, efficiency) of one recipe. Two panels:
    samples/s with min-max bars, and parallel efficiency, one line per framework."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    all_ranks = set()
    for i, (framework, ranks, med, lo, hi, eff) in enumerate(series):
        all_ranks.update(ranks)
        err = [[m - a for m, a in zip(med, lo)], [b - m for m, b in zip(med, hi)]]
        colour = framework_colour(framework, i)  # the same in every chart, the page's included
        ax1.errorbar(ranks, med, yerr=err, marker="o", capsize=3, label=framework, color=colour)
        ax2.plot(ranks, eff, marker="o", label=framework, color=colour)
    _save_two_panels(fig, path, ax1, ax2, all_ranks, "training samples/s (median; bars: min-max)", title,
                     [e for s in series for e in s[5] if e is not None])
