#!/usr/bin/env bash
# ll.sh - the two low-latency kernels end to end, as a user runs them:
# ll-single-dispatch-combine on one node (int8 and bf16) and
# ll-layered-dispatch-combine on two nodes, recorded (exit 0) and replayed;
# the single combine's status-first fault (data check, exit 4) and its
# receivers that do not wait (they find no rows: the combine's owners wait
# for rows that never come, a deadlock, exit 3),
# each reproduced by replay; the layered combine summing before the other
# server's end status (exit 4); `npurr layout`; bad options (exit 2).
#
# Usage: bash ll.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

s=(-k ll-single-dispatch-combine)
l=(-k ll-layered-dispatch-combine)

expect 0 "$npurr" record "${s[@]}" --npus-per-node 4 --tokens 16 --topk 4 --experts 16 -o "$work/s1"
has "check     passed"
replay 0 "$work/s1"
expect 0 "$npurr" record "${s[@]}" --dtype bf16 --tokens 8 --cores 6 -o "$work/s2"
replay 0 "$work/s2"
expect 0 "$npurr" record "${l[@]}" --nodes 2 --npus-per-node 4 --cores 12 -o "$work/l1"
has "check     passed"
replay 0 "$work/l1"

expect 4 "$npurr" record "${s[@]}" --npus-per-node 4 --hidden 7168 --inject status-first -o "$work/sf"
has "combined token"
replay 4 "$work/sf"
expect 3 "$npurr" record "${s[@]}" --npus-per-node 4 --inject no-status-wait -o "$work/sw"
has "CombineSum"
has "blocked on GM word"
replay 3 "$work/sw"
expect 4 "$npurr" record "${l[@]}" --nodes 2 --npus-per-node 4 --cores 12 --hidden 7168 \
    --inject no-server-wait -o "$work/lw"
has "combined token"

expect 0 "$npurr" layout "${s[@]}" --npus-per-node 4
has "dispatched row: 256 B of values"
expect 0 "$npurr" layout "${l[@]}" --nodes 2 --npus-per-node 4 --cores 12
has "token struct"

expect 2 "$npurr" record "${s[@]}" --nodes 2 -o "$work/bad1"
has "runs on one node"
expect 2 "$npurr" record "${l[@]}" --nodes 2 --npus-per-node 4 --cores 4 -o "$work/bad2"
has "--cores 4"
expect 2 "$npurr" record "${s[@]}" --hidden 100 -o "$work/bad3"
has "--hidden 100"
echo "ll.sh: ok"
