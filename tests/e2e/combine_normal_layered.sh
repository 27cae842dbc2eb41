#!/usr/bin/env bash
# combine_normal_layered.sh - combine-normal-layered (A2's layered normal
# combine) end to end: two servers recorded (exit 0) and replayed, with
# group-limited routing as the public rows; its two faults caught by the
# data check (exit 4) and reproduced by replay; `npurr layout`; bad
# options (exit 2).
#
# Usage: bash combine_normal_layered.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

k=(-k combine-normal-layered --nodes 2)
small=(--npus-per-node 4 --tokens 24 --hidden 64 --experts 16 --cores 8)

expect 0 "$npurr" record "${k[@]}" "${small[@]}" -o "$work/ok"
has "check     passed"
replay 0 "$work/ok"
expect 0 "$npurr" record "${k[@]}" --tokens 16 --hidden 128 --routing group-limited -o "$work/ok8"
replay 0 "$work/ok8"

big=(--npus-per-node 4 --tokens 16 --hidden 7168 --experts 32 --cores 8)
expect 4 "$npurr" record "${k[@]}" "${big[@]}" --inject no-status-wait -o "$work/nw"
has "combined token"
replay 4 "$work/nw"
expect 4 "$npurr" record "${k[@]}" "${big[@]}" --inject no-ipc-wait -o "$work/ni"
has "combined token"

expect 0 "$npurr" layout "${k[@]}" "${small[@]}"
has "sent whole to the other server"

expect 2 "$npurr" record -k combine-normal-layered --nodes 1 -o "$work/bad1"
has "written for two servers"
expect 2 "$npurr" record "${k[@]}" --tokens 5000 -o "$work/bad2"
has "--tokens 5000"
echo "combine_normal_layered.sh: ok"
