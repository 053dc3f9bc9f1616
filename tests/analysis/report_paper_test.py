"""report/paper/ checked against the formats' own rules, not against the writer: PDF (ISO 32000's header,
trailer and embedded TrueType fonts), SVG (XML in the SVG namespace, text kept as text), CSV (RFC 4180
records of one width, numbers without thousands separators) and LaTeX (a booktabs tabular whose every row has
as many cells as its column specification, special characters escaped, environments balanced).

Usage: report_paper_test.py REPORT_DIR (holding paper/ and report.html from the same database)
"""

import csv
import os
import re
import sys
import xml.etree.ElementTree as ET

SVG_NS = "{http://www.w3.org/2000/svg}"


def fail(message):
    sys.exit(f"report_paper_test: FAIL: {message}")


def check_pdf(path):
    data = open(path, "rb").read()
    if not re.match(rb"%PDF-1\.[0-7]", data):
        fail(f"{path}: no PDF header")
    tail = data[-1024:]
    if b"startxref" not in tail or b"%%EOF" not in tail:
        fail(f"{path}: no trailer (startxref, %%EOF)")
    if b"/FontFile2" not in data:
        fail(f"{path}: fonts not embedded as TrueType (pdf.fonttype 42)")


def check_svg(path):
    root = ET.parse(path).getroot()
    if root.tag != SVG_NS + "svg":
        fail(f"{path}: root element {root.tag}, not svg")
    if not any(el.text and el.text.strip() for el in root.iter(SVG_NS + "text")):
        fail(f"{path}: no <text> (labels drawn as paths: svg.fonttype is not 'none')")


def check_csv(path):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, strict=True))
    if len(rows) < 2:
        fail(f"{path}: a header and no rows")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        fail(f"{path}: records of widths {sorted(widths)}")
    grouped = [c for r in rows[1:] for c in r if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", c)]
    if grouped:
        fail(f"{path}: numbers with thousands separators: {grouped[:3]}")
    return len(rows) - 1


def cells(row):
    """A tabular row's cells: split at & not escaped as \\&."""
    return re.split(r"(?<!\\)&", row)


def check_tex(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"\\begin\{tabular\}\{([lcr]+)\}", text)
    if not m:
        fail(f"{path}: no tabular with a column specification")
    width = len(m.group(1))
    for env in ("table", "tabular"):
        if text.count(f"\\begin{{{env}}}") != text.count(f"\\end{{{env}}}"):
            fail(f"{path}: \\begin{{{env}}} and \\end{{{env}}} do not pair")
    body = text[m.end():text.index("\\end{tabular}")]
    for rule in ("\\toprule", "\\midrule", "\\bottomrule"):
        if body.count(rule) != 1:
            fail(f"{path}: {rule} {body.count(rule)} times")
    rows = [line.strip()[:-2] for line in body.splitlines() if line.strip().endswith("\\\\")]
    for row in rows:
        if len(cells(row)) != width:
            fail(f"{path}: a row of {len(cells(row))} cells in a {width}-column tabular: {row[:120]}")
        bare = re.search(r"(?<!\\)[_%#$^~]", re.sub(r"\\text\w+\{\}", "", row))
        if bare:
            fail(f"{path}: an unescaped '{bare.group()}' in: {row[:120]}")
    return len(rows) - 1  # the header row


def main():
    out = os.path.abspath(sys.argv[1])
    paper = os.path.join(out, "paper")
    names = sorted(os.listdir(paper))
    stems = {n.rsplit(".", 1)[0] for n in names if n != "README.md"}
    figures = [s for s in stems if not s.startswith("table_")]
    tables = [s for s in stems if s.startswith("table_")]
    if not figures or not tables:
        fail(f"{paper}: {len(figures)} figures, {len(tables)} tables")
    readme = open(os.path.join(paper, "README.md"), encoding="utf-8").read()
    for stem in figures:
        check_pdf(os.path.join(paper, stem + ".pdf"))
        check_svg(os.path.join(paper, stem + ".svg"))
        if f"`{stem}.pdf`" not in readme:
            fail(f"README.md does not list {stem}")
    for stem in tables:
        n_csv = check_csv(os.path.join(paper, stem + ".csv"))
        n_tex = check_tex(os.path.join(paper, stem + ".tex"))
        if n_csv != n_tex:
            fail(f"{stem}: {n_csv} CSV rows, {n_tex} LaTeX rows")
    # One document, every format: as many tables and charts as the page has.
    page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    page_tables, page_charts = page.count('<table class="data"'), page.count('class="chart-box"')
    if page_tables != len(tables) or page_charts != len(figures):
        fail(f"the page has {page_tables} tables and {page_charts} charts; paper/ {len(tables)} and {len(figures)}")
    print(f"report_paper_test: ok: {len(figures)} figures (PDF, SVG), {len(tables)} tables (CSV, LaTeX)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
