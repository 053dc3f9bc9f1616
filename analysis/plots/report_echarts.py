"""The page's charts: each function takes the data report_plots' function of the same name takes (without the
path) and returns (ECharts option, height in pixels). Options are plain JSON; a custom series names its
renderItem ("errorBar", "timelineBar"), which the page's report.js supplies. Every chart can be hovered
(tooltip), its series toggled (legend) and zoomed (dataZoom: drag inside, or the toolbox's box zoom).
"""

from report_blocks import PALETTE, framework_colour

MAX_TEXT = 80


def short(text):
    text = str(text)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 3] + "..."


def base(title, legend=True):
    option = {"animation": False, "color": PALETTE,
              "title": {"text": short(title), "left": "center", "textStyle": {"fontSize": 13}},
              "tooltip": {"trigger": "axis", "confine": True},
              "toolbox": {"right": 10, "feature": {"dataZoom": {}, "restore": {}, "saveAsImage": {}}}}
    if legend:
        option["legend"] = {"type": "scroll", "bottom": 0}
    return option


def value_axis(name, **extra):
    return dict({"type": "value", "name": name, "nameLocation": "middle", "nameGap": 56, "scale": False}, **extra)


def rank_axis(grid=0):
    return {"type": "log", "logBase": 2, "name": "ranks", "nameLocation": "middle", "nameGap": 28,
            "gridIndex": grid, "minorSplitLine": {"show": False}}


def error_bars(name, points, colour, axes=(0, 0), horizontal=False):
    """A custom series drawing [x, low, high] (vertical) or [y, low, high] (horizontal) as whiskers."""
    return {"type": "custom", "name": name, "renderItem": "errorBarH" if horizontal else "errorBar",
            "data": points, "itemStyle": {"color": colour}, "xAxisIndex": axes[0], "yAxisIndex": axes[1],
            "z": 3, "tooltip": {"show": False}, "encode": {"x": [1, 2] if horizontal else 0,
                                                           "y": 0 if horizontal else [1, 2]}}


def zoom(x=(0,), y=()):
    return [{"type": "inside", "xAxisIndex": list(x), "yAxisIndex": list(y), "filterMode": "none"}]


def two_panels(title, left_name):
    option = base(title)
    option["grid"] = [{"left": 80, "right": "55%", "top": 50, "bottom": 80},
                      {"left": "56%", "right": 30, "top": 50, "bottom": 80}]
    option["xAxis"] = [rank_axis(0), rank_axis(1)]
    option["yAxis"] = [value_axis(left_name, gridIndex=0, min=0),
                       value_axis("parallel efficiency", gridIndex=1, min=0)]
    option["dataZoom"] = zoom(x=(0, 1))
    option["series"] = [{"type": "line", "name": "ideal", "xAxisIndex": 1, "yAxisIndex": 1, "data": [],
                         "itemStyle": {"color": "#888"},
                         "markLine": {"silent": True, "symbol": "none", "lineStyle": {"type": "dashed", "color": "#888"},
                                      "data": [{"yAxis": 1.0}]}}]
    return option


def throughput_bars(labels, medians, mins, maxs):
    option = base("Throughput per configuration", legend=False)
    option["tooltip"] = {"trigger": "axis", "axisPointer": {"type": "shadow"}, "confine": True}
    option["grid"] = {"left": 20, "right": 40, "top": 50, "bottom": 40, "containLabel": True}
    option["yAxis"] = {"type": "category", "data": [short(x) for x in labels], "inverse": True,
                       "axisLabel": {"width": 360, "overflow": "truncate"}}
    option["xAxis"] = value_axis("training samples/s (median over runs; whiskers: min-max)", min=0, nameGap=26)
    option["dataZoom"] = zoom(x=(0,))
    option["series"] = [{"type": "bar", "name": "median samples/s", "data": medians, "itemStyle": {"opacity": 0.85}},
                        error_bars("min-max", [[i, lo, hi] for i, (lo, hi) in enumerate(zip(mins, maxs))], "#000",
                                   horizontal=True)]
    return option, 90 + 28 * len(labels)


def scaling_lines(series):
    option = two_panels("Throughput and parallel efficiency vs ranks", "training samples/s (mean; whiskers: min-max)")
    colours = {}
    for label, ranks, sps, eff, measured, spread in series:
        base_label = label if measured else label.split(": ")[0]
        colour = colours.setdefault(base_label, PALETTE[len(colours) % len(PALETTE)])
        style = {"color": colour, "type": "solid" if measured else "dashed"}
        for axis, ys in ((0, sps), (1, eff)):
            option["series"].append({"type": "line", "name": short(label), "xAxisIndex": axis, "yAxisIndex": axis,
                                     "data": [[r, y] for r, y in zip(ranks, ys)], "lineStyle": style,
                                     "itemStyle": {"color": colour}, "showSymbol": measured})
        bars = [[r, lo, hi] for r, (lo, hi) in zip(ranks, spread) if lo is not None and lo != hi]
        if bars:
            option["series"].append(error_bars(short(label), bars, colour))
    return option, 460


def framework_lines(title, series):
    option = two_panels(title, "training samples/s (median; whiskers: min-max)")
    for i, (framework, ranks, med, lo, hi, eff) in enumerate(series):
        colour = framework_colour(framework, i)
        option["series"] += [
            {"type": "line", "name": framework, "data": [[r, m] for r, m in zip(ranks, med)],
             "itemStyle": {"color": colour}, "lineStyle": {"color": colour}},
            error_bars(framework, [[r, a, b] for r, a, b in zip(ranks, lo, hi)], colour),
            {"type": "line", "name": framework, "xAxisIndex": 1, "yAxisIndex": 1,
             "data": [[r, e] for r, e in zip(ranks, eff)], "itemStyle": {"color": colour}, "lineStyle": {"color": colour}}]
    return option, 460


def comm_stacks(series):
    option = base("Compute and communication per training step")
    option["tooltip"] = {"trigger": "axis", "axisPointer": {"type": "shadow"}, "confine": True}
    letters = [chr(ord("A") + i) if i < 26 else str(i + 1) for i in range(len(series))]
    cats, parts = [], {"compute": [], "exposed communication": [], "communication calls between layers": []}
    for letter, (_, points) in zip(letters, series):
        for ranks, compute, exposed, other in points:
            cats.append(f"{letter} {ranks}r")
            for name, v in zip(parts, (compute, exposed, other)):
                parts[name].append(v)
    option["grid"] = {"left": 80, "right": 30, "top": 50, "bottom": 80}
    option["xAxis"] = {"type": "category", "data": cats, "name": "configuration (letter, as in the table) and ranks",
                       "nameLocation": "middle", "nameGap": 28}
    option["yAxis"] = value_axis("ms per training step (median rank)")
    option["dataZoom"] = zoom(x=(0,))
    option["color"] = ["#1f77b4", "#d62728", "#aaaaaa"]
    option["series"] = [{"type": "bar", "stack": "step", "name": n, "data": v} for n, v in parts.items()]
    return option, 420


def accuracy_curves(title, ylabel, series, targets):
    option = base(title)
    option["grid"] = {"left": 80, "right": 30, "top": 50, "bottom": 90}
    option["xAxis"] = value_axis("epoch", minInterval=1, nameGap=28)
    option["yAxis"] = value_axis(ylabel, scale=True)
    option["dataZoom"] = zoom(x=(0,), y=(0,))
    option["series"] = []
    for i, (label, epochs, mean, low, high) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        option["series"].append({"type": "line", "name": short(label), "data": [[e, m] for e, m in zip(epochs, mean)],
                                 "itemStyle": {"color": colour}, "lineStyle": {"color": colour}})
        if any(lo != hi for lo, hi in zip(low, high)):
            option["series"].append(error_bars(short(label), [[e, lo, hi] for e, lo, hi in zip(epochs, low, high)],
                                               colour))
    if targets:
        option["series"].append({"type": "line", "name": "targets", "data": [], "itemStyle": {"color": "#000"},
                                 "markLine": {"symbol": "none", "lineStyle": {"type": "dashed", "color": "#000"},
                                              "label": {"formatter": "{b}", "position": "insideEndTop"},
                                              "data": [{"name": short(n), "yAxis": v} for n, v in targets]}})
    return option, 440


def conv_layer_bars(title, problems, algos, ms):
    option = base(title)
    option["tooltip"] = {"trigger": "axis", "axisPointer": {"type": "shadow"}, "confine": True}
    option["grid"] = {"left": 20, "right": 40, "top": 50, "bottom": 70, "containLabel": True}
    option["yAxis"] = {"type": "category", "data": [short(p) for p in problems], "inverse": True}
    option["xAxis"] = {"type": "log", "name": "ms per call, fwd + bwd_data + bwd_filter (log scale)",
                       "nameLocation": "middle", "nameGap": 26}
    option["dataZoom"] = zoom(x=(0,))
    option["tooltip"] = {"trigger": "item", "confine": True}
    option["series"] = [{"type": "custom", "name": a, "renderItem": "hbarLog", "encode": {"x": 1, "y": 0},
                         "itemStyle": {"color": PALETTE[i % len(PALETTE)]},
                         "data": [[p, v, i, len(algos)] for p, v in enumerate(ms[i]) if v is not None]}
                        for i, a in enumerate(algos)]
    return option, 120 + 18 * len(problems) * max(1, len(algos))


TIMELINE_COLOURS = {"data_wait": "#7f7f7f", "forward": "#1f77b4", "loss": "#9467bd", "backward": "#17becf",
                    "comm_calls": "#ff7f0e", "wait_dw": "#d62728", "allreduce_dw": "#d62728", "update_dw": "#2ca02c",
                    "in_flight": "#e377c2"}


def timeline(title, events):
    ranks = sorted({e["rank"] for e in events})
    lanes = max([e["lane"] for e in events] + [0])
    by_kind = {}
    for e in events:
        if e["kind"] in ("step", "evaluate"):
            continue
        by_kind.setdefault(e["kind"], []).append(
            [ranks.index(e["rank"]), 1e3 * e["begin_s"], 1e3 * e["end_s"], e["lane"], lanes, str(e["name"] or "")])
    option = base(title)
    option["tooltip"] = {"trigger": "item", "confine": True}
    option["grid"] = {"left": 80, "right": 30, "top": 50, "bottom": 90}
    option["xAxis"] = value_axis("ms from the step's first event (rank 0's clock)", nameGap=28)
    option["yAxis"] = {"type": "category", "data": [f"rank {r}" for r in ranks], "inverse": True}
    option["dataZoom"] = zoom(x=(0,))
    option["series"] = [{"type": "custom", "name": kind, "renderItem": "timelineBar", "data": data,
                         "itemStyle": {"color": TIMELINE_COLOURS.get(kind, "#000")}, "encode": {"x": [1, 2], "y": 0}}
                        for kind, data in by_kind.items()]
    return option, 160 + 50 * len(ranks)


def averaging_curves(title, series):
    option = base(title)
    ylabel = series[0][4] if series else "accuracy (%)"
    option["grid"] = [{"left": 80, "right": "55%", "top": 50, "bottom": 90},
                      {"left": "55%", "right": 30, "top": 50, "bottom": 90}]
    option["xAxis"] = [value_axis("communication rounds", gridIndex=0, nameGap=28),
                       value_axis("training time (s, cumulative)", gridIndex=1, nameGap=28)]
    option["yAxis"] = [value_axis(ylabel, gridIndex=0, scale=True), value_axis(ylabel, gridIndex=1, scale=True)]
    option["dataZoom"] = zoom(x=(0, 1))
    option["series"] = []
    colours = {}
    for label, rounds, seconds, acc, _, dashed in series:
        colour = colours.setdefault(label.split(", straggler")[0], PALETTE[len(colours) % len(PALETTE)])
        style = {"color": colour, "type": "dashed" if dashed else "solid"}
        for axis, xs in ((0, rounds), (1, seconds)):
            option["series"].append({"type": "line", "name": short(label), "xAxisIndex": axis, "yAxisIndex": axis,
                                     "data": [[x, a] for x, a in zip(xs, acc)], "lineStyle": style,
                                     "itemStyle": {"color": colour}})
    return option, 460


STEP_COLOURS = {"regression": "#d62728", "improvement": "#2ca02c", "step": "#7f7f7f"}


def history_chart(title, ylabel, xlabel, commits, values, medians, levels, steps):
    option = base(title)
    option["grid"] = {"left": 80, "right": 30, "top": 50, "bottom": 110}
    option["xAxis"] = {"type": "category", "data": commits, "name": xlabel, "nameLocation": "middle", "nameGap": 62,
                       "axisLabel": {"rotate": 90, "fontSize": 9}}
    option["yAxis"] = value_axis(ylabel, scale=True)
    option["dataZoom"] = zoom(x=(0,))
    marks = [{"xAxis": point, "name": f"{commit} ({verdict})", "lineStyle": {"color": STEP_COLOURS.get(verdict, "#888")}}
             for point, commit, verdict in steps]
    option["series"] = [
        {"type": "scatter", "name": "runs", "symbolSize": 6, "itemStyle": {"opacity": 0.5, "color": PALETTE[0]},
         "data": [[i, v] for i, vs in enumerate(values) for v in vs]},
        {"type": "line", "name": "median per commit", "data": medians, "itemStyle": {"color": PALETTE[0]},
         "lineStyle": {"color": PALETTE[0]},
         "markLine": {"symbol": "none", "label": {"formatter": "{b}"}, "lineStyle": {"type": "dashed"}, "data": marks}},
        ] + [{"type": "line", "name": "segment level", "symbol": "none", "itemStyle": {"color": "#000"},
              "lineStyle": {"width": 3, "color": "#000"}, "data": [[first, level], [last, level]]}
             for first, last, level in levels]
    return option, 400
