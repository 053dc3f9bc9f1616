#!/usr/bin/env bash
# hostfile.sh N [PREFIX]: an smpirun hostfile for N ranks, one per host, on the platforms of this directory
# (their hosts are PREFIX0 .. PREFIX<n-1>, PREFIX = node- by default): the names node-0 .. node-<N-1>, one a line.
# SimGrid places rank i on line i; a name that the platform lacks fails at start ("no such host").
set -euo pipefail
n=${1:?usage: hostfile.sh N [PREFIX]}
prefix=${2:-node-}
[[ $n =~ ^[1-9][0-9]{0,5}$ ]] || { echo "hostfile.sh: N must be an integer in 1..999999 (got '$n')" >&2; exit 2; }
for ((i = 0; i < n; i++)); do echo "$prefix$i"; done
