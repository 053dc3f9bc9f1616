#!/usr/bin/python3
"""Runs the real PyDTNN as a framework of dtnn's experiment matrix (framework = "pydtnn"), one process per rank.

    [mpirun -np R | srun -n R]  /usr/bin/python3 experiments/peers/pydtnn_peer.py --model=simplecnn \\
        --dataset=mnist --dataset_train_path=/usr/share/datasets/fashion-mnist --batch_size=64 --num_epochs=1 \\
        --optimizer=adam --learning_rate=0.001 --seed=0 --threads=1 [--parallel=data] --report=run.report.json

PyDTNN is the checkout named by $DTNN_PYDTNN, its Cython modules built in place (ci/setup_pydtnn.sh SRC [DIR]
builds one and prints the line DTNN_PYDTNN=DIR). This script imports its pydtnn.pydtnn_benchmark and calls
main() in this process with PyDTNN's options in sys.argv, its stdout and stderr shown live and captured; rank 0
then reads PyDTNN's printed figures and its history file (pydtnn_output.py) and writes --report, a JSON run
report ("dtnn.run_report/1", framework "pydtnn"; the same shape as dtnn's and experiments/reference/torch_train.py's).

Options: --name=value, under dtnn's names (`dtnn train --list-options`), which are PyDTNN's for what both have.
  * An option of PyDTNN's parser (pydtnn/parser.py) goes to PyDTNN as given; its value is checked first
    (booleans True/False/1/0/yes/no, numbers), a bad one is exit 2.
  * dtnn's own options, mapped:
      --threads=N        OMP_NUM_THREADS and OPENBLAS_NUM_THREADS = N before numpy loads (0 or not given: $OMP_NUM_THREADS,
                         else $SLURM_CPUS_PER_TASK, else the cores this rank may run on divided by the ranks of
                         its node unless the launcher already bound it); OMP_WAIT_POLICY defaults to passive
                         (PyDTNN's prange loops spin otherwise). --threads_per_process (PyDTNN's spelling) too.
      --seed=N           PyDTNN's main() always seeds random and numpy.random with 0 just before building the
                         model; here with N instead (0: exactly PyDTNN's own run).
      --global_batch_size=G  strong scaling: PyDTNN's --batch_size is per rank, so it gets G / ranks (G not a
                         multiple of the ranks: unsupported), and --learning_rate_scaling=False (dtnn does not
                         scale the lr under strong scaling). 0: --batch_size per rank.
      --evaluate_on_test (default True)  PyDTNN's --evaluate=True, which evaluates on the test set before AND
                         after training; the report's "test" is the evaluation after. --evaluate (dtnn: before
                         training) also turns it on. Both False: --evaluate=False.
      --lr_schedulers    dtnn's default is none; PyDTNN's default list writes weight files inside the timed loop
                         and PyDTNN rejects an empty list, so none/empty/not given becomes a scheduler that never
                         fires (reduce_lr_every_nepochs every 2^31-1 epochs, factor 1).
      --conv_algo        auto: PyDTNN's default (im2row + numpy matmul in NHWC, im2col in NCHW); im2row_gemm
                         (NHWC) / im2col_gemm (NCHW): the same; best_of: --enable_best_of=True; convgemm /
                         winograd_f4: --enable_conv_gemm / --enable_conv_winograd when PyDTNN finds those
                         libraries; anything else: unsupported.
      --blocking_mpi=B   --non_blocking_mpi=not B.   --mpi_processes=N  checked against the ranks (0: not checked).
      --report=PATH      this script's JSON report (rank 0, written atomically).
    Options that only tune dtnn's own implementation are accepted with any value and do not reach PyDTNN:
    --prefetch, --progress, --enable_fused_add_relu, --flush_denormals (PyDTNN computes in IEEE: no FTZ/DAZ),
    --gradient_bucket_mb / --gradient_buckets_min (with --non_blocking_mpi=True only 0: PyDTNN reduces one
    layer at a time). Those of features PyDTNN lacks are accepted at their "off" value only (else exit 3,
    unsupported): --pad_to_cifar, --resize (0), --sync_batchnorm, --allow_tf32, --gpu_layer_times, --checkpoint_file,
    --resume_from, --early_stopping_weights_filename, --model_averaging (none) and its options, --straggler_ms,
    --straggler_factor, --rank_batch_shares, --trace_steps, --crop_images (PyDTNN's is another augmentation: it
    zeroes a corner region, dtnn pads and crops), --gpus_per_node (0). Any other option: exit 3, "PyDTNN has no
    --NAME".
  * --tensor_format=NCHW on the CPU with --validation_split=0 and no --test_as_validation: unsupported (exit 3)
    when training, whatever the model; PyDTNN then validates on one empty batch after each epoch (NaN figures in
    NHWC) and its NCHW convolution fails on it after the first epoch's training.
  * Options not given take dtnn's defaults where PyDTNN's differ: --beta1=0.9 (PyDTNN: 0.99),
    --stop_at_loss_metric=categorical_cross_entropy (PyDTNN: val_accuracy), --tensor_format=AUTO (PyDTNN: NHWC;
    the same on the CPU), and --lr_schedulers, --evaluate and --dataset_test_path as below.
  * --weights_and_bias_filename=F as dtnn's: loaded before training when F exists (given to PyDTNN, whose main()
    loads it; PyDTNN would fail on a missing one), once this script has checked that F holds every array of the
    model, with its shape and finite (dtnn's rule, else exit 1; PyDTNN alone skips a missing key and takes any
    shape); after training (not diverged) rank 0 stores the trained weights to F, atomically, as PyDTNN's own
    store_weights_and_bias would (Model.load_store_path's `{layer.id}_{Layer}_{var}` keys, np.savez_compressed;
    PyDTNN itself never stores after training). The model is the one main() builds through the seeded Model().
    Arrays keep --tensor_format's layout, as dtnn's do: conv weights (ci, kh, kw, co) in NHWC, (co, ci, kh, kw)
    in NCHW, and an FC after a Flatten of C > 1 channels has (h, w, c) or (c, h, w) rows (same shape, so a file
    of the other format is refused only where a conv's shape differs). --evaluate_only=True (PyDTNN's: one
    evaluation, reported as "test"; nothing stored) needs an F that exists (else exit 2).
  * --model must be one of PyDTNN's (pydtnn/models/NAME.py), --dataset mnist, cifar10 or imagenet.

Data: PyDTNN reads raw IDX files (mnist) and CIFAR-10's binary files (data_batch_{1..5}.bin, test_batch.bin).
  * mnist: a folder holding only the .gz files (dtnn's and Debian's) is decompressed once into
    ${XDG_CACHE_HOME:-~/.cache}/dtnn/pydtnn-data/<sha256 of the folder's absolute path>/ (each file written to a
    temporary name and renamed, so ranks may do it at once; redone when the .gz changes).
  * --dataset_test_path defaults to --dataset_train_path (dtnn's rule; PyDTNN's default is its own MNIST).
  * --use_synthetic_data=True on mnist or cifar10: PyDTNN's synthetic data is all zeros, and on CIFAR-10 its
    per-channel standardisation divides by a zero deviation (NaN inputs); instead this script writes data
    files of random bytes and uniform labels, seeded by --seed, into the cache folder (synthetic-<dataset>-seed<N>)
    and runs PyDTNN on them as real data. On imagenet PyDTNN's own synthetic data is used (zeros, no NaN).

The report: "options" (as given, plus "pydtnn_argv": the exact argv PyDTNN ran with), "environment", "model"
{name, params (PyDTNN's model table), tensor_format}, "parallel" {ranks (MPI's world), threads, mode,
batch_size per rank, global_batch_size}, "epochs" (per epoch: samples from PyDTNN's progress bar, loss and
accuracy from its history file; time_s timed here on rank 0 from the epoch's start to its last batch's end,
through a scheduler hook that runs first in PyDTNN's list), "training" {time_s: PyDTNN's "Training time"
(rank 0's wall time between barriers), samples (those trained), samples_per_s: PyDTNN's printed "Training
throughput" (which counts training + validation samples), epochs_run}, "test" (the evaluation after
training), "start", "run_nonce" ($DTNN_RUN_NONCE). Accuracies are percentages, as dtnn's.

Exit status: 0 done; 1 PyDTNN failed (`pydtnn_peer: PyDTNN failed: ...` after its last lines of output), its
output lacked a figure (`pydtnn_peer: cannot read PyDTNN's output: ...`) or data files are missing; 2 bad
options; 3 unsupported (no PyDTNN at $DTNN_PYDTNN, or an option, model or dataset PyDTNN lacks); 4 the training
loss became NaN or infinite (training stops after that epoch; the report says "status": "diverged").
"""
import gzip
import hashlib
import io
import json
import math
import os
import platform
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pydtnn_output as out  # noqa: E402

BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
NEVER = 2 ** 31 - 1  # epochs of the scheduler that never fires
# dtnn's options that do not reach PyDTNN. "any": every value accepted (tunes dtnn only); else the values
# accepted (what PyDTNN does anyway), anything else being unsupported.
DTNN_ONLY = {
    "prefetch": "any", "progress": "any", "enable_fused_add_relu": "any", "flush_denormals": "any",
    "pad_to_cifar": ("false",), "resize": ("0",), "sync_batchnorm": ("false",), "allow_tf32": ("false",),
    "gpu_layer_times": ("false",), "checkpoint_file": ("",), "resume_from": ("",),
    "early_stopping_weights_filename": ("",), "model_averaging": ("none",), "straggler_ms": ("",),
    "straggler_factor": ("",), "rank_batch_shares": ("",), "trace_steps": ("",), "gpus_per_node": ("0",),
}
# dtnn's defaults where PyDTNN's parser has others (given to PyDTNN when the option is not given).
DTNN_DEFAULTS = {"beta1": "0.9", "stop_at_loss_metric": "categorical_cross_entropy", "tensor_format": "AUTO"}
MODEL_AVERAGING_OPTIONS = ("average_every_epochs", "average_every_steps", "average_optimizer_state",
                           "average_bn_statistics", "blocks_per_worker", "shuffle_blocks", "shuffle_block_data",
                           "num_batches_per_worker", "dynamic_blocks")
OWN = ("threads", "threads_per_process", "seed", "global_batch_size", "evaluate_on_test", "evaluate", "report",
       "conv_algo", "blocking_mpi", "mpi_processes", "gradient_bucket_mb", "gradient_buckets_min",
       "crop_images_padding", "lr_schedulers", "history_file", "dataset_train_path", "dataset_test_path",
       "use_synthetic_data", "batch_size", "parallel", "model", "dataset", "loss_func", "weights_and_bias_filename")
MNIST_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
CIFAR_FILES = {"train": tuple(f"data_batch_{b}.bin" for b in range(1, 6)), "test": ("test_batch.bin",)}


class Exit(Exception):
    """Leave with this status after printing `pydtnn_peer: <message>` (rank 0 of a launch prints it)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def env_rank():
    for name in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def env_world_size():
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 1


# ---- options -----------------------------------------------------------------------------------------------

def parse_cli(argv):
    """--name=value arguments as an ordered {name: value} (a repeated name: the last one)."""
    opts = {}
    for arg in argv:
        if not arg.startswith("--") or "=" not in arg:
            raise Exit(2, f"expected --name=value, got {arg!r}")
        name, value = arg[2:].split("=", 1)
        opts[name] = value
    return opts


def boolean(opts, name, default):
    if name not in opts:
        return default
    value = opts[name].strip().lower()
    if value not in BOOLS:
        raise Exit(2, f"--{name}: expected True or False, got {opts[name]!r}")
    return BOOLS[value]


def integer(opts, name, default, lo=0):
    if name not in opts:
        return default
    try:
        value = int(opts[name])
    except ValueError:
        raise Exit(2, f"--{name}: expected an integer, got {opts[name]!r}") from None
    if value < lo:
        raise Exit(2, f"--{name}: expected an integer >= {lo}, got {value}")
    return value


def env_int(name):
    """$name as a positive integer, else 0."""
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else 0


def set_threads(opts):
    """--threads (or --threads_per_process) into the environment numpy, OpenBLAS and PyDTNN read; returns it."""
    n = integer(opts, "threads", 0) or integer(opts, "threads_per_process", 0)
    if n == 0:
        n = env_int("OMP_NUM_THREADS") or env_int("SLURM_CPUS_PER_TASK")
    if n == 0:
        cores = len(os.sched_getaffinity(0))
        local = env_int("OMPI_COMM_WORLD_LOCAL_SIZE") or env_int("MPI_LOCALNRANKS") or 1
        bound = cores < (os.cpu_count() or cores)  # the launcher already gave this rank its share
        n = max(1, cores if bound else cores // max(local, 1))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    return n


def check_dtnn_only(opts):
    """dtnn's own options: accepted where PyDTNN does the same anyway, else unsupported."""
    for name, accepted in DTNN_ONLY.items():
        if name in opts and accepted != "any" and opts[name].strip().lower() not in accepted:
            raise Exit(3, f"unsupported: PyDTNN has no --{name}={opts[name]} (only {accepted[0] or 'empty'})")
    for name in ("prefetch", "progress", "enable_fused_add_relu", "flush_denormals"):
        boolean(opts, name, False)
    if opts.get("dtype", "float32").strip().lower() in ("bfloat16", "float16"):
        raise Exit(3, f"unsupported: PyDTNN has no mixed precision (--dtype={opts['dtype']}: it computes in its "
                      "--dtype, float32 or float64, throughout)")
    if boolean(opts, "crop_images", False):
        raise Exit(3, "unsupported: PyDTNN's --crop_images is another augmentation (it zeroes a corner region and "
                      "rolls the image), not dtnn's pad-and-crop")
    if boolean(opts, "non_blocking_mpi", False) or not boolean(opts, "blocking_mpi", True):
        if opts.get("gradient_bucket_mb", "0").strip() not in ("0", "0.0", ""):
            raise Exit(3, "unsupported: PyDTNN has no --gradient_bucket_mb (it reduces one layer at a time: 0)")


def check_empty_validation(opts):
    """PyDTNN without validation data still runs a validation pass of one empty batch after every epoch (NaN
    figures in NHWC); its CPU NCHW convolution fails on it after the first epoch: refused before training."""
    nchw = opts.get("tensor_format", "AUTO").upper() == "NCHW" and not boolean(opts, "enable_gpu", False)
    try:
        split = float(opts.get("validation_split", "0"))
    except ValueError:
        raise Exit(2, f"--validation_split: expected a number, got {opts['validation_split']!r}") from None
    if nchw and split == 0 and not boolean(opts, "test_as_validation", False) and \
            not boolean(opts, "evaluate_only", False) and integer(opts, "num_epochs", 1) > 0:
        raise Exit(3, "unsupported: PyDTNN's CPU NCHW convolution fails on the empty validation batch it runs "
                      "with --validation_split=0 (give --test_as_validation=True or a validation split)")


def conv_algo_argv(opts):
    """--conv_algo as PyDTNN's options."""
    algo = opts.get("conv_algo", "auto").removeprefix("cpu.")
    nchw = opts.get("tensor_format", "AUTO").upper() == "NCHW"
    if algo == "auto" or algo == ("im2col_gemm" if nchw else "im2row_gemm"):
        return []
    if algo == "best_of":
        return ["--enable_best_of=True"]
    flag = {"convgemm": "enable_conv_gemm", "winograd_f4": "enable_conv_winograd"}.get(algo)
    if flag is None:
        raise Exit(3, f"unsupported: PyDTNN has no --conv_algo={opts['conv_algo']} (it has auto, "
                      f"{'im2col_gemm' if nchw else 'im2row_gemm'}, best_of, convgemm, winograd_f4)")
    return [f"--{flag}=True"]


def check_value(action, name, value):
    """A value for one of PyDTNN's parser options, checked and spelled for it."""
    if action.type is not None and getattr(action.type, "__name__", "") == "bool_lambda":
        if value.strip().lower() not in BOOLS:
            raise Exit(2, f"--{name}: expected True or False, got {value!r}")
        return "True" if BOOLS[value.strip().lower()] else "False"
    if action.type is not None:
        try:
            action.type(value)
        except Exception:  # noqa: BLE001 (int, float, PyDTNN's np_dtype: ValueError, AttributeError)
            what = {int: "an integer", float: "a number"}.get(action.type, "a value PyDTNN takes")
            raise Exit(2, f"--{name}: expected {what}, got {value!r}") from None
    return value


def parser_actions(parser):
    return {opt[2:]: a for a in parser._actions for opt in a.option_strings if opt.startswith("--")}


def passthrough_argv(opts, parser):
    """The options that go to PyDTNN as given (checked against its parser), and the rest refused."""
    actions, argv = parser_actions(parser), []
    averaging = opts.get("model_averaging", "none") != "none"
    for name, value in opts.items():
        if name in OWN or name in DTNN_ONLY or (name in MODEL_AVERAGING_OPTIONS and not averaging):
            continue
        if name not in actions:
            raise Exit(3, f"unsupported: PyDTNN has no --{name}")
        argv.append(f"--{name}={check_value(actions[name], name, value)}")
    return argv


def loss_and_metrics(opts):
    """(loss, [metrics]) checked against PyDTNN's; dtnn's older "metric,...,loss" form split."""
    from pydtnn import losses, metrics
    items = [x for x in opts.get("loss_func", "categorical_cross_entropy").replace(" ", "").split(",") if x]
    found = [x for x in items if isinstance(getattr(losses, x, None), type)]
    if len(found) != 1:
        raise Exit(2, f"--loss_func: expected one of PyDTNN's losses, got {opts.get('loss_func')!r}")
    names = [x for x in items if x != found[0]] + \
        [x for x in opts.get("metrics", "categorical_accuracy").replace(" ", "").split(",") if x]
    names = list(dict.fromkeys(names))
    for m in names:
        if not isinstance(getattr(metrics, m, None), type):
            raise Exit(2, f"--metrics: PyDTNN has no metric {m!r}")
    return found[0], names


# ---- PyDTNN -------------------------------------------------------------------------------------------------

def locate_pydtnn():
    """$DTNN_PYDTNN, checked to be a PyDTNN checkout with built Cython modules, put first on sys.path."""
    path = os.environ.get("DTNN_PYDTNN", "")
    hint = "set DTNN_PYDTNN to a checkout built by ci/setup_pydtnn.sh SRC [DIR]"
    if not path:
        raise Exit(3, f"unsupported: DTNN_PYDTNN is not set ({hint})")
    path = os.path.abspath(path)
    if not os.path.isfile(os.path.join(path, "pydtnn", "pydtnn_benchmark.py")):
        raise Exit(3, f"unsupported: DTNN_PYDTNN={path} is not a PyDTNN checkout ({hint})")
    pyx = [f[:-4] for f in os.listdir(os.path.join(path, "pydtnn", "cython_modules")) if f.endswith(".pyx")]
    built = {f.split(".")[0] for f in os.listdir(path) if f.endswith(".so")}
    if not pyx or not set(pyx) <= built:
        raise Exit(3, f"unsupported: DTNN_PYDTNN={path}: PyDTNN's Cython modules are not built ({hint})")
    sys.path.insert(0, path)
    return path


def check_model_and_dataset(opts, path):
    model, dataset = opts.get("model", "simplecnn"), opts.get("dataset", "mnist")
    if not os.path.isfile(os.path.join(path, "pydtnn", "models", model + ".py")):
        raise Exit(3, f"unsupported: PyDTNN has no model {model}")
    if dataset not in ("mnist", "cifar10", "imagenet"):
        raise Exit(3, f"unsupported: PyDTNN has no dataset {dataset} (it has mnist, cifar10, imagenet)")


def check_libraries(argv):
    from pydtnn.backends.cpu import libs
    for flag, available in (("enable_conv_gemm", libs.is_conv_gemm_available),
                            ("enable_conv_winograd", libs.is_conv_winograd_available)):
        if f"--{flag}=True" in argv and not available:
            raise Exit(3, f"unsupported: --{flag}: PyDTNN did not find its library (libconvGemm / "
                          "libconvwinograd are not packaged)")
    if "--enable_gpu=True" in argv:
        import importlib.util
        if importlib.util.find_spec("pycuda") is None:
            raise Exit(3, "unsupported: --enable_gpu=True: PyDTNN needs pycuda, skcuda and cuDNN")


# ---- data ---------------------------------------------------------------------------------------------------

def cache_root():
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dtnn", "pydtnn-data")


def write_atomically(path, write):
    """write(file) into a temporary file beside path, then rename it over path (concurrent writers are safe)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600: the cache is readable as a plain file would be
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def raw_idx_folder(folder, names):
    """A folder holding the raw IDX files `names`: `folder` itself, or the cache folder they are
    decompressed into from folder/NAME.gz (again only when the .gz changed)."""
    folder = os.path.abspath(folder)
    if all(os.path.isfile(os.path.join(folder, n)) for n in names):
        return folder
    cache = os.path.join(cache_root(), hashlib.sha256(folder.encode()).hexdigest()[:32])
    for n in names:
        gz = os.path.join(folder, n + ".gz")
        if not os.path.isfile(gz):
            raise Exit(1, f"{folder} has neither {n} nor {n}.gz")
        st = os.stat(gz)
        stamp = f"{gz} {st.st_size} {st.st_mtime_ns}".encode()
        stamp_path = os.path.join(cache, n + ".source")
        if os.path.isfile(os.path.join(cache, n)) and os.path.isfile(stamp_path) and \
                open(stamp_path, "rb").read() == stamp:
            continue
        try:
            with gzip.open(gz, "rb") as src:
                write_atomically(os.path.join(cache, n), lambda f: f.write(src.read()))
        except (OSError, EOFError) as e:
            raise Exit(1, f"cannot decompress {gz}: {e}") from None
        write_atomically(stamp_path, lambda f: f.write(stamp))
    return cache


def synthetic_folder(dataset, seed):
    """Random-byte data files of the dataset's format (uniform labels), seeded, written once into the cache."""
    import numpy as np
    folder = os.path.join(cache_root(), f"synthetic-{dataset}-seed{seed}")
    if os.path.isfile(os.path.join(folder, ".complete")):
        return folder
    rng = np.random.default_rng([seed, 0x5d])
    if dataset == "mnist":
        for (images, labels), n in ((MNIST_FILES["train"], 60000), (MNIST_FILES["test"], 10000)):
            head = np.array([0x803, n, 28, 28], dtype=">u4").tobytes()
            data = rng.integers(0, 256, size=n * 784, dtype=np.uint8).tobytes()
            write_atomically(os.path.join(folder, images), lambda f: f.write(head + data))
            head = np.array([0x801, n], dtype=">u4").tobytes()
            data = rng.integers(0, 10, size=n, dtype=np.uint8).tobytes()
            write_atomically(os.path.join(folder, labels), lambda f: f.write(head + data))
    else:
        for name in CIFAR_FILES["train"] + CIFAR_FILES["test"]:
            rows = rng.integers(0, 256, size=(10000, 3073), dtype=np.uint8)
            rows[:, 0] = rng.integers(0, 10, size=10000, dtype=np.uint8)
            write_atomically(os.path.join(folder, name), lambda f: f.write(rows.tobytes()))
    write_atomically(os.path.join(folder, ".complete"), lambda f: f.write(b""))
    return folder


def data_argv(opts, seed):
    """PyDTNN's data options: (argv, the report's "data" record)."""
    dataset = opts.get("dataset", "mnist")
    synthetic = boolean(opts, "use_synthetic_data", False)
    train, test = opts.get("dataset_train_path", ""), opts.get("dataset_test_path", "")
    if synthetic and dataset in ("mnist", "cifar10"):
        folder = synthetic_folder(dataset, seed)
        return ([f"--dataset_train_path={folder}", f"--dataset_test_path={folder}"],
                {"synthetic": f"random bytes and uniform labels (seed {seed}) in {dataset}'s file format",
                 "train_path": folder, "test_path": folder})
    if synthetic:
        return ["--use_synthetic_data=True"], {"synthetic": "PyDTNN's own (all-zero images)"}
    if not train:
        raise Exit(2, "--dataset_train_path is required unless --use_synthetic_data=True")
    test = test or train
    if dataset == "mnist":
        train, test = raw_idx_folder(train, MNIST_FILES["train"]), raw_idx_folder(test, MNIST_FILES["test"])
    elif dataset == "cifar10":
        for folder, names in ((train, CIFAR_FILES["train"]), (test, CIFAR_FILES["test"])):
            missing = [n for n in names if not os.path.isfile(os.path.join(folder, n))]
            if missing:
                raise Exit(1, f"{folder} has no {missing[0]} (CIFAR-10's binary version)")
    return [f"--dataset_train_path={train}", f"--dataset_test_path={test}"], {"train_path": train, "test_path": test}


# ---- running PyDTNN -----------------------------------------------------------------------------------------

class Tee(io.TextIOBase):
    """A stream that writes to the original one (live) and appends to a shared capture list."""

    def __init__(self, stream, capture):
        self.stream, self.capture = stream, capture

    def write(self, text):
        self.capture.append(text)
        self.stream.write(text)
        return len(text)

    def flush(self):
        self.stream.flush()

    def isatty(self):
        return self.stream.isatty()

    def fileno(self):
        return self.stream.fileno()


def recorder_class():
    """A scheduler put first in PyDTNN's list: per epoch, the lr in force and the time from the epoch's start to
    its last batch's end; it stops training (PyDTNN's stop_training) once the training loss is not finite."""
    from pydtnn.lr_schedulers import LRScheduler

    class Recorder(LRScheduler):
        def __init__(self):
            super().__init__()
            self.epochs, self.start, self.last, self.stop_training = [], 0.0, 0.0, False
            self.memory = None  # every rank's peak resident bytes after the last epoch (peak_rss_ranks)
            self.model = None  # the Model main() built (hook_pydtnn)

        def on_epoch_begin(self, *args):
            self.start = self.last = time.perf_counter()

        def on_batch_end(self, *args):
            self.last = time.perf_counter()

        def on_epoch_end(self, model, optimizer, loss_metrics, train_loss, val_loss, rank):
            loss = float(train_loss[0])
            self.epochs.append({"time_s": self.last - self.start, "lr": float(optimizer.learning_rate),
                                "loss": loss})
            self.stop_training = not math.isfinite(loss)
            self.memory = peak_rss_ranks()  # every rank runs this hook after every epoch: a collective is safe

    return Recorder()


def hook_pydtnn(bench, seed):
    """PyDTNN's main() with the seed and the recorder: Model() seeded with `seed` (main seeds 0 just before
    it), the model kept as recorder.model with its weights file checked before it loads one (check_weights),
    the recorder first in the schedulers main() builds. Returns the recorder."""
    import random

    import numpy as np
    recorder, model_class, get_schedulers = recorder_class(), bench.Model, bench.get_lr_schedulers

    def seeded_model(**kwargs):
        random.seed(seed)
        np.random.seed(seed if seed < 2 ** 32 else [seed & 0xFFFFFFFF, seed >> 32])
        model = recorder.model = model_class(**kwargs)
        load = model.load_weights_and_bias
        model.load_weights_and_bias = lambda path: (check_weights(model, path), load(path))
        return model

    bench.Model = seeded_model
    bench.get_lr_schedulers = lambda model: [recorder] + get_schedulers(model)
    return recorder


def weight_arrays(model):
    """{key: array} of the model in PyDTNN's own format (Model.load_store_path: `{layer.id}_{Layer}_{var}`
    for every trainable array and BatchNormalization's running_mean / running_var; the arrays themselves)."""
    arrays = {}
    model.load_store_path(model.layers, arrays, "store")
    return arrays


def check_weights(model, path):
    """dtnn's rule before loading: every array the model has is in the file with its shape, all finite
    (PyDTNN alone skips a missing key with a message and takes an array of any shape); else exit 1."""
    import numpy as np
    with np.load(path) as d:
        for key, value in weight_arrays(model).items():
            if key not in d:
                raise Exit(1, f"{path}: no array '{key}' for model {model.model_name}")
            if d[key].shape != value.shape:
                raise Exit(1, f"{path}: array '{key}' has shape {d[key].shape}, the model needs {value.shape}")
            if not np.isfinite(d[key]).all():
                raise Exit(1, f"{path}: array '{key}' holds a NaN or an infinity: weights must be finite")


def store_weights(model, path):
    """The trained weights into path as PyDTNN's store_weights_and_bias writes them (np.savez_compressed of
    weight_arrays), atomically (PyDTNN's own writes only with --shared_storage, in place, adding .npz)."""
    import numpy as np
    arrays = {k: np.asarray(v) for k, v in weight_arrays(model).items()}
    try:
        write_atomically(os.path.abspath(path), lambda f: np.savez_compressed(f, **arrays))
    except OSError as e:
        raise Exit(1, f"cannot write weights {path}: {e.strerror or e}") from None


def run_pydtnn(argv, seed):
    """PyDTNN's main() in this process with sys.argv = argv, output tee'd: (captured text, recorder, error or
    None)."""
    from pydtnn import pydtnn_benchmark as bench
    recorder = hook_pydtnn(bench, seed)
    capture, saved = [], (sys.stdout, sys.stderr, sys.argv)
    sys.stdout, sys.stderr = Tee(sys.stdout, capture), Tee(sys.stderr, capture)
    sys.argv, error = ["pydtnn_benchmark"] + argv, None
    try:
        bench.main()
    except SystemExit as e:
        if e.code not in (0, None):
            error = f"it exited with status {e.code}"
    except Exit:  # check_weights' refusal
        raise
    except Exception as e:  # noqa: BLE001 (any PyDTNN failure is reported, not raised)
        error = f"{type(e).__name__}: {e}".splitlines()[0]
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr, sys.argv = saved
    return "".join(capture), recorder, error


def failed(text, error):
    """PyDTNN's failure: its last lines of output, then the one line saying why (exit 1)."""
    lines = [l for l in out.lines_of(text) if l.strip()]
    traceback_last = next((l for l in reversed(lines) if not l.startswith(" ") and "Error" in l), None)
    print("\n".join(lines[-15:]), file=sys.stderr)
    raise Exit(1, f"PyDTNN failed: {traceback_last if error.startswith('it exited') and traceback_last else error}")


# ---- the report ---------------------------------------------------------------------------------------------

def figures(row, names, prefix=""):
    return {n: (row[prefix + n] if out.finite(row.get(prefix + n)) else None) for n in names}


def epoch_records(text, history_text, names, recorder, time_per_epoch):
    """The report's epochs and the index of the first diverged one (None): the history file's figures, the
    progress bars' sample counts, the recorder's lr and times."""
    rows = out.parse_history(history_text, out.history_keys(names[0], names[1:]))
    bars = {b["epoch"]: b for b in out.parse_epoch_bars(text, names)}
    records, diverged = [], None
    for i, row in enumerate(rows):
        if row["epoch"] not in bars:
            raise out.OutputError(f"no progress bar for epoch {row['epoch']}")
        seen = recorder.epochs[i] if i < len(recorder.epochs) else {}
        secs = seen.get("time_s", time_per_epoch)
        samples = bars[row["epoch"]]["samples"]
        record = {"epoch": row["epoch"], "samples": samples, "time_s": secs,
                  "samples_per_s": samples / secs if secs > 0 else 0.0, "lr": seen.get("lr"),
                  "train": figures(row, names)}
        if any(out.finite(row.get("val_" + n)) for n in names):
            record["val"] = figures(row, names, "val_")
        records.append(record)
        if not out.finite(row[names[0]]):  # as dtnn: the diverged epoch's figures are null
            record["train"] = {n: None for n in names}
            diverged = i
            break
    return records, diverged


def test_record(text, names):
    """The evaluation after training: the last completed Testing bar, timed by PyDTNN's Testing time line."""
    last = out.parse_test_bars(text, names)[-1]
    timing = out.parse_testing_time(text)
    if timing is None:
        raise out.OutputError("no 'Testing time' line after the evaluation")
    if names[0] not in last:
        raise out.OutputError(f"the last Testing bar has no {names[0]}")
    return {**{n: last.get(n) for n in names}, "samples": last["samples"], **timing}


def environment(path, threads, mpi):
    import numpy as np
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), platform.processor())
    except OSError:
        cpu = platform.processor()
    from pydtnn.version import __version__
    env = {"host": socket.gethostname(), "cpu_model": cpu or "unknown", "cores": os.cpu_count(),
           "python": platform.python_version(), "numpy": np.__version__, "pydtnn": __version__,
           "pydtnn_path": path, "threads": threads, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
           "flush_denormals": False, "device": "cpu"}
    if mpi is not None:
        env["mpi"] = mpi.Get_library_version().replace("\x00", "").splitlines()[0].strip()
    return env


def base_report(run, records):
    o = run["opts"]
    report = {
        "schema": "dtnn.run_report/1", "framework": "pydtnn", "status": "ok",
        "options": {**o, "pydtnn_argv": run["argv"]},
        "environment": run["environment"],
        "model": {"name": o.get("model", "simplecnn"), "params": out.parse_params(run["text"]),
                  "tensor_format": run["tensor_format"]},
        "parallel": {"ranks": run["ranks"], "threads": run["threads"], "mode": o.get("parallel", "sequential"),
                     "model_averaging": "none", "batch_size": run["batch_size"],
                     "global_batch_size": run["batch_size"] * run["ranks"]},
        "data": run["data"],
        "epochs": records,
        "start": {"trained_from_scratch": not run["weights"], "initial_weights": run["weights"],
                  "evaluate_only": run["evaluate_only"]},
    }
    if os.environ.get("DTNN_RUN_NONCE"):
        report["run_nonce"] = os.environ["DTNN_RUN_NONCE"]
    return report


def build_report(run):
    """The run report from PyDTNN's output (run["text"]), history file and the recorder; (report, exit code)."""
    names, text = run["names"], run["text"]
    if run["evaluate_only"]:
        report = base_report(run, [])
        report["training"] = {"time_s": 0.0, "samples": 0, "samples_per_s": 0.0, "epochs_run": 0}
        report["test"] = test_record(text, names)
        return report, 0
    epochs_run = sum(1 for line in run["history"].splitlines() if line.strip())
    if epochs_run == 0:
        records, diverged, training = [], None, {"time_s": out.parse_training_time(text), "samples_per_s": 0.0}
    else:
        training = out.parse_training(text)
        records, diverged = epoch_records(text, run["history"], names, run["recorder"], training["time_per_epoch_s"])
    report = base_report(run, records)
    report["training"] = {"time_s": training["time_s"], "samples": sum(r["samples"] for r in records),
                          "samples_per_s": training["samples_per_s"], "epochs_run": len(records)}
    if diverged is not None:
        r = records[diverged]
        loss = r["train"][names[0]]
        report["status"] = "diverged"
        report["error"] = (f"diverged: the training loss ({names[0]}) is {'nan' if loss is None else loss} after "
                           f"epoch {r['epoch']} (learning rate {r['lr']:g}); PyDTNN stopped after it")
        return report, 4
    if run["evaluate_on_test"]:
        report["test"] = test_record(text, names)
    return report, 0


def write_report(path, report):
    """Atomically: a temporary file beside it, then os.replace."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".pydtnn_peer.", suffix=".json.tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(report, f, indent=2, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# ---- main ---------------------------------------------------------------------------------------------------

def translate(opts, path, parser):
    """The PyDTNN argv for the options, but the batch size and the data paths (they need the ranks and the data
    folders); refuses what PyDTNN lacks. Returns (argv, settings)."""
    check_model_and_dataset(opts, path)
    check_dtnn_only(opts)
    check_empty_validation(opts)
    if "blocking_mpi" in opts and "non_blocking_mpi" in opts and \
            boolean(opts, "blocking_mpi", True) == boolean(opts, "non_blocking_mpi", False):
        raise Exit(2, "--blocking_mpi and --non_blocking_mpi contradict each other")
    loss, metrics = loss_and_metrics(opts)
    given_lrs = opts.get("lr_schedulers", "").strip()
    evaluate_on_test = boolean(opts, "evaluate_on_test", True)
    argv = [f"--model={opts.get('model', 'simplecnn')}", f"--dataset={opts.get('dataset', 'mnist')}",
            f"--loss_func={loss}", f"--metrics={','.join(metrics)}",
            f"--evaluate={evaluate_on_test or boolean(opts, 'evaluate', False)}"]
    argv += [f"--{k}={v}" for k, v in DTNN_DEFAULTS.items() if k not in opts]
    argv += passthrough_argv({k: v for k, v in opts.items() if k not in ("metrics", "parallel")}, parser)
    argv += conv_algo_argv(opts)
    if "blocking_mpi" in opts:
        argv.append(f"--non_blocking_mpi={not boolean(opts, 'blocking_mpi', True)}")
    if given_lrs and given_lrs != "none":
        argv.append(f"--lr_schedulers={check_value(parser_actions(parser)['lr_schedulers'], 'lr_schedulers', given_lrs)}")
    else:
        argv += ["--lr_schedulers=reduce_lr_every_nepochs", f"--reduce_lr_every_nepochs_nepochs={NEVER}",
                 "--reduce_lr_every_nepochs_factor=1.0"]
    parallel = opts.get("parallel", "sequential")
    if parallel not in ("sequential", "data"):
        raise Exit(2, f"--parallel: expected sequential or data, got {parallel!r}")
    argv.append(f"--parallel={parallel}")
    settings = {"names": [loss] + metrics, "evaluate_on_test": evaluate_on_test, "parallel": parallel,
                "seed": integer(opts, "seed", 0), "global_batch_size": integer(opts, "global_batch_size", 0),
                "batch_size": integer(opts, "batch_size", 64, lo=1),
                "evaluate_only": boolean(opts, "evaluate_only", False),
                "weights": ""}
    weights = settings["weights_file"] = opts.get("weights_and_bias_filename", "")
    if weights and os.path.isfile(weights):  # dtnn loads it when it exists; PyDTNN would fail on a missing one
        argv.append(f"--weights_and_bias_filename={weights}")
        settings["weights"] = os.path.abspath(weights)
    if settings["evaluate_only"] and not settings["weights"]:
        raise Exit(2, "--evaluate_only needs the weights to evaluate (--weights_and_bias_filename of a file that "
                      "exists)" + (f": {weights} does not exist" if weights else ""))
    return argv, settings


def start_mpi(parallel, opts):
    """(MPI module or None, rank, ranks): the MPI world for --parallel=data."""
    if parallel != "data":
        if env_world_size() > 1:
            raise Exit(2, f"{env_world_size()} ranks were started but --parallel=sequential (use --parallel=data)")
        if integer(opts, "mpi_processes", 0) > 1:
            raise Exit(2, f"--mpi_processes={opts['mpi_processes']} but --parallel=sequential runs 1 rank")
        return None, 0, 1
    from mpi4py import MPI
    rank, ranks = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    wanted = integer(opts, "mpi_processes", 0)
    if wanted and wanted != ranks:
        raise Exit(2, f"--mpi_processes={wanted} but {ranks} ranks were started")
    return MPI, rank, ranks


def peak_rss():
    """This process's peak resident memory in bytes (getrusage: KiB on Linux; PyDTNN trains in this process)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def peak_rss_ranks():
    """Every rank's peak resident memory, gathered over MPI while the ranks train together (PyDTNN finalizes MPI
    when its run ends, so the recorder gathers after each epoch); this rank's alone otherwise. Never the import
    that would start MPI in a sequential run."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized() and mpi.COMM_WORLD.Get_size() > 1:
        return mpi.COMM_WORLD.allgather(peak_rss())
    return [peak_rss()]


def memory_record(recorder):
    """dtnn's "memory" record: the ranks' peaks as of the last epoch's end, rank 0's (this process's) up to now."""
    ranks = list(recorder.memory or [peak_rss()])
    ranks[0] = max(ranks[0], peak_rss())
    return {"peak_rss_bytes": ranks, "peak_rss_bytes_max": max(ranks)}


def batch_argv(settings, ranks):
    """Per-rank --batch_size (strong scaling: the global batch / ranks, without lr scaling)."""
    g = settings["global_batch_size"]
    if g == 0:
        return [f"--batch_size={settings['batch_size']}"], settings["batch_size"]
    if g % ranks:
        raise Exit(3, f"unsupported: --global_batch_size={g} is not a multiple of the {ranks} ranks "
                      "(PyDTNN's batch is per rank)")
    return [f"--batch_size={g // ranks}", "--learning_rate_scaling=False"], g // ranks


def run(opts):
    """One rank's run; returns the exit status (raises Exit for the refusals and failures)."""
    threads = set_threads(opts)
    path = locate_pydtnn()
    from pydtnn.parser import parser
    argv, settings = translate(opts, path, parser)
    check_libraries(argv)
    mpi, rank, ranks = start_mpi(settings["parallel"], opts)
    more, batch = batch_argv(settings, ranks)
    data, data_record = data_argv(opts, settings["seed"])
    with tempfile.TemporaryDirectory(prefix="pydtnn_peer.") as tmp:
        history = opts.get("history_file") or os.path.join(tmp, "history.txt")
        argv = argv + more + data + [f"--history_file={history}"]
        if rank == 0:
            print(f"pydtnn_peer: PyDTNN at {path}, {ranks} rank(s), {threads} thread(s): {' '.join(argv)}", flush=True)
        text, recorder, error = run_pydtnn(argv, settings["seed"])
        if error:
            failed(text, error)
        if rank != 0:
            return 4 if recorder.stop_training else 0
        if settings["weights_file"] and not settings["evaluate_only"] and not recorder.stop_training:
            store_weights(recorder.model, settings["weights_file"])
        history_text = open(history).read() if os.path.isfile(history) else ""
    fmt = opts.get("tensor_format", "AUTO").upper()
    info = {**settings, "opts": opts, "argv": argv, "text": text, "recorder": recorder, "history": history_text,
            "ranks": ranks, "threads": threads, "batch_size": batch, "data": data_record,
            "tensor_format": fmt if fmt != "AUTO" else ("NCHW" if boolean(opts, "enable_gpu", False) else "NHWC"),
            "environment": environment(path, threads, mpi)}
    try:
        report, code = build_report(info)
        report["memory"] = memory_record(recorder)
    except out.OutputError as e:
        raise Exit(1, f"cannot read PyDTNN's output: {e}") from None
    if code == 4:
        sys.stdout.flush()  # the error line starts a line of a log holding both streams
        print(f"pydtnn_peer: {report['error']}", file=sys.stderr)
    if opts.get("report"):
        try:
            write_report(opts["report"], report)
        except OSError as e:
            raise Exit(1, f"cannot write report {opts['report']}: {e.strerror or e}") from None
    return code


def main(argv=None):
    try:
        opts = parse_cli(sys.argv[1:] if argv is None else argv)
        return run(opts)
    except Exit as e:
        if env_rank() == 0 or e.code == 1:
            sys.stdout.flush()  # the error line starts a line of a log holding both streams
            print(f"pydtnn_peer: {e}", file=sys.stderr, flush=True)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
