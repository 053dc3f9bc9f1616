"""The report as a document: Markdown text lines, and Table and Chart blocks between them.

report.py's sections add text lines (Markdown: headings, paragraphs) and blocks; each writer renders the same
document: report_markdown (report.md + PNGs), report_html (one self-contained report.html) and report_paper
(PDF and SVG figures, CSV and LaTeX tables). A chart is a kind (a function of report_plots for matplotlib and
of report_echarts for the page, both taking the same data) with its data, so every format draws the same
figure from one call.
"""

import re


class Num(float):
    """A number as the report shows it (grouped thousands, fixed digits), keeping its value for writers that
    want the number (CSV, LaTeX, sorting in the page)."""

    def __new__(cls, value, digits):
        self = super().__new__(cls, value)
        self.digits = digits
        return self

    def __str__(self):
        return f"{float(self):,.{self.digits}f}"

    def plain(self):
        return f"{float(self):.{self.digits}f}"


class Table:
    """headers: column titles; rows: tuples of cells (str, int, Num, None: '-'); right: indices of right-aligned
    columns. A cell's Markdown (**bold**, `code`) is kept: each writer renders or strips it."""

    def __init__(self, headers, rows, right=()):
        self.headers = list(headers)
        self.rows = [tuple(r) for r in rows]
        self.right = set(right)


# The chart kinds: each is a function of report_plots (matplotlib: PNG, PDF, SVG) and of report_echarts (the
# page) taking the same data.
KINDS = ("throughput_bars", "scaling_lines", "framework_lines", "comm_stacks", "timeline", "accuracy_curves",
         "averaging_curves", "history_chart", "conv_layer_bars")


class Chart:
    """kind: the name of a function in report_plots (and in report_echarts) taking *args; name: the file stem
    (no extension); alt: what the chart shows, in words."""

    def __init__(self, kind, name, alt, args):
        if kind not in KINDS:
            raise ValueError(f"no chart kind {kind}")
        self.kind = kind
        self.name = name
        self.alt = alt
        self.args = args


def slug(text, limit=48):
    """A heading as part of a file name or an HTML id: lower case, [a-z0-9_] only."""
    s = re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_") or "x"
    return s[:limit].rstrip("_")


def plain_cell(value):
    """A cell without its Markdown: for CSV, LaTeX and the page's sort keys."""
    if value is None:
        return ""
    if isinstance(value, Num):
        return value.plain()
    return re.sub(r"\*\*(.*?)\*\*|`(.*?)`", lambda m: m.group(1) if m.group(1) is not None else m.group(2),
                  str(value))


def sections(lines):
    """(heading path, block) for every Table and Chart of the document: the headings above it, outermost first."""
    path = []
    for item in lines:
        if isinstance(item, str):
            m = re.match(r"^(#{1,6}) (.*)$", item)
            if m:
                level = len(m.group(1))
                path = path[:level - 1] + [m.group(2)]
        else:
            yield list(path), item


# One colour per framework in every format (matplotlib's tab10 blue, red, green), so a paper's figures and the
# page read alike; other series take PALETTE in order.
FRAMEWORK_COLOURS = {"dtnn": "#1f77b4", "pytorch": "#d62728", "pydtnn": "#2ca02c"}
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]


def framework_colour(name, index):
    return FRAMEWORK_COLOURS.get(name, PALETTE[index % len(PALETTE)])
