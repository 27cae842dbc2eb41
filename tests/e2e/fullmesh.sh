#!/usr/bin/env bash
# fullmesh.sh - fullmesh-dispatch-combine (seed 002) end to end, as a user
# runs it: clean records on 1 node (BatchWrite over HCCS) and 2 nodes (RDMA)
# with several rounds (exit 0) and their replay; the no-double-buffer fault
# caught both ways the seed warns of: a slow rank's dispatch rows overwritten
# (data check, exit 4) and a flag lost under token data (deadlock, exit 3),
# each reproduced by replay; `npurr layout`; bad options (exit 2).
# --dtype int8: clean records on 1 and 2 nodes and their replay, the
# window-overwrite diagnosis on int8 rows, the layout's int8 rows, and a
# --hidden that is no multiple of 128 refused.
#
# Usage: bash fullmesh.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

k=(-k fullmesh-dispatch-combine)

expect 0 "$npurr" record "${k[@]}" --npus-per-node 4 --tokens 16 --hidden 100 --topk 4 \
    --experts 16 --rounds 3 -o "$work/ok1"
[ -f "$work/ok1/trace.zst" ] && [ -f "$work/ok1/index.db" ] || fail "record wrote no run folder"
grep -q "check     passed" "$work/out" || { cat "$work/out" >&2; fail "check did not pass"; }
replay 0 "$work/ok1"
expect 0 "$npurr" record "${k[@]}" --nodes 2 --npus-per-node 2 --tokens 8 --hidden 64 --topk 3 \
    --experts 8 --routing zipf:1.5 -o "$work/ok2"
replay 0 "$work/ok2"
# one token, most experts empty
expect 0 "$npurr" record "${k[@]}" --npus-per-node 2 --tokens 1 --topk 1 --experts 16 -o "$work/ok3"

# Every EP op in window block 0. Zipf routing makes one rank hot: it is
# still reading its dispatch rows when the cold ranks' combine lands.
hot=(--npus-per-node 4 --tokens 64 --hidden 2048 --topk 2 --experts 8 --routing zipf:2
     --cores 1 --rounds 3)
expect 4 "$npurr" record "${k[@]}" "${hot[@]}" --inject no-double-buffer -o "$work/dirty"
grep -q "the window was overwritten before the row was read" "$work/out" ||
    { cat "$work/out" >&2; fail "no window-overwrite diagnosis"; }
replay 4 "$work/dirty"
expect 0 "$npurr" record "${k[@]}" "${hot[@]}" -o "$work/clean"

# Here a combine lands on a count row before FLAG1 was polled: lost flag.
lost=(--npus-per-node 4 --tokens 32 --hidden 2048 --topk 2 --experts 8 --routing zipf:2 --cores 4)
expect 3 "$npurr" record "${k[@]}" "${lost[@]}" --inject no-double-buffer -o "$work/dead"
grep -q "fullmesh.FLAG1\[" "$work/out" || { cat "$work/out" >&2; fail "deadlock report names no FLAG1"; }
replay 3 "$work/dead"

expect 0 "$npurr" layout "${k[@]}" --nodes 2 --npus-per-node 2
grep -q "rankSizeOnWin" "$work/out" || { cat "$work/out" >&2; fail "layout lacks the window"; }

expect 2 "$npurr" record "${k[@]}" --npus-per-node 4 --experts 30 -o "$work/bad1"
grep -q -- "--experts 30" "$work/out" || fail "no message naming --experts"
expect 2 "$npurr" record "${k[@]}" --npus-per-node 2 --inject single-buffer -o "$work/bad2"
grep -q -- "--inject single-buffer" "$work/out" || fail "no message naming --inject"
# INT8 dispatch (the A2 low-latency dispatch's dynamic quant)
i8=(--dtype int8 --hidden 256)
expect 0 "$npurr" record "${k[@]}" "${i8[@]}" --npus-per-node 4 --tokens 16 --topk 4 --experts 16 \
    --rounds 3 -o "$work/i8a"
has "check     passed"
replay 0 "$work/i8a"
expect 0 "$npurr" record "${k[@]}" "${i8[@]}" --nodes 2 --npus-per-node 2 --tokens 8 --topk 3 \
    --experts 8 --routing zipf:1.5 -o "$work/i8b"
replay 0 "$work/i8b"
expect 4 "$npurr" record "${k[@]}" "${hot[@]}" --dtype int8 --inject no-double-buffer -o "$work/i8dirty"
has "quantized to int8: it is no token row: the window was overwritten before the row was read"
replay 4 "$work/i8dirty"
expect 0 "$npurr" layout "${k[@]}" "${i8[@]}" --nodes 2 --npus-per-node 2
has "dtype int8: a dispatched row is 288 B (256 int8 + 2 float scales"
has "dynamic_scales"
expect 2 "$npurr" record "${k[@]}" --dtype int8 --hidden 100 -o "$work/bad3"
has "--hidden 100: --dtype int8 needs a multiple of 128"
echo "fullmesh: ok"
