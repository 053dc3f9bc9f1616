#!/usr/bin/env bash
# Runs a command with this machine's loopback device capped at RATE: a network-like link for ranks of one
# machine that talk over TCP (`mpirun --mca btl self,tcp`), where communication is otherwise too fast to
# matter (a 1 MiB allreduce in ~0.5 ms) and overlap cannot show.
#
#   experiments/shaped_loopback.sh RATE COMMAND [ARG...]   e.g. RATE = 1gbit, 300mbit, 100mbit (tc's units)
#   experiments/shaped_loopback.sh off                     removes a cap this script left behind (kill -9)
#
# The cap: an htb qdisc (handle 7e57:) on `lo`'s egress whose capped class (rate = ceil = RATE, burst 96 KiB,
# more than lo's 64 KiB packets) takes every IPv4 and IPv6 packet not addressed to 127.0.0.0/8 or ::1; those
# pass through an uncapped class. It is removed when the command ends or fails, or when this script gets
# INT, TERM or HUP (the command gets TERM, and KILL 10 s later). What it means:
#   - Open MPI's TCP btl between two local ranks excludes 127.0.0.1 and uses the machine's own address,
#     which Linux routes through lo: every byte crosses lo once, so the ranks share one link of RATE for both
#     directions. A 2-rank allreduce of n bytes (each rank sends n: ring, recursive doubling and Rabenseifner
#     alike at 2 ranks) moves 2n through it, t ~ 2n * 8 / RATE (1 MiB at 200mbit: 83.9 ms; measured 84.0).
#   - Not capped: shared memory (vader, the default btl), 127.0.0.0/8 and ::1 (Slurm and munge as
#     ci/slurm_local.sh sets them up, localhost services). Capped meanwhile: any other traffic between this
#     machine's own addresses; run it alone.
# Needs root (CAP_NET_ADMIN), tc (iproute2) and the kernel's htb qdisc and u32 filter.
# Exit: the command's status; 2 with one line for refused arguments or a loopback that already has a
# qdisc (someone else's cap: left alone); 3 with one line when this machine cannot shape (tests skip on 3).
set -uo pipefail
me="experiments/shaped_loopback.sh"
handle="7e57:"
refuse() { echo "$me: $*" >&2; exit 2; }
cannot() { echo "$me: cannot shape here: $*" >&2; exit 3; }
ours() { tc qdisc show dev lo 2>/dev/null | grep -q "^qdisc htb $handle root"; }

[ $# -ge 1 ] || refuse "usage: $me RATE COMMAND [ARG...] | $me off"
if [ "$1" = off ]; then
  [ $# -eq 1 ] || refuse "'off' takes no command"
  command -v tc > /dev/null || cannot "no tc on PATH (apt-get install iproute2)"
  if ours; then
    tc qdisc del dev lo root handle "$handle" || cannot "tc could not remove the cap"
    echo "$me: removed the cap on lo"
  else
    echo "$me: lo has no cap of this script (tc qdisc show dev lo: $(tc qdisc show dev lo | head -1))"
  fi
  exit 0
fi
rate="$1"
shift
[[ "$rate" =~ ^[0-9]+(\.[0-9]+)?(k|m|g)?(bit|bps)$ ]] ||
  refuse "RATE must be a number with tc's unit (bit, kbit, mbit, gbit, bps, kbps, mbps, gbps), not '$rate'"
[[ "$rate" =~ ^0+(\.0+)?[a-z]+$ ]] && refuse "RATE must be above zero, not '$rate'"
[ $# -ge 1 ] || refuse "no COMMAND to run under the cap"
command -v tc > /dev/null || cannot "no tc on PATH (apt-get install iproute2)"
[ "$(id -u)" -eq 0 ] || cannot "not root (tc needs CAP_NET_ADMIN)"
current="$(tc qdisc show dev lo 2>&1 | head -1)"
case "$current" in
  "qdisc noqueue "* | "") ;;
  *) refuse "lo already has a qdisc ($current); remove it first (tc qdisc del dev lo root), or '$me off' if it is this script's" ;;
esac
pending=""  # a signal that came before the command started: acted on once it has
unshape() { ours && { tc qdisc del dev lo root handle "$handle" || echo "$me: could not remove the cap on lo" >&2; }; }
stop() {  # stops the command (TERM, then KILL after 10 s), then exits; the EXIT trap removes the cap
  local pids
  pids="$(jobs -p)"
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -TERM $pids 2> /dev/null
    for _ in $(seq 100); do
      # shellcheck disable=SC2086
      kill -0 $pids 2> /dev/null || break
      sleep 0.1
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2> /dev/null
    wait 2> /dev/null
  fi
  exit "$1"
}
# Installed before the cap exists, so that no signal can leave one behind: while tc runs, a signal only
# records itself (bash runs the trap once tc returns), and the EXIT trap removes whatever was set up.
trap unshape EXIT
trap 'pending=130' INT
trap 'pending=143' TERM
trap 'pending=129' HUP
# `add` (not `replace`) fails if another qdisc appeared since the check: never overwrite one.
if ! msg="$(tc qdisc add dev lo root handle "$handle" htb default 2 2>&1)"; then
  trap - EXIT
  case "$msg" in
    *"File exists"* | *"Exclusivity"*) refuse "lo got a qdisc meanwhile ($msg)" ;;
    *) cannot "tc qdisc add ... htb failed: $msg" ;;
  esac
fi
# Class 1 (capped) takes IPv4 and IPv6 packets except those to 127.0.0.0/8 and ::1, which go to class 2
# (uncapped), as does anything else (ARP-less lo has none). quantum: above lo's 64 KiB packets, which also
# silences htb's "quantum is big" warning at high rates.
u32() { tc filter add dev lo parent "$handle" protocol "$1" prio "$2" u32 match "${@:3}" 2>&1; }
if ! msg="$(tc class add dev lo parent "$handle" classid "${handle}1" htb rate "$rate" ceil "$rate" burst 96kb \
              cburst 96kb quantum 100000 2>&1 &&
            tc class add dev lo parent "$handle" classid "${handle}2" htb rate 100gbit quantum 100000 2>&1 &&
            u32 ip 1 ip dst 127.0.0.0/8 flowid "${handle}2" && u32 ip 2 u32 0 0 flowid "${handle}1" &&
            u32 ipv6 3 ip6 dst ::1/128 flowid "${handle}2" && u32 ipv6 4 u32 0 0 flowid "${handle}1")"; then
  cannot "tc could not set up the capped class and its filters: $msg"  # the EXIT trap removes the qdisc
fi
[ -z "$pending" ] || exit "$pending"
trap 'stop 130' INT
trap 'stop 143' TERM
trap 'stop 129' HUP
# In the background so that a signal reaches the traps at once (bash runs traps only between commands);
# `<&0` keeps stdin, which a background job would otherwise read from /dev/null. A signal between the start
# and `wait` finds the command through `jobs -p`.
"$@" <&0 &
wait "$!"
exit $?
