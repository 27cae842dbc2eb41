#!/usr/bin/env bash
# combine_normal.sh - combine-normal (A2's CamMoeCombineNormal) end to end,
# as a user runs it: a clean record (exit 0) that replays identically, whose
# one phase is named after the chip's operator and whose roles are the two
# phases; both faults detected at record time (stale rows: exit 4) and
# reproduced by replay; `npurr layout`; bad options.
#
# Usage: bash combine_normal.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

k=(-k combine-normal)
small=(--npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16)

# Clean run: the check passes, both roles ran on every core, replay agrees.
expect 0 "$npurr" record "${k[@]}" "${small[@]}" -o "$work/ok"
has "check     passed"
has "CombineSend    192"
has "CombineSum"
replay 0 "$work/ok"
has "identical"
expect 0 "$npurr" sql "$work/ok" --csv "SELECT COUNT(*) FROM cores WHERE role = 'CombineSum'"
[ "$(tail -n 1 "$work/out")" = 192 ] || { cat "$work/out" >&2; fail "not 48 cores on each of 4 ranks"; }
expect 0 "$npurr" record "${k[@]}" "${small[@]}" --routing drop:0.3 --cores 5 -o "$work/drop"
replay 0 "$work/drop"

# Fault 1: the owner sums before the rows land; the data check names a token.
expect 4 "$npurr" record "${k[@]}" "${small[@]}" --inject no-status-wait -o "$work/nowait"
has "combined token"
replay 4 "$work/nowait"
# Fault 2: status ahead of its row; 8 KB rows are still on the link when the
# owner, woken by the status, reads them.
big=(--npus-per-node 2 --tokens 16 --hidden 4096 --topk 2 --experts 8)
expect 4 "$npurr" record "${k[@]}" "${big[@]}" --inject status-first -o "$work/first"
has "combined token"
replay 4 "$work/first"

# msprof names the chip's operator CamMoeCombineNormal: its op_summary rows
# are matched to the one combine phase (both phases' roles), others ignored.
cat >"$work/op_summary_0.csv" <<'EOF'
Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Dim
0,N/A,1,2,aclnnCamMoeDispatchNormal_CamMoeDispatchNormal,CamMoeDispatchNormal,AI_VECTOR_CORE,100.0,30,0,48
0,N/A,2,2,aclnnCamMoeCombineNormal_CamMoeCombineNormal,CamMoeCombineNormal,AI_VECTOR_CORE,150.0,20,0,48
EOF
expect 0 "$npurr" hw --compare "$work/op_summary_0.csv" --kernel-options "${k[*]} ${small[*]}"
awk '$3 == "combine" && $4 == "20.00" { c = 1 } END { exit c ? 0 : 1 }' "$work/out" ||
    { cat "$work/out" >&2; fail "the CamMoeCombineNormal row is not the combine phase"; }

# Layout: one line per rank, the UB budget and the cores.
expect 0 "$npurr" layout "${k[@]}" "${small[@]}"
has "UB per core"
has "cores per rank: 48 AIV"
[ "$(grep -cE '^[0-3] ' "$work/out")" -eq 4 ] || { cat "$work/out" >&2; fail "layout lacks a line per rank"; }

# Bad input is refused with a message naming the option (exit 2).
expect 2 "$npurr" record "${k[@]}" --nodes 2 --tokens 4 -o "$work/bad1"
has "--nodes"
expect 2 "$npurr" record "${k[@]}" --cores 49 -o "$work/bad2"
has "--cores"
expect 2 "$npurr" record "${k[@]}" --inject no-mte3-wait -o "$work/bad3"
has "--inject no-mte3-wait"
echo "combine_normal: ok"
