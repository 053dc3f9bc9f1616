#!/usr/bin/env bash
# The PyTorch reference's --checkpoint_file / --resume_from (experiments/reference/torch_checkpoint.py): 2 epochs,
# then a resume to 3, repeat an uninterrupted 3-epoch run's per-epoch losses and end with the same weights, batch
# norm statistics and velocities, bit for bit (one thread; vgg3dobn has batch norm and dropout, sgd with
# momentum a velocity to restore; no evaluation pass, which would cost more than the training here);
# bad checkpoints and changed options are refused with one line.
#   test_torch_resume.sh SOURCE_DIR DTNN_BINARY WORK_DIR
# Exit 77 (ctest: skipped, with the reason) without Debian's python3-torch.
set -euo pipefail
src="$1"
export DTNN_BINARY="$2"
work="$3"
py=/usr/bin/python3
# find_spec, not an import: importing torch takes ~3 s, and every reference run below pays it once already.
if ! "$py" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)" > /dev/null 2>&1; then
  echo "SKIPPED: $py cannot import torch (Debian's python3-torch is not installed)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
cd "$work"
fail() {
  echo "test_torch_resume: FAIL: $*" >&2
  exit 1
}
tt() { "$py" "$src/experiments/reference/torch_train.py" --model=vgg3dobn --dataset=cifar10 --use_synthetic_data=True \
  --batch_size=16 --steps_per_epoch=3 --threads=1 --optimizer=sgd --momentum=0.9 --learning_rate=0.01 --seed=3 \
  --evaluate_on_test=False "$@"; }
tt --num_epochs=3 --report=straight.json --checkpoint_file=straight.pt > straight.out
tt --num_epochs=2 --checkpoint_file=ck.pt --report=first.json > first.out
cp ck.pt after2.pt
tt --num_epochs=3 --resume_from=ck.pt --checkpoint_file=ck.pt --report=resumed.json > resumed.out
grep -q "Resumed from ck.pt after epoch 2" resumed.out || fail "no resume line: $(cat resumed.out)"
echo "not a checkpoint" > text.pt
head -c 5000 after2.pt > truncated.pt
# One process (torch imported once, ~3 s): the resumed run against the uninterrupted one, then the refusals:
# torch_train.main on each bad command line must exit 1 or 2 with one line on stderr holding the text.
"$py" - "$src/experiments/reference" <<'PY' || fail "see above"
import contextlib, io, json, sys
import torch
try:
    a, b = json.load(open("straight.json")), json.load(open("resumed.json"))
    def figures(r):
        return [(e["epoch"], e["samples"], e["train"], e.get("val")) for e in r["epochs"]]
    assert figures(a) == figures(b), f"epochs:\n{figures(a)}\n{figures(b)}"
    x, y = torch.load("straight.pt", weights_only=True), torch.load("ck.pt", weights_only=True)
    for part in ("model", "optimizer"):
        assert x[part].keys() == y[part].keys(), part
        for k in x[part]:
            u, v = (x[part][k], y[part][k]) if part == "model" else (x[part][k]["momentum_buffer"], y[part][k]["momentum_buffer"])
            assert torch.equal(u, v), f"{part} {k} differs by {(u.double() - v.double()).abs().max().item()}"
    assert b["resumed_from"]["epoch"] == 2 and "resumed_from" not in a
    assert b["training"]["epochs_run"] == 3 and b["training"]["samples"] == a["training"]["samples"]
    meta = json.loads(bytes(torch.load("ck.pt", weights_only=True)["meta"].tolist()))
    assert meta["epoch"] == 3 and len(meta["epochs"]) == 3, meta["epoch"]
    print("resumed run equals the uninterrupted one:", [round(e["train"]["categorical_cross_entropy"], 6) for e in b["epochs"]])
except AssertionError as e:
    sys.exit(f"test_torch_resume: FAIL: the resumed run differs from the uninterrupted one: {e}")
sys.path.insert(0, sys.argv[1])
import torch_train
# main sets the inter-op thread count, which torch allows once per process; the refusals come after it.
torch.set_num_interop_threads = lambda n: None
base = ["--model=vgg3dobn", "--dataset=cifar10", "--use_synthetic_data=True", "--batch_size=16", "--steps_per_epoch=3",
        "--threads=1", "--optimizer=sgd", "--momentum=0.9", "--learning_rate=0.01", "--seed=3", "--evaluate_on_test=False"]
cases = [
    ("a text file", "text.pt: not a PyTorch reference checkpoint", ["--num_epochs=3", "--resume_from=text.pt"]),
    ("a truncated checkpoint", "truncated.pt: not a PyTorch reference checkpoint",
     ["--num_epochs=3", "--resume_from=truncated.pt"]),
    ("a missing file", "nosuch.pt: no such file", ["--num_epochs=3", "--resume_from=nosuch.pt"]),
    ("another learning rate", "--learning_rate is 0.02 here but 0.01 in the checkpoint",
     ["--num_epochs=3", "--resume_from=after2.pt", "--learning_rate=0.02"]),
    ("another batch size", "--batch_size is 8 here but 16 in the checkpoint",
     ["--num_epochs=3", "--resume_from=after2.pt", "--batch_size=8"]),
    ("fewer epochs than done", "after2.pt: it has 2 epochs, more than --num_epochs=1",
     ["--num_epochs=1", "--resume_from=after2.pt"]),
    ("a checkpoint directory that is not there", "--checkpoint_file nosuch/ck.pt: no such directory",
     ["--num_epochs=3", "--checkpoint_file=nosuch/ck.pt"]),
]
bad = 0
for what, text, options in cases:
    err, out, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = torch_train.main(base + options)
        except SystemExit as e:
            code = e.code
    lines = err.getvalue().splitlines()
    if code not in (1, 2) or len(lines) != 1 or text not in lines[0]:
        print(f"test_torch_resume: FAIL: {what}: exit {code}, stderr {lines}", file=sys.stderr)
        bad += 1
    else:
        print(f"refused ({what}): {lines[0]}")
sys.exit(1 if bad else 0)
PY
# Another thread count resumes, with the warning that the result is no longer bit-identical.
tt --num_epochs=3 --resume_from=after2.pt --threads=2 > threads.out 2> threads.err || fail "a resume on 2 threads: $(cat threads.err)"
grep -q "written with 1 thread(s), this sitting runs 2: the result is not bit-identical" threads.err ||
  fail "no warning for another thread count: $(cat threads.err)"
echo "torch resume: ok"
