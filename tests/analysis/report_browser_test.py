"""report.html opened in a real browser: Debian's chromium, headless, from file:// with no network.

Usage: report_browser_test.py REPORT_DIR (holding report.html and report.md from the same database)

Fails when the page logs an error (an uncaught exception or console.error, seen by the page's own hook and in
chromium's log), when a chart did not render (each .chart-box must hold a drawn canvas), when the table sort
or filter gives an order this test does not compute itself from the cells, when the page loads anything from
outside itself, or when a throughput figure of report.md is not on the page. Keeps
REPORT_DIR/report_screenshot.png as the run's artefact. Without chromium: exit 77 (skipped), with the reason.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_browser(binary, args, url, profile):
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={profile}", "--virtual-time-budget=30000", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def fail(message):
    sys.exit(f"report_browser_test: FAIL: {message}")


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def check_sort(sorted_result):
    """The page's ascending and descending orders of one column against the same cells sorted here."""
    up, down = sorted_result["ascending"], sorted_result["descending"]
    if sorted(up) != sorted(down) or len(up) < 2:
        fail(f"sorting changed the table's cells: {up} vs {down}")
    values = [number(k) for k in up if k not in ("", "-")]
    if all(v is not None for v in values):
        keys = [number(k) if k not in ("", "-") else float("inf") for k in up]
        if keys != sorted(keys):
            fail(f"column {sorted_result['column']} ascending is not in numeric order: {up}")
        back = [number(k) if k not in ("", "-") else float("inf") for k in down]
        if back != sorted(back, reverse=True) and [k for k in back if k != float("inf")] != \
                sorted([k for k in back if k != float("inf")], reverse=True):
            fail(f"column {sorted_result['column']} descending is not in numeric order: {down}")
    elif up != sorted(up, key=str.lower) and up == down:
        fail(f"column {sorted_result['column']} did not sort: {up}")


def console_errors(log):
    """chromium's log lines for page errors: an uncaught exception, or a console message of level error."""
    return [line for line in log.splitlines()
            if "CONSOLE" in line and ("Uncaught" in line or ":ERROR:" in line or "Error" in line)]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report_browser_test.py REPORT_DIR")
    out = os.path.abspath(sys.argv[1])
    page = os.path.join(out, "report.html")
    binary = chromium()
    if binary is None:
        print("SKIP: no chromium on PATH (ci/setup.sh installs Debian's chromium)")
        return SKIP
    text = open(page, encoding="utf-8").read()
    if re.search(r"<script[^>]*\bsrc=|<link\b|<img[^>]*\bsrc=\"https?:|url\(\s*['\"]?https?:", text):
        fail("the page loads something from outside itself")
    boxes = re.findall(r'<div class="chart-box" id="([^"]+)"', text)
    with tempfile.TemporaryDirectory() as profile:
        r = run_browser(binary, ["--enable-logging=stderr", "--v=0", "--dump-dom"], f"file://{page}#selftest", profile)
    m = re.search(r'<pre id="selftest-result" data-done="1">(.*?)</pre>', r.stdout, re.S)
    if not m:
        fail(f"the page's self-check did not finish (chromium exit {r.returncode}):\n{r.stderr[-3000:]}")
    result = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                        .replace("&amp;", "&"))
    if result["errors"] or console_errors(r.stderr):
        fail(f"errors in the page: {result['errors']} {console_errors(r.stderr)}")
    if not boxes or result["charts"] != len(boxes) or result["rendered"] != len(boxes):
        fail(f"{len(boxes)} charts in the HTML, {result['charts']} seen, {result['rendered']} rendered; "
             f"not rendered: {result['not_rendered']}")
    if not result["sorted"]:
        fail("no table of two rows or more to sort")
    check_sort(result["sorted"])
    f = result["filtered"]
    if not (1 <= f["shown"] <= f["rows"]):
        fail(f"filtering on '{f['word']}' showed {f['shown']} of {f['rows']} rows")
    # The page and report.md come from one document: every throughput median of report.md is on the page.
    md = open(os.path.join(out, "report.md"), encoding="utf-8").read()
    section = md.split("## Throughput", 1)[1].split("\n## ", 1)[0]
    medians = {line.split("|")[-4].strip() for line in section.splitlines() if line.startswith("| ") and
               re.search(r"\d,?\d*\.\d \|", line)}
    missing = [v for v in medians if f">{v}<" not in text]
    if not medians or missing:
        fail(f"throughput medians of report.md not on the page: {missing or 'none found'}")
    shot = os.path.join(out, "report_screenshot.png")
    with tempfile.TemporaryDirectory() as profile:
        run_browser(binary, ["--hide-scrollbars", "--window-size=1400,2400", f"--screenshot={shot}"],
                    f"file://{page}", profile)
    if not os.path.exists(shot) or os.path.getsize(shot) < 10000:
        fail(f"no screenshot at {shot}")
    print(f"report_browser_test: ok: {len(boxes)} charts rendered, {result['tables']} tables, column "
          f"{result['sorted']['column']} of {result['sorted']['table']} sorted both ways, filter '{f['word']}' "
          f"kept {f['shown']} of {f['rows']} rows; screenshot {shot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
