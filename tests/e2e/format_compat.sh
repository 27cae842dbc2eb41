#!/usr/bin/env bash
# format_compat.sh - a run recorded by an older npurr stays readable.
#
# tests/data/format4_combine/trace.zst is a combine-sender run recorded in
# trace format 4 (rank, core and time stored as columns) by npurr 0.1.0
# before format 5 derived them from the cores' clocks;
# tests/data/format5_combine/trace.zst the same command recorded in format
# 5, before format 6 added the parts of split runs;
# tests/data/format6_combine/trace.zst in format 6, before format 7 made call
# site ids those of (file, line) in every build. Each index is rebuilt
# from the trace alone, and every event must equal those of the same command
# recorded now in format 7, and so must its stall statistics. (They are not
# replayed: replay compares call sites, file and line, and the kernel's
# source moves on after a fixture is recorded.)
# usage: format_compat.sh /path/to/npurr [build-dir]
set -u
NPURR=${1:?usage: format_compat.sh /path/to/npurr [build-dir]}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/npurr_e2e_compat.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for v in 4 5 6; do
    old=$tmp/old$v
    mkdir "$old"
    cp "$here/../data/format${v}_combine/trace.zst" "$old/"
    "$NPURR" reindex "$old" >"$tmp/out" 2>&1 || fail "reindex of a format $v trace: $(cat "$tmp/out")"
    "$NPURR" info "$old" >"$tmp/info" 2>&1 || fail "info: $(cat "$tmp/info")"
    grep -q "^versions     format $v," "$tmp/info" || fail "info does not say format $v: $(cat "$tmp/info")"

    new=$tmp/new$v
    # The same run now, under the timing values the fixture was recorded
    # with (its header's hw.*; for format 4 the keys added since, as that
    # engine behaved: no NIC message cost, a core's rate over HCCS its local
    # rate; for both, reads of a peer's GM posted as writes are; for all,
    # no HCCS port, no cost per transfer, no plane share).
    "$NPURR" sql "$old" --csv "SELECT substr(key, 4) || '=' || value FROM meta WHERE key LIKE 'hw.%'" |
        tail -n +2 >"$tmp/old.hw"
    [ "$v" = 4 ] && printf 'nic_message_ns=1e-9\nmte_hccs_bytes_per_cycle=64\n' >>"$tmp/old.hw"
    [ "$v" -lt 6 ] && printf 'hccs_read_latencies=1e-9\n' >>"$tmp/old.hw"
    printf 'hccs_port_gbytes_per_s=1e9\nhccs_transfer_ns=1e-9\nroce_cross_plane_gbytes_per_s=1e9\n' \
        >>"$tmp/old.hw"
    "$NPURR" record -k combine-sender --npus-per-node 2 --tokens 64 --hidden 1024 --topk 2 \
        --experts 8 --staging-bytes 65536 --ring-bytes 65536 --hw "$tmp/old.hw" -o "$new" >"$tmp/out" 2>&1 ||
        fail "record: $(cat "$tmp/out")"
    "$NPURR" info "$new" | grep -q '^versions     format 7,' || fail "a new run is not format 7"
    for r in old new; do
        "$NPURR" sql "$tmp/$r$v" "select * from events order by seq" >"$tmp/$r.events" 2>"$tmp/err" ||
            fail "sql on $r: $(cat "$tmp/err")"
    done
    [ "$(wc -l <"$tmp/old.events")" -gt 3000 ] || fail "the format $v run decodes to too few events"
    cmp -s "$tmp/old.events" "$tmp/new.events" || fail "format $v events differ from the same run in format 7"
    for r in old new; do
        "$NPURR" stats "$tmp/$r$v" --by role >"$tmp/$r.stats" 2>"$tmp/err" || fail "stats on $r: $(cat "$tmp/err")"
    done
    cmp -s "$tmp/old.stats" "$tmp/new.stats" || fail "stats of the format $v run differ"
done
echo "ok: format 4, 5 and 6 runs reindexed and decoded identically"
