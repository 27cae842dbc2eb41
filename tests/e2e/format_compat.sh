#!/usr/bin/env bash
# format_compat.sh - a run recorded by an older npurr stays readable.
#
# tests/data/format4_combine/trace.zst is a combine-sender run recorded in
# trace format 4 (rank, core and time stored as columns) by npurr 0.1.0
# before format 5 derived them from the cores' clocks. Its index is rebuilt
# from the trace alone, and every event must equal those of the same command
# recorded now in format 5, and so must its stall statistics. (It is not
# replayed: replay compares call sites, file and line, and the kernel's
# source has moved on since the fixture was recorded.)
# usage: format_compat.sh /path/to/npurr [build-dir]
set -u
NPURR=${1:?usage: format_compat.sh /path/to/npurr [build-dir]}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/npurr_e2e_compat.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

old=$tmp/old
mkdir "$old"
cp "$here/../data/format4_combine/trace.zst" "$old/"
"$NPURR" reindex "$old" >"$tmp/out" 2>&1 || fail "reindex of a format 4 trace: $(cat "$tmp/out")"
"$NPURR" info "$old" >"$tmp/info" 2>&1 || fail "info: $(cat "$tmp/info")"
grep -q '^versions     format 4,' "$tmp/info" || fail "info does not say format 4: $(cat "$tmp/info")"

new=$tmp/new
# The same run now, under the timing values the fixture was recorded with
# (its header's hw.*; the keys added since, as that engine behaved: no NIC
# message cost, a core's rate over HCCS its local rate).
"$NPURR" sql "$old" --csv "SELECT substr(key, 4) || '=' || value FROM meta WHERE key LIKE 'hw.%'" |
    tail -n +2 >"$tmp/old.hw"
printf 'nic_message_ns=1e-9\nmte_hccs_bytes_per_cycle=64\n' >>"$tmp/old.hw"
"$NPURR" record -k combine-sender --npus-per-node 2 --tokens 64 --hidden 1024 --topk 2 \
    --experts 8 --staging-bytes 65536 --ring-bytes 65536 --hw "$tmp/old.hw" -o "$new" >"$tmp/out" 2>&1 ||
    fail "record: $(cat "$tmp/out")"
"$NPURR" info "$new" | grep -q '^versions     format 5,' || fail "a new run is not format 5"
for r in old new; do
    "$NPURR" sql "$tmp/$r" "select * from events order by seq" >"$tmp/$r.events" 2>"$tmp/err" ||
        fail "sql on $r: $(cat "$tmp/err")"
done
[ "$(wc -l <"$tmp/old.events")" -gt 3000 ] || fail "the format 4 run decodes to too few events"
cmp -s "$tmp/old.events" "$tmp/new.events" || fail "format 4 events differ from the same run in format 5"
for r in old new; do
    "$NPURR" stats "$tmp/$r" --by role >"$tmp/$r.stats" 2>"$tmp/err" || fail "stats on $r: $(cat "$tmp/err")"
done
cmp -s "$tmp/old.stats" "$tmp/new.stats" || fail "stats of the format 4 run differ"
echo "ok: format 4 run reindexed and decoded identically"
