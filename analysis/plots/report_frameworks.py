"""The Frameworks section of report.py: per recipe, dtnn beside its peers (PyTorch, DDP beyond one rank, and
PyDTNN) at each rank count, from the store's v_frameworks view, and one scaling chart per recipe with a line
per framework."""

import re
from collections import defaultdict

from report_format import num, table

RECIPE = ("model", "dataset", "device", "scaling", "batch_size", "threads", "optimizer", "num_epochs",
          "environment_id")


def label(row):
    """A framework as the tables and legends name it: "dtnn", "dtnn bfloat16" for another --dtype than float32,
    "dtnn bf16 allreduce" for gradients summed in bfloat16 (v_frameworks before these columns had neither)."""
    keys = row.keys()
    dtype = row["dtype"] if "dtype" in keys else None
    wire = row["allreduce_dtype"] if "allreduce_dtype" in keys else None
    return row["framework"] + ("" if dtype in (None, "float32") else f" {dtype}") + \
        ("" if wire in (None, "float32") else " bf16 allreduce")


class FrameworkSections:
    """Mixed into report.Report (self.store, self.add, self.chart)."""

    def frameworks(self):
        self.add("## Frameworks", "")
        rows = self.store.frameworks()
        recipes = defaultdict(list)
        for r in rows:
            recipes[tuple(r[c] for c in RECIPE)].append(r)
        compared = {k: v for k, v in recipes.items() if len({label(r) for r in v}) > 1}
        if not compared:
            self.add("No recipe ran under more than one framework (a matrix's framework = [\"dtnn\", \"pytorch\", "
                     "\"pydtnn\"] puts them side by side).", "")
            return
        self.add("Per recipe, each framework's median training samples/s over its ok runs (min-max beside it), "
                 "speed-up and efficiency of the medians against the same framework's fewest ranks, the share of "
                 "the step spent waiting for the gradient reduction (exposed; dtnn's and DDP's own timers), and "
                 "the mean test accuracy." + (" The view covers every run of the database, not only this "
                                              "matrix's." if self.store.matrix else ""), "")
        pct = lambda f: "" if f is None else num(100 * f, 1)
        for n, (key, rs) in enumerate(sorted(compared.items(), key=lambda kv: tuple(map(str, kv[0])))):
            recipe = dict(zip(RECIPE, key))
            self.add(f"### {recipe['model']} on {recipe['dataset']}, {recipe['device']}, {recipe['scaling']} "
                     f"scaling, batch {recipe['batch_size']}, {recipe['threads']} thread(s), {recipe['optimizer']}, "
                     f"{recipe['num_epochs']} epoch(s)", "")
            self.add(*table(["ranks", "framework", "runs", "median samples/s", "min", "max", "speed-up", "efficiency",
                             "exposed comm %", "test acc %"],
                            [(r["ranks"], label(r), r["runs"], num(r["median_samples_per_s"]),
                              num(r["min_samples_per_s"]), num(r["max_samples_per_s"]), num(r["speedup"], 2),
                              num(r["efficiency"], 2), pct(r["exposed_comm_fraction"]), num(r["test_accuracy"], 2))
                             for r in sorted(rs, key=lambda r: (r["ranks"], label(r)))],
                            right=(0, 2, 3, 4, 5, 6, 7, 8, 9)))
            if len({r["ranks"] for r in rs}) < 2:
                continue
            series = []
            for fw in sorted({label(r) for r in rs}):
                pts = sorted((r for r in rs if label(r) == fw), key=lambda r: r["ranks"])
                series.append((fw, [p["ranks"] for p in pts], [p["median_samples_per_s"] for p in pts],
                               [p["min_samples_per_s"] for p in pts], [p["max_samples_per_s"] for p in pts],
                               [p["efficiency"] for p in pts]))
            self.chart("framework_lines", f"frameworks_{n + 1}_{re.sub('[^A-Za-z0-9]+', '_', recipe['model'])}",
                       f"{recipe['model']} scaling per framework",
                       f"{recipe['model']}, {recipe['dataset']}: samples/s vs ranks", series)
