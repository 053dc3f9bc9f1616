#!/usr/bin/env bash
# dtnn's GPU backend vs PyTorch on the same GPU: training throughput (samples/s) of the same models, data
# shapes and recipe (SGD lr 0.01, batch 64, synthetic data), dtnn and the PyTorch reference runner
# (experiments/reference/torch_train.py) run alternately. Runs on the GPU machine (`python3` = a CUDA PyTorch).
#
#   experiments/gpu_vs_pytorch.sh [BUILD_DIR] [OUT_DIR]
#   defaults: build, a new mktemp -d directory
#
# Cases (the first epoch of every run is warm-up, cudnnFind / cudnn.benchmark, and is left out: each run
# contributes the samples/s of its epochs 2..N, from its report's "epochs"[i]["samples_per_s"]):
#   resnet50_fp32   resnet50_imagenet, synthetic imagenet (224x224x3), TF32 off
#   resnet50_tf32   resnet50_imagenet, synthetic imagenet, TF32 on (cuBLAS and cuDNN, both frameworks)
#   vgg16           vgg16_cifar10, synthetic cifar10 (32x32x3), TF32 off
#   resnet20        resnet20_cifar10, synthetic cifar10, TF32 off
# Environment (defaults): REPS (2) runs of each framework per case; EPOCHS (3); BATCH (64); RESNET50_STEPS
# (30) and CIFAR_STEPS (100) steps per epoch; TENSOR_FORMAT (NCHW; or NHWC, or AUTO = NCHW on the GPU) for
# both frameworks; TORCH_THREADS (4) host threads of the reference; CASES (all four, space-separated names
# above); RUN_TIMEOUT (300) seconds per run; PYTHON (python3).
#
# OUT_DIR receives every run's report (CASE.dtnn.REP.json, CASE.pytorch.REP.json), log (.log) and exit
# status (.rc), and summary.md: per case the median samples/s over the pooled epochs 2..N of its runs, with
# min-max, and the ratio dtnn / PyTorch of the medians. The table is printed last.
#
# Both run with --evaluate_on_test=False: the test pass (synthetic imagenet: 50,000 images) would dominate a
# resnet50 run's wall time and does not affect the training samples/s compared here.
set -uo pipefail
cd "$(dirname "$0")/.."

build="${1:-build}"
out="${2:-$(mktemp -d -t dtnn_gpu_vs_pytorch.XXXXXX)}"
mkdir -p "$out" || exit 1
dtnn="$build/experiments/dtnn"
reference=experiments/reference/torch_train.py
py="${PYTHON:-python3}"
reps="${REPS:-2}"
epochs="${EPOCHS:-3}"
batch="${BATCH:-64}"
r50_steps="${RESNET50_STEPS:-30}"
cifar_steps="${CIFAR_STEPS:-100}"
format="${TENSOR_FORMAT:-NCHW}"
torch_threads="${TORCH_THREADS:-4}"
cases="${CASES:-resnet50_fp32 resnet50_tf32 vgg16 resnet20}"
run_timeout="${RUN_TIMEOUT:-300}"

if [ ! -x "$dtnn" ]; then
  echo "gpu_vs_pytorch: no dtnn binary at $dtnn (give the build directory as the first argument)" >&2
  exit 2
fi
if ! torch_version="$("$py" -c 'import sys, torch; print(torch.__version__); sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null)"; then
  echo "gpu_vs_pytorch: $py has no PyTorch with a usable CUDA device" >&2
  exit 3
fi

# case -> model dataset steps allow_tf32
case_spec() {
  case "$1" in
    resnet50_fp32) echo "resnet50_imagenet imagenet $r50_steps False" ;;
    resnet50_tf32) echo "resnet50_imagenet imagenet $r50_steps True" ;;
    vgg16)         echo "vgg16_cifar10 cifar10 $cifar_steps False" ;;
    resnet20)      echo "resnet20_cifar10 cifar10 $cifar_steps False" ;;
    *) return 1 ;;
  esac
}
: >"$out/cases.txt"
for c in $cases; do
  spec="$(case_spec "$c")" || { echo "gpu_vs_pytorch: unknown case '$c' in CASES" >&2; exit 2; }
  echo "$c $spec" >>"$out/cases.txt"  # name model dataset steps allow_tf32, for the summary
done

# run FRAMEWORK CASE REP: one training run, its report, log and exit status in $out.
run() {
  local fw="$1" name="$2" rep="$3" model dataset steps tf32
  read -r model dataset steps tf32 <<<"$(case_spec "$name")"
  local base="$out/$name.$fw.$rep"
  local common=(--model="$model" --dataset="$dataset" --use_synthetic_data=True --batch_size="$batch"
                --optimizer=sgd --learning_rate=0.01 --num_epochs="$epochs" --steps_per_epoch="$steps"
                --enable_gpu=True --allow_tf32="$tf32" --tensor_format="$format" --report="$base.json")
  local cmd
  if [ "$fw" = dtnn ]; then
    cmd=("$dtnn" train "${common[@]}" --progress=false --evaluate_on_test=False)
  else
    cmd=("$py" "$reference" "${common[@]}" --threads="$torch_threads" --evaluate_on_test=False)
  fi
  rm -f "$base.json"
  local t0=$SECONDS rc
  { echo "\$ ${cmd[*]}"; timeout "$run_timeout" "${cmd[@]}"; } >"$base.log" 2>&1
  rc=$?
  echo "$rc" >"$base.rc"
  printf '  %-14s %-8s rep %s: rc %s, %ss\n' "$name" "$fw" "$rep" "$rc" "$((SECONDS - t0))"
}

start=$SECONDS
echo "gpu_vs_pytorch: dtnn $dtnn, PyTorch $torch_version, cases: $cases;" \
     "$reps rep(s), $epochs epochs, batch $batch, $format; output in $out"
for name in $cases; do
  for ((rep = 1; rep <= reps; rep++)); do
    # alternate which framework goes first, so neither always meets a warmer (or hotter) GPU
    if ((rep % 2)); then order="dtnn pytorch"; else order="pytorch dtnn"; fi
    for fw in $order; do run "$fw" "$name" "$rep"; done
  done
done

"$py" - "$out" "$reps" "$format" "$epochs" "$batch" "$((SECONDS - start))" <<'PY'
import json, os, statistics, sys

out, reps, fmt, epochs, batch, wall = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
with open(os.path.join(out, "cases.txt")) as f:
    cases = [line.split() for line in f if line.strip()]  # name model dataset steps allow_tf32

def load(name, fw, rep):
    """(rates of the epochs after the warm-up epoch, report), or (None, why there are none)."""
    base = os.path.join(out, f"{name}.{fw}.{rep}")
    try:
        rc = open(base + ".rc").read().strip()
    except OSError:
        rc = "?"
    try:
        with open(base + ".json") as f:
            report = json.load(f)
    except (OSError, ValueError):
        why = {"3": " unsupported", "124": " timeout", "137": " killed"}.get(rc, "")
        return None, f"rc {rc}{why}"
    rates = [e["samples_per_s"] for e in report.get("epochs", [])]
    return (rates[1:] if len(rates) > 1 else rates), report

rows, runs, env = [], [], {}
for name, model, dataset, steps, tf32 in cases:
    row = {"case": name, "model": model, "tf32": "on" if tf32 == "True" else "off", "params": {}}
    for fw in ("dtnn", "pytorch"):
        pooled, notes = [], []
        for rep in range(1, reps + 1):
            rates, report = load(name, fw, rep)
            if rates is None:
                notes.append(report)
                runs.append(f"{name} {fw} rep {rep}: {report}")
                continue
            pooled += rates
            runs.append(f"{name} {fw} rep {rep}: " + (f"median {statistics.median(rates):.0f} samples/s over "
                        f"{len(rates)} epoch(s)" if rates else "no epochs"))
            row["params"][fw] = report.get("model", {}).get("params")
            e = report.get("environment", {})
            if fw == "pytorch" and "gpu" in e:
                env["gpu"] = e["gpu"]
                env["pytorch"] = f"PyTorch {e.get('torch')} ({e.get('cuda', '')})"
            if fw == "dtnn":
                env["dtnn"] = f"dtnn {e.get('dtnn_version', '?')} ({e.get('cuda', '?')})"
        row[fw] = {"rates": pooled, "notes": notes}
    rows.append(row)

def cell(d):
    if not d["rates"]:
        return "failed: " + ", ".join(d["notes"]) if d["notes"] else "no data"
    r = d["rates"]
    s = f"{statistics.median(r):.0f} ({min(r):.0f}-{max(r):.0f})"
    return s + (f" [{len(d['notes'])} run(s) failed]" if d["notes"] else "")

def model_cell(row):
    counts = {fw: n for fw, n in row["params"].items() if isinstance(n, int)}
    if not counts:
        return row["model"]
    if len(set(counts.values())) > 1:
        return f"{row['model']} (PARAMS DIFFER: " + ", ".join(f"{fw} {n:,}" for fw, n in counts.items()) + ")"
    return f"{row['model']} ({next(iter(counts.values())):,} params)"

table = [
    "| case | model | TF32 | dtnn samples/s | PyTorch samples/s | dtnn / PyTorch |",
    "|---|---|---|---|---|---|",
]
for row in rows:
    d, p = row["dtnn"]["rates"], row["pytorch"]["rates"]
    ratio = f"{statistics.median(d) / statistics.median(p):.2f}x" if d and p else "-"
    table.append(f"| {row['case']} | {model_cell(row)} | {row['tf32']} | {cell(row['dtnn'])} | "
                 f"{cell(row['pytorch'])} | {ratio} |")
header = [
    "# dtnn GPU vs PyTorch: training samples/s",
    "",
    f"GPU: {env.get('gpu', 'unknown')}; {env.get('pytorch', 'PyTorch: no report')}; "
    f"{env.get('dtnn', 'dtnn: no report')}",
    "",
    f"Synthetic data, SGD lr 0.01, batch {batch}, {fmt}, {epochs} epochs per run (epoch 1 = warm-up, left out "
    f"when there are more), {reps} run(s) per framework, alternating; median (min-max) over the pooled later "
    f"epochs of the runs; ratio of the medians. Wall time {wall} s.",
    "",
]
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("\n".join(header + table + ["", "Runs:", ""] + [f"- {r}" for r in runs]) + "\n")
print()
print("\n".join(f"  {r}" for r in runs))
print()
print("\n".join(header + table))
PY
