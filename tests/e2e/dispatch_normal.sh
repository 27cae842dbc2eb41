#!/usr/bin/env bash
# dispatch_normal.sh - dispatch-normal (A2's CamMoeDispatchNormal) end to
# end, as a user runs it: a clean record (exit 0) that replays identically,
# whose one phase is named after the chip's operator and whose roles are
# its steps; the fault detected at record time (exit 4), reproduced by
# replay and seen by the race checker; the rows crossing HCCS as the owners' reads (SQL); `npurr
# layout`; at --nodes 2 DispatchNormalA2, its fault and its races; bad options.
#
# Usage: bash dispatch_normal.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

k=(-k dispatch-normal)
small=(--npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16)

# Clean run: the check passes, every step ran on every core, replay agrees.
expect 0 "$npurr" record "${k[@]}" "${small[@]}" -o "$work/ok"
has "check     passed"
has "DispatchSend      192"
has "DispatchStatus"
has "DispatchOutput"
replay 0 "$work/ok"
has "identical"
expect 0 "$npurr" sql "$work/ok" --csv "SELECT COUNT(*) FROM cores WHERE role = 'DispatchOutput'"
[ "$(tail -n 1 "$work/out")" = 192 ] || { cat "$work/out" >&2; fail "not 48 cores on each of 4 ranks"; }
expect 0 "$npurr" record "${k[@]}" "${small[@]}" --routing drop:0.3 --cores 5 -o "$work/drop"
replay 0 "$work/drop"

# The rows cross HCCS as MTE2 reads of 268 B (200 B row padded to 224, the
# 32 B gap, the triple); the only
# remote MTE3 writes are the 32 B statuses.
expect 0 "$npurr" sql "$work/ok" --csv \
    "SELECT pipe, MAX(len) FROM events WHERE kind = 'xfer_issue' AND peer != rank GROUP BY pipe ORDER BY pipe"
has "MTE2,268"
has "MTE3,32"

# The fault: the owners copy out and clear their statuses without waiting;
# the statuses arrive after and stay set.
expect 4 "$npurr" record "${k[@]}" "${small[@]}" --inject no-status-wait -o "$work/nowait"
has "the owner did not wait for it"
replay 4 "$work/nowait"
# The race checker sees the hazard behind it: an owner's read of a share
# window not ordered after the source's write (exit 6); none without it.
expect 6 "$npurr" record "${k[@]}" "${small[@]}" --inject no-status-wait --check races -o "$work/nowait_races"
has "write by MTE3 not ordered before read by MTE2"
expect 0 "$npurr" record "${k[@]}" "${small[@]}" --check races -o "$work/ok_races"
has "0 races, 0 sync errors"

# msprof names the chip's operator CamMoeDispatchNormal: its op_summary row
# is matched to the dispatch phase, the combine's ignored.
cat >"$work/op_summary_0.csv" <<'CSV'
Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Dim
0,N/A,1,2,aclnnCamMoeDispatchNormal_CamMoeDispatchNormal,CamMoeDispatchNormal,AI_VECTOR_CORE,100.0,30,0,48
0,N/A,2,2,aclnnCamMoeCombineNormal_CamMoeCombineNormal,CamMoeCombineNormal,AI_VECTOR_CORE,150.0,20,0,48
CSV
expect 0 "$npurr" hw --compare "$work/op_summary_0.csv" --kernel-options "${k[*]} ${small[*]}"
awk '$3 == "dispatch" && $4 == "30.00" { c = 1 } END { exit c ? 0 : 1 }' "$work/out" ||
    { cat "$work/out" >&2; fail "the CamMoeDispatchNormal row is not the dispatch phase"; }

# --nodes 2 runs DispatchNormalA2 (A2's layered dispatch): the check
# passes and replay agrees; its steps are the roles; each rank's rows for
# the other server cross in one BatchWrite item of 32 B + rows x 256 B
# (a 128 B row and four 32 B int slots).
two=(--nodes 2 --npus-per-node 4 --tokens 40 --hidden 64 --experts 16)
expect 0 "$npurr" record "${k[@]}" "${two[@]}" -o "$work/two"
has "check     passed"
has "Input2Win"
has "Ipc2Out"
replay 0 "$work/two"
has "identical"
expect 0 "$npurr" sql "$work/two" --csv \
    "SELECT COUNT(*), MIN(len), MAX(len) FROM events WHERE kind = 'xfer_issue' AND pipe = 'AICPU' AND peer / 4 != rank / 4 AND len > 32"
has "8,10272,10272"
# The fault skips WaitWindow: Ipc2Out reads the other server's rows before
# they land (exit 4); the race checker names the BatchWrite's write against
# that read. A clean run has one race of its own, A2's IPC barrier flag
# (monotonic, so harmless on the chip), and not that one.
expect 4 "$npurr" record "${k[@]}" "${two[@]}" --inject no-status-wait -o "$work/two_nowait"
has "it never arrived"
expect 6 "$npurr" record "${k[@]}" "${two[@]}" --inject no-status-wait --check races -o "$work/two_nowait_races"
has "write by AICPU not ordered before read by MTE2"
expect 6 "$npurr" record "${k[@]}" "${two[@]}" --check races -o "$work/two_races"
has "1 race, 0 sync errors"
has "read by S not ordered before write by MTE3"
expect 0 "$npurr" layout "${k[@]}" "${two[@]}"
has "DispatchNormalA2"

# Layout: one line per rank, the UB budget and the cores.
expect 0 "$npurr" layout "${k[@]}" "${small[@]}"
has "UB per core"
has "cores per rank: 48 AIV"
[ "$(grep -cE '^[0-3] ' "$work/out")" -eq 4 ] || { cat "$work/out" >&2; fail "layout lacks a line per rank"; }

# Bad input is refused with a message naming the option (exit 2).
expect 2 "$npurr" record "${k[@]}" --nodes 3 --tokens 4 -o "$work/bad1"
has "--nodes"
expect 2 "$npurr" record "${k[@]}" --nodes 2 --hidden 100 -o "$work/bad4"
has "--hidden 100"
expect 2 "$npurr" record "${k[@]}" --cores 49 -o "$work/bad2"
has "--cores"
expect 2 "$npurr" record "${k[@]}" --inject status-first -o "$work/bad3"
has "--inject status-first"
echo "dispatch_normal: ok"
