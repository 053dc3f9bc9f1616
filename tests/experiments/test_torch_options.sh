#!/usr/bin/env bash
# The PyTorch reference's parser is built from dtnn's option table: its options are exactly the rows flagged
# "torch", with the table's defaults, and the runner passes it nothing else (experiments/runner.cpp).
# An epoch capped past the data has the same length in both, and the optimizers take dtnn's steps.
#   test_torch_options.sh SOURCE_DIR DTNN_BINARY
# Exit 77 (ctest: skipped, with the reason) without Debian's python3-torch.
set -euo pipefail
src="$1"
export DTNN_BINARY="$2"
py=/usr/bin/python3
if ! "$py" -c "import torch" > /dev/null 2>&1; then
  echo "SKIPPED: $py cannot import torch (Debian's python3-torch is not installed)"
  exit 77
fi
"$py" - "$src/experiments/reference/torch_train.py" <<'PY'
import importlib.util, json, os, subprocess, sys
spec = importlib.util.spec_from_file_location("torch_train", sys.argv[1])
tt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tt)
table = json.loads(subprocess.run([os.environ["DTNN_BINARY"], "train", "--list-options", "--format", "json"],
                                  check=True, capture_output=True, text=True).stdout)
torch_rows = [r for r in table["options"] if "torch" in r["flags"]]
args = tt.parse_args(["--use_synthetic_data=True"])
names = set(vars(args))
want = {r["name"] for r in torch_rows}
assert names == want, f"parser {sorted(names ^ want)} differ from the table's torch rows"
for r in torch_rows:
    if r["name"] in ("use_synthetic_data", "threads", "tensor_format", "dataset_test_path") or r["default"] == "":
        continue  # given above, or resolved by parse_args (0 threads: cores; AUTO: the device's format)
    assert str(getattr(args, r["name"])) == str(tt.option_type(r)(r["default"])), r["name"]
print(f"torch reference: {len(want)} options, all from the table")
PY
# --steps_per_epoch past the data: both train that many full batches, wrapping over the shuffled order (the
# reference stopped at one pass: its epochs were shorter than dtnn's for the same options).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
opts=(--model=simplemlp "--dataset_train_path=$src/experiments/datasets/mnist-10k" --batch_size=1000
      --steps_per_epoch=10 --num_epochs=1 --evaluate_on_test=False --threads=1)
"$py" "$src/experiments/reference/torch_train.py" "${opts[@]}" "--report=$work/torch.json" > /dev/null
"$DTNN_BINARY" train "${opts[@]}" --progress=False "--report=$work/dtnn.json" > /dev/null
"$py" - "$work/torch.json" "$work/dtnn.json" <<'PY'
import json, sys
t, d = (json.load(open(p))["training"]["samples"] for p in sys.argv[1:])
assert t == d == 10000, f"samples in an epoch of 10 batches of 1000 over 8000: reference {t}, dtnn {d}"
print("torch reference: --steps_per_epoch wraps over the data as dtnn does (10000 samples of 8000)")
PY
# The reference's optimizers take dtnn's steps (engine/optim/optimizer.cpp's rules, written out again here in
# numpy, in double): Adam with epsilon inside the square root (and nadam's numerator), decay outside the
# momentum and moments. torch.optim.Adam's first step was ~lr for every weight where dtnn's is not.
"$py" - "$src/experiments/reference" <<'PY'
import argparse, sys
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
import torch_optim
rng = np.random.default_rng(5)
w0 = rng.normal(size=(3, 4)) * 0.1
grads = [rng.normal(size=(3, 4)) * s for s in (1e-4, 1e-2, 1.0)]   # small gradients: where eps placement shows
def run(opt_name, nesterov, decay, momentum=0.9):
    p = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))
    a = argparse.Namespace(optimizer=opt_name, learning_rate=0.01, momentum=momentum, nesterov=nesterov, decay=decay,
                           beta1=0.9, beta2=0.999, epsilon=1e-7)
    opt = torch_optim.build_optimizer(a, [p])
    for g in grads:
        p.grad = torch.tensor(g)
        opt.step()
    return p.detach().numpy()
def dtnn_adam(nesterov, decay):
    w, m, v = w0.copy(), np.zeros_like(w0), np.zeros_like(w0)
    for t, g in enumerate(grads, 1):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        c1, c2 = 1 / (1 - 0.9 ** t), 1 / (1 - 0.999 ** t)
        num = ((m + 0.1 * g) if nesterov else m) * c1
        w = w - 0.01 * (decay * w + num / np.sqrt(v * c2 + 1e-7))
    return w
def dtnn_sgd(nesterov, decay, mu=0.9):
    w, v = w0.copy(), np.zeros_like(w0)
    for g in grads:
        v = mu * v + g
        w = w - 0.01 * (decay * w + ((g + mu * v) if nesterov else v))
    return w
for nesterov in (False, True):
    for decay in (0.0, 0.5):
        for name, got, want in (("adam", run("adam", nesterov, decay), dtnn_adam(nesterov, decay)),
                                ("sgd", run("sgd", nesterov, decay), dtnn_sgd(nesterov, decay))):
            err = np.abs(got - want).max() / np.abs(want - w0).max()
            assert err < 1e-9, f"{name} nesterov={nesterov} decay={decay}: step differs from dtnn's by {err:.2e}"
p = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))
torch_adam = torch.optim.Adam([p], lr=0.01, eps=1e-7)
p.grad = torch.tensor(grads[0])
torch_adam.step()
g = grads[0]
dtnn_first = w0 - 0.01 * g / np.sqrt(g * g + 1e-7)  # dtnn's first step: m_hat = g, v_hat = g^2
assert np.abs(p.detach().numpy() - dtnn_first).max() > 1e-3, "torch.optim.Adam now takes dtnn's step: simplify"
print("torch reference: sgd and adam (nesterov, decay) take dtnn's steps; torch.optim.Adam's would not")
PY
# --dtype=bfloat16: the convolutions and linear layers run under CPU autocast (their outputs are bf16), the
# parameters stay float32; a CPU without AVX512-BF16/AMX is refused (exit 3) as dtnn refuses it.
"$py" - "$src/experiments/reference" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import torch
import torch_train as tt
from torch_models import build_model, model_input
if not tt.cpu_has_bf16():  # the refusal is what there is to check here
    try:
        tt.parse_args(["--use_synthetic_data=True", "--model=simplecnn", "--dtype=bfloat16"])
        raise AssertionError("--dtype=bfloat16 accepted on a CPU without bf16")
    except SystemExit as e:
        assert e.code == 3, e.code
    print("torch reference: --dtype=bfloat16 refused (exit 3) on this CPU without AVX512-BF16 or AMX-BF16")
    sys.exit(0)
args = tt.parse_args(["--use_synthetic_data=True", "--model=simplecnn", "--dtype=bfloat16"])
model = build_model("simplecnn", model_input("simplecnn", 0))
seen = []
for m in model.modules():
    if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
        m.register_forward_hook(lambda mod, inp, out: seen.append(out.dtype))
with tt.compute_context(args, torch.device("cpu")):
    model(torch.zeros(2, 1, 28, 28))
assert seen and all(d == torch.bfloat16 for d in seen), seen
assert all(p.dtype == torch.float32 for p in model.parameters())
fp32 = tt.parse_args(["--use_synthetic_data=True", "--model=simplecnn"])
seen.clear()
with tt.compute_context(fp32, torch.device("cpu")):
    model(torch.zeros(2, 1, 28, 28))
assert all(d == torch.float32 for d in seen), seen
print(f"torch reference: --dtype=bfloat16 autocasts {len(seen)} conv/linear layers, parameters float32")
PY
