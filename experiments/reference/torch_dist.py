"""Data parallelism for the PyTorch reference (torch_train.py): PyTorch's DistributedDataParallel run the way
dtnn runs its data-parallel ranks, so the two frameworks' scaling can be put in one table.

Contract:
- world_from_env() reads the rank and world size the launcher gave each process: Open MPI's mpirun
  (OMPI_COMM_WORLD_RANK/SIZE, OMPI_COMM_WORLD_LOCAL_RANK), Slurm's srun (SLURM_PROCID/SLURM_NTASKS,
  SLURM_LOCALID) or torchrun's RANK/WORLD_SIZE/LOCAL_RANK; one process without any of them is a world of one.
- init(world, gpu) joins the process group (gloo on CPUs, NCCL for GPU runs where this PyTorch has it) at the
  rendezvous the runner names: MASTER_ADDR (default: the first host of SLURM_STEP_NODELIST under srun, else
  127.0.0.1) and MASTER_PORT (required when the world has more than one rank).
- split_batch(n, ranks, rank) is dtnn's even split of a global batch (engine/train/batch_shares.cpp): the
  first n % ranks ranks take one sample more, rank r's samples follow rank r-1's.
- wrap(model, device, world) returns the model under DDP with DDP's documented defaults (25 MiB buckets, the
  first 1 MiB) and gradient_as_bucket_view=True, and a CommTimer registered as its communication hook: each
  bucket is summed with an asynchronous allreduce (gloo or NCCL) and divided by the world size, DDP's own
  allreduce hook, with its time from the bucket being ready to its future completing recorded.
- CommTimer.begin_step() / end_backward() / end_step() bracket each step; epoch_communication() gathers every
  rank's sums (a collective: every rank calls it) into dtnn's per-epoch "communication" object (mode "ddp").

Exposed communication is measured as dtnn defines it: the part of the step spent waiting for the reduction
after the last gradient was computed. DDP waits for every bucket's future at the end of backward(), so it is
the time from the last bucket becoming ready (the hook's call) to backward() returning; compute is the rest
of the step.
"""
import os
import statistics
import subprocess
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

# DDP's defaults (torch.nn.parallel.DistributedDataParallel: bucket_cap_mb=25; the first bucket is capped at
# dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB), said in the report.
BUCKET_CAP_MB = 25
FIRST_BUCKET_MB = 1


class World:
    def __init__(self, rank=0, size=1, local_rank=0, backend=""):
        self.rank, self.size, self.local_rank, self.backend = rank, size, local_rank, backend
        self.options_given = {}  # options the world's size changed: their values as given (the report's)

    @property
    def root(self):
        return self.rank == 0


def _env_int(*names):
    for name in names:
        if os.environ.get(name, "").strip().isdigit():
            return int(os.environ[name])
    return None


def world_from_env():
    """The launcher's rank, size and local rank: Open MPI, then Slurm, then torchrun's names."""
    for rank_v, size_v, local_v in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
                                    ("PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
                                    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
                                    ("RANK", "WORLD_SIZE", "LOCAL_RANK")):
        rank, size = _env_int(rank_v), _env_int(size_v)
        if rank is not None and size is not None and 0 <= rank < size:
            return World(rank, size, _env_int(local_v) or 0)
    return World()


def _master_addr():
    if os.environ.get("MASTER_ADDR"):
        return os.environ["MASTER_ADDR"]
    nodes = os.environ.get("SLURM_STEP_NODELIST") or os.environ.get("SLURM_JOB_NODELIST")
    if nodes:
        try:
            out = subprocess.run(["scontrol", "show", "hostnames", nodes], capture_output=True, text=True,
                                 timeout=10, check=True).stdout.split()
            if out:
                return out[0]
        except (OSError, subprocess.SubprocessError):
            pass
    return "127.0.0.1"


class SetupError(Exception):
    """The process group cannot be formed (no rendezvous port, no backend)."""


def init(world, gpu, timeout_s=300):
    """Join the process group of `world` (a no-op for one rank). Raises SetupError."""
    if world.size == 1:
        return world
    port = os.environ.get("MASTER_PORT", "")
    if not port.isdigit():
        raise SetupError(f"{world.size} ranks need MASTER_PORT (the rendezvous port; the dtnn runner sets it)")
    backend = "nccl" if gpu and dist.is_nccl_available() else "gloo"
    if not dist.is_available() or (backend == "gloo" and not dist.is_gloo_available()):
        raise SetupError(f"this PyTorch {torch.__version__} has no {backend} backend")
    import datetime
    dist.init_process_group(backend, init_method=f"tcp://{_master_addr()}:{port}", rank=world.rank,
                            world_size=world.size, timeout=datetime.timedelta(seconds=timeout_s))
    world.backend = backend
    return world


def finish(world):
    if world.size > 1 and dist.is_initialized():
        dist.destroy_process_group()


def split_batch(n, ranks, rank):
    """(offset, count) of rank's share of a global batch of n samples, as dtnn splits it."""
    base, extra = divmod(n, ranks)
    return rank * base + min(rank, extra), base + (1 if rank < extra else 0)


class CommTimer:
    """DDP's allreduce hook with its times (see the module's contract)."""

    def __init__(self, world):
        self.world = world
        self.reset()

    def reset(self):
        self.steps = 0
        self.step_s = self.comm_s = self.exposed_s = 0.0
        self.buckets = self.bytes = 0
        self._ready = []

    def hook(self, _state, bucket):
        t0 = time.perf_counter()
        self._ready.append(t0)
        buf = bucket.buffer()
        self.buckets += 1
        self.bytes += buf.numel() * buf.element_size()
        buf.div_(self.world.size)
        fut = dist.all_reduce(buf, async_op=True).get_future()

        def done(f):
            self.comm_s += time.perf_counter() - t0
            return f.value()[0]

        return fut.then(done)

    def begin_step(self):
        self._ready = []
        self._t0 = time.perf_counter()

    def end_backward(self):
        if self._ready:
            self.exposed_s += max(0.0, time.perf_counter() - max(self._ready))

    def end_step(self):
        self.step_s += time.perf_counter() - self._t0
        self.steps += 1

    def epoch_communication(self):
        """dtnn's "communication" object for this epoch (totals over its steps), every rank's gathered."""
        mine = {"step_s": self.step_s, "compute_s": self.step_s - self.exposed_s, "comm_s": self.comm_s,
                "exposed_s": self.exposed_s}
        ranks = [None] * self.world.size
        dist.all_gather_object(ranks, mine)
        stat = {"rank0": ranks[0]}
        for name, pick in (("min", min), ("median", statistics.median), ("max", max)):  # field by field, as dtnn
            stat[name] = {field: pick(r[field] for r in ranks) for field in mine}
        steps = max(self.steps, 1)
        return {"mode": "ddp", "steps": self.steps, "buckets_per_step": round(self.buckets / steps),
                "bytes_per_step": self.bytes / steps, "bucket_mb": BUCKET_CAP_MB, "first_bucket_mb": FIRST_BUCKET_MB,
                "gradient_as_bucket_view": True, "backend": self.world.backend, **stat}


def wrap(model, device, world):
    """(model under DDP, its CommTimer), or (model, None) for one rank."""
    if world.size == 1:
        return model, None
    ids = [device.index] if device.type == "cuda" else None
    ddp = DistributedDataParallel(model, device_ids=ids, bucket_cap_mb=BUCKET_CAP_MB,
                                  gradient_as_bucket_view=True)
    timer = CommTimer(world)
    ddp.register_comm_hook(None, timer.hook)
    return ddp, timer


def gather_memory(world, device):
    """dtnn's "memory" record: every rank's peak resident memory (getrusage: KiB on Linux) and, on a GPU, the peak
    bytes PyTorch's allocator held (torch.cuda.max_memory_allocated), gathered (collective beyond one rank)."""
    import resource
    mine = [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            torch.cuda.max_memory_allocated(device) if device.type == "cuda" else -1]
    ranks = [mine]
    if world.size > 1:
        ranks = [None] * world.size
        dist.all_gather_object(ranks, mine)
    memory = {"peak_rss_bytes": [r[0] for r in ranks], "peak_rss_bytes_max": max(r[0] for r in ranks)}
    if max(r[1] for r in ranks) >= 0:
        memory.update({"device_peak_bytes": [r[1] for r in ranks], "device_peak_bytes_max": max(r[1] for r in ranks)})
    return memory
