#!/usr/bin/python3
"""The real PyDTNN as a framework of the matrix: experiments/peers/pydtnn_output.py and pydtnn_peer.py.

  /usr/bin/python3 tests/experiments/test_pydtnn_output.py [--live]    (exit 0 pass, 1 fail, 77 skipped)

Without --live: (a), (b) and the unknown option's refusal; with --live: (c) alone, skipped (exit 77, with the
reason) without $DTNN_PYDTNN.

(a) The parser on captures of real PyDTNN runs (tests/experiments/fixtures/pydtnn_simplecnn_*), against
    figures read by eye from them; and the report pydtnn_peer.build_report makes of the 2-rank one.
(b) The parser refuses truncated output (OutputError), and so does build_report.
(c) With $DTNN_PYDTNN (a checkout built by ci/setup_pydtnn.sh): pydtnn_peer.py for real, 1 rank and, with
    mpirun, 2 ranks (--parallel=data, --global_batch_size=128): the report's schema, ranks, samples_per_s > 0,
    accuracy in (0, 100]; and an unknown option is exit 3 with one line. Without it: "SKIPPED: ..." for (c)
    and the unknown option is still exit 3 (the line then says DTNN_PYDTNN is not set).

The fixtures were captured on a 2-vCPU VM (PyDTNN 1.1.1rc1 built by `ci/setup_pydtnn.sh
/work/shared/peers/pydtnn/src /tmp/pydtnn-build`, Fashion-MNIST's .gz files decompressed into /tmp/fm with
`zcat`), from the repository root:

  COMMON="--model=simplecnn --dataset=mnist --dataset_train_path=/tmp/fm --dataset_test_path=/tmp/fm \\
    --batch_size=64 --num_epochs=2 --steps_per_epoch=50 --optimizer=adam --learning_rate=0.001 --evaluate=True \\
    --lr_schedulers=reduce_lr_every_nepochs --reduce_lr_every_nepochs_nepochs=1000000"
  F=tests/experiments/fixtures
  PYTHONPATH=/tmp/pydtnn-build OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive /usr/bin/python3 -m pydtnn.pydtnn_benchmark \\
    $COMMON --history_file=$F/pydtnn_simplecnn_1rank_history.txt > $F/pydtnn_simplecnn_1rank.txt 2>&1
  mpirun --allow-run-as-root --oversubscribe -np 2 -x PYTHONPATH=/tmp/pydtnn-build -x OMP_NUM_THREADS=1 \\
    -x OMP_WAIT_POLICY=passive /usr/bin/python3 -m pydtnn.pydtnn_benchmark $COMMON --validation_split=0.1 \\
    --parallel=data --history_file=$F/pydtnn_simplecnn_2ranks_history.txt > $F/pydtnn_simplecnn_2ranks.txt 2>&1
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(HERE, "fixtures")
PEER = os.path.join(REPO, "experiments", "peers", "pydtnn_peer.py")
DATA = "/usr/share/datasets/fashion-mnist"
sys.path.insert(0, os.path.join(REPO, "experiments", "peers"))
import pydtnn_output as out  # noqa: E402
import pydtnn_peer  # noqa: E402  (imports no PyDTNN at load time)

NAMES = ["categorical_cross_entropy", "categorical_accuracy"]
KEYS = out.history_keys(NAMES[0], NAMES[1:])
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def near(a, b, tol=1e-9):
    return a is not None and b is not None and abs(a - b) <= tol * max(1.0, abs(b))


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read()


# (figures read by eye from the captures: Training time / Time per epoch / Training throughput, each Epoch bar's
# last state, each Testing bar's last state, the history files)
EXPECTED = {
    "1rank": {"training": (3.5071, 1.7536, 1824.8690), "testing": (3.1659, 3158.7082),
              "epochs": [(3200, 1.5548481, 45.22), (3200, 1.0429455, 63.69)],
              "tests": [(2.3047779, 13.35), (0.8364417, 70.98)],
              "history": [(1.5548, 45.2188, None, None), (1.0429, 63.6875, None, None)]},
    "2ranks": {"training": (3.6459, 1.8229, 3510.8108), "testing": (1.9284, 5185.7230),
               "epochs": [(5760, 1.5975947, 45.10), (5760, 1.1272412, 58.96)],
               "tests": [(2.3047779, 13.35), (0.8562077, 70.80)],
               "history": [(1.5976, 45.1042, 1.0186, 62.6562), (1.1272, 58.9583, 0.8690, 71.4062)]},
}


def check_fixture(tag, exp):
    text = fixture(f"pydtnn_simplecnn_{tag}.txt")
    t = out.parse_training(text)
    check((t["time_s"], t["time_per_epoch_s"], t["samples_per_s"]) == exp["training"], f"{tag}: training {t}")
    check(out.parse_training_time(text) == exp["training"][0], f"{tag}: training time alone")
    tt = out.parse_testing_time(text)
    check(tt is not None and (tt["time_s"], tt["samples_per_s"]) == exp["testing"], f"{tag}: testing {tt}")
    check(out.parse_params(text) == 202458, f"{tag}: params")
    dump = out.parse_options_dump(text)
    check(dump.get("model_name") == "simplecnn" and dump.get("batch_size") == "64", f"{tag}: options dump")
    bars = out.parse_epoch_bars(text, NAMES)
    got = [(b["samples"], b[NAMES[0]], b[NAMES[1]]) for b in bars]
    check([b["epoch"] for b in bars] == [1, 2] and got == exp["epochs"], f"{tag}: epoch bars {got}")
    tests = out.parse_test_bars(text, NAMES)
    got = [(b[NAMES[0]], b[NAMES[1]]) for b in tests]
    check(got == exp["tests"] and all(b["samples"] == 10000 for b in tests), f"{tag}: test bars {got}")
    rows = out.parse_history(fixture(f"pydtnn_simplecnn_{tag}_history.txt"), KEYS)
    got = [tuple(None if math.isnan(r[k]) else r[k] for k in KEYS) for r in rows]
    check([r["epoch"] for r in rows] == [1, 2] and got == exp["history"], f"{tag}: history {got}")


class FakeRecorder:
    epochs = [{"time_s": 1.5, "lr": 0.001, "loss": 1.6}, {"time_s": 1.6, "lr": 0.001, "loss": 1.1}]
    stop_training = False


def fixture_run(tag, text=None, history=None):
    """What pydtnn_peer.run() hands build_report for the fixture's run."""
    opts = {"model": "simplecnn", "dataset": "mnist", "batch_size": "64", "parallel": "data"}
    return {"names": NAMES, "evaluate_on_test": True, "evaluate_only": False, "weights": "", "opts": opts,
            "argv": ["--model=simplecnn"], "text": fixture(f"pydtnn_simplecnn_{tag}.txt") if text is None else text,
            "recorder": FakeRecorder(), "ranks": 2, "threads": 1, "batch_size": 64, "data": {},
            "tensor_format": "NHWC", "environment": {"device": "cpu"},
            "history": fixture(f"pydtnn_simplecnn_{tag}_history.txt") if history is None else history}


def check_fixture_report():
    report, code = pydtnn_peer.build_report(fixture_run("2ranks"))
    check(code == 0 and report["status"] == "ok" and report["framework"] == "pydtnn", "report status")
    check(report["training"] == {"time_s": 3.6459, "samples": 11520, "samples_per_s": 3510.8108, "epochs_run": 2},
          f"report training {report['training']}")
    e = report["epochs"]
    check(len(e) == 2 and e[0]["samples"] == 5760 and e[0]["time_s"] == 1.5 and near(e[0]["samples_per_s"], 3840),
          f"report epochs {e}")
    check(e[1]["train"] == {NAMES[0]: 1.1272, NAMES[1]: 58.9583} and e[1]["val"] == {NAMES[0]: 0.8690, NAMES[1]: 71.4062},
          f"report epoch 2 {e[1]}")
    check(report["test"] == {NAMES[0]: 0.8562077, NAMES[1]: 70.80, "samples": 10000, "time_s": 1.9284,
                             "samples_per_s": 5185.7230}, f"report test {report['test']}")
    check(report["model"]["params"] == 202458 and report["parallel"]["ranks"] == 2, "report model/parallel")
    json.dumps(report, allow_nan=False)  # no NaN reaches the JSON


def expect_output_error(what, fn, *args):
    try:
        fn(*args)
    except out.OutputError:
        return
    check(False, f"no OutputError on {what}")


def check_truncated():
    text = fixture("pydtnn_simplecnn_1rank.txt")
    before_training = text[:text.index("Training time:")]
    expect_output_error("output cut before 'Training time'", out.parse_training, before_training)
    first_test = text.index("Testing:")
    expect_output_error("output cut inside the first test pass", out.parse_test_bars, text[:first_test + 3000], NAMES)
    expect_output_error("output cut before the model table", out.parse_params, text[:200])
    expect_output_error("no epoch bar", out.parse_epoch_bars, text[:first_test], NAMES)
    history = fixture("pydtnn_simplecnn_1rank_history.txt")
    expect_output_error("a history line cut short", out.parse_history, history[:-30], KEYS)
    expect_output_error("an empty history", out.parse_history, "", KEYS)
    cut = text[:text.rindex("Testing time:")]  # the evaluation after training never finished printing
    expect_output_error("build_report on output without its last Testing time", pydtnn_peer.build_report,
                        fixture_run("1rank", text=cut))
    expect_output_error("build_report without Training time", pydtnn_peer.build_report,
                        fixture_run("1rank", text=before_training))


def run_peer(prefix, *options, env=None):
    return subprocess.run(prefix + ["/usr/bin/python3", PEER, *options], capture_output=True, text=True,
                          env=env or os.environ, timeout=240)


def check_unknown_option():
    p = run_peer([], "--model=simplecnn", "--no_such_option=1")
    lines = p.stderr.strip().splitlines()
    want = ("pydtnn_peer: unsupported: PyDTNN has no --no_such_option" if os.environ.get("DTNN_PYDTNN")
            else "pydtnn_peer: unsupported: DTNN_PYDTNN is not set")
    check(p.returncode == 3 and len(lines) == 1 and lines[0].startswith(want),
          f"unknown option: exit {p.returncode}, stderr {p.stderr!r}")


def check_report(path, ranks, name):
    with open(path) as f:
        r = json.load(f)
    check(r.get("schema") == "dtnn.run_report/1" and r.get("framework") == "pydtnn" and r.get("status") == "ok",
          f"{name}: schema/framework/status")
    check(r.get("run_nonce") == "test-nonce", f"{name}: run_nonce")
    check(r["parallel"]["ranks"] == ranks, f"{name}: ranks {r['parallel']}")
    check(r["training"]["samples_per_s"] > 0 and r["training"]["samples"] > 0, f"{name}: training {r['training']}")
    check(0 < r["test"]["categorical_accuracy"] <= 100, f"{name}: test {r['test']}")
    check(r["epochs"] and all(e["samples_per_s"] > 0 for e in r["epochs"]), f"{name}: epochs")
    for key in ("options", "environment", "model", "start"):
        check(key in r, f"{name}: no {key}")
    check("pydtnn_argv" in r["options"] and r["model"]["params"] == 202458, f"{name}: argv / params")
    # Every rank's peak resident memory: PyDTNN holds at least its 202,458 float32 parameters and their gradients.
    memory = r.get("memory", {})
    rss = memory.get("peak_rss_bytes", [])
    check(len(rss) == ranks and all(b > 2 * 4 * 202458 for b in rss) and memory.get("peak_rss_bytes_max") == max(rss),
          f"{name}: memory {memory}")


def check_real_runs():
    if not os.environ.get("DTNN_PYDTNN"):
        print("SKIPPED: (c) real PyDTNN runs: DTNN_PYDTNN is not set (ci/setup_pydtnn.sh prints it)")
        return False
    if not os.path.isdir(DATA):
        print(f"SKIPPED: (c) real PyDTNN runs: no {DATA} (Debian's dataset-fashion-mnist)")
        return False
    work = tempfile.mkdtemp(prefix="test_pydtnn_output.")
    env = dict(os.environ, DTNN_RUN_NONCE="test-nonce", OMPI_MCA_btl="self,vader")
    common = ["--model=simplecnn", "--dataset=mnist", f"--dataset_train_path={DATA}", "--num_epochs=1",
              "--steps_per_epoch=20", "--optimizer=adam", "--learning_rate=0.001", "--seed=0", "--threads=1"]
    try:
        p = run_peer([], *common, "--batch_size=64", f"--report={work}/r1.json", env=env)
        check(p.returncode == 0, f"1 rank: exit {p.returncode}: {p.stderr[-1500:]}")
        if p.returncode == 0:
            check_report(f"{work}/r1.json", 1, "1 rank")
        if shutil.which("mpirun") is None:
            print("SKIPPED: (c) 2 ranks: no mpirun")
            return True
        flags = ["--oversubscribe"] + (["--allow-run-as-root"] if os.getuid() == 0 else [])
        mpirun = ["mpirun", "-np", "2", *flags, "-x", "DTNN_PYDTNN", "-x", "DTNN_RUN_NONCE", "-x", "OMPI_MCA_btl"]
        p = run_peer(mpirun, *common, "--global_batch_size=128", "--parallel=data", f"--report={work}/r2.json",
                     env=env)
        check(p.returncode == 0, f"2 ranks: exit {p.returncode}: {p.stderr[-1500:]}")
        if p.returncode == 0:
            check_report(f"{work}/r2.json", 2, "2 ranks")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return True


def main():
    """No argument: (a), (b) and the unknown option. --live: (c) alone, exit 77 (skipped) without a PyDTNN."""
    if sys.argv[1:] == ["--live"]:
        ran = check_real_runs()
        if not ran and not FAILURES:
            return 77
    else:
        for tag, exp in EXPECTED.items():
            check_fixture(tag, exp)
        check_fixture_report()
        check_truncated()
        check_unknown_option()
    if FAILURES:
        print(f"test_pydtnn_output: {len(FAILURES)} failure(s)", file=sys.stderr)
        return 1
    print("test_pydtnn_output: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
