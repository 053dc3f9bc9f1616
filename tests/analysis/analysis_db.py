"""Shared by the analysis tests (test_analysis_scripts.py, test_report_edges.py): checks that count and print,
and results databases with the store's real schema (created by `dtnn ingest` of an empty benchmark file, which
runs every migration) to plant made-up rows in, as the runner writes them; markdown table cells to read back.
"""
import json
import os
import re
import sqlite3
import subprocess
import sys

FAILURES = []
CHECKS = 0
HALF_CENT = 0.0051  # a figure printed with 2 decimals is within half a unit of its last digit (and float noise)


def check(what, got, want, tol=None):
    """Equality, or |got - want| <= tol for numbers (a printed figure rounded to its last digit)."""
    global CHECKS
    CHECKS += 1
    if tol is None:
        ok = got == want
    else:
        ok = got is not None and abs(got - want) <= tol
    print(("ok    " if ok else "FAIL  ") + f"{what}: got {got!r}, want {want!r}" +
          (f" (+-{tol:g})" if tol is not None else ""))
    if not ok:
        FAILURES.append(what)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        print(f"FAIL  {' '.join(cmd)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        sys.exit(1)
    return p.stdout


def new_db(dtnn, path, work):
    """A database with the store's real schema (every migration) and one matrix and environment row."""
    if os.path.exists(path):
        os.remove(path)
    empty = os.path.join(work, "empty_benchmarks.json")
    with open(empty, "w") as f:
        f.write('{"benchmarks": []}\n')
    run([dtnn, "ingest", empty, "--db", path])
    con = sqlite3.connect(path)
    con.execute("PRAGMA foreign_keys = ON")
    con.execute("INSERT INTO matrices (id, name, file, hash, text) VALUES (1, 'm', 'm.toml', 'h', 'name = \"m\"')")
    return con


def config_key(params):
    """The runner's scaling group (experiments/runner.cpp run_start): "k=v;..." sorted, ranks and nodes left out."""
    return ";".join(f"{k}={v}" for k, v in sorted(params.items()) if k not in ("ranks", "nodes"))


def add_run(con, params, status="ok", duration_s=None, test_accuracy=None, train_time_s=None, report=None):
    """A runs row as the runner writes it: every parameter a string in the params JSON (booleans True/False)."""
    p = {k: ("True" if v is True else "False" if v is False else str(v)) for k, v in params.items()}
    env = con.execute("SELECT min(id) FROM environments").fetchone()[0]
    cur = con.execute(
        "INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model, dataset,"
        " conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, command, log_path,"
        " runner_pid, runner_host, duration_s, train_time_s, test_accuracy, report)"
        " VALUES (1, ?, ?, ?, ?, 0, 'dtnn', ?, 'mnist', 'auto', ?, 1, 'cpu', ?, 2, 'sgd', ?, ?, 'dtnn train', 'x.log',"
        " 1, 'h', ?, ?, ?, ?)",
        (env, json.dumps(p, sort_keys=True), config_key(p), "label", p["model"], int(p["ranks"]),
         int(p.get("batch_size", 64)), json.dumps(p), status, duration_s, train_time_s, test_accuracy, report))
    return cur.lastrowid


def add_epoch(con, run_id, epoch, samples_per_s):
    con.execute("INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, metrics) VALUES (?, ?, 1000, 1.0,"
                " ?, '{}')", (run_id, epoch, samples_per_s))


def add_comm(con, run_id, epoch, stat_, steps, step_s, compute_s, exposed_s, mode="blocking"):
    con.execute("INSERT INTO epoch_comm (run_id, epoch, stat, mode, steps, buckets_per_step, bytes_per_step, step_s,"
                " compute_s, comm_s, exposed_s) VALUES (?, ?, ?, ?, ?, 1, 1000.0, ?, ?, ?, ?)",
                (run_id, epoch, stat_, mode, steps, step_s, compute_s, exposed_s, exposed_s))


def table(text, after):
    """The cells of the markdown table rows that follow the line starting with `after` (up to a blank line)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(after)), None)
    if start is None:
        print(f"FAIL  no line starting {after!r} in:\n{text}")
        sys.exit(1)
    rows, seen = [], False
    for line in lines[start + 1:]:
        if line.startswith("|"):
            seen = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(re.fullmatch(r"-+:?|:?-+", c) for c in cells):
                continue  # the separator
            rows.append(cells)
        elif seen:
            break
    return rows[1:]  # without the header


def num(cell, suffix=""):
    """The number in a cell such as '2.09x', '86 %', '+0.50'; None for '-'."""
    cell = cell.strip()
    if cell == "-":
        return None
    if suffix and cell.endswith(suffix):
        cell = cell[: -len(suffix)].strip()
    return float(cell)
