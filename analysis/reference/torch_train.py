#!/usr/bin/python3
"""PyTorch reference runner for dtnn.

Trains the same models as `dtnn train` on the same data with the same PyDTNN-style
options, and writes the same JSON run report ("dtnn.run_report/1"), so both
frameworks can be compared side by side for speed and accuracy.

Models (built layer for layer like dtnn's builders in engine/models/):
  simplemlp, simplecnn   PyDTNN's MNIST models (28x28x1)
  resnet20_cifar10       He et al.'s CIFAR ResNet-20 as dtnn builds it (zoo_resnet.cpp): conv3x3 16
                         (no bias) - BN - ReLU, 3 stages x 3 basic blocks (16/32/64), projection
                         shortcuts (1x1 conv + BN) where the shape changes, GAP, FC10 (272,474 params)
  vgg11bn_cifar10        PyDTNN's vgg11bn_cifar10 (zoo_vgg.cpp): VGG-11 conv3x3 - BN - ReLU stages,
                         Drop .5 - FC512 - BN - ReLU - Drop .5 - FC512 - BN - ReLU - FC10
Initialisation follows dtnn: glorot_uniform by default, he_uniform where the builder says so, zero
biases, BN gamma 1 / beta 0 / running mean 0 / running var 1, BN momentum 0.1 (PyTorch's convention:
1 - PyDTNN's 0.9), epsilon 1e-5.

Datasets:
  mnist    MNIST-format IDX files, x / 255 (also Fashion-MNIST); with --pad_to_cifar=True each image is
           zero-padded by 2 pixels on every side to 32x32 and its gray channel copied to R, G and B, so
           the CIFAR-shaped (32x32x3) models train on it
  cifar10  CIFAR-10 binary version (data_batch_{1..5}.bin, test_batch.bin), x / 255 then per-channel
           standardisation with the training pool's mean and population std (PyDTNN; the test set
           reuses them)
With --use_synthetic_data=True: standard-normal images of the dataset's (padded) shape and size.

Run with Debian's PyTorch (python3-torch), e.g.:

    /usr/bin/python3 analysis/reference/torch_train.py --model=simplecnn \\
        --dataset=mnist --dataset_train_path=/usr/share/datasets/fashion-mnist \\
        --optimizer=adam --learning_rate=0.001 --batch_size=64 --num_epochs=5 \\
        --threads=1 --report=/tmp/torch_simplecnn.json

    /usr/bin/python3 analysis/reference/torch_train.py --model=resnet20_cifar10 \\
        --dataset=mnist --pad_to_cifar=True --dataset_train_path=/usr/share/datasets/fashion-mnist \\
        --optimizer=sgd --learning_rate=0.1 --batch_size=64 --num_epochs=2 --threads=2

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

MODELS = ("simplecnn", "simplemlp", "resnet20_cifar10", "vgg11bn_cifar10", "vgg3dobn")
DATASETS = ("mnist", "cifar10")
# The per-sample input shape (C, H, W) each model expects.
MODEL_INPUT = {"simplecnn": (1, 28, 28), "simplemlp": (1, 28, 28),
               "resnet20_cifar10": (3, 32, 32), "vgg11bn_cifar10": (3, 32, 32),
               "vgg3dobn": (3, 32, 32)}


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
    "pad_to_cifar": (str2bool, False),
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
    if args.pad_to_cifar and args.dataset != "mnist":
        fail(2, "--pad_to_cifar applies to --dataset=mnist only")
    if MODEL_INPUT[args.model] != data_shape(args):
        c, h, w = MODEL_INPUT[args.model]
        dc, dh, dw = data_shape(args)
        fail(2, f"model {args.model} takes {h}x{w}x{c} inputs but dataset {args.dataset} gives {dh}x{dw}x{dc}"
                + (" (use --pad_to_cifar=True for MNIST)" if args.dataset == "mnist" and c == 3 else ""))
    if min(args.batch_size, args.threads) < 1 or min(args.num_epochs, args.steps_per_epoch, args.seed) < 0:
        fail(2, "batch_size and threads must be >= 1; num_epochs, steps_per_epoch and seed >= 0")
    if not 0.0 <= args.validation_split < 1.0:
        fail(2, "validation_split must be in [0, 1)")
    if args.optimizer == "sgd" and args.nesterov and args.momentum <= 0:
        fail(2, "nesterov requires momentum > 0")
    return args


def data_shape(args):
    """The per-sample (C, H, W) the data loader produces."""
    if args.dataset == "cifar10" or args.pad_to_cifar:
        return (3, 32, 32)
    return (1, 28, 28)


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


def pad_to_cifar(images):
    """(N, 1, 28, 28) -> (N, 3, 32, 32): zero-pad 2 pixels on every side, gray copied to R, G, B
    (an expanded view: batches indexed out of it are ordinary 3-channel tensors)."""
    return F.pad(images, (2, 2, 2, 2)).expand(-1, 3, -1, -1)


def read_cifar10(path):
    """One CIFAR-10 binary file -> (uint8 images (N, 3, 32, 32), int64 labels (N,))."""
    record = 1 + 3 * 32 * 32
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror or e}") from None
    if len(raw) == 0 or len(raw) % record != 0:
        raise DataError(f"{path}: size {len(raw)} bytes is not a multiple of the {record}-byte CIFAR-10 record")
    data = np.frombuffer(raw, dtype=np.uint8).reshape(-1, record)
    labels = data[:, 0].astype(np.int64)
    if labels.max() > 9:
        raise DataError(f"{path}: labels out of range 0..9")
    return data[:, 1:].reshape(-1, 3, 32, 32), labels


def load_cifar10(train_dir, test_dir, need_test):
    """Train pool and (optionally) test set, x / 255 standardised per channel with the train pool's
    mean and population std (over N, H, W), as PyDTNN and dtnn do."""
    parts = [read_cifar10(os.path.join(train_dir, f"data_batch_{k}.bin")) for k in range(1, 6)]
    x = np.concatenate([p[0] for p in parts]).astype(np.float32) / 255.0
    y = np.concatenate([p[1] for p in parts])
    # statistics in float64 so they do not depend on the summation order
    mean = x.astype(np.float64).mean(axis=(0, 2, 3))
    std = x.astype(np.float64).std(axis=(0, 2, 3))
    std[std == 0] = 1.0
    norm = lambda a: ((a - mean[None, :, None, None]) / std[None, :, None, None]).astype(np.float32)
    train = (torch.from_numpy(norm(x)), torch.from_numpy(y))
    test = None
    if need_test:
        tx, ty = read_cifar10(os.path.join(test_dir, "test_batch.bin"))
        test = (torch.from_numpy(norm(tx.astype(np.float32) / 255.0)), torch.from_numpy(ty))
    return train, test


def synthetic(n, shape, rng):
    return (torch.from_numpy(rng.standard_normal((n,) + shape, dtype=np.float32)),
            torch.from_numpy(rng.integers(0, 10, size=n, dtype=np.int64)))


def load_data(args):
    """Return (train, val, test); each is (x, y) or None."""
    rng = np.random.default_rng(args.seed)
    need_test = args.evaluate_on_test or args.test_as_validation
    sizes = {"mnist": (60000, 10000), "cifar10": (50000, 10000)}[args.dataset]
    if args.use_synthetic_data:
        train = synthetic(sizes[0], data_shape(args), rng)
        test = synthetic(sizes[1], data_shape(args), rng) if need_test else None
    elif args.dataset == "cifar10":
        train, test = load_cifar10(args.dataset_train_path, args.dataset_test_path, need_test)
    else:
        train = load_mnist(args.dataset_train_path, "train")
        test = load_mnist(args.dataset_test_path, "t10k") if need_test else None
        if args.pad_to_cifar:
            train = (pad_to_cifar(train[0]), train[1])
            test = (pad_to_cifar(test[0]), test[1]) if test is not None else None
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


def he_uniform_(weight):
    """Keras/PyDTNN he_uniform: U(-sqrt(6 / fan_in), sqrt(6 / fan_in))."""
    nn.init.kaiming_uniform_(weight, a=0.0, mode="fan_in", nonlinearity="relu")


def batchnorm(features, spatial=True):
    """PyDTNN BatchNormalization(momentum=0.9, epsilon=1e-5) in PyTorch's momentum convention."""
    return (nn.BatchNorm2d if spatial else nn.BatchNorm1d)(features, eps=1e-5, momentum=1.0 - 0.9)


class BasicBlock(nn.Module):
    """dtnn's AdditionBlock([conv3x3/s - BN - ReLU - conv3x3 - BN], [shortcut]) followed by ReLU."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.residual = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), batchnorm(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False), batchnorm(cout))
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), batchnorm(cout))

    def forward(self, x):
        return F.relu(self.residual(x) + self.shortcut(x))


def resnet_cifar(n):
    """He et al.'s CIFAR ResNet-(6n+2) as dtnn's resnet_cifar10_6n2 builds it."""
    layers = [nn.Conv2d(3, 16, 3, padding=1, bias=False), batchnorm(16), nn.ReLU()]
    cin = 16
    for s, cout in enumerate((16, 32, 64)):
        for b in range(n):
            layers.append(BasicBlock(cin, cout, 2 if s > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    model = nn.Sequential(*layers)
    for m in model.modules():  # he_uniform convs (no bias), glorot FC
        if isinstance(m, nn.Conv2d):
            he_uniform_(m.weight)
        elif isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def vgg11bn_cifar10():
    """PyDTNN's vgg11bn_cifar10 as dtnn builds it: he_uniform everywhere, conv biases kept."""
    layers, cin = [], 3
    for n, cout in ((1, 64), (1, 128), (2, 256), (2, 512), (2, 512)):
        for _ in range(n):
            layers += [nn.Conv2d(cin, cout, 3, padding=1), batchnorm(cout), nn.ReLU()]
            cin = cout
        layers.append(nn.MaxPool2d(2, stride=2))
    layers += [nn.Flatten(),
               nn.Dropout(0.5), nn.Linear(512, 512), batchnorm(512, False), nn.ReLU(),
               nn.Dropout(0.5), nn.Linear(512, 512), batchnorm(512, False), nn.ReLU(),
               nn.Linear(512, 10)]
    model = nn.Sequential(*layers)
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            he_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def vgg3dobn():
    """PyDTNN's vgg3dobn as dtnn builds it (zoo_vgg.cpp): per stage (32, 64, 128) 2 x (conv3x3 - ReLU - BN),
    maxpool 2/2, dropout .2/.3/.4; FC512 - ReLU - BN - dropout .5 - FC10; he_uniform, zero biases."""
    layers, cin = [], 3
    for cout, rate in ((32, 0.2), (64, 0.3), (128, 0.4)):
        for _ in range(2):
            layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), batchnorm(cout)]
            cin = cout
        layers += [nn.MaxPool2d(2, stride=2), nn.Dropout(rate)]
    layers += [nn.Flatten(), nn.Linear(128 * 4 * 4, 512), nn.ReLU(), batchnorm(512, False), nn.Dropout(0.5),
               nn.Linear(512, 10)]
    model = nn.Sequential(*layers)
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            he_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def build_model(name):
    if name == "vgg3dobn":
        return vgg3dobn()
    if name == "resnet20_cifar10":
        return resnet_cifar(3)
    if name == "vgg11bn_cifar10":
        return vgg11bn_cifar10()
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
