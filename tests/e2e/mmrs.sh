#!/usr/bin/env bash
# mmrs.sh - matmul-reduce-scatter (seed 004) end to end, as a user runs it:
# clean records on 2 and 4 ranks (exit 0) and their replay; the
# no-stage-wait fault detected by the data check with the overwritten stage
# named (exit 4) and reproduced by replay; `npurr layout`; bad options
# refused with the option named (exit 1).
#
# Usage: bash mmrs.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

# 8 rounds over 2 workspace stages on 2 ranks, 4 on 4 ranks.
shape=(-k matmul-reduce-scatter --m 512 --n 128 --k 64 --block-m 32 --block-n 64)

expect 0 "$npurr" record "${shape[@]}" --npus-per-node 2 -o "$work/ok2"
[ -f "$work/ok2/trace.zst" ] && [ -f "$work/ok2/index.db" ] || fail "record wrote no run folder"
grep -q "check     passed" "$work/out" || { cat "$work/out" >&2; fail "check did not pass"; }
replay 0 "$work/ok2"
# M/R = 100 rows over 64-row tiles, N and K not multiples of their tiles
expect 0 "$npurr" record -k matmul-reduce-scatter --npus-per-node 4 --m 400 --n 176 --k 48 \
    --block-k 32 --stages 3 --cores 3 -o "$work/ok4"
replay 0 "$work/ok4"

# The AIC does not wait for flagAivFinishCompute: stages are overwritten
# before the peers pull them and D is wrong.
expect 4 "$npurr" record "${shape[@]}" --npus-per-node 2 --inject no-stage-wait -o "$work/race"
grep -q "the AIC overwrote stage" "$work/out" || { cat "$work/out" >&2; fail "no stage-overwrite diagnosis"; }
replay 4 "$work/race"

expect 0 "$npurr" layout "${shape[@]}" --npus-per-node 4
grep -q "commLoops 8" "$work/out" || { cat "$work/out" >&2; fail "layout lacks the schedule"; }

expect 2 "$npurr" record -k matmul-reduce-scatter --nodes 2 --npus-per-node 2 -o "$work/bad1"
grep -q -- "--nodes" "$work/out" || fail "no message naming --nodes"
expect 2 "$npurr" record -k matmul-reduce-scatter --npus-per-node 2 --m 255 -o "$work/bad2"
grep -q -- "--m 255" "$work/out" || fail "no message naming --m"
expect 2 "$npurr" record -k matmul-reduce-scatter --npus-per-node 2 --block-m 512 -o "$work/bad3"
grep -q -- "L0A" "$work/out" || fail "no message naming the L0A limit"
echo "mmrs: ok"
