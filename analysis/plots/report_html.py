"""report.html: the report as one self-contained page (no network: ECharts, the page's script and style are
inlined), with a contents list, sortable and filterable tables and interactive charts (report_echarts).

The vendored ECharts file is checked against the checksum recorded here before it is inlined: a page is never
built from a file that is not the pinned release.
"""

import hashlib
import html
import json
import os
import re

import report_echarts
from report_blocks import Chart, Num, Table, plain_cell, slug
from report_data import ReportError
from report_markdown import shown_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
ECHARTS = os.path.join(HERE, "vendor", "echarts-5.6.0", "echarts.min.js")
ECHARTS_SHA256 = "bf4a223524e40b77c304bec67e1222cf551f14880cf42c69dc046558e11c07b1"


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def echarts_source():
    with open(ECHARTS, "rb") as f:
        data = f.read()
    if hashlib.sha256(data).hexdigest() != ECHARTS_SHA256:
        raise ReportError(f"{ECHARTS}: not the pinned ECharts 5.6.0 (its sha256 differs; see its README.md)")
    return data.decode("utf-8")


def inline(text):
    """One line of the report's Markdown as HTML: `code`, **bold**, _emphasis_ and [links](url)."""
    out, pos = [], 0
    for m in re.finditer(r"`([^`]+)`|\*\*(.+?)\*\*|(?<![\w\\])_(\S.*?\S|\S)_(?!\w)|\[([^\]]+)\]\(([^)\s]+)\)", text):
        out.append(html.escape(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append(f"<code>{html.escape(m.group(1))}</code>")
        elif m.group(2) is not None:
            out.append(f"<strong>{inline(m.group(2))}</strong>")
        elif m.group(3) is not None:
            out.append(f"<em>{inline(m.group(3))}</em>")
        else:
            href = m.group(5)
            safe = href if re.match(r"^(https?:|#|[\w./-]+$)", href) else "#"
            out.append(f'<a href="{html.escape(safe)}">{html.escape(m.group(4))}</a>')
        pos = m.end()
    return "".join(out) + html.escape(text[pos:])


class Page:
    def __init__(self):
        self.body, self.toc, self.charts, self.ids = [], [], {}, set()
        self.para, self.items = [], []

    def unique_id(self, text):
        base = slug(text) or "s"
        name, k = base, 1
        while name in self.ids:
            k += 1
            name = f"{base}-{k}"
        self.ids.add(name)
        return name

    def flush(self):
        if self.para:
            self.body.append("<p>" + " ".join(inline(x) for x in self.para) + "</p>")
        if self.items:
            self.body.append("<ul>" + "".join(f"<li>{inline(x)}</li>" for x in self.items) + "</ul>")
        self.para, self.items = [], []

    def text(self, line):
        m = re.match(r"^(#{1,6}) (.*)$", line)
        if m:
            self.flush()
            level, title = len(m.group(1)), m.group(2)
            hid = self.unique_id(title)
            self.body.append(f'<h{level} id="{hid}">{inline(title)}</h{level}>')
            if level in (2, 3):
                self.toc.append(f'<a href="#{hid}"{" class=sub" if level == 3 else ""}>{html.escape(title)}</a>')
        elif not line.strip():
            self.flush()
        elif line.startswith("- "):
            if self.para:
                self.flush()
            self.items.append(line[2:])
        else:
            if self.items:
                self.flush()
            self.para.append(line)

    def table(self, t):
        self.flush()
        tid = self.unique_id("table")
        head = "".join(f'<th{" class=r" if i in t.right else ""}>{inline(h)}</th>' for i, h in enumerate(t.headers))
        rows = []
        for row in t.rows:
            cells = []
            for i, v in enumerate(row):
                sort = f' data-sort="{html.escape(plain_cell(v))}"' if isinstance(v, (Num, int, float)) else ""
                shown = "-" if v is None or v == "" else inline(str(v))
                text = plain_cell(v)
                # A long text cell is cut to one line; hovering it shows the whole (the filter still finds it).
                long = f' class=long title="{html.escape(text)}"' if len(text) > 60 else ""
                right = " class=r" if i in t.right else ""
                cells.append(f'<td{right or long}{sort}>{shown}</td>')
            rows.append("<tr>" + "".join(cells) + "</tr>")
        self.body.append(f'<div class="table-box"><div class="table-tools"><input class="filter" type="search" '
                         f'placeholder="filter rows" aria-label="filter rows"><span class="count">{len(t.rows)} rows'
                         f'</span><span>click a column to sort</span></div><table class="data" id="{tid}"><thead><tr>'
                         f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')

    def chart(self, c):
        self.flush()
        cid = self.unique_id("chart-" + c.name)
        option, height = getattr(report_echarts, c.kind)(*c.args)
        self.charts[cid] = option
        self.body.append(f'<figure class="chart"><div class="chart-box" id="{cid}" data-kind="{c.kind}" '
                         f'style="height:{int(min(max(height, 240), 2400))}px"></div>'
                         f'<figcaption>{html.escape(c.alt)}</figcaption></figure>')


def script_json(value):
    """JSON inside <script>: '<' escaped so no text can close the element."""
    return json.dumps(value, allow_nan=False, default=float).replace("<", "\\u003c")


def finite(value):
    """The options with NaN and infinities as null (JSON has neither)."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def write_html(lines, out, store):
    page = Page()
    for item in lines:
        if isinstance(item, Table):
            page.table(item)
        elif isinstance(item, Chart):
            page.chart(item)
        else:
            page.text(item)
    page.flush()
    title = "dtnn results report" + (f": {store.matrix}" if store.matrix else "")
    doc = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{html.escape(title)}</title>", f"<style>{read_text(os.path.join(HERE, 'html', 'report.css'))}</style>",
           "</head><body>", '<nav id="toc"><strong>Contents</strong>' + "".join(page.toc) + "</nav>",
           "<main>", *page.body, '<pre id="selftest-result"></pre>', "</main>",
           "<!-- Apache ECharts 5.6.0 (Apache-2.0; bundles ZRender, BSD-3-Clause, and tslib, 0BSD) -->",
           f"<script>{echarts_source()}</script>",
           f'<script id="dtnn-charts" type="application/json">{script_json(finite(page.charts))}</script>',
           f"<script>{read_text(os.path.join(HERE, 'html', 'report.js'))}</script>", "</body></html>"]
    with open(os.path.join(out, "report.html"), "w", encoding="utf-8") as f:
        f.write(shown_bytes("\n".join(doc)) + "\n")
