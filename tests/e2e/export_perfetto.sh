#!/usr/bin/env bash
# export_perfetto.sh - `npurr export` as a Perfetto user meets it, on a small
# layered dispatch over 2 nodes (so there are RDMA links and NIC queues):
#   - --perfetto OUT.pftrace is read back (tests/e2e/lib/pftrace_check.py:
#     compressed bundles expanded, decoded by `protoc --decode` against
#     tests/data/perfetto_min.proto) and must hold every transfer on its
#     core's pipe track, every wait, every flow with its start read first
#     and never ending before it starts, and the three counter kinds;
#   - the same trace to a .pftrace.gz (raw packets, gzipped) decodes the same;
#   - --chrome OUT.json.gz is gzip, and its flows are ordered as Perfetto
#     keeps them (each `s` before its `f`, never later), pids start at 1.
# Usage: bash export_perfetto.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
here=$(cd "$(dirname "$0")" && pwd)
proto_dir="$here/../data"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v protoc >/dev/null || fail "protoc not installed (tools/setup.sh installs protobuf-compiler)"

"$npurr" record -k dispatch-layered --nodes 2 --npus-per-node 2 --tokens 16 -o "$work/run" \
    >"$work/out" 2>&1 || { cat "$work/out" >&2; fail "record"; }
sql() { "$npurr" sql "$work/run" --csv "$1" | tail -n 1; }
transfers=$(sql "SELECT COUNT(*) FROM transfers")
waits=$(sql "SELECT COUNT(*) FROM waits")
ended=$(sql "SELECT COUNT(*) FROM waits WHERE end_seq IS NOT NULL AND waker_seq IS NOT NULL AND end_ps > begin_ps")

# figure NAME FILE: the value of NAME=... in the checker's output.
figure() { tr ' ' '\n' < "$2" | sed -n "s/^$1=//p"; }
check_pftrace() {
    python3 "$here/lib/pftrace_check.py" "$1" "$proto_dir" > "$work/check" 2>&1 ||
        { cat "$work/check" >&2; fail "$1 does not read back cleanly"; }
    cat "$work/check"
    [ "$(figure transfers "$work/check")" = "$transfers" ] || fail "$1: not every transfer"
    [ "$(figure transfers_on_pipe_track "$work/check")" = "$transfers" ] ||
        fail "$1: a transfer off its core's pipe track"
    [ "$(figure waits "$work/check")" = "$waits" ] || fail "$1: not every wait"
    [ "$(figure flows "$work/check")" = "$ended" ] || fail "$1: not one flow per woken wait"
    [ "$(figure flows_backward "$work/check")" = 0 ] || fail "$1: a flow ends before it starts"
    [ "$(figure flows_unmatched "$work/check")" = 0 ] || fail "$1: a flow end without start"
    [ "$(figure process_tracks "$work/check")" = 4 ] || fail "$1: a process per rank"
    [ "$(figure counters "$work/check")" -gt 0 ] || fail "$1: no counter samples"
}

"$npurr" export "$work/run" --perfetto "$work/t.pftrace" 2>"$work/err" ||
    { cat "$work/err" >&2; fail "export --perfetto"; }
check_pftrace "$work/t.pftrace"
[ "$(figure bundles "$work/check")" -gt 0 ] || fail "packets not deflated in bundles"
"$npurr" export "$work/run" --perfetto "$work/t.pftrace.gz" 2>"$work/err" ||
    { cat "$work/err" >&2; fail "export --perfetto .gz"; }
gzip -t "$work/t.pftrace.gz" || fail ".pftrace.gz is not gzip"
gzip -dc "$work/t.pftrace.gz" | protoc --proto_path="$proto_dir" \
    --decode=perfetto.protos.Trace perfetto_min.proto > "$work/t.txt" || fail "protoc --decode"
for want in 'name: "NIC queue depth"' 'GB/s"' 'occupancy"' 'thread_name: "AIV' \
            'process_name: "rank 3 (node 1)"' 'name: "MTE3"' 'terminating_flow_ids:' \
            'flow_ids:' 'source_locations {'; do
    grep -q -- "$want" "$work/t.txt" || fail "decoded trace lacks $want"
done
check_pftrace "$work/t.pftrace.gz"
[ "$(figure bundles "$work/check")" = 0 ] || fail ".gz trace should hold raw packets"

# Chrome JSON, gzipped: flows in the order Perfetto keeps them.
"$npurr" export "$work/run" --chrome "$work/t.json.gz" 2>"$work/err" ||
    { cat "$work/err" >&2; fail "export --chrome .gz"; }
gzip -t "$work/t.json.gz" || fail ".json.gz is not gzip"
python3 - "$work/t.json.gz" "$ended" <<'EOF2' || fail "JSON flows"
import gzip, json, sys
evs = json.load(gzip.open(sys.argv[1]))["traceEvents"]
start, ends, slices = {}, 0, set()
for ev in evs:
    ph = ev["ph"]
    if ph in "XsfC":
        assert ev["pid"] >= 1, "pid 0: %r" % ev
    if ph == "X":
        slices.add((ev["pid"], ev["tid"], ev["ts"]))
    if ph == "s":
        assert ev["id"] not in start
        start[ev["id"]] = ev["ts"]
    if ph == "f":
        assert ev["id"] in start, "flow %r: f before its s" % ev["id"]
        assert ev["ts"] >= start[ev["id"]], "flow %r ends before it starts" % ev["id"]
        assert (ev["pid"], ev["tid"], ev["ts"]) in slices, "flow %r ends on no slice" % ev["id"]
        ends += 1
    assert ph not in "be", "async slice: %r" % ev
assert ends == int(sys.argv[2]), "%d flows, want %s" % (ends, sys.argv[2])
print("json flows=%d events=%d" % (ends, len(evs)))
EOF2
echo "export_perfetto e2e: ok"
