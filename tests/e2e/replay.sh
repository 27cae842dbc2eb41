#!/usr/bin/env bash
# replay.sh - `npurr replay` end to end, as a user runs it on recorded runs
# of the combine-sender kernel:
#   - a completed run replays identically (exit 0) with the recorded count;
#   - a deadlock replays to the same ending (exit 3): the same blocked cores,
#     reported at the same seqs as in the trace;
#   - a failed data check is reproduced (exit 4);
#   - one event edited in a copy of a trace (tests' test_replay --edit-trace,
#     which re-encodes that chunk) makes replay exit 5 naming that seq;
#   - --break-at without a debugger prints every core and exits 0;
#   - under gdb -batch, --break-at stops in the kernel function that issues
#     the event, at the file:line the replay names, and `npurr cores` lists
#     the blocked cores; on the README's sample, when / cores / rings / goto
#     answer with no call into the process (may-call-functions off);
#   - --checkpoint-every reports the time to reach the last event;
#   - a missing folder, a truncated trace (saying how far it is complete)
#     and a trace of another format version exit 1; bad options exit 2;
#   - no replay process (snapshot, debuggee) is left behind.
#
# Usage: bash replay.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
build=$2
. "$(dirname "$0")/lib/kernel_run.bash"

small=(--npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16
       --staging-bytes 1024 --ring-bytes 4096)

# --- completed: identical, same event count as recorded
expect 0 "$npurr" record -k combine-sender "${small[@]}" -o "$work/ok"
events=$(sed -n 's/^virtual .*, \([0-9]*\) events,.*/\1/p' "$work/out")
[ -n "$events" ] || fail "record printed no event count"
expect 0 "$npurr" replay "$work/ok"
has "identical: $events events, outcome completed, data check passed"
expect 0 "$npurr" replay "$work/ok" --quiet
[ "$(cat "$work/out")" = "identical: $events events, outcome completed" ] ||
    { cat "$work/out" >&2; fail "--quiet prints more than the verdict"; }

# --- a --hw file that is gone since: the header's values are used
printf 'hbm_gbps=1500\nhccs_link_gbps=50\n' >"$work/hw.txt"
expect 0 "$npurr" record -k combine-sender "${small[@]}" --hw "$work/hw.txt" -o "$work/hw"
rm "$work/hw.txt"
expect 0 "$npurr" replay "$work/hw"
has "identical:"

# --- deadlock: same ending, same blocked cores at the same seqs
expect 3 "$npurr" record -k combine-sender "${small[@]}" --ring-bytes 512 -o "$work/dead"
grep -oE '^  rank [0-9]+ AIV[0-9]+' "$work/out" | sort >"$work/rec_blocked"
[ -s "$work/rec_blocked" ] || fail "record reported no blocked core"
expect 3 "$npurr" replay "$work/dead"
has "identical:"
has "outcome deadlock"
has "deadlock reproduced"
grep -oE '^  rank [0-9]+ AIV[0-9]+' "$work/out" | sort >"$work/rep_blocked"
cmp -s "$work/rec_blocked" "$work/rep_blocked" ||
    { diff "$work/rec_blocked" "$work/rep_blocked" >&2; fail "replay blocked other cores"; }
cp "$work/out" "$work/dead_replay"
first=$(sed -n 's/.*reported at seq \([0-9]*\)\.\.\([0-9]*\).*/\1/p' "$work/out")
expect 0 "$npurr" sql "$work/dead" "SELECT min(seq) AS s FROM events WHERE kind = 'blocked'"
grep -qw "$first" "$work/out" || { cat "$work/out" >&2; fail "blocked reports not at seq $first"; }

# --- failed data check reproduced
stale=(--npus-per-node 2 --tokens 64 --hidden 1024 --topk 2 --experts 8
       --staging-bytes 65536 --ring-bytes 65536 --inject no-mte3-wait)
expect 4 "$npurr" record -k combine-sender "${stale[@]}" -o "$work/stale"
expect 4 "$npurr" replay "$work/stale"
has "data check failed (as recorded)"

# --- one edited event: exit 5 naming its seq
seq=$((events / 2))
"$build/test_replay" --edit-trace "$work/ok" "$work/edited" "$seq" ||
    fail "test_replay --edit-trace could not edit the trace"
expect 5 "$npurr" replay "$work/edited"
has "diverged at seq $seq: value differ"
has "expected (trace):  seq $seq"
has "actual (replay):   seq $seq"
has "kernel line"

# --- --break-at without a debugger: the state of every core, exit 0.
# The target: the last core to begin the wait it deadlocks in.
line=$(grep ' since seq ' "$work/dead_replay" |
       awk '{for (i = 1; i < NF; i++) if ($i == "since") print $(i + 2), $0}' | sort -n | tail -1)
target=${line%% *}
where=$(sed -n 's/.* at \(.*:[0-9]*\) (\(.*\))$/\1 \2/p' <<<"$line")
file_line=${where% *}
func=${where##* }
[ -n "$target" ] && [ -n "$func" ] || fail "no 'since seq' wait in the deadlock replay"
expect 0 "$npurr" replay "$work/dead" --break-at "$target"
has "break before event $target: gm_wait_begin"
has "issued by the kernel at $file_line ($func)"
has "running"
has "blocked"
has "stopped before event $target"

# --- under gdb: stops in the kernel function, npurr cores lists the blocked
gdb -nx -batch -q -iex 'set may-call-functions off' -x "$build/npurr_gdb.py" -ex run \
    -ex "npurr when" -ex "npurr cores --blocked" \
    --args "$npurr" replay "$work/dead" --break-at "$target" </dev/null >"$work/out" 2>&1
has "npurr: stopped before event $target, issued by $func at $file_line:"
grep -qE "^#[0-9]+ .*$func \(.*\) at (.*/)?$file_line\$" "$work/out" ||
    { cat "$work/out" >&2; fail "gdb did not select the frame of $func at $file_line"; }
has "seq $target (about to execute)"
nblocked=$(wc -l <"$work/rec_blocked")
grep -cE '^  rank [0-9]+ AIV[0-9]+ .* blocked ' "$work/out" >"$work/n"
[ "$(cat "$work/n")" -eq $((nblocked - 1)) ] ||
    { cat "$work/out" >&2; fail "npurr cores lists $(cat "$work/n") blocked cores, not $((nblocked - 1))"; }

# --- the README's gdb session on the README's sample, as the gdb issue ran it:
# with may-call-functions off (no call into the process: gdb cannot make one
# on AMX CPUs), when / cores / rings at a break, goto backwards twice.
expect 0 "$npurr" record -k dispatch-layered --nodes 2 --tokens 256 -o "$work/sample"
# the goto target: the first event at or after 20000 that a core issues (a
# transfer's completion is the scheduler's, and --break-at names it so)
mid=$("$npurr" sql "$work/sample" "SELECT min(seq) FROM events WHERE seq BETWEEN 20000 AND 20100
    AND kind NOT IN ('xfer_done', 'blocked', 'run_end')" --csv 2>/dev/null | tail -1)
[ -n "$mid" ] && [ "$mid" -ge 20000 ] && [ "$mid" -lt 30000 ] || fail "no core event after seq 20000: '$mid'"
gdb -nx -batch -q -iex 'set may-call-functions off' -x "$build/npurr_gdb.py" -ex run \
    -ex 'npurr when' -ex 'npurr cores' -ex 'npurr rings' -ex "npurr goto $mid" \
    -ex 'npurr when' -ex 'npurr goto 5000' -ex 'npurr when' \
    --args "$npurr" replay "$work/sample" --break-at 30000 </dev/null >"$work/out" 2>&1
! grep -qiE 'cannot call|may-call-functions|Python Exception|Error occurred' "$work/out" ||
    { cat "$work/out" >&2; fail "an npurr gdb command failed"; }
for s in 30000 "$mid" 5000; do
    grep -qE "^seq $s \(about to execute\), virtual time [0-9.]+ us\$" "$work/out" ||
        { cat "$work/out" >&2; fail "npurr when did not stop before seq $s"; }
done
has "  issued by rank "
grep -qE '^768 cores: 1 running, [0-9]+ ready, [0-9]+ blocked, [0-9]+ finished, 0 faulted$' \
    "$work/out" || { cat "$work/out" >&2; fail "npurr cores printed no summary of 768 cores"; }
grep -qE '^[0-9]+ rings$' "$work/out" || { cat "$work/out" >&2; fail "npurr rings printed no summary"; }
has "  hccs "
has "re-running from the first event to seq 5000"
# build/npurr-gdb in batch mode: the same session with snapshots and a goto
# back into one, without gdb's own lines (libthread_db per snapshot,
# inferior switches, the trap frame); npurr's and the kernel's stay
"$build/npurr-gdb" -batch -ex run -ex 'npurr when' -ex "npurr goto $mid" -ex 'npurr when' \
    --args "$npurr" replay "$work/sample" --break-at 30000 --checkpoint-every 10000 </dev/null \
    >"$work/out" 2>&1 || { cat "$work/out" >&2; fail "npurr-gdb -batch failed"; }
! grep -qE 'libthread_db|^\[Switching to|received signal SIGTRAP|^trap_to_debugger|arch_fork' "$work/out" ||
    { cat "$work/out" >&2; fail "npurr-gdb -batch printed gdb's own noise"; }
for s in 30000 "$mid"; do grep -qE "^seq $s \(about to execute\)" "$work/out" ||
    { cat "$work/out" >&2; fail "npurr-gdb -batch lost npurr when at $s"; }; done
has "resuming the snapshot taken after seq $(( (mid - 1) / 10000 * 10000 ))"
has "npurr: stopped before event $mid"
# npurr bt of a core whose kernel has returned says so (not "suspended"):
# stopped after rank 0 AIV0's kernel end
late=$("$npurr" sql "$work/sample" "SELECT max(seq) - 1 FROM events" --csv 2>/dev/null | tail -1)
ended=$("$npurr" sql "$work/sample" "SELECT seq FROM events WHERE rank = 0 AND core = 24
    AND kind = 'kernel_end'" --csv 2>/dev/null | tail -1)
[ -n "$late" ] && [ -n "$ended" ] && [ "$ended" -lt "$late" ] ||
    fail "rank 0 AIV0 does not end before the run's last events ($ended, $late)"
gdb -nx -batch -q -iex 'set may-call-functions off' -x "$build/npurr_gdb.py" -ex run \
    -ex 'npurr bt 0 AIV0' --args "$npurr" replay "$work/sample" --break-at "$late" </dev/null >"$work/out" 2>&1
has "rank 0 core 24 has finished its kernel"
! grep -q "suspended" "$work/out" || { cat "$work/out" >&2; fail "bt calls a finished core suspended"; }

# --- checkpoints: time to reach the last event from a snapshot
expect 0 "$npurr" replay "$work/ok" --checkpoint-every 1000
has "identical:"
has "checkpoints:"
has "reaching the last event (seq $events):"
has "from the snapshot at seq"

# --- cannot replay: exit 1 with the reason
expect 1 "$npurr" replay "$work/nonexistent"
has "no such run directory"
mkdir "$work/trunc"
size=$(stat -c %s "$work/ok/trace.zst")
head -c $((size * 3 / 4)) "$work/ok/trace.zst" >"$work/trunc/trace.zst"
expect 1 "$npurr" replay "$work/trunc"
has "truncated"
has "complete up to seq"
mkdir "$work/v99"
# A header frame of format version 99 (zstd from a file records the size).
printf 'NPRH\143\000' >"$work/v99/header"
zstd -q "$work/v99/header" -o "$work/v99/trace.zst"
expect 1 "$npurr" replay "$work/v99"
has "format version 99 is not supported"

# --- usage
expect 0 "$npurr" replay --help
has "--break-at SEQ"
expect 2 "$npurr" replay "$work/ok" --break-at x
expect 2 "$npurr" replay "$work/ok" --frobnicate

# --- nothing left running
sleep 0.2
if pgrep -f "replay $work" >/dev/null; then
    pgrep -af "replay $work" >&2
    fail "replay processes were left behind"
fi
echo "replay: ok"
