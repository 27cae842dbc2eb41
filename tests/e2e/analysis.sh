#!/usr/bin/env bash
# analysis.sh - `npurr stats`, `npurr sql` and `npurr export` end to end, as a
# user runs them on recorded runs: the combine sender (a clean run and its
# ring-too-small deadlock) and, when the kernel is built in, the layered
# dispatch with --inject credit-leak, whose `stats --by cause` must rank
# credit_starvation first and whose docs/sql.md deadlock query must name
# the ForwarderCoordinator. The Chrome export is parsed with Python's json
# module and every event is checked for its phase's fields, matched flow
# and async ids, and per-thread nesting. The views are also read without
# npurr (Python's sqlite3 module, as `sqlite3 RUN/index.db` would).
#
# Usage: bash analysis.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
here=$(cd "$(dirname "$0")" && pwd)
docs="$here/../../docs/sql.md"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect CODE CMD...: runs CMD, stdout to $work/out, stderr to $work/err.
expect() {
    local want=$1
    shift
    "$@" >"$work/out" 2>"$work/err"
    local got=$?
    if [ "$got" -ne "$want" ]; then
        cat "$work/out" "$work/err" >&2
        fail "expected exit $want, got $got: $*"
    fi
}
has() { grep -q -- "$1" "$work/out" || { cat "$work/out" >&2; fail "output lacks '$1' ($2)"; }; }
has_err() { grep -q -- "$1" "$work/err" || { cat "$work/err" >&2; fail "stderr lacks '$1' ($2)"; }; }

# docs_query HEADING_WORDS: the ```sql block of docs/sql.md under the first ## heading
# that contains the words.
docs_query() {
    python3 - "$docs" "$1" <<'EOF'
import sys
text = open(sys.argv[1]).read().split("\n")
want, heading, inside, out = sys.argv[2], "", False, []
for line in text:
    if not inside and line.startswith("## "):
        heading = line[3:]
    elif not inside and line.startswith("```sql"):
        inside, out = True, []
    elif inside and line.startswith("```"):
        inside = False
        if want in heading:
            print("\n".join(out))
            sys.exit(0)
    elif inside:
        out.append(line)
sys.exit("no query under a heading with: " + want)
EOF
}

# check_chrome FILE: the export parses and every event is valid.
check_chrome() {
    python3 - "$1" <<'EOF' || fail "export $1 is not a valid Chrome trace"
import json, sys
from collections import defaultdict
doc = json.load(open(sys.argv[1]))
assert doc["displayTimeUnit"] == "ns", "displayTimeUnit"
evs = doc["traceEvents"]
need = {"X": ["name", "ts", "dur", "pid", "tid"], "b": ["name", "cat", "id", "ts", "pid"],
        "e": ["name", "cat", "id", "ts", "pid"], "s": ["name", "cat", "id", "ts", "pid", "tid"],
        "f": ["name", "cat", "id", "ts", "pid", "tid", "bp"], "C": ["name", "ts", "pid", "args"],
        "M": ["name", "pid", "args"]}
flows, asyncs, slices, named = defaultdict(list), defaultdict(list), defaultdict(list), set()
starts = {}
for ev in evs:
    ph = ev["ph"]
    assert ph in need, "unknown phase %r" % ph
    for k in need[ph]:
        assert k in ev, "%s event lacks %s: %r" % (ph, k, ev)
    if "ts" in ev:
        assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0, ev
    if ph == "X":
        assert ev["dur"] >= 0, ev
        slices[(ev["pid"], ev["tid"])].append((round(ev["ts"] * 1e6), round(ev["dur"] * 1e6)))
    elif ph in "se":
        pass
    if ph == "s":
        assert ev["id"] not in flows, "flow %r starts twice" % ev["id"]
    if ph == "f":
        # Perfetto reads in time order, file order on ties: the start first,
        # and the end not before it (else flow_end_without_start).
        assert flows.get(ev["id"]) == ["s"], "flow %r ends before it starts" % ev["id"]
        assert ev["ts"] >= starts[ev["id"]], "flow %r ends earlier than it starts" % ev["id"]
    if ph in "sf":
        flows[ev["id"]].append(ph)
        starts.setdefault(ev["id"], ev["ts"])
    if ph in "XsfC":
        assert ev["pid"] >= 1, "pid 0 (Perfetto reserves it): %r" % ev
    if ph in "be":
        asyncs[(ev["cat"], ev["id"])].append((ph, ev["ts"]))
    if ph == "C":
        assert ev["args"] and all(isinstance(v, (int, float)) for v in ev["args"].values()), ev
    if ph == "M":
        assert ev["name"] in ("process_name", "thread_name", "process_sort_index",
                              "thread_sort_index"), ev
        if ev["name"] == "thread_name":
            named.add((ev["pid"], ev["tid"]))
for fid, phs in flows.items():
    assert sorted(phs) == ["f", "s"], "flow %r has %r" % (fid, phs)
for key, phs in asyncs.items():
    assert sorted(p for p, _ in phs) == ["b", "e"], "async %r has %r" % (key, phs)
    b = [t for p, t in phs if p == "b"][0]
    e = [t for p, t in phs if p == "e"][0]
    assert e >= b, key
for thread, ss in slices.items():
    assert thread in named, "thread %r has no thread_name" % (thread,)
    ss.sort(key=lambda s: (s[0], -s[1]))
    stack = []
    for ts, dur in ss:
        while stack and stack[-1] <= ts:
            stack.pop()
        assert not stack or ts + dur <= stack[-1], "slice %r overlaps on %r" % ((ts, dur), thread)
        stack.append(ts + dur)
print("events=%d flows=%d async=%d threads=%d" % (len(evs), len(flows), len(asyncs),
                                                   len(slices)))
EOF
}

small=(--npus-per-node 4 --tokens 32 --hidden 100 --topk 4 --experts 16
       --staging-bytes 1024 --ring-bytes 4096)
expect 0 "$npurr" record -k combine-sender "${small[@]}" -o "$work/ok"
run="$work/ok"
# A completed record leaves the analysis tables to their first use, and its
# stall table (from the recorder's tables) is the one stats prints after.
sed -n '/^stalls by role:/,$p' "$work/out" >"$work/record_table"
[ -s "$work/record_table" ] || { cat "$work/out" >&2; fail "record printed no stall table"; }
python3 - "$run/index.db" <<'EOF' || fail "record derived the analysis tables of a completed run"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
sys.exit(1 if db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'wait_groups'").fetchone()[0] else 0)
EOF

# ---------------------------------------------------------------- stats
expect 0 "$npurr" stats "$run" --by role
cmp -s "$work/out" "$work/record_table" ||
    { diff "$work/record_table" "$work/out" >&2; fail "record's stall table differs from stats --by role"; }
expect 0 "$npurr" stats --help
has "--by role|site|rank|kind|object|cause" "stats --help"
expect 0 "$npurr" stats "$run"
has "stalls by role" "default grouping"
has "end_time_ps" "the header explains the share's denominator"
has "share" "table header"
for by in site rank kind object cause; do
    expect 0 "$npurr" stats "$run" --by "$by"
    has "stalls by $by" "--by $by"
done
expect 0 "$npurr" stats "$run" --by kind --top 1
[ "$(grep -c -E '^(flag|pipe|xcore|gm|ring_space|ring_data|barrier) ' "$work/out")" -eq 1 ] ||
    { cat "$work/out" >&2; fail "--top 1 printed more than one group"; }
# The stats table agrees with SQL over the same run.
expect 0 "$npurr" sql "$run" --csv "SELECT COUNT(*) FROM waits"
waits=$(tail -1 "$work/out")
expect 0 "$npurr" stats "$run" --by cause
has "$waits waits" "stats counts every wait"
expect 2 "$npurr" stats "$run" --by colour
has_err "--by needs one of" "bad --by"
expect 2 "$npurr" stats "$run" --top 0
expect 1 "$npurr" stats "$work/nope"
has_err "nope" "a missing run is named"

# ---------------------------------------------------------------- sql
expect 0 "$npurr" sql --help
expect 0 "$npurr" sql "$run" "SELECT kind, COUNT(*) AS n FROM waits GROUP BY kind ORDER BY kind"
head -2 "$work/out" | tail -1 | grep -q -E '^-+  -+$' || { cat "$work/out"; fail "aligned table"; }
expect 0 "$npurr" sql "$run" --csv "SELECT 'a,b' AS x, COUNT(*) AS n FROM events WHERE kind = 'xfer_done'"
has '^x,n$' "csv header"
has '^"a,b",[1-9]' "csv quoting and the events vtab"
expect 1 "$npurr" sql "$run" "SELECT no_such_column FROM waits"
has_err "no such column: no_such_column" "SQLite's message"
has_err "SELECT no_such_column FROM waits" "the query is printed"
echo "SELECT COUNT(*) AS n FROM stall_summary" > "$work/q.sql"
expect 0 "$npurr" sql "$run" - < "$work/q.sql"
has "^n" "query from stdin"
# Every view works without npurr (no view references the events vtab).
python3 - "$run/index.db" <<'EOF' || fail "views do not open without npurr"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for view in ("stall_summary", "wait_causes", "ring_occupancy", "link_bandwidth", "last_writers"):
    rows = db.execute("SELECT * FROM %s" % view).fetchall()
    assert rows, "view %s is empty" % view
total = db.execute("SELECT SUM(total_ps) FROM stall_summary").fetchone()[0]
assert total == db.execute("SELECT SUM(dur_ps) FROM waits").fetchone()[0]
assert db.execute("SELECT COUNT(*) FROM waits WHERE cause IS NULL").fetchone()[0] == 0
EOF
# The docs' queries that need no deadlock run here too.
for q in "full longest" "per role per rank" "ten longest" "occupancy over time" "Causes ranked"; do
    docs_query "$q" > "$work/q.sql" || fail "docs/sql.md has no query '$q'"
    expect 0 "$npurr" sql "$run" - < "$work/q.sql"
done

# ---------------------------------------------------------------- export
expect 0 "$npurr" export --help
expect 0 "$npurr" export "$run" --chrome "$work/all.json"
has_err "wrote" "export summary"
check_chrome "$work/all.json"
grep -q '"name":"wait ' "$work/all.json" || fail "no wait slice"
grep -q '"ph":"C"' "$work/all.json" || fail "no ring occupancy counter"
grep -q '"ph":"s"' "$work/all.json" || fail "no flow arrow"
grep -q '"process_name".*"rank 1 (node 0)"' "$work/all.json" || fail "process names"
expect 0 "$npurr" export "$run" --chrome "$work/win.json" --from 1us --to 3us --ranks 0,2-3
check_chrome "$work/win.json"
grep -q '"pid":2,' "$work/win.json" && fail "--ranks 0,2-3 exported rank 1 (pid 2)"
[ "$(wc -c < "$work/win.json")" -lt "$(wc -c < "$work/all.json")" ] || fail "window not smaller"
expect 2 "$npurr" export "$run" --chrome "$work/x.json" --from 10parsecs
has_err "10parsecs" "bad time"
expect 2 "$npurr" export "$run" --chrome "$work/x.json" --ranks 0,99
has_err "99" "bad rank"
expect 2 "$npurr" export "$run"

# ---------------------------------------------------------------- a deadlock
expect 3 "$npurr" record -k combine-sender "${small[@]}" --ring-bytes 512 -o "$work/dead"
# A run that hung is derived at once: record names what the blocked cores
# wait on, by cause, and the analysis tables are there without npurr.
has "waits that never ended (what the hang waits on), by cause" "record of a deadlock"
has "flow_control" "the blocked waits' cause"
python3 - "$work/dead/index.db" <<'EOF' || fail "record did not derive the analysis tables of a deadlock"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
sys.exit(0 if db.execute("SELECT COUNT(*) FROM wait_groups").fetchone()[0] else 1)
EOF
# The sender needs more room than the 512 B ring has; its receiver waits for
# data that never comes: a cycle through a full ring, flow_control first.
expect 0 "$npurr" stats "$work/dead" --by cause
first=$(awk 'f && NF {print $1; exit} /^-+/ {f=1}' "$work/out")
[ "$first" = "flow_control" ] || { cat "$work/out" >&2; fail "ring-too-small ranks $first first"; }
docs_query "deadlock" > "$work/q.sql"
expect 0 "$npurr" sql "$work/dead" - < "$work/q.sql"
[ "$(wc -l < "$work/out")" -ge 3 ] || { cat "$work/out" >&2; fail "no blocked core listed"; }
expect 0 "$npurr" export "$work/dead" --chrome "$work/dead.json"
check_chrome "$work/dead.json"

# ---------------------------------------------------------------- credit leak
expect 3 "$npurr" record -k dispatch-layered --nodes 2 --tokens 64 --inject credit-leak \
    -o "$work/leak"
expect 0 "$npurr" stats "$work/leak" --by cause
first=$(awk 'f && NF {print $1; exit} /^-+/ {f=1}' "$work/out")
[ "$first" = "credit_starvation" ] || { cat "$work/out" >&2; fail "credit leak ranks $first first"; }
docs_query "deadlock" > "$work/q.sql"
expect 0 "$npurr" sql "$work/leak" - < "$work/q.sql"
has "ForwarderCoordinator" "the deadlock query names the coordinator"
expect 0 "$npurr" export "$work/leak" --chrome "$work/leak.json"
check_chrome "$work/leak.json"
# A vector op (VecDup has no source address) is local: its own rank both ways.
expect 0 "$npurr" sql "$work/leak" --csv \
    "SELECT count(*) AS n, sum(src_rank <> rank OR dst_rank <> rank) AS off FROM transfers WHERE kind = 'vector'"
n_off=$(tail -1 "$work/out")
[ "${n_off%%,*}" -gt 0 ] && [ "${n_off##*,}" = 0 ] ||
    { cat "$work/out" >&2; fail "vector transfers not on their own rank (count,off = $n_off)"; }
echo "analysis e2e: ok"
