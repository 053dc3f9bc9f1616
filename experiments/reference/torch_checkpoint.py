"""Checkpoints of the PyTorch reference: `--checkpoint_file PATH` rewrites PATH atomically after every epoch and
`--resume_from PATH` continues from it, as dtnn's own options do (engine/train/checkpoint.h), so a long
reference run (resnet18_d2l: 10 epochs of about 14 min each on 2 cores) can be stopped and finished later.

With the same options and thread count a resumed run repeats an uninterrupted one's per-epoch losses: the
file holds the weights and buffers, the optimizer's state, the shuffle generator's and torch's CPU (and, on
the GPU, the device's) generator states (dropout), the finished epochs' records and the training time so far.
A checkpoint resumes on the kind of device that wrote it; another thread count is allowed, with a warning
that the result is then not bit-identical (as dtnn's).

The file is torch.save's zip, readable with torch.load(weights_only=True): tensors, plus one uint8 tensor
"meta" holding JSON (PyTorch 1.13's safe loader takes no Python floats):
  format          "dtnn.torch_checkpoint/1"
  epoch           epochs completed
  options         the must-match options' values (the option table's rows flagged must_match and torch),
                  as text: a resume with another model, batch, seed, optimizer, rate, ... is refused
  shuffle_rng     numpy's bit-generator state
  threads, device  the writing sitting's thread count and device type (cpu, cuda)
  epochs, total_time, total_samples, steps_run   the run so far
dtnn's NPZ checkpoints are another format: each program reads only its own.
"""
import json
import os
import tempfile

import torch

FORMAT = "dtnn.torch_checkpoint/1"


class CheckpointError(Exception):
    """A checkpoint that cannot be resumed: the message names the file and what is wrong."""


def must_match_values(args, rows):
    return {r["name"]: str(getattr(args, r["name"])) for r in rows
            if "must_match" in r["flags"] and "torch" in r["flags"]}


def save(path, args, rows, epoch, model, optimizer, shuffle_rng, device, run):
    """Writes the checkpoint after `epoch` epochs: a temporary file beside PATH, then os.replace."""
    meta = {"format": FORMAT, "epoch": epoch, "options": must_match_values(args, rows),
            "shuffle_rng": shuffle_rng.bit_generator.state, "threads": args.threads,
            "device": device.type, **run}
    blob = {"meta": torch.frombuffer(bytearray(json.dumps(meta).encode()), dtype=torch.uint8),
            "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
            "optimizer": {i: {k: v.detach().cpu() if torch.is_tensor(v) else v for k, v in s.items()}
                          for i, s in optimizer.state_dict()["state"].items()},
            "torch_rng": torch.get_rng_state()}
    if device.type == "cuda":  # dropout on the GPU draws from the device's generator
        blob["cuda_rng"] = torch.cuda.get_rng_state(device)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".torch_checkpoint.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(blob, f)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def load(path, args, rows):
    """Reads a checkpoint and checks it against these options, before any data is loaded; returns it for
    restore(). Raises CheckpointError naming the file and what is wrong."""
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        meta = json.loads(bytes(blob["meta"].tolist()))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file") from None
    except Exception as e:  # a truncated zip, a dtnn NPZ, text: all "not ours"
        raise CheckpointError(f"{path}: not a PyTorch reference checkpoint ({type(e).__name__})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CheckpointError(f"{path}: not a PyTorch reference checkpoint (format {found!r})")
    try:
        recorded = dict(meta["options"])
        epoch = int(meta["epoch"])
        weights = blob["model"]
        finite = all(torch.isfinite(v).all() for v in weights.values() if v.is_floating_point())
        absent = [k for k in ("epochs", "total_time", "total_samples", "steps_run", "shuffle_rng", "threads",
                              "device") if k not in meta] + [k for k in ("optimizer", "torch_rng") if k not in blob]
        if absent:
            raise KeyError(absent[0])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"{path}: a malformed PyTorch reference checkpoint ({type(e).__name__}: {e})") from None
    want = must_match_values(args, rows)
    for name, value in recorded.items():
        if name in want and want[name] != value:
            raise CheckpointError(f"{path}: --{name} is {want[name]} here but {value} in the checkpoint")
    missing = sorted(set(want) - set(recorded))
    if missing:
        raise CheckpointError(f"{path}: the checkpoint does not record --{missing[0]}")
    if not finite:
        raise CheckpointError(f"{path}: a weight is NaN or infinite")
    if epoch > args.num_epochs:
        raise CheckpointError(f"{path}: it has {epoch} epochs, more than --num_epochs={args.num_epochs}")
    if (meta["device"] == "cuda") != bool(args.enable_gpu):
        raise CheckpointError(f"{path}: written on the {'GPU' if meta['device'] == 'cuda' else 'CPU'}; resume it "
                              f"there (the generators differ)")
    blob["meta"] = meta
    blob["path"] = path
    return blob


def restore(checkpoint, model, optimizer, shuffle_rng, device):
    """Puts a checkpoint from load() into the freshly built model, optimizer and generators; returns its meta
    (epoch, epochs, total_time, total_samples, steps_run)."""
    meta = checkpoint["meta"]
    try:
        model.load_state_dict(checkpoint["model"])
        # load_state_dict moves the state to each parameter's device (and keeps Adam's step count where it
        # is, on the host, as PyTorch wants it). The groups (rate, momentum, ...) come from the options,
        # which match: only the state is restored.
        state = {int(i): dict(s) for i, s in checkpoint["optimizer"].items()}
        optimizer.load_state_dict({"state": state, "param_groups": optimizer.state_dict()["param_groups"]})
        shuffle_rng.bit_generator.state = meta["shuffle_rng"]
        torch.set_rng_state(checkpoint["torch_rng"])
        if device.type == "cuda" and "cuda_rng" in checkpoint:
            torch.cuda.set_rng_state(checkpoint["cuda_rng"], device)
    except (KeyError, RuntimeError, ValueError, TypeError) as e:
        raise CheckpointError(f"{checkpoint['path']}: cannot restore it: {str(e).splitlines()[0]}") from None
    return meta
