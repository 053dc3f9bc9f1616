#!/usr/bin/python3
"""PyTorch reference runner for dtnn.

Trains the same models as `dtnn train` on the same data with the same PyDTNN-style
options, and writes the same JSON run report ("dtnn.run_report/1"), so both
frameworks can be compared side by side for speed and accuracy, on the CPU or (--enable_gpu=True) on
CUDA device 0.

Models (torch_models.py; built layer for layer like dtnn's builders in engine/models/; parameter counts as
`dtnn models` prints them, checked on every run and by --self_check):
  simplemlp, simplecnn   PyDTNN's MNIST models (28x28x1; 932,362 and 202,458 params)
  resnet20_cifar10       He et al.'s CIFAR ResNet-20 as dtnn builds it (zoo_resnet.cpp): conv3x3 16
                         (no bias) - BN - ReLU, 3 stages x 3 basic blocks (16/32/64), projection
                         shortcuts (1x1 conv + BN) where the shape changes, GAP, FC10 (272,474 params)
  resnet50_imagenet      torchvision's ResNet-50 v1.5 as dtnn builds it (zoo_resnet.cpp): 224x224x3,
                         conv7x7/2 64 (no bias) - BN - ReLU - maxpool 3x3/2 p1, bottleneck blocks
                         (1x1 - BN - ReLU - 3x3/s - BN - ReLU - 1x1 x4 - BN, stride on the 3x3) 3/4/6/3 with
                         64/128/256/512 filters, projection shortcuts (1x1/s conv + BN) in the first block
                         of each stage, GAP, FC1000; he_uniform convs, glorot FC (25,557,032 params)
  vgg3dobn               PyDTNN's vgg3dobn (zoo_vgg.cpp; 1,343,146 params)
  vgg11bn_cifar10        PyDTNN's vgg11bn_cifar10 (zoo_vgg.cpp): VGG-11 conv3x3 - BN - ReLU stages,
                         Drop .5 - FC512 - BN - ReLU - Drop .5 - FC512 - BN - ReLU - FC10 (9,758,474 params)
  vgg16_cifar10          PyDTNN's vgg16_cifar10 (zoo_vgg.cpp): VGG-16 stages of conv3x3 (bias) - ReLU, maxpool
                         2/2 after each, FC512 - ReLU - Drop .5 - FC512 - ReLU - Drop .5 - FC10; he_uniform
                         everywhere (15,245,130 params)
  resnet18_d2l           d2l's ResNet-18 for Fashion-MNIST as dtnn builds it (zoo_resnet.cpp): 28x28x1, conv3x3
                         64 (bias) - BN - ReLU, 4 stages x 2 residual blocks (64/128/256/512; conv3x3 - BN -
                         ReLU - conv3x3 - BN, a 1x1 strided conv (bias, no BN) as the downsampling blocks'
                         shortcut), GAP, FC10; weights N(0, 0.01^2), zero biases (11,175,818 params)
Initialisation follows dtnn: glorot_uniform by default, he_uniform where the builder says so, zero
biases, BN gamma 1 / beta 0 / running mean 0 / running var 1, BN momentum 0.1 (PyTorch's convention:
1 - PyDTNN's 0.9), epsilon 1e-5.

Datasets (torch_data.py):
  mnist    MNIST-format IDX files, x / 255 (also Fashion-MNIST); with --pad_to_cifar=True each image is
           zero-padded by 2 pixels on every side to 32x32 and its gray channel copied to R, G and B, so
           the CIFAR-shaped (32x32x3) models train on it; with --resize=N each image is resized to NxN
           as d2l's loader does (Pillow's bilinear resize of the bytes, then / 255) and the model's input
           with it (simplecnn, simplemlp, resnet18_d2l)
  cifar10  CIFAR-10 binary version (data_batch_{1..5}.bin, test_batch.bin), x / 255 then per-channel
           standardisation with the training pool's mean and population std (PyDTNN; the test set
           reuses them)
  imagenet --use_synthetic_data=True only (real ImageNet files: exit 3, unsupported)
With --use_synthetic_data=True: standard-normal images of the dataset's (padded) shape and uniform labels,
as many as dtnn's synthetic data has (mnist 60,000 / 10,000, cifar10 50,000 / 10,000, imagenet
1,281,167 / 50,000 train / test samples). For imagenet, sample i is image i mod 256 of a pool of 256
distinct images (the whole set would not fit in memory; every sample still has its own label), so an epoch
has dtnn's length; throughput runs cap it with --steps_per_epoch.

Ranks: started by a launcher (mpirun, srun or torchrun), the processes train as one PyTorch
DistributedDataParallel world (experiments/reference/torch_dist.py: gloo on CPUs, NCCL on GPUs), with dtnn's
recipe: every rank draws the same order and takes dtnn's share of each global batch (--batch_size per rank,
or --global_batch_size split over the ranks), the gradient is the global batch's mean, SGD's rate is
multiplied by the ranks under weak scaling (--learning_rate_scaling, PyDTNN's rule), and each epoch is timed
between barriers. DDP keeps its defaults (25 MiB buckets, the first 1 MiB, buffers broadcast from rank 0) with
gradient_as_bucket_view=True; a communication hook times every bucket's allreduce, and each epoch's report
carries dtnn's "communication" object (mode "ddp": time in the allreduce, and exposed: from the last bucket
being ready to the end of backward). The rendezvous is MASTER_ADDR:MASTER_PORT (the dtnn runner sets both;
under srun MASTER_ADDR defaults to the step's first node). Rank 0 prints and writes the report; evaluation
splits the test set over the ranks. Checkpoints are for 1 rank only (exit 3 otherwise).

Options: the rows of dtnn's option table flagged "torch" (`dtnn train --list-options` lists them; this
script reads `$DTNN_BINARY train --list-options --format json`, default build/experiments/dtnn), with the
table's names, kinds, defaults and ranges; booleans as --name=True/False:
  --model, --dataset, --dataset_train_path, --dataset_test_path, --batch_size, --num_epochs,
  --steps_per_epoch (> 0: that many full batches per epoch, wrapping over the data as dtnn does),
  --optimizer (sgd|adam here), --learning_rate, --momentum, --nesterov, --decay, --beta1, --beta2, --epsilon,
  --validation_split, --test_as_validation,
  --use_synthetic_data, --pad_to_cifar, --resize, --seed, --threads (CPU threads; 0: one per core), --report (JSON run
  report), --evaluate_on_test (default True), --global_batch_size (strong scaling), --learning_rate_scaling
  --enable_gpu (False)   train on CUDA device 0: model, loss and optimizer on the GPU; the data stays in
                         host memory and every batch is gathered into a pinned buffer and copied with
                         non_blocking=True (as dtnn does); epochs are timed between torch.cuda.synchronize()
                         calls. Without a CUDA device: exit 3.
  --allow_tf32 (False)   TF32 in cuBLAS matmuls and cuDNN convolutions, both or neither (False: strict
                         float32; note PyTorch's own default allows it in cuDNN)
  --enable_cudnn_auto_conv_alg (True)  torch.backends.cudnn.benchmark (PyDTNN's cudnnFind per layer)
  --tensor_format (AUTO) NHWC, NCHW or AUTO (dtnn's default: NCHW with --enable_gpu, else NHWC; the report
                         records the resolved format). On the GPU, NCHW trains in PyTorch's default memory
                         format and NHWC in torch.channels_last (model and inputs, the host data stored as
                         NHWC); the CPU path always computes in NCHW whatever the option says
  --self_check           (alone) build every model, check its parameter count against dtnn's (and, where
                         torchvision is installed, resnet50's against torchvision's) and its output shape

Run with Debian's PyTorch (python3-torch), e.g.:

    /usr/bin/python3 experiments/reference/torch_train.py --model=simplecnn \\
        --dataset=mnist --dataset_train_path=/usr/share/datasets/fashion-mnist \\
        --optimizer=adam --learning_rate=0.001 --batch_size=64 --num_epochs=5 \\
        --threads=1 --report=/tmp/torch_simplecnn.json

    /usr/bin/python3 experiments/reference/torch_train.py --model=resnet20_cifar10 \\
        --dataset=mnist --pad_to_cifar=True --dataset_train_path=/usr/share/datasets/fashion-mnist \\
        --optimizer=sgd --learning_rate=0.1 --batch_size=64 --num_epochs=2 --threads=2

On a GPU machine (any PyTorch with CUDA, e.g. 2.x), ResNet-50 throughput on synthetic ImageNet, strict
float32, the first epoch being warm-up (cudnn benchmark):

    python3 experiments/reference/torch_train.py --model=resnet50_imagenet --dataset=imagenet \\
        --use_synthetic_data=True --batch_size=64 --optimizer=sgd --learning_rate=0.01 \\
        --num_epochs=3 --steps_per_epoch=30 --evaluate_on_test=False --enable_gpu=True \\
        --allow_tf32=False --tensor_format=NCHW --threads=4 --report=/tmp/torch_resnet50_gpu.json

(experiments/gpu_vs_pytorch.sh runs this against `dtnn train --enable_gpu=True`.)

Exit status: 0 on success, 1 on bad data files, 2 on bad options, 3 for a model, dataset or device this
reference does not implement or this machine lacks (the dtnn runner records that run as "unsupported"), 4 when
the training loss became NaN or infinite: as dtnn, the report then says "status": "diverged" and lists the
epochs up to that one (its loss null), and no checkpoint or test pass comes from that state.
"""
import argparse
import contextlib
import functools
import json
import math as pymath  # main() has a local named math (the CUDA math settings)
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

# The models and the data live beside this script; it runs as a script (and the tests load it by path).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_data import DATASETS, DataError, TiledImages, data_shape, gather, load_data, to_nhwc  # noqa: E402
import torch_checkpoint  # noqa: E402
import torch_dist  # noqa: E402
from torch_optim import build_optimizer  # noqa: E402
from torch_models import EXPECTED_PARAMS, MODELS, build_model, count_params, model_input, self_check  # noqa: E402

BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def str2bool(text):
    if text.strip().lower() not in BOOLS:
        raise argparse.ArgumentTypeError(f"invalid boolean value '{text}'")
    return BOOLS[text.strip().lower()]


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# This reference implements only these of the table's choices (its own limitation, said at parse time).
IMPLEMENTED_CHOICES = {"optimizer": ("sgd", "adam"), "dtype": ("float32", "bfloat16")}


@functools.lru_cache(maxsize=1)
def option_table():
    """The `dtnn train` option table (engine/train/option_table.cpp) from `dtnn train --list-options --format json`:
    the one list of names, kinds, defaults, ranges and choices, of which this reference takes the rows flagged
    "torch". The binary is $DTNN_BINARY (the matrix runner sets it to itself), else build/experiments/dtnn."""
    binary = os.environ.get("DTNN_BINARY") or os.path.join(REPO, "build", "experiments", "dtnn")
    try:
        out = subprocess.run([binary, "train", "--list-options", "--format", "json"], check=True,
                             capture_output=True, text=True).stdout
        table = json.loads(out)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        fail(1, f"cannot read the option table from {binary} (set DTNN_BINARY to a dtnn binary): {e}")
    if table.get("schema") != "dtnn.train_options/1":
        fail(1, f"{binary}: unknown option table schema {table.get('schema')!r}")
    return [row for row in table["options"] if "torch" in row["flags"]]


def option_type(row):
    kind = row["kind"]
    if kind == "boolean":
        return str2bool
    if kind == "integer":
        return int
    if kind == "number":
        return float
    if kind == "choice" and "choices" in row:  # PyDTNN's scripts write Adam, nhwc: the table's case-insensitive match
        choices = row["choices"]
        return lambda text: next((c for c in choices if c.lower() == text.lower()), text)
    return str


def parse_args(argv):
    p = argparse.ArgumentParser(prog="torch_train", allow_abbrev=False,
                                description="PyTorch reference runner for dtnn (--self_check alone: check the "
                                            "models' parameter counts)")
    rows = option_table()
    for row in rows:
        default = option_type(row)(row["default"]) if row["default"] != "" else None
        p.add_argument("--" + row["name"], type=option_type(row), default=default,
                       choices=IMPLEMENTED_CHOICES.get(row["name"], row.get("choices")), metavar=row["name"].upper())
    args = p.parse_args(argv)
    for row in rows:  # the table's ranges
        value = getattr(args, row["name"])
        if "range" in row and value is not None:
            lo, hi = row["range"]
            below, above = row.get("range_open_below"), row.get("range_open_above")
            if value < lo or value > hi or (below and value == lo) or (above and value == hi):
                fail(2, f"--{row['name']}: expected a value in {'(' if below else '['}{lo}, {hi}{')' if above else ']'}, "
                        f"got {value}")
    if args.dataset_test_path is None:
        args.dataset_test_path = args.dataset_train_path
    if args.threads == 0:  # the table's 0: one thread per core
        args.threads = os.cpu_count() or 1
    if args.tensor_format.upper() == "AUTO":  # dtnn's (PyDTNN's) AUTO; the report records the resolved format
        args.tensor_format = "NCHW" if args.enable_gpu else "NHWC"
    if args.model not in MODELS:
        fail(3, f"unknown model '{args.model}' (implemented: {', '.join(MODELS)})")
    if args.dataset not in DATASETS:
        fail(2, f"unknown dataset '{args.dataset}' (implemented: {', '.join(DATASETS)})")
    if args.dataset == "imagenet" and not args.use_synthetic_data:
        fail(3, "--dataset=imagenet: this reference reads no ImageNet files (unsupported); "
                "use --use_synthetic_data=True")
    if not args.use_synthetic_data and not args.dataset_train_path:
        fail(2, "--dataset_train_path is required unless --use_synthetic_data=True")
    if args.pad_to_cifar and args.dataset != "mnist":
        fail(2, "--pad_to_cifar applies to --dataset=mnist only")
    if args.resize and (args.dataset != "mnist" or args.pad_to_cifar):
        fail(2, "--resize applies to MNIST-format images (--dataset=mnist, without --pad_to_cifar)")
    if model_input(args.model, args.resize) != data_shape(args):
        c, h, w = model_input(args.model, args.resize)
        dc, dh, dw = data_shape(args)
        fail(2, f"model {args.model} takes {h}x{w}x{c} inputs but dataset {args.dataset} gives {dh}x{dw}x{dc}"
                + (" (use --pad_to_cifar=True for MNIST)" if args.dataset == "mnist" and c == 3 else ""))
    if args.dtype == "bfloat16" and not args.enable_gpu and not cpu_has_bf16():
        fail(3, "--dtype=bfloat16: this CPU has neither AVX512-BF16 nor AMX-BF16, and the reference does not "
                "emulate bfloat16")
    if args.optimizer == "sgd" and args.nesterov and args.momentum <= 0:
        fail(2, "nesterov requires momentum > 0")
    return args


def cpu_has_bf16():
    """AVX512-BF16 or AMX-BF16 in /proc/cpuinfo's flags: what dtnn's --dtype=bfloat16 asks for (oneDNN, which
    PyTorch's CPU autocast also runs, emulates bf16 elsewhere, slower than float32)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def compute_context(args, device):
    """--dtype=bfloat16: autocast to bfloat16 (CPU: oneDNN's bf16 convolutions and GEMMs; CUDA: tensor cores),
    float32 master weights and optimizer, as dtnn's mixed precision; float32: no change."""
    if args.dtype != "bfloat16":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def fail(code, message):
    sys.stdout.flush()  # the error line starts a line of a log holding both streams
    print(f"torch_train: {message}", file=sys.stderr)
    sys.exit(code)


def backend_attr(obj, name):
    """getattr that is None for what this PyTorch lacks (torch.backends.cuda.matmul raises AssertionError
    for unknown names in 1.x)."""
    try:
        return getattr(obj, name)
    except (AttributeError, AssertionError):
        return None


def set_cuda_math(allow_tf32, benchmark):
    """TF32 on or off in both cuBLAS matmuls and cuDNN convolutions, and cudnn.benchmark. PyTorch >= 2.9
    has the fp32_precision settings (and warns on the legacy allow_tf32 flags); older ones only the flags.
    Returns what is now in force, for the report."""
    torch.backends.cudnn.benchmark = benchmark
    conv = backend_attr(torch.backends.cudnn, "conv")
    if backend_attr(torch.backends.cuda.matmul, "fp32_precision") is not None and conv is not None:
        mode = "tf32" if allow_tf32 else "ieee"
        torch.backends.cuda.matmul.fp32_precision = mode
        conv.fp32_precision = mode
        return {"matmul_tf32": torch.backends.cuda.matmul.fp32_precision == "tf32",
                "cudnn_conv_tf32": conv.fp32_precision == "tf32", "cudnn_benchmark": torch.backends.cudnn.benchmark}
    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.backends.cudnn.allow_tf32 = allow_tf32
    return {"matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_conv_tf32": torch.backends.cudnn.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark}


class Feeder:
    """Batches (x, y) on the training device. On the CPU, plain indexing. On the GPU, dtnn's input path: the
    samples are gathered in host memory into one of two pinned staging buffers and copied asynchronously
    (non_blocking=True); a buffer is reused only after its previous copy has completed (a CUDA event), so
    nothing forces a per-step synchronisation. With NHWC host data the device batch is the (N, C, H, W)
    view of the copied (N, H, W, C) block, i.e. a channels_last tensor."""

    def __init__(self, device, batch_size, sample_shape, nhwc):
        self.device, self.nhwc = device, nhwc
        if device.type == "cuda":
            self.buffers = [(torch.empty((batch_size,) + tuple(sample_shape), pin_memory=True),
                             torch.empty(batch_size, dtype=torch.int64, pin_memory=True)) for _ in range(2)]
            self.events = [None, None]
            self.next = 0

    def __call__(self, x, y, idx):
        """Samples idx (an int64 tensor, or a slice for consecutive samples) of (x, y)."""
        if self.device.type == "cpu":
            if isinstance(idx, slice) and not isinstance(x, TiledImages):
                return x[idx], y[idx]
            if isinstance(idx, slice):
                idx = torch.arange(idx.start, min(idx.stop, y.shape[0]), dtype=torch.int64)
            return gather(x, idx), y[idx]
        if isinstance(idx, slice):
            idx = torch.arange(idx.start, min(idx.stop, y.shape[0]), dtype=torch.int64)
        k, self.next = self.next, 1 - self.next
        if self.events[k] is not None:
            self.events[k].synchronize()
        n = idx.shape[0]
        xb, yb = self.buffers[k][0][:n], self.buffers[k][1][:n]
        gather(x, idx, out=xb)
        torch.index_select(y, 0, idx, out=yb)
        xd = xb.to(self.device, non_blocking=True)
        yd = yb.to(self.device, non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        self.events[k] = event
        return (xd.permute(0, 3, 1, 2) if self.nhwc else xd), yd


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# DTNN_CUDA_PROFILE_STEP=k (as for dtnn): training step k (from 0, over the run) runs alone inside the CUDA
# profiler's capture window, for `ncu --profile-from-start off` (experiments/gpu_profile.sh).
PROFILE_STEP = int(os.environ["DTNN_CUDA_PROFILE_STEP"]) if os.environ.get("DTNN_CUDA_PROFILE_STEP") else None
STEPS_RUN = [0]


def global_batch(args, world):
    """dtnn's global batch: --global_batch_size (strong scaling), else --batch_size per rank (weak)."""
    return args.global_batch_size if args.global_batch_size > 0 else args.batch_size * world.size


def train_epoch(model, optimizer, data, args, rng, feed, device, world, timer):
    """One epoch over a fresh shuffle; returns (samples, seconds, mean loss, acc %), over every rank. The sums
    stay on the device until the epoch ends. --steps_per_epoch=S trains S full global batches, wrapping over the
    shuffled order when S batches are more than the data (as dtnn's trainer does: engine/train/trainer.cpp).
    Every rank draws the same order and takes its share of each global batch as dtnn does
    (torch_dist.split_batch); a last batch smaller than the ranks takes one sample per rank, wrapping, so every
    rank steps. Each rank's loss is its samples' summed loss over the global batch times the world size, which
    DDP's mean over the ranks turns into dtnn's gradient: the global batch's mean."""
    x, y = data
    order = torch.from_numpy(rng.permutation(y.shape[0]))
    gb = global_batch(args, world)
    n_batches = (y.shape[0] + gb - 1) // gb
    if args.steps_per_epoch > 0:
        n_batches = args.steps_per_epoch
    total = n_batches * gb if args.steps_per_epoch > 0 else y.shape[0]
    model.train()
    samples = 0
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    correct = torch.zeros((), dtype=torch.int64, device=device)
    if timer:
        timer.reset()
    barrier(world, device)
    start = time.perf_counter()
    for b in range(n_batches):
        n = max(min(gb, total - b * gb), world.size)
        offset, count = torch_dist.split_batch(n, world.size, world.rank)
        first = b * gb + offset
        idx = (torch.arange(first, first + count) % y.shape[0]) if first + count > order.shape[0] else slice(first, first + count)
        xb, yb = feed(x, y, order[idx])
        profiled = PROFILE_STEP is not None and device.type == "cuda" and STEPS_RUN[0] == PROFILE_STEP
        if profiled:  # dtnn's DTNN_CUDA_PROFILE_STEP: this step alone in the profiler's window
            sync(device)
            torch.cuda.profiler.start()
        if timer:
            timer.begin_step()
        optimizer.zero_grad()
        with compute_context(args, device):
            logits = model(xb)
            if world.size == 1:
                loss = F.cross_entropy(logits, yb)
            else:
                loss = F.cross_entropy(logits, yb, reduction="sum") * (world.size / n)
        loss.backward()
        if timer:
            timer.end_backward()
        optimizer.step()
        if timer:
            timer.end_step()
        if profiled:
            sync(device)
            torch.cuda.profiler.stop()
        STEPS_RUN[0] += 1
        samples += yb.shape[0]
        loss_sum += loss.detach().double() * (n / world.size if world.size > 1 else yb.shape[0])
        correct += (logits.argmax(1) == yb).sum()
    sync(device)
    barrier(world, device)
    elapsed = time.perf_counter() - start
    samples, loss_sum, correct = all_sum(world, device, samples, loss_sum, correct)
    return samples, elapsed, loss_sum / max(samples, 1), 100.0 * correct / max(samples, 1)


def barrier(world, device):
    if world.size > 1:
        sync(device)
        torch_dist.dist.barrier()


def all_sum(world, device, samples, loss_sum, correct):
    """The epoch's (samples, loss sum, correct) over every rank, as Python numbers (outside the timed window)."""
    if world.size == 1:
        return samples, loss_sum.item(), correct.item()
    t = torch.tensor([float(samples), loss_sum.item(), float(correct.item())], dtype=torch.float64)
    torch_dist.dist.all_reduce(t)
    return int(t[0].item()), t[1].item(), int(t[2].item())


def evaluate(model, data, args, feed, device, world):
    """The whole pass, each rank its even share of the samples, the sums added over the ranks. `model` is the
    bare module, not DDP's wrapper, whose forward broadcasts buffers: ranks with shares of other batch counts
    would wait on each other."""
    x, y = data
    model.eval()
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    correct = torch.zeros((), dtype=torch.int64, device=device)
    offset, count = torch_dist.split_batch(y.shape[0], world.size, world.rank)
    barrier(world, device)
    start = time.perf_counter()
    batch_size = args.batch_size
    with torch.no_grad(), compute_context(args, device):
        for i in range(offset, offset + count, batch_size):
            xb, yb = feed(x, y, slice(i, min(i + batch_size, offset + count)))
            logits = model(xb)
            loss_sum += F.cross_entropy(logits, yb, reduction="sum").double()
            correct += (logits.argmax(1) == yb).sum()
    sync(device)
    barrier(world, device)
    elapsed = time.perf_counter() - start
    _, loss_sum, correct = all_sum(world, device, 0, loss_sum, correct)
    n = y.shape[0]
    return {"categorical_cross_entropy": loss_sum / n, "categorical_accuracy": 100.0 * correct / n,
            "samples": n, "time_s": elapsed, "samples_per_s": n / elapsed if elapsed > 0 else 0.0}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            names = [l.split(":", 1)[1].strip() for l in f if l.startswith("model name")]
    except OSError:
        names = []
    return names[0] if names else (platform.processor() or "unknown")


def gpu_environment(device, math):
    props = torch.cuda.get_device_properties(device)
    cudnn = torch.backends.cudnn.version()
    return {"gpu": props.name, "gpu_memory_gib": round(props.total_memory / 2 ** 30, 1),
            "cuda": f"CUDA {torch.version.cuda}, cuDNN {cudnn}, {props.name}", "cudnn": cudnn, **math}


def build_report(args, n_params, epochs, total_time, total_samples, test_result, gpu_env, world):
    report = {
        "schema": "dtnn.run_report/1",
        "framework": "pytorch",
        "status": "ok",
        "options": vars(args),
        "environment": {"host": socket.gethostname(), "cpu_model": cpu_model(),
                        "cores": os.cpu_count(), "python": platform.python_version(),
                        "torch": torch.__version__, "numpy": np.__version__,
                        "threads": torch.get_num_threads(), "device": "cuda:0" if gpu_env else "cpu",
                        **(gpu_env or {})},
        "model": {"name": args.model, "params": n_params,
                  "tensor_format": args.tensor_format if gpu_env else "NCHW"},
        "parallel": parallel_json(world),
        "epochs": epochs,
        "training": {"time_s": total_time, "samples": total_samples,
                     "samples_per_s": total_samples / total_time if total_time > 0 else 0.0,
                     "epochs_run": len(epochs)},
    }
    if world.options_given:
        report["options_given"] = dict(world.options_given)
    if test_result is not None:
        report["test"] = test_result
    if os.environ.get("DTNN_RUN_NONCE"):  # the runner's name for this attempt: it ingests no other report
        report["run_nonce"] = os.environ["DTNN_RUN_NONCE"]
    return report


def parallel_json(world):
    p = {"ranks": world.size, "threads": torch.get_num_threads()}
    if world.size > 1:
        p.update({"mode": "ddp", "backend": world.backend, "bucket_mb": torch_dist.BUCKET_CAP_MB,
                  "first_bucket_mb": torch_dist.FIRST_BUCKET_MB, "gradient_as_bucket_view": True})
    return p


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


def save_report(args, report, resumed):
    """--report, with the checkpoint it resumed from; a write that fails is one line and exit 1."""
    # dtnn's "start" record: this script always trains from its seeded initialization (it loads no weights
    # file), resumed sittings included, so every report it writes is one a target may judge.
    report["start"] = {"trained_from_scratch": True, "initial_weights": "", "evaluate_only": False}
    if resumed:
        report["resumed_from"] = resumed
        report["start"].update({"resumed_from": resumed["path"], "resumed_after_epoch": resumed["epoch"]})
    try:
        write_report(args.report, report)
    except OSError as e:
        fail(1, f"cannot write report {args.report}: {e.strerror or e}")


def diverged(args, n_params, epochs, epoch, samples, secs, rate, loss, optimizer, total_time, total_samples, gpu_env,
             resumed, world):
    """The loss is not finite: dtnn's diverged report (JSON has no NaN: the epoch's loss is null), exit 4."""
    lr = optimizer.param_groups[0]["lr"]
    why = (f"diverged: the training loss (categorical_cross_entropy) is {'nan' if pymath.isnan(loss) else loss} "
           f"after epoch {epoch} (learning rate {lr:g})")
    epochs = epochs + [{"epoch": epoch, "samples": samples, "time_s": secs, "samples_per_s": rate, "lr": lr,
                        "train": {"categorical_cross_entropy": None, "categorical_accuracy": None}}]
    if world.root:
        print(f"torch_train: {why}: no checkpoint or test pass from it", file=sys.stderr)
    if args.report and world.root:
        report = build_report(args, n_params, epochs, total_time, total_samples, None, gpu_env, world)
        report["status"] = "diverged"
        report["error"] = why
        save_report(args, report, resumed)
    return 4


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--self_check" in argv:
        if len(argv) != 1:
            fail(2, "--self_check takes no other options")
        return self_check()
    args = parse_args(argv)
    if args.enable_gpu and not torch.cuda.is_available():
        fail(3, f"--enable_gpu: no CUDA device available to PyTorch {torch.__version__} "
                f"(CUDA {torch.version.cuda or 'not built'}): unsupported")
    world = join_world(args)
    try:
        return run(args, world)
    finally:
        torch_dist.finish(world)


def join_world(args):
    """The launcher's ranks as one DDP world (torch_dist), with the options that depend on its size checked;
    dtnn's learning-rate rule applied (PyDTNN's: SGD's rate times the ranks under weak scaling)."""
    world = torch_dist.world_from_env()
    if world.size > 1 and (args.checkpoint_file or args.resume_from):
        fail(3, f"--checkpoint_file/--resume_from: this reference checkpoints 1 rank only ({world.size} ranks): "
                "unsupported")
    if args.global_batch_size and args.global_batch_size < world.size:
        fail(2, f"--global_batch_size={args.global_batch_size} is smaller than the {world.size} ranks")
    try:
        torch_dist.init(world, args.enable_gpu)
    except (torch_dist.SetupError, RuntimeError) as e:
        fail(1, f"cannot join the {world.size} ranks: {e}")
    if (world.size > 1 and args.optimizer == "sgd" and args.learning_rate_scaling and args.global_batch_size == 0):
        world.options_given["learning_rate"] = args.learning_rate  # the report's options are as run, as dtnn's
        args.learning_rate *= world.size
    return world


def run(args, world):
    """Trains as the options say, on this rank's share; rank 0 prints and writes the report. Returns the exit
    status."""
    device = torch.device("cuda", world.local_rank % torch.cuda.device_count()) if args.enable_gpu \
        else torch.device("cpu")
    nhwc = args.enable_gpu and args.tensor_format == "NHWC"
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    math = set_cuda_math(args.allow_tf32, args.enable_cudnn_auto_conv_alg)
    torch.manual_seed(args.seed)
    checkpoint = None
    if args.checkpoint_file and not os.path.isdir(os.path.dirname(os.path.abspath(args.checkpoint_file))):
        fail(2, f"--checkpoint_file {args.checkpoint_file}: no such directory")  # before an epoch is spent
    if args.resume_from:  # checked before the data is read: a wrong file fails at once
        try:
            checkpoint = torch_checkpoint.load(args.resume_from, args, option_table())
        except torch_checkpoint.CheckpointError as e:
            fail(1, str(e))
    try:
        train, val, test = load_data(args)
    except DataError as e:
        fail(1, str(e))
    if nhwc:
        train, val, test = [(to_nhwc(d[0]), d[1]) if d is not None else None for d in (train, val, test)]

    # On the CPU, so the initial weights do not depend on the device.
    model = build_model(args.model, model_input(args.model, args.resize))
    n_params = count_params(model)
    if not args.resize and n_params != EXPECTED_PARAMS[args.model]:  # --resize changes the FC layers' inputs
        fail(1, f"internal error: {args.model} has {n_params} parameters, dtnn's has {EXPECTED_PARAMS[args.model]}")
    if world.rank > 0:  # every rank starts from rank 0's weights (seeded alike); dropout draws its own masks
        torch.manual_seed(args.seed + 1000003 * world.rank)
    model.to(device)
    if nhwc:
        model.to(memory_format=torch.channels_last)
    optimizer = build_optimizer(args, model.parameters())
    net, timer = torch_dist.wrap(model, device, world)
    gpu_env = gpu_environment(device, math) if args.enable_gpu else None
    gb = global_batch(args, world)
    feed = Feeder(device, max(torch_dist.split_batch(gb, world.size, 0)[1], args.batch_size), train[0].shape[1:], nhwc)
    where = (f"GPU {gpu_env['gpu']} ({args.tensor_format}, TF32 {'on' if args.allow_tf32 else 'off'}, "
             f"cudnn benchmark {'on' if args.enable_cudnn_auto_conv_alg else 'off'})" if gpu_env else "CPU")
    say = print if world.root else (lambda *a, **k: None)
    ranks = f"; {world.size} ranks (DDP, {world.backend}, global batch {gb})" if world.size > 1 else ""
    say(f"Model {args.model}: {n_params} parameters; train {train[0].shape[0]} samples"
        + (f", val {val[0].shape[0]}" if val else "") + f"; {where}; {args.threads} thread(s){ranks}")

    shuffle_rng = np.random.default_rng([args.seed, 1])  # independent of the data stream
    epochs, total_time, total_samples, first = [], 0.0, 0, 1
    resumed = None
    if checkpoint:
        try:
            meta = torch_checkpoint.restore(checkpoint, model, optimizer, shuffle_rng, device)
        except torch_checkpoint.CheckpointError as e:
            fail(1, str(e))
        epochs, total_time, total_samples = meta["epochs"], meta["total_time"], meta["total_samples"]
        STEPS_RUN[0] = meta["steps_run"]
        first = meta["epoch"] + 1
        resumed = {"path": os.path.abspath(args.resume_from), "epoch": meta["epoch"], "threads": meta["threads"]}
        print(f"Resumed from {args.resume_from} after epoch {meta['epoch']}")
        if meta["threads"] != args.threads:
            print(f"torch_train: warning: {args.resume_from} was written with {meta['threads']} thread(s), this sitting "
                  f"runs {args.threads}: the result is not bit-identical to one sitting", file=sys.stderr)
    for epoch in range(first, args.num_epochs + 1):
        samples, secs, loss, acc = train_epoch(net, optimizer, train, args, shuffle_rng, feed, device, world, timer)
        total_time += secs
        total_samples += samples
        rate = samples / secs if secs > 0 else 0.0
        if not pymath.isfinite(loss):
            return diverged(args, n_params, epochs, epoch, samples, secs, rate, loss, optimizer, total_time,
                            total_samples, gpu_env, resumed, world)
        record = {"epoch": epoch, "samples": samples, "time_s": secs, "samples_per_s": rate,
                  "lr": optimizer.param_groups[0]["lr"],
                  "train": {"categorical_cross_entropy": loss, "categorical_accuracy": acc}}
        line = (f"Epoch {epoch}/{args.num_epochs}: {samples} samples, {rate:.1f} samples/s, "
                f"cce: {loss:.7f}, acc: {acc:.2f}%")
        if val is not None:
            v = evaluate(model, val, args, feed, device, world)
            record["val"] = {k: v[k] for k in ("categorical_cross_entropy", "categorical_accuracy")}
            line += f", val_cce: {v['categorical_cross_entropy']:.7f}, val_acc: {v['categorical_accuracy']:.2f}%"
        if timer:
            record["communication"] = timer.epoch_communication()
        say(line, flush=True)
        epochs.append(record)
        if args.checkpoint_file:
            try:
                torch_checkpoint.save(args.checkpoint_file, args, option_table(), epoch, model, optimizer,
                                      shuffle_rng, device, {"epochs": epochs, "total_time": total_time,
                                                            "total_samples": total_samples, "steps_run": STEPS_RUN[0]})
            except (OSError, RuntimeError) as e:  # torch's zip writer reports some I/O errors as RuntimeError
                fail(1, f"cannot write checkpoint {args.checkpoint_file}: {getattr(e, 'strerror', None) or e}")

    throughput = total_samples / total_time if total_time > 0 else 0.0
    say(f"Training time: {total_time:.3f} s")
    say(f"Training throughput: {throughput:.1f} samples/s")
    test_result = None
    if args.evaluate_on_test:
        test_result = evaluate(model, test, args, feed, device, world)
        say(f"Test: cce {test_result['categorical_cross_entropy']:.7f}, "
              f"acc {test_result['categorical_accuracy']:.2f}%")

    memory = torch_dist.gather_memory(world, device)
    if args.report and world.root:
        report = build_report(args, n_params, epochs, total_time, total_samples, test_result, gpu_env, world)
        report["memory"] = memory
        save_report(args, report, resumed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
