#!/bin/bash
# Every reader tells the truth and none writes: the SQLite extension on a
# read-only connection writes nothing; report, diff and the extension warn
# (exit 1, or a failed load) on a truncated run as stats does; reindex
# refuses a trailer whose end time is not the run's; an emptied chunks
# table is refused by `events` as by `info`; `info` beside a stray
# index.db-wal creates no index.db-shm; replay of a trace that is not the
# one index.db was built from says so.
set -u
npurr=$1
ext="${2:-$(dirname "$npurr")}/libnpurr_sqlite"
. "$(dirname "$0")/lib/reliability.bash"

asan=$(ldd "$ext.so" 2>/dev/null | awk '/libasan/ {print $3}')
host() { if [ -n "$asan" ]; then LD_PRELOAD="$asan" ASAN_OPTIONS=detect_leaks=0 "$@"; else "$@"; fi; }
py=/usr/bin/python3
/usr/bin/python3 -c 'import sqlite3,sys; sys.exit(0 if hasattr(sqlite3.Connection, "enable_load_extension") else 1)' \
    2>/dev/null || py=

small_run "$work/run"            # its analysis tables are not derived yet

# --- the extension on read-only connections: nothing written
sum=$(sum_of "$work/run/index.db")
expect 1 host sqlite3 -readonly "$work/run/index.db" ".load $ext" "SELECT count(*) FROM events"
has "read-only connection"
[ "$(sum_of "$work/run/index.db")" = "$sum" ] || fail "sqlite3 -readonly + .load wrote into index.db"
if [ -n "$py" ]; then
    expect 1 host "$py" - "$work/run/index.db" "$ext" <<'PY'
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
c.enable_load_extension(True)
try:
    c.load_extension(sys.argv[2])
except sqlite3.OperationalError as e:
    print(e); sys.exit(1)
PY
    has "read-only connection"
    [ "$(sum_of "$work/run/index.db")" = "$sum" ] || fail "python mode=ro + load_extension wrote into index.db"
fi
[ -z "$(ls "$work/run" | grep -v '^trace.zst$\|^index.db$')" ] || { ls "$work/run"; fail "files appeared in the run"; }
# once derived (by npurr), a read-only connection is served
expect 0 "$npurr" stats "$work/run"
expect 0 host sqlite3 -readonly "$work/run/index.db" ".load $ext" "SELECT count(*) FROM wake_events"
grep -qx "2332" "$work/out" || { cat "$work/out"; fail "read-only connection: wake_events"; }

# --- a truncated run: every reader warns and fails
size=$(stat -c %s "$work/run/trace.zst")
rm -rf "$work/t"; cp -r "$work/run" "$work/t"
truncate -s $((size / 2)) "$work/t/trace.zst"
expect 1 "$npurr" reindex "$work/t"; has "truncated"
expect 1 "$npurr" report "$work/t" -o "$work/t.html"; has "warning"; has "truncated"
expect 1 "$npurr" diff "$work/t" "$work/run"; has "warning"; has "truncated"
expect 1 "$npurr" diff "$work/run" "$work/t"; has "warning"
expect 1 host sqlite3 "$work/t/index.db" ".load $ext" "SELECT count(*) FROM events"
has "truncated"

# --- a forged trailer end time (valid zstd): reindex refuses it
rm -rf "$work/f"; cp -r "$work/run" "$work/f"
python3 - "$work/f" <<'PY' || fail "forging the trailer"
import sqlite3, subprocess, sys
run = sys.argv[1]
off, n = sqlite3.connect(run + "/index.db").execute(
    "SELECT offset, compressed_bytes FROM chunks ORDER BY offset DESC LIMIT 1").fetchone()
t = open(run + "/trace.zst", "rb").read()
body = subprocess.run(["zstd", "-d", "-c", "-q"], input=t[off + n:], capture_output=True,
                      check=True).stdout
assert body[:4] == b"NPRT"
def varint(b, i):
    v = s = 0
    while True:
        v |= (b[i] & 0x7F) << s; s += 7; i += 1
        if b[i - 1] < 0x80: return v, i
def enc(v):
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0)); v >>= 7
        if not v: return bytes(out)
count, i = varint(body, 4)
kv = []
for _ in range(count):
    kl, i = varint(body, i); k = body[i:i + kl]; i += kl
    vl, i = varint(body, i); v = body[i:i + vl]; i += vl
    kv.append((k, str(2**64 - 1).encode() if k == b"end_time_ps" else v))
new = b"NPRT" + enc(len(kv)) + b"".join(enc(len(k)) + k + enc(len(v)) + v for k, v in kv)
frame = subprocess.run(["zstd", "-q", "-c", "--check", "--stream-size=%d" % len(new)],
                       input=new, capture_output=True, check=True).stdout
open(run + "/trace.zst", "wb").write(t[:off + n] + frame)
PY
zstd -q -t "$work/f/trace.zst" || fail "the forged trace is not valid zstd"
expect 1 "$npurr" reindex "$work/f"; has "end time"
expect 1 "$npurr" report "$work/f" -o "$work/f.html"      # the old index: refused, not served

# --- an emptied chunks table: events refuses it as info does
rm -rf "$work/c"; cp -r "$work/run" "$work/c"
sqlite3 "$work/c/index.db" "DELETE FROM chunks"
expect 1 "$npurr" info "$work/c"; has "chunks hold 0"
expect 1 "$npurr" sql "$work/c" "SELECT count(*) FROM events"; has "chunks hold 0"
expect 1 host sqlite3 "$work/c/index.db" ".load $ext" "SELECT count(*) FROM events"
has "chunks hold 0"

# --- a stray index.db-wal: info and stats read, and create nothing
rm -rf "$work/w"; cp -r "$work/run" "$work/w"
# someone's sqlite3 switched it to WAL and died before a checkpoint
python3 - "$work/w/index.db" <<'PY'
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA journal_mode=WAL")
c.execute("CREATE TABLE stray(x)")
c.commit()
os._exit(0)
PY
rm -f "$work/w/index.db-shm"
[ -s "$work/w/index.db-wal" ] || fail "no stray WAL to test with"
sum=$(sum_of "$work/w/index.db")
expect 0 "$npurr" info "$work/w"
expect 0 "$npurr" stats "$work/w"
[ ! -e "$work/w/index.db-shm" ] || fail "a reader created index.db-shm"
[ "$(sum_of "$work/w/index.db")" = "$sum" ] || fail "a reader changed index.db"

# --- replay of a trace that index.db was not built from
"$npurr" record -k combine-sender --tokens 16 --ring-bytes 64 -o "$work/other" --quiet \
    >/dev/null 2>&1
rm -rf "$work/x"; cp -r "$work/run" "$work/x"
cp "$work/other/trace.zst" "$work/x/trace.zst"
expect 3 "$npurr" replay "$work/x" --quiet; has "identical"; has "warning"
has "was not built from"
expect 0 "$npurr" replay "$work/run" --quiet
! grep -q warning "$work/out" || fail "replay warned on a consistent run"
echo "reliability_readers: all checks passed"
