"""Reading what the real PyDTNN prints and writes (pure functions: no PyDTNN, no numpy).

pydtnn_peer.py runs PyDTNN's pydtnn_benchmark.main() and hands its captured stdout+stderr and its history file
to these functions; tests/experiments/test_pydtnn_output.py checks them on captures of real runs
(tests/experiments/fixtures/pydtnn_*).

What PyDTNN (hpca-uji/PyDTNN 1.1.1rc1) prints, rank 0 only:
  * its model table, whose last row is `|   Total parameters   202458   790.85 KBytes   |`;
  * the options dump after `**** Parameters:`, one `  name : value` line each;
  * tqdm progress bars on stderr, redrawn with carriage returns: `Epoch 1/2: 100%|...| 1280/1280 [00:00<00:00,
    1846.37 samples/s, cce: 1.8975537, acc: 36.88%]` per epoch (samples counted in global batches) and
    `Testing: 100%|...| 10000/10000 [..., test_cce: 1.0398575, test_acc: 58.01%]` per evaluation; the bar's
    final state holds the figures (running averages over the pass);
  * after training: `Training time: 1.2577 s`, `Time per epoch: 0.6289 s` (training time / epochs run) and
    `Training throughput: 2035.3929 samples/s` (training + validation samples x epochs run / training time);
    after the evaluation that follows training: `Testing time: ...` and `Testing throughput: ...`.
Its history file (--history_file) has one line per epoch run: the epoch index from 0 ("%3d"), then one
"%20.4f" column per key of its history dict, in the order [loss, *metrics, val_loss, *val_metrics]; the
validation columns are nan when there is no validation set.

Every function raises OutputError naming what is missing rather than returning a partial result.
"""
import math
import re

# PyDTNN's metric_format (pydtnn/metrics/__init__.py): the short names its progress bars print.
SHORT_NAMES = {"acc": ("categorical_accuracy",), "cce": ("categorical_cross_entropy",),
               "bce": ("binary_cross_entropy",), "hin": ("categorical_hinge",),
               "mse": ("categorical_mse", "regression_mse"), "mae": ("categorical_mae", "regression_mae")}

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NUMBER = r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)"
_BAR = re.compile(r"^(?P<desc>Epoch\s+(?P<epoch>\d+)/\s*(?P<epochs>\d+)|Testing):\s+\d+%\|[^|]*\|\s*"
                  r"(?P<n>\d+)/(?P<total>\d+)\s*\[(?P<inside>[^\]]*)\]")


class OutputError(Exception):
    """PyDTNN's output lacks a figure the report needs (the message says which)."""


def lines_of(text):
    """The text as PyDTNN's lines: carriage returns (tqdm's redraws) as line breaks, ANSI cursor moves removed."""
    return [_ANSI.sub("", line).rstrip() for line in text.replace("\r", "\n").split("\n")]


def _figure(text, label, unit):
    """The last `label: N unit` line's N (PyDTNN prints its figures once, at the end)."""
    pattern = re.compile(r"^" + re.escape(label) + r":\s+" + _NUMBER + r"\s*" + re.escape(unit) + r"\s*$")
    found = [m.group(1) for m in map(pattern.match, lines_of(text)) if m]
    if not found:
        raise OutputError(f"no '{label}: N {unit}' line")
    return float(found[-1])


def parse_training(text):
    """PyDTNN's training figures: {"time_s", "time_per_epoch_s", "samples_per_s"} (rank 0's wall time between
    the barriers around train_dataset(), its average per epoch, and its throughput)."""
    return {"time_s": _figure(text, "Training time", "s"),
            "time_per_epoch_s": _figure(text, "Time per epoch", "s"),
            "samples_per_s": _figure(text, "Training throughput", "samples/s")}


def parse_training_time(text):
    """PyDTNN's `Training time` alone (it prints no per-epoch time or throughput when no epoch ran)."""
    return _figure(text, "Training time", "s")


def parse_testing_time(text):
    """{"time_s", "samples_per_s"} of the evaluation PyDTNN times (the one after training), or None."""
    try:
        return {"time_s": _figure(text, "Testing time", "s"),
                "samples_per_s": _figure(text, "Testing throughput", "samples/s")}
    except OutputError:
        return None


def parse_params(text):
    """The model's parameter count from the `Total parameters` row of PyDTNN's model table."""
    for line in lines_of(text):
        m = re.search(r"Total parameters\s+(\d+)\b", line)
        if m:
            return int(m.group(1))
    raise OutputError("no 'Total parameters' row in the model table")


def parse_options_dump(text):
    """PyDTNN's options dump (`**** Parameters:` then `  name : value` lines) as {name: value text}."""
    out, inside = {}, False
    for line in lines_of(text):
        if line.startswith("**** Parameters:"):
            inside, out = True, {}
            continue
        if inside:
            m = re.match(r"^  (\w+)\s*:\s?(.*)$", line)
            if not m:
                inside = False
                continue
            out[m.group(1)] = m.group(2)
    if not out:
        raise OutputError("no '**** Parameters:' options dump")
    return out


def _postfix(inside, names, prefix=""):
    """The figures of a bar's postfix (`..., cce: 1.8975537, acc: 36.88%`) as {full name: value}, the short
    names resolved against the run's loss and metrics `names`."""
    figures = {}
    for m in re.finditer(r"(?:^|,\s*)" + re.escape(prefix) + r"([a-z]+):\s*" + _NUMBER + r"%?", inside):
        short, value = m.group(1), float(m.group(2))
        full = next((n for n in SHORT_NAMES.get(short, ()) if n in names), None)
        if full is not None:
            figures[full] = value
    return figures


def _final_bars(text):
    """Every progress bar's final state, in order: a list of (desc, match). A redraw of the same bar (same
    description, count not lower) replaces the previous state; tqdm redraws the closing state twice."""
    bars = []
    for line in lines_of(text):
        m = _BAR.match(line.strip())
        if not m:
            continue
        if bars and bars[-1][0] == m.group("desc") and int(m.group("n")) >= int(bars[-1][1].group("n")):
            bars[-1] = (m.group("desc"), m)
        else:
            bars.append((m.group("desc"), m))
    return bars


def _is_done(m):
    return int(m.group("n")) == int(m.group("total"))


def parse_epoch_bars(text, names):
    """Per epoch, the final state of its `Epoch k/K` bar: [{"epoch", "samples", "total", figures...}], one
    per epoch number (the last bar drawn for it). `names`: the loss and metrics of the run."""
    epochs = {}
    for desc, m in _final_bars(text):
        if desc == "Testing":
            continue
        k = int(m.group("epoch"))
        epochs[k] = {"epoch": k, "samples": int(m.group("n")), "total": int(m.group("total")),
                     **_postfix(m.group("inside"), names)}
    if not epochs:
        raise OutputError("no 'Epoch k/K' progress bar")
    return [epochs[k] for k in sorted(epochs)]


def parse_test_bars(text, names):
    """Every completed `Testing` bar's final figures, in order: [{"samples", figures (test_ prefix removed)}].
    With PyDTNN's --evaluate=True the first is the evaluation before training, the last the one after."""
    out = []
    for desc, m in _final_bars(text):
        if desc == "Testing" and _is_done(m):
            out.append({"samples": int(m.group("n")), **_postfix(m.group("inside"), names, prefix="test_")})
    if not out:
        raise OutputError("no completed 'Testing' progress bar")
    return out


def history_keys(loss, metrics):
    """The columns of PyDTNN's history file for this loss and metric list (model.train_dataset's order)."""
    own = [loss] + [m for m in metrics if m]
    return own + ["val_" + k for k in own]


def parse_history(text, keys):
    """PyDTNN's history file: [{"epoch": 1-based, key: value, ...}] per line, nan kept as float nan."""
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        words = line.split()
        if len(words) != len(keys) + 1:
            raise OutputError(f"history line {n} has {len(words)} columns, expected {len(keys) + 1} "
                              f"(epoch, {', '.join(keys)})")
        try:
            row = {"epoch": int(words[0]) + 1}
            row.update({k: float(w) for k, w in zip(keys, words[1:])})
        except ValueError:
            raise OutputError(f"history line {n} is not numbers: {line.strip()!r}") from None
        rows.append(row)
    if not rows:
        raise OutputError("the history file is empty")
    return rows


def finite(value):
    return value is not None and math.isfinite(value)
