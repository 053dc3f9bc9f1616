#!/usr/bin/env python3
"""Summarises Nsight Compute CSV logs (`ncu --csv --metrics gpu__time_duration.sum --log-file F`) of one
training step per framework (experiments/gpu_profile.sh): kernel time per category, side by side, and each
framework's heaviest kernels. Standard library only.

    gpu_profile_summary.py DTNN_CSV PYTORCH_CSV [--title T]
"""
import argparse
import collections
import csv
import re
import sys

UNITS = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0,
         "second": 1e3, "s": 1e3}

# First match wins: batch normalization and pooling before convolution (cuDNN names them all "cudnn").
# "conv" but not "convert" (convertTensor_kernel is a copy); cuDNN's scudnn kernels (e.g.
# ampere_scudnn_128x64_relu_interior_nn_v1) are implicit-GEMM convolutions, not cuBLAS GEMMs.
CATEGORIES = [
    ("batch normalization", r"bn_|batch_?norm|batchnorm"),
    ("pooling", r"pool"),
    ("convolution", r"conv(?!ert)|scudnn|fprop|dgrad|wgrad|winograd|fft|implicit|precomputed"),
    ("GEMM (cuBLAS: 1x1 convolutions, FC)", r"gemm|cutlass|sm\d\d_xmma|ampere|cublas"),
    ("softmax / loss / metrics", r"softmax|loss|nll|cross|argmax|metric"),
    ("optimizer", r"sgd|adam|momentum|multi_tensor|foreach|optim|update"),
    ("ReLU / additions / elementwise", r"relu|threshold|elementwise|add|vectorized|unrolled|accumulate|fill"),
    ("copies / transposes / reductions", r"copy|transpose|nchw|nhwc|convert|reduce|sum_rows|broadcast"),
]


def category(name):
    low = name.lower()
    for cat, pattern in CATEGORIES:
        if re.search(pattern, low):
            return cat
    return "other"


def short(name, width=90):
    name = re.sub(r"\s+", " ", name)
    return name if len(name) <= width else name[: width - 3] + "..."


def load(path):
    """[(kernel name, ms)] in launch order; exits 1 on an unreadable or empty log."""
    try:
        with open(path, newline="") as f:
            lines = [l for l in f if l.startswith('"')]
    except OSError as e:
        sys.exit(f"gpu_profile_summary: cannot read {path}: {e.strerror}")
    rows = list(csv.DictReader(lines))
    kernels = []
    for r in rows:
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = UNITS.get(r.get("Metric Unit", "").strip())
        if unit is None:
            sys.exit(f"gpu_profile_summary: {path}: unknown unit '{r.get('Metric Unit')}'")
        value = float(r["Metric Value"].replace(",", ""))
        kernels.append((r["Kernel Name"], value * unit))
    if not kernels:
        sys.exit(f"gpu_profile_summary: {path}: no gpu__time_duration.sum rows (did the profiled step run?)")
    return kernels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dtnn")
    ap.add_argument("pytorch")
    ap.add_argument("--title", default="one training step")
    a = ap.parse_args()
    runs = {"dtnn": load(a.dtnn), "PyTorch": load(a.pytorch)}
    print(f"## Kernel time of {a.title} (ncu, kernels run one at a time)\n")
    cats = collections.OrderedDict((c, {}) for c, _ in CATEGORIES + [("other", "")])
    for fw, ks in runs.items():
        for name, ms in ks:
            c = cats[category(name)].setdefault(fw, [0.0, 0])
            c[0] += ms
            c[1] += 1
    print("| category | dtnn ms (kernels) | PyTorch ms (kernels) | dtnn - PyTorch ms |")
    print("|---|---|---|---|")
    for cat, per in cats.items():
        if not per:
            continue
        d, p = per.get("dtnn", [0.0, 0]), per.get("PyTorch", [0.0, 0])
        print(f"| {cat} | {d[0]:.3f} ({d[1]}) | {p[0]:.3f} ({p[1]}) | {d[0] - p[0]:+.3f} |")
    td = sum(ms for _, ms in runs["dtnn"])
    tp = sum(ms for _, ms in runs["PyTorch"])
    print(f"| **total** | **{td:.3f}** ({len(runs['dtnn'])}) | **{tp:.3f}** ({len(runs['PyTorch'])}) | "
          f"**{td - tp:+.3f}** |\n")
    for fw, ks in runs.items():
        by = collections.defaultdict(lambda: [0.0, 0])
        for name, ms in ks:
            by[name][0] += ms
            by[name][1] += 1
        print(f"### {fw}: heaviest kernels\n")
        print("| ms | calls | category | kernel |")
        print("|---|---|---|---|")
        for name, (ms, n) in sorted(by.items(), key=lambda kv: -kv[1][0])[:30]:
            print(f"| {ms:.3f} | {n} | {category(name)} | `{short(name)}` |")
        print()


if __name__ == "__main__":
    main()
