#!/usr/bin/env bash
# sqlite_ext.sh - the loadable extension build/libnpurr_sqlite.so, driven as a
# user drives it: from the sqlite3 shell (`.load`) and from Python's sqlite3
# module (enable_load_extension / load_extension), on a run that no npurr
# command has touched since `record`. Both must see the same count(*) and the
# same first 100 events as `npurr sql`, the analysis views (derived on load,
# as `npurr sql` derives them) with waits.cause filled in, and sub_name.
#
# Usage: bash sqlite_ext.sh /path/to/npurr /path/to/builddir
set -u
npurr=$1
ext="$2/libnpurr_sqlite"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -f "$ext.so" ] || fail "$ext.so was not built"
command -v sqlite3 >/dev/null || fail "the sqlite3 shell is not installed (tools/setup.sh installs it)"
# The distribution's python3 links the system libsqlite3 with extension
# loading enabled; a pyenv build may lack enable_load_extension.
py=
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import sqlite3,sys; sys.exit(0 if hasattr(sqlite3.Connection, "enable_load_extension") else 1)' 2>/dev/null; then
        py=$p
        break
    fi
done
[ -n "$py" ] || fail "no python3 whose sqlite3 module can load extensions"

# In the ASan build the extension needs the sanitizer runtime loaded first in
# the host (sqlite3 and python3 are not instrumented); the hosts' own leaks
# are not ours to report.
asan=$(ldd "$ext.so" 2>/dev/null | awk '/libasan/ {print $3}')
if [ -n "$asan" ]; then
    export LD_PRELOAD="$asan"
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

"$npurr" record -k dispatch-layered --nodes 2 --tokens 16 -o "$work/run" --quiet >/dev/null 2>&1 ||
    fail "record failed"
cp -r "$work/run" "$work/py"     # a second untouched copy for Python

# Untouched: plain sqlite3 has no events and no analysis tables yet.
sqlite3 "$work/run/index.db" "SELECT count(*) FROM wait_causes" >/dev/null 2>&1 &&
    fail "wait_causes exists before anything derived it: the test proves nothing"

first100="SELECT * FROM events ORDER BY seq LIMIT 100"
"$npurr" sql "$work/py" "SELECT count(*) FROM events" --csv | tail -n 1 >"$work/npurr.count" ||
    fail "npurr sql count"
"$npurr" sql "$work/py" "$first100" --csv | tail -n +2 >"$work/npurr.first" || fail "npurr sql first 100"
rm -rf "$work/py" && cp -r "$work/run" "$work/py"
[ "$(wc -l <"$work/npurr.first")" -eq 100 ] || fail "npurr sql gave $(wc -l <"$work/npurr.first") rows, not 100"

# --- sqlite3 shell
sqlite3 -csv "$work/run/index.db" ".load $ext" "SELECT count(*) FROM events" "$first100" \
    >"$work/shell" 2>"$work/shell.err" || { cat "$work/shell.err" >&2; fail "sqlite3 .load"; }
head -n 1 "$work/shell" | cmp -s - "$work/npurr.count" ||
    fail "sqlite3 count(*) $(head -n 1 "$work/shell") != npurr sql $(cat "$work/npurr.count")"
tail -n +2 "$work/shell" | cmp -s - "$work/npurr.first" || fail "sqlite3's first 100 events differ from npurr sql's"
grep -q "deriving the analysis tables" "$work/shell.err" || fail "the extension did not derive on first use"
# Derived on load: views and causes are there, in this and later sessions.
n=$(sqlite3 "$work/run/index.db" ".load $ext" \
    "SELECT count(*) FROM waits WHERE cause IS NULL" "SELECT count(*) FROM wait_causes" \
    "SELECT count(*) FROM events WHERE kind = 'xfer_issue' AND sub_name IS NULL" 2>/dev/null | tr '\n' ' ')
[ "$n" != "" ] || fail "second sqlite3 session failed"
set -- $n
[ "$1" -eq 0 ] || fail "$1 waits have no cause after loading the extension"
[ "$2" -gt 0 ] || fail "wait_causes is empty"
[ "$3" -eq 0 ] || fail "$3 transfers have no sub_name"
sqlite3 "$work/run/index.db" "SELECT sub_name FROM events LIMIT 1" >/dev/null 2>&1 &&
    fail "events exists without the extension: the shell test proves nothing"
# The packed tables read through the extension's module as through npurr's
# (every row, the same sums), and plain sqlite3 says what it lacks.
packed="SELECT count(*), sum(bytes), sum(id * done_seq % 7) FROM transfers"
"$npurr" sql "$work/run" "$packed" --csv | tail -n 1 >"$work/npurr.packed" || fail "npurr sql transfers"
sqlite3 -csv "$work/run/index.db" ".load $ext" "$packed" >"$work/shell.packed" 2>&1 ||
    { cat "$work/shell.packed" >&2; fail "sqlite3 .load: transfers"; }
cmp -s "$work/shell.packed" "$work/npurr.packed" ||
    fail "transfers via the extension: $(cat "$work/shell.packed") != npurr sql's $(cat "$work/npurr.packed")"
sqlite3 "$work/run/index.db" "SELECT count(*) FROM wake_events" >"$work/plain" 2>&1 &&
    fail "a packed table read without the extension's module"
grep -q "no such module: npurr_packed" "$work/plain" ||
    { cat "$work/plain" >&2; fail "plain sqlite3 on a packed table: not the message the docs give"; }

# --- Python
"$py" - "$work/py/index.db" "$ext" "$first100" >"$work/python" 2>"$work/python.err" <<'PY' ||
import csv, sqlite3, sys
db, ext, first = sys.argv[1:4]
conn = sqlite3.connect(db)
conn.enable_load_extension(True)
conn.load_extension(ext)
out = csv.writer(sys.stdout, lineterminator="\n")
out.writerow(conn.execute("SELECT count(*) FROM events").fetchone())
for row in conn.execute(first):
    out.writerow(["" if v is None else v for v in row])
# The analysis views, derived on load.
assert conn.execute("SELECT count(*) FROM wait_causes").fetchone()[0] > 0
assert conn.execute("SELECT count(*) FROM waits WHERE cause IS NULL").fetchone()[0] == 0
PY
    { cat "$work/python.err" >&2; fail "python3 load_extension"; }
head -n 1 "$work/python" | cmp -s - "$work/npurr.count" ||
    fail "python count(*) $(head -n 1 "$work/python") != npurr sql $(cat "$work/npurr.count")"
tail -n +2 "$work/python" | cmp -s - "$work/npurr.first" || fail "python's first 100 events differ from npurr sql's"

# A connection not on a run folder gets a message naming the problem.
sqlite3 ":memory:" ".load $ext" >/dev/null 2>"$work/mem.err" && fail "loading on :memory: succeeded"
grep -q "open RUN/index.db" "$work/mem.err" || { cat "$work/mem.err" >&2; fail "no clear message on :memory:"; }
echo "sqlite_ext: ok"
