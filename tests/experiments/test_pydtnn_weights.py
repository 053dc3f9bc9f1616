#!/usr/bin/python3
"""Weights files between dtnn and the real PyDTNN: a file trained by one evaluates in the other to the same
test figures.

  /usr/bin/python3 tests/experiments/test_pydtnn_weights.py DTNN_BINARY WORK_DIR   (exit 0 pass, 1 fail, 77 skipped)

Without $DTNN_PYDTNN (a PyDTNN checkout built by ci/setup_pydtnn.sh) or without Fashion-MNIST it prints
`SKIPPED: <reason>` and exits 77. Otherwise, simplecnn (NHWC, adam 1e-3, batch 64, 50 steps, seed 0, 1 thread),
the files in WORK_DIR:
(a) dtnn trains into dtnn.npz; `dtnn train --evaluate_only=True` and pydtnn_peer.py --evaluate_only=True on it
    give the same test accuracy (within 0.02 points) and loss (within 1e-4 relative), equal to dtnn's own test
    figures after training (the file is the trained model).
(b) pydtnn_peer.py trains into pydtnn.npz (the peer stores it after training, as dtnn does); both evaluate it:
    the same, equal to the peer's test figures after training; the two files have the same keys and shapes.
(c) The peer refuses a file whose shapes do not fit (dtnn.npz with --tensor_format=NCHW): exit 1, as dtnn.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PEER = os.path.join(REPO, "experiments", "peers", "pydtnn_peer.py")
DATA = "/usr/share/datasets/fashion-mnist"
ACC, LOSS = "categorical_accuracy", "categorical_cross_entropy"
COMMON = ["--model=simplecnn", "--dataset=mnist", f"--dataset_train_path={DATA}", "--batch_size=64",
          "--optimizer=adam", "--learning_rate=0.001", "--validation_split=0", "--seed=0", "--threads=1"]
TRAIN = ["--num_epochs=1", "--steps_per_epoch=50"]
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)
    return cond


def run(cmd, report):
    """Runs cmd with --report=report; its report's "test" ({} on failure, recorded)."""
    if os.path.exists(report):
        os.unlink(report)
    p = subprocess.run(cmd + [f"--report={report}"], capture_output=True, text=True, timeout=180)
    if not check(p.returncode == 0, f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-1500:]}"):
        return {}
    with open(report) as f:
        return json.load(f).get("test", {})


def same(a, b, what):
    """Test figures a and b agree: accuracy within 0.02 points, loss within 1e-4 relative."""
    if not check(ACC in a and ACC in b, f"{what}: no test figures ({a}, {b})"):
        return
    d_acc, d_loss = abs(a[ACC] - b[ACC]), abs(a[LOSS] - b[LOSS]) / max(abs(b[LOSS]), 1e-12)
    check(d_acc <= 0.02 and d_loss <= 1e-4, f"{what}: accuracy {a[ACC]} vs {b[ACC]}, loss {a[LOSS]} vs {b[LOSS]}")
    print(f"{what}: accuracy {a[ACC]:.2f} vs {b[ACC]:.2f} %, loss {a[LOSS]:.7f} vs {b[LOSS]:.7f}")


def shapes(path):
    import numpy as np
    with np.load(path) as d:
        return {k: d[k].shape for k in d.files}


def main():
    if len(sys.argv) != 3:
        print("usage: test_pydtnn_weights.py DTNN_BINARY WORK_DIR", file=sys.stderr)
        return 2
    dtnn, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not os.environ.get("DTNN_PYDTNN"):
        print("SKIPPED: DTNN_PYDTNN is not set (ci/setup_pydtnn.sh prints it)")
        return 77
    if not os.path.isdir(DATA):
        print(f"SKIPPED: no {DATA} (Debian's dataset-fashion-mnist)")
        return 77
    os.makedirs(work, exist_ok=True)
    d_cmd = [dtnn, "train", "--progress=False"] + COMMON
    p_cmd = ["/usr/bin/python3", PEER] + COMMON
    w_d, w_p = os.path.join(work, "dtnn.npz"), os.path.join(work, "pydtnn.npz")
    for w in (w_d, w_p):
        if os.path.exists(w):
            os.unlink(w)
    r = lambda name: os.path.join(work, name + ".json")  # noqa: E731
    ev = ["--evaluate_only=True"]
    # (a) trained by dtnn
    trained = run(d_cmd + TRAIN + [f"--weights_and_bias_filename={w_d}"], r("a_train"))
    if check(os.path.isfile(w_d), f"dtnn stored no {w_d}"):
        in_dtnn = run(d_cmd + ev + [f"--weights_and_bias_filename={w_d}"], r("a_dtnn"))
        in_pydtnn = run(p_cmd + ev + [f"--weights_and_bias_filename={w_d}"], r("a_pydtnn"))
        same(in_pydtnn, in_dtnn, "(a) dtnn's file, PyDTNN vs dtnn")
        same(in_dtnn, trained, "(a) dtnn's file, dtnn's evaluation vs its test after training")
    # (b) trained by PyDTNN
    trained = run(p_cmd + TRAIN + [f"--weights_and_bias_filename={w_p}"], r("b_train"))
    if check(os.path.isfile(w_p), f"the peer stored no {w_p}"):
        in_dtnn = run(d_cmd + ev + [f"--weights_and_bias_filename={w_p}"], r("b_dtnn"))
        in_pydtnn = run(p_cmd + ev + [f"--weights_and_bias_filename={w_p}"], r("b_pydtnn"))
        same(in_dtnn, in_pydtnn, "(b) PyDTNN's file, dtnn vs PyDTNN")
        same(in_pydtnn, trained, "(b) PyDTNN's file, PyDTNN's evaluation vs its test after training")
        if os.path.isfile(w_d):
            check(shapes(w_d) == shapes(w_p), f"keys/shapes differ: {shapes(w_d)} vs {shapes(w_p)}")
    # (c) a file of the other layout
    if os.path.isfile(w_d):
        p = subprocess.run(p_cmd + ev + ["--tensor_format=NCHW", f"--weights_and_bias_filename={w_d}"],
                           capture_output=True, text=True, timeout=180)
        check(p.returncode == 1 and "has shape" in p.stderr, f"(c) NHWC file in NCHW: exit {p.returncode}, "
                                                             f"{p.stderr[-500:]}")
    if FAILURES:
        print(f"test_pydtnn_weights: {len(FAILURES)} failure(s)", file=sys.stderr)
        return 1
    print("test_pydtnn_weights: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
