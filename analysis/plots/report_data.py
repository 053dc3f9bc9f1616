"""Read-only access to the dtnn results store (SQLite) for report.py.

Every query returns a list of dicts (column name -> value). When a matrix name is given, only runs of
the matrices with that name (any hash) are considered. Tables: results/migrations.h; every derived figure
comes from the views of results/views.sql (a database whose views another build wrote gets this tree's, as
TEMP views of the read-only connection, as `dtnn query` does), never from SQL restated here.
"""

import os
import re
import sqlite3
import urllib.parse

VIEWS_SQL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results", "views.sql")

REQUIRED_TABLES = ("matrices", "environments", "runs", "epochs", "layer_timings", "targets", "epoch_comm")
REQUIRED_VIEWS = ("v_scaling", "v_accuracy_vs_target", "v_comm")
STATUSES = ("ok", "failed", "diverged", "timeout", "interrupted", "unsupported", "running")

# The columns of an ok run that the report uses (not `report`, which holds the whole JSON document).
RUN_COLUMNS = ("id", "matrix_id", "environment_id", "trial_key", "config_key", "label", "repeat", "framework",
               "model", "dataset", "conv_algo", "ranks", "threads", "device", "batch_size", "num_epochs",
               "optimizer", "samples_per_s", "test_accuracy", "val_accuracy")

class ReportError(Exception):
    """An error the user can act on; report.py prints it as one line and exits 1."""


class Store:
    """The results database, opened read-only, optionally restricted to one matrix's runs."""

    def __init__(self, path, matrix=None):
        self.path = path
        self.matrix = matrix
        if not os.path.exists(path):
            raise ReportError(f"{path}: no such results database (run `dtnn run` first)")
        if os.path.isdir(path):
            raise ReportError(f"{path}: is a directory, not a results database")
        # The path's bytes, percent-encoded (a byte that is not UTF-8 is a lone surrogate in Python's str).
        uri = "file:" + urllib.parse.quote(os.fsencode(os.path.abspath(path))) + "?mode=ro"
        try:
            try:
                objects = self._connect(uri)
            except sqlite3.OperationalError as e:
                # A WAL database in a directory this user cannot write: SQLite cannot create its -shm file
                # even to read. Nothing can be writing there, so it is read as an immutable file (as
                # `dtnn query` does).
                if "readonly" not in str(e) and "unable to open" not in str(e):
                    raise
                objects = self._connect(uri + "&immutable=1")
        except sqlite3.Error as e:
            raise ReportError(f"{path}: cannot read as an SQLite database ({e})") from None
        self._install_views()
        objects |= {("view", r["name"]) for r in self.con.execute("SELECT name FROM sqlite_temp_master WHERE type = 'view'")}
        missing = [n for n in REQUIRED_TABLES if ("table", n) not in objects]
        missing += [n for n in REQUIRED_VIEWS if ("view", n) not in objects]
        if missing:
            raise ReportError(f"{path}: not a dtnn results database of the current schema "
                              f"(missing {', '.join(missing)})")
        if matrix is not None and not self._all("SELECT 1 FROM matrices WHERE name = ?", (matrix,)):
            raise ReportError(f"{path}: no matrix named '{matrix}'")

    def _connect(self, uri):
        """Opens uri; returns the (type, name) of every schema object."""
        self.con = sqlite3.connect(uri, uri=True, timeout=10)
        # Rows stored before dtnn made every text valid UTF-8 may hold other bytes (a file name): show them as U+FFFD.
        self.con.text_factory = lambda b: b.decode("utf-8", errors="replace")
        self.con.row_factory = sqlite3.Row
        return {(r["type"], r["name"]) for r in self.con.execute("SELECT type, name FROM sqlite_master")}

    def _install_views(self):
        """This tree's views as TEMP views when the file's are another build's (results/views.h: PRAGMA
        user_version holds the 31-bit FNV-1a hash of views.sql that wrote them)."""
        with open(VIEWS_SQL, "rb") as f:
            text = f.read()
        h = 2166136261
        for byte in text:
            h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
        version = (h & 0x7FFFFFFF) or 1
        if self.con.execute("PRAGMA user_version").fetchone()[0] == version:
            return
        if not any(r[0] == "schema_migrations" for r in self.con.execute("SELECT name FROM sqlite_master")):
            return  # not a dtnn database: the table check below says so
        try:
            self.con.executescript(re.sub(r"CREATE VIEW ", "CREATE TEMP VIEW ", text.decode("utf-8")))
        except sqlite3.Error as e:
            raise ReportError(f"{self.path}: not a dtnn results database of the current schema ({e})") from None

    def close(self):
        self.con.close()

    def _all(self, sql, params=()):
        try:
            return [dict(r) for r in self.con.execute(sql, params)]
        except sqlite3.Error as e:
            raise ReportError(f"{self.path}: query failed ({e})") from None

    def _runs_filter(self, alias="r"):
        """SQL condition (and its parameters) selecting the runs in scope."""
        if self.matrix is None:
            return "1", ()
        return f"{alias}.matrix_id IN (SELECT id FROM matrices WHERE name = ?)", (self.matrix,)

    # ---- header ----------------------------------------------------------------------------------------------

    def environments(self):
        cond, params = self._runs_filter()
        return self._all(f"SELECT * FROM environments WHERE id IN (SELECT r.environment_id FROM runs r WHERE {cond})"
                         " ORDER BY id", params)

    def matrices(self):
        cond, params = self._runs_filter()
        where = "" if self.matrix is None else "WHERE m.name = ?"
        return self._all(f"SELECT m.id, m.name, m.file, m.hash, m.created_at, "
                         f"(SELECT count(*) FROM runs r WHERE r.matrix_id = m.id AND {cond}) AS runs "
                         f"FROM matrices m {where} ORDER BY m.id", params + ((self.matrix,) if where else ()))

    def status_counts(self):
        cond, params = self._runs_filter()
        counts = dict.fromkeys(STATUSES, 0)
        for r in self._all(f"SELECT status, count(*) AS n FROM runs r WHERE {cond} GROUP BY status", params):
            counts[r["status"]] = r["n"]
        return counts

    def non_ok_runs(self):
        cond, params = self._runs_filter()
        return self._all(f"SELECT r.id, r.status, r.framework, r.model, r.dataset, r.label, r.error FROM runs r "
                         f"WHERE r.status != 'ok' AND {cond} ORDER BY r.id", params)

    # ---- sections --------------------------------------------------------------------------------------------

    def ok_runs(self):
        """The ok runs in scope (RUN_COLUMNS), with `rank_batch` (rank 0's batch: the report's options.batch_size,
        which is per rank under weak and strong scaling alike, where runs.batch_size is the global batch of a
        strong-scaling run) and `tensor_format`, which set the layer shapes, and `seed` (the run's, 0 when unset)."""
        cond, params = self._runs_filter()
        cols = ", ".join(f"r.{c}" for c in RUN_COLUMNS)
        opt = "CASE WHEN json_valid(r.report) THEN json_extract(r.report, '$.options.{}') END"
        return self._all(f"SELECT {cols}, coalesce({opt.format('batch_size')}, r.batch_size) AS rank_batch, "
                         f"{opt.format('tensor_format')} AS tensor_format, "
                         f"coalesce({opt.format('seed')}, json_extract(r.params, '$.seed'), 0) AS seed "
                         f"FROM runs r WHERE r.status = 'ok' AND {cond} ORDER BY r.id", params)

    def scaling(self):
        """v_scaling's rows: measured (source 'measured') and, from schema 8, predicted ones (source 'model' or
        'simgrid', with platform and curve); a database from before has measured rows only. Speed-up and
        efficiency are against baseline_ranks (schema 17: the fewest ranks measured; 1 before)."""
        if self.matrix is None:
            rows = self._all("SELECT * FROM v_scaling")
        else:  # the view's curves are per matrix name: its rows of this matrix, measured and predicted
            rows = self._all("SELECT * FROM v_scaling WHERE matrix = ?", (self.matrix,))
        for r in rows:
            r.setdefault("source", "measured")
            r.setdefault("curve", None)
            r.setdefault("baseline_ranks", 1)  # v_scaling before migration 17: 1 rank or no row
        return rows

    def frameworks(self):
        """v_frameworks' rows (schema 21; none from an older database): each framework per recipe and rank count."""
        return self._all("SELECT * FROM v_frameworks") if self.has_view("v_frameworks") else []

    def communication(self):
        """Per (environment, configuration, rank count): the median rank's ms per step (v_comm), averaged over runs."""
        cond, params = self._runs_filter()
        return self._all(f"SELECT r.environment_id, r.config_key, r.ranks, c.mode, max(c.buckets_per_step) AS buckets, "
                         f"avg(c.bytes_per_step) AS bytes_per_step, count(*) AS runs, avg(c.step_ms) AS step_ms, "
                         f"avg(c.compute_ms) AS compute_ms, avg(c.comm_ms) AS comm_ms, "
                         f"avg(c.exposed_ms) AS exposed_ms FROM v_comm c JOIN runs r ON r.id = c.run_id "
                         f"WHERE {cond} GROUP BY r.environment_id, r.config_key, r.ranks "
                         f"ORDER BY r.config_key, r.ranks", params)

    def epochs(self):
        """Per-epoch accuracies of the ok runs in scope, ordered by run and epoch."""
        cond, params = self._runs_filter()
        return self._all(f"SELECT e.run_id, e.epoch, e.train_accuracy, e.val_accuracy FROM epochs e "
                         f"JOIN runs r ON r.id = e.run_id WHERE r.status = 'ok' AND {cond} "
                         f"ORDER BY e.run_id, e.epoch", params)

    def targets(self):
        return self._all("SELECT * FROM targets ORDER BY model, dataset, metric, id")

    def accuracy_vs_target(self):
        cond, params = self._runs_filter()
        return self._all(f"SELECT v.* FROM v_accuracy_vs_target v WHERE v.run_id IN "
                         f"(SELECT r.id FROM runs r WHERE {cond}) "
                         f"ORDER BY v.model, v.dataset, v.metric, v.framework, v.run_id", params)

    def memory(self):
        """v_memory's rows of the ok runs in scope (none from a database whose views predate it)."""
        if not self.has_view("v_memory"):
            return []
        cond, params = self._runs_filter()
        return self._all(f"SELECT v.* FROM v_memory v JOIN runs r ON r.id = v.run_id WHERE r.status = 'ok' AND {cond} "
                         f"ORDER BY v.run_id", params)

    def time_to_target(self):
        """v_time_to_target's rows of the runs in scope (none from a database whose views predate it), by
        (run_id, metric, target)."""
        if not self.has_view("v_time_to_target"):
            return {}
        cond, params = self._runs_filter()
        rows = self._all(f"SELECT v.* FROM v_time_to_target v WHERE v.run_id IN (SELECT r.id FROM runs r WHERE {cond})",
                         params)
        return {(r["run_id"], r["metric"], r["target"]): r for r in rows}

    def has_table(self, name):
        return bool(self._all("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)))

    def conv_benchmarks(self):
        """Timed rows of `dtnn ingest`ed convolution benchmarks (all of them: they belong to no matrix)."""
        if not self.has_table("conv_benchmarks"):  # a database from before schema version 3
            return []
        return self._all("SELECT source, model, layer, problem, algorithm, direction, device, threads, tf32, "
                         "median_ms, environment_id FROM conv_benchmarks WHERE median_ms IS NOT NULL "
                         "ORDER BY id")

    def layer_timings(self):
        """Conv2D and FC layer timings of the ok runs in scope."""
        cond, params = self._runs_filter()
        return self._all(f"SELECT l.run_id, l.layer_id, l.type, l.conv_algo AS layer_algo, l.problem, "
                         f"l.output_shape, l.params, l.forward_ms, l.backward_ms FROM layer_timings l "
                         f"JOIN runs r ON r.id = l.run_id "
                         f"WHERE r.status = 'ok' AND l.type IN ('Conv2D', 'FC') AND {cond} "
                         f"ORDER BY l.run_id, l.layer_id", params)

    # ---- timelines and stragglers (schema 7: traced runs) ----------------------------------------------------

    def traced_runs(self):
        """Ok runs in scope with a stored timeline: id, environment, configuration, ranks, label, the step."""
        if not self.has_table("run_timeline"):
            return []
        cond, params = self._runs_filter()
        return self._all(f"SELECT r.id, r.environment_id, r.config_key, r.ranks, r.label, r.model, "
                         f"min(t.step) AS step FROM runs r JOIN run_timeline t ON t.run_id = r.id "
                         f"WHERE r.status = 'ok' AND {cond} GROUP BY r.id ORDER BY r.config_key, r.ranks, r.id",
                         params)

    def timeline(self, run_id):
        return self._all("SELECT rank, lane, kind, name, id, begin_s, end_s, bytes FROM run_timeline "
                         "WHERE run_id = ? ORDER BY rank, lane, begin_s", (run_id,))

    def stragglers(self):
        """Per (environment, configuration, rank count) of traced multi-rank ok runs: steps, lag statistics,
        the rank most often slowest and the phase most often behind it."""
        if not self.has_table("run_stragglers"):
            return []
        cond, params = self._runs_filter()
        rows = self._all(f"SELECT r.environment_id, r.config_key, r.ranks, r.label, s.run_id, s.step, "
                         f"s.slowest_rank, s.busy_s, s.median_busy_s, s.lag_s, s.phase FROM run_stragglers s "
                         f"JOIN runs r ON r.id = s.run_id WHERE r.status = 'ok' AND {cond} "
                         f"ORDER BY r.config_key, r.ranks, s.run_id, s.step", params)
        groups = {}
        for row in rows:
            groups.setdefault((row["environment_id"], row["config_key"], row["ranks"]), []).append(row)
        return list(groups.values())

    # ---- model averaging (schema 9) --------------------------------------------------------------------------

    def averaging(self):
        """v_averaging's rows of the runs in scope (a run with averaging, or of a matrix declaring
        model_averaging); none before schema 9."""
        if not self.has_view("v_averaging"):
            return []
        cond, params = self._runs_filter()
        return self._all(f"SELECT v.*, r.environment_id FROM v_averaging v JOIN runs r ON r.id = v.run_id "
                         f"WHERE v.status = 'ok' AND {cond}", params)

    def averaging_epochs(self):
        """v_averaging_epochs' rows of the ok runs in scope, ordered by run and epoch."""
        if not self.has_view("v_averaging_epochs"):
            return []
        cond, params = self._runs_filter()
        return self._all(f"SELECT v.* FROM v_averaging_epochs v JOIN runs r ON r.id = v.run_id "
                         f"WHERE v.status = 'ok' AND {cond} ORDER BY v.run_id, v.epoch", params)

    def averaging_unsupported(self):
        """Per averaging mode: how many trials in scope dtnn refused (status unsupported)."""
        cond, params = self._runs_filter()
        return self._all(f"SELECT json_extract(r.params, '$.model_averaging') AS mode, count(*) AS n FROM runs r "
                         f"WHERE r.status = 'unsupported' AND json_extract(r.params, '$.model_averaging') IS NOT NULL "
                         f"AND {cond} GROUP BY mode ORDER BY mode", params)

    def has_view(self, name):
        return bool(self._all("SELECT 1 FROM sqlite_master WHERE type = 'view' AND name = ? UNION ALL "
                              "SELECT 1 FROM sqlite_temp_master WHERE type = 'view' AND name = ?", (name, name)))
