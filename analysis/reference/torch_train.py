#!/usr/bin/python3
"""PyTorch reference runner for dtnn.

Trains the same models as `dtnn train` (PyDTNN's simplemlp and simplecnn) on the
same MNIST-format data with the same PyDTNN-style options, and writes the same
JSON run report ("dtnn.run_report/1"), so both frameworks can be compared side
by side for speed and accuracy.

Run with Debian's PyTorch (python3-torch), e.g.:

    /usr/bin/python3 analysis/reference/torch_train.py --model=simplecnn \\
        --dataset=mnist --dataset_train_path=/usr/share/datasets/fashion-mnist \\
        --optimizer=adam --learning_rate=0.001 --batch_size=64 --num_epochs=5 \\
        --threads=1 --report=/tmp/torch_simplecnn.json

Exit status: 0 on success, 1 on bad data files, 2 on bad options, 3 for a model this reference does not
implement (the dtnn runner records that run as "unsupported").
"""
import argparse
import gzip
import json
import os
import platform
import socket
import sys
import tempfile
import time
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MODELS = ("simplecnn", "simplemlp")
DATASETS = ("mnist",)


class DataError(Exception):
    """A data file is missing or malformed."""


BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def str2bool(text):
    if text.strip().lower() not in BOOLS:
        raise argparse.ArgumentTypeError(f"invalid boolean value '{text}'")
    return BOOLS[text.strip().lower()]


# name -> (type, default); order is the order in the report's "options"
OPTIONS = {
    "model": (str, None), "dataset": (str, "mnist"),
    "dataset_train_path": (str, "."), "dataset_test_path": (str, None),
    "batch_size": (int, 64), "num_epochs": (int, 1), "steps_per_epoch": (int, 0),
    "optimizer": (str, "sgd"), "learning_rate": (float, 0.01), "momentum": (float, 0.9),
    "nesterov": (str2bool, False), "decay": (float, 0.0), "beta1": (float, 0.9),
    "beta2": (float, 0.999), "epsilon": (float, 1e-7), "validation_split": (float, 0.0),
    "test_as_validation": (str2bool, False), "use_synthetic_data": (str2bool, False),
    "seed": (int, 0), "threads": (int, 1), "tensor_format": (str, "NHWC"),
    "report": (str, None), "evaluate_on_test": (str2bool, True),
}
CHOICES = {"optimizer": ("sgd", "adam"), "tensor_format": ("NHWC", "NCHW")}


def parse_args(argv):
    p = argparse.ArgumentParser(prog="torch_train", allow_abbrev=False,
                                description="PyTorch reference runner for dtnn")
    for name, (kind, default) in OPTIONS.items():
        p.add_argument("--" + name, type=kind, default=default, choices=CHOICES.get(name),
                       required=(name == "model"), metavar=name.upper())
    args = p.parse_args(argv)
    if args.dataset_test_path is None:
        args.dataset_test_path = args.dataset_train_path
    if args.model not in MODELS:
        fail(3, f"unknown model '{args.model}' (implemented: {', '.join(MODELS)})")
    if args.dataset not in DATASETS:
        fail(2, f"unknown dataset '{args.dataset}' (implemented: {', '.join(DATASETS)})")
    if min(args.batch_size, args.threads) < 1 or min(args.num_epochs, args.steps_per_epoch, args.seed) < 0:
        fail(2, "batch_size and threads must be >= 1; num_epochs, steps_per_epoch and seed >= 0")
    if not 0.0 <= args.validation_split < 1.0:
        fail(2, "validation_split must be in [0, 1)")
    if args.optimizer == "sgd" and args.nesterov and args.momentum <= 0:
        fail(2, "nesterov requires momentum > 0")
    return args


def fail(code, message):
    print(f"torch_train: {message}", file=sys.stderr)
    sys.exit(code)


def read_idx(directory, name, magic):
    """Read an IDX file (plain or gzipped, by content) and return a uint8 array."""
    path = os.path.join(directory, name)
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
        raise DataError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    ndim = 3 if magic == 2051 else 1
    header = 4 + 4 * ndim
    if len(raw) < header or int.from_bytes(raw[:4], "big") != magic:
        raise DataError(f"{path}: not an IDX file with magic {magic}")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    if len(raw) != header + int(np.prod(dims)):
        raise DataError(f"{path}: size {len(raw)} does not match header dims {dims}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load_mnist(directory, prefix):
    x = read_idx(directory, f"{prefix}-images-idx3-ubyte", 2051)
    y = read_idx(directory, f"{prefix}-labels-idx1-ubyte", 2049)
    if x.shape[1:] != (28, 28) or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise DataError(f"{directory}: {prefix} images {x.shape} and labels {y.shape} do not match")
    if y.max() > 9:
        raise DataError(f"{directory}: {prefix} labels out of range 0..9")
    images = torch.from_numpy(x.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    return images, torch.from_numpy(y.astype(np.int64))


def synthetic(n, rng):
    return (torch.from_numpy(rng.standard_normal((n, 1, 28, 28), dtype=np.float32)),
            torch.from_numpy(rng.integers(0, 10, size=n, dtype=np.int64)))


def load_data(args):
    """Return (train, val, test); each is (x, y) or None."""
    rng = np.random.default_rng(args.seed)
    need_test = args.evaluate_on_test or args.test_as_validation
    if args.use_synthetic_data:
        train = synthetic(60000, rng)
        test = synthetic(10000, rng) if need_test else None
    else:
        train = load_mnist(args.dataset_train_path, "train")
        test = load_mnist(args.dataset_test_path, "t10k") if need_test else None
    val = None
    if args.test_as_validation:
        val = test
    elif args.validation_split > 0:
        n = train[0].shape[0]
        n_val = int(n * args.validation_split)
        if n_val > 0:
            window = (int(rng.integers(0, n)) + np.arange(n)) % n  # wraps around the end
            val_idx = torch.from_numpy(window[:n_val])
            train_idx = torch.from_numpy(np.sort(window[n_val:]))
            val = (train[0][val_idx], train[1][val_idx])
            train = (train[0][train_idx], train[1][train_idx])
    return train, val, test


def build_model(name):
    if name == "simplemlp":
        model = nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 512), nn.ReLU(),
            nn.Linear(512, 512), nn.ReLU(),
            nn.Linear(512, 512), nn.ReLU(),
            nn.Linear(512, 10))
    else:  # simplecnn
        model = nn.Sequential(
            nn.Conv2d(1, 4, 3, stride=1, padding=1), nn.ReLU(),
            nn.Conv2d(4, 8, 3, stride=1, padding=1), nn.ReLU(),
            nn.MaxPool2d(2, stride=2),
            nn.Flatten(),
            nn.Linear(8 * 14 * 14, 128), nn.ReLU(),
            nn.Dropout(0.5),
            nn.Linear(128, 10))
    for m in model.modules():  # PyDTNN defaults: glorot_uniform weights, zero biases
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def build_optimizer(args, params):
    if args.optimizer == "sgd":
        return torch.optim.SGD(params, lr=args.learning_rate, momentum=args.momentum,
                               nesterov=args.nesterov, weight_decay=args.decay)
    return torch.optim.Adam(params, lr=args.learning_rate, betas=(args.beta1, args.beta2),
                            eps=args.epsilon, weight_decay=args.decay)


def train_epoch(model, optimizer, data, args, rng):
    """One epoch over a fresh shuffle; returns (samples, seconds, mean loss, acc %)."""
    x, y = data
    order = torch.from_numpy(rng.permutation(x.shape[0]))
    n_batches = (x.shape[0] + args.batch_size - 1) // args.batch_size
    if args.steps_per_epoch > 0:
        n_batches = min(n_batches, args.steps_per_epoch)
    model.train()
    samples, loss_sum, correct = 0, 0.0, 0
    start = time.perf_counter()
    for b in range(n_batches):
        idx = order[b * args.batch_size:(b + 1) * args.batch_size]
        xb, yb = x[idx], y[idx]
        optimizer.zero_grad()
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        loss.backward()
        optimizer.step()
        samples += yb.shape[0]
        loss_sum += loss.item() * yb.shape[0]
        correct += (logits.argmax(1) == yb).sum().item()
    elapsed = time.perf_counter() - start
    return samples, elapsed, loss_sum / max(samples, 1), 100.0 * correct / max(samples, 1)


def evaluate(model, data, batch_size):
    x, y = data
    model.eval()
    loss_sum, correct = 0.0, 0
    start = time.perf_counter()
    with torch.no_grad():
        for i in range(0, x.shape[0], batch_size):
            logits = model(x[i:i + batch_size])
            yb = y[i:i + batch_size]
            loss_sum += F.cross_entropy(logits, yb, reduction="sum").item()
            correct += (logits.argmax(1) == yb).sum().item()
    elapsed = time.perf_counter() - start
    n = x.shape[0]
    return {"categorical_cross_entropy": loss_sum / n, "categorical_accuracy": 100.0 * correct / n,
            "samples": n, "time_s": elapsed, "samples_per_s": n / elapsed if elapsed > 0 else 0.0}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            names = [l.split(":", 1)[1].strip() for l in f if l.startswith("model name")]
    except OSError:
        names = []
    return names[0] if names else (platform.processor() or "unknown")


def build_report(args, n_params, epochs, total_time, total_samples, test_result):
    report = {
        "schema": "dtnn.run_report/1",
        "framework": "pytorch",
        "status": "ok",
        "options": vars(args),
        "environment": {"host": socket.gethostname(), "cpu_model": cpu_model(),
                        "cores": os.cpu_count(), "python": platform.python_version(),
                        "torch": torch.__version__, "numpy": np.__version__,
                        "threads": torch.get_num_threads()},
        "model": {"name": args.model, "params": n_params},
        "parallel": {"ranks": 1, "threads": torch.get_num_threads()},
        "epochs": epochs,
        "training": {"time_s": total_time, "samples": total_samples,
                     "samples_per_s": total_samples / total_time if total_time > 0 else 0.0,
                     "epochs_run": len(epochs)},
    }
    if test_result is not None:
        report["test"] = test_result
    return report


def write_report(path, report):
    """Write atomically: temp file in the same directory, then os.replace."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".torch_train.", suffix=".json.tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    torch.manual_seed(args.seed)
    try:
        train, val, test = load_data(args)
    except DataError as e:
        fail(1, str(e))

    model = build_model(args.model)
    optimizer = build_optimizer(args, model.parameters())
    n_params = sum(p.numel() for p in model.parameters())
    print(f"Model {args.model}: {n_params} parameters; train {train[0].shape[0]} samples"
          + (f", val {val[0].shape[0]}" if val else "") + f"; {args.threads} thread(s)")

    shuffle_rng = np.random.default_rng([args.seed, 1])  # independent of the data stream
    epochs, total_time, total_samples = [], 0.0, 0
    for epoch in range(1, args.num_epochs + 1):
        samples, secs, loss, acc = train_epoch(model, optimizer, train, args, shuffle_rng)
        total_time += secs
        total_samples += samples
        rate = samples / secs if secs > 0 else 0.0
        record = {"epoch": epoch, "samples": samples, "time_s": secs, "samples_per_s": rate,
                  "lr": optimizer.param_groups[0]["lr"],
                  "train": {"categorical_cross_entropy": loss, "categorical_accuracy": acc}}
        line = (f"Epoch {epoch}/{args.num_epochs}: {samples} samples, {rate:.1f} samples/s, "
                f"cce: {loss:.7f}, acc: {acc:.2f}%")
        if val is not None:
            v = evaluate(model, val, args.batch_size)
            record["val"] = {k: v[k] for k in ("categorical_cross_entropy", "categorical_accuracy")}
            line += f", val_cce: {v['categorical_cross_entropy']:.7f}, val_acc: {v['categorical_accuracy']:.2f}%"
        print(line, flush=True)
        epochs.append(record)

    throughput = total_samples / total_time if total_time > 0 else 0.0
    print(f"Training time: {total_time:.3f} s")
    print(f"Training throughput: {throughput:.1f} samples/s")
    test_result = None
    if args.evaluate_on_test:
        test_result = evaluate(model, test, args.batch_size)
        print(f"Test: cce {test_result['categorical_cross_entropy']:.7f}, "
              f"acc {test_result['categorical_accuracy']:.2f}%")

    if args.report:
        report = build_report(args, n_params, epochs, total_time, total_samples, test_result)
        try:
            write_report(args.report, report)
        except OSError as e:
            fail(1, f"cannot write report {args.report}: {e.strerror or e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
