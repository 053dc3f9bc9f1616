"""report.md and its PNG charts (report_plots, matplotlib) from the report's document (report_blocks)."""

import os
import re
import sys

from report_blocks import Chart, Table
from report_format import markdown_image, markdown_table

PREFIX = "dtnn report: "


def shown_bytes(text):
    """Paths are bytes: Python holds a byte that is not UTF-8 as a lone surrogate (U+DC80..U+DCFF), which no UTF-8
    writer takes. Shown "\\xNN" instead, as dtnn's own JSON and tables show them."""
    return re.sub("[\udc80-\udcff]", lambda m: "\\x%02x" % (ord(m.group()) - 0xDC00), text)


def draw(plots, chart, path):
    """report_plots.<kind>(path, *args): the format follows path's extension (.png, .pdf, .svg). Returns None, or
    why the chart was not drawn (report_plots.PlotError: a warning on stderr; the report goes on)."""
    try:
        getattr(plots, chart.kind)(path, *chart.args)
        return None
    except plots.PlotError as e:
        sys.stderr.write(f"{PREFIX}warning: {e}\n")
        return str(e)


def write_markdown(lines, out, plots):
    """out/report.md, with out/<chart>.png beside it; plots: report_plots, or None without matplotlib (each chart
    is then a sentence saying so)."""
    text = []
    for item in lines:
        if isinstance(item, Table):
            text.extend(markdown_table(item))
        elif isinstance(item, Chart):
            if plots is None:
                text.append("_(No plot: matplotlib is not available to /usr/bin/python3.)_")
                continue
            why = draw(plots, item, os.path.join(out, item.name + ".png"))
            text.append(f"_(Figure {why})_" if why else markdown_image(item.name + ".png", item.alt))
        else:
            text.append(item)
    with open(os.path.join(out, "report.md"), "w", encoding="utf-8") as f:
        f.write(shown_bytes("\n".join(text).rstrip("\n") + "\n"))
