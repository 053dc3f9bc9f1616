#!/usr/bin/python3
"""dtnn's reproduction of PyDTNN's performance model (analysis/perfmodel/pydtnn_model.h, `dtnn predict
--model_kind pydtnn`, and the line `dtnn train --cpu_speed=...` prints) against the real PyDTNN's
Model.calculate_time, on one rank (calculate_time needs no MPI there), for models with and without blocks, at
PyDTNN's default parameters and at a compute-bound and a memory-bound point.

  test_pydtnn_model_peer.py DTNN_BINARY

$DTNN_PYDTNN names a PyDTNN checkout built by ci/setup_pydtnn.sh; without it: SKIPPED with the reason, exit 77.
"""
import json
import os
import subprocess
import sys

DTNN = sys.argv[1]
# Models both zoos define alike (PyDTNN's resnet20_cifar10 is another network: biased convolutions, 279,242
# parameters against dtnn's 272,474, so the two models' times differ by 1e-4 relative).
MODELS = {"simplecnn": "mnist", "simplemlp": "mnist", "vgg16_cifar10": "cifar10", "vgg3dobn": "cifar10"}
POINTS = [{}, {"cpu_speed": 1e9, "memory_bw": 1e15}, {"cpu_speed": 1e15, "memory_bw": 1e9}]
PYDTNN_SIDE = r'''
import json, sys
from pydtnn.parser import parser
from pydtnn.model import Model
out = []
for model, dataset, point in json.loads(sys.argv[1]):
    opts = [f"--model={model}", f"--dataset={dataset}", "--dataset_train_path=/nonexistent", "--batch_size=64"]
    opts += [f"--{k}={v}" for k, v in point.items()]
    out.append(float(Model(**vars(parser.parse_args(opts))).calculate_time()[0]))
print(json.dumps(out))
'''


def dtnn_total(model, point):
    args = [DTNN, "predict", "--model_kind", "pydtnn", "--model", model, "--ranks", "1", "--batch_size", "64", "--json"]
    for k, v in point.items():
        args += [f"--{k}", str(v)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"test_pydtnn_model_peer: FAIL: {' '.join(args)}: {p.stderr.strip()}")
    return json.loads(p.stdout)["rows"][0]["step_s"]


def main():
    home = os.environ.get("DTNN_PYDTNN")
    if not home:
        print("SKIPPED: DTNN_PYDTNN is not set (ci/setup_pydtnn.sh SRC builds PyDTNN and prints it)")
        return 77
    cases = [(m, d, pt) for m, d in MODELS.items() for pt in POINTS]
    env = dict(os.environ, PYTHONPATH=home, OMP_NUM_THREADS="1")
    p = subprocess.run(["/usr/bin/python3", "-c", PYDTNN_SIDE, json.dumps(cases)], capture_output=True, text=True,
                       env=env, cwd=home, timeout=300)
    if p.returncode != 0:
        print(f"test_pydtnn_model_peer: FAIL: PyDTNN's side: {p.stderr[-2000:]}", file=sys.stderr)
        return 1
    theirs = json.loads(p.stdout.strip().splitlines()[-1])
    failures = 0
    for (model, _, point), t in zip(cases, theirs):
        ours = dtnn_total(model, point)
        ok = abs(ours - t) <= 1e-5 * t  # PyDTNN sums in float32
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {model:18s} {json.dumps(point):42s} PyDTNN {t:.6e} s  dtnn {ours:.6e} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
