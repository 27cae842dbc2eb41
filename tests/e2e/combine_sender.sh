#!/usr/bin/env bash
# combine_sender.sh - the combine-sender kernels end to end, as a user runs
# them: a clean record of both schemes (exit 0) and its replay; the two
# faults of issue 5, each detected at record time and reproduced by replay
# (ring smaller than a flush: deadlock, exit 3; tail committed before MTE3
# completes: stale ring bytes, exit 4); `npurr layout`; bad options.
#
# Usage: bash combine_sender.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

small=(--npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16
       --staging-bytes 1024 --ring-bytes 4096)

# Clean runs: every check passes, the run folder exists, replay agrees.
expect 0 "$npurr" record -k combine-sender "${small[@]}" -o "$work/ok"
[ -f "$work/ok/trace.zst" ] && [ -f "$work/ok/index.db" ] || fail "record wrote no run folder"
replay 0 "$work/ok"
expect 0 "$npurr" record -k combine-sender-inplace "${small[@]}" --routing zipf:1.5 -o "$work/ok1"
replay 0 "$work/ok1"

# Fault 1: a 512 B ring cannot take a 1024 B flush: the sender waits for room
# forever while its receiver waits for data.
expect 3 "$npurr" record -k combine-sender "${small[@]}" --ring-bytes 512 -o "$work/dead"
grep -qi deadlock "$work/out" || { cat "$work/out" >&2; fail "no deadlock report"; }
replay 3 "$work/dead"

# Fault 2: the tail is committed before the put lands; the receiver copies
# the ring's previous lap and the data check names it.
stale=(--npus-per-node 2 --tokens 64 --hidden 1024 --topk 2 --experts 8
       --staging-bytes 65536 --ring-bytes 65536 --inject no-mte3-wait)
expect 4 "$npurr" record -k combine-sender "${stale[@]}" -o "$work/stale"
grep -q "before the sender's data landed" "$work/out" || { cat "$work/out" >&2; fail "no stale-read diagnosis"; }
replay 4 "$work/stale"

# Layout: one line per rank, the UB budget.
expect 0 "$npurr" layout -k combine-sender "${small[@]}"
grep -q "UB per sender core" "$work/out" || fail "layout lacks the UB budget"
[ "$(grep -cE '^[0-3] ' "$work/out")" -eq 4 ] || { cat "$work/out" >&2; fail "layout lacks a line per rank"; }

# Bad input is refused with a message naming the option (exit 2, a usage error).
expect 2 "$npurr" record -k combine-sender --nodes 2 --tokens 4 -o "$work/bad1"
grep -q -- "--nodes" "$work/out" || fail "no message naming --nodes"
expect 2 "$npurr" record -k combine-sender --routing zipf:-2 -o "$work/bad2"
grep -q -- "--routing zipf:-2" "$work/out" || fail "no message naming --routing"
echo "combine_sender: ok"
