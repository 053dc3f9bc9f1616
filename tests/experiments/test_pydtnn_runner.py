#!/usr/bin/python3
"""framework = "pydtnn" through the matrix runner (experiments/launcher.cpp, experiments/peers/pydtnn_peer.py).

  test_pydtnn_runner.py DTNN_BINARY WORK_DIR

1. Without a PyDTNN (DTNN_PYDTNN unset, no pydtnn_path): the trial is stored 'unsupported' with the reason,
   and the matrix's other trials run.
2. With $DTNN_PYDTNN (a checkout built by ci/setup_pydtnn.sh): dtnn and PyDTNN at 1 and 2 ranks under the
   runner's mpirun, stored ok with the report's rank count and PyDTNN's figures; an option PyDTNN lacks is
   stored 'unsupported' naming it; `dtnn query frameworks` puts both frameworks at both rank counts. Without it
   this part is skipped (exit 77, with the reason) after part 1 passed.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_matrix  # noqa: E402

DTNN, WORK = sys.argv[1:3]
DATA = peer_matrix.DATA


def fail(why):
    print(f"test_pydtnn_runner: FAIL: {why}", file=sys.stderr)
    sys.exit(1)


def run_matrix(name, axes, env):
    return peer_matrix.run_matrix(DTNN, WORK, name, axes, env)


def without_pydtnn():
    env = {k: v for k, v in os.environ.items() if k != "DTNN_PYDTNN"}
    p, con = run_matrix("nopeer", '[axes]\nframework = ["dtnn", "pydtnn"]\n', env)
    if p.returncode != 0:
        fail(f"a matrix with an unsupported trial exits {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    rows = con.execute("SELECT framework, status, error FROM runs ORDER BY framework").fetchall()
    if [r[:2] for r in rows] != [("dtnn", "ok"), ("pydtnn", "unsupported")] or "DTNN_PYDTNN" not in (rows[1][2] or ""):
        fail(f"without a PyDTNN: {rows}")


def with_pydtnn():
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    axes = '[axes]\nframework = ["dtnn", "pydtnn"]\nranks = [1, 2]\n[[include]]\nframework = "pydtnn"\npad_to_cifar = true\n'
    p, con = run_matrix("peer", axes, env)
    if p.returncode != 0:
        fail(f"dtnn run: exit {p.returncode}\n{p.stdout[-3000:]}{p.stderr[-2000:]}")
    rows = con.execute("SELECT framework, ranks, status, json_extract(report, '$.parallel.ranks'), samples_per_s, "
                       "json_extract(report, '$.framework'), error FROM runs ORDER BY framework, ranks, id").fetchall()
    ok = [(r[0], r[1], r[2], r[3]) for r in rows if r[2] == "ok"]
    if ok != [("dtnn", 1, "ok", 1), ("dtnn", 2, "ok", 2), ("pydtnn", 1, "ok", 1), ("pydtnn", 2, "ok", 2)]:
        fail(f"stored runs: {rows}")
    if any(r[0] == "pydtnn" and r[2] == "ok" and (not r[4] or r[4] <= 0 or r[5] != "pydtnn") for r in rows):
        fail(f"a PyDTNN run without its throughput or framework: {rows}")
    refused = [r for r in rows if r[2] == "unsupported"]
    if len(refused) != 1 or "pad_to_cifar" not in (refused[0][6] or ""):
        fail(f"--pad_to_cifar (PyDTNN has none) not stored unsupported with its name: {refused}")
    q = subprocess.run([DTNN, "query", "frameworks", "--db", os.path.join(WORK, "peer.db"), "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    got = sorted((r["framework"], r["ranks"]) for r in json.loads(q.stdout))
    if got != [("dtnn", 1), ("dtnn", 2), ("pydtnn", 1), ("pydtnn", 2)]:
        fail(f"dtnn query frameworks: {got}")


def main():
    if not os.path.exists(os.path.join(DATA, "train-images-idx3-ubyte.gz")):
        print(f"SKIPPED: {DATA}: Debian's dataset-fashion-mnist is not installed")
        return 77
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    without_pydtnn()
    if not os.environ.get("DTNN_PYDTNN"):
        print("SKIPPED: the runs of the real PyDTNN: DTNN_PYDTNN is not set (ci/setup_pydtnn.sh SRC prints it; "
              "ci/test.sh builds ../shared/peers/pydtnn when it is there)")
        return 77
    if shutil.which("mpirun") is None:
        print("SKIPPED: no mpirun (Open MPI) on PATH")
        return 77
    with_pydtnn()
    print("test_pydtnn_runner: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
