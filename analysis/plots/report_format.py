"""Formatting helpers of report.py: Markdown tables, numbers, labels that tell configurations apart."""

import hashlib
import re
import statistics
from collections import Counter

from report_blocks import Num, Table

ERROR_CHARS = 120

# Short names for configuration columns in plot labels.
SHORT = {"conv_algo": "conv", "batch_size": "batch", "environment_id": "env", "num_epochs": "epochs",
         "config_key": "config", "rank_batch": "batch per rank", "tensor_format": "format"}
NUMERIC = {"ranks", "threads", "batch_size", "num_epochs", "environment_id"}


# ---- formatting helpers ------------------------------------------------------------------------------------


def cell(value):
    """One Markdown table cell: '-' for NULL, pipes escaped, line breaks flattened."""
    if value is None or value == "":
        return "-"
    return str(value).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def markdown_image(name, alt):
    """A Markdown image line. The alt text holds model names and trial labels: '[', ']' and '\\' are escaped so
    a label such as "lr=[0.1]" cannot end it early; a file name with spaces or parentheses goes in <...>."""
    alt = re.sub(r"([\\\[\]])", r"\\\1", str(alt)).replace("\r", " ").replace("\n", " ")
    target = f"<{name}>" if re.search(r"[\s()<>]", name) else name
    return f"![{alt}]({target})"


def num(value, digits=1):
    """A number cell: '-' for None, else a Num (shown with grouped thousands, kept as a number for the page's
    sorting and for CSV and LaTeX)."""
    return "-" if value is None else Num(value, digits)


def numeric(cols, first_number):
    """Indices to right-align: the integer configuration columns, then every column from first_number on."""
    return tuple(i for i, c in enumerate(cols) if c in NUMERIC) + tuple(range(first_number, first_number + 40))


def table(headers, rows, right=()):
    """A table block and the blank line after it (sections add them as `self.add(*table(...))`); columns
    whose index is in `right` are right-aligned."""
    return [Table(headers, rows, right), ""]


def markdown_table(t):
    """A Table as Markdown lines."""
    rule = ["---:" if i in t.right else "---" for i in range(len(t.headers))]
    lines = ["| " + " | ".join(t.headers) + " |", "| " + " | ".join(rule) + " |"]
    return lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in t.rows]


def short_error(text):
    if not text:
        return None
    text = " ".join(str(text).split())
    return text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS] + "..."


def file_part(text):
    """`text` as part of a file name: [A-Za-z0-9._-] only, at most 33 characters (a longer one keeps its first 24
    and a hash of the whole, so names stay distinct and a file name of six parts stays under 255 bytes)."""
    part = re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-") or "x"
    if len(part) <= 33:
        return part
    return part[:24] + "-" + hashlib.sha256(str(text).encode("utf-8", "surrogateescape")).hexdigest()[:8]


def varying(groups, columns):
    """The columns whose value differs between the groups (dicts)."""
    return [c for c in columns if len({g[c] for g in groups}) > 1]


def labels_for(groups, columns, default_columns, extra=("label",)):
    """Distinct labels 'col=value, ...' from the columns that vary between the groups.

    Uses default_columns when none vary. Labels that still collide get the value of the first `extra`
    column that tells them apart, else a counter; when every label collides on default columns that are the same
    for all (one framework and model), that value alone is the label: a legend of "batch_size=64, scaling=weak"
    rather than the same "framework=dtnn, model=simplecnn" before each.
    """
    varied = varying(groups, columns)
    cols = varied or default_columns
    labels = [", ".join(f"{SHORT.get(c, c)}={g[c]}" for c in cols) for g in groups]
    counts = Counter(labels)
    clash = [i for i, lab in enumerate(labels) if counts[lab] > 1]
    if clash:
        found = distinguishing([labels[i] for i in clash], [groups[i] for i in clash], extra)
        if found:  # a whole key (or a key-like trial label) is unreadable on a chart: only what differs
            found = (found[0], readable_keys(found[1]))
        alone = found and not varied and len(clash) == len(labels)
        for k, i in enumerate(clash):
            labels[i] = found[1][k] if alone else labels[i] + (f" [{found[1][k]}]" if found else f" #{k + 1}")
    return labels


def key_differences(keys):
    """For config_key strings ('name=value;...'), each one's 'name=value, ...' of the names whose values are not
    the same in all of them (a name a key lacks has its default: 'default'); '(base)' when none differ."""
    parsed = [dict(part.split("=", 1) if "=" in part else (part, "") for part in k.split(";") if part)
              for k in keys]
    names = sorted({n for d in parsed for n in d})
    differ = [n for n in names if len({d.get(n, "default") for d in parsed}) > 1]
    return [", ".join(f"{n}={d.get(n, 'default')}" for n in differ) or "(base)" for d in parsed]


def readable_keys(values):
    """Trial keys and key-like labels ('name=value;...') cut to what differs between them (key_differences), so
    a table's rows read apart without a 300-character column; other values as they are."""
    if values and all(isinstance(v, str) and "=" in v for v in values):
        return key_differences(values)
    return list(values)


def distinguishing(shown, groups, candidates):
    """(column, values) of the first candidate column that makes the shown keys distinct, or None."""
    for c in candidates:
        values = [g[c] for g in groups]
        if len(set(zip(shown, values))) == len(shown):
            return c, values
    return None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
