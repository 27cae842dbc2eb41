#!/usr/bin/env bash
# races.sh - `npurr explore` and `--check races` end to end, as a user runs
# them: explore finds the uniform-routing failure of fullmesh
# no-double-buffer, its printed command reproduces it with `record` and the
# recorded run replays identically; explore of a clean kernel finds nothing;
# --check races names both sites of each injected hazard (exit 6, or 3 for
# the lost tail that hangs) and nothing on clean runs; `stats --races`
# reads the races table; usage errors exit 2.
#
# Usage: bash races.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

fm=(-k fullmesh-dispatch-combine)

# Whether the fault shows under tie order alone depends on the timing
# model: with a scalar op of 6 cycles and 3 us AICPU tasks it does not
# (the fitted 0.25 cycles and 6 us show it on the clean run, as stale data
# or a hang), and PCT delay points expose it within 200 runs, as stale
# data (exit 4) or a flag overwritten before it was seen (a deadlock,
# exit 3).
printf 'scalar_op_cycles=6\nbatchwrite_task_ns=3000\n' >"$work/slow_scalar.hw"
"$npurr" explore "${fm[@]}" --inject no-double-buffer --hw "$work/slow_scalar.hw" --runs 200 \
    -o "$work/fm" >"$work/out" 2>&1
found=$?
[ "$found" -eq 3 ] || [ "$found" -eq 4 ] || { cat "$work/out" >&2; fail "explore exited $found, not 3 or 4"; }
has "clean run completed, check passed"
has "ended differently from the clean run"
cmd=$(sed -n 's/^reproduce //p' "$work/out")
[ -n "$cmd" ] || { cat "$work/out" >&2; fail "explore printed no command"; }
read -r -a words <<<"$cmd"
words[0]=$npurr
words[${#words[@]}-1]="$work/again"    # the same command into another folder
expect "$found" "${words[@]}"
replay "$found" "$work/fm"
has "identical:"

expect 0 "$npurr" explore "${fm[@]}" --runs 5 -o "$work/none"
has "5 runs ended like the clean run"
[ ! -e "$work/none" ] || fail "explore without a failure wrote a run folder"
expect 0 "$npurr" explore "${fm[@]}" --npus-per-node 4 --runs 3 --check races -o "$work/none2"
has "3 runs ended like the clean run"

# --check races: the hazard behind each injected fault, with both sites.
cs=(-k combine-sender --npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16
    --staging-bytes 1024 --ring-bytes 4096)
expect 0 "$npurr" record "${cs[@]}" --check races -o "$work/cs_ok"
has "0 races, 0 sync errors"
expect 6 "$npurr" record "${cs[@]}" --inject no-mte3-wait --check races -o "$work/cs"
has "write by MTE3 not ordered before read by MTE2"
has "combine_ring.c:"
has "combine_receiver.c:"
replay 4 "$work/cs"
expect 0 "$npurr" stats "$work/cs" --races
has "tail-before-data"
n=$(sqlite3 "$work/cs/index.db" "SELECT count(*) FROM races WHERE kind = 'race' AND a_seq > 0 AND b_seq > 0")
[ "$n" -ge 1 ] || fail "races table has no race with both seqs"
seq=$(sqlite3 "$work/cs/index.db" "SELECT b_seq FROM races WHERE kind = 'race' ORDER BY id LIMIT 1")
expect 0 "$npurr" replay "$work/cs" --break-at "$seq"
has "combine_receiver.c"
expect 1 "$npurr" stats "$work/again" --races
has "no races table"
expect 0 "$npurr" stats "$work/cs_ok" --races
has "0 races, 0 sync errors"

# combine-normal: the status is what orders a row before the owner's read; a
# status written ahead of its row leaves the row unordered (at this size the
# owner then reads some rows before they land: the HCCS port's cost per
# transfer delays a row more than its 32 B status, so the data check fails
# too).
cn=(-k combine-normal --npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16)
expect 0 "$npurr" record "${cn[@]}" --check races --no-trace
has "0 races, 0 sync errors"
expect 6 "$npurr" record "${cn[@]}" --inject status-first --check races --no-trace
has "check     failed"
has "write by MTE3 not ordered before read by MTE2"
has "combine_normal_send.c:"
has "combine_normal_sum.c:"

mm=(-k matmul-reduce-scatter --npus-per-node 4 --m 512 --n 128 --k 64 --block-m 32 --block-n 64)
expect 6 "$npurr" record "${mm[@]}" --inject no-stage-wait --check races --no-trace
has "write by FIX not ordered before read by MTE2"
has "mmrs_aic.c:"
has "mmrs_aiv.c:"
expect 0 "$npurr" record "${mm[@]}" --check races --no-trace

expect 6 "$npurr" record "${fm[@]}" --npus-per-node 4 --inject no-double-buffer --hw "$work/slow_scalar.hw" --check races --no-trace
has "check     passed"
has "fullmesh_window.c:"

dl=(-k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 48 --hidden 64 --topk 2 --experts 8
    --rdma-senders 2 --rdma-coordinators 1 --forwarders 2 --forwarder-coordinators 1
    --hccs-receivers 2 --rdma-chunk 4 --rdma-send-chunk 2 --credit-batch 3 --hccs-chunk 4
    --hccs-send-chunk 2)
expect 0 "$npurr" record "${dl[@]}" --check races --no-trace
has "0 races, 0 sync errors"
expect 3 "$npurr" record "${dl[@]}" --inject lost-tail --check races --no-trace
has "wait-never-satisfied"
has ".tail >"

# usage
expect 2 "$npurr" explore "${fm[@]}" --runs 3
has "-o RUN is required"
expect 2 "$npurr" explore "${fm[@]}" --runs 3 --strategy chess -o "$work/x"
has "--strategy: 'chess'"
expect 2 "$npurr" record "${fm[@]}" --check deadlocks --no-trace
has "--check: 'deadlocks'"
expect 0 "$npurr" explore --help
has "--strategy S"
echo "races: ok"
