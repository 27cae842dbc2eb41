#!/usr/bin/env bash
# critical.sh - `npurr critical` as a user runs it, on every kernel: clean,
# and with each fault it can inject (stale data: exit 4; hangs: exit 3).
# For every run the critical_path table must tile [0, end_time_ps] exactly
# (segments adjacent, the first at 0, the last ending at the run's end, the
# durations summing to end_time_ps), and `npurr critical --csv` must add up
# to the same. A hung run's path ends in a blocked wait. Then the options:
# every --by, --top, bad input named with its exit code.
#
# Usage: bash critical.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
. "$(dirname "$0")/lib/kernel_run.bash"

sum_checks=0
# check_path RUN: the tiling and the sum, from SQL and from the CSV.
check_path() {
    local run=$1
    expect 0 "$npurr" sql "$run" --csv "SELECT
        (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'end_time_ps'),
        (SELECT SUM(dur_ps) FROM critical_path),
        (SELECT MIN(start_ps) FROM critical_path),
        (SELECT MAX(end_ps) FROM critical_path),
        (SELECT COUNT(*) FROM critical_path a JOIN critical_path b ON b.seg = a.seg + 1
         WHERE b.start_ps != a.end_ps),
        (SELECT COUNT(*) FROM critical_path WHERE dur_ps != end_ps - start_ps OR dur_ps <= 0)"
    local row
    row=$(tail -n 1 "$work/out")
    IFS=, read -r end sum first last gaps bad <<<"$row"
    [ -n "$end" ] && [ "$end" -gt 0 ] || fail "$run: no end_time_ps ($row)"
    [ "$sum" = "$end" ] || fail "$run: critical path sums to $sum ps, end_time_ps is $end"
    [ "$first" = 0 ] || fail "$run: the path starts at $first ps, not 0"
    [ "$last" = "$end" ] || fail "$run: the path ends at $last ps, not $end"
    [ "$gaps" = 0 ] || fail "$run: $gaps segments do not start where the previous ended"
    [ "$bad" = 0 ] || fail "$run: $bad segments with a wrong or empty duration"
    expect 0 "$npurr" critical "$run" --by class --csv
    local csvsum
    csvsum=$(awk -F, 'NR > 1 { s += $5 } END { printf "%d", s }' "$work/out")
    [ "$csvsum" = "$end" ] || fail "$run: npurr critical --csv sums to $csvsum, not $end"
    sum_checks=$((sum_checks + 1))
}

# record CODE NAME ARGS...: records into $work/NAME with exit CODE, checks its path.
record() {
    local code=$1 name=$2
    shift 2
    expect "$code" "$npurr" record "$@" -o "$work/$name"
    check_path "$work/$name"
}

cs=(--npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16
    --staging-bytes 1024 --ring-bytes 4096)
stale=(--npus-per-node 2 --tokens 64 --hidden 1024 --topk 2 --experts 8
       --staging-bytes 65536 --ring-bytes 65536 --inject no-mte3-wait)
for k in combine-sender combine-sender-inplace; do
    record 0 "$k" -k "$k" "${cs[@]}"
    record 4 "$k-stale" -k "$k" "${stale[@]}"
done
record 3 combine-dead -k combine-sender "${cs[@]}" --ring-bytes 512
cn=(-k combine-normal --npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16)
record 0 combine-normal "${cn[@]}"
record 4 combine-normal-nowait "${cn[@]}" --inject no-status-wait
# A hang: the path ends at the wait that blocked last, one that never ended.
check_blocked_end() {
    expect 0 "$npurr" critical "$1" --by class
    has "outcome deadlock; the path ends at the wait that blocked last, seq"
    local seq
    seq=$(sed -n 's/.*the wait that blocked last, seq \([0-9]*\) .*/\1/p' "$work/out")
    expect 0 "$npurr" sql "$1" --csv "SELECT COUNT(*) FROM waits WHERE end_seq IS NULL
        AND begin_seq = $seq AND begin_ps = (SELECT MAX(begin_ps) FROM waits WHERE end_seq IS NULL)"
    [ "$(tail -n 1 "$work/out")" = 1 ] || fail "$1: seq $seq is not the last wait that never ended"
}
check_blocked_end "$work/combine-dead"

roles=(--rdma-senders 2 --rdma-coordinators 1 --forwarders 2 --forwarder-coordinators 1
       --hccs-receivers 2)
dl=(-k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 48 --hidden 64 --topk 2 --experts 8
    "${roles[@]}" --rdma-chunk 4 --rdma-send-chunk 2 --credit-batch 3 --hccs-chunk 4
    --hccs-send-chunk 2)
record 0 dl "${dl[@]}"
record 3 dl-leak "${dl[@]}" --inject credit-leak
record 3 dl-lost "${dl[@]}" --inject lost-tail
check_blocked_end "$work/dl-leak"
check_blocked_end "$work/dl-lost"

mm=(-k matmul-reduce-scatter --m 512 --n 128 --k 64 --block-m 32 --block-n 64 --npus-per-node 2)
record 0 mm "${mm[@]}"
record 4 mm-race "${mm[@]}" --inject no-stage-wait
expect 0 "$npurr" critical "$work/mm" --by class
has "cube"

fm=(-k fullmesh-dispatch-combine)
record 0 fm "${fm[@]}" --nodes 2 --npus-per-node 2 --tokens 8 --hidden 64 --topk 3 --experts 8
record 4 fm-dirty "${fm[@]}" --npus-per-node 4 --tokens 64 --hidden 2048 --topk 2 --experts 8 \
    --routing zipf:2 --cores 1 --rounds 3 --inject no-double-buffer
record 3 fm-dead "${fm[@]}" --npus-per-node 4 --tokens 32 --hidden 2048 --topk 2 --experts 8 \
    --routing zipf:2 --cores 4 --inject no-double-buffer
check_blocked_end "$work/fm-dead"
[ "$sum_checks" = 15 ] || fail "checked $sum_checks paths, expected 15"

# A two-node run crosses the NICs: the path names one, with its direction.
expect 0 "$npurr" critical "$work/dl"
has "critical path by resource"
has "outcome completed; the path ends at the last kernel end, seq"
grep -qE '^NIC r[0-9]+ (tx|rx) ' "$work/out" || grep -qE 'RDMA latency r' "$work/out" ||
    { cat "$work/out" >&2; fail "the two-node path crosses no NIC or RDMA latency"; }
for by in resource class role rank site; do
    expect 0 "$npurr" critical "$work/dl" --by "$by"
    has "critical path by $by"
done
expect 0 "$npurr" critical "$work/dl" --by=role --top 2
has "showing the top 2 of"
[ "$(grep -cE '[0-9][.][0-9]+%$' "$work/out")" = 2 ] || { cat "$work/out" >&2; fail "--top 2 printed other than 2 rows"; }
expect 0 "$npurr" critical "$work/dl" --csv --by site
head -n 1 "$work/out" | grep -qx 'by,group,class,segments,total_ps,share' || fail "CSV header"

# The report has the section; both exports have the path as a track.
expect 0 "$npurr" report "$work/dl" -o "$work/dl.html"
grep -q 'id="critical"' "$work/dl.html" || fail "report lacks the critical path section"
grep -q 'id="critical-bar"' "$work/dl.html" || fail "report lacks the stacked bar"
[ "$(grep -c '<tr><td class="num">' "$work/dl.html")" -ge 1 ] || fail "report lists no segment"
expect 0 "$npurr" sql "$work/dl" --csv "SELECT COUNT(*), SUM(dur_ps) FROM critical_path"
IFS=, read -r nseg sumps <<<"$(tail -n 1 "$work/out")"
expect 0 "$npurr" export "$work/dl" --chrome "$work/dl.json"
python3 - "$work/dl.json" "$nseg" <<'PY' || fail "the Chrome export's critical path track"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
crit = [e for e in ev if e.get("cat") == "critical"]
assert len(crit) == int(sys.argv[2]), "%d critical slices, %s segments" % (len(crit), sys.argv[2])
procs = [e for e in ev if e.get("ph") == "M" and e["args"].get("name") == "critical path"
         and e["name"] == "process_name"]
assert len(procs) == 1 and all(e["pid"] == procs[0]["pid"] for e in crit), "not one process"
assert all(e["args"]["class"] for e in crit), "a slice without its class"
PY
if command -v protoc >/dev/null; then
    expect 0 "$npurr" export "$work/dl" --perfetto "$work/dl.pftrace"
    python3 "$(dirname "$0")/lib/pftrace_check.py" "$work/dl.pftrace" \
        "$(dirname "$0")/../data" >"$work/pf" 2>&1 || { cat "$work/pf" >&2; fail "pftrace check"; }
    expect 0 "$npurr" sql "$work/dl" --csv "SELECT (SELECT COUNT(*) FROM waits WHERE end_seq IS NOT NULL)
        + (SELECT COUNT(*) FROM transfers) + (SELECT COUNT(*) FROM critical_path)"
    want=$(tail -n 1 "$work/out")
    grep -q "slices=$want " "$work/pf" || { cat "$work/pf" >&2; fail "perfetto slices are not waits + transfers + $nseg segments ($want)"; }
fi

# Bad input: named, with the exit code DESIGN.md gives it.
expect 2 "$npurr" critical "$work/dl" --by colour
has "--by needs one of resource"
expect 2 "$npurr" critical "$work/dl" --top 0
has "--top needs a positive number"
expect 2 "$npurr" critical
expect 2 "$npurr" critical "$work/dl" "$work/mm"
has "one RUN only"
expect 1 "$npurr" critical "$work/nothing-here"
has "nothing-here"
expect 0 "$npurr" critical --help
has "usage: npurr critical RUN"
echo "critical: ok"
