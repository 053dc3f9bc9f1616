"""Every chart kind of the report, with small hand-made data, written as report.md, report.html and paper/ into
OUT: the browser and paper tests then cover the kinds a test database does not reach (history of three commits,
frameworks side by side) and the edges (a missing value, a one-point series, a NaN).

Usage: report_gallery.py SOURCE_DIR OUT
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(sys.argv[1], "analysis", "plots"))

import report_echarts  # noqa: E402
import report_plots  # noqa: E402
from report_blocks import KINDS, Chart  # noqa: E402
from report_format import num, table  # noqa: E402
from report_html import write_html  # noqa: E402
from report_markdown import write_markdown  # noqa: E402
from report_paper import write_paper  # noqa: E402


class NoStore:
    matrix = None


def chart(kind, *args):
    return [Chart(kind, "gallery_" + kind, f"every kind: {kind}", args), ""]


def document():
    nan = float("nan")
    events = [dict(rank=r, lane=lane, kind=k, name=k, begin_s=b, end_s=e)
              for r in (0, 1) for lane, k, b, e in ((0, "forward", 0.0, 0.002), (0, "backward", 0.002, 0.005),
                                                    (1, "in_flight", 0.003, 0.006), (0, "update_dw", 0.006, 0.007))]
    return ["# Gallery", "", "## Throughput", "",
            *table(["configuration", "runs", "median samples/s"], [("a", 2, num(1234.5)), ("b", 1, num(99.0))],
                   right=(1, 2)),
            *chart("throughput_bars", ["a", "b"], [1234.5, 99.0], [1200.0, 99.0], [1300.0, 99.0]),
            "## Scaling", "",
            *chart("scaling_lines", [("a", [1, 2, 4], [100.0, 180.0, 300.0], [1.0, 0.9, 0.75], True,
                                      [(90.0, 110.0), (170.0, 190.0), (None, None)]),
                                     ("a: model, ib100, blocking", [1, 2, 4, 8], [100.0, 190.0, 350.0, 600.0],
                                      [1.0, 0.95, 0.87, 0.75], False, [])]),
            *chart("framework_lines", "recipe: samples/s vs ranks",
                   [("dtnn", [1, 2], [100.0, 190.0], [95.0, 185.0], [105.0, 195.0], [1.0, 0.95]),
                    ("pytorch", [1, 2], [60.0, 100.0], [60.0, 100.0], [60.0, 100.0], [1.0, 0.83]),
                    ("pydtnn", [1], [20.0], [20.0], [20.0], [1.0])]),
            *chart("comm_stacks", [("a", [(1, 5.0, 0.0, 0.0), (2, 5.1, 0.8, 0.2)])]),
            *chart("timeline", "one step", events),
            "## Accuracy", "",
            *chart("accuracy_curves", "m on d", "validation accuracy (%)",
                   [("a", [1, 2, 3], [80.0, 85.0, 87.0], [79.0, 84.0, 86.5], [81.0, 86.0, 87.5]),
                    ("b", [1], [70.0], [70.0], [70.0])], [("target test_accuracy 86%", 86.0)]),
            *chart("averaging_curves", "m, d, 2 ranks",
                   [("synchronous", [0, 2, 4], [0.0, 0.1, 0.2], [50.0, 60.0, nan], "training accuracy (%)", False)]),
            "## History", "",
            *chart("history_chart", "a", "samples/s", "commit (git order)", ["c1", "c2", "c3", "c4"],
                   [[100.0, 101.0], [99.0], [80.0, 81.0], [80.5]], [100.5, 99.0, 80.5, 80.5],
                   [(0, 1, 100.0), (2, 3, 80.5)], [(2, "c3", "regression")]),
            "## Convolution algorithms per layer", "",
            *chart("conv_layer_bars", "model, cpu", ["1 problem", "2 problem"], ["im2col", "direct"],
                   [[0.5, 2.0], [None, 30.0]])]


def main():
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    lines = document()
    write_markdown(lines, out, report_plots)
    write_html(lines, out, NoStore())
    write_paper(lines, os.path.join(out, "paper"), report_plots)
    kinds = {c.kind for c in lines if isinstance(c, Chart)}
    missing = [k for k in KINDS if k not in kinds]
    unbacked = [k for k in KINDS if not (callable(getattr(report_plots, k, None)) and
                                         callable(getattr(report_echarts, k, None)))]
    if missing or unbacked:
        sys.exit(f"report_gallery: kinds left out: {missing}; kinds without both writers: {unbacked}")
    print(f"report_gallery: {len(kinds)} chart kinds written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
