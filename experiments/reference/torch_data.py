"""The PyTorch reference's datasets, for experiments/reference/torch_train.py (whose docstring describes
them): MNIST-format IDX files, CIFAR-10 binary batches and dtnn-sized synthetic data.

Contract: load_data(args), args being torch_train.py's parsed options, returns (train, val, test), each
(images, labels) or None: images a float32 tensor (N, C, H, W) of data_shape(args) per sample (or a
TiledImages standing for one: index it only through gather / take / to_nhwc), labels an int64 tensor (N,).
It draws the synthetic data and the validation split from numpy's default_rng(args.seed). A missing or
malformed data file raises DataError (whose message names the file); nothing here exits.
"""
import gzip
import os
import zlib

import numpy as np
import torch
import torch.nn.functional as F

# The datasets this reference reads (imagenet: synthetic only).
DATASETS = ("mnist", "cifar10", "imagenet")
# dtnn's dataset table (engine/data/synthetic.cpp): classes, train and test sample counts.
DATASET_SIZES = {"mnist": (10, 60000, 10000), "cifar10": (10, 50000, 10000), "imagenet": (1000, 1281167, 50000)}
# Distinct synthetic images behind a synthetic dataset that would not fit in memory (imagenet).
SYNTHETIC_POOL = 256


class DataError(Exception):
    """A data file is missing or malformed."""


def data_shape(args):
    """The per-sample (C, H, W) the data loader produces."""
    if args.dataset == "imagenet":
        return (3, 224, 224)
    if args.dataset == "cifar10" or args.pad_to_cifar:
        return (3, 32, 32)
    return (1, args.resize, args.resize) if args.resize else (1, 28, 28)


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


def resize_bytes(x, side):
    """d2l's loader with resize=side: torchvision's transforms.Resize(side) before ToTensor, which is
    Pillow's bilinear Image.resize of each 8-bit image (dtnn's --resize reproduces it byte for byte)."""
    from PIL import Image
    out = np.empty((x.shape[0], side, side), dtype=np.uint8)
    for i, image in enumerate(x):
        out[i] = np.asarray(Image.fromarray(image).resize((side, side), Image.BILINEAR))
    return out


def load_mnist(directory, prefix, resize=0):
    x = read_idx(directory, f"{prefix}-images-idx3-ubyte", 2051)
    y = read_idx(directory, f"{prefix}-labels-idx1-ubyte", 2049)
    if x.shape[1:] != (28, 28) or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise DataError(f"{directory}: {prefix} images {x.shape} and labels {y.shape} do not match")
    if y.max() > 9:
        raise DataError(f"{directory}: {prefix} labels out of range 0..9")
    if resize:
        x = resize_bytes(x, resize)
    images = torch.from_numpy(x.astype(np.float32) / 255.0).reshape(-1, 1, x.shape[1], x.shape[2])
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


class TiledImages:
    """A synthetic image set of len(index) samples over a smaller pool of distinct images: sample i is
    pool[index[i] % len(pool)]. Only batches are ever materialised (see gather)."""

    def __init__(self, pool, index):
        self.pool, self.index = pool, index

    @property
    def shape(self):
        return (self.index.shape[0],) + tuple(self.pool.shape[1:])

    def rows(self, idx):
        """Pool rows of the samples idx (an int64 tensor)."""
        return torch.remainder(self.index[idx], self.pool.shape[0])

    def take(self, idx):
        return TiledImages(self.pool, self.index[idx])


def gather(x, idx, out=None):
    """Samples idx (int64 tensor) of x (a tensor or TiledImages), into `out` when given."""
    if isinstance(x, TiledImages):
        return torch.index_select(x.pool, 0, x.rows(idx), out=out)
    return torch.index_select(x, 0, idx, out=out)


def take(x, idx):
    """A subset of a dataset's images, for the validation split (a TiledImages stays one)."""
    return x.take(idx) if isinstance(x, TiledImages) else x[idx]


def to_nhwc(x):
    """Host images (N, C, H, W) stored as (N, H, W, C) (dtnn's NHWC host layout)."""
    if isinstance(x, TiledImages):
        return TiledImages(x.pool.permute(0, 2, 3, 1).contiguous(), x.index)
    return x.permute(0, 2, 3, 1).contiguous()


def synthetic(n, shape, classes, rng, pool=None):
    """n standard-normal images and uniform labels; with pool < n, a TiledImages over `pool` images."""
    images = rng.standard_normal((min(n, pool or n),) + shape, dtype=np.float32)
    labels = torch.from_numpy(rng.integers(0, classes, size=n, dtype=np.int64))
    if images.shape[0] < n:
        return TiledImages(torch.from_numpy(images), torch.arange(n, dtype=torch.int64)), labels
    return torch.from_numpy(images), labels


def load_data(args):
    """Return (train, val, test); each is (x, y) or None."""
    rng = np.random.default_rng(args.seed)
    need_test = args.evaluate_on_test or args.test_as_validation
    classes, n_train, n_test = DATASET_SIZES[args.dataset]
    if args.use_synthetic_data:
        pool = SYNTHETIC_POOL if args.dataset == "imagenet" else None
        train = synthetic(n_train, data_shape(args), classes, rng, pool)
        test = synthetic(n_test, data_shape(args), classes, rng, pool) if need_test else None
    elif args.dataset == "cifar10":
        train, test = load_cifar10(args.dataset_train_path, args.dataset_test_path, need_test)
    else:
        train = load_mnist(args.dataset_train_path, "train", args.resize)
        test = load_mnist(args.dataset_test_path, "t10k", args.resize) if need_test else None
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
            val = (take(train[0], val_idx), train[1][val_idx])
            train = (take(train[0], train_idx), train[1][train_idx])
    return train, val, test

