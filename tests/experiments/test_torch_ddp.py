#!/usr/bin/python3
"""The PyTorch reference at 2 ranks (experiments/reference/torch_dist.py): one DDP world under a real mpirun.

  test_torch_ddp.py SOURCE_DIR DTNN_BINARY WORK_DIR

1. Equivalence (simplemlp: no dropout, whose masks each rank draws for its own samples): 2 ranks splitting a global batch of 64 (--global_batch_size=64) train what 1 rank trains with
   --batch_size=64 (the same order, the gradient the global batch's mean): the per-epoch training loss and the
   test accuracy agree (float sums in another order: to 1e-4 relative), and the 2-rank report says 2 ranks, DDP,
   gloo, and per epoch dtnn's "communication" object with mode "ddp" (every step timed, allreduce time > 0,
   exposed <= step <= epoch time).
2. Weak scaling with SGD: --batch_size=32 per rank trains at the rate times 2 (PyDTNN's rule, as dtnn), the
   report's options say the rate as run and options_given the rate as given.
3. Through the matrix runner: framework = "pytorch" at ranks 1 and 2 beside dtnn, stored ok with the report's
   rank count, and `dtnn query frameworks` puts both frameworks at both rank counts with a speed-up.
Exit 77 (skipped, with the reason) without Debian's python3-torch or mpirun.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_matrix  # noqa: E402

SRC, DTNN, WORK = sys.argv[1:4]
PY = "/usr/bin/python3"
DATA = "/usr/share/datasets/fashion-mnist"


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(77)


def fail(why):
    print(f"test_torch_ddp: FAIL: {why}", file=sys.stderr)
    sys.exit(1)


def mpirun(n):
    flags = ["--oversubscribe"] + (["--allow-run-as-root"] if os.getuid() == 0 else [])
    return ["mpirun", "-np", str(n), *flags, "-x", "MASTER_ADDR", "-x", "MASTER_PORT"]


def train(name, prefix, *options, model="simplemlp"):
    """simplemlp by default: no dropout, whose masks each rank draws for its own samples."""
    report = os.path.join(WORK, name + ".json")
    cmd = prefix + [PY, os.path.join(SRC, "experiments/reference/torch_train.py"), f"--model={model}",
                    "--dataset=mnist", f"--dataset_train_path={DATA}", "--num_epochs=2", "--steps_per_epoch=15",
                    "--threads=1", "--seed=5", f"--report={report}", *options]
    env = dict(os.environ, DTNN_BINARY=DTNN, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               OMPI_MCA_btl="self,vader")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    if p.returncode != 0:
        fail(f"{name}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    with open(report) as f:
        return json.load(f), p.stdout


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def close(a, b, rel, what):
    if abs(a - b) > rel * max(abs(a), abs(b), 1e-12):
        fail(f"{what}: {a} vs {b} (more than {rel} relative)")


def equivalence():
    one, _ = train("one", [], "--batch_size=64", "--optimizer=sgd", "--learning_rate=0.05", "--momentum=0.9")
    two, out = train("two", mpirun(2), "--global_batch_size=64", "--optimizer=sgd", "--learning_rate=0.05",
                     "--momentum=0.9")
    if two["parallel"].get("ranks") != 2 or two["parallel"].get("mode") != "ddp" or \
            two["parallel"].get("backend") != "gloo":
        fail(f"2-rank report's parallel: {two['parallel']}")
    if out.count("Training throughput") != 1:
        fail(f"rank 0 alone prints: {out.count('Training throughput')} throughput lines")
    for e1, e2 in zip(one["epochs"], two["epochs"]):
        if e1["samples"] != 15 * 64 or e2["samples"] != 15 * 64:
            fail(f"epoch samples {e1['samples']} / {e2['samples']}, expected {15 * 64} (global batches)")
        close(e1["train"]["categorical_cross_entropy"], e2["train"]["categorical_cross_entropy"], 1e-4,
              f"epoch {e1['epoch']} training loss, 1 rank vs 2")
        c = e2.get("communication") or fail(f"epoch {e2['epoch']}: no communication object")
        if c["mode"] != "ddp" or c["steps"] != 15 or c["buckets_per_step"] < 1 or c["bytes_per_step"] < 4 * 932362:
            fail(f"communication: {c}")
        for stat in ("rank0", "min", "median", "max"):
            t = c[stat]
            if not (0 < t["comm_s"] and 0 <= t["exposed_s"] <= t["step_s"] <= e2["time_s"] * 1.01):
                fail(f"communication {stat}: {t} (epoch {e2['time_s']} s)")
    close(one["test"]["categorical_accuracy"], two["test"]["categorical_accuracy"], 1e-3, "test accuracy")
    print(f"equivalence: losses {[round(e['train']['categorical_cross_entropy'], 6) for e in one['epochs']]} "
          f"vs {[round(e['train']['categorical_cross_entropy'], 6) for e in two['epochs']]}, test accuracy "
          f"{one['test']['categorical_accuracy']} vs {two['test']['categorical_accuracy']}")


def weak_lr():
    two, _ = train("weak", mpirun(2), "--batch_size=32", "--optimizer=sgd", "--learning_rate=0.05",
                   "--evaluate_on_test=False", model="simplecnn")
    if abs(two["options"]["learning_rate"] - 0.1) > 1e-12 or two.get("options_given", {}).get("learning_rate") != 0.05:
        fail(f"weak scaling's SGD rate: options {two['options']['learning_rate']}, given {two.get('options_given')}")
    if two["epochs"][0]["samples"] != 15 * 64:
        fail(f"weak scaling: {two['epochs'][0]['samples']} samples an epoch, expected 15 x 2 x 32")


def through_runner():
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    p, con = peer_matrix.run_matrix(DTNN, WORK, "peers", '[axes]\nframework = ["dtnn", "pytorch"]\nranks = [1, 2]\n', env)
    db = os.path.join(WORK, "peers.db")
    if p.returncode != 0:
        fail(f"dtnn run: exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}")
    runs = con.execute("SELECT framework, ranks, status, json_extract(report, '$.parallel.ranks') FROM runs "
                       "ORDER BY framework, ranks").fetchall()
    if runs != [("dtnn", 1, "ok", 1), ("dtnn", 2, "ok", 2), ("pytorch", 1, "ok", 1), ("pytorch", 2, "ok", 2)]:
        fail(f"stored runs: {runs}")
    ddp = con.execute("SELECT count(*) FROM epoch_comm c JOIN runs r ON r.id = c.run_id "
                      "WHERE r.framework = 'pytorch' AND c.mode = 'ddp'").fetchone()[0]
    if ddp != 4:  # one epoch, four statistics
        fail(f"{ddp} epoch_comm rows of mode ddp for the 2-rank PyTorch run, expected 4")
    q = subprocess.run([DTNN, "query", "frameworks", "--db", db, "--format", "json"], capture_output=True,
                       text=True, timeout=60)
    rows = json.loads(q.stdout)
    got = sorted((r["framework"], r["ranks"]) for r in rows)
    if got != [("dtnn", 1), ("dtnn", 2), ("pytorch", 1), ("pytorch", 2)]:
        fail(f"dtnn query frameworks: {got}\n{q.stdout}{q.stderr}")
    for r in rows:
        if r["ranks"] == 2 and not (r["speedup"] and r["speedup"] > 0 and r["baseline_ranks"] == 1):
            fail(f"frameworks row without a speed-up: {r}")
        if r["ranks"] == 2 and r["exposed_comm_fraction"] is None:
            fail(f"frameworks row without the exposed communication: {r}")


def main():
    if importlib.util.find_spec("torch") is None and subprocess.run(
            [PY, "-c", "import torch"], capture_output=True).returncode != 0:
        skip(f"{PY} cannot import torch (Debian's python3-torch is not installed)")
    if shutil.which("mpirun") is None:
        skip("no mpirun (Open MPI) on PATH")
    if not os.path.exists(os.path.join(DATA, "train-images-idx3-ubyte.gz")):
        skip(f"{DATA}: Debian's dataset-fashion-mnist is not installed")
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    equivalence()
    weak_lr()
    through_runner()
    print("test_torch_ddp: ok")


if __name__ == "__main__":
    main()
