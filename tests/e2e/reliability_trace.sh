#!/bin/bash
# Damaged and foreign data is never served as if it were the run: truncated
# traces (several offsets), random byte flips, a dropped and a swapped chunk,
# an index copied from another run, an object renamed inside a valid frame.
# Readers (stats, sql, export, info) refuse an index that was not built from
# the trace next to it, naming both and `npurr reindex`; reindex and replay
# say what is missing or where the damage is; nothing exits 0 on damage.
set -u
npurr=$1
. "$(dirname "$0")/lib/reliability.bash"
wakes=$(small_run_wakes)
# chunks of 65536 events: the small runs here must span several chunks
export NPURR_CHUNK_EVENTS=65536

small_run "$work/good"
small_run "$work/other"
"$npurr" record -k fullmesh-dispatch-combine --tokens 64 --rounds 2 -o "$work/other" --force \
    --quiet >/dev/null 2>&1 || fail "recording the other run failed"
expect 0 "$npurr" stats "$work/good"   # derives the analysis tables once
size=$(stat -c %s "$work/good/trace.zst")
read -r first_off first_len < <(frame_bounds "$work/good")

# Every reader refuses a run whose index is not the trace's (or whose trace
# lost its header: not a run at all).
refused() {
    grep -qE "was not built from|is not an npurr run" "$work/out" \
        || { cat "$work/out" >&2; fail "$1: no refusal naming index and trace"; }
}
readers_refuse() {
    local run=$1 what=$2
    expect 1 "$npurr" stats "$run"; refused "$what"; has "npurr reindex"
    expect 1 "$npurr" sql "$run" "SELECT count(*) FROM waits"; refused "$what"
    expect 1 "$npurr" export "$run" --chrome "$work/x.json"; refused "$what"
    [ -e "$work/x.json" ] && fail "$what: export wrote a timeline of a damaged run"
    expect 1 "$npurr" info "$run"; refused "$what"
    # and info shows nothing of the index first: it describes another trace
    ! grep -qE '^(outcome|check|duration|timing) ' "$work/out" ||
        { cat "$work/out" >&2; fail "$what: info printed the stale index's summary"; }
}

# --- truncations: inside the header, after it, inside a chunk, at a chunk
# boundary, just before the end (the trailer cut)
for cut in 7 $first_off $((first_off + first_len / 2)) $((first_off + first_len)) $((size - 3)); do
    rm -rf "$work/t"; cp -r "$work/good" "$work/t"
    truncate -s "$cut" "$work/t/trace.zst"
    readers_refuse "$work/t" "cut at $cut"
    if [ "$cut" -lt "$first_off" ]; then
        expect 1 "$npurr" reindex "$work/t"; has "is not an npurr run"
        continue
    fi
    expect 1 "$npurr" reindex "$work/t"; has "truncated"
    expect 1 "$npurr" info "$work/t"; has "truncated"
    # the rebuilt index is served, but never as a success
    expect 1 "$npurr" stats "$work/t"; has "warning"; has "truncated"
    expect 1 "$npurr" replay "$work/t"
    # a what-if compares end times: a truncated run's is not the run's
    expect 1 "$npurr" whatif "$work/t" --top 1 -j 1; has "needs the complete run"
    ! grep -q "timing model changed" "$work/out" || fail "whatif blamed the timing model for a truncated trace"
    # the original trace back: the truncated tables are not served for it
    # (once: the same for every cut)
    [ "$cut" = $((first_off + first_len / 2)) ] || continue
    cp "$work/good/trace.zst" "$work/t/trace.zst"
    readers_refuse "$work/t" "restored after a cut at $cut"
    expect 0 "$npurr" reindex "$work/t"
    expect 0 "$npurr" sql "$work/t" "SELECT count(*) FROM wake_events"
    grep -qx " *$wakes" "$work/out" || { cat "$work/out"; fail "restored run: wake_events"; }
done

# --- random byte flips (seeded): reindex names the frame's byte, or the
# flip changed nothing the frames carry and replay reproduces every event
RANDOM=12
for i in $(seq 1 6); do
    rm -rf "$work/f"; cp -r "$work/good" "$work/f"
    at=$((RANDOM * 32768 + RANDOM)); at=$((at % size))
    python3 - "$work/f/trace.zst" "$at" <<'PY'
import sys
p, at = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[at] ^= 0x5a; open(p, "wb").write(bytes(b))
PY
    readers_refuse "$work/f" "flip at $at"
    "$npurr" reindex "$work/f" >"$work/out" 2>&1
    code=$?
    if [ $code = 0 ]; then
        expect 0 "$npurr" replay "$work/f"; has "identical"
    else
        [ $code = 1 ] || fail "reindex after a flip at $at exited $code"
        grep -qE "byte [0-9]+|not an npurr run|truncated" "$work/out" \
            || { cat "$work/out"; fail "flip at $at: the message names no byte"; }
        expect 1 "$npurr" stats "$work/f"   # the old index stays refused
    fi
done

# --- a dropped chunk and a swapped pair
cut_frames "$work/good" "$work/drop" "0 2 3"
cp "$work/good/index.db" "$work/drop/"
readers_refuse "$work/drop" "dropped chunk"
expect 1 "$npurr" reindex "$work/drop"; has "events 65537..131072"; has "missing"
expect 1 "$npurr" replay "$work/drop"
cut_frames "$work/good" "$work/swap" "0 2 1 3"
cp "$work/good/index.db" "$work/swap/"
expect 1 "$npurr" reindex "$work/swap"; has "out of order"
expect 1 "$npurr" replay "$work/swap"
cut_frames "$work/good" "$work/dup" "0 1 1 2 3"
expect 1 "$npurr" reindex "$work/dup"; has "duplicated"

# --- an index whose chunk list lost a row (the trace is intact): info says
# which events the index does not cover
rm -rf "$work/hole"; cp -r "$work/good" "$work/hole"
python3 - "$work/hole/index.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("DELETE FROM chunks WHERE first_seq = 65537"); db.commit()
PY
expect 1 "$npurr" info "$work/hole"; has "events 65537..131072 are missing"

# --- an index from another run
rm -rf "$work/mix"; cp -r "$work/good" "$work/mix"
cp "$work/other/index.db" "$work/mix/index.db"
readers_refuse "$work/mix" "foreign index"
expect 0 "$npurr" reindex "$work/mix"
expect 0 "$npurr" stats "$work/mix"

# --- an object renamed inside a frame that is still valid zstd
rm -rf "$work/ren"; cp -r "$work/good" "$work/ren"
python3 - "$work/ren" <<'PY' || fail "cannot rewrite a frame"
import sqlite3, subprocess, sys
run = sys.argv[1]
db = sqlite3.connect(run + "/index.db")
off, n = db.execute("SELECT offset, compressed_bytes FROM chunks ORDER BY offset").fetchone()
name = db.execute("SELECT name FROM objects WHERE name LIKE '%bufferChosen%'").fetchone()[0]
t = open(run + "/trace.zst", "rb").read()
raw = subprocess.run(["zstd", "-dcq"], input=t[off:off + n], capture_output=True, check=True).stdout
assert name.encode() in raw
open(run + "/raw", "wb").write(raw.replace(name.encode(), name.encode()[:-1] + b"X", 1))
frame = subprocess.run(["zstd", "-cq", run + "/raw"], capture_output=True, check=True).stdout
open(run + "/trace.zst", "wb").write(t[:off] + frame + t[off + n:])
PY
rm -f "$work/ren/raw"
zstd -tq "$work/ren/trace.zst" || fail "the renamed trace is not valid zstd"
expect 5 "$npurr" replay "$work/ren"; has "declares it differently"

# --- a trace truncated in place while a reader has it mapped: the reader
# names the file and exits 1, never dies of SIGBUS (exit 135)
"$npurr" record -k dispatch-layered --nodes 2 --tokens 128 --quiet -o "$work/big" >/dev/null 2>&1 ||
    fail "recording the run to truncate failed"
hit=0
for delay in 0.2 0.4 0.1 0.6; do
    for reader in replay sql; do
        rm -rf "$work/shrink" && cp -r "$work/big" "$work/shrink"
        "$npurr" stats "$work/shrink" >/dev/null 2>&1   # derive first: the read below is the events'
        size=$(stat -c %s "$work/shrink/trace.zst")
        ( sleep "$delay"; truncate -s $((size / 3)) "$work/shrink/trace.zst" ) &
        if [ "$reader" = replay ]; then
            "$npurr" replay "$work/shrink" >"$work/out" 2>&1
        else
            "$npurr" sql "$work/shrink" "SELECT count(*), sum(value) FROM events" >"$work/out" 2>&1
        fi
        code=$?
        wait
        [ "$code" -lt 128 ] || { cat "$work/out" >&2; fail "$reader of a trace truncated under it died of signal $((code - 128))"; }
        if grep -q "trace.zst changed while it was read" "$work/out"; then
            [ "$code" = 1 ] || fail "$reader named the changed trace but exited $code"
            hit=$((hit + 1))
        fi
    done
done
[ "$hit" -ge 1 ] || fail "no reader was caught mid-read in 8 tries (the truncation always came too late)"
echo "reliability_trace: all checks passed"
