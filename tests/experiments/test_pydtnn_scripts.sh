#!/usr/bin/env bash
# PyDTNN's own example scripts (pydtnn/scripts/run_*.sh) run under `dtnn train` with their options unchanged:
# only the launcher, the command name (pydtnn_benchmark -> dtnn train), the data paths, and a step cap
# (--num_epochs=1 --steps_per_epoch=1 appended: like argparse, dtnn takes an option's last value).
#   test_pydtnn_scripts.sh DTNN_BINARY WORK_DIR [SCRIPTS_DIR]
# SCRIPTS_DIR: default $DTNN_PYDTNN_SRC/pydtnn/scripts when DTNN_PYDTNN_SRC is set, else
# ../shared/peers/pydtnn/src/pydtnn/scripts from the repository root. Exit 77 (skipped) without it.
#
# How a script's command line is obtained: the script itself runs (bash, in a scratch folder, a clean
# environment plus PATH, HOME and the two variables below) with shims first on PATH: `pydtnn_benchmark`
# records its arguments (NUL-separated) and OMP_NUM_THREADS, `mpirun` drops its own options (up to the word
# pydtnn_benchmark) and runs the shim. So bash itself does the line continuations, quotes, variables and loops:
#   - run_benchmarks.sh runs as `run_benchmarks.sh alexnet_cifar10 cifar10` (its own defaults of MODEL and
#     DATASET: under `set -o nounset` it aborts without both arguments), NODES=1 (its default: no launcher),
#     its flags from run_benchmarks_data.csv, and NUM_EPOCHS=1 STEPS_PER_EPOCH=1, which it requires too
#     (the step cap's values anyway); its `--history=FILE` is argparse's prefix of --history_file.
#   - run_vgg_cifar10_experiments.sh's loop makes 16 command lines (procs x threads) that differ only in
#     -np, OMP_NUM_THREADS and --history_file: the test checks that, and runs the first.
# Data: mnist -> /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist; its scripts are skipped
# without it); cifar10 -> seeded random CIFAR-10 binary files written here (200 records per file: dtnn reads
# any whole number of 3073-byte records); imagenet -> --use_synthetic_data=True appended, its paths pointed
# at an empty folder. A launch under mpirun becomes `mpirun -np 2 --oversubscribe` (--allow-run-as-root
# as root). Threads: the script's OMP_NUM_THREADS, capped so the ranks use at most DTNN_TEST_CORES (default
# 2) cores: min(OMP_NUM_THREADS or cores, max(1, cores / ranks)).
# Each run: `timeout 300` (DTNN_TEST_TIMEOUT overrides), in its own folder with results/ (the scripts'
# --history_file="results/..."; PyDTNN itself would fail at the end of training without that folder).
# Pass: exit 0, or exit 3 with dtnn's no-GPU line when the script asks for --enable_gpu=True and this
# machine has no GPU. Prints a table and "N passed, M failed"; exit 1 if any failed.
set -uo pipefail
if (($# < 2 || $# > 3)); then
  echo "usage: test_pydtnn_scripts.sh DTNN_BINARY WORK_DIR [SCRIPTS_DIR]" >&2
  exit 2
fi
dtnn="$(realpath "$1")"
work="$2"
repo="$(cd "$(dirname "$0")/../.." && pwd -P)"
if (($# == 3)); then
  scripts="$3"
elif [ -n "${DTNN_PYDTNN_SRC:-}" ]; then
  scripts="$DTNN_PYDTNN_SRC/pydtnn/scripts"
else
  scripts="$repo/../shared/peers/pydtnn/src/pydtnn/scripts"
fi
if [ ! -d "$scripts" ] || ! compgen -G "$scripts/run_*.sh" > /dev/null; then
  echo "SKIPPED: no PyDTNN scripts folder with run_*.sh at $scripts (set DTNN_PYDTNN_SRC or pass SCRIPTS_DIR)"
  exit 77
fi
scripts="$(cd "$scripts" && pwd -P)"
[ -x "$dtnn" ] || { echo "test_pydtnn_scripts: $1 is not executable" >&2; exit 2; }
py=/usr/bin/python3
[ -x "$py" ] || { echo "SKIPPED: $py is missing (it writes the random CIFAR-10 files)"; exit 77; }
cores="${DTNN_TEST_CORES:-2}"
limit="${DTNN_TEST_TIMEOUT:-300}"
mnist=/usr/share/datasets/fashion-mnist
have_mnist=0
[ -e "$mnist/train-images-idx3-ubyte.gz" ] || [ -e "$mnist/train-images-idx3-ubyte" ] && have_mnist=1
have_gpu=0
nvidia-smi -L 2> /dev/null | grep -q UUID && have_gpu=1
mpi_flags=(-np 2 --oversubscribe)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)

rm -rf "$work"
mkdir -p "$work/shims" "$work/data/cifar10" "$work/data/imagenet-unused" "$work/runs"
work="$(cd "$work" && pwd -P)"

# Shims. pydtnn_benchmark: one NNN.args (NUL-separated arguments) and NNN.env per call, in $CAPTURE_DIR.
cat > "$work/shims/pydtnn_benchmark" <<'SH'
#!/usr/bin/env bash
n=$(find "$CAPTURE_DIR" -maxdepth 1 -name '*.args' | wc -l)
f="$(printf '%s/%03d' "$CAPTURE_DIR" "$n")"
printf '%s\0' "$@" > "$f.args"
printf 'mpi=%s\nomp=%s\n' "${PYDTNN_SHIM_MPI:-0}" "${OMP_NUM_THREADS-}" > "$f.env"
SH
cat > "$work/shims/mpirun" <<'SH'
#!/usr/bin/env bash
while (($#)) && [ "$1" != pydtnn_benchmark ]; do shift; done
(($#)) || exit 0
PYDTNN_SHIM_MPI=1 exec "$@"
SH
chmod +x "$work/shims/pydtnn_benchmark" "$work/shims/mpirun"

# Seeded random CIFAR-10 binary files: 200 records of 1 label byte (0..9) + 3072 pixel bytes each.
"$py" - "$work/data/cifar10" <<'PY'
import random, sys
rng = random.Random(20240601)
for name in [f"data_batch_{k}.bin" for k in range(1, 6)] + ["test_batch.bin"]:
    out = bytearray()
    for _ in range(200):
        out.append(rng.randrange(10))
        out += rng.randbytes(3072)
    with open(f"{sys.argv[1]}/{name}", "wb") as f:
        f.write(out)
PY

is_true() { case "${1,,}" in true | 1 | yes) return 0 ;; esac; return 1; }  # PyDTNN's bool_lambda

# last_value NAME ARGS...: the value of the last --NAME=V or --NAME V (empty if absent).
last_value() {
  local name="$1" v="" i
  shift
  local -a a=("$@")
  for ((i = 0; i < ${#a[@]}; i++)); do
    case "${a[i]}" in
      "--$name="*) v="${a[i]#--"$name"=}" ;;
      "--$name") ((i + 1 < ${#a[@]})) && v="${a[i + 1]}" ;;
    esac
  done
  printf '%s' "$v"
}

rows=()
passed=0
failed=0
skipped=0
row() { rows+=("$(printf '%-36s %5s %7s  %s' "$1" "$2" "$3" "$4")"); }

for script in "$scripts"/run_*.sh; do
  name="$(basename "$script")"
  # DTNN_SCRIPTS_ONLY / DTNN_SCRIPTS_EXCEPT: extended regular expressions on the script's name (ctest runs the
  # ImageNet scripts, minutes of synthetic 224x224 images on 2 cores, apart under the `slow` label).
  if [ -n "${DTNN_SCRIPTS_ONLY:-}" ] && ! [[ "$name" =~ $DTNN_SCRIPTS_ONLY ]]; then continue; fi
  if [ -n "${DTNN_SCRIPTS_EXCEPT:-}" ] && [[ "$name" =~ $DTNN_SCRIPTS_EXCEPT ]]; then continue; fi
  dir="$work/runs/${name%.sh}"
  mkdir -p "$dir/capture/cwd" "$dir/results"
  script_args=()
  [ "$name" = run_benchmarks.sh ] && script_args=(alexnet_cifar10 cifar10)
  (cd "$dir/capture/cwd" && env -i PATH="$work/shims:$PATH" HOME="${HOME:-$dir}" CAPTURE_DIR="$dir/capture" NUM_EPOCHS=1 \
    STEPS_PER_EPOCH=1 timeout 60 bash "$script" "${script_args[@]}" > "$dir/script.out" 2>&1 < /dev/null)
  mapfile -t calls < <(find "$dir/capture" -maxdepth 1 -name '*.args' | sort)
  if ((${#calls[@]} == 0)); then
    row "$name" - - "FAIL: the script never called pydtnn_benchmark (see $dir/script.out)"
    failed=$((failed + 1))
    continue
  fi
  note=""
  if ((${#calls[@]} > 1)); then
    # Several command lines (a loop): they must differ only in --history_file (launcher and threads aside).
    first="$(tr '\0' '\n' < "${calls[0]}" | grep -v '^--history_file=')"
    for c in "${calls[@]:1}"; do
      [ "$(tr '\0' '\n' < "$c" | grep -v '^--history_file=')" = "$first" ] ||
        note=" (NOTE: its ${#calls[@]} command lines differ beyond --history_file; only the first ran)"
    done
    [ -n "$note" ] || note=" (1st of ${#calls[@]} command lines, differing only in -np, threads, --history_file)"
  fi
  mapfile -d '' -t args < "${calls[0]}"
  mpi="$(sed -n 's/^mpi=//p' "${calls[0]%.args}.env")"
  omp="$(sed -n 's/^omp=//p' "${calls[0]%.args}.env")"

  # Data paths.
  dataset="$(last_value dataset "${args[@]}")"
  dataset="${dataset:-mnist}"  # PyDTNN's default
  case "$dataset" in
    mnist) path="$mnist" ;;
    cifar10) path="$work/data/cifar10" ;;
    imagenet) path="$work/data/imagenet-unused" ;;
    *) path="" ;;
  esac
  if [ "$dataset" = mnist ] && ((have_mnist == 0)); then
    row "$name" - - "SKIPPED: $mnist is missing (apt-get install dataset-fashion-mnist)"
    skipped=$((skipped + 1))
    continue
  fi
  out=()
  seen_train=0 seen_test=0
  for ((i = 0; i < ${#args[@]}; i++)); do
    a="${args[i]}"
    case "$a" in
      --dataset_train_path=*) out+=("--dataset_train_path=$path"); seen_train=1 ;;
      --dataset_test_path=*) out+=("--dataset_test_path=$path"); seen_test=1 ;;
      --dataset_train_path | --dataset_test_path)
        out+=("$a=$path"); i=$((i + 1))
        [ "$a" = --dataset_train_path ] && seen_train=1 || seen_test=1 ;;
      *) out+=("$a") ;;
    esac
  done
  ((seen_train)) || out+=("--dataset_train_path=$path")
  ((seen_test)) || out+=("--dataset_test_path=$path")
  [ "$dataset" = imagenet ] && ! is_true "$(last_value use_synthetic_data "${out[@]}")" && out+=(--use_synthetic_data=True)
  out+=(--num_epochs=1 --steps_per_epoch=1)

  ranks=1
  launch=()
  if [ "$mpi" = 1 ]; then
    ranks=2
    launch=(mpirun "${mpi_flags[@]}" -x OMP_NUM_THREADS)
  fi
  cap=$((cores / ranks))
  ((cap >= 1)) || cap=1
  threads="${omp:-$cap}"
  [[ "$threads" =~ ^[0-9]+$ ]] && ((threads >= 1 && threads <= cap)) || threads=$cap

  printf '%s\n' "${launch[@]}" "$dtnn" train "${out[@]}" > "$dir/command.txt"
  start=$(date +%s.%N)
  (cd "$dir" && OMP_NUM_THREADS="$threads" timeout -k 10 "$limit" "${launch[@]}" "$dtnn" train "${out[@]}" \
    > "$dir/dtnn.out" 2>&1 < /dev/null)
  rc=$?
  secs="$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')"
  line="$(grep -a '^dtnn:' "$dir/dtnn.out" | tail -n 1)"
  gpu="$(last_value enable_gpu "${out[@]}")"
  if ((rc == 0)); then
    verdict="ok"
    passed=$((passed + 1))
  elif ((rc == 3)) && is_true "$gpu" && ((have_gpu == 0)) &&
    [[ "$line" =~ --enable_gpu:\ (no\ CUDA\ device\ is\ available|this\ dtnn\ was\ built\ without\ CUDA) ]]; then
    verdict="ok (asks for a GPU; none here): $line"
    passed=$((passed + 1))
  else
    ((rc == 124 || rc == 137)) && line="timed out after $limit s${line:+; last: $line}"
    verdict="FAIL: ${line:-$(tail -n 1 "$dir/dtnn.out")}"
    failed=$((failed + 1))
  fi
  row "$name" "$rc" "$secs" "$verdict$note"
done

printf '%-36s %5s %7s  %s\n' script exit seconds reason
printf '%s\n' "${rows[@]}"
((skipped == 0)) || echo "$skipped skipped"
echo "$passed passed, $failed failed"
((failed == 0))
