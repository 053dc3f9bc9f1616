#!/usr/bin/env bash
# History belongs in git log and the measured baselines, not in code, help text, tests or user docs: no
# "issue N" or "session N" outside results/baselines/ (and the fuzzers' seed files, copies of old inputs).
# Prints each offending line and exits 1; exit 0 and nothing printed when the tree is clean. Reads the files
# git tracks or would track (git grep) in a checkout, else every file.
#   ci/check_history.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
pattern='(issue|session)s? #?[0-9]'
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  hits="$(git grep --untracked -nIiE "$pattern" -- . ':!results/baselines' ':!tests/fuzz/corpus' \
    ':!ci/check_history.sh' || true)"
else
  hits="$(grep -rnIiE "$pattern" --exclude-dir=baselines --exclude-dir=corpus --exclude-dir=build \
    --exclude-dir=.git --exclude=check_history.sh . || true)"
fi
if [ -n "$hits" ]; then
  echo "$hits"
  echo "check_history: $(printf '%s\n' "$hits" | wc -l) line(s) name an issue or a session:" \
    "say why in the code, the history in git log"
  exit 1
fi
