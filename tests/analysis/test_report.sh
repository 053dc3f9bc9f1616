#!/usr/bin/env bash
# Checks analysis/plots/report.py (the engine of `dtnn report`) on a results database.
#   tests/analysis/test_report.sh DB OUT_DIR
# DB must hold at least one ok run (so that a plot is drawn). Passes when the report is written with every
# section heading and at least one PNG, and when a missing database and a file that is not SQLite each
# give exit 1 with a one-line "dtnn report: ..." error. report.py runs without --dtnn here, so the History
# section must say that it needs one (tests/analysis/test_analysis_scripts.py checks it with dtnn history).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 DB OUT_DIR" >&2
  exit 2
fi
db="$1"
out="$2"
report_py="$(cd "$(dirname "$0")/../.." && pwd)/analysis/plots/report.py"
py=/usr/bin/python3

fail() {
  echo "test_report: FAIL: $*" >&2
  exit 1
}

# A good database: report.md with every section, and at least one plot.
"$py" "$report_py" --db "$db" --out "$out" || fail "report.py exited $? on $db"
[ -s "$out/report.md" ] || fail "$out/report.md missing or empty"
for heading in "# dtnn results report" "## Environments" "## Matrices" "## Run status" "## Throughput" \
  "## Scaling" "## Model averaging" "## Accuracy" "## History" "## Per-layer timings" \
  "## Convolution algorithms per layer"; do
  grep -qxF "$heading" "$out/report.md" || fail "report.md lacks the heading '$heading'"
done
grep -qF 'No history: report.py ran without `--dtnn PATH`' "$out/report.md" || fail "History does not say it needs --dtnn"
grep -qxF "### Memory" "$out/report.md" || fail "report.md has no Memory table (v_memory: the runs' measured peaks)"
compgen -G "$out/*.png" > /dev/null || fail "no PNG in $out"
# The numbers, not only the layout: every ok configuration's median samples/s, computed here from the
# runs table (statistics.median), must be in its Throughput row (found by its label) as the report formats
# it (14,450.5).
"$py" - "$db" "$out/report.md" <<'PY' || fail "report.md's throughput medians differ from the runs table"
import sqlite3, statistics, sys
db, report = sys.argv[1], open(sys.argv[2]).read()
section = report.split("## Throughput", 1)[1].split("\n## ", 1)[0]
groups = {}
for model, ranks, threads, label, sps in sqlite3.connect(db).execute(
        "SELECT model, ranks, threads, label, samples_per_s FROM runs WHERE status = 'ok' AND framework = 'dtnn'"):
    groups.setdefault((model, ranks, threads, label), []).append(sps)
# Per model, ranks and threads, the medians of its trials (the averaging trial beside the plain one: the report
# tells them apart by what differs in their keys) are the medians of its rows, no more and no fewer.
want, bad = {}, 0
for (model, ranks, threads, _), values in groups.items():
    want.setdefault((model, ranks, threads), []).append(f"{statistics.median(values):,.1f}")
for (model, ranks, threads), medians in want.items():
    rows = [r for r in section.splitlines() if f"| {model} |" in r and f"| {ranks} | {threads} |" in r]
    got = [c.strip() for r in rows for c in r.split("|")[-4:-3]]  # median samples/s: before min and max
    if sorted(got) != sorted(medians):
        print(f"test_report: {model} ranks {ranks}: medians {sorted(got)} in the rows, {sorted(medians)} in the "
              f"runs table", file=sys.stderr)
        bad += 1
sys.exit(1 if bad or not groups else 0)
PY
# Data-parallel runs (the report matrix has ranks 1 and 2): a Communication table whose exposed ms per step,
# recomputed here from the raw epoch_comm rows (median rank, summed over epochs, averaged over runs), is in
# the row of its model, and the stacked chart.
"$py" - "$db" "$out/report.md" <<'PY' || fail "report.md's communication figures differ from epoch_comm"
import sqlite3, statistics, sys
db, report = sys.argv[1], open(sys.argv[2]).read()
rows = sqlite3.connect(db).execute(
    "SELECT r.model, r.ranks, r.id, sum(c.exposed_s), sum(c.steps) FROM runs r JOIN epoch_comm c ON c.run_id = r.id "
    "WHERE r.status = 'ok' AND c.stat = 'median' AND json_extract(r.params, '$.model_averaging') IS NULL "
    "GROUP BY r.id").fetchall()  # averaging runs have no 1-rank baseline: not a scaling configuration
if not rows:
    sys.exit("test_report: no epoch_comm rows for the 2-rank runs")
if "### Communication" not in report:
    sys.exit("test_report: no Communication section")
section = report.split("### Communication", 1)[1].split("\n## ", 1)[0]
groups = {}
for model, ranks, _, exposed, steps in rows:
    groups.setdefault((model, ranks), []).append(1e3 * exposed / steps)
bad = 0
def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]
# The "exposed ms" column by its header: any number in the row (ranks 2, buckets 1, in comm ms, equal to
# exposed in blocking mode) would otherwise do.
header = next((l for l in section.splitlines() if "exposed ms" in l), None)
if header is None:
    sys.exit("test_report: the Communication table has no 'exposed ms' column")
col = cells(header).index("exposed ms")
def exposed(line):
    try:
        return float(cells(line)[col].replace(",", ""))
    except (IndexError, ValueError):
        return None
for (model, ranks), values in groups.items():
    # The report averages v_comm's per-run figures, which the view rounds to microseconds first: the two-decimal
    # cell may differ from this raw mean's rounding by one unit in the last place (1.82 vs 1.83), no more.
    mean = statistics.mean(values)
    want = f"| {mean:,.2f} |"
    lines = [l for l in section.splitlines() if model in l and (f"| {ranks} | blocking |" in l or f"| {ranks} | none |" in l)]
    if not any(exposed(l) is not None and abs(exposed(l) - mean) <= 0.0100001 for l in lines):
        print(f"test_report: {model} ranks {ranks}: exposed {want} not in {lines}", file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
[ -s "$out/communication.png" ] || fail "no communication.png"

# Traced runs (the report matrix sets tracing = true): the stragglers table's mean lag per configuration,
# recomputed here from run_stragglers (every step of every run of the configuration), and one timeline PNG per
# configuration for its largest rank count's newest run.
"$py" - "$db" "$out/report.md" "$out" <<'PY' || fail "report.md's stragglers or timelines differ from the store"
import os, sqlite3, statistics, sys
db, report, out = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
con = sqlite3.connect(db)
rows = con.execute("SELECT r.config_key, r.ranks, s.lag_s FROM run_stragglers s JOIN runs r ON r.id = s.run_id "
                   "WHERE r.status = 'ok'").fetchall()
if not rows:
    sys.exit("test_report: no run_stragglers rows for the traced 2-rank runs")
if "### Timelines and stragglers" not in report:
    sys.exit("test_report: no Timelines and stragglers section")
section = report.split("### Timelines and stragglers", 1)[1].split("\n## ", 1)[0]
lags = {}
for config, ranks, lag in rows:
    lags.setdefault((config, ranks), []).append(lag)
bad = 0
for (config, ranks), values in lags.items():
    want = f"| {1e3 * statistics.fmean(values):,.3f} |"
    if not any(want in l and f"| {ranks} |" in l for l in section.splitlines()):
        print(f"test_report: {config} ranks {ranks}: mean lag {want} not in the stragglers table", file=sys.stderr)
        bad += 1
newest = {}
for run_id, config, ranks in con.execute("SELECT DISTINCT r.id, r.config_key, r.ranks FROM runs r JOIN run_timeline t "
                                         "ON t.run_id = r.id WHERE r.status = 'ok'"):
    if config not in newest or (ranks, run_id) > newest[config]:
        newest[config] = (ranks, run_id)
for config, (ranks, run_id) in newest.items():
    png = os.path.join(out, f"timeline_run{run_id}.png")
    if not os.path.getsize(png) if os.path.exists(png) else True:
        print(f"test_report: no {png} for {config}", file=sys.stderr)
        bad += 1
sys.exit(1 if bad or not newest else 0)
PY

# Predicted rows (the report matrix's mode = "predict" trials; none in an older store): every one of
# predictions, read here from the table itself (not the view), is a row of the Scaling table marked
# "predicted: model, <platform>, <mode>" with the same rank count and samples/s, and no measured row says so.
"$py" - "$db" "$out/report.md" <<'PY' || fail "report.md's predicted rows differ from the predictions table"
import sqlite3, sys
db, report = sys.argv[1], open(sys.argv[2]).read()
con = sqlite3.connect(db)
if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'predictions'").fetchall():
    sys.exit(0)
section = report.split("## Scaling", 1)[1].split("\n## ", 1)[0]
marked = [r for r in section.splitlines() if "| predicted: " in r]
rows = con.execute("SELECT source, platform, mode, ranks, samples_per_s FROM predictions p WHERE id IN "
                   "(SELECT max(id) FROM predictions GROUP BY environment_id, config_key, source, model_kind, model, "
                   "platform, rules, mode, scaling, ranks)").fetchall()
if not rows:  # the report matrix has predicted trials: none stored is a failure, not an empty pass
    sys.exit("test_report: the report matrix's predicted trials stored no prediction")
bad = 0
for source, platform, mode, ranks, sps in rows:
    want = [f"| predicted: {source}, {platform}, {mode} |", f"| {ranks} | 0 |", f"| {sps:,.1f} |"]
    if not any(all(w in r for w in want) for r in marked):
        print(f"test_report: no Scaling row {want}", file=sys.stderr)
        bad += 1
if len(marked) != len(rows):
    print(f"test_report: {len(marked)} rows marked predicted, {len(rows)} predictions", file=sys.stderr)
    bad += 1
sys.exit(1 if bad else 0)
PY

# Model averaging (the report matrix's synchronous trial; none in an older store): per (model, ranks, period)
# the mean averages and MiB per rank, read here from run_averaging itself (not the views), are in the
# synchronous table's row, and the accuracy-vs-rounds chart exists.
"$py" - "$db" "$out/report.md" "$out" <<'PY' || fail "report.md's model averaging rows differ from run_averaging"
import os, sqlite3, statistics, sys
db, report, out = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
con = sqlite3.connect(db)
if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'run_averaging'").fetchall():
    sys.exit(0)
rows = con.execute("SELECT r.model, r.dataset, r.ranks, a.every_steps, a.averages, a.bytes_per_rank FROM run_averaging a "
                   "JOIN runs r ON r.id = a.run_id WHERE r.status = 'ok' AND a.mode = 'synchronous'").fetchall()
if not rows:
    sys.exit("test_report: no run_averaging rows for the report matrix's synchronous trial")
if "## Model averaging" not in report or "### synchronous" not in report:
    sys.exit("test_report: no Model averaging section with a synchronous table")
section = report.split("### synchronous", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
groups = {}
for model, dataset, ranks, every, averages, nbytes in rows:
    groups.setdefault((model, dataset, ranks, every), []).append((averages, nbytes))
bad = 0
for (model, dataset, ranks, every), values in groups.items():
    want = [f"| {model} | {dataset} | {ranks} | {every} steps | - | {len(values)} |",
            f"| {statistics.fmean(v[0] for v in values):,.1f} | {statistics.fmean(v[1] for v in values) / 2**20:,.2f} |"]
    if not any(all(w in l for w in want) for l in section.splitlines()):
        print(f"test_report: no synchronous row {want} in {section.splitlines()}", file=sys.stderr)
        bad += 1
    png = os.path.join(out, f"averaging_{model}_{dataset}_{ranks}r.png")
    if not os.path.exists(png) or not os.path.getsize(png):
        print(f"test_report: no {png}", file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY

# Ingested convolution benchmarks (the harness.report test stores a `dtnn layers` run): a table and a chart.
if [ "$("$py" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM conv_benchmarks WHERE median_ms IS NOT NULL").fetchone()[0])' "$db")" -gt 0 ]; then
  sed -n '/^## Convolution algorithms per layer/,$p' "$out/report.md" | grep -q '^### ' || fail "no conv algorithm table"
  compgen -G "$out/conv_*.png" > /dev/null || fail "no conv_*.png chart"
fi

# expect_error NAME DB: report.py must exit 1, print nothing on stdout and one 'dtnn report: ' line on stderr.
expect_error() {
  local name="$1" bad_db="$2" rc=0
  "$py" "$report_py" --db "$bad_db" --out "$out/error-case" > "$out/$name.stdout" 2> "$out/$name.stderr" || rc=$?
  [ "$rc" -eq 1 ] || fail "$name: exit $rc, expected 1"
  [ ! -s "$out/$name.stdout" ] || fail "$name: unexpected output on stdout"
  [ "$(wc -l < "$out/$name.stderr")" -eq 1 ] || fail "$name: expected one line on stderr, got: $(cat "$out/$name.stderr")"
  grep -q "^dtnn report: " "$out/$name.stderr" || fail "$name: stderr does not start with 'dtnn report: '"
  rm -f "$out/$name.stdout" "$out/$name.stderr"
}

echo "this is not an SQLite database" > "$out/not-sqlite.db"
expect_error not-sqlite "$out/not-sqlite.db"
rm -f "$out/not-sqlite.db"
expect_error missing-db "$out/no-such.db"

echo "test_report: ok ($out/report.md, $(compgen -G "$out/*.png" | wc -l) PNG)"
