#!/usr/bin/env python3
"""bench_allreduce JSON (Google Benchmark, with or without --benchmark_repetitions) -> a markdown table of
median time per operation and algorithm bandwidth per size for MPI_Allreduce and MPI_Iallreduce, and per
operation the least-squares fit t = alpha + bytes * beta over sizes from --fit-from (64 KiB) to --fit-to
(64 MiB) bytes, by absolute and by relative residuals, plus the small-message latency (the median at the
operation's own smallest size, 4 B in bench_allreduce's sweep).
Usage: allreduce_fit.py FILE.json [LABEL] [--fit-from BYTES] [--fit-to BYTES]"""
import json
import sys


def medians(path):
    """{(op, bytes): median seconds} (Google Benchmark's median aggregate, else the single run)."""
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    out, runs = {}, {}
    for b in json.load(open(path))["benchmarks"]:
        name, size = b["run_name"].split("/")[:2]
        key = ("allreduce" if name == "BM_Allreduce" else "iallreduce", int(size))
        t = b["real_time"] * unit[b["time_unit"]]
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                out[key] = t
        else:
            runs.setdefault(key, []).append(t)
    for key, ts in runs.items():
        ts = sorted(ts)
        mid = len(ts) // 2
        out.setdefault(key, ts[mid] if len(ts) % 2 else (ts[mid - 1] + ts[mid]) / 2)
    return out


def rate(beta):
    """1/beta in GB/s; a beta <= 0 (times that do not grow with size) has no bandwidth to print."""
    return f"{1 / beta * 1e-9:.3f} GB/s" if beta > 0 else f"none (beta {beta * 1e9:.4f} ns/B <= 0)"


def fit(points, relative=False):
    """Least squares t = alpha + x * beta over (x, t) points: absolute residuals (the largest sizes dominate,
    alpha may come out negative), or relative ones (weights 1/t^2: every size counts alike)."""
    w = [1 / t ** 2 if relative else 1.0 for _, t in points]
    sw = sum(w)
    mx = sum(wi * x for wi, (x, _) in zip(w, points)) / sw
    mt = sum(wi * t for wi, (_, t) in zip(w, points)) / sw
    sxx = sum(wi * (x - mx) ** 2 for wi, (x, _) in zip(w, points))
    beta = sum(wi * (x - mx) * (t - mt) for wi, (x, t) in zip(w, points)) / sxx
    return mt - beta * mx, beta


def main():
    args = sys.argv[1:]
    bounds = {"--fit-from": 64 * 1024, "--fit-to": 64 << 20}
    for flag in bounds:
        if flag in args:
            at = args.index(flag)
            bounds[flag] = int(args[at + 1])
            del args[at:at + 2]
    fit_from, fit_to = bounds["--fit-from"], bounds["--fit-to"]
    path, label = args[0], args[1] if len(args) > 1 else args[0]
    m = medians(path)
    sizes = sorted({b for _, b in m})
    print(f"#### {label}\n")
    print("| bytes | Allreduce us | Iallreduce us | Allreduce GB/s | Iallreduce GB/s |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for b in sizes:
        a, i = m.get(("allreduce", b)), m.get(("iallreduce", b))
        cell = lambda t, f: f(t) if t is not None else "-"
        print(f"| {b} | {cell(a, lambda t: f'{t * 1e6:.2f}')} | {cell(i, lambda t: f'{t * 1e6:.2f}')} | "
              f"{cell(a, lambda t: f'{b / t * 1e-9:.3f}')} | {cell(i, lambda t: f'{b / t * 1e-9:.3f}')} |")
    print()
    for op in ("allreduce", "iallreduce"):
        pts = [(b, t) for (o, b), t in m.items() if o == op and fit_from <= b <= fit_to]
        if len({b for b, _ in pts}) < 2:  # one size cannot tell alpha from beta
            continue
        alpha, beta = fit(pts)
        ralpha, rbeta = fit(pts, relative=True)
        smallest = min(b for o, b in m if o == op)  # this operation's own: the other may have sizes it lacks
        print(f"- {op}, {len(pts)} sizes {fit_from}..{fit_to} B: least squares alpha = {alpha * 1e6:.1f} us, "
              f"beta = {beta * 1e9:.4f} ns/B (1/beta = {rate(beta)}); relative least squares "
              f"alpha = {ralpha * 1e6:.1f} us, 1/beta = {rate(rbeta)}; "
              f"{smallest} B latency {m[(op, smallest)] * 1e6:.2f} us")


if __name__ == "__main__":
    main()
